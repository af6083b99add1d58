"""Atomic output files: written under a temporary name in the same directory, then renamed.

A crash, a full disk or Ctrl-C never leaves a half-written file under the final name: either
the old file (if any) or the complete new one is there.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from neardup.io.errors import OutputError

__all__ = ["atomic_open", "dumps", "write_jsonl"]

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None


def dumps(obj) -> str:
    """One compact JSON line (UTF-8 kept as is, not \\u-escaped)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(obj).decode("utf-8")
        except TypeError:
            pass  # e.g. an int over 64 bits: the standard library copes
    # values JSON has no type for (bytes, Decimal from Parquet, ...) are written as strings
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


@contextmanager
def atomic_open(path: str, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file next to `path`; rename it over `path` only if the block succeeds."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_jsonl(path: str, rows) -> int:
    """Write an iterable of dicts as JSON lines, atomically. Returns the number of lines."""
    n = 0
    with atomic_open(path) as f:
        for row in rows:
            f.write(dumps(row))
            f.write("\n")
            n += 1
    return n
