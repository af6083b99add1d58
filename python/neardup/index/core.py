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
import math
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import neardup
from neardup import _core
from neardup.errors import InvalidParameterError
from neardup.index import store
from neardup.index.errors import (
    DocumentNotFoundError,
    DuplicateIdError,
    FileGoneError,
    IndexConfigError,
    IndexCorruptError,
    IndexExistsError,
    IndexNotFoundError,
)
from neardup.index import fold
from neardup.index.segment import Postings, write_segment
from neardup.index.append import LogFile, PendingTexts
from neardup.index.bulk import Const, insert_columns
from neardup.index.intake import Signed, read_and_sign, read_checked, sign
from neardup.index import counters
from neardup.index.migrate import migrate_1_to_2, migrate_2_to_3, migrate_3_to_4
from neardup.index import pending as pend
from neardup.index.stages import Stages
from neardup.index.tuning import Tuning
from neardup.index.verdicts import Verdict, Verdicts
from neardup.index.store import DB_NAME, FORMAT, LATE_INDEXES, SCHEMA, SegmentCache, State, TextLog, WriterLock, lookup, u2i
from neardup.io.records import Checked, Fields
from neardup.pipeline.candidates import choose_bands, pairs_from_keys
from neardup.pipeline.keepers import pick_keepers, source_ranks
from neardup.pipeline.options import DedupOptions
from neardup.pipeline.signer import Signer
from neardup.pipeline.verify import HashSets, estimate_pairs, verify_exact
from neardup.simhash import hamming

__all__ = ["Index", "IndexConfig", "Verdict"]

PROBE_TEXT = "the monsoon session of parliament begins on monday with a debate on the data bill"

CONFIG_KEYS = ("method", "k", "unit", "num_perm", "scheme", "seed", "threshold", "recall", "bands", "rows",
               "verify", "measure", "prefer_source", "store_text", "signature_bits", "max_distance")


_D = DedupOptions()  # the index's defaults are dedup's, so that they stay the same


