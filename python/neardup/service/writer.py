"""Group commit for the service: concurrent POSTs are added together, one commit (and one fsync)
per group, instead of one each.

Each request stays all or nothing on its own: its records are checked and its ids compared with
the index and with the requests before it in the group first, and a request that fails a check
gets its own error while the others go in. The group is then one add: each article is checked
against the archive and every article before it (earlier requests of the group included, as if
the requests had come one after the other), and the whole group is committed in one transaction.

WAL checkpoints run in a thread of their own (`Checkpointer`), not inside a request's commit:
SQLite's automatic checkpoint copies ~1,000 pages into the database file and fsyncs it in the
commit that crosses the limit, a 50-150 ms stall for that request and the ones queued behind it.
"""

from __future__ import annotations

import gc
import os
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from neardup.errors import DuplicateIdError, RecordError, ScrubIncompleteError
from neardup.index import Index, store
from neardup.index.errors import PartsShareAStory
from neardup.io.records import Fields
from neardup.service.config import DEFAULT_MAX_CHARS
from neardup.service.timings import Timings

__all__ = ["FIELDS", "GroupWriter", "open_writer", "quiet_gc"]

# The title is kept with the article but not compared: the guide compares article bodies, and a
# changed headline must not hide a copy.
FIELDS = Fields(id="id", text="text", title=None, time="published_at", source="source")


#: WAL size past which a checkpoint round holds the writer off for its catch-up
WAL_RESTART_BYTES = 16 << 20


