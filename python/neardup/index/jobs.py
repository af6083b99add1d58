"""A function run in a thread of its own (a segment file built while the rows are inserted,
segments loaded while a batch is read)."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Job"]


class Job:
    """A function run in a thread of its own; ``result()`` waits and returns or raises."""

    def __init__(self, fn) -> None:
        self._fn = fn
        self._out: Any = None
        self._exc: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="neardup-index-job", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._out = self._fn()
        except BaseException as exc:  # handed to result()
            self._exc = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self):
        self._thread.join()
        if self._exc is not None:
            raise self._exc
        return self._out
