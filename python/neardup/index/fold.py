"""Level 0 folded into a segment in the background, off the path of adds (LSM-style).

The inline fold (``Index._commit``) puts every level-0 document into the segment of the add that
crosses ``l0_max``, inside that add's transaction: at 50,000 documents that add takes ~400 ms,
and in the service every request queued behind it waits too. An index opened with
``background_fold=True`` instead folds in two steps:

1. :func:`prepare`, without the writer lock (adds keep going to level 0): read level 0 from a
   read snapshot, up to its last document D; build the sorted postings; write and fsync the
   segment file (not yet in the manifest: a crash leaves a file that the next writer deletes,
   as for an interrupted add); then read the level-0 rows past D (the adds made meanwhile) into
   the next in-memory level 0.
2. :func:`commit`, under the writer lock, one short transaction: the manifest row, level 0's rows
   up to D deleted, the generation bumped; then the in-memory state swapped (the new
   segment appended, level 0 holding only documents past D). Nothing is sorted under the lock;
   only level 0's rows past D (the few adds made during the build) are read, and put back after
   level 0 is cleared whole. The replaced in-memory map is freed later, in small slices, by a
   thread of its own (a single deallocation held the GIL for 48 ms).

A document removed while the segment was built is still listed by the new segment, but
``remove`` always records a tombstone, and every lookup drops tombstoned documents. If the
manifest changed meanwhile (a compact, or an inline fold by a large add or the backstop: each
takes level 0 itself), the fold is abandoned: its file is deleted and nothing else changes.

Size-tiered merging. Every lookup searches every segment, so a fold that only appended would
make a query's cost grow with the number of folds (~700 a day in the service). :func:`prepare`
therefore also merges into its segment the trailing segments of the manifest that are small
next to it (:func:`tail_to_merge`: while the last remaining one holds at most MERGE_FACTOR
times the documents gathered so far), read from the snapshot's manifest without the writer
lock; :func:`commit` swaps their manifest rows for the new one in its transaction (the new row
is last, where the merged ones were: the manifest stays oldest first) and deletes their files
after it. Readers that still hold a snapshot listing them either loaded them already (a read
reads a segment whole, and an unlinked file stays readable to whoever opened it) or meet
``FileGoneError`` and retry on the newer manifest (``Index._fresh_read``), as after a compact.
Consecutive segments made by background folds then shrink by more than MERGE_FACTOR each, so
there are at most 1 + log_F(N / m) of them (N documents, m the smallest fold); and a document is
rewritten only when its segment grows by a factor of at least 1 + 1/F, so at most
log_(1+1/F)(N / m) times (F = 2, 700 folds of 25,000: at most 10 segments, 16 rewrites). A merge
drops the postings of the documents tombstoned in its snapshot, and its commit deletes those
tombstones: no file lists the documents any more (each document is in one segment at most).
Until 2026-12-01 the tombstones stayed until a ``compact``, which a served index never gets
(``compact`` needs the writer lock): one that evicts by age kept every removed document's
tombstone in memory, and each remove copied them all. Tombstones from removes after the
snapshot stay (the new segment still lists those documents).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from neardup import _sets
from neardup.errors import FileGoneError
from neardup.index import store
from neardup.index.segment import Postings, write_segment

__all__ = [
    "BACKSTOP",
    "MERGE_FACTOR",
    "Prepared",
    "prepare",
    "commit",
    "abandon",
    "fold_once",
    "Folder",
    "tail_to_merge",
]

#: with background folding an add still folds level 0 inline (in its own transaction) when level
#: 0 would exceed BACKSTOP x l0_max: background folds that fail or cannot keep up must not let
#: level 0 (an in-memory map, read whole from SQLite when another process has written) grow
#: without bound
BACKSTOP = 2

#: entries of a replaced level-0 map freed per slice (~0.2 ms holding the GIL), and the pause
#: after each (a 50,000-document map is then freed over ~3 s, at ~4% of one core)
FREE_SLICE = 1_000
FREE_PAUSE = 0.005

#: F of the size-tiered merge (see the module's docstring): a fold takes the last segment in
#: while that segment holds at most F times the documents gathered so far. Larger F: fewer
#: segments, more rewriting; 0: no merging (every fold appends a segment)
MERGE_FACTOR = 2


@dataclass
class Prepared:
    """A segment file written but not yet listed: the documents of level 0 up to ``upto``."""

    name: str
    postings: Postings
    size: int
    crc: int
    upto: int  # documents <= upto were read from level 0 into the segment
    manifest: list[str]  # segment files listed when level 0 was read: the commit needs the same
    replaces: list[str]  # the trailing segments of that manifest merged into this one
    l0: store.L0  # level 0's documents past upto, as committed up to document `seen`
    seen: int
    build_s: float
    #: tombstoned documents the merged segments listed and the merge dropped: no file lists them
    #: after the commit, which deletes their tombstones (sorted)
    dropped: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def prepare(ix, min_docs: int = 1, factor: int = MERGE_FACTOR, paced: bool = False) -> Prepared | None:
    """Step 1 (no writer lock): the segment of level 0's documents, merged with the manifest's
    small trailing segments (:func:`tail_to_merge` with `factor`), written and fsynced.
    None when level 0 holds fewer than `min_docs` documents, or when a segment to merge was
    deleted meanwhile (a compact: the index moved on, as :func:`commit` would find). The caller
    must hold the index's writer flock (taken by ``ix.take_writer()``): another process's writer
    would delete the file as unreferenced garbage. `paced`: the segment is written in synced
    pieces (``write_segment``), as a background fold does beside requests."""
    t0 = time.perf_counter()
    bands = ix.config.bands
    conn = store.connect(os.path.join(ix.directory, store.DB_NAME), readonly=True)
    try:
        conn.execute("BEGIN")  # one snapshot for the manifest, the rows and the tombstones
        try:
            listed = conn.execute("SELECT file, docs, bytes, crc FROM segments ORDER BY seg").fetchall()
            rows = conn.execute("SELECT doc, exact_key, bands FROM level0 ORDER BY doc").fetchall()
            gen = int(ix.meta_value(conn, "generation"))
            k = (
                tail_to_merge([r[1] for r in listed], len(rows), factor, ix.tuning.merge_max)
                if rows and len(rows) >= min_docs
                else 0
            )
            # only the tombstones a merge needs (it drops their documents' postings), and they
            # must come from this snapshot: a later remove's tombstone still hides its document
            tomb = np.array([r[0] for r in conn.execute("SELECT doc FROM tombstones")], np.int64) if k else None
        finally:
            conn.execute("COMMIT")
        if not rows or len(rows) < min_docs:
            return None
        merged = listed[len(listed) - k :]
        try:  # usually already in memory: every lookup reads every segment
            parts = [ix.cached_segment(f, size, crc) for f, _, size, crc in merged]
        except FileGoneError:
            return None  # replaced since the snapshot (by a compact): this fold would be abandoned
        upto = int(rows[-1][0])
        p = _level0_postings(rows, bands)
        del rows
        dropped = np.zeros(0, np.int64)
        if parts and tomb is not None and len(tomb):
            # each document is listed by one segment at most (a fold moves level 0's into a new
            # one, a merge replaces the segments it merges): the tombstones of the documents
            # these list are needed by no file once the merge has dropped their postings
            listed_docs = np.concatenate(
                [x for part in parts for x in ((part.exact[1], part.bands[0][1]) if bands else (part.exact[1],))]
            )
            dropped = _sets.unique(tomb[_sets.isin(tomb, listed_docs)])
            del listed_docs
        if parts:
            p = Postings.merge(parts + [p], bands, tomb)
            # what is left once the tombstoned documents are dropped: one posting per band each
            p.docs = int(len(p.bands[0][1])) if bands else p.docs
            del parts
        name = f"seg-{gen + 1:08d}-{os.urandom(4).hex()}.ndx"
        path = os.path.join(ix.directory, name)
        size, crc = write_segment(path, p, pace=ix.steps.pace_bytes if paced else None)
        try:
            conn.execute("BEGIN")
            try:
                seen = int(ix.meta_value(conn, "next_doc")) - 1
                l0 = store.L0.load(conn, after=upto)
            finally:
                conn.execute("COMMIT")
        except BaseException:
            _unlink(path)
            raise
        return Prepared(
            name,
            p,
            size,
            crc,
            upto,
            [r[0] for r in listed],
            [r[0] for r in merged],
            l0,
            seen,
            time.perf_counter() - t0,
            dropped,
        )
    finally:
        conn.close()


def tail_to_merge(docs: list[int], building: int, factor: int = MERGE_FACTOR, cap: int | None = None) -> int:
    """How many trailing segments (their document counts, oldest first) a fold of `building`
    documents merges: the last remaining one while it holds at most `factor` times the
    documents gathered so far, and the merged segment stays within `cap` documents
    (``Tuning.merge_max``; None: no cap). A big segment is thus rewritten only once the folds
    after it add up to 1/factor of it, and after the fold the segment before the new one
    holds more than `factor` times the new one's documents, or the merge reached the cap."""
    total, k = building, 0
    while k < len(docs) and docs[-1 - k] <= factor * total and (cap is None or total + docs[-1 - k] <= cap):
        total += docs[-1 - k]
        k += 1
    return k


