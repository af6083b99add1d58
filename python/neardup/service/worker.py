"""The service's writer in a process of its own (``neardup serve --writer process``, the default).

Why a process: with the writer in a thread, the HTTP event loop and the writer share one GIL.
At 200 single-article POSTs/s the writer planned and committed ~2.5 ms of Python per article
and the event loop parsed and answered ~1.3 ms per request; each waited for the other (measured:
the writer's wall time 28% over its CPU time), and that wait was in every request's latency.
In a process of its own the writer has a GIL and a core to itself.

Shape: the server process (the front) keeps an :class:`Index` opened for reading (GET
documents and clusters, stats, the web page: SQLite readers in WAL mode see every commit). The
writer process opens the index for writing (it holds the writer lock), runs the same
:class:`GroupWriter` (group commit, ``Acks``, ``Checkpointer``, background folds) and answers
adds, dry runs (they need level 0's postings, which live in the writer) and removes. Requests
and answers go over a pipe as ``(kind, request id, payload)``; verdicts come back as dicts,
errors as the same exception classes (they pickle whole).

If the writer process dies (killed, out of memory), the index is consistent (an add is all or
nothing), the requests waiting for it get :class:`WriterGoneError` (HTTP 503: their outcome
is unknown; a retry of an add that did go in gets 409), and the next write starts a new
writer process.

If it stops answering without dying (``kill -STOP``, hung), sending never blocks the server's
event loop (:class:`_Outbox`), ``ping`` tells GET /v1/health so, and the front's wait for an
answer is bounded (writes.py, ``--write-timeout``: :class:`WriterTimeoutError`).
"""

from __future__ import annotations

import collections
import functools
import itertools
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, InvalidStateError
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from neardup.errors import InternalError, NeardupError, WriterGoneError
from neardup.service.config import DEFAULT_MAX_CHARS
from neardup.service.hostcpu import process_state

__all__ = ["WriterProcess"]

#: how long the front waits for a new writer process to open the index and load its segments
START_TIMEOUT = 600.0

#: seconds a stopping writer process is given to finish what it has and close the index
STOP_WAIT = 60.0
#: a writer process stopped (SIGSTOP) this long while the server shuts down is killed then, not
#: after STOP_WAIT (the index stays consistent: what it had not committed is not in it)
STOPPED_GRACE = 2.0

#: what a request made while close() stops the writer process is told
STOPPING = "the writer process is being stopped (the server is shutting down)"

#: bytes of requests the front keeps for a writer process that does not read them (stopped,
#: hung) before it refuses new ones at once (nothing of those is written): its memory stays
#: bounded however long the writer stays stopped (over six default --max-body requests)
UNSENT_MAX = 64 << 20


