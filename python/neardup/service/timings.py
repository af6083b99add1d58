"""How long the service's own stages take: counters an operator reads in ``GET /v1/stats``.

Why: a slow answer can come from the service (planning, a checkpoint, a fold), from the disk
(the WAL's fsync that every ``--sync full`` answer waits for) or from the network and the
client. The service counts, per stage, how many took longer than each of a fixed set of
thresholds (and their total, mean and max). Counts over a threshold can be subtracted: two
reads of ``/v1/stats`` a minute apart give the minute's slow fsyncs, which a percentile could
not. Recording one costs a lock and a few additions (~1 us); nothing is kept per request.

Stages (each in the process that runs it):

* ``post`` (``post_dry_run``): a ``POST /v1/documents``, from its validated body to its
  answer (the front process);
* ``group``: a group commit's plan and commit in the writer (one or more requests);
* ``wal_fsync``: the WAL's fsync that acknowledges the groups committed since the last one
  (``--sync full``);
* ``checkpoint``: a checkpoint round (it copies the WAL into the database file, off the
  requests' path, and fsyncs the text log when small adds' texts wait for it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["OVER_MS", "Histogram", "Timings"]

#: thresholds, in milliseconds, of the "over" counts
OVER_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


class Histogram:
    """Counts of durations over each of OVER_MS, with their number, total and max."""

    __slots__ = ("_lock", "count", "total_ms", "max_ms", "over")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.total_ms = 0.0
        self.max_ms = 0.0
        self.over = [0] * len(OVER_MS)

    def observe(self, ms: float) -> None:
        with self._lock:
            self.count += 1
            self.total_ms += ms
            if ms > self.max_ms:
                self.max_ms = ms
            for i, bound in enumerate(OVER_MS):
                if ms <= bound:
                    break
                self.over[i] += 1

    def as_dict(self) -> dict:
        with self._lock:
            return {
                "count": self.count,
                "mean_ms": round(self.total_ms / self.count, 3) if self.count else None,
                "max_ms": round(self.max_ms, 3),
                "over_ms": {str(b): n for b, n in zip(OVER_MS, self.over)},
            }


class Timings:
    """Named histograms, made on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._h: dict[str, Histogram] = {}

    def __getitem__(self, name: str) -> Histogram:
        h = self._h.get(name)
        if h is None:
            with self._lock:
                h = self._h.setdefault(name, Histogram())
        return h

    def observe(self, name: str, ms: float) -> None:
        self[name].observe(ms)

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Time the block (an exception raised in it is timed too: it took that long)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self[name].observe((time.perf_counter() - t0) * 1000.0)

    def as_dict(self) -> dict:
        with self._lock:
            names = sorted(self._h)
        return {n: self._h[n].as_dict() for n in names}
