"""Waiting for the writer: a request's wait for its answer, bounded by the write timeout
(:class:`Deadline`, ``neardup serve --write-timeout``) and cut off by a shutdown; a removal's
answer (:func:`removed`)."""

from __future__ import annotations

import asyncio

from neardup.errors import (
    DocumentNotFoundError,
    NeardupError,
    ScrubIncompleteError,
    WriterGoneError,
    WriterTimeoutError,
)
from neardup.service.problems import err, writer_error

__all__ = ["CUT_OFF", "Deadline", "LATE", "removed", "written"]


#: what a request still waiting for the writer when the server's graceful shutdown ends is told
CUT_OFF = (
    "the server is shutting down and this request was still waiting for the writer: whether its write "
    "went in is unknown (an add that did answers 409 when retried)"
)


#: what a write the writer did not answer in time is told, by kind (the 503 writer_timeout)
LATE = {
    "add": "whether this request's add went in is unknown (the writer may still do it, all or nothing; "
    "an add that went in answers 409 when retried)",
    "dry_run": "a dry run writes nothing: retry it later",
    "remove": "whether the removal went in is unknown (the writer may still do it; a removal that went in "
    "answers 404 when retried)",
}


async def removed(fut, deadline: Deadline | None, not_found: str = ""):
    """A removal's answer (DELETE /v1/documents/{id}, POST /v1/removals), durable (--sync full
    too) before it is given; or the error response: 404 for an id not in the index, 507 for
    a removal committed whose texts were not yet overwritten, the writer's 503s."""
    try:
        return await written(fut, deadline, "remove")
    except DocumentNotFoundError as exc:
        return err(404, "not_found", str(exc) + not_found)
    except ScrubIncompleteError as exc:  # removed (committed, durable), its text not yet overwritten
        return err(507, "scrub_incomplete", str(exc))
    except NeardupError as exc:
        refused = writer_error(exc)
        if refused is None:
            raise
        return refused


async def written(fut, deadline: Deadline | None = None, what: str = "add"):
    """The writer's answer to a request (`fut`, a concurrent future), awaited on the event loop,
    until `deadline` (the write timeout: None, no limit), then WriterTimeoutError (Deadline).

    uvicorn cancels the requests still running when its graceful shutdown times out (a writer
    that is hung or stopped): such a request is answered 503 writer_unavailable here
    (WriterGoneError), not uvicorn's bare 500. Nothing else cancels a request's task."""
    try:
        if deadline is None:
            return await asyncio.wrap_future(fut)
        return await deadline.wait(asyncio.wrap_future(fut), what)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # answered: the cancellation is handled
        raise WriterGoneError(CUT_OFF) from None


class Deadline:
    """The write timeout of every request waiting for the writer (``--write-timeout``), kept
    by one timer.

    Past it a request is answered 503 writer_timeout (WriterTimeoutError): its wait (the
    asyncio future wrapping the writer's) is cancelled, and asyncio.wrap_future passes that on
    to the writer's future. A writer thread then skips the request if it has not started it; a
    writer process may still do it, whole (a group is one transaction), and its late answer
    finds the future done and is dropped (worker._settle). Nothing is ever half written.

    Why one timer, not asyncio.timeout around each wait: its timer handle cost ~15 us of CPU per
    request (benchmarks/bench_fastpost.py's loop: 0.123 -> 0.146 ms per single-article POST).
    Every wait has the same limit, so the waits in the order they began are in the order of
    their deadlines: a dict (insertion-ordered) of them, and one timer at the oldest one's
    deadline, which cancels what is due and is set again for the next. A request adds and
    removes one dict entry."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self.waiting: dict = {}  # wrapping future -> its deadline (loop time), oldest first
        self.timer: asyncio.TimerHandle | None = None

    async def wait(self, af: asyncio.Future, what: str):
        loop = af.get_loop()
        if loop is not self.loop:  # (an app served again on another loop: tests)
            self.loop, self.waiting, self.timer = loop, {}, None
        self.waiting[af] = when = loop.time() + self.timeout
        if self.timer is None:
            self.timer = loop.call_at(when, self._due)
        try:
            return await af
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if af in self.waiting or (task is not None and task.cancelling()):
                raise  # the task's own cancellation (a shutdown's cut-off): written()'s
            raise WriterTimeoutError(
                f"the writer did not answer within {self.timeout:g} s (neardup serve --write-timeout): {LATE[what]}"
            ) from None
        finally:
            self.waiting.pop(af, None)

    def _due(self) -> None:
        self.timer = None
        assert self.loop is not None  # (set by the wait() that set the timer calling this)
        now = self.loop.time()
        while self.waiting:
            af, when = next(iter(self.waiting.items()))
            if when > now:
                self.timer = self.loop.call_at(when, self._due)
                return
            del self.waiting[af]  # (wait() tells a timeout from a cancellation by this)
            af.cancel()
