"""Appending a batch's texts to the text log while the batch is still being planned.

Bytes past the log's committed length belong to no document until the commit's transaction
records the new length (a crash or a failed plan leaves them as garbage that the next write
overwrites and the next writer's recovery cuts off), so they can be written, and fsynced, before
the plan is done. For a large add the write and the fsync (hundreds of MB for a 200,000-article
day) then overlap the plan's work instead of adding to it; small adds (the service's single
articles) write inline, where a thread would cost more than it saves.
"""
from __future__ import annotations

import os
import threading
import zlib

__all__ = ["PendingTexts"]

#: adds of fewer documents write their texts inline
BACKGROUND_MIN = 2000


class PendingTexts:
    def __init__(self, path: str, file_id: int, committed: int, texts: list[str], fsync: bool) -> None:
        self.path, self.file_id, self.committed, self.texts, self.fsync = path, file_id, committed, texts, fsync
        self._result: tuple[list[tuple], int] | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if len(texts) >= BACKGROUND_MIN:
            self._thread = threading.Thread(target=self._run, name="neardup-texts", daemon=True)
            self._thread.start()
        else:
            self._run()

    def _run(self) -> None:
        try:
            cols = []
            parts = []
            off = self.committed
            for t in self.texts:
                b = t.encode("utf-8")
                parts.append(b)
                cols.append((self.file_id, off, len(b), zlib.crc32(b)))
                off += len(b)
            with open(self.path, "r+b") as f:
                f.seek(self.committed)
                f.write(b"".join(parts))
                f.truncate(off)
                f.flush()
                if self.fsync:
                    os.fsync(f.fileno())
            self._result = (cols, off)
        except BaseException as exc:  # handed to the committing thread by result()
            self._error = exc

    def wait(self) -> None:
        """Let the write finish (also when the plan failed: nothing may write after we return)."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> tuple[list[tuple], int]:
        """(text_file, offset, length, crc) per document, and the log's new length."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._result
