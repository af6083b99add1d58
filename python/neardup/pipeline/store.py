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
import tempfile

import numpy as np

__all__ = ["RowStore"]



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

class RowStore:
    def __init__(self, width: int, dtype, budget, tmp_dir: str | None = None, name: str = "rows",
                 flat: bool = False) -> None:
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
        self._file = None
        self._map: np.ndarray | None = None

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
        rows = np.ascontiguousarray(rows, dtype=self.dtype).reshape(-1) if self.flat \
            else np.ascontiguousarray(rows, dtype=self.dtype).reshape(-1, self.width)
        if len(rows) == 0:
            return
        self.rows += len(rows)
        if self._file is not None:
            self._file.write(rows.tobytes())
            return
        self._parts.append(rows)
        self._ram += rows.nbytes
        if self._fits is not None and not self._fits(self._ram):
            self._spill()

    def _spill(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="neardup-", dir=self.tmp_parent)
        self._file = open(os.path.join(self._dir, f"{self.name}.bin"), "wb")
        for p in self._parts:
            self._file.write(p.tobytes())
        self._parts = []
        self._ram = 0

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
            self._file.close()
            path = os.path.join(self._dir, f"{self.name}.bin")
            if self.rows == 0:
                self._map = np.zeros(shape, self.dtype)
            else:
                self._map = np.memmap(path, dtype=self.dtype, mode="r", shape=shape)
        return self._map

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
