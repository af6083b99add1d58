"""Errors of the persistent index: each says what is wrong and, where it can, what to do."""
from __future__ import annotations

from neardup.errors import InvalidParameterError, NeardupError

__all__ = [
    "IndexError_",
    "IndexNotFoundError",
    "IndexExistsError",
    "IndexLockedError",
    "IndexClosedError",
    "ForkedIndexError",
    "IndexCorruptError",
    "TextRemovedError",
    "ScrubIncompleteError",
    "IndexConfigError",
    "DuplicateIdError",
    "DocumentNotFoundError",
    "ReadOnlyIndexError",
]


class IndexError_(NeardupError):
    """Base class of the index's errors (named with a trailing underscore so that it does not
    shadow the built-in ``IndexError``; exported as ``neardup.index.IndexFailure`` too)."""


class IndexNotFoundError(IndexError_, FileNotFoundError):
    """The directory holds no index (run ``neardup index init DIR`` first)."""


class IndexExistsError(IndexError_, FileExistsError):
    """``init`` on a directory that already holds an index."""


class IndexLockedError(IndexError_, RuntimeError):
    """Another process holds the index's writer lock: one writer at a time."""


class IndexClosedError(IndexError_, RuntimeError):
    """The :class:`~neardup.index.Index` was closed: open it again to use it (a closed one
    used to take the writer lock again, and keep it until the process ended)."""


class ForkedIndexError(IndexError_, RuntimeError):
    """An Index used in a process forked from the one that opened it (multiprocessing's fork):
    its SQLite connections, files and writer lock are the parent's. Open the index again in
    the child."""


class IndexCorruptError(IndexError_, RuntimeError):
    """A file of the index is missing, truncated or fails its checksum. Never silently used."""


class FileGoneError(IndexCorruptError):
    """A file the reader's snapshot of the manifest lists is not there. Either a concurrent
    ``compact`` removed it after the snapshot was taken (the reader retries on the newer
    manifest) or the index is damaged (still listed: reported as such)."""

    def __init__(self, message: str, file: str) -> None:
        super().__init__(message)
        self.file = file

    def __reduce__(self):  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.file))


class TextRemovedError(IndexCorruptError):
    """A text failed its checksum because the document was removed (its text zeroed by a
    scrubbing remove) or moved (a compact) after the reader's snapshot listed it: not damage.
    The read is run again on a newer snapshot (``Index._fresh_read``)."""


class ScrubIncompleteError(IndexError_, OSError):
    """A remove committed, but overwriting the removed texts in the log failed (a full disk):
    the next writer to open the index overwrites them (the rows of ``scrubs`` say where)."""

    def __reduce__(self):  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self),))


class IndexConfigError(IndexError_, InvalidParameterError):
    """The index was built with other settings (method, k, num_perm, seed, scheme, bands, ...)
    than those asked for, or by a build of neardup whose signatures differ."""


class DuplicateIdError(IndexError_, ValueError):
    """A document id is already in the index, or appears twice in one batch."""

    def __init__(self, message: str, ids: list[str]) -> None:
        super().__init__(message)
        self.ids = ids

    def __reduce__(self):  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.ids))


class DocumentNotFoundError(IndexError_, KeyError):
    """No document with this id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ReadOnlyIndexError(IndexError_, PermissionError):
    """A write on an index opened read-only."""


IndexFailure = IndexError_


def few(xs: list, k: int = 5) -> str:
    """The first `k` of `xs` for an error message, and how many more there are."""
    s = ", ".join(repr(x) for x in xs[:k])
    return s + (f" and {len(xs) - k} more" if len(xs) > k else "")


class PartsShareAStory(Exception):
    """Internal: an add given `parts` (``Index.add_checked``) in which two parts join one story;
    nothing was written, and the caller (the service's group commit) adds the parts one by one."""
