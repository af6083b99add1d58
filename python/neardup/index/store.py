"""The on-disk layout of an index directory: SQLite schema, lock, text log, state cache.

An index directory holds::

    index.sqlite (+ -wal, -shm)   documents, clusters, keepers, verified pairs, the manifest
    lock                          the writer lock (flock); readers never take it
    seg-*.ndx                     immutable sorted band postings (see segment.py)
    retired-seg-*.ndx             a segment merged away, being deleted (fold.py, _retire)
    texts-*.dat                   append-only text log (each text's offset, length and CRC-32
                                  are in its ``documents`` row); bytes past ``text_files.committed``
                                  are from an interrupted add and are cut off by the next writer

The schema is documented in docs/index.md; this module creates and checks it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import sqlite3
import threading
import zlib
from dataclasses import dataclass

import numpy as np

from neardup import _core, _sets
from neardup.errors import FileGoneError, IndexCorruptError, IndexLockedError, InvalidInputError, OutputError
from neardup.index.segment import Postings, read_segment

#: 4: counts of documents, stories, clusters and text bytes in meta (counters.py);
#: 3: table pending_texts (the texts of small fsynced adds, until the text log is fsynced);
#: 2: level 0 is one row per document (table level0); 1 had one row per posting (see migrate.py)
FORMAT = 5
DB_NAME = "index.sqlite"

#: the names of an index's own files (the layout above): the database and SQLite's files beside
#: it (and an interrupted create's ``index.sqlite.init``), the writer lock, segments (and one
#: being written, ``.tmp-PID``; one merged away, ``retired-``), the text logs. Nothing else in
#: the directory is counted (disk_bytes) or ever deleted (a writer's recovery).
_OWN_NAMES = frozenset(DB_NAME + x for x in ("", "-wal", "-shm", "-journal", ".init", ".init-journal")) | {"lock"}
_OWN_PATTERN = re.compile(r"(?:retired-)?seg-[^/]*\.ndx(?:\.tmp-\d+)?|texts-\d+\.dat")


def is_index_file(name: str) -> bool:
    """Whether `name` (a file in an index directory) is one of the index's own files."""
    return name in _OWN_NAMES or _OWN_PATTERN.fullmatch(name) is not None


#: Texts a scrubbing remove has yet to overwrite in the text log (file, offset, bytes): written
#: in the remove's own transaction, deleted once they are zeroed and fsynced; a writer's open
#: zeroes what an interrupted remove left (docs/index.md, "Removal").
SCRUBS = """CREATE TABLE IF NOT EXISTS scrubs (file INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL);
"""

