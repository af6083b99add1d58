"""Fixed-width rows (band keys, signatures, fingerprints) kept in memory while they fit in a
budget, spilled to a memory-mapped file when they don't.

The batch job appends one batch of rows at a time. Below the budget the batches stay in RAM and
are joined once at the end; past it, everything so far and everything after is written to a
file in a private temporary directory and handed back as a read-only ``numpy.memmap``, so the
operating system pages the rows in and out as the candidate stage reads them (sequentially,
one band column at a time). The file is deleted when the store is closed.
"""

from __future__ import annotations

import os
import shutil
from typing import IO

import numpy as np

from neardup.stages.spill import join_freeing, make_dir, spill_error

__all__ = ["RowStore"]


#: Rows copied from a spill file's map between drops of its pages (RowStore.rows_at). A read
#: fault on a file map maps not one page but every cached page of its 64 KiB window (the
#: kernel's fault-around; the spill file was just written, so all of it is cached): a row maps
#: up to two windows, 128 KiB, and 64 rows 8 MiB. (1,024 rows, counted as two pages each, could
#: map 128 MiB: an estimate run's clusters stage went ~60 MiB past its limit on 200k articles.)
ROWS_AT_CHUNK = 64


def _drop_pages(mm) -> None:
    import mmap

    if mm is not None and hasattr(mm, "madvise"):
        try:
            mm.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):  # pragma: no cover - a platform without it: pages stay
            pass


class RowStore:
    def __init__(
        self, width: int, dtype, budget, tmp_dir: str | None = None, name: str = "rows", flat: bool = False
    ) -> None:
        """`budget`: None (never spill), a number of bytes the rows may take, or a callable
        told the rows' bytes in memory after each append that says whether they still fit
        (the run's memory budget decides from everything else that is resident). `flat`: one
        value per row, given and returned as a 1-D array (fingerprints); otherwise rows are
        2-D, also of width 1 (the band keys of a single band)."""
        if flat and width != 1:
            raise ValueError("a flat RowStore holds one value per row")
        self.width = int(width)
        self.flat = flat
        self.dtype = np.dtype(dtype)
        if budget is None or callable(budget):
            self._fits = budget
        else:
            self._fits = lambda ram, cap=int(budget): ram <= cap
        self.tmp_parent = tmp_dir
        self.name = name
        self.rows = 0
        self._parts: list[np.ndarray] = []
        self._ram = 0
        self._dir: str | None = None
        self._file: IO[bytes] | None = None
        self._map: np.ndarray | None = None
        self._written = 0  # bytes written to the spill file (for a full disk's message)

    @property
    def row_bytes(self) -> int:
        return self.width * self.dtype.itemsize

    @property
    def ram_bytes(self) -> int:
        """Bytes of rows held in memory (0 once spilled)."""
        return self._ram

    @property
    def spilled(self) -> bool:
        return self._dir is not None

    def append(self, rows: np.ndarray) -> None:
        rows = (
            np.ascontiguousarray(rows, dtype=self.dtype).reshape(-1)
            if self.flat
            else np.ascontiguousarray(rows, dtype=self.dtype).reshape(-1, self.width)
        )
        if len(rows) == 0:
            return
        self.rows += len(rows)
        if self._file is not None:
            self._write(rows.tobytes())
            return
        self._parts.append(rows)
        self._ram += rows.nbytes
        if self._fits is not None and not self._fits(self._ram):
            self._spill()

    def _spill(self) -> None:
        total = sum(p.nbytes for p in self._parts)
        try:
            make_dir("neardup-", self.tmp_parent, lambda path: setattr(self, "_dir", path))  # (close removes it)
            assert self._dir is not None  # (set by make_dir's claim)
            self._file = open(os.path.join(self._dir, f"{self.name}.bin"), "wb")
        except OSError as exc:
            raise spill_error(exc, self.tmp_parent, f"the {self.name} spill file", total) from exc
        self._written = 0
        for p in self._parts:
            self._write(p.tobytes())
        self._parts = []
        self._ram = 0

    def _write(self, data: bytes) -> None:
        assert self._file is not None  # (only once spilled)
        try:
            self._file.write(data)
        except OSError as exc:
            raise spill_error(exc, self.tmp_parent, f"the {self.name} spill file", len(data), self._written) from exc
        self._written += len(data)

    def spill_now(self) -> bool:
        """Move rows held in memory to the file (a later stage needs the room); True if any
        were. :meth:`finish` then returns the memory map."""
        if self._file is not None or self._dir is not None or not self._parts:
            return False
        self._spill()
        return True

    @property
    def path(self) -> str | None:
        """The spill file (None while the rows are in memory)."""
        return os.path.join(self._dir, f"{self.name}.bin") if self._dir is not None else None

    def finish(self) -> np.ndarray:
        """All rows: an in-memory array, or a read-only memory map of the spill file."""
        shape = (self.rows,) if self.flat else (self.rows, self.width)
        if self._file is None:
            if not self._parts:
                return np.zeros(shape, self.dtype)
            if len(self._parts) == 1:
                return self._parts[0]
            parts, self._parts = self._parts, []
            out = join_freeing(parts, self.dtype, shape)
            self._parts = [out]
            return out
        if self._map is None:
            try:  # (the last buffered block is written here: a full disk can show now too)
                self._file.close()
            except OSError as exc:
                raise spill_error(exc, self.tmp_parent, f"the {self.name} spill file", 0, self._written) from exc
            assert self._dir is not None  # (spilled: the file is in it)
            path = os.path.join(self._dir, f"{self.name}.bin")
            if self.rows == 0:
                self._map = np.zeros(shape, self.dtype)
            else:
                self._map = np.memmap(path, dtype=self.dtype, mode="r", shape=shape)
        return self._map

    def rows_at(self, idx: np.ndarray) -> np.ndarray:
        """Rows `idx` as an in-memory array. From a spill file's map, a sorted chunk of rows
        at a time, each chunk's pages dropped after it is copied (MADV_DONTNEED: clean file
        pages, read again from the page cache if needed): indexing the map directly left every
        page it touched resident, uncounted by --memory-limit (an estimate run's verify stage
        grew ~55 MiB past its limit on a 150k corpus)."""
        rows = self.finish()
        idx = np.asarray(idx, dtype=np.int64)
        mm = getattr(rows, "_mmap", None) if isinstance(rows, np.memmap) else None
        if mm is None or not hasattr(mm, "madvise") or len(idx) <= ROWS_AT_CHUNK:
            out = rows[idx]
            _drop_pages(mm)
            return out
        order = np.argsort(idx, kind="stable")
        out = np.empty((len(idx),) + rows.shape[1:], rows.dtype)
        for at in range(0, len(idx), ROWS_AT_CHUNK):
            o = order[at : at + ROWS_AT_CHUNK]
            out[o] = rows[idx[o]]
            _drop_pages(mm)
        return out

    def close(self) -> None:
        """Free the rows (and remove the spill file); closing twice is harmless."""
        self._parts = []
        self._ram = 0
        self._map = None
        if self._file is not None and not self._file.closed:
            self._file.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