class GroupWriter:
    def __init__(
        self,
        index: Index,
        fields: Fields,
        max_docs: int = 5000,
        max_chars: int = DEFAULT_MAX_CHARS,
        wal_restart_bytes: int = WAL_RESTART_BYTES,
    ) -> None:
        self.index = index
        #: past this WAL size a checkpoint round catches up under the writer's lock (Checkpointer)
        self.wal_restart_bytes = wal_restart_bytes
        self.fields = fields
        self.max_docs = max_docs
        #: the longest text an article may have (``neardup serve --max-chars``): longer, refused
        self.max_chars = max_chars
        self.q: queue.Queue = queue.Queue()
        self.lock = threading.Lock()  # held while a group is written (DELETE takes it too)
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.checkpointer: Checkpointer | None = None
        self._readers: ThreadPoolExecutor | None = None  # dry runs and removes: _pool
        self._pinging: tuple | None = None  # GET /v1/health's ping waiting: (future, since when)
        #: the native id of the thread that last took `lock` (a group's, a remove's): GET
        #: /v1/health reads its CPU time when the ping is not answered (busy or hung)
        self.lock_holder: int | None = None
        #: how long groups, WAL fsyncs and checkpoint rounds take (GET /v1/stats: timings.py)
        self.timings = Timings()
        #: with an index opened sync="group", answers wait for the WAL's fsync in a thread of
        #: their own (Acks) while the writer goes on to the next group
        self.acks = Acks(index, self.timings) if index.sync == "group" else None
        # the writer thread starts with the first submit(): the writer process (worker.py)
        # never submits, it calls write_group from its own main thread

    def _ensure_thread(self) -> None:
        """(Re)start the writer thread: an app whose lifespan ended may be served again (tests)."""
        if self.acks is not None:
            self.acks.ensure()
        if self._thread is not None and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="neardup-writer", daemon=True)
                self._thread.start()

    def submit(self, records: list[dict]) -> Future:
        """Queue `records` (one request); the future gets its verdicts or its error."""
        fut: Future = Future()
        self._ensure_thread()
        self.q.put((records, fut))
        return fut

    def add(self, records: list[dict], timeout: float | None = None):
        return self.submit(records).result(timeout)

    def dry_run(self, records: list[dict]) -> Future:
        """Check `records` against the index without adding them (beside the writer: reads)."""
        return self._pool().submit(self.index.add, records, fields=self.fields, max_chars=self.max_chars, dry_run=True)

    def remove(self, doc_id) -> Future:
        """Remove one document; durable (sync="group" included) before the future is done."""
        return self._pool().submit(self._remove, doc_id)

    def stage_timings(self) -> Future:
        """The writer's timings (timings.py) as a dict, in a future (as WriterProcess's)."""
        fut: Future = Future()
        fut.set_result(self.timings.as_dict())
        return fut

    def ping(self) -> tuple[Future, float]:
        """GET /v1/health: a future done once the writer is between two groups (it takes the
        writer's lock, which a group and a remove hold, and lets go at once), failed with
        TimeoutError past PING_WAIT s; and since when the writer has not answered (as
        WriterProcess.ping). One at a time: while one waits it is given again."""
        pool = self._pool()
        with self._start_lock:
            p = self._pinging
            if p is None or p[0].done():
                since = p[1] if p is not None and (p[0].cancelled() or p[0].exception() is not None) else time.time()
                p = self._pinging = (pool.submit(self._ping), since)
        return p

    def _ping(self) -> dict:
        if not self.lock.acquire(timeout=PING_WAIT):
            raise TimeoutError(f"the writer thread has held its lock for over {PING_WAIT:g} s")
        self.lock.release()
        return {"pid": os.getpid()}

    def backlog(self) -> dict:
        """What waits for the writer thread (as WriterProcess.backlog): adds not yet taken."""
        return {"requests_waiting": self.q.qsize(), "unsent_bytes": 0}

    def remove_many(self, ids: list, older_than, limit: int | None, scrub: bool = True) -> Future:
        """POST /v1/removals: `ids` (all or nothing) and up to `limit` documents older than
        `older_than`, in one transaction, durable before the future is done; its result is
        ``{"removed": n, "more": whether documents older than older_than remain}``."""
        return self._pool().submit(self._remove_many, ids, older_than, limit, scrub)

    def _remove_many(self, ids: list, older_than, limit: int | None, scrub: bool = True) -> dict:
        n = self._remove_durably(ids, older_than=older_than, limit=limit, scrub=scrub)
        # (a read, after the lock: with nothing older left it scans every row, which no add
        # need wait for)
        return {"removed": n, "more": self.index.older_remain(older_than)}

    def _remove(self, doc_id) -> int:
        return self._remove_durably([doc_id])

    def _remove_durably(self, ids: list, **kw) -> int:
        """Index.remove under the writer's lock, durable (sync="group" included) before it
        returns, also when the removal is committed but its texts not yet overwritten."""
        with self.lock:
            self.lock_holder = threading.get_native_id()
            try:
                n = self.index.remove(ids, **kw)
            except ScrubIncompleteError:
                self.index.make_durable()  # the removal is committed: durable before the answer too
                raise
            self.index.make_durable()
        return n

    def _pool(self) -> ThreadPoolExecutor:
        with self._start_lock:
            if self._readers is None:
                self._readers = ThreadPoolExecutor(4, thread_name_prefix="neardup-dry-run")
            return self._readers

    def close(self) -> None:
        t = self._thread
        if t is not None and t.is_alive():
            self.q.put(None)
            t.join(10)
        if self.acks is not None:
            self.acks.close()
        if self.checkpointer is not None:
            self.checkpointer.close()
            self.checkpointer = None
        with self._start_lock:
            pool, self._readers = self._readers, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            group, stop = _waiting(self.q, item, self.max_docs, lambda it: len(it[0]))
            self.write_group(group)
            if stop:
                return

    def write_group(self, group: list) -> None:
        """Add `group`, a list of (records, future) (one request each), as one commit; each
        future gets its request's verdicts or error. The writer thread calls it for what waits
        on its queue; the writer process (worker.py) for what waits on its socket."""
        with self.lock:
            self.lock_holder = threading.get_native_id()
            if self.checkpointer is None:
                # the writer connection stops checkpointing on commit; this thread's does it
                self.index.wal_autocheckpoint(0)
                self.checkpointer = Checkpointer(self.index, wal_max=self.wal_restart_bytes, timings=self.timings)
            with self.timings.timed("group"):
                self._write(group)

    def _write(self, group) -> None:
        ix = self.index
        checked = []
        for recs, fut in group:
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                docs, extras = ix.check_records(recs, self.fields, self.max_chars)
            except RecordError as exc:
                fut.set_exception(exc)
                continue
            except Exception as exc:  # pragma: no cover - reported to the request, never kills the writer
                fut.set_exception(exc)
                continue
            checked.append((docs, extras, fut))
        try:
            existing = ix.existing_ids([d.key for docs, _, _ in checked for d in docs])
        except Exception as exc:  # pragma: no cover
            for _, _, fut in checked:
                fut.set_exception(exc)
            return
        seen: set[str] = set()
        ok = []
        for docs, extras, fut in checked:
            keys = [d.key for d in docs]
            twice = sorted({k for k in keys if keys.count(k) > 1}) if len(set(keys)) != len(keys) else []
            if twice:
                fut.set_exception(DuplicateIdError(f"{len(twice)} id(s) appear twice in the batch: {twice[:5]}", twice))
                continue
            present = [k for k in keys if k in existing or k in seen]
            if present:
                fut.set_exception(
                    DuplicateIdError(f"{len(present)} id(s) already in the index: {present[:5]}", present)
                )
                continue
            seen.update(keys)
            ok.append((docs, extras, fut))
        if not ok:
            return
        all_docs = [d for docs, _, _ in ok for d in docs]
        all_extras = [e for _, extras, _ in ok for e in extras]
        try:
            # (the ids were checked just above, under self.lock, which every add and remove of
            # this index takes: the add need not look them up again)
            verdicts = ix.add_checked(all_docs, all_extras, ids_checked=True, parts=[len(docs) for docs, _, _ in ok])
        except PartsShareAStory:
            # two requests join one story: each request's verdict must give the story as it was
            # after that request (its keeper, its alternates), not after the later one's, so
            # the requests are added one by one, in order (rare: two copies of one story
            # within one group's few milliseconds)
            for docs, extras, fut in ok:
                try:
                    self._answer([(fut, ix.add_checked(docs, extras, ids_checked=True))])
                except Exception as exc:
                    fut.set_exception(exc)
            return
        except Exception as exc:
            for _, _, fut in ok:
                fut.set_exception(exc)
            return
        answers = []
        pos = 0
        for docs, _, fut in ok:
            answers.append((fut, verdicts[pos : pos + len(docs)]))
            pos += len(docs)
        self._answer(answers)

    def _answer(self, answers: list) -> None:
        if self.acks is not None:
            self.acks.put(answers)  # answered once the WAL is fsynced; the next group goes on
        else:
            for fut, v in answers:
                fut.set_result(v)


