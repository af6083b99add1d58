"""Errors of the input and output layer: each names the file, the line (or row) and the field."""
from __future__ import annotations

from neardup.errors import NeardupError

__all__ = ["RecordError", "InputFileError", "OutputError"]


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

    def __reduce__(self):  # pickled whole (the service's writer process sends errors back)
        return (type(self), (self.path, self.line, self.reason, self.field))

    def as_dict(self) -> dict:
        """For report.json: a lone surrogate (a field's name that holds one, a file name that
        is not UTF-8) written as its escape, \\udc80, as JSON cannot hold it."""
        return {"file": _writable(self.path), "line": self.line, "field": _writable(self.field),
                "reason": _writable(self.reason)}


def _writable(s):
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
