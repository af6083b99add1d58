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
        return {"file": self.path, "line": self.line, "field": self.field, "reason": self.reason}


class InputFileError(NeardupError, OSError):
    """An input file cannot be opened or read (missing, unreadable, bad compression, ...)."""


class OutputError(NeardupError, OSError):
    """The output directory or one of its files cannot be written."""
