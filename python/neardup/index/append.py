"""Appending a batch's texts to the text log while the batch is still being read and planned.

Bytes past the log's committed length belong to no document until the commit's transaction
records the new length (a crash or a failed plan leaves them as garbage that the next write
overwrites and the next writer's recovery cuts off), so they can be written, and fsynced, before
the plan is done. For a large add the write and the fsync (hundreds of MB for a 200,000-article
day) then overlap the plan instead of adding to it: an add from files hands the chunks over
(``put``) once they are read and signed (intake.py: while signing, both cores are busy; the plan
uses one), and the write runs beside the plan until the final fsync. Small adds (the service's single articles) write
inline (a thread costs ~0.1 ms) and, with `sync="full"`, skip the log's fsync: their texts are
made durable in SQLite by the commit instead (``defer``, index/pending.py). The bytes and their
CRC-32s are written by Rust (``_core.write_texts``: positioned writes, GIL released).
"""

from __future__ import annotations

import os
import queue
import threading

import numpy as np

from neardup import _core
from neardup.index.bulk import Const

__all__ = ["LogFile", "PendingTexts", "BACKGROUND_MIN"]

#: adds of fewer documents write their texts inline
BACKGROUND_MIN = 2000

_END = object()


class LogFile:
    """The writer's descriptor of the text log it appends to, kept open from one add to the
    next (an open and a close per add were a tenth of a single article's add). Only the writer
    writes through it, one add at a time (it holds the writer lock and the add lock)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR)

    def close(self) -> None:
        os.close(self.fd)


class PendingTexts:
    """The texts of one add, being written past the log's committed length.

    ``texts`` given: written inline (small) or in a thread (large). ``texts=None``: a thread
    writes whatever ``put`` hands it until ``end()``."""

    def __init__(
        self,
        log: LogFile,
        file_id: int,
        committed: int,
        texts: list[str] | None,
        fsync: bool,
        defer: tuple[int, int] | None = None,
    ) -> None:
        """`defer` = (documents, characters): an add of at most that much (with `fsync`) does not
        fsync the log; its texts are left in ``in_db`` for the commit to make durable in SQLite
        (index/pending.py). Known at once for `texts`, at ``end()`` in streaming mode."""
        self.path, self.file_id, self.committed, self.fsync = log.path, file_id, committed, fsync
        self._defer = defer if fsync else None
        self._kept: list[str] | None = [] if self._defer is not None else None
        self._chars = 0
        #: the texts, when they are made durable in SQLite instead of by an fsync of the log
        self.in_db: list[str] | None = None
        if texts is not None:
            self._keep(texts)
            if self._kept is not None:
                self.fsync = False
        self._off = committed
        self._lens: list[np.ndarray] = []
        self._crcs: list[np.ndarray] = []
        self._result: tuple[list, int] | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._q: queue.Queue | None = None
        self._fd = log.fd
        if texts is None:
            self._q = queue.Queue()
            self._thread = threading.Thread(target=self._drain, name="neardup-texts", daemon=True)
            self._thread.start()
        elif len(texts) >= BACKGROUND_MIN or self.fsync:
            # with an fsync (a small add whose texts are not deferred: a mid-sized one), the
            # write goes to a thread: the fsync's latency then hides behind the plan; the
            # commit still waits for it (result()) before its own transaction
            self._thread = threading.Thread(target=self._all, args=(texts,), name="neardup-texts", daemon=True)
            self._thread.start()
        else:
            self._all(texts)

    def put(self, texts: list[str]) -> None:
        """Queue the next documents' texts (streaming mode)."""
        assert self._q is not None  # (streaming mode: made with texts=None)
        self._q.put(texts)

    def end(self) -> None:
        """No more texts (streaming mode): the thread truncates, fsyncs and finishes."""
        if self._q is not None:
            self._q.put(_END)

    def _keep(self, texts: list[str]) -> None:
        """Hold the texts while the add is small enough to skip the log's fsync."""
        if self._kept is None:
            return
        self._chars += sum(map(len, texts))
        assert self._defer is not None  # (texts are kept only with a defer)
        if len(self._kept) + len(texts) > self._defer[0] or self._chars > self._defer[1]:
            self._kept = None  # too large: the log is fsynced as usual
        else:
            self._kept.extend(texts)

    def _write(self, texts: list[str]) -> None:
        if self._kept is not None and self._q is not None:
            self._keep(texts)
        if self._error is None and texts:
            lens, crcs = _core.write_texts(self._fd, self._off, texts)
            self._lens.append(lens)
            self._crcs.append(crcs)
            self._off += int(lens.sum(dtype=np.int64))

    def _finish(self) -> None:
        try:
            if self._error is None:
                if os.fstat(self._fd).st_size != self._off:
                    # bytes a failed add left past our end: cut off (the log then ends where
                    # this add's texts end, as after any add)
                    os.ftruncate(self._fd, self._off)
                if self._kept is not None:
                    self.in_db, self.fsync = self._kept, False
                if self.fsync:
                    os.fsync(self._fd)
                lens = np.concatenate(self._lens) if self._lens else np.zeros(0, np.uint32)
                crcs = np.concatenate(self._crcs) if self._crcs else np.zeros(0, np.uint32)
                ends = self.committed + np.cumsum(lens, dtype=np.int64)
                cols = [Const(self.file_id), (ends - lens).tolist(), lens.tolist(), crcs.tolist()]
                self._result = (cols, self._off)
        except BaseException as exc:  # handed to the committing thread by result()
            self._error = exc

    def _all(self, texts: list[str]) -> None:
        try:
            self._write(texts)
        except BaseException as exc:
            self._error = exc
        self._finish()

    def _drain(self) -> None:
        q = self._q
        assert q is not None  # (the streaming mode's thread)
        while True:
            item = q.get()
            if item is _END:
                break
            try:
                self._write(item)
            except BaseException as exc:  # keep draining (put never blocks), report at result()
                self._error = exc
        self._finish()

    def wait(self) -> None:
        """Let the write finish (also when the plan failed: nothing may write after we return)."""
        self.end()
        if self._thread is not None:
            self._thread.join()

    def result(self) -> tuple[list, int]:
        """The ``documents`` columns (text_file, text_offset, text_length, text_crc) of the
        texts in order, and the log's new length."""
        self.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None  # (set by _finish unless it failed)
        return self._result
