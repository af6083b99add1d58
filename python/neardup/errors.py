"""The exceptions neardup raises: one tree under :class:`NeardupError`, in this one module.

The compiled core (``neardup._core``) raises these same classes, so ``except
neardup.NeardupError`` catches everything neardup itself reports. Where a plain
Python exception would be natural the class also subclasses it, so code that
expects ``ValueError`` or ``TypeError`` keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "NeardupError",
    "InvalidParameterError",
    "InvalidInputError",
    "InputTypeError",
    "InternalError",
    "RecordError",
    "InputFileError",
    "OutputError",
    "MemoryLimitError",
    "IndexError_",
    "IndexFailure",
    "IndexNotFoundError",
    "IndexExistsError",
    "IndexLockedError",
    "IndexClosedError",
    "ForkedIndexError",
    "IndexCorruptError",
    "FileGoneError",
    "TextRemovedError",
    "ScrubIncompleteError",
    "IndexConfigError",
    "DuplicateIdError",
    "DocumentNotFoundError",
    "ReadOnlyIndexError",
    "BackupBusyError",
    "WriterGoneError",
    "WriterTimeoutError",
    "ListenError",
]


class NeardupError(Exception):
    """Base class of every error neardup raises."""


class InvalidParameterError(NeardupError, ValueError):
    """A configuration value is out of range or unknown (k <= 0, an unknown scheme, ...)."""


class InvalidInputError(NeardupError, ValueError):
    """An input item has the right type but cannot be used (e.g. a lone surrogate).

    ``index`` is the position of the offending item in the batch, or ``None`` for a
    single item.
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.index))


class InputTypeError(NeardupError, TypeError):
    """An input item has the wrong type (``None`` or ``bytes`` where ``str`` was expected).

    ``index`` is the position of the offending item in the batch, or ``None``.
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.index))


class InternalError(NeardupError, RuntimeError):
    """A bug inside neardup's compiled core (a Rust panic, caught and reported).

    The process keeps running; please report the message.
    """


# ---- input and output: each names the file, the line (or row) and the field ----------


class RecordError(NeardupError, ValueError):
    """One input record cannot be used (malformed JSON, missing or non-string text, ...).

    ``path`` is the file (``"-"`` for stdin), ``line`` the 1-based line (JSONL, CSV) or row
    (Parquet, in-memory records), ``field`` the offending field or ``None``, ``reason`` the
    problem in a few words.
    """

    def __init__(self, path: str, line: int, reason: str, field: str | None = None) -> None:
        self.path, self.line, self.reason, self.field = path, line, reason, field
        where = f"{path}:{line}"
        what = f"field {field!r}: {reason}" if field else reason
        super().__init__(f"{where}: {what}")

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole (the service's writer process sends errors back)
        return (type(self), (self.path, self.line, self.reason, self.field))

    def as_dict(self) -> dict[str, Any]:
        """For report.json: a lone surrogate (a field's name that holds one, a file name that
        is not UTF-8) written as its escape, \\udc80, as JSON cannot hold it."""
        return {
            "file": _writable(self.path),
            "line": self.line,
            "field": _writable(self.field),
            "reason": _writable(self.reason),
        }


def _writable(s: str | None) -> str | None:
    """`s` with any lone surrogate as its backslash escape (other values as they are)."""
    if type(s) is not str or s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")
    return s


class InputFileError(NeardupError, OSError):
    """An input file cannot be opened or read (missing, unreadable, bad compression, ...)."""


class OutputError(NeardupError, OSError):
    """The output directory or one of its files cannot be written."""


class MemoryLimitError(InvalidParameterError):
    """``--memory-limit`` is below what this input needs (the message says how much)."""


# ---- the persistent index: each says what is wrong and, where it can, what to do ------


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

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.file))


class TextRemovedError(IndexCorruptError):
    """A text failed its checksum because the document was removed (its text zeroed by a
    scrubbing remove) or moved (a compact) after the reader's snapshot listed it: not damage.
    The read is run again on a newer snapshot (``Index._fresh_read``)."""


class ScrubIncompleteError(IndexError_, OSError):
    """A remove committed, but overwriting the removed texts in the log failed (a full disk):
    the next writer to open the index overwrites them (the rows of ``scrubs`` say where)."""

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self),))


class IndexConfigError(IndexError_, InvalidParameterError):
    """The index was built with other settings (method, k, num_perm, seed, scheme, bands, ...)
    than those asked for, or by a build of neardup whose signatures differ."""


class DuplicateIdError(IndexError_, ValueError):
    """A document id is already in the index, or appears twice in one batch."""

    def __init__(self, message: str, ids: list[str]) -> None:
        super().__init__(message)
        self.ids = ids

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.ids))


class DocumentNotFoundError(IndexError_, KeyError):
    """No document with this id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ReadOnlyIndexError(IndexError_, PermissionError):
    """A write on an index opened read-only."""


#: the index's base class under a name that reads well in ``except``
IndexFailure = IndexError_


class BackupBusyError(IndexError_, RuntimeError):
    """Every attempt of a backup met a change it could not copy around (a remove zeroing a text
    it had listed, a compact replacing a file): run it again at a quieter moment."""


# ---- the service -----------------------------------------------------------------------


class WriterGoneError(NeardupError, RuntimeError):
    """The writer process exited while a request waited for it: the request's outcome is unknown
    (an add may have been committed). The next write starts a new writer process."""


class WriterTimeoutError(WriterGoneError):
    """The writer did not answer a request within the server's write timeout (app.py,
    ``neardup serve --write-timeout``; a writer process stopped or hung, or a very long batch):
    the request's outcome is unknown (the writer may still do it, all or nothing)."""


class ListenError(NeardupError):
    """`neardup serve` cannot listen on the address asked for (taken, or not allowed)."""