SCHEMA = (
    """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    doc INTEGER PRIMARY KEY,          -- internal number; postings refer to it; never reused
    id TEXT NOT NULL UNIQUE,          -- the document's id, as a string
    id_int INTEGER NOT NULL DEFAULT 0,-- 1 when the id was given as an integer
    published_at REAL,                -- seconds since the epoch (UTC); NULL when missing
    source TEXT,
    added_at REAL NOT NULL,           -- when it was added (seconds since the epoch)
    batch INTEGER NOT NULL,           -- the add that brought it (table batches)
    exact_key INTEGER NOT NULL,       -- 64-bit hash of its normalised tokens (0: no tokens)
    cluster INTEGER NOT NULL,         -- its story (table clusters)
    similarity REAL NOT NULL,         -- similarity to the cluster's keeper (1 for the keeper)
    match TEXT,                       -- 'exact' or 'near' to the keeper; NULL for the keeper
    closest TEXT,                     -- id of the closest earlier document when it was added
    closest_similarity REAL,          -- and that similarity (NULL: it matched nothing)
    title_len INTEGER,                -- the stored text starts with a title of this length + newline
    text_file INTEGER,                -- table text_files; NULL when texts are not stored
    text_offset INTEGER,
    text_length INTEGER,              -- bytes (UTF-8)
    text_crc INTEGER,                 -- CRC-32 of those bytes
    extra TEXT,                       -- the input record's other fields, JSON
    signature BLOB                    -- MinHash signature (uint32 LE) when verify = 'estimate'
);
CREATE INDEX documents_cluster ON documents(cluster);
CREATE TABLE clusters (
    cluster INTEGER PRIMARY KEY,
    keeper INTEGER,                   -- documents.doc of the keeper (merged: its documents' representative; NULL once emptied)
    size INTEGER NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    merged_into INTEGER               -- set when merged into another cluster
);
CREATE INDEX clusters_recent ON clusters(updated_at) WHERE size >= 2;
CREATE INDEX clusters_merged ON clusters(merged_into) WHERE merged_into IS NOT NULL;
CREATE TABLE pairs (                  -- verified near pairs (a < b, document numbers)
    a INTEGER NOT NULL, b INTEGER NOT NULL, similarity REAL NOT NULL,
    PRIMARY KEY (a, b)
) WITHOUT ROWID;
CREATE INDEX pairs_b ON pairs(b);
CREATE TABLE level0 (                 -- level 0: postings of recent small adds, not yet in a segment
    doc INTEGER PRIMARY KEY,          -- one row per document, appended in order (an add dirties one
    exact_key INTEGER NOT NULL,       -- page, not one random B-tree page per band); uint64 as signed
    bands BLOB NOT NULL               -- its band keys, uint64 little-endian, band 0 first
);
CREATE TABLE segments (               -- the manifest of segment files
    seg INTEGER PRIMARY KEY, file TEXT NOT NULL UNIQUE, docs INTEGER NOT NULL,
    bytes INTEGER NOT NULL, crc INTEGER NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE tombstones (doc INTEGER PRIMARY KEY);  -- removed documents that a segment still lists
CREATE TABLE text_files (file INTEGER PRIMARY KEY, name TEXT NOT NULL, committed INTEGER NOT NULL);
CREATE TABLE pending_texts (          -- texts of small adds made with sync "full" whose bytes in the
    doc INTEGER PRIMARY KEY,          -- text log may not have reached the disk yet (the log is fsynced
    file INTEGER NOT NULL,            -- later, off the request path): the add's one fsync, the WAL's,
    offset INTEGER NOT NULL,          -- makes them durable here; a writer's recovery rewrites them
    body BLOB NOT NULL                -- into the log (see docs/index.md, "One fsync per small add")
);
CREATE TABLE batches (
    batch INTEGER PRIMARY KEY, kind TEXT NOT NULL, started_at REAL NOT NULL, finished_at REAL NOT NULL,
    documents INTEGER NOT NULL, new INTEGER NOT NULL, duplicates INTEGER NOT NULL, note TEXT
);
"""
    + SCRUBS
)


#: indexes added to the schema after indexes of the same format were made: created (if missing)
#: when a writer opens the index. clusters_merged: a merge re-points the clusters merged into
#: the absorbed one; without it that UPDATE scanned every cluster row, once per merge (8 s of
#: a 200,000-article day's commit on a 1M index).
LATE_INDEXES = (
    "CREATE INDEX IF NOT EXISTS clusters_merged ON clusters(merged_into) WHERE merged_into IS NOT NULL",
    SCRUBS.strip(),
)

#: documents whose `closest` names a document: a remove clears the references to the removed
#: documents (their ids must not stay behind in the database, nor be shown as a closest match
#: that no longer exists). Partial: a new story's add (most adds) has no closest and writes
#: nothing to it. Made by a writer's open where missing, which also clears the references an
#: earlier remove left (CLOSEST_SWEEP).
CLOSEST_INDEX = "CREATE INDEX documents_closest ON documents(closest) WHERE closest IS NOT NULL"
CLOSEST_SWEEP = (
    "UPDATE documents SET closest = NULL, closest_similarity = NULL "
    "WHERE closest IS NOT NULL AND closest NOT IN (SELECT id FROM documents)"
)


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection):
    """One write transaction: BEGIN IMMEDIATE, COMMIT when the block ends, ROLLBACK (and the
    error raised again) when it or the COMMIT fails. A block that ends the transaction itself
    (a ROLLBACK when it finds there is nothing to do) is left ended."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        if conn.in_transaction:
            conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def u2i(x: int) -> int:
    """uint64 -> the signed 64-bit integer with the same bits (SQLite integers are signed)."""
    return x - (1 << 64) if x >= 1 << 63 else x


#: how long a connection waits for another's lock (SQLite's busy timeout), in ms
BUSY_TIMEOUT_MS = 30_000


def generation(conn: sqlite3.Connection) -> int:
    """The index's generation (advanced by every commit that changes its files)."""
    return int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def truncate_wal(conn: sqlite3.Connection, wait_ms: int = 100) -> bool:
    """Copy the whole WAL into the database file and truncate the WAL to nothing (a checkpoint
    TRUNCATE) on the writer's connection, waiting at most `wait_ms` for readers in a read
    transaction; True when it did. A reader that keeps its snapshot longer (a paused export)
    would otherwise hold the writer lock for SQLite's 30 s busy timeout, for nothing: the next
    writer's checkpoint does it."""
    conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return busy == 0
    except sqlite3.OperationalError:  # busy before it started
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