@dataclass
class IndexConfig:
    """Settings fixed when the index is created, stored in it and checked on every open."""

    method: str = _D.method
    k: int = _D.k
    unit: str = _D.unit
    num_perm: int = _D.num_perm
    scheme: str = _D.scheme
    seed: int = _D.seed
    threshold: float = _D.threshold
    recall: float = _D.recall
    bands: int | None = None
    rows: int | None = None
    verify: str = _D.verify
    measure: str = _D.measure
    prefer_source: tuple[str, ...] = ()
    store_text: bool = True
    #: bits of each MinHash value kept for ``verify="estimate"``: 32 (dedup's estimate exactly) or
    #: 16 (b-bit MinHash: half the bytes; two different values agree on their low 16 bits with
    #: probability 2^-16, so an estimate can exceed the 32-bit one by 1/num_perm, for about
    #: num_perm * 2^-16 (0.2% at 128) of pairs)
    signature_bits: int = 32
    #: SimHash: candidates are fingerprints within this many bits (found through max_distance + 1
    #: tables of fingerprint blocks, as ``neardup dedup --method simhash``)
    max_distance: int = _D.max_distance

    def options(self, threads: int | None = None) -> DedupOptions:
        return DedupOptions(method=self.method, k=self.k, unit=self.unit, num_perm=self.num_perm,
                            scheme=self.scheme, seed=self.seed, threshold=self.threshold, recall=self.recall,
                            bands=self.bands if self.method == "minhash" else None,
                            rows=self.rows if self.method == "minhash" else None, verify=self.verify,
                            measure=self.measure, max_distance=self.max_distance,
                            prefer_source=tuple(self.prefer_source), threads=threads)

    def check(self) -> None:
        if self.method not in ("minhash", "simhash"):
            raise InvalidParameterError(f"method must be 'minhash' or 'simhash', got {self.method!r}")
        if self.method == "simhash" and self.signature_bits != 32:
            raise InvalidParameterError("signature_bits applies to MinHash (a SimHash index keeps 64-bit fingerprints)")
        if self.verify == "exact" and not self.store_text:
            raise InvalidParameterError("verify 'exact' needs the texts: use store_text=True or verify='estimate'")
        if self.signature_bits not in (16, 32):
            raise InvalidParameterError(f"signature_bits must be 16 or 32, got {self.signature_bits!r}")
        if self.signature_bits != 32 and self.verify != "estimate":
            raise InvalidParameterError("signature_bits applies to verify='estimate' (exact verification stores "
                                        "no signatures)")
        self.options().check()
        if self.method == "simhash":
            # one table per block of the fingerprint: a pair within max_distance bits agrees on
            # at least one of max_distance + 1 blocks (pigeonhole); rows: the widest block's bits
            self.bands, self.rows = self.max_distance + 1, -(-64 // (self.max_distance + 1))
            return
        b, r = choose_bands(self.threshold, self.num_perm, self.recall, self.bands, self.rows)
        self.bands, self.rows = b, r

    def as_dict(self) -> dict:
        return {k: (list(getattr(self, k)) if k == "prefer_source" else getattr(self, k)) for k in CONFIG_KEYS}

    @staticmethod
    def from_dict(d: dict) -> "IndexConfig":
        d = dict(d)
        d["prefer_source"] = tuple(d.get("prefer_source") or ())
        return IndexConfig(**{k: d[k] for k in CONFIG_KEYS if k in d})


@dataclass
class _Plan:
    docs: list[Checked]
    extras: list[str | None]
    doc_nums: np.ndarray
    exact_keys: np.ndarray
    has_tok: np.ndarray
    sigs: np.ndarray  # rows for has_tok docs
    sig_row: np.ndarray  # per doc: row in sigs or -1
    band_keys: np.ndarray
    cluster_of: np.ndarray  # final cluster per batch doc
    singles: tuple[np.ndarray, np.ndarray]  # new clusters of one batch document: (cluster sorted, its doc)
    merged: dict[int, int]  # absorbed cluster -> target
    cluster_rows: dict[int, tuple[int, int]]  # every other affected cluster -> (keeper doc, size)
    first_new: int  # clusters from this number on are new
    member_updates: list[tuple[float, str | None, int, int]]  # (similarity, match, cluster, doc) for archive docs
    new_sim: np.ndarray
    new_match: list[str | None]
    closest: list[tuple[Any, float, str] | None]
    pairs: list[tuple[int, int, float]]
    verdicts: Verdicts
    next_cluster: int
    old_multi: int  # how many of the clusters this add grows or merges away had two or more members
    stages: Stages = field(default_factory=Stages)


class Index:
    """A persistent near-duplicate index in a directory. Open with :meth:`Index.open` (or
    create with :meth:`Index.create`); close it (or use ``with``)."""

    # ------------------------------------------------------------------ open / create
    def __init__(self, directory: str, config: IndexConfig, threads: int | None, sync: str = "full",
                 tuning: Tuning | None = None, background_fold: bool = False) -> None:
        if sync not in ("full", "normal", "group"):
            raise InvalidParameterError(f"sync must be 'full', 'normal' or 'group', got {sync!r}")
        if not isinstance(background_fold, bool):
            raise InvalidParameterError(f"background_fold must be True or False, got {background_fold!r}")
        self.sync = sync
        self.tuning = tuning or Tuning()
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
        self._local = threading.local()
        self._wconn: sqlite3.Connection | None = None
        self._segcache = SegmentCache(directory)
        self._texts = TextLog(directory)
        self._logf: LogFile | None = None  # the writer's descriptor of the log it appends to
        self._state: State | None = None
        self._state_lock = threading.Lock()
        self._closed = False
        self._all_conns: list[sqlite3.Connection] = []
        self._pending = pend.PendingLog(has_rows=False)  # set up by the writer's open (_recover)
        self._few: tuple | None = None  # (segment names, PostingArrays per band): _few_handles
        #: within an add (_add_locked): the meta values it reads, and the text_files rows
        self._meta_memo: dict[str, str] | None = None
        self._files_memo: list[tuple[int, str, int]] | None = None
        #: wall seconds per stage of the last add or query (for benchmarks)
        self.last_stages: dict[str, float] = {}

    @classmethod
    def create(cls, directory: str | os.PathLike, *, threads: int | None = None, segment_min: int | None = None,
               l0_max: int | None = None, l0_fold_at: int | None = None, merge_max: int | None = None,
               **settings) -> "Index":
        """Create an index in `directory` (made if missing; it must not hold an index).
        `segment_min` / `l0_max` / `l0_fold_at` / `merge_max`: where adds put their postings
        (:class:`Tuning`), stored."""
        directory = os.fspath(directory)
        tuning = Tuning().with_overrides(segment_min=segment_min, l0_max=l0_max, l0_fold_at=l0_fold_at,
                                         merge_max=merge_max)
        cfg = IndexConfig(**{k: (tuple(v) if k == "prefer_source" else v) for k, v in settings.items()})
        cfg.check()
        os.makedirs(directory, exist_ok=True)
        db = os.path.join(directory, DB_NAME)
        if os.path.exists(db):
            raise IndexExistsError(f"{directory} already holds an index")
        lock = WriterLock(directory)
        lock.acquire()
        try:
            tmp = db + ".init"
            if os.path.exists(tmp):
                os.unlink(tmp)
            conn = sqlite3.connect(tmp, isolation_level=None)
            conn.executescript(SCHEMA)
            now = time.time()
            meta = {"format": str(FORMAT), "config": json.dumps(cfg.as_dict()), "created_at": repr(now),
                    "neardup_version": neardup.__version__, "probe": _probe(cfg),
                    "generation": "0", "next_doc": "1", "next_cluster": "1", "next_batch": "1",
                    "tuning": tuning.to_json(), **counters.ZERO}
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            conn.execute("INSERT INTO text_files VALUES (1, 'texts-000001.dat', 0)")
            conn.execute("COMMIT")
            conn.close()
            open(os.path.join(directory, "texts-000001.dat"), "ab").close()
            os.replace(tmp, db)
        finally:
            lock.release()
        return cls.open(directory, threads=threads)

    @classmethod
    def open(cls, directory: str | os.PathLike, *, threads: int | None = None, sync: str = "full",
             segment_min: int | None = None, l0_max: int | None = None, l0_fold_at: int | None = None,
             merge_max: int | None = None, background_fold: bool = False, **expected) -> "Index":
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
        (fold.py); an add then folds inline only past ``fold.BACKSTOP x l0_max``."""
        directory = os.fspath(directory)
        db = os.path.join(directory, DB_NAME)
        if not os.path.exists(db):
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
            want = list(v) if k == "prefer_source" else v
            if want != stored[k]:
                diffs.append(f"{k}: index has {stored[k]!r}, asked for {want!r}")
        if diffs:
            conn.close()
            raise IndexConfigError(f"{directory}: settings differ from the index's, refusing to mix signatures: "
                                   + "; ".join(diffs))
        probe = _probe(cfg)
        if probe != meta.get("probe"):
            conn.close()
            raise IndexConfigError(
                f"{directory}: this build of neardup computes different signatures for the index's scheme "
                f"({cfg.scheme}, seed {cfg.seed}, k {cfg.k}) than the build that made it "
                f"({meta.get('neardup_version')}); rebuild the index")
        try:
            tuning = Tuning.from_json(meta.get("tuning")).with_overrides(segment_min=segment_min, l0_max=l0_max,
                                                                        l0_fold_at=l0_fold_at, merge_max=merge_max)
        except (ValueError, TypeError) as exc:
            conn.close()
            if isinstance(exc, InvalidParameterError):
                raise
            raise IndexCorruptError(f"{directory}: unreadable tuning settings ({exc})") from exc
        try:
            idx = cls(directory, cfg, threads, sync, tuning, background_fold)
        except BaseException:
            conn.close()
            raise
        idx._local.conn = conn
        idx._all_conns.append(conn)
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
                raise IndexCorruptError(f"segment {name} is truncated or altered: {os.path.getsize(p)} bytes, "
                                        f"the manifest says {size}")
        for fid, name, committed in conn.execute("SELECT file, name, committed FROM text_files").fetchall():
            p = os.path.join(self.directory, name)
            if not os.path.exists(p):
                raise FileGoneError(f"text file {name} is missing", name)
            if os.path.getsize(p) < committed and not pend.covers(conn, fid, os.path.getsize(p), committed):
                raise IndexCorruptError(f"text file {name} is truncated: {os.path.getsize(p)} bytes, "
                                        f"{committed} committed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._folder.wait()  # a fold still building sees _closed and deletes its file
        if self._wconn is not None and self._pending.has_rows:
            try:  # a clean close leaves no texts waiting in SQLite (recovery would handle them)
                if self._pending.sync():
                    self._pending.prune(self._wconn)
            except Exception:  # pragma: no cover - best effort: the next writer's open recovers
                pass
        for c in self._all_conns:
            try:
                c.close()
            except Exception:  # pragma: no cover
                pass
        self._texts.close()
        self._drop_log_file()
        self._lock.release()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ connections, state
    def _conn(self) -> sqlite3.Connection:
        c = getattr(self._local, "conn", None)
        if c is None:
            c = store.connect(os.path.join(self.directory, DB_NAME))
            self._local.conn = c
            self._all_conns.append(c)
        return c

    def _writer(self) -> sqlite3.Connection:
        """Take the writer lock (once) and recover from an interrupted write."""
        if self._wconn is None:
            self._lock.acquire()
            conn = store.connect(os.path.join(self.directory, DB_NAME))
            if self.sync in ("normal", "group"):
                conn.execute("PRAGMA synchronous = NORMAL")
            self._all_conns.append(conn)
            for ddl in LATE_INDEXES:
                conn.execute(ddl)
            self._recover(conn)
            self._pending = pend.PendingLog(has_rows=False)
            self._wconn = conn
        return self._wconn

    def _recover(self, conn: sqlite3.Connection) -> None:
        """Cut text logs back to their committed length; delete files the manifest does not list."""
        for name, committed in conn.execute("SELECT name, committed FROM text_files").fetchall():
            p = os.path.join(self.directory, name)
            if os.path.exists(p) and os.path.getsize(p) > committed:
                with open(p, "r+b") as f:
                    f.truncate(committed)
                    os.fsync(f.fileno())
        pend.recover(conn, self.directory)  # texts a power cut took from the log, back from SQLite
        listed = {r[0] for r in conn.execute("SELECT file FROM segments")}
        texts = {r[0] for r in conn.execute("SELECT name FROM text_files")}
        for name in os.listdir(self.directory):
            # (and segments merged away whose gradual deletion a crash cut short: fold.RETIRED)
            if ((name.startswith("seg-") and name not in listed) or (name.startswith("texts-") and name not in texts)
                    or name.startswith(fold.RETIRED)):
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
            except FileGoneError as exc:
                if conn.in_transaction:
                    conn.execute("COMMIT")
                listed = conn.execute("SELECT 1 FROM segments WHERE file = ? UNION ALL "
                                      "SELECT 1 FROM text_files WHERE name = ?", (exc.file, exc.file)).fetchone()
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
    def _checked(self, inputs: Any, fields: Fields | None, max_chars: int) -> tuple[list[Checked], list[tuple]]:
        """Check every record of `inputs` (paths, records, or a single text) like ``dedup``."""
        return read_checked(inputs, fields or self.fields, max_chars)

    def _present(self, conn: sqlite3.Connection, keys: list[str]) -> list[str]:
        """Which of these ids the index holds. Probed in sorted order: neighbouring probes then
        share B-tree pages (0.4 s instead of 0.6-1.2 s for 200,000 ids on a 1M index)."""
        out: list[str] = []
        ks = sorted(keys)
        for s in range(0, len(ks), 30000):
            chunk = ks[s : s + 30000]
            out += [r[0] for r in conn.execute(f"SELECT id FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk)]
        return out

    @staticmethod
    def _raise_duplicate_ids(twice: list[str], present: list[str]) -> None:
        if twice:
            raise DuplicateIdError(f"{len(twice)} id(s) appear twice in the batch: {_few(twice)}", twice)
        if present:
            raise DuplicateIdError(f"{len(present)} id(s) already in the index: {_few(present)}", present)

    # ------------------------------------------------------------------ the plan
    def _plan(self, conn: sqlite3.Connection, docs: list[Checked], extras: list, signed: Signed | None = None,
              ids_checked: bool = False) -> _Plan:
        """Everything an add decides, before anything is written. `signed`: the batch's exact
        keys, signatures and band keys when the caller computed them (an add from files does,
        while reading, and checks the ids too); else they are computed here. `ids_checked`: the
        caller has checked the ids (unique, new to the index) under the writer lock it still
        holds (the service's GroupWriter, per request)."""
        cfg = self.config
        n = len(docs)
        sw = Stages()
        st = self._state_for(conn)
        if signed is None:
            if not ids_checked:
                # ids: unique in the batch and new to the index
                keys = [c.key for c in docs]
                twice = [] if len(set(keys)) == n else sorted({k for k, m in Counter(keys).items() if m > 1})
                self._raise_duplicate_ids(twice, [] if twice else self._present(conn, keys))
                sw.lap("plan: id checks")
            signed = sign([c.text for c in docs], self.signer, cfg.bands, cfg.rows, self.threads)
            sw.lap("plan: signatures, band keys")
        ek, has_tok, sigs, bk = signed.exact_keys, signed.has_tok, signed.sigs, signed.band_keys
        tok_idx = np.flatnonzero(has_tok)
        sig_row = np.full(n, -1, np.int64)
        sig_row[tok_idx] = np.arange(len(tok_idx))
        arrays = self._arrays(st)

        # exact pass: against the archive, then the earlier part of the batch
        few = self._few_handles(st, arrays)  # cached per set of segments
        qi, adocs = _cat(lookup(few[0][0], ek[tok_idx], st.tombstones, few[0][1]),
                         st.l0.lookup(-1, ek[tok_idx], st.tombstones))
        small = n <= SMALL_PLAN
        arch_exact = (_first_in_archive_few if small else _first_in_archive)(qi, adocs, tok_idx, n)
        rest = tok_idx[arch_exact[tok_idx] < 0]
        batch_exact = (_first_in_batch_few if small else _first_in_batch)(ek, rest, n)
        reps = tok_idx[(arch_exact[tok_idx] < 0) & (batch_exact[tok_idx] < 0)]

        # candidates: archive postings for each representative, LSH pairs inside the batch
        rep_rows = sig_row[reps]
        rep_keys = np.ascontiguousarray(bk[rep_rows].T)  # band j's keys: row j
        if 0 < len(reps) <= store.SMALL_QUERY:  # a few articles (the service's): every band at once
            q_, cd = store.lookup_bands([h for _, h in few[1:]], rep_keys, st.tombstones, st.l0)
            ci = reps[q_]
        else:
            ca_i, ca_d = [], []
            for j in range(cfg.bands):
                q = rep_keys[j]
                q_, d = _cat(lookup(few[j + 1][0], q, st.tombstones, few[j + 1][1]),
                             st.l0.lookup(j, q, st.tombstones))
                if len(q_):  # (most bands of a single new article have no hit)
                    ca_i.append(reps[q_])
                    ca_d.append(d)
            ci = np.concatenate(ca_i) if ca_i else np.zeros(0, np.int64)
            cd = np.concatenate(ca_d) if ca_d else np.zeros(0, np.int64)
        if len(ci):  # each (batch document, archive document) once, in that order
            ci, cd = (_unique_pairs_few if small else _unique_pairs)(ci, cd)
        if len(reps) > 1:
            bp = pairs_from_keys(np.ascontiguousarray(bk[rep_rows])).astype(np.int64)
            bp = reps[bp] if len(bp) else np.zeros((0, 2), np.int64)
        else:
            bp = np.zeros((0, 2), np.int64)

        sw.lap("plan: lookups, batch pairs")
        # archive documents involved (candidates and exact targets): metadata in this snapshot
        arch_docs = sorted(set(cd.tolist()).union(arch_exact[arch_exact >= 0].tolist()))
        meta = self._doc_meta(conn, arch_docs)
        alive = np.array([d in meta for d in cd.tolist()], dtype=bool) if len(cd) else np.zeros(0, bool)
        ci, cd = ci[alive], cd[alive]
        for i in np.flatnonzero(arch_exact >= 0).tolist():
            if int(arch_exact[i]) not in meta:  # removed since the postings were read
                arch_exact[i] = -1

        if cfg.method == "simhash":
            # a candidate shares a block; it is one when the whole fingerprints are within
            # max_distance bits (as neardup dedup's SimHash tables)
            fa = self._sigs_of(conn, cd.tolist(), meta)
            far = np.array([fa[d][0] for d in cd.tolist()], np.uint64)
            ok = hamming(sigs[sig_row[ci], 0], far) <= cfg.max_distance
            ci, cd = ci[ok], cd[ok]
            ok = hamming(sigs[sig_row[bp[:, 0]], 0], sigs[sig_row[bp[:, 1]], 0]) <= cfg.max_distance
            bp = bp[ok]

        sw.lap("plan: archive metadata")
        # verification (the pipeline's kernels)
        hcache: dict = {}  # shingle hash sets, shared with the similarities to keepers
        sims_a, sims_b = self._verify(conn, docs, sigs, sig_row, ci, cd, bp, meta, hcache, sw)
        sw.lap("plan: verification: shingles, Jaccard")
        # SimHash's estimate is its distance check: every candidate within max_distance is a pair
        # (as neardup dedup); otherwise the similarity must reach the threshold
        bar = -1.0 if cfg.method == "simhash" and cfg.verify == "estimate" else cfg.threshold
        ok_a = sims_a >= bar
        ok_b = sims_b >= bar
        ci, cd, sims_a = ci[ok_a], cd[ok_a], sims_a[ok_a]
        bp, sims_b = bp[ok_b], sims_b[ok_b]

        ae = np.flatnonzero(arch_exact >= 0)
        be = np.flatnonzero(batch_exact >= 0)
        if not (len(ae) or len(be) or len(ci) or len(bp)):
            # nothing joins anything (new stories only: most of the service's single articles):
            # each document starts a cluster of its own, numbered in batch order, which is what
            # the general path below gives, without its two dozen array calls
            first_new = next_cluster = int(self._meta(conn, "next_cluster"))
            merged: dict[int, int] = {}
            cluster_of = next_cluster + np.arange(n, dtype=np.int64)
            next_cluster += n
            all_new = True
        else:
            all_new = False
            first_new = next_cluster = int(self._meta(conn, "next_cluster"))
            cluster_of, merged, next_cluster = (_join_few if small else _join)(
                n, meta, ae, arch_exact, be, batch_exact, ci, cd, bp, next_cluster)

        sw.lap("plan: union-find")
        # keepers and similarities to the keeper, per affected cluster
        next_doc = int(self._meta(conn, "next_doc"))
        doc_nums = np.arange(next_doc, next_doc + n, dtype=np.int64)
        dn = doc_nums.tolist()
        if all_new:  # every document a new cluster of its own: all singles (cluster_of is sorted)
            singles = (cluster_of, doc_nums)
            batch_by_cluster = {}
        else:
            singles, batch_by_cluster = (_group_few if small else _group)(cluster_of, doc_nums, first_new)
        multi_cl = sorted(batch_by_cluster)
        # the clusters asked for are the touched ones (each joined by a batch document or merged)
        old_keeper: dict[int, int | None] = {}
        touched = [c for c in multi_cl if c < first_new] + list(merged)
        old_members = self._cluster_members(conn, touched, old_keeper)
        old_multi = sum(1 for c in set(touched) if len(old_members.get(c, ())) >= 2)  # (counters.py)
        cluster_rows: dict[int, tuple[int, int]] = {}  # clusters other than the singles: (keeper, size)
        member_updates: list[tuple[float, str | None, int, int]] = []
        new_sim = np.ones(n)
        new_match: list[str | None] = [None] * n
        sim_jobs: list[tuple[str, int, str, int, int]] = []  # (kind, idx/doc, keeper kind, keeper idx/doc, ...)
        prefer = self.config.prefer_source
        absorbed: dict[int, list[int]] = {}
        for o_, t in merged.items():
            absorbed.setdefault(t, []).append(o_)
        # the pipeline's keeper rule, vectorised over every cluster with more than one member
        multi = []
        ent_lab, ent_id, ent_t, ent_src, ent_doc = [], [], [], [], []
        for c in multi_cl:
            news = batch_by_cluster[c]
            olds = [m for cc in [c] + absorbed.get(c, []) for m in old_members.get(cc, [])]
            multi.append((c, olds, news))
            k = len(multi) - 1
            for m in olds:
                ent_lab.append(k), ent_id.append(m["id"]), ent_t.append(_nan(m["published_at"]))
                ent_src.append(m["source"]), ent_doc.append(m["doc"])
            for i in news:
                ent_lab.append(k), ent_id.append(docs[i].key), ent_t.append(docs[i].time)
                ent_src.append(docs[i].source), ent_doc.append(dn[i])
        if multi:
            e_ = len(ent_lab)
            id_rank = np.empty(e_, np.int64)
            id_rank[np.argsort(np.array(ent_id, dtype=str), kind="stable")] = np.arange(e_)
            ordered, starts = pick_keepers(np.array(ent_lab, np.int64), np.arange(e_), np.array(ent_t, np.float64),
                                           source_ranks(ent_src, prefer), id_rank)
            keeper_of_multi = [ent_doc[int(ordered[s0])] for s0 in starts.tolist()]
        for k, (c, olds, news) in enumerate(multi):
            keeper_doc = keeper_of_multi[k]
            cluster_rows[c] = (keeper_doc, len(olds) + len(news))
            keeper_changed = old_keeper.get(c) != keeper_doc
            for mm in olds:
                if mm["doc"] == keeper_doc:
                    if mm["match"] is not None or mm["cluster"] != c:
                        member_updates.append((1.0, None, c, mm["doc"]))
                elif keeper_changed or mm["cluster"] != c:
                    sim_jobs.append(("a", mm["doc"], "k", keeper_doc, c))
            for i in news:
                if dn[i] == keeper_doc:
                    new_sim[i], new_match[i] = 1.0, None
                else:
                    sim_jobs.append(("b", i, "k", keeper_doc, c))
        sw.lap("plan: keepers")
        arch_rows = {m["doc"]: m for ms in old_members.values() for m in ms}
        self._keeper_sims(conn, docs, sigs, sig_row, ek, doc_nums, sim_jobs, member_updates, new_sim, new_match,
                          arch_rows, hcache)
        sw.lap("plan: similarities to keepers")

        # closest earlier document of each batch document: an exact match, else the most similar
        # verified pair (the first of equals: archive pairs by document, then batch pairs)
        closest: list[tuple[Any, float, str] | None] = [None] * n
        for i in ae.tolist():
            closest[i] = (meta[int(arch_exact[i])]["id_value"], 1.0, "exact")
        for i, a in zip(be.tolist(), batch_exact[be].tolist()):
            closest[i] = (docs[a].id, 1.0, "exact")
        tgt = np.concatenate([ci, bp[:, 1]])
        if len(tgt):
            sims_all = np.concatenate([sims_a, sims_b])
            na = len(ci)
            for p_ in (_best_pairs_few if small else _best_pairs)(tgt, sims_all):
                i = int(tgt[p_])
                if closest[i] is None:
                    ident = meta[int(cd[p_])]["id_value"] if p_ < na else docs[int(bp[p_ - na, 0])].id
                    closest[i] = (ident, float(sims_all[p_]), "near")
        pairs = [(int(doc_nums[i]), int(d), float(s)) for i, d, s in zip(ci.tolist(), cd.tolist(), sims_a.tolist())]
        pairs += [(int(doc_nums[a]), int(doc_nums[b]), float(s)) for (a, b), s in zip(bp.tolist(), sims_b.tolist())]
        pairs = [(min(a, b), max(a, b), s) for a, b, s in pairs]

        # verdicts: built when asked for (an add from the CLI only counts them)
        def keeper_doc_of(c: int) -> int:
            r = cluster_rows.get(c)
            if r is not None:
                return r[0]
            return int(singles[1][np.searchsorted(singles[0], c)])  # singles[0] is sorted

        def alternates_of(c: int) -> tuple[Any, list]:
            if c not in cluster_rows:  # a single: its own keeper
                return docs[keeper_doc_of(c) - next_doc].id, []
            kdoc = cluster_rows[c][0]
            olds = [m for cc in [c] + absorbed.get(c, []) for m in old_members.get(cc, [])]
            members = [(m["doc"], m["id_value"]) for m in olds] + [(dn[i], docs[i].id) for i in batch_by_cluster.get(c, [])]
            kid = next(v for d, v in members if d == kdoc)
            return kid, [v for d, v in members if d != kdoc]

        verdicts = Verdicts(docs, cluster_of, keeper_doc_of, doc_nums, closest, alternates_of)
        sw.lap("plan: closest, verdicts")
        self.last_stages = sw.times
        return _Plan(docs, extras, doc_nums, ek, has_tok, sigs, sig_row, bk, cluster_of, singles, merged,
                     cluster_rows, first_new, member_updates, new_sim, new_match, closest, pairs, verdicts, next_cluster, old_multi, sw)

    def _few_handles(self, st: State, arrays: list[Postings]) -> list[tuple[list, _core.PostingArrays]]:
        """Per band (exact keys first), the segments' arrays, and the same held by the Rust core
        for look-ups of a few keys (store.lookup's small path), made once per set of segments."""
        key = tuple(s[0] for s in st.segments)
        held = self._few
        if held is None or held[0] != key:
            # empty arrays (a segment without postings of a band) answer nothing: left out
            parts = [[p.exact for p in arrays if len(p.exact[0])]] + [
                [p.bands[j] for p in arrays if len(p.bands[j][0])] for j in range(self.config.bands)]
            held = (key, [(ps, _core.PostingArrays([k for k, _ in ps], [d for _, d in ps])) for ps in parts])
            self._few = held  # one assignment: readers in other threads see the old or the new
        return held[1]

    def _doc_meta(self, conn, doc_list: list[int]) -> dict[int, dict]:
        out: dict[int, dict] = {}
        for s in range(0, len(doc_list), 30000):
            chunk = doc_list[s : s + 30000]
            q = (f"SELECT doc, id, id_int, cluster, text_file, text_offset, text_length, text_crc, signature "
                 f"FROM documents WHERE doc IN ({','.join('?' * len(chunk))})")
            for r in conn.execute(q, chunk):
                out[r[0]] = {"doc": r[0], "id": r[1], "id_value": int(r[1]) if r[2] else r[1], "cluster": r[3],
                             "text": r[4:8], "signature": r[8]}
        return out

    def _cluster_members(self, conn, clusters: list[int], keepers: dict[int, int | None] | None = None
                         ) -> dict[int, list[dict]]:
        """The members of these clusters, with where their texts are (``_texts_of`` then needs
        no query of its own); `keepers`, when given, gets each cluster's keeper from the same
        statement."""
        out: dict[int, list[dict]] = {}
        for s in range(0, len(clusters), 30000):
            chunk = clusters[s : s + 30000]
            q = (f"SELECT d.doc, d.id, d.id_int, d.published_at, d.source, d.exact_key, d.cluster, d.similarity, "
                 f"d.match, d.text_file, d.text_offset, d.text_length, d.text_crc, c.keeper FROM documents d "
                 f"LEFT JOIN clusters c ON c.cluster = d.cluster WHERE d.cluster IN ({','.join('?' * len(chunk))})")
            for r in conn.execute(q, chunk):
                out.setdefault(r[6], []).append({
                    "doc": r[0], "id": r[1], "id_value": int(r[1]) if r[2] else r[1], "published_at": r[3],
                    "source": r[4], "exact_key": r[5], "cluster": r[6], "similarity": r[7], "match": r[8],
                    "text": r[9:13]})
                if keepers is not None:
                    keepers[r[6]] = r[13]
        return out

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
        out = {}
        for f, ds in by_file.items():  # one bulk read per text file (there is usually one)
            crcs = [rows[d]["text"][3] for d in ds]
            try:
                texts = self._texts.read_many(names[f], [rows[d]["text"][1] for d in ds],
                                              [rows[d]["text"][2] for d in ds], crcs,
                                              lambda i, ds=ds: repr(rows[ds[i]]["id"]))
            except IndexCorruptError:
                # a log a power cut shortened, not yet mended by a writer: the texts it lost
                # are in pending_texts (index/pending.py); any other damage is raised again
                found = pend.read_fallback(conn, ds, crcs)
                if not found:
                    raise
                texts = [found[d] if d in found else self._texts.read(names[f], *rows[d]["text"][1:4], repr(rows[d]["id"]))
                         for d in ds]
            out.update(zip(ds, texts))
        return out

    def _read_text(self, conn, doc: int, name: str, offset: int, length: int, crc: int, what: str) -> str:
        """One text, from the log or, where a power cut took it from there, from pending_texts."""
        try:
            return self._texts.read(name, offset, length, crc, what)
        except IndexCorruptError:
            found = pend.read_fallback(conn, [doc], [crc])
            if doc not in found:
                raise
            return found[doc]

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

    def _sigs_of(self, conn, doc_list: list[int], meta: dict[int, dict] | None = None) -> dict[int, np.ndarray]:
        rows = dict(meta or {})
        need = [d for d in doc_list if d not in rows]
        if need:
            rows.update(self._doc_meta(conn, need))
        out = {}
        for d in doc_list:
            blob = rows[d]["signature"]
            if blob is None or len(blob) != self._sig_dtype.itemsize * self._sig_width:
                raise IndexCorruptError(f"the signature of {rows[d]['id']!r} is missing or damaged")
            out[d] = np.frombuffer(blob, dtype=self._sig_dtype).astype(np.uint64 if self.config.method == "simhash"
                                                                      else np.uint32)
        return out

    @property
    def _sig_dtype(self) -> np.dtype:
        if self.config.method == "simhash":
            return np.dtype("<u8")
        return np.dtype("<u2") if self.config.signature_bits == 16 else np.dtype("<u4")

    @property
    def _sig_width(self) -> int:
        """Values per stored signature: num_perm MinHash values, or one SimHash fingerprint."""
        return 1 if self.config.method == "simhash" else self.config.num_perm

    @property
    def _stores_sigs(self) -> bool:
        """Signatures are kept for estimates, and SimHash fingerprints always (the candidates'
        distance check needs the archive's fingerprints: 8 bytes an article)."""
        return self.config.verify == "estimate" or self.config.method == "simhash"

    def _estimate(self, mat: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """The signature estimate of each pair of rows of `mat`: MinHash's share of equal values,
        SimHash's 1 - distance / 64 (as ``neardup dedup``)."""
        if self.config.method == "simhash":
            pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
            return 1.0 - hamming(mat[pairs[:, 0], 0], mat[pairs[:, 1], 0]) / 64.0
        return estimate_pairs(mat, pairs)

    def _as_stored(self, sigs: np.ndarray) -> np.ndarray:
        """Signatures as the index keeps them (b-bit: the low 16 bits), so that a new document's
        estimate against the archive or the batch is the same whichever add brought it."""
        return sigs & np.uint32(0xFFFF) if self.config.signature_bits == 16 and self.config.method == "minhash" else sigs

    def _hash_sets(self, conn, docs, want: list[tuple[str, int]], meta, cache: dict,
                   sw: Stages | None = None) -> list[np.ndarray]:
        """Shingle hash sets of ("b", batch index) and ("a", archive document) items, each
        computed once per add: verification and the similarities to keepers share them."""
        miss = [w for w in want if w not in cache]
        if miss:
            arch = [d for kind, d in miss if kind == "a"]
            at = self._texts_of(conn, arch, meta) if arch else {}
            if sw is not None:
                sw.lap("plan: verification: archive texts read")
            hs = self.signer.hashes([docs[x].text if kind == "b" else at[x] for kind, x in miss])
            cache.update(zip(miss, hs))
        return [cache[w] for w in want]

    def _verify(self, conn, docs, sigs, sig_row, ci, cd, bp, meta, cache: dict,
                sw: Stages | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Similarity of each (batch, archive) and (batch, batch) candidate pair."""
        if len(ci) == 0 and len(bp) == 0:
            return np.zeros(0), np.zeros(0)
        batch_need, bl, al, allp = (_pair_rows_few if len(docs) <= SMALL_PLAN else _pair_rows)(ci, cd, bp)
        na = len(ci)
        if self.config.verify == "exact":
            hs = self._hash_sets(conn, docs, [("b", i) for i in bl] + [("a", d) for d in al], meta, cache, sw)
            sims = verify_exact(HashSets(hs), allp, self.config.measure, self.threads)
        else:
            asg = self._sigs_of(conn, al, meta)
            mat = np.concatenate([self._as_stored(sigs[sig_row[batch_need]])] + ([np.stack([asg[d] for d in al])] if al else []))
            sims = self._estimate(mat, allp)
        sims = np.asarray(sims, dtype=np.float64)
        return sims[:na], sims[na:]

    def _keeper_sims(self, conn, docs, sigs, sig_row, ek, doc_nums, jobs, member_updates, new_sim, new_match,
                     arch_rows: dict[int, dict], cache: dict) -> None:
        """Similarity of members to their keeper (1.0 'exact' for the same normalised text).
        `arch_rows`: every archive member of an affected cluster (``_cluster_members``)."""
        if not jobs:
            return
        dn0, n = (int(doc_nums[0]), len(doc_nums)) if len(doc_nums) else (0, 0)
        ekl = ek.tolist()

        def ekey(d: int) -> int:
            m = arch_rows.get(d)
            return ekl[d - dn0] if dn0 <= d < dn0 + n else (m["exact_key"] & 0xFFFFFFFFFFFFFFFF if m else 0)

        need_pairs = []
        for job in jobs:
            kind, x, _, kdoc, c = job
            d = x if kind == "a" else dn0 + x
            k = ekey(d)
            if k != 0 and k == ekey(kdoc):
                self._set_sim(job, 1.0, "exact", member_updates, new_sim, new_match)
            else:
                need_pairs.append((job, d, kdoc))
        if not need_pairs:
            return
        ds = sorted({d for _, d, k in need_pairs} | {k for _, d, k in need_pairs})
        pos = {d: i for i, d in enumerate(ds)}
        pr = np.array([[pos[d], pos[k]] for _, d, k in need_pairs], np.int64)
        item = [("b", d - dn0) if dn0 <= d < dn0 + n else ("a", d) for d in ds]
        if self.config.verify == "exact":
            sims = verify_exact(HashSets(self._hash_sets(conn, docs, item, arch_rows, cache)), pr, self.config.measure,
                                self.threads)
        else:
            asg = self._sigs_of(conn, [x for kind, x in item if kind == "a"])
            mat = np.stack([self._as_stored(sigs[sig_row[x]]) if kind == "b" else asg[x] for kind, x in item])
            sims = self._estimate(mat, pr)
        for (job, _, _), s in zip(need_pairs, np.asarray(sims).tolist()):
            self._set_sim(job, float(s), "near", member_updates, new_sim, new_match)

    @staticmethod
    def _set_sim(job, s, match, member_updates, new_sim, new_match) -> None:
        kind, x, _, _, c = job
        if kind == "a":
            member_updates.append((round(s, 6), match, c, x))
        else:
            new_sim[x], new_match[x] = round(s, 6), match

    # ------------------------------------------------------------------ public: add, query
    def add(self, inputs: Any, *, fields: Fields | None = None, max_chars: int = 5_000_000,
            dry_run: bool = False, note: str | None = None) -> Verdicts:
        """Add a batch (paths, a list of record dicts, ...): each document is checked against the
        archive and the earlier part of the batch, then the batch is inserted — all or nothing.
        Returns one :class:`Verdict` per document (a lazy sequence). ``dry_run=True`` inserts
        nothing."""
        if dry_run:
            docs, extras = self._checked(inputs, fields, max_chars)
            return self.add_checked(docs, extras, dry_run=True)
        with self._wlock:
            conn = self._writer()
            t0 = time.time()
            sw = Stages()
            cfg = self.config
            # the segments are loaded and checked (file reads and CRCs: 168 MB at 1M articles)
            # while the batch is read; reading and checking overlap the signing and the id
            # checks (see intake.py)
            st = self._state_for(conn)
            loading = _Job(lambda: self._arrays(st))
            # the texts go to the log once the batch is read and signed (intake.py): the write
            # then overlaps the one-core plan, not the two-core signing
            pending = self._text_writer(conn)
            try:
                docs, extras, signed, twice, present = read_and_sign(
                    inputs, fields or self.fields, max_chars, self.signer, cfg.bands, cfg.rows, self.threads,
                    lambda keys: self._present(conn, keys),
                    on_chunk=(lambda chunk: pending.put([c.text for c in chunk])) if pending is not None else None)
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
            return self._add_locked(conn, docs, extras, signed, t0, note, sw, pending)

    def add_checked(self, docs: list[Checked], extras: list | None = None, *, dry_run: bool = False,
                    note: str | None = None, ids_checked: bool = False) -> Verdicts:
        """Add (or with `dry_run`, check) records already read and checked (``_checked``).
        `ids_checked=True`: the caller checked that the ids are unique and new to the index
        while holding a lock that keeps every other add out until this one returns (the
        service's GroupWriter does, per request, to refuse just the request with a used id);
        the add then does not look them up a second time. (Were one present anyway, the
        insert's UNIQUE constraint would refuse the whole add: nothing is half-written.)"""
        extras = extras if extras is not None else [(None, None)] * len(docs)
        if dry_run:
            conn = self._conn()

            def plan():
                conn.execute("BEGIN")
                try:
                    return self._plan(conn, docs, extras).verdicts
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")

            return self._fresh_read(conn, plan)
        with self._wlock:
            return self._add_locked(self._writer(), docs, extras, None, time.time(), note, None,
                                    ids_checked=ids_checked)

    def _add_locked(self, conn, docs, extras, signed: Signed | None, t0: float, note: str | None,
                    sw: Stages | None, pending: PendingTexts | None = None, ids_checked: bool = False) -> Verdicts:
        # the meta values an add reads (generation, next document, cluster and batch numbers),
        # read in one statement: nothing else can write them while this add holds the writer
        # lock (a background fold's commit takes it too). Each SQL statement is a point where
        # the writer thread gives up the GIL and, in the service, waits to get it back.
        self._meta_memo = dict(conn.execute("SELECT key, value FROM meta WHERE key IN "
                                            "('generation', 'next_doc', 'next_cluster', 'next_batch', "
                                            + ", ".join(f"'{k}'" for k in counters.NAMES) + ")"))
        if pending is None:
            pending = self._append_texts(conn, docs)  # the text log is written while the plan runs
        try:
            plan = self._plan(conn, docs, extras, signed, ids_checked)
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
        if len(keys) <= EXISTING_ON_WRITER and self._wconn is not None and self._wlock.acquire(blocking=False):
            try:
                return set(self._present(self._wconn, keys))
            finally:
                self._wlock.release()
        return set(self._present(self._conn(), keys))

    def query(self, inputs: Any, *, fields: Fields | None = None, max_chars: int = 5_000_000) -> list[Verdict]:
        """Verdicts for `inputs` without inserting them (a text, a list of texts, records, paths)."""
        if isinstance(inputs, str) and not os.path.exists(inputs) and inputs != "-":
            inputs = [{"id": "query", "text": inputs}]
        elif isinstance(inputs, list) and inputs and all(isinstance(t, str) for t in inputs) and not all(
                os.path.exists(t) for t in inputs):
            inputs = [{"id": f"query-{i}", "text": t} for i, t in enumerate(inputs)]
        return self.add(inputs, fields=fields, max_chars=max_chars, dry_run=True)

    def _text_files(self, conn) -> list[tuple[int, str, int]]:
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
        return PendingTexts(self._log_file(name), fid, committed, [c.text for c in docs],
                            fsync=self.sync != "normal", defer=pend.DEFER)

    def _text_writer(self, conn) -> PendingTexts | None:
        """A text-log writer fed chunk by chunk (``put``), or None when texts are not stored."""
        if not self.config.store_text:
            return None
        fid, name, committed = self._last_text_file(conn)
        return PendingTexts(self._log_file(name), fid, committed, None, fsync=self.sync != "normal",
                            defer=pend.DEFER)

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

    def _commit(self, conn, plan: _Plan, t0: float, note: str | None, pending: PendingTexts | None = None) -> None:
        cfg = self.config
        n = len(plan.docs)
        now = time.time()
        # 1. texts: appended to the log and fsynced before the transaction that references them
        text_cols: list = [Const(None)] * 4
        tf = self._last_text_file(conn)
        new_committed = tf[2]
        if pending is None:  # not started before the plan (see add_checked): now
            pending = self._append_texts(conn, plan.docs)
        if pending is not None:
            text_cols, new_committed = pending.result()
        sw = plan.stages
        sw.lap("commit: text log")
        # 2. postings: a segment file for a large add (with level 0 folded in), else level 0
        tok = np.flatnonzero(plan.has_tok)
        st = self._state_for(conn)
        # with background folds, folding inline here is only the backstop (see fold.py)
        l0_limit = self.tuning.l0_max * (fold.BACKSTOP if self.background_fold else 1)
        to_segment = n >= self.tuning.segment_min or (len(st.l0.docs) + len(tok) > l0_limit)
        seg = None
        seg_job = seg_name = None
        if to_segment and len(tok):
            # built (numpy sorts) and written in a thread of its own while the rows are inserted
            # below (SQLite and numpy release the GIL): it is needed only for the manifest row
            seg_name = f"seg-{int(self._meta(conn, 'generation')) + 1:08d}-{os.urandom(4).hex()}.ndx"
            l0 = st.l0.postings(cfg.bands) if st.l0.docs else None

            def build_segment():
                mine = Postings.build(plan.doc_nums[tok], plan.exact_keys[tok], plan.band_keys, cfg.bands)
                p = Postings.merge([mine, l0], cfg.bands, st.tombstones) if l0 is not None else mine
                size, crc = write_segment(os.path.join(self.directory, seg_name), p)
                return seg_name, p.docs, size, crc

            seg_job = _Job(build_segment)
        sw.lap("commit: segment file started")
        # 3. one transaction
        batch = int(self._meta(conn, "next_batch"))
        conn.execute("BEGIN IMMEDIATE")
        try:
            # column by column, constants and NULLs as literals (bulk.py: binding parameters is
            # most of the cost of 200,000 rows)
            docs_ = plan.docs
            if self._stores_sigs:
                sigs = [(self._as_stored(plan.sigs[r]).astype(self._sig_dtype).tobytes() if r >= 0 else None)
                        for r in plan.sig_row.tolist()]
            else:
                sigs = Const(None)
            cms = plan.closest
            tcols = text_cols
            id_int = [1 if type(c.id) is int else 0 for c in docs_]
            columns = [
                plan.doc_nums.tolist(), [c.key for c in docs_], id_int if 1 in id_int else Const(0),
                [None if c.time != c.time else c.time for c in docs_], [c.source for c in docs_],
                Const(now), Const(batch),
                np.asarray(plan.exact_keys, np.uint64).view(np.int64).tolist(),  # = u2i: SQLite integers are signed
                plan.cluster_of.tolist(), np.asarray(plan.new_sim, np.float64).tolist(), plan.new_match,
                [None if cm is None else str(cm[0]) for cm in cms], [None if cm is None else cm[1] for cm in cms],
                [e[1] for e in plan.extras], *tcols, [e[0] for e in plan.extras], sigs]
            sw.lap("commit: document rows built")
            insert_columns(conn, "documents", columns, n)
            sw.lap("commit: documents inserted")
            # new clusters in increasing order (appended to the table's B-tree): the singles
            # (one new document each, its own keeper) and the new clusters of several documents
            fn = plan.first_new
            multi_new = [(c, k, s_) for c, (k, s_) in plan.cluster_rows.items() if c >= fn]
            ncl, nkeep, nsize = (_new_clusters_few if n <= SMALL_PLAN else _new_clusters)(plan.singles, multi_new)
            insert_columns(conn, "clusters", [ncl, nkeep, nsize if multi_new else Const(1),
                                              Const(now), Const(now), Const(None)], len(ncl))
            # (each statement only when it has rows: a new story, the service's usual add, has none)
            grown = [(k, s, now, c) for c, (k, s) in plan.cluster_rows.items() if c < fn]
            if grown:
                conn.executemany("UPDATE clusters SET keeper = ?, size = ?, updated_at = ? WHERE cluster = ?", grown)
            if plan.merged:
                conn.executemany("UPDATE clusters SET keeper = NULL, size = 0, updated_at = ?, merged_into = ? "
                                 "WHERE cluster = ?", [(now, t, c) for c, t in plan.merged.items()])
                conn.executemany("UPDATE clusters SET merged_into = ? WHERE merged_into = ?",
                                 [(t, c) for c, t in plan.merged.items()])
                conn.executemany("UPDATE documents SET cluster = ? WHERE cluster = ?",
                                 [(t, c) for c, t in plan.merged.items()])
            if plan.member_updates:
                conn.executemany("UPDATE documents SET similarity = ?, match = ?, cluster = ? WHERE doc = ?",
                                 plan.member_updates)
            if plan.pairs:
                conn.executemany("INSERT OR REPLACE INTO pairs VALUES (?, ?, ?)", plan.pairs)
            sw.lap("commit: other rows")
            if seg_job is not None:
                seg = seg_job.result()
                sw.lap("commit: waited for the segment file")
            if seg is not None:
                conn.execute("DELETE FROM level0")
                conn.execute("INSERT INTO segments (file, docs, bytes, crc, created_at) VALUES (?, ?, ?, ?, ?)",
                             (seg[0], seg[1], seg[2], seg[3], now))
                # tombstones of documents that no segment lists any more could go; compaction does it
            prow = []
            if seg is None and len(tok):
                l0rows = []
                for k, i in enumerate(tok.tolist()):
                    d = int(plan.doc_nums[i])
                    prow.append((-1, u2i(int(plan.exact_keys[i])), d))
                    for j, key in enumerate(plan.band_keys[k].tolist()):
                        prow.append((j, u2i(key), d))
                    l0rows.append((d, u2i(int(plan.exact_keys[i])), plan.band_keys[k].astype("<u8").tobytes()))
                conn.executemany("INSERT INTO level0 VALUES (?, ?, ?)", l0rows)
            conn.execute("UPDATE text_files SET committed = ? WHERE file = ?", (new_committed, tf[0]))
            if pending is not None:
                if pending.in_db is not None:
                    conn.executemany("INSERT INTO pending_texts VALUES (?, ?, ?, ?)",
                                     zip(plan.doc_nums.tolist(), [tf[0]] * n, text_cols[1],
                                         [t.encode("utf-8") for t in pending.in_db]))
                    self._pending.has_rows = True
                    self._pending.prune(conn)
                elif pending.fsync:  # (known once result() has returned)
                    self._pending.all_synced(conn)  # this add's fsync covered the whole log
            dup = plan.verdicts.duplicates
            conn.execute("INSERT INTO batches VALUES (?, 'add', ?, ?, ?, ?, ?, ?)",
                         (batch, t0, time.time(), n, n - dup, dup, note))
            # the counts (counters.py): each new cluster is a story; a merged one is no more
            # (the texts' lengths are text_cols[2] when they were written: pending)
            counts = counters.moved(
                {k: self._meta(conn, k) for k in counters.NAMES},
                documents=n, text_bytes=sum(text_cols[2]) if pending is not None else 0,
                stories=len(ncl) - len(plan.merged),
                clusters=sum(1 for _, s_ in plan.cluster_rows.values() if s_ >= 2) - plan.old_multi)
            gen = self._bump(conn, next_doc=int(plan.doc_nums[-1]) + 1 if n else None,
                             next_cluster=plan.next_cluster, next_batch=batch + 1, **counts)
            sw.lap("commit: other rows")
            conn.execute("COMMIT")
            sw.lap("commit: COMMIT")
            if pending is not None and n:
                self._pending.committed(pending.path, int(plan.doc_nums[-1]))
            self._advance_state(st, gen, seg, prow)
            self.last_stages = sw.times
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if seg_job is not None:
                seg_job.wait()  # never leave a thread writing a file nobody will list
                try:
                    os.unlink(os.path.join(self.directory, seg_name))
                except OSError:
                    pass
            raise

    def _bump(self, conn, **vals) -> int:
        gen = int(self._meta(conn, "generation")) + 1
        sets = {"generation": str(gen), **{k: str(v) for k, v in vals.items() if v is not None}}
        # one statement for every key (an add sets four): each statement is a round trip
        whens = " ".join("WHEN ? THEN ?" for _ in sets)
        conn.execute(f"UPDATE meta SET value = CASE key {whens} END WHERE key IN ({','.join('?' * len(sets))})",
                     [x for kv in sets.items() for x in kv] + list(sets))
        return gen

    def _advance_state(self, st: State, gen: int, seg, prow) -> None:
        """After this process's own add: the next state without reloading from SQLite."""
        with self._state_lock:
            if self._state is not st or st.generation != gen - 1:
                self._state = None
                return
            if seg is not None:
                nst = State(gen, st.bands, st.segments + [(seg[0], seg[2], seg[3])], store.L0(), st.tombstones)
            else:
                for band, key, doc in prow:  # readers only .get() from this dict
                    st.l0.put(band, key & 0xFFFFFFFFFFFFFFFF, doc)
                nst = State(gen, st.bands, st.segments, st.l0, st.tombstones)
            self._state = nst

    def _after_remove(self, st: State | None, gen: int, removed: list[int]) -> None:
        """After this process's own remove: the same segments and level 0, more tombstones. Not
        reloaded from SQLite: that read all of level 0 again (0.9 s at 48,500 documents) in the
        request after every DELETE. The removed documents stay in level 0's map (as after a
        fold that raced a remove, fold.py); the tombstones keep them out of every lookup."""
        with self._state_lock:
            if st is None or self._state is not st or st.generation != gen - 1:
                self._state = None
                return
            st.l0.docs.difference_update(removed)
            tomb = np.union1d(st.tombstones, np.asarray(removed, np.int64))
            self._state = State(gen, st.bands, st.segments, st.l0, tomb)

    def fold(self) -> bool:
        """Fold level 0 into a new segment now, building the segment without holding the writer
        lock (adds from other threads go on meanwhile) and committing it in one short
        transaction (fold.py). True when a segment was added; False when level 0 was empty or
        the index changed under the fold (a compact, an inline fold), which is then dropped."""
        return fold.fold_once(self)

    # ------------------------------------------------------------------ remove, compact
    def remove(self, ids: Iterable[Any] = (), *, older_than: float | None = None, scrub: bool = True) -> int:
        """Remove documents by id, and/or every document published (or, without a time, added)
        before `older_than` (seconds since the epoch). Their clusters are recomputed from the
        stored pairs (a cluster may split); keepers re-decided. Returns how many were removed.
        With `scrub`, the removed texts are overwritten in the text log at once."""
        with self._wlock:
            conn = self._writer()
            docs: set[int] = set()
            idl = [str(i) for i in ids]
            missing = []
            for s in range(0, len(idl), 30000):
                chunk = idl[s : s + 30000]
                found = dict(conn.execute(f"SELECT id, doc FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk))
                missing += [i for i in chunk if i not in found]
                docs.update(found.values())
            if missing:
                raise DocumentNotFoundError(f"{len(missing)} id(s) not in the index: {_few(missing)}")
            if older_than is not None:
                docs.update(r[0] for r in conn.execute(
                    "SELECT doc FROM documents WHERE COALESCE(published_at, added_at) < ?", (older_than,)))
            if not docs:
                return 0
            return self._remove_docs(conn, sorted(docs), scrub)

    def _remove_docs(self, conn, docs: list[int], scrub: bool) -> int:
        now = time.time()
        dl = docs
        before = self._state  # advanced after the commit, not reloaded (_after_remove)
        rows = []
        for s in range(0, len(dl), 30000):
            chunk = dl[s : s + 30000]
            rows += conn.execute(f"SELECT doc, cluster, text_file, text_offset, text_length FROM documents "
                                 f"WHERE doc IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        gone = {r[0] for r in rows}
        affected = sorted({r[1] for r in rows})
        members = self._cluster_members(conn, affected)
        next_cluster = int(self._meta(conn, "next_cluster"))
        cluster_updates = []  # (keeper, size, updated, cluster)
        new_clusters = []
        doc_updates = []  # (similarity, match, cluster, doc)
        for c in affected:
            rest = [m for m in members.get(c, []) if m["doc"] not in gone]
            if not rest:
                cluster_updates.append((None, 0, now, c))
                continue
            pos = {m["doc"]: i for i, m in enumerate(rest)}
            edges = []
            ds = list(pos)
            for s in range(0, len(ds), 15000):
                chunk = ds[s : s + 15000]
                ph = ",".join("?" * len(chunk))
                for a, b in conn.execute(f"SELECT a, b FROM pairs WHERE a IN ({ph}) OR b IN ({ph})", chunk + chunk):
                    if a in pos and b in pos:
                        edges.append((pos[a], pos[b]))
            by_key: dict[int, int] = {}
            for i, m in enumerate(rest):
                if m["exact_key"] != 0:
                    j = by_key.setdefault(m["exact_key"], i)
                    if j != i:
                        edges.append((j, i))
            lab = np.asarray(neardup.connected_components(len(rest), np.array(edges, np.uint32).reshape(-1, 2)), np.int64)
            comps: dict[int, list[int]] = {}
            for i, l in enumerate(lab.tolist()):
                comps.setdefault(l, []).append(i)
            first = True
            for l, idxs in sorted(comps.items(), key=lambda kv: min(rest[i]["doc"] for i in kv[1])):
                part = [rest[i] for i in idxs]
                if first:
                    cid = c
                    first = False
                else:
                    cid = next_cluster
                    next_cluster += 1
                    new_clusters.append(cid)
                keeper = self._pick(part)
                cluster_updates.append((keeper["doc"], len(part), now, cid))
                jobs = []
                for m in part:
                    if m["doc"] == keeper["doc"]:
                        doc_updates.append((1.0, None, cid, m["doc"]))
                    elif m["exact_key"] != 0 and m["exact_key"] == keeper["exact_key"]:
                        doc_updates.append((1.0, "exact", cid, m["doc"]))
                    else:
                        jobs.append(m)
                if jobs:
                    ds2 = [keeper["doc"]] + [m["doc"] for m in jobs]
                    pr = np.array([[i + 1, 0] for i in range(len(jobs))], np.int64)
                    if self.config.verify == "exact":
                        tx = self._texts_of(conn, ds2)
                        sims = verify_exact(HashSets(self.signer.hashes([tx[d] for d in ds2])), pr, self.config.measure)
                    else:
                        sg = self._sigs_of(conn, ds2)
                        sims = self._estimate(np.stack([sg[d] for d in ds2]), pr)
                    for m, s in zip(jobs, np.asarray(sims).tolist()):
                        doc_updates.append((round(float(s), 6), "near", cid, m["doc"]))
        # a scrubbing remove also zeroes the database pages it frees whole (the writer's
        # setting, FAST, zeroes only the deleted cells in pages written anyway: store.connect)
        if scrub:
            conn.execute("PRAGMA secure_delete = ON")
        try:
            conn.execute("BEGIN IMMEDIATE")
            for s in range(0, len(dl), 30000):
                chunk = dl[s : s + 30000]
                ph = ",".join("?" * len(chunk))
                conn.execute(f"DELETE FROM documents WHERE doc IN ({ph})", chunk)
                conn.execute(f"DELETE FROM pairs WHERE a IN ({ph})", chunk)
                conn.execute(f"DELETE FROM pairs WHERE b IN ({ph})", chunk)
                conn.execute(f"DELETE FROM level0 WHERE doc IN ({ph})", chunk)
                # a removed text must not be written back into the log by a recovery
                conn.execute(f"DELETE FROM pending_texts WHERE doc IN ({ph})", chunk)
            conn.executemany("INSERT OR IGNORE INTO tombstones VALUES (?)", [(d,) for d in dl])
            conn.executemany("INSERT INTO clusters VALUES (?, NULL, 0, ?, ?, NULL)", [(c, now, now) for c in new_clusters])
            conn.executemany("UPDATE clusters SET keeper = ?, size = ?, updated_at = ? WHERE cluster = ?", cluster_updates)
            conn.executemany("UPDATE documents SET similarity = ?, match = ?, cluster = ? WHERE doc = ?", doc_updates)
            conn.execute("INSERT INTO batches VALUES (?, 'remove', ?, ?, ?, 0, 0, NULL)",
                         (int(self._meta(conn, "next_batch")), now, time.time(), len(dl)))
            # the counts (counters.py): each affected cluster was one story; what is left of it
            # is as many as it split into (none when emptied)
            after = [u[1] for u in cluster_updates]
            counts = counters.moved(
                counters.read(conn), documents=-len(rows), text_bytes=-sum(r[4] or 0 for r in rows),
                stories=sum(1 for z in after if z > 0) - len(affected),
                clusters=sum(1 for z in after if z >= 2) - sum(1 for c in affected if len(members.get(c, ())) >= 2))
            gen = self._bump(conn, next_cluster=next_cluster, next_batch=int(self._meta(conn, "next_batch")) + 1,
                             **counts)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            if scrub:  # back to the connection's setting, even when BEGIN itself failed
                conn.execute("PRAGMA secure_delete = FAST")
        self._after_remove(before, gen, dl)
        if scrub and self.config.store_text:
            self._committed_for_good()  # a text zeroed for a removal that a power cut undid: lost
            names = dict(conn.execute("SELECT file, name FROM text_files").fetchall())
            for _, _, f, off, ln in rows:
                if f is not None and ln:
                    with open(os.path.join(self.directory, names[f]), "r+b") as fh:
                        fh.seek(off)
                        fh.write(b"\0" * ln)
                        os.fsync(fh.fileno())
        return len(gone)

    def _pick(self, members: list[dict]) -> dict:
        m = len(members)
        ids = [x["id"] for x in members]
        times = np.array([_nan(x["published_at"]) for x in members], dtype=np.float64)
        id_rank = np.empty(m, np.int64)
        id_rank[np.argsort(np.array(ids, dtype=str), kind="stable")] = np.arange(m)
        ordered, _ = pick_keepers(np.zeros(m, np.int64), np.arange(m), times,
                                  source_ranks([x["source"] for x in members], self.config.prefer_source), id_rank)
        return members[int(ordered[0])]

    def compact(self) -> dict:
        """Merge every segment and level 0 into one segment without removed documents, rewrite
        the text log without removed texts, and checkpoint SQLite. Returns before/after sizes."""
        with self._wlock:
            conn = self._writer()
            before = self.disk_bytes()
            st = self._state_for(conn)
            parts = self._arrays(st) + [st.l0.postings(self.config.bands)]
            p = Postings.merge(parts, self.config.bands, st.tombstones)
            p.docs = int(len(np.unique(np.concatenate([p.exact[1]] + [b[1] for b in p.bands]))))
            name = f"seg-{int(self._meta(conn, 'generation')) + 1:08d}-{os.urandom(4).hex()}.ndx"
            size, crc = write_segment(os.path.join(self.directory, name), p)
            # text log: copy live texts to a new file
            new_text = None
            moves = []
            if self.config.store_text:
                names = dict(conn.execute("SELECT file, name FROM text_files").fetchall())
                fid = max(names) + 1
                new_text = (fid, f"texts-{fid:06d}.dat")
                off = 0
                with open(os.path.join(self.directory, new_text[1]), "wb") as out:
                    cur = conn.execute("SELECT doc, text_file, text_offset, text_length, text_crc, id FROM documents "
                                       "WHERE text_file IS NOT NULL ORDER BY text_file, text_offset")
                    for d, f, o, ln, crc_, ident in cur:
                        txt = self._read_text(conn, d, names[f], o, ln, crc_, repr(ident)).encode("utf-8")
                        out.write(txt)
                        moves.append((fid, off, d))
                        off += ln
                    out.flush()
                    os.fsync(out.fileno())
                new_text = (*new_text, off)
            old_segs = [r[0] for r in conn.execute("SELECT file FROM segments")]
            old_texts = [r[0] for r in conn.execute("SELECT name FROM text_files")]
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM segments")
                conn.execute("DELETE FROM level0")
                conn.execute("DELETE FROM tombstones")
                conn.execute("INSERT INTO segments (file, docs, bytes, crc, created_at) VALUES (?, ?, ?, ?, ?)",
                             (name, p.docs, size, crc, time.time()))
                if new_text is not None:
                    conn.executemany("UPDATE documents SET text_file = ?, text_offset = ? WHERE doc = ?", moves)
                    conn.execute("DELETE FROM text_files")
                    conn.execute("INSERT INTO text_files VALUES (?, ?, ?)", new_text)
                    self._pending.all_synced(conn)  # the new log is fsynced; the old ones go
                self._bump(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._committed_for_good()
            self._texts.retire(old_texts if new_text is not None else [])
            if new_text is not None:
                self._drop_log_file()  # its file is deleted below
            for f in old_segs + (old_texts if new_text is not None else []):
                try:
                    os.unlink(os.path.join(self.directory, f))
                except OSError:
                    pass
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return {"bytes_before": before, "bytes_after": self.disk_bytes(), "segments": 1}

    # ------------------------------------------------------------------ reads
    def disk_bytes(self) -> int:
        total = 0
        for f in os.listdir(self.directory):
            try:  # a concurrent compact may remove a file between the listing and the stat
                st = os.stat(os.path.join(self.directory, f))
            except FileNotFoundError:
                continue
            if not os.path.isdir(os.path.join(self.directory, f)):
                total += st.st_size
        return total

    def totals(self) -> dict:
        """Documents and clusters of two or more (what an add reports), from the counts."""
        c = counters.read(self._conn())
        return {"documents": c["documents"], "clusters": c["clusters"]}

    def stats(self) -> dict:
        """What the index holds. The counts are kept by each commit (counters.py), the small
        tables (segments, level 0, tombstones) counted: no scan of documents or clusters."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            c = counters.read(conn)
            segs = conn.execute("SELECT COUNT(*), COALESCE(SUM(docs), 0), COALESCE(SUM(bytes), 0) FROM segments").fetchone()
            l0 = conn.execute("SELECT COUNT(*) FROM level0").fetchone()[0]
            tomb = conn.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0]
            # batches are numbered from 1 without gaps and never deleted (a look-up, not a count)
            batches = int(self._meta(conn, "next_batch")) - 1
            gen = int(self._meta(conn, "generation"))
            created = float(self._meta(conn, "created_at"))
        finally:
            conn.execute("COMMIT")
        disk = self.disk_bytes()
        n, text_bytes = c["documents"], c["text_bytes"]
        return {
            "directory": self.directory, "documents": n, "stories": c["stories"], "clusters": c["clusters"],
            "duplicates": n - c["stories"], "segments": segs[0], "segment_postings_docs": segs[1], "segment_bytes": segs[2],
            "level0_documents": l0, "tombstones": tomb, "text_bytes": text_bytes, "disk_bytes": disk,
            "bytes_per_document_beyond_text": round((disk - text_bytes) / n, 1) if n else None,
            "batches": batches, "generation": gen, "created_at": created, "config": self.config.as_dict(),
        }

    def get_document(self, id: Any, *, text: bool = True) -> dict:
        conn = self._conn()
        return self._fresh_read(conn, lambda: self._get_document(conn, id, text))

    def _get_document(self, conn, id: Any, text: bool) -> dict:
        r = conn.execute("SELECT doc, id, id_int, published_at, source, added_at, cluster, similarity, match, closest, "
                         "closest_similarity, title_len, extra FROM documents WHERE id = ?", (str(id),)).fetchone()
        if r is None:
            raise DocumentNotFoundError(f"no document with id {id!r}")
        out = {"id": int(r[1]) if r[2] else r[1], "published_at": r[3], "source": r[4], "added_at": r[5],
               "cluster": r[6], "similarity_to_keeper": r[7], "match": r[8], "closest": r[9],
               "closest_similarity": r[10], "fields": json.loads(r[12]) if r[12] else {}}
        k = conn.execute("SELECT d.id, d.id_int FROM clusters c JOIN documents d ON d.doc = c.keeper WHERE c.cluster = ?",
                         (r[6],)).fetchone()
        out["keeper"] = (int(k[0]) if k[1] else k[0]) if k else None
        out["is_keeper"] = out["keeper"] == out["id"]
        if text and self.config.store_text:
            t = self._texts_of(conn, [r[0]])[r[0]]
            if r[11]:
                out["title"], t = t[: r[11]], t[r[11] + 1 :]
            out["text"] = t
        return out

    def get_cluster(self, cluster: int, *, texts: bool = False) -> dict:
        conn = self._conn()
        return self._fresh_read(conn, lambda: self._get_cluster(conn, cluster, texts))

    def _get_cluster(self, conn, cluster: int, texts: bool) -> dict:
        conn.execute("BEGIN")
        try:
            r = conn.execute("SELECT cluster, keeper, size, created_at, updated_at, merged_into FROM clusters "
                             "WHERE cluster = ?", (int(cluster),)).fetchone()
            if r is None:
                raise DocumentNotFoundError(f"no cluster {cluster}")
            if r[5] is not None:
                return {"cluster": r[0], "merged_into": r[5], "size": 0, "keeper": None, "members": []}
            rows = conn.execute("SELECT doc, id, id_int, published_at, source, similarity, match, extra FROM documents "
                                "WHERE cluster = ? ORDER BY doc", (r[0],)).fetchall()
            tx = self._texts_of(conn, [x[0] for x in rows]) if texts and self.config.store_text else {}
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        members = []
        keeper = None
        for d, i, ii, t, s, sim, m, extra in rows:
            ident = int(i) if ii else i
            row = {"id": ident, "published_at": t, "source": s, "similarity": sim, "match": m,
                   "is_keeper": d == r[1], "fields": json.loads(extra) if extra else {}}
            if texts and d in tx:
                row["text"] = tx[d]
            if d == r[1]:
                keeper = ident
            members.append(row)
        members.sort(key=lambda x: (not x["is_keeper"]))
        return {"cluster": r[0], "keeper": keeper, "size": r[2], "created_at": r[3], "updated_at": r[4],
                "merged_into": None, "members": members}

    def recent_clusters(self, limit: int = 20, min_size: int = 2) -> list[dict]:
        conn = self._conn()
        rows = conn.execute("SELECT c.cluster, c.size, c.updated_at, d.id, d.id_int, d.source, d.published_at "
                            "FROM clusters c JOIN documents d ON d.doc = c.keeper WHERE c.size >= ? "
                            "ORDER BY c.updated_at DESC, c.cluster DESC LIMIT ?", (min_size, int(limit))).fetchall()
        return [{"cluster": c, "size": s, "updated_at": u, "keeper": int(i) if ii else i, "keeper_source": src,
                 "keeper_published_at": t} for c, s, u, i, ii, src, t in rows]

    def clusters(self, min_size: int = 2):
        """Every cluster of at least `min_size` documents, as rows of dedup's clusters.jsonl:
        ``{"cluster", "keeper", "size", "members": [{"id", "similarity", "match"}]}``."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            cur = conn.execute(
                "SELECT c.cluster, c.keeper, c.size, d.doc, d.id, d.id_int, d.similarity, d.match, d.published_at, d.source "
                "FROM clusters c JOIN documents d ON d.cluster = c.cluster WHERE c.size >= ? ORDER BY c.cluster", (min_size,))
            cur_c = None
            rows: list = []
            for row in cur:
                if row[0] != cur_c and rows:
                    yield _cluster_row(rows, self.config.prefer_source)
                    rows = []
                cur_c = row[0]
                rows.append(row)
            if rows:
                yield _cluster_row(rows, self.config.prefer_source)
        finally:
            conn.execute("COMMIT")

    def check(self) -> dict:
        """Full check: SQLite integrity, every segment's checksum, every stored text's checksum,
        the counts kept in ``meta`` against a recount. Raises :class:`IndexCorruptError` naming
        the first problem; returns counts when sound."""
        conn = self._conn()
        res = conn.execute("PRAGMA integrity_check").fetchall()
        if res != [("ok",)]:
            raise IndexCorruptError(f"SQLite integrity check failed: {res[:5]}")
        self._fresh_read(conn, lambda: self._check_counts(conn))
        return self._fresh_read(conn, lambda: self._check_files_and_texts(conn))

    def _check_counts(self, conn) -> None:
        conn.execute("BEGIN")  # the counts and the rows of one snapshot
        try:
            kept, real = counters.read(conn), counters.recount(conn)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        wrong = [f"{k} {kept[k]:,} (the tables hold {real[k]:,})" for k in counters.NAMES if kept[k] != real[k]]
        if wrong:
            raise IndexCorruptError(f"{self.directory}: the counts kept in meta are wrong: " + "; ".join(wrong)
                                    + " (neardup index check --recount rewrites them)")

    def recount(self) -> dict[str, int]:
        """Count documents, stories, clusters and text bytes from the tables and store the counts
        (the repair for what :meth:`check` reports about them); returns them. Takes the writer
        lock."""
        with self._wlock:
            conn = self._writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                real = counters.recount(conn)
                counters.store(conn, real)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return real

    def _check_files_and_texts(self, conn) -> dict:
        conn.execute("BEGIN")  # one snapshot for the manifest and the documents
        try:
            st = self._state_for(conn)
            for n_, s, c in st.segments:
                self._segcache.get(n_, s, c)
            names = dict(conn.execute("SELECT file, name FROM text_files").fetchall())
            k = 0
            for d, f, o, ln, crc, ident in conn.execute("SELECT doc, text_file, text_offset, text_length, text_crc, "
                                                        "id FROM documents WHERE text_file IS NOT NULL"):
                self._read_text(conn, d, names[f], o, ln, crc, repr(ident))
                k += 1
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        return {"sqlite": "ok", "segments": len(st.segments), "texts": k}


# ---------------------------------------------------------------------- the plan's steps
# Each step has a batch form (numpy: sorts over arrays) and a form for a few documents (lists
# and dicts: the service's single articles, where numpy's cost per call, a few microseconds
# times some sixty calls, was most of the plan). Both make the same decisions
# (tests/index/test_small_plan.py runs every add both ways).

#: groups of at most this many documents take the steps' forms for a few documents
SMALL_PLAN = 16

#: existing_ids of at most this many ids may use the writer's connection (holding the add
#: lock that long is then short)
EXISTING_ON_WRITER = 1000


def _first_in_archive(qi: np.ndarray, adocs: np.ndarray, tok_idx: np.ndarray, n: int) -> np.ndarray:
    """Per batch document, the first (smallest) archive document with its exact key, else -1.
    (qi, adocs): the exact-key hits, qi indexing tok_idx."""
    arch_exact = np.full(n, -1, np.int64)
    if len(qi):
        order = np.lexsort((adocs, qi))
        qi, adocs = qi[order], adocs[order]
        first = np.concatenate(([True], qi[1:] != qi[:-1]))
        arch_exact[tok_idx[qi[first]]] = adocs[first]
    return arch_exact


def _first_in_archive_few(qi: np.ndarray, adocs: np.ndarray, tok_idx: np.ndarray, n: int) -> np.ndarray:
    arch_exact = np.full(n, -1, np.int64)
    best: dict[int, int] = {}
    for q, d in zip(qi.tolist(), adocs.tolist()):
        if d < best.get(q, d + 1):
            best[q] = d
    tl = tok_idx.tolist()
    for q, d in best.items():
        arch_exact[tl[q]] = d
    return arch_exact


def _first_in_batch(ek: np.ndarray, rest: np.ndarray, n: int) -> np.ndarray:
    """Per batch document of `rest`, the first earlier one in `rest` with its exact key, else -1."""
    batch_exact = np.full(n, -1, np.int64)
    if len(rest):  # np.unique's index is a key's first position
        _, first_pos, inv = np.unique(ek[rest], return_index=True, return_inverse=True)
        rep = rest[first_pos][inv.reshape(-1)]
        d_ = rep != rest
        batch_exact[rest[d_]] = rep[d_]
    return batch_exact


def _first_in_batch_few(ek: np.ndarray, rest: np.ndarray, n: int) -> np.ndarray:
    batch_exact = np.full(n, -1, np.int64)
    first: dict[int, int] = {}
    for i, k in zip(rest.tolist(), ek[rest].tolist()):
        j = first.setdefault(k, i)
        if j != i:
            batch_exact[i] = j
    return batch_exact


def _unique_pairs(ci: np.ndarray, cd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (batch document, archive document) once, sorted; both < 2^32."""
    u = np.unique((ci.astype(np.uint64) << np.uint64(32)) | cd.astype(np.uint64))
    return (u >> np.uint64(32)).astype(np.int64), (u & np.uint64(0xFFFFFFFF)).astype(np.int64)


def _unique_pairs_few(ci: np.ndarray, cd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = sorted(set(zip(ci.tolist(), cd.tolist())))
    return np.array([a for a, _ in u], np.int64), np.array([d for _, d in u], np.int64)


def _join(n, meta, ae, arch_exact, be, batch_exact, ci, cd, bp, next_cluster) -> tuple[np.ndarray, dict, int]:
    """Union-find over the batch documents (nodes 0..n-1) and the archive clusters they touch
    (node n + k for the k-th touched cluster, in increasing order), joined by the exact matches
    (`ae` to the archive, `be` in the batch), the verified candidates (ci, cd) and batch pairs
    `bp`. A component's cluster is the smallest archive cluster in it (the others merged into
    it), else a new one; new ones are numbered from `next_cluster` in the order their first
    document comes. Returns (cluster per batch document, merged: absorbed -> target, the next
    free cluster number)."""
    m_docs = np.fromiter(meta.keys(), np.int64, len(meta))
    m_cl = np.fromiter((m["cluster"] for m in meta.values()), np.int64, len(meta))
    o = np.argsort(m_docs)
    m_docs, m_cl = m_docs[o], m_cl[o]

    def cluster_of_arch(d: np.ndarray) -> np.ndarray:
        return m_cl[np.searchsorted(m_docs, d)] if len(d) else np.zeros(0, np.int64)

    c_ae, c_cd = cluster_of_arch(arch_exact[ae]), cluster_of_arch(cd)
    touched = np.unique(np.concatenate([c_ae, c_cd]))
    e = np.concatenate([
        np.stack([ae, n + np.searchsorted(touched, c_ae)], axis=1),
        np.stack([batch_exact[be], be], axis=1),
        np.stack([ci, n + np.searchsorted(touched, c_cd)], axis=1),
        bp]).astype(np.uint32)
    N = n + len(touched)
    labels = np.asarray(neardup.connected_components(N, e), dtype=np.int64) if N else np.zeros(0, np.int64)
    lab_b, lab_t = labels[:n], labels[n:]
    tl, tfirst = np.unique(lab_t, return_index=True)
    ttarget = touched[tfirst]  # touched is sorted: a label's first touched cluster is its smallest
    t_of_touched = ttarget[np.searchsorted(tl, lab_t)] if len(lab_t) else np.zeros(0, np.int64)
    merged = {c: t for c, t in zip(touched.tolist(), t_of_touched.tolist()) if c != t}
    ul, ufirst, uinv = np.unique(lab_b, return_index=True, return_inverse=True)
    pos = np.searchsorted(tl, ul)
    has_t = np.zeros(len(ul), bool)
    if len(tl):
        has_t = tl[np.minimum(pos, len(tl) - 1)] == ul
    comp_cluster = np.empty(len(ul), np.int64)
    comp_cluster[has_t] = ttarget[pos[has_t]]
    newc = np.flatnonzero(~has_t)
    newc = newc[np.argsort(ufirst[newc], kind="stable")]
    comp_cluster[newc] = next_cluster + np.arange(len(newc))
    next_cluster += len(newc)
    cluster_of = comp_cluster[uinv.reshape(-1)] if n else np.zeros(0, np.int64)
    return cluster_of, merged, next_cluster


def _join_few(n, meta, ae, arch_exact, be, batch_exact, ci, cd, bp, next_cluster) -> tuple[np.ndarray, dict, int]:
    to_arch = [(i, meta[d]["cluster"]) for i, d in zip(ae.tolist(), arch_exact[ae].tolist())]
    to_arch += [(i, meta[d]["cluster"]) for i, d in zip(ci.tolist(), cd.tolist())]
    touched = sorted({c for _, c in to_arch})
    node = {c: n + k for k, c in enumerate(touched)}
    e = [(i, node[c]) for i, c in to_arch] + list(zip(batch_exact[be].tolist(), be.tolist())) + bp.tolist()
    labels = np.asarray(neardup.connected_components(n + len(touched), np.array(e, np.uint32).reshape(-1, 2))).tolist()
    target: dict[int, int] = {}  # component -> its smallest touched cluster (touched is sorted)
    for k, c in enumerate(touched):
        target.setdefault(labels[n + k], c)
    merged = {c: target[labels[n + k]] for k, c in enumerate(touched) if target[labels[n + k]] != c}
    fresh: dict[int, int] = {}
    cluster_of = []
    for lab in labels[:n]:
        c = target.get(lab)
        if c is None:
            c = fresh.get(lab)
            if c is None:
                c = fresh[lab] = next_cluster
                next_cluster += 1
        cluster_of.append(c)
    return np.array(cluster_of, np.int64), merged, next_cluster


def _group(cluster_of: np.ndarray, doc_nums: np.ndarray, first_new: int) -> tuple[tuple, dict[int, list[int]]]:
    """The batch documents grouped by cluster: the new clusters of one document (a story of its
    own: its own keeper, no rule to run) as (clusters sorted, their document), and every other
    cluster's batch documents in batch order."""
    n = len(cluster_of)
    by_cl = np.argsort(cluster_of, kind="stable")
    cs = cluster_of[by_cl]
    g_start = np.flatnonzero(np.concatenate(([True], cs[1:] != cs[:-1]))) if n else np.zeros(0, np.int64)
    g_cl = cs[g_start]
    g_size = np.diff(np.concatenate((g_start, [n])))
    single = (g_cl >= first_new) & (g_size == 1)
    singles = (g_cl[single], doc_nums[by_cl[g_start[single]]])
    batch_by_cluster: dict[int, list[int]] = {}
    by_cl_l = by_cl.tolist()
    for c, s0, sz in zip(g_cl[~single].tolist(), g_start[~single].tolist(), g_size[~single].tolist()):
        batch_by_cluster[c] = by_cl_l[s0 : s0 + sz]
    return singles, batch_by_cluster


def _group_few(cluster_of: np.ndarray, doc_nums: np.ndarray, first_new: int) -> tuple[tuple, dict[int, list[int]]]:
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(cluster_of.tolist()):
        groups.setdefault(c, []).append(i)
    dn = doc_nums.tolist()
    one = [c for c in sorted(groups) if c >= first_new and len(groups[c]) == 1]
    singles = (np.array(one, np.int64), np.array([dn[groups[c][0]] for c in one], np.int64))
    return singles, {c: groups[c] for c in sorted(groups) if not (c >= first_new and len(groups[c]) == 1)}


def _pair_rows(ci: np.ndarray, cd: np.ndarray, bp: np.ndarray) -> tuple[np.ndarray, list, list, np.ndarray]:
    """The items a verification needs, batch documents (sorted) then archive ones (sorted), and
    each candidate pair, (ci, cd) then `bp`, as a pair of rows of that list of items. Returns
    (batch documents as an array, as a list, archive documents, the pairs of rows)."""
    batch_need = np.unique(np.concatenate([ci, bp.reshape(-1)]))
    arch_need = np.unique(cd)
    nb = len(batch_need)
    pa = np.stack([np.searchsorted(batch_need, ci), nb + np.searchsorted(arch_need, cd)], axis=1).reshape(-1, 2)
    pb = np.searchsorted(batch_need, bp).reshape(-1, 2)
    return batch_need, batch_need.tolist(), arch_need.tolist(), np.concatenate([pa, pb])


def _pair_rows_few(ci: np.ndarray, cd: np.ndarray, bp: np.ndarray) -> tuple[np.ndarray, list, list, np.ndarray]:
    bpl = bp.tolist()
    bl = sorted(set(ci.tolist()).union(x for p in bpl for x in p))
    al = sorted(set(cd.tolist()))
    row = {x: k for k, x in enumerate(bl)}
    row_a = {d: len(bl) + k for k, d in enumerate(al)}
    pairs = [(row[i], row_a[d]) for i, d in zip(ci.tolist(), cd.tolist())] + [(row[a], row[b]) for a, b in bpl]
    return np.array(bl, np.int64), bl, al, np.array(pairs, np.int64).reshape(-1, 2)


def _new_clusters(singles: tuple[np.ndarray, np.ndarray], multi: list[tuple[int, int, int]]) -> tuple[list, list, list]:
    """The rows of an add's new clusters, in increasing order (appended to the table's B-tree):
    the singles (a new document, its own keeper) and `multi`, (cluster, keeper, size) of the new
    clusters of several documents. Returns the columns cluster, keeper, size."""
    ncl = np.concatenate([singles[0], np.array([r[0] for r in multi], np.int64)])
    nkeep = np.concatenate([singles[1], np.array([r[1] for r in multi], np.int64)])
    nsize = np.concatenate([np.ones(len(singles[0]), np.int64), np.array([r[2] for r in multi], np.int64)])
    o = np.argsort(ncl, kind="stable")
    return ncl[o].tolist(), nkeep[o].tolist(), nsize[o].tolist()


def _new_clusters_few(singles: tuple[np.ndarray, np.ndarray], multi: list[tuple[int, int, int]]) -> tuple[list, list, list]:
    rows = sorted([(c, k, 1) for c, k in zip(singles[0].tolist(), singles[1].tolist())] + multi)
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _best_pairs(tgt: np.ndarray, sims: np.ndarray) -> list[int]:
    """Per target, the position of its most similar pair (the first of equals)."""
    o = np.lexsort((np.arange(len(tgt)), -sims, tgt))
    return o[np.concatenate(([True], tgt[o][1:] != tgt[o][:-1]))].tolist()


def _best_pairs_few(tgt: np.ndarray, sims: np.ndarray) -> list[int]:
    best: dict[int, int] = {}
    sl = sims.tolist()
    for p, i in enumerate(tgt.tolist()):
        b = best.get(i)
        if b is None or sl[p] > sl[b]:
            best[i] = p
    return list(best.values())


def _cluster_row(rows, prefer) -> dict:
    keeper_doc = rows[0][1]
    keeper = next((int(r[4]) if r[5] else r[4]) for r in rows if r[3] == keeper_doc)
    others = [r for r in rows if r[3] != keeper_doc]
    # members in the keeper rule's order, as dedup lists them
    m = len(others)
    if m:
        ids = [r[4] for r in others]
        times = np.array([_nan(r[8]) for r in others], dtype=np.float64)
        id_rank = np.empty(m, np.int64)
        id_rank[np.argsort(np.array(ids, dtype=str), kind="stable")] = np.arange(m)
        ordered, _ = pick_keepers(np.zeros(m, np.int64), np.arange(m), times, source_ranks([r[9] for r in others], prefer), id_rank)
        others = [others[int(i)] for i in ordered]
    return {"cluster": rows[0][0], "keeper": keeper, "size": len(rows),
            "members": [{"id": int(r[4]) if r[5] else r[4], "similarity": r[6], "match": r[7]} for r in others]}


def _probe(cfg: IndexConfig) -> str:
    """The signature of a fixed text, stored at creation and compared on every open: a build
    that signs differently is refused instead of silently mixing signatures."""
    sig = np.asarray(Signer(cfg.options()).batch([PROBE_TEXT]))[0]
    return np.asarray(sig).astype("<u4" if cfg.method == "minhash" else "<u8").tobytes().hex()


class _Job:
    """A function run in a thread of its own; ``result()`` waits and returns or raises."""

    def __init__(self, fn) -> None:
        self._fn, self._out, self._exc = fn, None, None
        self._thread = threading.Thread(target=self._run, name="neardup-index-job", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._out = self._fn()
        except BaseException as exc:  # handed to result()
            self._exc = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self):
        self._thread.join()
        if self._exc is not None:
            raise self._exc
        return self._out


def _cat(a, b):
    if len(b[0]) == 0:
        return a
    if len(a[0]) == 0:
        return b
    return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])


def _nan(x) -> float:
    return math.nan if x is None else float(x)


def _few(xs: list, k: int = 5) -> str:
    s = ", ".join(repr(x) for x in xs[:k])
    return s + (f" and {len(xs) - k} more" if len(xs) > k else "")
