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

#: public name -> the module that defines it
_LAZY = {
    "NeardupError": "neardup.errors",
    "InvalidParameterError": "neardup.errors",
    "InvalidInputError": "neardup.errors",
    "InputTypeError": "neardup.errors",
    "InternalError": "neardup.errors",
    "RecordError": "neardup.errors",
    "InputFileError": "neardup.errors",
    "OutputError": "neardup.errors",
    "MemoryLimitError": "neardup.errors",
    "IndexFailure": "neardup.errors",
    "IndexNotFoundError": "neardup.errors",
    "IndexExistsError": "neardup.errors",
    "IndexLockedError": "neardup.errors",
    "IndexClosedError": "neardup.errors",
    "ForkedIndexError": "neardup.errors",
    "IndexCorruptError": "neardup.errors",
    "FileGoneError": "neardup.errors",
    "TextRemovedError": "neardup.errors",
    "ScrubIncompleteError": "neardup.errors",
    "IndexConfigError": "neardup.errors",
    "DuplicateIdError": "neardup.errors",
    "DocumentNotFoundError": "neardup.errors",
    "ReadOnlyIndexError": "neardup.errors",
    "BackupBusyError": "neardup.errors",
    "WriterGoneError": "neardup.errors",
    "WriterTimeoutError": "neardup.errors",
    "ListenError": "neardup.errors",
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
    "Settings": "neardup.settings",  # the one settings object
    "dedup": "neardup.engines.local",  # the batch job: docs/dedup.md
    "Index": "neardup.index",  # the persistent index: docs/index.md
}

#: submodules reachable as attributes of the package, as they were when it imported them all
_SUBMODULES = frozenset(
    {
        "errors",
        "graph",
        "io",
        "index",
        "kernels",
        "lsh",
        "measures",
        "minhash",
        "settings",
        "stages",
        "shingle",
        "simhash",
        "synth",
        "evaluate",
        "service",
        "engines",
        "datasketch_compat",
    }
)

if TYPE_CHECKING:  # what static checkers and IDEs see: the same names, eagerly
    from neardup import lsh
    from neardup.engines.local import dedup
    from neardup.errors import (
        BackupBusyError,
        DocumentNotFoundError,
        DuplicateIdError,
        FileGoneError,
        ForkedIndexError,
        IndexClosedError,
        IndexConfigError,
        IndexCorruptError,
        IndexExistsError,
        IndexFailure,
        IndexLockedError,
        IndexNotFoundError,
        InputFileError,
        InputTypeError,
        InternalError,
        InvalidInputError,
        InvalidParameterError,
        ListenError,
        MemoryLimitError,
        NeardupError,
        OutputError,
        ReadOnlyIndexError,
        RecordError,
        ScrubIncompleteError,
        TextRemovedError,
        WriterGoneError,
        WriterTimeoutError,
    )
    from neardup.graph import UnionFind, connected_components
    from neardup.index import Index
    from neardup.measures import containment, jaccard
    from neardup.minhash import MinHash, estimate_jaccard
    from neardup.settings import Settings
    from neardup.shingle import ENGLISH_STOPWORDS, Shingler
    from neardup.simhash import SimHash, hamming


def __getattr__(name: str) -> Any:
    value: Any
    if name == "__version__":  # written once, in Cargo.toml's [workspace.package] (pyproject reads it)
        from importlib.metadata import version

        globals()[name] = value = version("neardup")
        return value
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
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES | {"__version__"})


__all__ = [
    "BackupBusyError",
    "DocumentNotFoundError",
    "DuplicateIdError",
    "ENGLISH_STOPWORDS",
    "FileGoneError",
    "ForkedIndexError",
    "Index",
    "IndexClosedError",
    "IndexConfigError",
    "IndexCorruptError",
    "IndexExistsError",
    "IndexFailure",
    "IndexLockedError",
    "IndexNotFoundError",
    "InputFileError",
    "InputTypeError",
    "InternalError",
    "InvalidInputError",
    "InvalidParameterError",
    "ListenError",
    "MemoryLimitError",
    "MinHash",
    "NeardupError",
    "OutputError",
    "ReadOnlyIndexError",
    "RecordError",
    "ScrubIncompleteError",
    "Settings",
    "Shingler",
    "SimHash",
    "TextRemovedError",
    "UnionFind",
    "WriterGoneError",
    "WriterTimeoutError",
    "connected_components",
    "containment",
    "dedup",
    "estimate_jaccard",
    "hamming",
    "jaccard",
    "lsh",
]