class Connection(sqlite3.Connection):
    """sqlite3's connection, weakly referable: an Index lists the connections of its reader
    threads weakly, so that a thread's connection closes when the thread ends (a thread per
    request left two descriptors each until the Index was closed)."""


def connect(path: str, readonly: bool = False) -> sqlite3.Connection:
    uri = f"file:{path}?mode={'ro' if readonly else 'rw'}"
    conn = sqlite3.connect(
        uri, uri=True, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000, factory=Connection
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            # Debian's SQLite (the one Python links here) is built with SECURE_DELETE on: every
            # page a DELETE frees is overwritten with zeros, so written to the WAL and copied
            # again by the checkpoint. A background fold's "DELETE FROM level0" of 25,000 rows
            # wrote 3.3 MB and its commit took 18 ms under the writer lock (0.8 ms and 33 KB
            # with FAST, measured on the 1.2M index). FAST still zeroes deleted cells in pages
            # that are written anyway; freed pages keep their old bytes until reused. The texts
            # themselves live in the text log, not here (docs/index.md, "Removal").
            conn.execute("PRAGMA secure_delete = FAST")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA cache_size = -65536")
    except sqlite3.DatabaseError as exc:
        conn.close()
        d = os.path.dirname(path) or "."
        if not os.access(d, os.W_OK) or (os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK)):
            # SQLite in WAL mode makes its -wal and -shm files beside the database, reads too
            raise OutputError(
                f"{d}: the index's directory and database must be writable, by readers too "
                f"(SQLite keeps its -wal and -shm files there): {exc}"
            ) from exc
        if _no_space(d):
            # SQLite cannot make its -wal and -shm files: "disk I/O error", not damage
            raise OSError(
                errno.ENOSPC,
                f"no space left on the device of {d}: SQLite cannot create its -wal and -shm files there ({exc})",
            ) from exc
        raise IndexCorruptError(f"{path}: not a readable SQLite database ({exc})") from exc
    return conn


def _no_space(d: str) -> bool:
    try:
        st = os.statvfs(d)
    except OSError:
        return False
    return st.f_bavail == 0 or (st.f_favail == 0 and st.f_files > 0)