class WriterProcess:
    """The front's handle on the writer process: ``submit`` (add, group-committed with the
    requests waiting beside it), ``dry_run`` and ``remove`` return futures, as
    :class:`GroupWriter`'s do. `open_kw` are :meth:`Index.open`'s keyword arguments for the
    writer (threads, sync, background_fold, l0_max, l0_fold_at, merge_max); `max_chars`: the
    longest text an article may have (``neardup serve --max-chars``)."""

    def __init__(
        self,
        directory: str,
        open_kw: dict | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        unsent_max: int = UNSENT_MAX,
    ) -> None:
        self.directory = directory
        self.open_kw = dict(open_kw or {})
        self.max_chars = max_chars
        #: bytes of requests kept for a writer that does not read them before new ones are refused
        self.unsent_max = unsent_max
        self._lock = threading.Lock()  # (re)start and send, one at a time
        self._ids = itertools.count()
        self._conn: Connection | None = None  # None while no writer process runs
        self._proc: subprocess.Popen | None = None
        self._waiting: dict[int, Future] = {}  # of the current process
        #: requests made while a new writer process starts (in a thread of its own: the start
        #: opens the index and loads its segments, seconds on a big one, and _call runs on the
        #: server's event loop, which must go on answering GETs meanwhile)
        self._queued: list[tuple[str, Any, Future]] = []
        self._restarting: threading.Thread | None = None
        self._closing = False
        self._out: _Outbox | None = None  # sends to the current process (never blocks)
        #: the ping waiting for an answer (future, sent at, its connection); one at a time
        self._pinging: tuple | None = None
        self._silent_since: float | None = None  # the first ping not answered since the last one that was
        self._timings: Future | None = None  # the last stage_timings request
        self._install(*self._launch())

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        """Whether a writer process runs now (one that died is started again by the next
        request that needs it)."""
        proc = self._proc
        return proc is not None and proc.poll() is None

    # ------------------------------------------------------------------ requests
    def submit(self, records: list[dict]) -> Future:
        return self._call("add", records)

    def dry_run(self, records: list[dict]) -> Future:
        return self._call("dry", records)

    def remove(self, doc_id) -> Future:
        return self._call("remove", doc_id)

    def remove_many(self, ids: list, older_than, limit: int | None, scrub: bool = True) -> Future:
        return self._call("remove_many", (ids, older_than, limit, scrub))

    def stage_timings(self) -> Future:
        """The writer process's timings (timings.py) as a dict; {} while no writer process runs
        (asking does not start one), and {} at once while the last request for them is still
        unanswered (a stopped writer: GET /v1/stats waits for it once, not on every call, and
        the requests do not pile up in its pipe)."""
        with self._lock:
            running = self._conn is not None and not self._closing
            last = self._timings
        if not running or (last is not None and not last.done()):
            fut: Future = Future()
            fut.set_result({})
            return fut
        fut = self._timings = self._call("timings", None)
        return fut

    def ping(self) -> tuple[Future, float | None] | None:
        """GET /v1/health: a future that the writer process's main loop answers (between two
        groups), and since when the writer has not answered a ping (the time this one, or the
        first unanswered one before it, was sent; None if it was answered meanwhile); None while
        no writer process runs (asking starts none). One ping at a time: while one waits it is
        given again, so a stopped writer does not collect one per health check."""
        with self._lock:
            if self._conn is None or self._closing:
                return None
            p = self._pinging
            if p is None or p[0].done() or p[2] is not self._conn:
                if p is not None and p[0].done() and _answered(p[0]):
                    self._silent_since = None
                fut: Future = Future()
                now = time.time()
                p = self._pinging = (fut, now, self._conn)
                if self._silent_since is None:
                    self._silent_since = now
                fut.add_done_callback(self._pinged)
                self._send("ping", None, fut)
            return p[0], self._silent_since

    def _pinged(self, fut: Future) -> None:
        if _answered(fut):
            self._silent_since = None

    def backlog(self) -> dict:
        """What waits for the writer process (GET /v1/health when it does not answer): requests
        sent or queued and not answered (pings left out), and bytes not yet taken by it."""
        with self._lock:
            ping = self._pinging[0] if self._pinging is not None else None
            n = sum(1 for f in self._waiting.values() if f is not ping) + len(self._queued)
            out = self._out
        return {"requests_waiting": n, "unsent_bytes": out.unsent_bytes if out is not None else 0}

    def _call(self, kind: str, payload) -> Future:
        fut: Future = Future()
        with self._lock:
            if self._closing:
                fut.set_exception(WriterGoneError(STOPPING))
            elif self._conn is None:
                # the last one died: a new one opens the index (and recovers it), in a thread
                # of its own; this request waits for it, the caller does not
                self._queued.append((kind, payload, fut))
                if self._restarting is None:
                    self._restarting = threading.Thread(
                        target=self._restart, name="neardup-writer-restart", daemon=True
                    )
                    self._restarting.start()
            else:
                self._send(kind, payload, fut)
        return fut

    def _send(self, kind: str, payload, fut: Future) -> None:
        """Send one request to the current process (the caller holds the lock); never blocks
        (_Outbox)."""
        rid = next(self._ids)
        self._waiting[rid] = fut
        assert self._out is not None  # (called with a current process: _install set its outbox)
        try:
            self._out.send((kind, rid, payload))
        except _Full as exc:  # not sent: nothing of it is written
            self._waiting.pop(rid, None)
            _settle(fut, False, WriterGoneError(str(exc)))
        except (OSError, ValueError) as exc:  # the pipe broke: the answers thread sees it too
            self._waiting.pop(rid, None)
            _settle(fut, False, WriterGoneError(f"cannot reach the writer process: {exc}"))

    def _restart(self) -> None:
        """Start a new writer process (without the lock: requests keep queueing meanwhile),
        then send it what queued; if it cannot start, those requests get the error."""
        try:
            started = self._launch()
        except BaseException as exc:  # noqa: BLE001 - reported to the requests that wait
            err = exc if isinstance(exc, NeardupError) else WriterGoneError(f"cannot start the writer process: {exc}")
            with self._lock:
                queued, self._queued, self._restarting = self._queued, [], None
            for _, _, fut in queued:
                _settle(fut, False, err)
            return
        with self._lock:
            queued, self._queued, self._restarting = self._queued, [], None
            closing = self._closing
            if not closing:
                self._install(*started)
                for kind, payload, fut in queued:
                    self._send(kind, payload, fut)
        if closing:  # close() was called while it started: stop it again, nothing is sent
            self._stop(*started)
            for _, _, fut in queued:
                _settle(fut, False, WriterGoneError(STOPPING))

    # ------------------------------------------------------------------ process
    def _launch(self) -> tuple[Connection, subprocess.Popen]:
        """Start a writer process and wait until it holds the writer lock and has loaded the
        index; its error (index locked, corrupt, ...) is raised here, as the same class.
        Returns its end of the socket pair and the process (:meth:`_install` puts them in use).

        A fresh interpreter (``python -m neardup.service.worker``) on one end of a socket pair,
        not multiprocessing's fork (this process has threads) or spawn (it re-imports the
        caller's main module: a script calling ``serve()`` without a main guard would run
        again)."""
        mine, theirs = socket.socketpair()
        with mine, theirs:
            proc = subprocess.Popen(
                [sys.executable, "-m", "neardup.service.worker", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
            )
            front = Connection(mine.detach())
        try:
            front.send((self.directory, self.open_kw, self.max_chars))
            if not front.poll(START_TIMEOUT):
                raise WriterGoneError(f"the writer process did not open {self.directory} in {START_TIMEOUT:.0f} s")
            kind, value = front.recv()
        except (EOFError, OSError):
            front.close()
            proc.wait(10)
            raise WriterGoneError(  # noqa: B904 - the EOF is how its exit shows; kept as the context
                f"the writer process exited while opening the index (exit code {proc.returncode})"
            )
        except BaseException:
            front.close()
            proc.kill()
            proc.wait(10)
            raise
        if kind != "ready":
            front.close()
            proc.wait(30)
            raise value
        return front, proc

    def _install(self, front: Connection, proc: subprocess.Popen) -> None:
        """Make a started process the current one, with a thread for its answers."""
        waiting: dict[int, Future] = {}
        out = _Outbox(front, self.unsent_max)
        self._conn, self._proc, self._waiting, self._out = front, proc, waiting, out
        threading.Thread(
            target=self._answers, args=(front, proc, waiting, out), name="neardup-writer-answers", daemon=True
        ).start()

    def _answers(self, conn, proc, waiting: dict[int, Future], out: _Outbox) -> None:
        """Hand each answer to its request's future; when the process has gone, fail the rest."""
        while True:
            try:
                rid, ok, value = conn.recv()
            except (EOFError, OSError):
                break
            fut = waiting.pop(rid, None)
            if fut is not None:
                _settle(fut, ok, value)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover - its pipe closed, it is on its way out
            pass
        out.close()
        with self._lock:
            if self._conn is conn:
                self._conn = None
            left = list(waiting.values())
            waiting.clear()
        for fut in left:
            _settle(
                fut,
                False,
                WriterGoneError(
                    f"the writer process exited (exit code {proc.returncode}) before answering; whether this "
                    "request's write went in is unknown (an add that did answers 409 when retried)"
                ),
            )

    def close(self) -> None:
        """Stop the writer process: it finishes the requests it has, then closes the index. A
        process still starting is stopped once it has (its queued requests get WriterGoneError)."""
        with self._lock:
            self._closing = True  # until it returns: requests made meanwhile get WriterGoneError
            conn, proc, out, self._conn = self._conn, self._proc, self._out, None
            starting = self._restarting
        try:
            if starting is not None:
                starting.join(START_TIMEOUT)
            if conn is not None:
                assert proc is not None  # (a process's connection is installed with it: _install)
                self._stop(conn, proc, out)
        finally:
            with self._lock:  # a later request starts a new writer process, as after a crash
                self._closing = False

    @staticmethod
    def _stop(conn: Connection, proc: subprocess.Popen, out: _Outbox | None = None) -> None:
        try:
            if out is not None:  # behind what it has not yet sent (the writer's order)
                out.send(("stop", -1, None), force=True)
            else:  # a process that was never installed: nothing else was sent to it
                conn.send(("stop", -1, None))
        except (OSError, ValueError):  # pragma: no cover - already gone
            pass
        if not _exits(proc):  # a stuck or stopped writer: the index stays consistent
            proc.kill()
            proc.wait(10)
        if out is not None:
            out.close()
        conn.close()


def _exits(proc: subprocess.Popen, wait: float = STOP_WAIT, stopped_for: float = STOPPED_GRACE) -> bool:
    """Whether the writer process exits within `wait` s of being told to stop; False at once
    once it has been stopped (SIGSTOP) for `stopped_for` s: a stopped writer held a server's
    shutdown for the whole minute, with nothing to come of it."""
    deadline = time.monotonic() + wait
    since = None
    while True:
        try:
            proc.wait(0.25)
            return True
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if process_state(proc.pid) == "stopped":
            since = since if since is not None else now
            if now - since >= stopped_for:
                return False
        else:
            since = None
        if now >= deadline:
            return False


class _Full(Exception):
    """A request the front does not send: too much already waits for the writer process."""


class _Outbox:
    """The front's sending end of the pipe to a writer process; sending never blocks the caller.

    Why: requests are sent from the server's event loop, and Connection.send blocks once the
    socket's buffer (~200 KB) is full, which it is as soon as the writer process stops reading
    (stopped by SIGSTOP, hung; or for a moment, while a batch of several MB is sent). Measured:
    with the writer stopped, 40 POSTs of 20 articles each and the event loop stopped, and GET
    /v1/health, /v1/stats and the page answered nothing until the writer went on. Here a
    message is sent with MSG_DONTWAIT (one system call, as Connection.send's); what does not
    fit waits in `unsent`, in order, sent by a thread of its own with blocking sends, and
    while anything waits there later messages queue behind it (the writer reads them in the
    order they were sent). The framing is Connection's: the writer process reads with
    Connection.recv. Past `unsent_max` bytes waiting a new message is refused (_Full)."""

    def __init__(self, conn: Connection, unsent_max: int = UNSENT_MAX) -> None:
        self.unsent_max = unsent_max
        # its own descriptor on the socket (the answers thread reads through `conn`'s)
        self.sock = socket.socket(fileno=os.dup(conn.fileno()))
        self.unsent: collections.deque = collections.deque()  # memoryviews, in order
        self.unsent_bytes = 0
        self.broken: BaseException | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def send(self, obj, force: bool = False) -> None:
        """Send `obj` now or queue it (`force`: past `unsent_max` too); raises _Full, or the
        OSError that broke the socket, before anything of it is sent."""
        buf = ForkingPickler.dumps(obj)
        n = len(buf)
        header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!iQ", -1, n)
        with self._lock:
            if self.broken is not None:
                raise self.broken
            if self.unsent:
                if self.unsent_bytes >= self.unsent_max and not force:
                    raise _Full(
                        f"the writer process is not reading its requests ({self.unsent_bytes:,} bytes of "
                        "them wait to be sent): this request was not sent, nothing of it is written"
                    )
                self._queue([memoryview(header), memoryview(buf)])
                return
            # (a small message in one piece, as Connection sends it; a large one without a copy)
            parts: list[bytes | memoryview] = [header + buf] if n <= 16384 else [header, buf]
            try:
                sent = self.sock.sendmsg(parts, [], socket.MSG_DONTWAIT)
            except BlockingIOError:
                sent = 0
            if sent < len(header) + n:
                rest = []
                for piece in parts:
                    part = memoryview(piece)
                    if sent >= len(part):
                        sent -= len(part)
                    else:
                        rest.append(part[sent:])
                        sent = 0
                self._queue(rest)

    def _queue(self, parts: list) -> None:
        """(with the lock) `parts` go out after what waits, from the sending thread."""
        self.unsent.extend(parts)
        self.unsent_bytes += sum(len(p) for p in parts)
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="neardup-writer-send", daemon=True)
            self._thread.start()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self.unsent or self.broken is not None:
                    self._thread = None
                    return
                part = self.unsent[0]
            try:
                self.sock.sendall(part)  # blocks while the writer process does not read
            except OSError as exc:  # it has gone: the answers thread fails what waits for it
                with self._lock:
                    self.broken = exc
                    self.unsent.clear()
                    self.unsent_bytes = 0
                    self._thread = None
                return
            with self._lock:
                self.unsent.popleft()
                self.unsent_bytes -= len(part)

    def close(self) -> None:
        with self._lock:
            if self.broken is None:
                self.broken = OSError("the connection to the writer process is closed")
        self.sock.close()


