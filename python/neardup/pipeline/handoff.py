"""Handing batches from a reader thread to the thread that signs them."""
from __future__ import annotations

import queue
import threading

__all__ = ["put_until_stopped"]


def put_until_stopped(q: queue.Queue, item, stop: threading.Event) -> bool:
    """Put `item` on the bounded queue `q`, waiting while it is full, unless `stop` is set
    first (the consumer failed and will not take more): True when put. The short timeout
    lets a blocked reader see `stop` instead of waiting forever on a queue nobody drains."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False