#: how long a health ping waits for the writer thread's lock (a pool thread, not a request, waits)
PING_WAIT = 10.0

WARM_UP = [{"id": "neardup-serve-warm-up", "text": "load every segment before the first request"}]


def open_writer(directory: str, open_kw: dict, max_chars: int = DEFAULT_MAX_CHARS) -> tuple[Index, GroupWriter]:
    """The service's writer on `directory`: the index opened with `open_kw`, its writer lock
    taken (a clear error now if another process holds it), every segment loaded by a warm-up
    query (not by the first request), and the group writer over it (refusing texts over
    `max_chars`). ``neardup serve`` calls it in a writer process of its own (worker.py) or in
    its own process (``--writer thread``)."""
    idx = Index.open(directory, **open_kw)
    try:
        idx.take_writer()
        idx.query(WARM_UP)
        return idx, GroupWriter(idx, FIELDS, max_chars=max_chars)
    except BaseException:
        idx.close()
        raise


def _waiting(q: queue.Queue, first, limit: int | None = None, size=lambda it: 1) -> tuple[list, bool]:
    """`first` and the items already waiting on `q` behind it, until their `size`s reach
    `limit`; and whether the stop sentinel (None) was among them (the caller stops after)."""
    items, n = [first], size(first)
    while limit is None or n < limit:
        try:
            it = q.get_nowait()
        except queue.Empty:
            break
        if it is None:
            return items, True
        items.append(it)
        n += size(it)
    return items, False


