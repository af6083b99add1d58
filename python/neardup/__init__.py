"""neardup: near-duplicate detection for text.

normalise → exact-hash pass → word shingles → MinHash signatures (or 64-bit SimHash) →
LSH bands → exact check of every candidate → union-find clusters → one keeper per cluster.
The kernels run in Rust (``neardup._core``); this package is the Python front.

The names below are imported on first use (PEP 562): ``import neardup`` loads nothing heavy,
so the ``neardup`` command starts in a fraction of the time, and a Ctrl-C while it starts is
caught by the command (exit 130, no traceback) rather than landing in an import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_LAZY = {
    "InputTypeError": "neardup.errors",
    "InternalError": "neardup.errors",
    "InvalidInputError": "neardup.errors",
    "InvalidParameterError": "neardup.errors",
    "NeardupError": "neardup.errors",
    "UnionFind": "neardup.graph",
    "connected_components": "neardup.graph",
    "containment": "neardup.measures",
    "jaccard": "neardup.measures",
    "MinHash": "neardup.minhash",
    "estimate_jaccard": "neardup.minhash",
    "ENGLISH_STOPWORDS": "neardup.shingle",
    "Shingler": "neardup.shingle",
    "SimHash": "neardup.simhash",
    "hamming": "neardup.simhash",
    "dedup": "neardup.engines.local",  # the batch job: docs/dedup.md
    "Index": "neardup.index",  # the persistent index: docs/index.md
}

#: submodules reachable as attributes of the package, as they were when it imported them all
_SUBMODULES = frozenset({
    "errors", "graph", "io", "index", "kernels", "lsh", "measures", "minhash", "pipeline",
    "shingle", "simhash", "synth", "evaluate", "service", "engines", "datasketch_compat",
})

if TYPE_CHECKING:  # what static checkers and IDEs see: the same names, eagerly
    from neardup import lsh
    from neardup.errors import (
        InputTypeError,
        InternalError,
        InvalidInputError,
        InvalidParameterError,
        NeardupError,
    )
    from neardup.graph import UnionFind, connected_components
    from neardup.index import Index
    from neardup.measures import containment, jaccard
    from neardup.minhash import MinHash, estimate_jaccard
    from neardup.engines.local import dedup
    from neardup.shingle import ENGLISH_STOPWORDS, Shingler
    from neardup.simhash import SimHash, hamming


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"neardup.{name}")
    else:
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    globals()[name] = value  # once: later reads do not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)


__all__ = [
    "ENGLISH_STOPWORDS",
    "Index",
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
    "dedup",
    "estimate_jaccard",
    "hamming",
    "jaccard",
    "lsh",
]