class WriterLock:
    """flock on the index's directory and on DIR/lock, held while this process may write.

    The directory's lock is the one that counts: DIR/lock holds the writer's pid and looks like
    a stale pid file, and a user who deleted it let a second writer lock a new file of that name
    while the first went on writing (the second's recovery cut the text log under the first,
    both wrote texts at the same offsets: texts destroyed). A directory cannot be deleted while
    it holds the index. DIR/lock is still locked and written: it names the holder, and a
    neardup from before 2026-12-01 locks only it."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, "lock")
        self.fd: int | None = None
        self.dfd: int | None = None
        self.pid: int | None = None  # the process that holds it

    def acquire(self) -> None:
        if self.fd is not None:
            return
        dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(dfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(dfd)
            self._locked(self._holder())
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except BaseException:
            os.close(dfd)
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            os.close(dfd)
            self._locked(holder)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self.fd, self.dfd = fd, dfd
        self.pid = os.getpid()

    def _holder(self, fd: int | None = None) -> str:
        """The pid DIR/lock names ("" when it cannot be read)."""
        try:
            if fd is None:
                with open(self.path, "rb") as f:
                    return f.read(64).decode(errors="replace").strip()
            return os.pread(fd, 64, 0).decode(errors="replace").strip()
        except OSError:
            return ""

    def _locked(self, holder: str) -> None:
        who = f" (held by process {holder})" if holder else ""
        raise IndexLockedError(
            f"index is locked: another writer is using {self.directory}{who}; "
            "one writer at a time (readers are not blocked)"
        ) from None

    def release(self) -> None:
        # a process forked from the holder shares its locks (a flock belongs to the open file,
        # which a fork shares): it closes its descriptors, which leaves the holder's lock held,
        # and must not unlock it (a child's close() let a second writer in beside its parent)
        mine = getattr(self, "pid", None) == os.getpid()
        for attr in ("fd", "dfd"):
            fd = getattr(self, attr)
            if fd is None:
                continue
            try:
                if mine:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
                setattr(self, attr, None)


@dataclass
class State:
    """What readers need in memory, for one generation of the index: the postings of every
    segment (loaded lazily, checked) and of level 0, and the tombstones."""

    generation: int
    bands: int
    segments: list[tuple[str, int, int]]  # (file, bytes, crc)
    l0: L0
    tombstones: np.ndarray  # sorted int64


class SegmentCache:
    """Loaded segment files shared by every state (a file never changes once written)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.lock = threading.Lock()
        self.files: dict[str, Postings] = {}
        #: segments merged away by a background fold (names are never reused): a reader of an
        #: older snapshot may still load one, but it is not cached again (it would stay, unused)
        self.retired: set[str] = set()

    def get(self, name: str, size: int, crc: int) -> Postings:
        p = self.files.get(name)
        if p is None:
            with self.lock:
                p = self.files.get(name)
                if p is None:
                    p = read_segment(os.path.join(self.directory, name), size, crc)
                    if name not in self.retired:
                        self.files[name] = p
        return p

    def put(self, name: str, p: Postings) -> None:
        """A segment this process just wrote and listed: its postings are already in memory."""
        with self.lock:
            self.files[name] = p

    def forget(self, names: list[str]) -> None:
        """Segments no longer listed (merged into another): dropped, and never cached again."""
        with self.lock:
            for k in names:
                self.files.pop(k, None)
                self.retired.add(k)

    def forget_except(self, keep: set[str]) -> None:
        with self.lock:
            for k in list(self.files):
                if k not in keep:
                    del self.files[k]


#: an empty answer, shared (callers never write into the arrays a look-up returns)
_NONE = np.zeros(0, np.int64)
_NONE.flags.writeable = False