class Acks:
    """Answers of committed groups, given once the SQLite WAL has been fsynced
    (``Index.make_durable``): one fsync for every group committed since the last one, while the
    writer plans and commits the next group. The commit's own fsync (``synchronous=FULL``)
    would hold the writer for it instead: ~1 ms per group, more in the disk's tail, at ~80% of
    a core at 200 requests/s that queue was most of the difference between --sync full and
    --sync normal. An acknowledged article is as durable as with a fsynced commit."""

    def __init__(self, index: Index, timings: Timings | None = None) -> None:
        self.index = index
        self.timings = timings if timings is not None else Timings()
        self.q: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.ensure()

    def ensure(self) -> None:
        """(Re)start the thread: a writer served again after close() answers again (tests)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="neardup-acks", daemon=True)
                self._thread.start()

    def put(self, answers: list) -> None:
        self.q.put(answers)

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            batch, stop = _waiting(self.q, item)
            try:
                with self.timings.timed("wal_fsync"):
                    self.index.make_durable()
            except Exception as exc:  # the groups are committed, their durability unknown: said so
                for answers in batch:
                    for fut, _ in answers:
                        fut.set_exception(exc)
            else:
                for answers in batch:
                    for fut, v in answers:
                        fut.set_result(v)
            if stop:
                return

    def close(self) -> None:
        t = self._thread
        if t is not None and t.is_alive():
            self.q.put(None)
            t.join(10)


#: seconds between checkpoint rounds. A round ends with an fsync of the database file, and a
#: commit whose WAL fsync meets it waits for it (3-8 ms instead of 0.7): those commits made most
#: of the p99 at 200 POSTs/s. Smaller rounds more often meet more commits but hold each for less.
#: Measured with `--sync full` at 200/s, pairs of 20 s windows in alternation (2026-11-30):
#: p99 6.2 / 7.0 / 7.6 / 8.4 / 6.7 ms every 0.1 s against 8.1 / 8.1 / 9.4 / 8.7 / 8.5 every 0.2 s
#: (the round's own time 3.6-4.1 ms against 5.4-5.7); every 0.05 s was no better than 0.1
#: (6.5 / 7.7 / 6.6 against 7.5 / 7.0 / 7.5) and fsyncs the text log twice as often; every
#: 1 s was worse (p99 18 ms: 19-35 ms rounds, and catch-ups holding the writer 12-31 ms).
CHECKPOINT_EVERY = 0.1


class Checkpointer:
    """Checkpoints the WAL every `every` seconds on its own connection, PASSIVE: it copies
    committed frames into the database file without blocking the writer or readers (it skips
    frames a reader still needs; the next round takes them). SQLite releases the GIL while it
    works. Durability does not depend on it: a commit is durable in the WAL; a checkpoint only
    keeps the WAL from growing (the writer restarts the WAL from its start once a round has
    copied all of it). Each round also fsyncs the text log when small adds' texts wait for it
    in SQLite (``Index.sync_texts``).

    Under a steady stream of commits a PASSIVE round never copies *all* of the WAL: commits
    land while it runs, so the writer never finds it fully copied and never restarts it. The
    WAL then grew without bound (measured: 11 MB/s at 200 POSTs/s, 115 MB after 12 s), every
    commit appended to a growing file, and each fsync carried the file's new size. So once
    the WAL passes `wal_max` bytes (None: never), a round is followed by a second one under
    the index's writer lock (no commit meanwhile: an add, a remove or a fold's), which copies
    only what came since the first (a few milliseconds) and so copies everything; the next
    commit starts the WAL from its beginning (the file keeps its size: later commits overwrite
    it, no new blocks)."""

    def __init__(
        self,
        index: Index,
        every: float = CHECKPOINT_EVERY,
        wal_max: int | None = WAL_RESTART_BYTES,
        timings: Timings | None = None,
    ) -> None:
        self.index = index
        self.timings = timings if timings is not None else Timings()
        self.path = os.path.join(index.directory, store.DB_NAME)
        self.every = every
        self.wal_max = wal_max
        self.catch_ups = 0  # rounds that held the writer off (tests, stats)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="neardup-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn = store.connect(self.path)
        page = conn.execute("PRAGMA page_size").fetchone()[0] + 24  # a frame: header and page
        try:
            while not self._stop.wait(self.every):
                with self.timings.timed("checkpoint"):
                    self._round(conn, page)
        finally:
            conn.close()

    def _round(self, conn, page: int) -> None:
        try:
            # (busy, frames in the WAL, frames copied): the frames, not the file's size,
            # which stays at its high-water mark once the WAL restarts
            _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if self.wal_max is not None and frames * page > self.wal_max:
                with self.index.write_lock():  # no commit meanwhile: this round copies the rest
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.catch_ups += 1
        except Exception:  # pragma: no cover - busy or closing: the next round tries again
            pass
        try:
            # the small adds' texts wait in SQLite until the log is fsynced: here, off
            # the request path (index/pending.py); the next commit drops their rows
            self.index.sync_texts()
        except Exception:  # pragma: no cover - they stay durable in SQLite meanwhile
            pass
        try:
            # a scrubbing remove whose WAL truncation a reader held back: tried again here
            # until it is done (index/removal.py scrub_wal)
            self.index.scrub_wal()
        except Exception:  # pragma: no cover - the next round tries again
            pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


def quiet_gc() -> None:
    """Keep the cyclic GC from stalling requests (measured: single 50-150 ms pauses in the
    p99 of a 200/s load). The loaded index (segment metadata, level 0's map, FastAPI's routes
    and models) is frozen: later collections do not walk it again. The first generation's
    threshold is raised so young collections come ~7x less often; the service's per-request
    garbage is acyclic and freed by reference counting anyway."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(5000, 20, 100)