def _answered(fut: Future) -> bool:
    """`fut` (done) has its result: neither cancelled nor failed."""
    return not fut.cancelled() and fut.exception() is None


def _settle(fut: Future, ok: bool, value) -> None:
    """Give `fut` its result (`ok`) or exception, unless it is already done: the server's event
    loop cancels the futures of requests cut off at the end of a graceful shutdown (uvicorn
    cancels their tasks; asyncio.wrap_future cancels the future it wraps), and a request
    cut off must not stop the thread answering the others (InvalidStateError)."""
    try:
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)
    except InvalidStateError:
        pass


# ---------------------------------------------------------------------- the writer process
def serve_writes(conn: Connection) -> None:
    """The writer process's main: open the index for writing, then answer requests until the
    front says stop or goes away (its end of the pipe closes)."""
    from neardup.service.writer import open_writer, quiet_gc

    try:
        directory, open_kw, max_chars = conn.recv()
        idx, writer = open_writer(directory, open_kw, max_chars=max_chars)
    except BaseException as exc:  # noqa: BLE001 - sent to the front, which raises it
        conn.send(("failed", portable(exc)))
        return
    quiet_gc()
    conn.send(("ready", os.getpid()))
    sending = threading.Lock()  # answers come from the writer, acks and dry-run threads

    def answer(rid: int, fut: Future) -> None:
        # every request gets an answer, whatever goes wrong here (a request left unanswered
        # would hold its HTTP connection, and the server's shutdown, forever)
        try:
            exc = fut.exception()
            if exc is None:
                res = fut.result()  # verdicts (a lazy sequence: built here, in this process) or a count
                msg: tuple[int, bool, Any] = (
                    rid,
                    True,
                    res if isinstance(res, (int, dict)) else [v.as_dict() for v in res],
                )
            else:
                msg = (rid, False, portable(exc))
        except BaseException as exc:  # noqa: BLE001
            msg = (rid, False, portable(exc))
        with sending:
            try:
                conn.send(msg)
            except OSError:  # the front has gone: nobody waits for this answer
                pass

    try:
        stop = False
        while not stop:
            # this thread is the writer: what waits on the socket is one group, one commit (no
            # hand-over to a writer thread: one fewer wake-up per request and Python lock pass)
            try:
                msgs = [conn.recv()]
                docs = _docs_in(msgs[0])
                while docs < writer.max_docs and conn.poll(0):
                    msgs.append(conn.recv())
                    docs += _docs_in(msgs[-1])
            except (EOFError, OSError):
                break
            group = []
            for kind, rid, payload in msgs:
                if kind == "stop":
                    stop = True
                    continue
                if kind == "add":
                    fut: Future = Future()
                    group.append((payload, fut))
                elif kind == "dry":
                    fut = writer.dry_run(payload)
                elif kind == "remove":
                    fut = writer.remove(payload)
                elif kind == "remove_many":
                    fut = writer.remove_many(*payload)
                elif kind == "timings":
                    fut = writer.stage_timings()
                elif kind == "ping":  # GET /v1/health: this loop runs (between two groups)
                    fut = Future()
                    fut.set_result({"pid": os.getpid()})
                else:  # pragma: no cover - a bug in the front
                    fut = Future()
                    fut.set_exception(InternalError(f"unknown request kind {kind!r}"))
                fut.add_done_callback(functools.partial(answer, rid))
            if group:
                try:
                    writer.write_group(group)
                except BaseException as exc:  # noqa: BLE001 - never leave a request unanswered
                    for _, fut in group:
                        if not fut.done():
                            fut.set_exception(exc)
    finally:
        writer.close()  # the removes and dry runs still running finish and are answered
        idx.close()


def _docs_in(msg: tuple) -> int:
    """Articles a request adds (a group is cut at GroupWriter.max_docs)."""
    kind, _, payload = msg
    return len(payload) if kind == "add" else 0


def portable(exc: BaseException) -> BaseException:
    """`exc` if it survives pickling whole, else an InternalError naming it (a bug to report)."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return InternalError(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    # Ctrl-C in a terminal reaches the whole process group: the front stops this process in
    # order (it finishes what it was given); on its own it would stop mid-request
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve_writes(Connection(int(sys.argv[1])))
