"""Wall time of each stage of the last add, for the benchmark's breakdown (``Index.last_stages``).
A few perf_counter calls per add: nothing is timed per document."""

from __future__ import annotations

import time


class Stages:
    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        """Charge the time since the previous lap to `name`."""
        now = time.perf_counter()
        self.times[name] = self.times.get(name, 0.0) + now - self._t
        self._t = now
