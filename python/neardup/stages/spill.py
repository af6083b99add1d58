"""Spill files: private temporary directories and the one error a failed spill write gives.

Shared by every stage that can go to disk (the band sort of the candidate stage, the local
engine's row store)."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from contextlib import contextmanager

import numpy as np

from neardup.errors import OutputError

__all__ = ["join_freeing", "make_dir", "private_dir", "spill_error"]


def spill_error(exc: OSError, tmp_dir: str | None, what: str, nbytes: int, done: int | None = None) -> OutputError:
    """A failed write of a spill file as one line naming the spill directory (--tmp-dir) and
    how much was being written, with the output's exit code (5) rather than a traceback: a
    full disk there (ENOSPC, EDQUOT) is the usual cause, and the fix is room or another --tmp-dir."""
    where = tmp_dir if tmp_dir is not None else tempfile.gettempdir()
    sizes = ([f"writing {_mb(nbytes)}"] if nbytes else []) + ([f"{_mb(done)} written before"] if done else [])
    hint = (
        "free space there or give another --tmp-dir"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT)
        else "give another --tmp-dir"
    )
    return OutputError(
        f"spill directory {where} (--tmp-dir): cannot write {what}"
        + (f" ({', '.join(sizes)})" if sizes else "")
        + f": {exc.strerror or exc}: {hint}"
    )


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n:,} bytes"


def join_freeing(parts: list[np.ndarray], dtype, shape=None) -> np.ndarray:
    """One array from `parts` (the list is emptied), each part freed once copied: the peak is
    the result plus one part, not twice the result (np.concatenate would hold both)."""
    out = np.empty(shape if shape is not None else sum(len(p) for p in parts), dtype)
    at = 0
    parts.reverse()
    while parts:
        p = parts.pop()
        out[at : at + len(p)] = p
        at += len(p)
        del p
    return out


def make_dir(prefix: str, parent: str | None, claim) -> str:
    """A new private directory (mode 0700) named `prefix` + random under `parent` (or the
    system's temporary directory), as tempfile.mkdtemp makes it, except that its path is
    given to `claim` *before* it is created: whoever removes it on failure knows it even if a
    signal (SIGTERM, Ctrl-C) lands between its creation and mkdtemp's return, which left a
    ``neardup-*`` directory in --tmp-dir."""
    parent = parent if parent is not None else tempfile.gettempdir()
    while True:
        path = os.path.join(os.path.abspath(parent), prefix + os.urandom(6).hex())
        claim(path)
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


@contextmanager
def private_dir(prefix: str, parent: str | None, what: str = "spill files"):
    """:func:`make_dir` as a context: the directory and all in it removed when the block ends,
    however it ends (as tempfile.TemporaryDirectory, without its window); one that cannot be
    created is :func:`spill_error` (`what`: for its message)."""
    made: list[str] = []
    try:
        try:
            path = make_dir(prefix, parent, made.append)
        except OSError as exc:
            raise spill_error(exc, parent, what, 0) from exc
        yield path
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
