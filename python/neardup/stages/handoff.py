"""Handing batches from a reader thread to the thread that signs them."""

from __future__ import annotations

import queue
import threading

__all__ = ["put_until_stopped", "received"]


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


def received(q: queue.Queue, end: object):
    """The items a reader thread puts on `q` until it puts `end`; an exception it puts (its
    failure, handed over) is raised here, in the consuming thread."""
    while True:
        item = q.get()
        if item is end:
            return
        if isinstance(item, BaseException):
            raise item
        yield item
