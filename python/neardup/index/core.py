"""The persistent, incremental index: ``neardup.Index``.

Every add is the dedup pipeline's stages run as "query before insert": exact pass (against the
archive and the earlier part of the batch), MinHash signatures, LSH band postings looked up in
the archive plus LSH pairs inside the batch, verification of every candidate (exact Jaccard on
the stored texts, or the signature estimate), union-find over the new edges and the clusters
they touch (join, merge or start), and the keeper rule re-decided for each touched cluster.
Nothing is written until all of that has succeeded; then the text log is appended and fsynced,
a segment file is written (for large adds), and a single SQLite transaction makes the whole
batch visible. A crash before the commit leaves the index as it was.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from neardup._ints import count
from neardup.errors import (
    DocumentNotFoundError,
    DuplicateIdError,
    FileGoneError,
    ForkedIndexError,
    IndexClosedError,
    IndexConfigError,
    IndexCorruptError,
    IndexExistsError,
    IndexLockedError,
    IndexNotFoundError,
    InvalidParameterError,
    TextRemovedError,
)
from neardup.index import counters, fold, store
from neardup.index import pending as pend
from neardup.index.append import LogFile, PendingTexts
from neardup.index.checking import Checking, check_numbering, check_text_ends
from neardup.index.committing import Committing
from neardup.index.config import IndexConfig
from neardup.index.errors import PartsShareAStory, few
from neardup.index.intake import Signed, Skips, read_and_sign, read_checked, without_taken_ids
from neardup.index.jobs import Job
from neardup.index.migrate import migrate_1_to_2, migrate_2_to_3, migrate_3_to_4, migrate_4_to_5
from neardup.index.planning import Planning, parts_share_a_story
from neardup.index.reading import Reading
from neardup.index.removal import Removal
from neardup.index.segment import Postings
from neardup.index.stages import Stages
from neardup.index.store import DB_NAME, FORMAT, LATE_INDEXES, SCHEMA, SegmentCache, State, TextLog, WriterLock
from neardup.index.tuning import Steps, Tuning
from neardup.index.verdicts import Verdict, Verdicts
from neardup.io.records import Checked, Fields
from neardup.settings import DEFAULT_MAX_CHARS, source_names
from neardup.stages.report import package_version
from neardup.stages.signer import Signer, exact_keys

__all__ = ["Index", "IndexConfig", "Verdict"]

PROBE_TEXT = "the monsoon session of parliament begins on monday with a debate on the data bill"


class Index(Planning, Committing, Removal, Reading, Checking):
    """A persistent near-duplicate index in a directory. Open with :meth:`Index.open` (or
    create with :meth:`Index.create`); close it (or use ``with``)."""

    # ------------------------------------------------------------------ open / create
    def __init__(
        self,
        directory: str,
        config: IndexConfig,
        threads: int | None,
        sync: str = "full",
        tuning: Tuning | None = None,
        background_fold: bool = False,
        steps: Steps | None = None,
    ) -> None:
        if sync not in ("full", "normal", "group"):
            raise InvalidParameterError(f"sync must be 'full', 'normal' or 'group', got {sync!r}")
        if not isinstance(background_fold, bool):
            raise InvalidParameterError(f"background_fold must be True or False, got {background_fold!r}")
        self.sync = sync
        self.tuning = tuning or Tuning()
        if steps is not None and not isinstance(steps, Steps):
            raise InvalidParameterError(f"steps must be a neardup.index.Steps, got {type(steps).__name__}")
        #: how much it reads, plans and writes at a time (not stored; speed and memory only)
        self.steps = steps or Steps()
        #: fold level 0 in a thread of its own (fold.py) instead of inside the add that fills it
        self.background_fold = background_fold
        self._folder = fold.Folder(self)
        self.directory = directory
        self.config = config
        self.threads = threads
        self.opts = config.options(threads)
        self.fields = Fields()
        self.signer = Signer(self.opts)
        self._lock = WriterLock(directory)
        self._wlock = threading.RLock()
        self._wal_scrub_due = False  # a scrubbing remove's WAL truncation still to do (removal.scrub_wal)
        self._local = threading.local()
        self._wconn: sqlite3.Connection | None = None
        self._segcache = SegmentCache(directory)
        self._texts = TextLog(directory)
        self._logf: LogFile | None = None  # the writer's descriptor of the log it appends to
        self._state: State | None = None
        self._state_lock = threading.Lock()
        self._closed = False
        #: every connection of this Index, weakly: a reader thread's closes when the thread ends
        self._all_conns: weakref.WeakSet = weakref.WeakSet()
        self._pid = os.getpid()  # the process that opened it (a fork's child may not use it)
        self._pending = pend.PendingLog(has_rows=False)  # set up by the writer's open (_recover)
        self._few: tuple | None = None  # (segment names, PostingArrays per band): _few_handles
        #: within an add (_add_locked): the meta values it reads, and the text_files rows
        self._meta_memo: dict[str, str] | None = None
        self._files_memo: list[tuple[int, str, int]] | None = None
        #: wall seconds per stage of the last add or query (for benchmarks)
        self.last_stages: dict[str, float] = {}

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike,
        *,
        threads: int | None = None,
        segment_min: int | None = None,
        l0_max: int | None = None,
        l0_fold_at: int | None = None,
        merge_max: int | None = None,
        steps: Steps | None = None,
        **settings,
    ) -> Index:
        """Create an index in `directory` (made if missing; it must not hold an index).
        `segment_min` / `l0_max` / `l0_fold_at` / `merge_max`: where adds put their postings
        (:class:`Tuning`), stored. `steps`: as :meth:`open`'s."""
        directory = os.fspath(directory)
        _check_threads(threads)
        settings = {k: _plain(v) for k, v in settings.items()}  # (NumPy scalars: as Python's)
        tuning = Tuning().with_overrides(
            segment_min=segment_min, l0_max=l0_max, l0_fold_at=l0_fold_at, merge_max=merge_max
        )
        cfg = IndexConfig.from_keywords(**settings)
        from neardup.errors import OutputError

        # a file where the directory goes, or on its path: said so (the OS's "[Errno 17] File
        # exists" read as "an index exists"), an OutputError as the CLI's other unwritable
        # places (exit 5)
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise OutputError(
                f"{directory}: a file is there, not a directory (an index is a directory: give the "
                "path of a new or an existing directory)"
            )
        try:
            os.makedirs(directory, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:  # (a dangling link; a file on the path)
            raise OutputError(
                f"{directory}: cannot create the directory: {exc.strerror} (a file is in the way)"
            ) from exc
        db = os.path.join(directory, DB_NAME)
        if os.path.exists(db):  # (said at once, also when a writer of that index holds the lock)
            raise IndexExistsError(f"{directory} already holds an index")
        # The checks and the making are one step under the writer lock: two creates at once
        # both passed the checks before either took the lock, and the one that took it second
        # made its database over the first's (both "succeeded"; the first's index replaced).
        # A create that finds the lock held waits a little for it (the holder is another
        # create, or an interrupted one's process), then finds the index made.
        lock = _create_lock(directory)
        try:
            if os.path.exists(db):
                raise IndexExistsError(f"{directory} already holds an index")
            # Other files are left as they are, except the remains of an index whose database is
            # gone: a new one would take them up (SQLite replays a left-over WAL into the new
            # database: the old documents came back; the old text log was appended to). An
            # interrupted create leaves only the lock and an empty text log.
            remains = sorted(
                f
                for f in os.listdir(directory)
                if (
                    f == DB_NAME + "-wal" or store.is_index_file(f) and f.startswith(("texts-", "seg-", "retired-seg-"))
                )
                and os.path.getsize(os.path.join(directory, f)) > 0
            )
            if remains:
                raise IndexExistsError(
                    f"{directory} holds the remains of an index whose database ({DB_NAME}) is "
                    f"missing: {few(remains, 3)}; a new index there would take them up: move "
                    "them away or choose another directory"
                )
        except BaseException:
            lock.release()
            raise
        try:
            tmp = db + ".init"
            for f in (tmp, tmp + "-journal"):  # an interrupted create's (its hot journal would be replayed)
                if os.path.exists(f):
                    os.unlink(f)
            conn = sqlite3.connect(tmp, isolation_level=None)
            conn.executescript(SCHEMA)
            now = time.time()
            meta = {
                "format": str(FORMAT),
                "config": json.dumps(cfg.as_dict()),
                "created_at": repr(now),
                "neardup_version": package_version(),
                "probe": _probe(cfg),
                "generation": "0",
                "next_doc": "1",
                "next_cluster": "1",
                "next_batch": "1",
                "tuning": tuning.to_json(),
                **counters.ZERO,
            }
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            conn.execute("INSERT INTO text_files VALUES (1, 'texts-000001.dat', 0)")
            conn.execute("COMMIT")
            conn.close()
            open(os.path.join(directory, "texts-000001.dat"), "ab").close()
            os.replace(tmp, db)
        except BaseException:
            if os.path.exists(tmp):  # (nothing half made is left behind)
                os.unlink(tmp)
            raise
        finally:
            lock.release()
        return cls.open(directory, threads=threads, steps=steps)

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike,
        *,
        threads: int | None = None,
        sync: str = "full",
        segment_min: int | None = None,
        l0_max: int | None = None,
        l0_fold_at: int | None = None,
        merge_max: int | None = None,
        background_fold: bool = False,
        steps: Steps | None = None,
        **expected,
    ) -> Index:
        """Open the index in `directory`. Any setting passed (k=, num_perm=, scheme=, ...) must
        equal the stored one, else :class:`IndexConfigError`. Reading needs no lock; the first
        write takes the writer lock (:class:`IndexLockedError` if another process holds it).

        ``sync="full"`` (default): every add is fsynced (text log, segment, SQLite WAL) before it
        returns: it survives a power cut. ``sync="normal"``: the text log and the WAL are not
        fsynced at each commit (SQLite ``synchronous=NORMAL``): an add is still all or nothing
        and survives the process being killed, but the last adds may be lost on a power cut.
        ``sync="group"`` (the service's ``--sync full``): written as with "full", but a commit
        does not wait for the WAL's fsync; :meth:`make_durable` does it, for every commit
        before it at once, so that the next add can be planned and committed meanwhile.

        ``segment_min`` / ``l0_max`` / ``l0_fold_at`` / ``merge_max`` override the stored :class:`Tuning` for this
        process. ``background_fold=True`` (the service): level 0 is folded into a segment by a
        thread of its own once it holds more than ``l0_fold_at`` documents, off the path of adds
        (fold.py); an add then folds inline only past ``fold.BACKSTOP x l0_max``. ``steps``
        (:class:`Steps`): how much it reads, plans and writes at a time, for this process."""
        directory = os.fspath(directory)
        _check_threads(threads)
        expected = {k: _plain(v) for k, v in expected.items()}
        db = os.path.join(directory, DB_NAME)
        if not os.path.exists(db):
            if os.path.exists(directory) and not os.path.isdir(directory):
                raise IndexNotFoundError(f"{directory}: a file, not an index (an index is a directory)")
            raise IndexNotFoundError(f"{directory}: no index here (create one with: neardup index init {directory})")
        conn = store.connect(db, readonly=False)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise IndexCorruptError(f"{db}: cannot read the index database ({exc})") from exc
        try:
            if meta.get("format") == "1":
                migrate_1_to_2(directory, conn, cfg_bands=json.loads(meta["config"])["bands"])
                meta["format"] = "2"
            if meta.get("format") == "2":
                migrate_2_to_3(directory, conn)
                meta["format"] = "3"
            if meta.get("format") == "3":
                migrate_3_to_4(directory, conn)
                meta["format"] = "4"
            if meta.get("format") == "4":
                migrate_4_to_5(directory, conn)
                meta["format"] = "5"
        except BaseException:
            conn.close()
            raise
        if meta.get("format") != str(FORMAT):
            conn.close()
            raise IndexConfigError(f"{directory}: index format {meta.get('format')!r}, this neardup reads {FORMAT}")
        try:
            cfg = IndexConfig.from_dict(json.loads(meta["config"]))
        except (KeyError, ValueError, TypeError) as exc:
            conn.close()
            raise IndexCorruptError(f"{directory}: unreadable configuration ({exc})") from exc
        stored = cfg.as_dict()
        diffs = []
        for k, v in expected.items():
            if v is None:
                continue
            if k not in stored:
                conn.close()
                raise InvalidParameterError(f"unknown index setting {k!r}")
            want = list(source_names(v)) if k == "prefer_source" else v
            if want != stored[k]:
                diffs.append(f"{k}: index has {stored[k]!r}, asked for {want!r}")
        if diffs:
            conn.close()
            raise IndexConfigError(
                f"{directory}: settings differ from the index's, refusing to mix signatures: " + "; ".join(diffs)
            )
        probe = _probe(cfg)
        if probe != meta.get("probe"):
            conn.close()
            raise IndexConfigError(
                f"{directory}: this build of neardup computes different signatures or exact keys for the "
                f"index's settings ({cfg.settings.scheme}, seed {cfg.settings.seed}, k {cfg.settings.k}, unit {cfg.settings.unit}) than the build "
                f"that made it ({meta.get('neardup_version')}); rebuild the index"
            )
        try:
            tuning = Tuning.from_json(meta.get("tuning")).with_overrides(
                segment_min=segment_min, l0_max=l0_max, l0_fold_at=l0_fold_at, merge_max=merge_max
            )
        except (ValueError, TypeError) as exc:
            conn.close()
            if isinstance(exc, InvalidParameterError):
                raise
            raise IndexCorruptError(f"{directory}: unreadable tuning settings ({exc})") from exc
        try:
            idx = cls(directory, cfg, threads, sync, tuning, background_fold, steps)
        except BaseException:
            conn.close()
            raise
        idx._local.conn = conn
        idx._all_conns.add(conn)
        try:
            idx._check_files(conn)
        except BaseException:
            idx.close()
            raise
        return idx

    def _check_files(self, conn: sqlite3.Connection) -> None:
        """Cheap checks on open: every listed file is there with at least its recorded size."""
        self._fresh_read(conn, lambda: self._check_files_once(conn))

    def _check_files_once(self, conn: sqlite3.Connection) -> None:
        for name, size in conn.execute("SELECT file, bytes FROM segments").fetchall():
            p = os.path.join(self.directory, name)
            if not os.path.exists(p):
                raise FileGoneError(f"segment {name} is listed in the manifest but missing", name)
            if os.path.getsize(p) != size:
                raise IndexCorruptError(
                    f"segment {name} is truncated or altered: {os.path.getsize(p)} bytes, the manifest says {size}"
                )
        for fid, name, committed in conn.execute("SELECT file, name, committed FROM text_files").fetchall():
            p = os.path.join(self.directory, name)
            if not os.path.exists(p):
                raise FileGoneError(f"text file {name} is missing", name)
            if os.path.getsize(p) < committed and not pend.covers(conn, fid, os.path.getsize(p), committed):
                raise IndexCorruptError(
                    f"text file {name} is truncated: {os.path.getsize(p)} bytes, {committed} committed"
                )

    def close(self) -> None:
        """Close the index. An add, remove or compact under way in another thread finishes first
        (a close during an add released the writer lock and the text log under it)."""
        if self._closed:
            return
        self._closed = True
        if os.getpid() != self._pid:
            # a process forked from the one that opened it: the connections and files are the
            # parent's too (SQLite: never carry a connection across a fork); they are left
            # as they are, and the writer lock, shared with the parent, stays the parent's
            _FORKED_LEFT.append(list(self._all_conns))
            self._lock.release()
            return
        self._folder.wait()  # a fold still building sees _closed and deletes its file
        with self._wlock:
            if self._wconn is not None and self._pending.has_rows:
                try:  # a clean close leaves no texts waiting in SQLite (recovery would handle them)
                    if self._pending.sync():
                        self._pending.prune(self._wconn)
                except Exception:  # pragma: no cover - best effort: the next writer's open recovers
                    pass
            for c in list(self._all_conns):
                try:
                    c.close()
                except Exception:  # pragma: no cover
                    pass
            self._texts.close()
            self._drop_log_file()
            self._lock.release()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ connections, state
    def _in_its_process(self) -> None:
        if os.getpid() != self._pid:
            raise ForkedIndexError(
                f"{self.directory}: this Index was opened by process {self._pid}, and this process was forked from it: "
                "open the index again here (Index.open); its connections, files and writer lock are the parent's"
            )

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise IndexClosedError(f"{self.directory}: the index was closed")
        self._in_its_process()
        c = getattr(self._local, "conn", None)
        if c is None:
            c = store.connect(os.path.join(self.directory, DB_NAME))
            self._local.conn = c
            self._all_conns.add(c)
        return c

    def _writer(self) -> sqlite3.Connection:
        """Take the writer lock (once) and recover from an interrupted write."""
        if self._closed:
            raise IndexClosedError(f"{self.directory}: the index was closed")
        self._in_its_process()
        if self._wconn is None:
            self._lock.acquire()
            try:
                conn = store.connect(os.path.join(self.directory, DB_NAME))
                self._all_conns.add(conn)
                if self.sync in ("normal", "group"):
                    conn.execute("PRAGMA synchronous = NORMAL")
                for ddl in LATE_INDEXES:
                    conn.execute(ddl)
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'documents_closest'").fetchone() is None:
                    with store.immediate(conn):
                        conn.execute(store.CLOSEST_INDEX)
                        conn.execute(store.CLOSEST_SWEEP)
                self._recover(conn)
            except BaseException:
                self._lock.release()  # (a damaged index: another process may read it, or mend it)
                raise
            self._pending = pend.PendingLog(has_rows=False)
            self._wconn = conn
            self._scrub(conn)  # removed texts an interrupted remove had yet to overwrite
        return self._wconn

    def _recover(self, conn: sqlite3.Connection) -> None:
        """Cut text logs back to their committed length; delete files the manifest does not list.
        First the numbers and lengths this trusts are checked (checking.py): a damaged one is
        reported, not acted on."""
        check_numbering(conn, self.directory)
        for f, name, committed in conn.execute("SELECT file, name, committed FROM text_files").fetchall():
            p = os.path.join(self.directory, name)
            if os.path.exists(p) and os.path.getsize(p) > committed:
                check_text_ends(conn, self.directory, f)
                with open(p, "r+b") as f:
                    f.truncate(committed)
                    os.fsync(f.fileno())
        pend.recover(conn, self.directory)  # texts a power cut took from the log, back from SQLite
        listed = {r[0] for r in conn.execute("SELECT file FROM segments")}
        texts = {r[0] for r in conn.execute("SELECT name FROM text_files")}
        for name in os.listdir(self.directory):
            # (and segments merged away whose gradual deletion a crash cut short: fold.RETIRED)
            # (the index's own names only: a user's texts-notes.txt or retired-plans.doc in the
            # directory was deleted by every writer's open until 2026-12-01)
            if store.is_index_file(name) and (
                (name.startswith("seg-") and name not in listed)
                or (name.startswith("texts-") and name not in texts)
                or name.startswith(fold.RETIRED)
            ):
                try:
                    os.unlink(os.path.join(self.directory, name))
                except OSError:  # pragma: no cover
                    pass

    def _fresh_read(self, conn: sqlite3.Connection, fn, attempts: int = 5):
        """Run the read `fn`; if a file its snapshot listed has gone because a concurrent
        ``compact`` replaced it (and the current manifest no longer lists it), run it again on
        the newer manifest. A file still listed but missing is damage, reported as such.
        (A compact removes the files it replaced right after its commit; a reader between
        reading the manifest and opening a file is the only one that can miss them, and a
        reader that already opened a file keeps reading it.)"""
        for attempt in range(attempts):
            try:
                return fn()
            except TextRemovedError:
                if conn.in_transaction:
                    conn.execute("COMMIT")
                if attempt == attempts - 1:
                    raise
            except FileGoneError as exc:
                if conn.in_transaction:
                    conn.execute("COMMIT")
                listed = conn.execute(
                    "SELECT 1 FROM segments WHERE file = ? UNION ALL SELECT 1 FROM text_files WHERE name = ?",
                    (exc.file, exc.file),
                ).fetchone()
                if listed is not None or attempt == attempts - 1:
                    raise
                with self._state_lock:
                    # only a state that lists the gone file is dropped: a background fold that
                    # merged segments has already put the next state in place, and reloading
                    # level 0 from SQLite would cost every request waiting on the lock
                    st = self._state
                    if st is not None and any(s[0] == exc.file for s in st.segments):
                        self._state = None

    def _meta(self, conn, key: str) -> str:
        memo = self._meta_memo
        if memo is not None and conn is self._wconn and key in memo:
            return memo[key]
        return conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]

    def _state_for(self, conn: sqlite3.Connection) -> State:
        gen = int(self._meta(conn, "generation"))
        st = self._state
        if st is not None and st.generation == gen:
            return st
        with self._state_lock:
            st = self._state
            if st is not None and st.generation == gen:
                return st
            segs = [tuple(r) for r in conn.execute("SELECT file, bytes, crc FROM segments ORDER BY seg")]
            tomb = np.array([r[0] for r in conn.execute("SELECT doc FROM tombstones ORDER BY doc")], dtype=np.int64)
            older = st is not None and st.generation > gen
            st = State(gen, self.config.bands, segs, store.L0.load(conn), tomb)
            if older:
                # a reader still in a snapshot from before the last commit: its state serves
                # this read only, and must not evict the newer segments (a merged one, just
                # written) from the cache nor stand in for the newer state
                return st
            self._segcache.forget_except({s[0] for s in segs})
            self._state = st
            return st

    def _arrays(self, st: State) -> list[Postings]:
        return [self._segcache.get(n, s, c) for n, s, c in st.segments]

    # ------------------------------------------------------------------ reading records
    def _checked(
        self, inputs: Any, fields: Fields | None, max_chars: int, skips: Skips | None = None
    ) -> tuple[list[Checked], list[tuple]]:
        """Check every record of `inputs` (paths, records, or a single text) like ``dedup``."""
        _check_max_chars(max_chars)
        return read_checked(inputs, _fields_of(fields) or self.fields, max_chars, skips)

    def _present(self, conn: sqlite3.Connection, keys: list[str]) -> list[str]:
        """Which of these ids the index holds. Probed in sorted order: neighbouring probes then
        share B-tree pages (0.4 s instead of 0.6-1.2 s for 200,000 ids on a 1M index)."""
        out: list[str] = []
        ks = sorted(keys)
        for s in range(0, len(ks), 30000):
            chunk = ks[s : s + 30000]
            out += [
                r[0]
                for r in conn.execute(f"SELECT id FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            ]
        return out

    @staticmethod
    def _raise_duplicate_ids(twice: list[str], present: list[str]) -> None:
        """Both kinds said at once (a batch with both named only the first, so that fixing it
        met the second)."""
        parts = []
        if twice:
            parts.append(f"{len(twice)} id(s) appear twice in the batch: {few(twice)}")
        if present:
            parts.append(f"{len(present)} id(s) already in the index: {few(present)}")
        if parts:
            seen = set(twice)
            raise DuplicateIdError("; ".join(parts), list(twice) + [i for i in present if i not in seen])

    # ------------------------------------------------------------------ verification helpers
    def _texts_of(self, conn, doc_list: list[int], meta: dict[int, dict] | None = None) -> dict[int, str]:
        need = [d for d in doc_list if meta is None or d not in meta]
        rows = dict(meta or {})
        if need:
            rows.update(self._doc_meta(conn, need))
        names = {f: name for f, name, _ in self._text_files(conn)}
        by_file: dict[int, list[int]] = {}
        for d in doc_list:
            r = rows.get(d)
            if r is None:
                raise DocumentNotFoundError(f"document number {d} vanished")
            if r["text"][0] is None:
                raise IndexCorruptError(f"the text of {r['id']!r} is not stored")
            by_file.setdefault(r["text"][0], []).append(d)
        out: dict[int, str] = {}
        for f, ds in by_file.items():  # one bulk read per text file (there is usually one)
            crcs = [rows[d]["text"][3] for d in ds]
            try:
                texts = self._texts.read_many(
                    names[f],
                    [rows[d]["text"][1] for d in ds],
                    [rows[d]["text"][2] for d in ds],
                    crcs,
                    lambda i, ds=ds: repr(rows[ds[i]]["id"]),
                )
            except IndexCorruptError:
                # a log a power cut shortened, not yet mended by a writer: the texts it lost
                # are in pending_texts (index/pending.py); any other damage is raised again
                found = pend.read_fallback(conn, ds, crcs)
                if not found:
                    self._raise_if_removed(conn, ds, rows)
                    raise
                texts = [
                    found[d]
                    if d in found
                    else self._texts.read(
                        names[f], rows[d]["text"][1], rows[d]["text"][2], rows[d]["text"][3], repr(rows[d]["id"])
                    )
                    for d in ds
                ]
            out.update(zip(ds, texts))
        return out

    def _read_text(self, conn, doc: int, name: str, offset: int, length: int, crc: int, what: str) -> str:
        """One text, from the log or, where a power cut took it from there, from pending_texts."""
        try:
            return self._texts.read(name, offset, length, crc, what)
        except IndexCorruptError:
            found = pend.read_fallback(conn, [doc], [crc])
            if doc not in found:
                self._raise_if_removed(conn, [doc], {doc: {"text": (None, offset, length, crc)}}, compare=(1, 2, 3))
                raise
            return found[doc]

    def _raise_if_removed(self, conn, docs: list[int], rows: dict, compare=(0, 1, 2, 3)) -> None:
        """After a text failed its checksum in a reader: if, in a snapshot taken now, one of
        `docs` is gone or its text is elsewhere (`rows`: what the reader's snapshot said), the
        text was removed (a scrubbing remove zeroes it right after its commit) or moved (a
        compact) while it was read: TextRemovedError, and the read runs again (_fresh_read).
        Otherwise it is damage, and the caller raises it. The writer's own reads skip this:
        nothing removes under it."""
        if conn is self._wconn:
            return
        fresh = store.connect(os.path.join(self.directory, DB_NAME))
        try:
            q = (
                f"SELECT doc, text_file, text_offset, text_length, text_crc FROM documents "
                f"WHERE doc IN ({','.join('?' * len(docs))})"
            )
            now = {r[0]: r[1:] for r in fresh.execute(q, docs)}
        finally:
            fresh.close()
        for d in docs:
            was, cur = rows[d]["text"], now.get(d)
            if cur is None or any(was[i] != cur[i] for i in compare):
                raise TextRemovedError(f"the text of document number {d} was removed or moved while it was read")

    def make_durable(self) -> None:
        """With ``sync="group"``: fsync the SQLite WAL, so that every commit made before this call
        survives a power cut (a small add's texts are in its transaction: pending.py; a large
        add fsyncs its texts itself). One fsync covers any number of commits. Checkpoints never
        drop frames that were not fsynced: with ``synchronous=NORMAL`` SQLite syncs the WAL
        before it copies frames into the database, and a checkpoint on the checkpoint
        thread's connection (``synchronous=FULL``) does too. No-op in the other modes."""
        if self.sync == "group":
            self._sync_wal()

    def _sync_wal(self) -> None:
        try:
            fd = os.open(os.path.join(self.directory, DB_NAME + "-wal"), os.O_RDONLY)
        except FileNotFoundError:  # the last connection closed: SQLite checkpointed and synced it
            return
        try:
            # fdatasync, as SQLite's own syncs on Linux: the frames and the file's size, not its
            # times (measured: 1.05 -> 0.90 ms p50 per group at 200 requests/s)
            os.fdatasync(fd)
        finally:
            os.close(fd)

    def _committed_for_good(self) -> None:
        """Before deleting or overwriting what the last commit made obsolete (replaced segment
        and text files, a removed text): that commit must survive a power cut first, or the
        index could come back listing files that are gone. With ``sync="full"`` the commit
        fsynced the WAL itself; with "normal" and "group" it did not."""
        if self.sync != "full":
            self._sync_wal()

    def sync_texts(self) -> bool:
        """fsync the text log if small adds' texts wait for it in SQLite (the service's
        checkpoint thread calls this; the next commit deletes the rows it covered)."""
        return self._pending.sync()

    # ------------------------------------------------------------------ public: the writer's API
    # What a writer driving the index from outside its own methods uses (the service's group
    # writer and checkpoint thread, service/writer.py), instead of the index's private
    # attributes. The writer lock is this Index's in-process lock (re-entrant): every add,
    # remove, compact and fold commits under it; the directory's writer lock (a file lock,
    # taken once by the first write) keeps other processes' writers out.

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has begun."""
        return self._closed

    def take_writer(self) -> None:
        """Take the directory's writer lock now, once (:class:`IndexLockedError` at once if
        another process holds it), and recover from an interrupted write (text logs cut back
        to their committed length, files the manifest does not list deleted). Every write
        takes it anyway; a long-running writer (the service) takes it when it starts."""
        with self._wlock:
            self._writer()

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Hold this Index's writer lock: no commit of this Index (an add, a remove, a fold)
        until the block ends. Opens nothing, takes no file lock."""
        with self._wlock:
            yield

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """Hold the writer lock (:meth:`write_lock`) and yield the writer connection, taking the
        directory's writer lock first if this Index has not (:meth:`take_writer`). The
        connection is the one every write of this Index uses: only inside the block, only for
        what the index's own writes expect (pragmas, a transaction of the caller's that leaves
        no rows the index does not know). :class:`IndexClosedError` once closed."""
        with self._wlock:
            yield self._writer()

    def wal_autocheckpoint(self, pages: int) -> None:
        """Set SQLite's automatic WAL checkpoint on the writer connection: a commit that leaves
        more than `pages` pages in the WAL checkpoints it; 0: no commit checkpoints (the
        caller does, on a connection of its own: the service's Checkpointer)."""
        with self.writing() as conn:
            conn.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")

    def check_records(self, records: Any, fields: Fields | None, max_chars: int) -> tuple[list[Checked], list[tuple]]:
        """Check `records` (paths, records, or a single text) as :meth:`add` does with these
        `fields` (None: the index's) and `max_chars`, adding nothing: the checked documents
        and their extras (the fields kept beside them), for :meth:`add_checked`.
        :class:`RecordError` for the first refused record (its `line` counts from 1),
        InvalidParameterError for a `max_chars` below 1."""
        return self._checked(records, fields, max_chars)

    # ------------------------------------------------------------------ the fold's interface
    # index/fold.py folds level 0 into a segment beside the adds (a background fold): it
    # reads and swaps what the index keeps in memory through these, and takes the writer lock
    # and connection through write_lock(), writing() and take_writer() above. Not for use
    # outside the index package.

    def meta_value(self, conn: sqlite3.Connection, key: str) -> str:
        """A value of the meta table (``generation``, ``next_doc``, ...) as `conn` sees it."""
        return self._meta(conn, key)

    def bump_generation(self, conn: sqlite3.Connection) -> int:
        """In a write transaction on the writer connection: the manifest's generation plus one,
        stored; returned."""
        return self._bump(conn)

    def cached_segment(self, name: str, size: int, crc: int) -> Postings:
        """A listed segment's postings, from memory or read (and checked: `size`, `crc`);
        :class:`FileGoneError` when a compact has deleted it."""
        return self._segcache.get(name, size, crc)

    def cache_segment(self, name: str, postings: Postings) -> None:
        """Keep a segment just written in memory: the next lookup need not read it back."""
        self._segcache.put(name, postings)

    def forget_segments(self, names: list[str]) -> None:
        """Drop segments the manifest no longer lists from memory."""
        self._segcache.forget(names)

    def swap_state(self, make: Callable[[State | None], State | None]) -> State | None:
        """Replace the in-memory state (manifest, level 0, tombstones) by ``make(current)``
        under the state's lock (None: reloaded from SQLite by the next read); the replaced one."""
        with self._state_lock:
            old = self._state
            self._state = make(old)
            return old

    def make_last_commit_durable(self) -> None:
        """Before deleting what the last commit made obsolete (replaced segments): that commit
        on disk first (with ``sync="full"`` it is; "normal" and "group" fsync the WAL here)."""
        self._committed_for_good()

    # ------------------------------------------------------------------ public: add, query
    def add(
        self,
        inputs: Any,
        *,
        fields: Fields | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        dry_run: bool = False,
        note: str | None = None,
        on_error: str = "stop",
    ) -> Verdicts:
        """Add a batch (paths, a list of record dicts, ...): each document is checked against the
        archive and the earlier part of the batch, then the batch is inserted — all or nothing.
        Returns one :class:`Verdict` per document (a lazy sequence). ``dry_run=True`` inserts
        nothing. ``on_error="skip"``: a bad record, and a record whose id the index holds or an
        earlier record of the batch took, is left out instead of failing the batch, and listed
        in the result's ``skipped`` (RecordErrors: file, line, field, reason), as
        ``neardup dedup --on-error skip`` does; the rest is added, all or nothing."""
        if on_error not in ("stop", "skip"):
            raise InvalidParameterError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
        skips = Skips() if on_error == "skip" else None
        if dry_run:
            docs, extras = self._checked(inputs, fields, max_chars, skips)
            if skips is not None:
                keys = [c.key for c in docs]
                docs, extras, _ = without_taken_ids(
                    docs, extras, keys, set(), set(self._present(self._conn(), keys)), skips, skips.where
                )
            return self._skipped(self.add_checked(docs, extras, dry_run=True), skips)
        _check_max_chars(max_chars)
        with self._wlock:
            conn = self._writer()
            t0 = time.time()
            sw = Stages()
            cfg = self.config
            # the segments are loaded and checked (file reads and CRCs: 168 MB at 1M articles)
            # while the batch is read; reading and checking overlap the signing and the id
            # checks (see intake.py)
            st = self._state_for(conn)
            loading = Job(lambda: self._arrays(st))
            # the texts go to the log once the batch is read and signed (intake.py): the write
            # then overlaps the one-core plan, not the two-core signing
            pending = self._text_writer(conn)
            try:
                docs, extras, signed, twice, present = read_and_sign(
                    inputs,
                    _fields_of(fields) or self.fields,
                    max_chars,
                    self.signer,
                    cfg.bands,
                    cfg.rows,
                    self.threads,
                    lambda keys: self._present(conn, keys),
                    on_chunk=(lambda chunk: pending.put([c.text for c in chunk])) if pending is not None else None,
                    skips=skips,
                    chunk=self.steps.sign_chunk,
                )
                loading.result()  # a corrupt segment is reported here
                self._raise_duplicate_ids(sorted(set(twice)), present)
            except BaseException:
                if pending is not None:
                    pending.wait()  # its bytes are garbage past the committed length
                raise
            finally:
                loading.wait()
            if pending is not None:
                pending.end()
            sw.lap("read, check, sign, id checks")
            return self._skipped(self._add_locked(conn, docs, extras, signed, t0, note, sw, pending), skips)

    @staticmethod
    def _skipped(verdicts: Verdicts, skips: Skips | None) -> Verdicts:
        verdicts.skipped = skips.in_order() if skips is not None else []
        return verdicts

    def add_checked(
        self,
        docs: list[Checked],
        extras: list | None = None,
        *,
        dry_run: bool = False,
        note: str | None = None,
        ids_checked: bool = False,
        parts: list[int] | None = None,
    ) -> Verdicts:
        """Add (or with `dry_run`, check) records already read and checked (``_checked``).
        `ids_checked=True`: the caller checked that the ids are unique and new to the index
        while holding a lock that keeps every other add out until this one returns (the
        service's GroupWriter does, per request, to refuse just the request with a used id);
        the add then does not look them up a second time. (Were one present anyway, the
        insert's UNIQUE constraint would refuse the whole add: nothing is half-written.) With
        `dry_run`, `ids_checked=True` checks no id at all (``query``: its ids name nothing).

        `parts`: the batch is these consecutive requests (their sizes; the service's group
        commit), each to be answered as if it had been added after the ones before it alone.
        A verdict gives its story's state at the end of the batch, so when two parts join one
        story (two copies of one story in one group) the add is planned but not committed and
        raises :class:`~neardup.errors.PartsShareAStory`: the caller adds the parts
        one by one instead. Parts whose stories are apart get the verdicts they would alone."""
        extras = extras if extras is not None else [(None, None)] * len(docs)
        if dry_run:
            conn = self._conn()

            def plan():
                conn.execute("BEGIN")
                try:
                    return self._plan(conn, docs, extras, ids_checked=ids_checked).verdicts
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")

            return self._fresh_read(conn, plan)
        with self._wlock:
            return self._add_locked(
                self._writer(), docs, extras, None, time.time(), note, None, ids_checked=ids_checked, parts=parts
            )

    def _add_locked(
        self,
        conn,
        docs,
        extras,
        signed: Signed | None,
        t0: float,
        note: str | None,
        sw: Stages | None,
        pending: PendingTexts | None = None,
        ids_checked: bool = False,
        parts: list[int] | None = None,
    ) -> Verdicts:
        # the meta values an add reads (generation, next document, cluster and batch numbers),
        # read in one statement: nothing else can write them while this add holds the writer
        # lock (a background fold's commit takes it too). Each SQL statement is a point where
        # the writer thread gives up the GIL and, in the service, waits to get it back.
        self._meta_memo = dict(
            conn.execute(
                "SELECT key, value FROM meta WHERE key IN "
                "('generation', 'next_doc', 'next_cluster', 'next_batch', "
                + ", ".join(f"'{k}'" for k in counters.NAMES)
                + ")"
            )
        )
        if pending is None:
            pending = self._append_texts(conn, docs)  # the text log is written while the plan runs
        try:
            plan = self._plan(conn, docs, extras, signed, ids_checked)
            if parts is not None and len(parts) > 1 and parts_share_a_story(plan, parts):
                raise PartsShareAStory("two requests of the group join one story")
            if sw is not None:
                plan.stages.times = {**sw.times, **plan.stages.times}
            self._commit(conn, plan, t0, note, pending)
        finally:
            self._meta_memo = self._files_memo = None
            if pending is not None:
                pending.wait()
        st = self._state
        if self.background_fold and st is not None:
            self._folder.maybe_start(len(st.l0.docs))
        plan.verdicts.inserted = True
        return plan.verdicts

    def existing_ids(self, keys: list[str]) -> set[str]:
        """Which of these ids (as strings) are in the index.

        A few ids asked while no add runs (the service's writer thread checks each group's ids
        before adding it) are looked up through the writer's connection: a reader connection's
        page cache is dropped whenever another connection has committed (SQLite, WAL mode), so
        after every add its probe read the id index's pages again (~0.3 ms of an add)."""
        if self._closed:
            raise IndexClosedError(f"{self.directory}: the index was closed")
        if len(keys) <= EXISTING_ON_WRITER and self._wconn is not None and self._wlock.acquire(blocking=False):
            try:
                return set(self._present(self._wconn, keys))
            finally:
                self._wlock.release()
        return set(self._present(self._conn(), keys))

    def query(self, inputs: Any, *, fields: Fields | None = None, max_chars: int = DEFAULT_MAX_CHARS) -> Verdicts:
        """Verdicts for `inputs` without inserting them (a text, a list of texts, records, paths)."""
        if isinstance(inputs, str) and not os.path.exists(inputs) and inputs != "-":
            inputs = [{"id": "query", "text": inputs}]
        elif (
            isinstance(inputs, (list, tuple))
            and inputs
            and all(isinstance(t, str) for t in inputs)
            and not all(os.path.exists(t) for t in inputs)
        ):
            inputs = [{"id": f"query-{i}", "text": t} for i, t in enumerate(inputs)]
        # the ids of a query name nothing in the index: one the index holds ("query", a text
        # file's name) or two alike (two files of one name) are not refused as an add's are
        docs, extras = self._checked(inputs, fields, max_chars)
        return self.add_checked(docs, extras, dry_run=True, ids_checked=True)

    def _text_files(self, conn: sqlite3.Connection) -> list[tuple[int, str, int]]:
        """The rows of text_files (file, name, committed) by file number; read once per add (the
        add's own commit is the only writer of them while it holds the writer lock)."""
        if self._meta_memo is not None and conn is self._wconn:
            if self._files_memo is None:
                self._files_memo = conn.execute("SELECT file, name, committed FROM text_files ORDER BY file").fetchall()
            return self._files_memo
        return conn.execute("SELECT file, name, committed FROM text_files ORDER BY file").fetchall()

    def _last_text_file(self, conn) -> tuple[int, str, int]:
        return self._text_files(conn)[-1]

    def _append_texts(self, conn, docs: list[Checked]) -> PendingTexts | None:
        """Start writing the batch's texts past the log's committed length (garbage until the
        commit records the new length), so that the write overlaps the plan."""
        if not (self.config.store_text and docs):
            return None
        fid, name, committed = self._last_text_file(conn)
        return PendingTexts(
            self._log_file(name), fid, committed, [c.text for c in docs], fsync=self.sync != "normal", defer=pend.DEFER
        )

    def _text_writer(self, conn) -> PendingTexts | None:
        """A text-log writer fed chunk by chunk (``put``), or None when texts are not stored."""
        if not self.config.store_text:
            return None
        fid, name, committed = self._last_text_file(conn)
        return PendingTexts(self._log_file(name), fid, committed, None, fsync=self.sync != "normal", defer=pend.DEFER)

    def _log_file(self, name: str) -> LogFile:
        """The open log `name` (a compact starts a new one: the old descriptor is closed)."""
        path = os.path.join(self.directory, name)
        if self._logf is None or self._logf.path != path:
            self._drop_log_file()
            self._logf = LogFile(path)
        return self._logf

    def _drop_log_file(self) -> None:
        if self._logf is not None:
            self._logf.close()
            self._logf = None

    def fold(self) -> bool:
        """Fold level 0 into a new segment now, building the segment without holding the writer
        lock (adds from other threads go on meanwhile) and committing it in one short
        transaction (fold.py). True when a segment was added; False when level 0 was empty or
        the index changed under the fold (a compact, an inline fold), which is then dropped."""
        return fold.fold_once(self)


#: what a forked process's close() leaves open of its parent's (module docstring of close)
_FORKED_LEFT: list = []

#: existing_ids of at most this many ids may use the writer's connection (holding the add
#: lock that long is then short)
EXISTING_ON_WRITER = 1000


def _fields_of(fields) -> Fields | None:
    """`fields` as a Fields: one, None, or a mapping of its names (``{"id": "url", ...}``)."""
    if fields is None or isinstance(fields, Fields):
        return fields
    if isinstance(fields, Mapping):
        try:
            return Fields(**fields)
        except TypeError as exc:
            raise InvalidParameterError(f"fields: {exc} (names: id, text, title, time, source)") from None
    raise InvalidParameterError(
        f"fields must be a neardup.io.Fields or a mapping of its names, got {type(fields).__name__}"
    )


def _create_lock(directory: str, wait: float = 10.0) -> WriterLock:
    """The writer lock of `directory`, for ``Index.create``: held by another process, waited
    for up to `wait` seconds (another create's is held for milliseconds), then
    :class:`IndexLockedError`; :class:`IndexExistsError` as soon as the index it was held for
    is there (not taken: the new index's first write would find it locked)."""
    lock = WriterLock(directory)
    deadline = time.monotonic() + wait
    while True:
        try:
            lock.acquire()
            return lock
        except IndexLockedError:
            if os.path.exists(os.path.join(directory, DB_NAME)):
                raise IndexExistsError(f"{directory} already holds an index") from None
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _check_threads(threads) -> None:
    """threads: None (every core) or an integer in 1..1024 (the core's most), said at open (a
    float or a string was taken, and the first add failed on it with a TypeError)."""
    if threads is not None:
        count("threads", threads, 1, 1024)


def _plain(v):
    """A NumPy scalar as the Python value it holds (a setting stored as JSON: k=np.int64(4)
    failed with "Object of type int64 is not JSON serializable", after the index was begun)."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def _check_max_chars(max_chars) -> None:
    """As dedup checks it: max_chars 0 made every record a bad one (exit 3), not a usage error."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise InvalidParameterError(f"max_chars must be an integer >= 1, got {max_chars!r}")


def _probe(cfg: IndexConfig) -> str:
    """The signature of a fixed text, stored at creation and compared on every open: a build
    that signs differently is refused instead of silently mixing signatures. With whitespace
    or character units the text's exact key follows (keys in those units' own tokens since
    2026-12-01: an index whose keys were made of word tokens is refused, not mixed)."""
    sig = np.asarray(Signer(cfg.options()).batch([PROBE_TEXT]))[0]
    out = np.asarray(sig).astype("<u4" if cfg.settings.method == "minhash" else "<u8").tobytes().hex()
    if cfg.settings.unit != "word":
        out += f":{int(exact_keys([PROBE_TEXT], 1, cfg.settings.unit)[0][0]):016x}"
    return out
