"""What the batch job remembers of each document after reading it: no text, a few dozen bytes.

At ten million documents a Python object per field per document would cost gigabytes, so the
ids live in the core's :class:`~neardup._core.IdTable` (one byte buffer, exact duplicate check)
and the rest in typed arrays: time (8 bytes), source code (4), input number (4), record number
(8), an int-id flag (1) and the token count from the exact pass (4).
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from neardup import _core

__all__ = ["DocTable"]


class DocTable:
    def __init__(self) -> None:
        self.ids = _core.IdTable()
        self.int_id = bytearray()  # 1 where the input id was an integer (written back as one)
        self.times = array("d")
        self.source = array("i")  # index into source_names; -1 for none
        self.source_names: list[str] = []
        self._source_code: dict[str, int] = {}
        self.src = array("i")  # which input
        self.recno = array("q")  # record number within that input (1-based line for JSONL)

    def __len__(self) -> int:
        return len(self.times)

    def add(self, key: str, is_int: bool, time: float, source: str | None, src: int, recno: int) -> int:
        """Append a document; returns -1, or the index of the document that already has `key`
        (then nothing is appended)."""
        prev = self.ids.insert(key)
        if prev >= 0:
            return prev
        self.int_id.append(is_int)
        self.times.append(time)
        if source is None:
            self.source.append(-1)
        else:
            code = self._source_code.get(source)
            if code is None:
                code = self._source_code[source] = len(self.source_names)
                self.source_names.append(source)
            self.source.append(code)
        self.src.append(src)
        self.recno.append(recno)
        return -1

    def id_of(self, d: int) -> Any:
        key = self.ids.get(d)
        return int(key) if self.int_id[d] else key

    def ids_of(self, docs: np.ndarray) -> list[Any]:
        """The ids (as given: str or int) of documents `docs`."""
        docs = np.ascontiguousarray(docs, dtype=np.int64)
        keys = self.ids.take(docs)
        flags = np.frombuffer(self.int_id, dtype=np.uint8)[docs] if len(docs) else np.zeros(0, np.uint8)
        if flags.any():
            return [int(k) if f else k for k, f in zip(keys, flags.tolist())]
        return keys

    def keys_of(self, docs: np.ndarray) -> list[str]:
        """The ids of `docs` as strings (the order the keeper rule breaks ties by)."""
        return self.ids.take(np.ascontiguousarray(docs, dtype=np.int64))

    def sources_of(self, docs: np.ndarray) -> list[str | None]:
        codes = np.frombuffer(self.source, dtype=np.int32)[docs].tolist()
        names = self.source_names
        return [names[c] if c >= 0 else None for c in codes]

    def source_rank(self, prefer: tuple[str, ...] | list[str], which: np.ndarray | None = None) -> np.ndarray:
        """Rank of each document's source (of documents `which`; all by default) in `prefer`
        (len(prefer) when not listed)."""
        from neardup.stages.keepers import source_ranks

        # one rank per distinct source (the keeper rule's own ranking), then one gather: no
        # per-document Python work; the last entry is for documents without a source
        per_code = source_ranks([*self.source_names, None], prefer)
        codes = np.frombuffer(self.source, dtype=np.int32) if len(self.source) else np.zeros(0, np.int32)
        if which is not None:
            codes = codes[which]
        return per_code[codes.astype(np.int64)]  # code -1 (no source) takes the last entry: unlisted

    def times_array(self) -> np.ndarray:
        return np.frombuffer(self.times, dtype=np.float64) if len(self.times) else np.zeros(0, np.float64)

    def src_array(self) -> np.ndarray:
        """The input of each document (a view: no copy of a per-document table)."""
        return np.frombuffer(self.src, dtype=np.int32) if len(self.src) else np.zeros(0, np.int32)

    def recno_array(self) -> np.ndarray:
        return np.frombuffer(self.recno, dtype=np.int64) if len(self.recno) else np.zeros(0, np.int64)

    def nbytes(self) -> int:
        return (
            self.ids.heap_bytes()
            + len(self.int_id)
            + 8 * len(self.times)
            + 4 * len(self.source)
            + 4 * len(self.src)
            + 8 * len(self.recno)
        )
