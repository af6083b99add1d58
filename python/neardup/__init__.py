"""neardup: near-duplicate detection for text.

normalise → exact-hash pass → word shingles → MinHash signatures (or 64-bit SimHash) →
LSH bands → exact check of every candidate → union-find clusters → one keeper per cluster.
The kernels run in Rust (``neardup._core``); this package is the Python front.
"""

from neardup import lsh
from neardup.errors import (
    InputTypeError,
    InternalError,
    InvalidInputError,
    InvalidParameterError,
    NeardupError,
)
from neardup.graph import UnionFind, connected_components
from neardup.measures import containment, jaccard
from neardup.minhash import MinHash, estimate_jaccard
from neardup.shingle import ENGLISH_STOPWORDS, Shingler
from neardup.simhash import SimHash, hamming
from neardup.pipeline import dedup  # noqa: E402  (the batch job: docs/dedup.md)
from neardup.index import Index  # noqa: E402  (the persistent index: docs/index.md)

__version__ = "0.1.0"

__all__ = [
    "ENGLISH_STOPWORDS",
    "InputTypeError",
    "InternalError",
    "InvalidInputError",
    "InvalidParameterError",
    "MinHash",
    "NeardupError",
    "Shingler",
    "SimHash",
    "UnionFind",
    "connected_components",
    "containment",
    "estimate_jaccard",
    "hamming",
    "jaccard",
    "lsh",
]
