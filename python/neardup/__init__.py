"""neardup: near-duplicate detection for text."""
from neardup.errors import (
    InputTypeError,
    InternalError,
    InvalidInputError,
    InvalidParameterError,
    NeardupError,
)

__version__ = "0.1.0"
