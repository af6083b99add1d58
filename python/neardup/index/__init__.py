"""The persistent, incremental index (``neardup index ...``, ``neardup.Index``): see docs/index.md."""

from neardup.errors import (
    BackupBusyError,
    DocumentNotFoundError,
    DuplicateIdError,
    ForkedIndexError,
    IndexClosedError,
    IndexConfigError,
    IndexCorruptError,
    IndexError_,
    IndexExistsError,
    IndexLockedError,
    IndexNotFoundError,
    ScrubIncompleteError,
    TextRemovedError,
)
from neardup.index.core import Index, IndexConfig, Verdict
from neardup.index.tuning import Steps, Tuning

IndexFailure = IndexError_

__all__ = [
    "Index",
    "IndexConfig",
    "Steps",
    "Tuning",
    "Verdict",
    "IndexFailure",
    "IndexNotFoundError",
    "IndexExistsError",
    "IndexLockedError",
    "IndexClosedError",
    "IndexCorruptError",
    "IndexConfigError",
    "DuplicateIdError",
    "DocumentNotFoundError",
    "ForkedIndexError",
    "ScrubIncompleteError",
    "TextRemovedError",
    "BackupBusyError",
]