class L0:
    """Level 0 in memory: postings of recent small adds, as a dict (band, key) -> documents.
    Band -1 holds exact keys. Updated in place by this process's own commits, reloaded from
    SQLite when another process has written."""

    def __init__(self) -> None:
        # a key held by one document maps to that int, only a shared key to a list: ints and
        # (int, int) tuples are not tracked by the cyclic GC, so 50,000 documents x 14 keys do
        # not become 700,000 lists that every full collection walks (a pause in the service)
        self.map: dict[tuple[int, int], int | list[int]] = {}
        self.docs: set[int] = set()

    @staticmethod
    def load(conn: sqlite3.Connection, after: int = 0, into: L0 | None = None) -> L0:
        """Level 0's documents numbered above `after` (all by default), added to `into` if given
        (a background fold catching up with the adds made while it built its segment)."""
        l0 = into if into is not None else L0()
        l0.put_rows(conn.execute("SELECT doc, exact_key, bands FROM level0 WHERE doc > ?", (after,)))
        return l0

    def put_rows(self, rows) -> None:
        """Rows of table level0: (doc, exact key (signed), band keys blob)."""
        for doc, exact, bands in rows:
            self.put(-1, exact & 0xFFFFFFFFFFFFFFFF, doc)
            for j, key in enumerate(np.frombuffer(bands, "<u8").tolist()):
                self.put(j, key, doc)

    def put(self, band: int, key: int, doc: int) -> None:
        k = (band, key)
        cur = self.map.get(k)
        if cur is None:
            self.map[k] = doc
        elif isinstance(cur, int):
            if cur != doc:
                self.map[k] = [cur, doc]
        elif doc not in cur:
            cur.append(doc)
        self.docs.add(doc)

    def lookup(self, band: int, q: np.ndarray, tomb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.map or len(q) == 0:
            return _NONE, _NONE
        return self._found([(band, q.tolist())], tomb)

    def lookup_bands(self, keys: np.ndarray, tomb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`lookup` for every band at once: row j of `keys` (bands x queries) in band j."""
        if not self.map or keys.size == 0:
            return _NONE, _NONE
        return self._found(enumerate(keys.tolist()), tomb)

    def _found(self, rows, tomb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query index, document) for each hit of (band, keys) in `rows`, tombstones dropped."""
        get = self.map.get
        qi, ds = [], []
        for band, keys in rows:
            for i, k in enumerate(keys):
                hit = get((band, k))
                if hit is None:
                    continue
                if isinstance(hit, int):
                    qi.append(i)
                    ds.append(hit)
                else:
                    qi.extend([i] * len(hit))
                    ds.extend(hit)
        if not ds:  # no hit (the usual answer for a single article's key)
            return _NONE, _NONE
        return _live(np.array(qi, np.int64), np.array(ds, np.int64), tomb)

    def postings(self, bands: int) -> Postings:
        ks: dict[int, list[int]] = {j: [] for j in range(-1, bands)}
        ds: dict[int, list[int]] = {j: [] for j in range(-1, bands)}
        for (b, k), docs in self.map.items():  # one pass over the map
            if isinstance(docs, int):
                ks[b].append(k)
                ds[b].append(docs)
            else:
                ks[b].extend([k] * len(docs))
                ds[b].extend(docs)

        def part(j: int):
            return np.array(ks[j], np.uint64), np.array(ds[j], np.uint32)

        return Postings.build_sorted(part(-1), [part(j) for j in range(bands)], len(self.docs))


def lookup(
    arrays: list[tuple[np.ndarray, np.ndarray]], q: np.ndarray, tomb: np.ndarray, few=None
) -> tuple[np.ndarray, np.ndarray]:
    """All (query index, document) with keys[query] == posting key, over sorted posting arrays.
    `few`: the same arrays held by the Rust core (``_core.PostingArrays``, the index keeps one
    per band and set of segments), for the small path; made here when not given."""
    if len(q) == 0 or not any(len(k) for k, _ in arrays):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    q = np.ascontiguousarray(q, dtype=np.uint64)
    if len(q) <= SMALL_QUERY:
        # a service's single article: one search per key and array (interpolation on the hash
        # keys), where the merge below sorts the queries and walks every array on threads
        if few is None:
            few = _core.PostingArrays([k for k, _ in arrays], [d for _, d in arrays])
        qi, d = few.few(q)
    else:
        # the Rust merge: queries sorted once, each segment walked forward with galloping skips
        # (numpy.searchsorted per segment cost ~2 s of a 200,000-article day's add on 1M)
        live = [(k, d) for k, d in arrays if len(k)]
        qi, d = _core.postings_lookup([k for k, _ in live], [d for _, d in live], q)
    return _live(qi, d, tomb)


def _live(qi: np.ndarray, d: np.ndarray, tomb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (query index, document) pairs whose document is not tombstoned."""
    if len(tomb) and len(d):
        m = ~_sets.isin(d, tomb)
        qi, d = qi[m], d[m]
    return qi, d


#: queries of at most this many keys (the service's single articles) take the small path
SMALL_QUERY = 4


def lookup_bands(handles: list, keys: np.ndarray, tomb: np.ndarray, l0: L0) -> tuple[np.ndarray, np.ndarray]:
    """Every (query index, document) whose key in some band matches, over the segments (`handles`:
    one ``_core.PostingArrays`` per band) and level 0, for a few queries (`keys`: bands x queries,
    at most SMALL_QUERY columns): the service's single article, in one call into the Rust core
    instead of one per band and one more for level 0 (~0.2 ms of an add's ~1.8 ms). A pair
    found in several bands comes once per band, as from `lookup` band by band."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    _, qi, d = _core.lookup_bands(handles, keys)
    qi, d = _live(qi, d, tomb)
    lq, ld = l0.lookup_bands(keys, tomb)
    if len(ld):
        qi, d = np.concatenate([qi, lq]), np.concatenate([d, ld])
    return qi, d


#: reads of at most this many texts at once go through a descriptor without readahead (TextLog)
FEW_TEXTS = 64


class TextLog:
    """Append-only text files; every read checks the CRC-32 recorded in SQLite.

    Two descriptors per file. A few texts (a service's request verifying its candidates) are
    read through one advised ``POSIX_FADV_RANDOM``: the kernel's readahead (8 MB here,
    ``read_ahead_kb``) grows on reads that move forward through a file, and near copies of
    recent articles arriving in order read forward through the log's tail, so a 2 KB read set
    off 8 MB reads that the next commits' WAL fsyncs queued behind (traced: 8 MB read every
    ~10 s, iowait 13-15%, at 200 POSTs/s on an index whose log was not in the page cache).
    Advised, the same load read a steady 0.2-0.7 MB/s, 4 KB at a time, with no burst (vmstat);
    its p99, in two pairs of 30 s windows, was within the noise. Many texts at once (a day's
    add, export, compact) keep readahead: theirs are bulk reads."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.fds: dict[tuple[str, bool], int] = {}  # (file, few) -> descriptor
        self.retired: list[int] = []
        self.lock = threading.Lock()

    def _fd(self, name: str, few: bool = True) -> int:
        fd = self.fds.get((name, few))
        if fd is None:
            with self.lock:
                fd = self.fds.get((name, few))
                if fd is None:
                    try:
                        fd = os.open(os.path.join(self.directory, name), os.O_RDONLY)
                    except FileNotFoundError:
                        raise FileGoneError(f"text file {name} is missing", name) from None
                    if few and hasattr(os, "posix_fadvise"):  # (not on macOS or Windows)
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                    self.fds[(name, few)] = fd
        return fd

    def read(self, name: str, offset: int, length: int, crc: int, what: str) -> str:
        data = os.pread(self._fd(name), length, offset)
        if len(data) != length:
            raise IndexCorruptError(f"text of {what} is truncated in {name}")
        if zlib.crc32(data) != (crc & 0xFFFFFFFF):
            raise IndexCorruptError(f"text of {what} fails its checksum in {name}")
        return data.decode("utf-8")

    def read_many(self, name: str, offsets: list[int], lengths: list[int], crcs: list[int], what) -> list[str]:
        """Many texts of one file in one call (Rust: parallel positioned reads, CRC and UTF-8
        checks, GIL released). `what(i)` names the i-th text's document for an error."""
        if not offsets:
            return []
        fd = self._fd(name, few=len(offsets) <= FEW_TEXTS)
        try:
            return _core.read_texts(
                fd,
                np.asarray(offsets, np.uint64),
                np.asarray(lengths, np.uint32),
                np.asarray([c & 0xFFFFFFFF for c in crcs], np.uint32),
            )
        except InvalidInputError as exc:
            kind = str(exc)
            why = {"truncated": "is truncated", "checksum": "fails its checksum", "utf-8": "is not valid UTF-8"}.get(
                kind, f"cannot be read ({kind})"
            )
            raise IndexCorruptError(f"text of {what(exc.index)} {why} in {name}") from None

    def retire(self, names: list[str]) -> None:
        """Files a compact has replaced: forget them, but keep their descriptors open until
        close(), so that another thread still reading an old snapshot never preads a closed
        (or reused) descriptor."""
        with self.lock:
            for n in names:
                for few in (True, False):
                    fd = self.fds.pop((n, few), None)
                    if fd is not None:
                        self.retired.append(fd)

    def close(self) -> None:
        with self.lock:
            for fd in list(self.fds.values()) + self.retired:
                os.close(fd)
            self.fds.clear()
            self.retired.clear()