def _level0_postings(rows: list, bands: int) -> Postings:
    """Sorted postings of level-0 rows (doc, exact key (signed), band keys blob)."""
    # C-level passes (np.fromiter over map/itemgetter), not Python loops: see _free_gradually
    n = len(rows)
    docs = np.fromiter(map(itemgetter(0), rows), np.int64, n)
    exact = np.fromiter(map(itemgetter(1), rows), np.int64, n).view(np.uint64)  # stored signed (u2i)
    keys = np.frombuffer(b"".join(map(itemgetter(2), rows)), "<u8").reshape(n, bands)
    return Postings.build(docs, exact, keys, bands)


def commit(ix, pf: Prepared, gradual: bool = False) -> bool:
    """Step 2 (under the writer lock): list the segment, drop its documents from level 0, swap
    the in-memory state. False (the file deleted, nothing changed) when the index has moved on
    in a way that makes the segment wrong, or is closing. `gradual`: the merged segments are
    deleted a piece at a time (a background fold beside requests; see `_retire`)."""
    with ix.write_lock():
        if ix.closed:
            abandon(ix, pf)
            return False
        with ix.writing() as conn:  # (re-entrant: the writer connection, under the lock held)
            conn.execute("BEGIN IMMEDIATE")
            try:
                if [r[0] for r in conn.execute("SELECT file FROM segments ORDER BY seg")] != pf.manifest:
                    conn.execute("ROLLBACK")
                    abandon(ix, pf)
                    return False
                # level 0 keeps the documents past upto: the few added while the segment was built.
                # They are set aside and level 0 is cleared whole: a DELETE without WHERE frees the
                # table's pages at once (SQLite's truncate optimisation), where "WHERE doc <= upto"
                # rewrote every page row by row: 180 ms instead of 16 (statements and COMMIT) for
                # 48,500 rows, all of it under the writer lock, so in every queued request's latency
                keep = conn.execute("SELECT doc, exact_key, bands FROM level0 WHERE doc > ?", (pf.upto,)).fetchall()
                conn.execute("DELETE FROM level0")
                conn.executemany("INSERT INTO level0 VALUES (?, ?, ?)", keep)
                # the in-memory level 0 catches up with the adds committed since prepare read it
                # (this is the writer: nothing else writes)
                pf.l0.put_rows(r for r in keep if r[0] > pf.seen)
                # the merged segments' rows go, the new one comes last: where they were, as the
                # manifest is checked unchanged above and they were its tail
                conn.executemany("DELETE FROM segments WHERE file = ?", [(f,) for f in pf.replaces])
                conn.execute(
                    "INSERT INTO segments (file, docs, bytes, crc, created_at) VALUES (?, ?, ?, ?, ?)",
                    (pf.name, pf.postings.docs, pf.size, pf.crc, time.time()),
                )
                # tombstones only the merged segments needed: without this they were kept until a
                # compact, which a served index never gets (it needs the writer lock): an index
                # evicting 200,000 articles a day kept 1.6 MB more of them in memory each day, and
                # each remove copied them all (see the module's docstring)
                dl = pf.dropped.tolist()
                for i in range(0, len(dl), 30000):
                    chunk = dl[i : i + 30000]
                    conn.execute(f"DELETE FROM tombstones WHERE doc IN ({','.join('?' * len(chunk))})", chunk)
                gen = ix.bump_generation(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                abandon(ix, pf)
                raise
        ix.cache_segment(pf.name, pf.postings)  # the next lookup need not read it back

        def swapped(st):
            """The state after this fold: `st` with the new segment in place of the merged ones
            and level 0 past `upto`; None (reloaded from SQLite) when it is not the state this
            commit followed."""
            if st is None or st.generation != gen - 1:
                return None  # reloaded from SQLite by the next read
            if len(st.tombstones) and pf.l0.docs:
                # removed while level 0 was being read: their rows are gone, their postings
                # (kept in pf.l0's map) are dropped by the tombstones at lookup
                d = np.fromiter(pf.l0.docs, np.int64, len(pf.l0.docs))
                pf.l0.docs.difference_update(d[_sets.isin(d, st.tombstones)].tolist())
            gone = set(pf.replaces)
            kept = [x for x in st.segments if x[0] not in gone]
            tomb = np.setdiff1d(st.tombstones, pf.dropped, assume_unique=True) if len(pf.dropped) else st.tombstones
            return store.State(gen, st.bands, kept + [(pf.name, pf.size, pf.crc)], pf.l0, tomb)

        replaced = ix.swap_state(swapped)
    # deleting the merged files (up to ~200 MB) needs no lock: no other listing has them
    _retire(ix, pf.replaces, gradual=gradual)
    if replaced is not None:
        box = [replaced.l0]  # the only reference this frame keeps, handed over (popped) below
        del replaced
        threading.Thread(target=_free_gradually, args=(box,), name="neardup-fold-free", daemon=True).start()
    return True


def _retire(ix, names: list[str], gradual: bool = False) -> None:
    """Forget and delete segments the manifest no longer lists, right after the commit (as a
    compact does). A reader holding an older snapshot that has not loaded one yet gets
    ``FileGoneError`` and retries on the newer manifest (``Index._fresh_read``); one that did
    keeps its arrays, which never refer to the file once read. A crash before the unlinks
    leaves files that the next writer's recovery deletes, as it lists none of them.

    `gradual` (a background fold, beside requests): each file is first renamed out of the way
    (``retired-`` + its name: readers see it gone, as after an unlink), then cut down
    ``Steps.retire_step`` bytes at a time, each cut synced, ``Steps.retire_pause`` apart, then unlinked. The disk is
    mounted with ``discard``: one unlink of a 170 MB merged segment trims all its blocks in the
    next journal commit, and the WAL fsyncs of the commits around it waited 82-160 ms for it
    (measured, three times, a loop of 48 KB WAL writes + fdatasync at 200/s); cut 1 MB at a time,
    the worst wait was 29 ms. A reader that opened the file just before the rename may read it
    short: ``segment.read_segment`` reports that as gone (the path is empty), not as damage."""
    if not names:
        return
    ix.make_last_commit_durable()  # the commit that unlisted them, on disk before they go
    ix.forget_segments(names)
    if not gradual:
        for f in names:
            _unlink(os.path.join(ix.directory, f))
        return
    moved = []
    for f in names:
        src, dst = os.path.join(ix.directory, f), os.path.join(ix.directory, RETIRED + f)
        try:
            os.rename(src, dst)
        except OSError:  # pragma: no cover - gone already
            continue
        moved.append(dst)
    for path in moved:
        _shrink_and_unlink(ix, path)


#: a retired segment's name: RETIRED + its name (the writer's recovery deletes such files)
RETIRED = "retired-"


def _shrink_and_unlink(ix, path: str) -> None:
    """Cut `path` down a step at a time (each cut synced: its blocks are freed, and trimmed, in
    that journal commit), then unlink it. An index closing meanwhile: unlinked at once."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:  # pragma: no cover
        return
    try:
        size = os.fstat(fd).st_size
        while size > 0 and not ix.closed:
            size = max(0, size - ix.steps.retire_step)
            os.ftruncate(fd, size)
            os.fdatasync(fd)
            time.sleep(ix.steps.retire_pause)
    except OSError:  # pragma: no cover - the unlink below still runs
        pass
    finally:
        os.close(fd)
        _unlink(path)


def _free_gradually(box: list, wait_s: float = 10.0) -> None:
    """Free a replaced level 0 piece by piece, in a thread of its own. Dropped at once, its map
    (~630,000 entries at 48,500 documents) took 48 ms to deallocate, holding the GIL: a stall for
    every request. A request still reading the old state holds the L0 object; once none does
    (the weak reference dies), nothing else can reach the map and it is emptied in slices."""
    l0 = box.pop()
    m = l0.map
    gone = weakref.ref(l0)
    del l0
    deadline = time.monotonic() + wait_s
    while gone() is not None:
        if time.monotonic() > deadline:
            return  # whoever drops it last frees it whole
        time.sleep(0.01)
    # Each slice is one short C-level pass (no Python bytecode between items), then a sleep
    # much longer than the slice: whenever a request thread gives the GIL up (at every SQLite
    # or numpy call) and this thread is awake, it takes the GIL for a whole slice, so slices
    # must be tiny and rare. Slices of 20,000 with 2 ms sleeps (a Python loop too) slowed
    # requests more than the single 48 ms stall did (p99 160-177 ms, measured).
    keys = list(m)
    while keys:
        part = keys[-FREE_SLICE:]
        del keys[-FREE_SLICE:]
        deque(map(m.__delitem__, part), maxlen=0)
        del part
        time.sleep(FREE_PAUSE)


def abandon(ix, pf: Prepared) -> None:
    _unlink(os.path.join(ix.directory, pf.name))


def fold_once(ix, min_docs: int = 1) -> bool:
    """Prepare and commit one fold; True when a segment was added."""
    ix.take_writer()  # the writer flock (and recovery) before a file is written
    pf = prepare(ix, min_docs)
    return pf is not None and commit(ix, pf)


class Folder:
    """At most one background fold at a time, started after a commit leaves level 0 above
    ``tuning.fold_at``. A failed fold is counted and reported on stderr; the next commit
    starts another (and the backstop still bounds level 0)."""

    def __init__(self, ix) -> None:
        self.ix = ix
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.folds = 0
        self.abandoned = 0
        self.errors = 0
        self.last_error: str | None = None
        self.last_build_s: float | None = None

    def maybe_start(self, l0_docs: int) -> bool:
        if l0_docs <= self.ix.tuning.fold_at or self.ix.closed:
            return False
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            self._thread = threading.Thread(target=self._run, name="neardup-fold", daemon=True)
            self._thread.start()
            return True

    def _run(self) -> None:
        ix = self.ix
        _lower_priority()
        try:
            pf = prepare(ix, min_docs=ix.tuning.fold_at, paced=True)
            if pf is None:
                return
            self.last_build_s = pf.build_s
            if ix.closed:
                abandon(ix, pf)
                return
            if commit(ix, pf, gradual=True):
                self.folds += 1
            else:
                self.abandoned += 1
        except Exception as exc:  # reported, never raised into a request
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            print(
                f"neardup: background fold of level 0 failed ({self.last_error}); level 0 stays as it was",
                file=sys.stderr,
                flush=True,
            )

    def wait(self) -> None:
        t = self._thread
        if t is not None:
            t.join()


#: the nice value of a background fold's thread: on a 2-core machine the fold's merge took a core
#: for seconds beside the writer, the HTTP front and their clients (p50 5 -> 33 ms while it ran,
#: measured at 200 requests/s); niced, it runs on the time they leave. The GIL cannot make a
#: request wait on the niced thread for long: numpy's sorts and copies and the file writes
#: release it, and a thread waiting for the GIL is not runnable, so the fold then gets a core.
FOLD_NICE = 10


def _lower_priority() -> None:
    """Lower this thread's CPU priority (Linux: a thread's own nice value, by its thread id);
    never raise it (a process already niced past FOLD_NICE stays so). Elsewhere a thread id
    is not something setpriority takes (it could name another process): left alone."""
    if not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(FOLD_NICE, os.getpriority(os.PRIO_PROCESS, tid)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux, or not allowed: full speed
        pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
