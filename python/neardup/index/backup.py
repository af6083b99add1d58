"""``neardup index backup DIR DEST``: a consistent, checked copy of an index, taken while it is in
use (how: :mod:`neardup.index.copying`)."""

from __future__ import annotations

import os

from neardup.index.copying import ATTEMPTS, copy_index
from neardup.index.core import Index

__all__ = ["backup"]


def backup(directory: str | os.PathLike, dest: str | os.PathLike, attempts: int = ATTEMPTS) -> dict:
    """Copy the index in `directory` to `dest` (which must not exist; its missing parents are
    made), consistent and checked, without a lock: adds, removes and the service go on
    meanwhile. Returns what was copied:
    ``{"documents", "segments", "text_files", "bytes", "generation", "attempts", "seconds"}``."""
    return copy_index(directory, dest, attempts, Index.checked_copy)
