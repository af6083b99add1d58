"""The batch dedup job: the guide's pipeline from files to clusters, keepers and reports.

Passes over the input:

1. scan (batches of ``batch_size``): check each record, normalise it and hash it for the exact
   pass; documents whose normalised text was already seen join that group at once, with no
   signature work; the others get a signature. Kept per document: id, time, source, where it
   is (input, line), the exact key and (for first copies) the signature. No text is kept.
2. candidates from the signatures alone (LSH bands or SimHash block tables).
3. verification: with ``verify="exact"`` the texts of the candidate documents only are read
   again and shingled; every candidate pair gets its exact Jaccard (or containment).
4. union-find over exact and verified pairs; the keeper rule picks one document per cluster.
5. outputs (clusters, pairs, kept records, report), each written atomically; the kept records
   are streamed from the input a last time.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neardup import _core, _sets
from neardup.engines.local.buckets import LargeBuckets, spanning_pairs
from neardup.engines.local.docs import DocTable
from neardup.engines.local.memory import (
    BATCHES_IN_FLIGHT,
    CLUSTER_BYTES_PER_DOC,
    FirstPassGuard,
    MemoryBudget,
    deep_size,
    id_table_bytes,
    map_capacity,
    release_freed,
)
from neardup.engines.local.reread import set_bytes_estimate, verify_reread, working_bytes
from neardup.engines.local.store import RowStore
from neardup.errors import RecordError
from neardup.graph import connected_components
from neardup.io.readers import Source, open_sources, read_buffer_bytes
from neardup.io.records import check_record
from neardup.io.writers import atomic_open, staged, writable_tree
from neardup.stages.candidates import (
    curve_table,
    hamming_pairs,
    lsh_pairs,
    min_sort_bytes,
    pairs_from_keys,
)
from neardup.stages.handoff import put_until_stopped, received
from neardup.stages.keepers import pick_keepers
from neardup.stages.kept import Alternates, write_outputs
from neardup.stages.options import DedupOptions
from neardup.stages.outputs import DedupResult, check_tmp_dir, out_path, refuse_input_outputs, stale_outputs
from neardup.stages.report import StageLog, package_version, peak_rss_mb
from neardup.stages.signer import Signer, exact_keys
from neardup.stages.spill import join_freeing
from neardup.stages.verify import estimate_pairs

__all__ = ["run", "MAX_SKIPPED_LISTED"]

MAX_SKIPPED_LISTED = 1000


def _progress(enabled: bool, desc: str, total: int | None = None, unit: str = "doc"):
    if enabled:
        try:
            from tqdm import tqdm

            return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, leave=False)
        except ImportError:  # pragma: no cover
            pass
    return None


def run(inputs: Any, out: str | bytes | os.PathLike | None, opts: DedupOptions) -> DedupResult:
    opts.check()
    out = out_path(out)
    t_start = time.perf_counter()
    log = StageLog()
    check_tmp_dir(opts.tmp_dir)  # (before stdin is spooled)
    sources = open_sources(inputs, opts.steps.read_block_bytes)
    try:
        if out is not None:
            refuse_input_outputs(sources, out, opts.output_format)
        return _run(sources, out, opts, log, t_start)
    finally:
        for s in sources:
            s.close()


@dataclass
class _Tally:
    """What the first pass counts besides documents (report.json): bad records (skipped, the
    first MAX_SKIPPED_LISTED listed), unreadable times (kept as missing, listed) and documents
    without tokens."""

    skipped: list[dict] = field(default_factory=list)
    n_skipped: int = 0
    bad_times: list[dict] = field(default_factory=list)
    n_bad_times: int = 0
    no_tokens: int = 0


@dataclass
class _Run:
    """One run: its inputs and options, the memory budget, the stage log, and the per-document
    tables the first pass fills (in parts, one per batch; joined when it ends: :class:`_Tables`)."""

    sources: list[Source]
    out: Any
    opts: DedupOptions
    log: StageLog
    t_start: float
    limits: Any  # (strict_json: a NaN or an infinity written in JSON text is a bad record)
    mem: MemoryBudget
    docs: DocTable
    per_input: list[dict]
    signer: Signer
    # exact key -> first document with it; in a list so that the first pass can drop the
    # only reference when it ends (the map is the largest thing the first pass frees)
    first_seen: list
    total_bytes: int | None  # the inputs' bytes, when every one is a plain file
    exact_key_parts: list[np.ndarray] = field(default_factory=list)
    rep_of_parts: list[np.ndarray] = field(default_factory=list)  # per document: the first document with its exact key
    ntok_parts: list[np.ndarray] = field(default_factory=list)  # per document: tokens (sizes the re-read sets)
    sig_doc_parts: list[np.ndarray] = field(default_factory=list)  # document index of each signature row
    # What pass 1 keeps per signed document: with exact verification the signatures are only
    # needed for their LSH band keys, so only the keys are kept (8 bytes per band instead of 4
    # per permutation); estimates need the whole signature; SimHash keeps its fingerprint.
    band_rows: tuple[int, int] | None = None
    keep_keys: bool = False
    store: RowStore = field(init=False)  # (set once the first pass's guard exists: it decides spills)
    tally: _Tally = field(default_factory=_Tally)

    @property
    def fields(self):
        return self.opts.fields


def _run(sources: list[Source], out, opts: DedupOptions, log: StageLog, t_start: float) -> DedupResult:
    run = _new_run(sources, out, opts, log, t_start)
    needs = _FirstPassNeeds(run)
    guard = needs.guard = FirstPassGuard(
        run.mem,
        needs.tables,
        needs.exact_map,
        run.total_bytes,
        needs.later,
        count=lambda: len(run.docs),
        work=needs.batch_work,
        tables_at=needs.tables_at,
        lead_bytes=opts.steps.read_block_bytes,
    )
    store = run.store = _row_store(run, guard.rows_fit if run.mem.limited else None)
    run.mem.held = lambda: needs.tables() + store.ram_bytes
    run.mem.spillable = lambda: store.ram_bytes
    try:
        return _run_stored(run, guard)
    finally:
        store.close()


def _new_run(sources: list[Source], out, opts: DedupOptions, log: StageLog, t_start: float) -> _Run:
    """The run's state before the first pass: the budget (its baseline measured after pyarrow's
    warm-up), the empty tables, the signer."""
    limits = opts.limits()
    if opts.memory_limit is not None and out is not None and opts.output_format == "parquet":
        from neardup.stages.parquet_out import warm_up

        warm_up()  # pyarrow's one-off ~50 MiB, in the baseline rather than the write stage's peak
    assert not isinstance(opts.memory_limit, str)  # (bytes once opts.check() has parsed it)
    mem = MemoryBudget(opts.memory_limit)
    docs = DocTable()
    per_input = [{"path": s.name, "format": s.format, "records": 0, "skipped": 0} for s in sources]
    signer = Signer(opts)
    first_seen = [_core.FirstSeen()]
    sizes = [s.size_bytes() for s in sources]
    known = [x for x in sizes if x is not None]
    total_bytes = sum(known) if len(known) == len(sizes) else None
    return _Run(sources, out, opts, log, t_start, limits, mem, docs, per_input, signer, first_seen, total_bytes)


def _row_store(run: _Run, rows_fit) -> RowStore:
    """The store of the rows pass 1 keeps per signed document (band keys, signatures or
    fingerprints); `rows_fit` decides, under a limit, whether they stay in memory."""
    opts = run.opts
    if opts.settings.method == "minhash":
        run.band_rows = band_rows = opts.settings.band_shape()
        run.keep_keys = keep_keys = opts.settings.verify == "exact"
        return RowStore(
            band_rows[0] if keep_keys else opts.settings.num_perm,
            np.uint64 if keep_keys else np.uint32,
            rows_fit,
            opts.tmp_dir,
            "band-keys" if keep_keys else "signatures",
        )
    run.keep_keys = False
    return RowStore(1, np.uint64, rows_fit, opts.tmp_dir, "fingerprints", flat=True)


class _FirstPassNeeds:
    """What the first pass's guard (memory.FirstPassGuard) is told: the bytes of the tables now
    and at the end of the input, of the batches in flight, and what the later stages need."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.guard: FirstPassGuard | None = None  # (set once made: it is given these methods)
        self.top_ntok: list = [np.zeros(0, np.uint32), 0]  # the batch_size largest token counts so far, parts merged

    def exact_map(self) -> int:
        first_seen = self.run.first_seen
        return first_seen[0].heap_bytes() if first_seen else 0

    def tables(self) -> int:
        # the per-document tables, the exact pass's map, the exact key / first copy / token
        # count arrays (20 bytes a document) and the document of each signed row (8)
        docs = self.run.docs
        return docs.nbytes() + self.exact_map() + 20 * len(docs) + 8 * sum(len(p) for p in self.run.sig_doc_parts)

    def later(self, scale: float) -> float:
        # the larger of what the candidates stage needs (the smallest band sort, twice for its
        # pairs, and with estimates the band keys it forms from the signatures) and what a
        # re-read needs (a batch of records and their sets, the largest set); the Parquet
        # block and the estimate work are kept from the first pass on
        opts, guard, band_rows = self.run.opts, self.guard, self.run.band_rows
        assert guard is not None
        signed = int(scale * sum(len(p) for p in self.run.sig_doc_parts))
        b = band_rows[0] if band_rows else 1
        keys = 8 * b * signed if opts.settings.method == "minhash" and opts.settings.verify != "exact" else 0
        # a re-read's batch is at most a batch of the largest documents so far; it is taken
        # only from the candidates' documents, unknown yet, so it is bounded by what the
        # first pass's own batches in flight take (texts, kernels' outputs, reader's buffer)
        in_flight = min(BATCHES_IN_FLIGHT * guard.batch_bytes, guard.text_bytes * scale) + self.batch_work(
            guard.batch_docs
        )
        return (
            max(keys + 2 * min_sort_bytes(signed, b), min(self.reread_work(), in_flight))
            + self.parquet_block(scale)
            + self.estimate_work()
        )

    def reread_work(self) -> int:
        # verification and the keepers' similarities re-read documents a batch at a time
        # (reread.working_bytes, from the largest documents: here the largest so far)
        opts, ntok_parts, top_ntok = self.run.opts, self.run.ntok_parts, self.top_ntok
        if opts.settings.verify != "exact" or not ntok_parts:
            return 0
        new = ntok_parts[top_ntok[1] :]
        if new:
            both = np.concatenate([top_ntok[0], *new])
            m = min(len(both), opts.batch_size)
            top_ntok[0], top_ntok[1] = np.partition(both, len(both) - m)[-m:], len(ntok_parts)
        big = top_ntok[0]
        return working_bytes(big, 0, opts.batch_size, opts.settings.k, read_buffer_bytes(self.run.sources)) + (
            int(set_bytes_estimate(big, opts.settings.k).max()) if len(big) else 0
        )

    def estimate_work(self) -> int:
        # --verify estimate: the clusters stage copies a chunk of pairs' signature rows out of
        # the rows (_estimate: ESTIMATE_CHUNK pairs, two rows each at most), the estimate's own
        # temporaries take as much again, and a spill map's pages stay resident between drops
        # (RowStore.rows_at: 8 MiB). Not kept, a run at 180M peaked at 180.4 MiB (the stage
        # grew 15.5 MiB past the first pass)
        opts = self.run.opts
        if opts.settings.method != "minhash" or opts.settings.verify != "estimate":
            return 0
        return 2 * (2 * ESTIMATE_CHUNK * opts.settings.num_perm * 4) + (8 << 20)

    def parquet_block(self, scale: float) -> int:
        # kept.parquet is written a block of records at a time (parquet_out.block_bytes): room
        # kept for it from the start, or the first pass leaves too little and the write stage
        # passes the limit (it has nothing to spill)
        run = self.run
        if run.out is None or run.opts.output_format != "parquet":
            return 0
        from neardup.stages.parquet_out import block_bytes  # (pyarrow: imported only for Parquet)

        return block_bytes(mean_record_bytes(run.total_bytes, len(run.docs) * scale), run.opts.steps.parquet_block)

    def batch_work(self, batch_docs: int) -> int:
        # the batches in flight besides their texts: their lists of document numbers (an int
        # object and a pointer each), and for the one in hand the exact pass's keys, token
        # counts and first copies (24 bytes a document), its signatures and band keys; and the
        # reader's buffer
        opts, band_rows = self.run.opts, self.run.band_rows
        sig = 4 * opts.settings.num_perm if opts.settings.method == "minhash" else 8
        keys = 8 * band_rows[0] if band_rows is not None and opts.settings.verify == "exact" else 0
        return (
            BATCHES_IN_FLIGHT * 40 * batch_docs + batch_docs * (24 + sig + keys) + read_buffer_bytes(self.run.sources)
        )

    def tables_at(self, final: float) -> tuple[int, int]:
        # tables() once the tables hold `final` documents: the arrays in proportion, the id
        # table and the exact pass's map at the capacity they will have grown to (the
        # reader adds documents ahead of the batch in hand: the tables hold len(docs))
        # (the signed rows and the map's keys are of the batches processed: guard.docs)
        docs, first_seen, guard = self.run.docs, self.run.first_seen, self.guard
        assert guard is not None
        n, done = max(1, len(docs)), max(1, guard.docs)
        ids = docs.ids.heap_bytes()
        linear = (docs.nbytes() - ids + 20 * n) * final / n + 8 * sum(
            len(p) for p in self.run.sig_doc_parts
        ) * final / done
        fs = map_capacity(len(first_seen[0]) * final / done) * 16 if first_seen else 0
        # the id bytes now, from the mean length of 64 ids spread over the table
        sample = docs.ids.take(np.linspace(0, len(docs) - 1, min(64, len(docs))).astype(np.int64))
        id_bytes = sum(len(x.encode()) for x in sample) / max(1, len(sample)) * len(docs)
        return int(linear) + id_table_bytes(ids, len(docs), final, id_bytes) + fs, fs


def _run_stored(run: _Run, guard: FirstPassGuard) -> DedupResult:
    """The stages after the setup, in order; each takes what the earlier ones left."""
    _first_pass(run, guard)
    t = _join_tables(run)
    cand = _candidates(run, t)
    ver = _verify(run, t, cand)
    cl = _clusters(run, t, ver)
    # the others of cluster c are ordered[starts[c] + 1 : ends[c]], and others[i] is the
    # (i + c + 1)-th document of `ordered` (each cluster puts its keeper first): so the i-th
    # other sits at ordered position i + c + 1, with no per-document lookup table
    alternates = Alternates(run.docs, cl.ordered, cl.starts, cl.ends)
    kept_mask = np.ones(t.n, dtype=bool)
    kept_mask[cl.others] = False
    report = _report(run, t, cand, ver, cl, kept_mask)
    result, rows_out = _result(run, t, ver, cl, report, kept_mask)
    if run.out is None:
        _finish_report(report, run.log, run.t_start)
        return result
    _write(run, report, kept_mask, alternates, rows_out)
    return result


# ---- pass 1: scan, exact pass, signatures ---------------------------------------------------


def _first_pass(run: _Run, guard: FirstPassGuard) -> None:
    scan = _FirstPass(run, guard)
    scan.read()
    scan.log_stages()
    run.first_seen.clear()  # the exact pass's map: its only reference
    release_freed()


class _FirstPass:
    """A reader thread parses and checks records (Python, holding the GIL) while this thread
    runs the exact-pass and signature kernels on the previous batch (Rust, GIL released), so
    the two overlap. Batches go through a queue of two."""

    def __init__(self, run: _Run, guard: FirstPassGuard) -> None:
        self.run = run
        self.guard = guard
        self.t_exact = 0.0
        self.t_sig = 0.0
        total_bytes = run.total_bytes
        # With every input a plain file, progress counts bytes, so the bar has a rate and an ETA.
        self.bar = _progress(
            run.opts.progress, "scan + signatures", total=total_bytes, unit="B" if total_bytes else "doc"
        )
        self.batches: queue.Queue = queue.Queue(maxsize=2)
        self.stop = threading.Event()
        self.read_clock = {"wall": 0.0, "cpu": 0.0, "blocked": 0.0}
        self.end = object()

    def read(self) -> None:
        """The first pass: the reader thread, and the kernels on each batch it hands over."""
        run = self.run
        with run.log.stage("read") as st_read:
            thread = threading.Thread(target=self.reader, name="neardup-reader", daemon=True)
            thread.start()
            try:
                for item in received(self.batches, self.end):
                    self.consume(*item)
            finally:
                self.stop.set()
                while thread.is_alive():  # let a blocked reader see `stop`
                    try:
                        self.batches.get(timeout=0.05)
                    except queue.Empty:
                        pass
                thread.join()
            st_read.count = len(run.docs)
        if self.bar is not None:
            self.bar.close()

    def fail(self, err: RecordError, src_i: int) -> None:
        run, tally = self.run, self.run.tally
        if run.opts.on_error == "stop":
            raise err
        tally.n_skipped += 1
        run.per_input[src_i]["skipped"] += 1
        if len(tally.skipped) < MAX_SKIPPED_LISTED:
            tally.skipped.append(err.as_dict())

    def put(self, item) -> bool:
        t0 = time.perf_counter()
        if put_until_stopped(self.batches, item, self.stop):
            self.read_clock["blocked"] += time.perf_counter() - t0
            return True
        return False

    def reader(self) -> None:
        w0, c0 = time.perf_counter(), time.thread_time()
        done_bytes = 0
        try:
            for src_i, src in enumerate(self.run.sources):
                if not self.read_source(src_i, src, done_bytes):
                    return
                done_bytes += src.bytes_read
            self.put(self.end)
        except BaseException as exc:  # handed to the main thread, which raises it
            self.put(exc)
        finally:
            self.read_clock["wall"] = time.perf_counter() - w0
            self.read_clock["cpu"] = time.thread_time() - c0

    def read_source(self, src_i: int, src: Source, done_bytes: int) -> bool:
        """Batches of one input's records onto the queue; False when told to stop."""
        run, fail, put, stop = self.run, self.fail, self.put, self.stop
        fields, limits, docs = run.fields, run.limits, run.docs
        batch_texts: list[str] = []
        batch_docs: list[int] = []
        name = src.name
        add = docs.add
        batch_size = run.opts.batch_size
        d = len(docs)
        n_before = d
        for recno, rec in src.records():
            if stop.is_set():
                return False
            if type(rec) is not dict:
                fail(rec, src_i)
                continue
            try:
                c = check_record(rec, fields, limits, name, recno)
            except RecordError as err:
                fail(err, src_i)
                continue
            prev = add(c.key, c.id is not c.key, c.time, c.source, src_i, recno)
            if prev >= 0:
                fail(
                    RecordError(
                        name,
                        recno,
                        f"duplicate id {c.key!r} (first at {run.sources[docs.src[prev]].name}:{docs.recno[prev]})",
                        field=fields.id,
                    ),
                    src_i,
                )
                continue
            if c.time_error is not None:
                self.bad_time(name, recno, c.time_error)
            batch_texts.append(c.text)
            batch_docs.append(d)
            d += 1
            if len(batch_texts) >= batch_size:
                if not put((batch_texts, batch_docs, done_bytes + src.bytes_read)):
                    return False
                batch_texts, batch_docs = [], []
        run.per_input[src_i]["records"] = d - n_before
        return not batch_texts or put((batch_texts, batch_docs, done_bytes + src.bytes_read))

    def bad_time(self, name: str, recno: int, reason: str) -> None:
        tally = self.run.tally
        tally.n_bad_times += 1
        if len(tally.bad_times) < MAX_SKIPPED_LISTED:
            tally.bad_times.append({"file": name, "line": recno, "field": self.run.fields.time, "reason": reason})

    def consume(self, batch_texts: list[str], batch_docs: list[int], bytes_done: int) -> None:
        """The exact pass and the signatures of one batch, then the memory guard and progress."""
        t0 = time.perf_counter()
        bdocs, new_rows = self.exact(batch_texts, batch_docs)
        t1 = time.perf_counter()
        self.t_exact += t1 - t0
        if len(new_rows):
            self.sign(batch_texts, bdocs, new_rows)
        self.t_sig += time.perf_counter() - t1
        run, guard, bar = self.run, self.guard, self.bar
        guard.update(
            batch_docs[-1] + 1,
            bytes_done if run.total_bytes else None,
            sum(map(sys.getsizeof, batch_texts)) if run.mem.limited else 0,
            len(batch_texts),
        )
        guard.check(run.store.ram_bytes)
        if bar is not None:
            if run.total_bytes:
                bar.set_postfix_str(f"{len(run.docs):,} docs", refresh=False)
                bar.update(bytes_done - bar.n)
            else:
                bar.update(len(batch_texts))

    def exact(self, batch_texts: list[str], batch_docs: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Exact keys, first copies and token counts of a batch; (its document numbers, the
        rows of its first copies: the documents to sign)."""
        run = self.run
        keys, ntok = exact_keys(batch_texts, run.opts.threads, run.opts.settings.unit)
        bdocs = np.asarray(batch_docs, dtype=np.int64)
        rep = bdocs.copy()  # a document without tokens has nothing to compare: its own group
        has = ntok > 0
        rep[has] = run.first_seen[0].first(np.ascontiguousarray(keys[has]), np.ascontiguousarray(bdocs[has]))
        new_rows = np.flatnonzero(has & (rep == bdocs))
        run.tally.no_tokens += int((~has).sum())
        run.exact_key_parts.append(np.where(has, keys, np.uint64(0)))
        run.rep_of_parts.append(rep)
        run.ntok_parts.append(np.minimum(ntok, np.uint64(2**32 - 1)).astype(np.uint32))
        return bdocs, new_rows

    def sign(self, batch_texts: list[str], bdocs: np.ndarray, new_rows: np.ndarray) -> None:
        run = self.run
        sig = run.signer.batch([batch_texts[i] for i in new_rows.tolist()])
        if run.keep_keys:
            assert run.band_rows is not None  # (minhash)
            sig = _core.band_keys(sig, run.band_rows[0], run.band_rows[1], run.opts.threads)
        run.store.append(sig)
        run.sig_doc_parts.append(bdocs[new_rows])

    def log_stages(self) -> None:
        """The read stage's figures are the reader thread's; the exact and signature stages,
        overlapped with it, get their kernels' time; the whole pass is the log's `scan`."""
        log, read_clock = self.run.log, self.read_clock
        scan = log.stages[-1]
        scan_wall, scan_cpu = scan.seconds, scan.cpu_seconds
        scan.seconds = max(0.0, read_clock["wall"] - read_clock["blocked"])
        scan.cpu_seconds = read_clock["cpu"]
        scan.note = "parse and check records (a thread, overlapping the next two stages)"
        Stage = type(scan)
        log.stages.append(
            Stage("exact", self.t_exact, None, None, "normalise and hash; group identical texts", peak_rss_mb())
        )
        log.stages.append(
            Stage(
                "signatures",
                self.t_sig,
                None,
                None,
                ("band keys kept" if self.run.keep_keys else "signatures kept")
                + (", spilled to a file" if self.run.store.spilled else ", in memory"),
                peak_rss_mb(),
            )
        )
        log.scan = {  # type: ignore[attr-defined]
            "seconds": round(scan_wall, 4),
            "cpu_seconds": round(scan_cpu or 0.0, 4),
            "note": "the whole first pass (read, exact, signatures overlap)",
        }


@dataclass
class _Tables:
    """The first pass's tables joined, one entry per document (per signed row: `sig_doc`), and
    report.json's "memory", which the later stages add to."""

    n: int
    exact_key: np.ndarray
    rep_of: np.ndarray
    ntok_all: np.ndarray
    rows: np.ndarray | None  # the store's rows, for the candidates stage only (then None)
    sig_doc: np.ndarray
    held: list[np.ndarray]  # what later stages account (mem.held)
    exact_dups: np.ndarray  # the documents that are exact copies of an earlier one
    exact_groups: int
    times: np.ndarray
    memory: dict

    def set_size(self, k: int):
        """`size(docs)` for a re-read: the estimated bytes of those documents' shingle sets."""
        ntok_all = self.ntok_all

        def set_size(which: np.ndarray) -> np.ndarray:
            return set_bytes_estimate(ntok_all[which], k)

        return set_size


def _join_tables(run: _Run) -> _Tables:
    docs, store, mem, opts, log = run.docs, run.store, run.mem, run.opts, run.log
    n = len(docs)
    exact_key = _join(run.exact_key_parts, np.uint64)
    rep_of = _join(run.rep_of_parts, np.int64)
    ntok_all = _join(run.ntok_parts, np.uint32)
    rows = store.finish()
    sig_doc = _join(run.sig_doc_parts, np.int64)
    held: list[np.ndarray] = [exact_key, rep_of, ntok_all, sig_doc]  # what later stages account
    mem.held = lambda: docs.nbytes() + store.ram_bytes + sum(a.nbytes for a in held)
    exact_dups = np.flatnonzero(rep_of != np.arange(n))
    exact_groups = len(_sets.unique(rep_of[exact_dups]))
    log.stages[-2].count = int(len(exact_dups))
    log.stages[-1].count = int(len(sig_doc))
    times = docs.times_array()
    memory = {
        "limit_bytes": opts.memory_limit,
        "per_document_bytes": round(docs.nbytes() / max(n, 1) + 8 + 8 + 4, 1),
        "kept_rows": "band keys"
        if run.keep_keys
        else ("signatures" if opts.settings.method == "minhash" else "fingerprints"),
        "row_bytes": store.row_bytes,
        "rows_spilled_to_disk": store.spilled,
        "baseline_rss_bytes": mem.base if mem.limited else None,
        "stage_shares": mem.checks,  # what each stage was given, from what was resident
    }
    return _Tables(n, exact_key, rep_of, ntok_all, rows, sig_doc, held, exact_dups, exact_groups, times, memory)


# ---- candidates ------------------------------------------------------------------------------


@dataclass
class _Candidates:
    docs: np.ndarray  # candidate pairs, document index of each side
    hamming: np.ndarray | None  # (SimHash) each pair's distance
    lsh_info: dict | None
    large: LargeBuckets  # LSH buckets above opts.large_bucket


def _candidates(run: _Run, t: _Tables) -> _Candidates:
    lsh_info: dict | None = None
    hamming = None
    large_rows: list[np.ndarray] = []  # LSH buckets above opts.large_bucket, as signature rows
    with run.log.stage("candidates") as st:
        if run.opts.settings.method == "minhash":
            lsh_info = _lsh_info(run)
            cand = _band_pairs(run, t, large_rows)
        else:
            assert t.rows is not None  # (until the stage ends)
            cand, hamming = hamming_pairs(t.rows, run.opts.settings.max_distance, run.opts.threads)
        st.count = int(len(cand))
    t.rows = None  # later stages take them from the store: spilled if a stage needs the room
    if run.keep_keys:  # band keys are for the candidate stage only: free them (or their file) now
        run.store.close()
    else:
        run.mem.spill = run.store.spill_now
    # candidate pairs in signature-row space; document index of each side
    cand_docs = t.sig_doc[cand.astype(np.int64)] if len(cand) else np.zeros((0, 2), np.int64)
    del cand
    t.held.append(cand_docs)
    lb = LargeBuckets(
        np.r_[0, np.cumsum([len(m) for m in large_rows])].astype(np.int64),
        t.sig_doc[np.concatenate(large_rows).astype(np.int64)] if large_rows else np.zeros(0, np.int64),
    )
    del large_rows
    t.held.append(lb.members)
    return _Candidates(cand_docs, hamming, lsh_info, lb)


def _lsh_info(run: _Run) -> dict:
    from neardup import lsh

    assert run.band_rows is not None  # (minhash)
    b, r = run.band_rows
    s = run.opts.settings
    return {
        "bands": b,
        "rows": r,
        "rule": "pinned" if s.bands is not None else f"recall >= {s.recall} at the threshold",
        "p_at_threshold": float(lsh.candidate_probability(s.threshold, b, r)),
        "curve": curve_table(b, r),
    }


def _band_pairs(run: _Run, t: _Tables, large_rows: list[np.ndarray]) -> np.ndarray:
    """MinHash candidates: the pairs sharing a band, from the band keys (or the signatures)."""
    assert run.band_rows is not None and t.rows is not None  # (minhash; before the stage ends)
    b, r = run.band_rows
    opts = run.opts
    sort_info: dict = {"external_sort": False}
    # the sort gets half of what is free (the pairs it finds take the other half);
    # estimates form their band keys first (8 bytes per band per row)
    keys_bytes = 0 if run.keep_keys else 8 * b * len(t.rows)
    free = run.mem.share(
        "candidates",
        CLUSTER_BYTES_PER_DOC * t.n,
        keys_bytes + 2 * min_sort_bytes(len(t.rows), b),
        "its band keys and the smallest external sort",
    )
    sort_budget = None if free is None else (free - keys_bytes) // 2
    big: dict[str, Any] = dict(large_bucket=opts.large_bucket, large=large_rows if opts.large_bucket else None)
    if run.keep_keys:
        # spilled keys are read back in chunks by the external sort (never mapped whole)
        cand = pairs_from_keys(t.rows, sort_budget, opts.tmp_dir, sort_info, external=run.store.spilled, **big)
    else:
        cand = lsh_pairs(t.rows, b, r, sort_budget, opts.tmp_dir, sort_info, **big)
    t.memory["band_sort"] = sort_info
    return cand


# ---- verification ----------------------------------------------------------------------------


@dataclass
class _Verified:
    near: np.ndarray  # the verified pairs (document indices), by (a, b)
    near_sims: np.ndarray
    large_info: dict | None
    reread_info: dict  # the re-reads' figures (report.json's memory.verify_reread)


def _verify(run: _Run, t: _Tables, cand: _Candidates) -> _Verified:
    opts = run.opts
    reread_info: dict = {}
    with run.log.stage("verify") as st:
        if opts.settings.verify == "exact":
            sims, reread_info = _verify_exact(run, t, cand.docs)
            ok = sims >= opts.settings.threshold
        elif opts.settings.method == "minhash":
            sims = _estimate(run.store, _rows_of(t.sig_doc, t.n, cand.docs)) if len(cand.docs) else np.zeros(0)
            ok = sims >= opts.settings.threshold
        else:
            assert cand.hamming is not None  # (simhash)
            sims = 1.0 - cand.hamming.astype(np.float64) / 64.0
            ok = np.ones(len(cand.docs), dtype=bool)
        ver = _Verified(cand.docs[ok], sims[ok], None, reread_info)
        if opts.large_bucket is not None and opts.settings.method == "minhash":
            _add_spanning_pairs(run, t, cand.large, ver)
        st.count = int(len(ver.near))
        st.note = f"{opts.settings.verify} {opts.settings.measure}"
    t.memory["verify_reread"] = reread_info or None
    return ver


def _verify_exact(run: _Run, t: _Tables, cand_docs: np.ndarray) -> tuple[np.ndarray, dict]:
    """Exact similarities of the candidate pairs, their documents re-read and shingled."""
    opts = run.opts
    vbar = _progress(opts.progress, "verify: re-read candidates", total=len(_sets.unique(cand_docs)))
    sims, vstats = verify_reread(
        run.sources,
        run.docs,
        cand_docs,
        run.signer,
        run.fields,
        run.limits,
        opts,
        budget=_reread_budget(run.mem, "verify", cand_docs, t.ntok_all, opts, t.n, run.sources),
        size=t.set_size(opts.settings.k),
        progress=vbar,
    )
    if vbar is not None:
        vbar.close()
    return sims, {
        "passes": vstats.passes,
        "documents_read": vstats.documents_read,
        "peak_held_bytes_estimate": vstats.peak_held_bytes_estimate,
    }


def _add_spanning_pairs(run: _Run, t: _Tables, lb: LargeBuckets, ver: _Verified) -> None:
    """The large buckets' spanning edges, merged into the verified pairs."""
    exact = run.opts.settings.verify == "exact"
    store, sig_doc = run.store, t.sig_doc
    sigs_of = None if exact else (lambda d: store.rows_at(np.searchsorted(sig_doc, d)))  # type: ignore[arg-type]
    span, span_sims, ver.large_info = spanning_pairs(
        lb,
        ver.near,
        t.n,
        run.sources,
        run.docs,
        run.signer,
        run.fields,
        run.limits,
        run.opts,
        run.mem,
        t.ntok_all if exact else None,
        sigs_of,
    )
    if len(span):  # in the order of the other pairs: by (a, b)
        both = np.concatenate([ver.near.astype(np.int64).reshape(-1, 2), span])
        order = np.lexsort((both[:, 1], both[:, 0]))
        ver.near, ver.near_sims = both[order], np.concatenate([ver.near_sims, span_sims])[order]


# ---- clusters and keepers --------------------------------------------------------------------


@dataclass
class _Clusters:
    ordered: np.ndarray  # the clusters' documents, cluster by cluster, each keeper first
    starts: np.ndarray  # where each cluster starts in `ordered`
    ends: np.ndarray
    others: np.ndarray  # the documents that are not keepers, in `ordered`'s order
    same: np.ndarray  # of each other: an exact copy of its keeper
    msim: np.ndarray  # of each other: its similarity to its keeper


def _clusters(run: _Run, t: _Tables, ver: _Verified) -> _Clusters:
    with run.log.stage("clusters") as st:
        ordered, starts = _keeper_order(run, t, ver)
        ends = np.r_[starts[1:], len(ordered)].astype(np.int64)
        sizes = ends - starts
        keepers = ordered[starts] if len(ordered) else np.zeros(0, np.int64)
        kp_all = np.repeat(keepers, sizes)  # the keeper of each document of `ordered`
        st.count = int(len(starts))
        # similarity of each member to its keeper
        is_other = kp_all != ordered
        others, kp = ordered[is_other], kp_all[is_other]
        del kp_all, is_other
        same = t.exact_key[others] == t.exact_key[kp]
        same &= t.exact_key[others] != 0
        msim = np.ones(len(others), dtype=np.float64)
        need = ~same
        pr = np.stack([t.rep_of[others[need]], t.rep_of[kp[need]]], axis=1)
        if len(pr):
            msim[need] = _member_sims(run, t, ver, pr)
    return _Clusters(ordered, starts, ends, others, same, msim)


def _keeper_order(run: _Run, t: _Tables, ver: _Verified) -> tuple[np.ndarray, np.ndarray]:
    """Union-find over the exact and verified pairs, then the keeper rule: (the clusters'
    documents, cluster by cluster with each keeper first; where each cluster starts)."""
    n, docs = t.n, run.docs
    edges = np.concatenate([np.stack([t.rep_of[t.exact_dups], t.exact_dups], axis=1), ver.near]).astype(np.uint32)
    labels = np.asarray(connected_components(n, edges), dtype=np.int64) if n else np.zeros(0, np.int64)
    del edges
    counts = np.bincount(labels, minlength=n) if n else np.zeros(0, np.int64)
    members = np.flatnonzero(counts[labels] >= 2) if n else np.zeros(0, np.int64)
    del counts
    # the keeper rule over the members only (arrays aligned with `members`, not n long);
    # ties broken by the id's string order
    id_rank = np.zeros(len(members), dtype=np.int64)
    if len(members):
        keys_m = np.array(docs.keys_of(members), dtype=str)
        id_rank[np.argsort(keys_m, kind="stable")] = np.arange(len(members))
        del keys_m
    at, starts = pick_keepers(
        labels[members],
        np.arange(len(members)),
        t.times[members],
        docs.source_rank(run.opts.settings.prefer_source, members),
        id_rank,
    )
    ordered = members[at]
    del id_rank, labels, at
    return ordered, starts


def _member_sims(run: _Run, t: _Tables, ver: _Verified, pr: np.ndarray) -> np.ndarray:
    """Similarities of (member, keeper) pairs (first copies) that are not exact copies."""
    opts = run.opts
    if opts.settings.verify == "exact":
        return _keeper_sims(run, t, ver, pr)
    if opts.settings.method == "minhash":
        return _estimate(run.store, _rows_of(t.sig_doc, t.n, pr))
    rp = _rows_of(t.sig_doc, t.n, pr)
    # (a memory map if a stage had to spill them: read without leaving pages resident)
    x = run.store.rows_at(rp[:, 0]) ^ run.store.rows_at(rp[:, 1])
    return 1.0 - np.array([int(v).bit_count() for v in x.tolist()]) / 64.0


# ---- results and outputs ---------------------------------------------------------------------


def _cluster_rows(run: _Run, cl: _Clusters):
    # built a chunk of clusters at a time, so a large run need not hold them all
    starts, ends, ordered, chunk = cl.starts, cl.ends, cl.ordered, run.opts.steps.row_chunk
    for lo in range(0, len(starts), chunk):
        hi = min(lo + chunk, len(starts))
        starts_l, ends_l = starts[lo:hi].tolist(), ends[lo:hi].tolist()
        base = starts_l[0]
        ids_c = run.docs.ids_of(ordered[base : ends_l[-1]])
        for ci in range(lo, hi):
            s0, e0 = starts_l[ci - lo], ends_l[ci - lo]
            mem_rows = []
            for j in range(s0 + 1, e0):
                i = j - ci - 1
                mem_rows.append(
                    {
                        "id": ids_c[j - base],
                        "similarity": round(float(cl.msim[i]), 6),
                        "match": "exact" if cl.same[i] else "near",
                    }
                )
            yield {"cluster": ci, "keeper": ids_c[s0 - base], "size": e0 - s0, "members": mem_rows}


def _pair_rows(run: _Run, t: _Tables, ver: _Verified):
    docs, chunk, exact_dups, near = run.docs, run.opts.steps.row_chunk, t.exact_dups, ver.near
    for lo in range(0, len(exact_dups), chunk):
        ea = docs.ids_of(t.rep_of[exact_dups[lo : lo + chunk]])
        eb = docs.ids_of(exact_dups[lo : lo + chunk])
        for x, y in zip(ea, eb):
            yield {"a": x, "b": y, "similarity": 1.0, "match": "exact"}
    for lo in range(0, len(near), chunk):
        pairs = near[lo : lo + chunk]
        na, nb = docs.ids_of(pairs[:, 0]), docs.ids_of(pairs[:, 1])
        for x, y, sim in zip(na, nb, ver.near_sims[lo : lo + chunk].tolist()):
            yield {"a": x, "b": y, "similarity": round(sim, 6), "match": "near"}


def _report(
    run: _Run, t: _Tables, cand: _Candidates, ver: _Verified, cl: _Clusters, kept_mask: np.ndarray
) -> dict[str, Any]:
    """report.json, less the stages' figures and the files (_finish_report, _write)."""
    mem, memory, tally = run.mem, t.memory, run.tally
    # the least this run needed (with everything that can spill spilled), when it was limited
    memory["minimum_bytes"] = mem.minimum_limit() if mem.limited else None
    if not run.keep_keys:  # a later stage may have spilled them (keys are freed after the candidates)
        memory["rows_spilled_to_disk"] = run.store.spilled
    return {
        "neardup_version": package_version(),
        "inputs": run.per_input,
        "method": run.opts.settings.method,
        "options": run.opts.as_dict(),
        "documents": t.n,
        "skipped": tally.n_skipped,
        "skipped_records": tally.skipped,
        "skipped_listed_max": MAX_SKIPPED_LISTED,
        "no_token_documents": tally.no_tokens,
        "unreadable_times": tally.n_bad_times,
        "unreadable_time_records": tally.bad_times,
        "exact_groups": t.exact_groups,
        "exact_copies_removed": int(len(t.exact_dups)),
        "signatures": int(len(t.sig_doc)),
        "lsh": cand.lsh_info,
        "candidates": int(len(cand.docs)),
        "large_buckets": ver.large_info,
        "verified_pairs": int(len(t.exact_dups) + len(ver.near)),
        "near_pairs": int(len(ver.near)),
        "clusters": int(len(cl.starts)),
        "copies_removed": int(len(cl.others)),
        "near_copies_removed": int((~cl.same).sum()),
        "kept": int(kept_mask.sum()),
        "memory": memory,
        "outdir": None,
        "files": [],
    }


def _result(
    run: _Run, t: _Tables, ver: _Verified, cl: _Clusters, report: dict, kept_mask: np.ndarray
) -> tuple[DedupResult, tuple]:
    """The result returned, and the cluster and pair rows for the files: as lists with
    ``collect`` (the same lists), otherwise generators (the CLI: a large run need not hold them)."""
    mem, docs = run.mem, run.docs

    def cluster_rows():
        return _cluster_rows(run, cl)

    def pair_rows():
        return _pair_rows(run, t, ver)

    if not run.opts.collect:
        return DedupResult(report=report), (cluster_rows(), pair_rows())
    if mem.limited:  # the results as Python objects are part of the process too
        _share_for_results(
            mem,
            cluster_rows,
            len(cl.starts),
            int(len(cl.others)),
            pair_rows,
            len(t.exact_dups) + len(ver.near),
            docs,
            np.flatnonzero(kept_mask[: min(t.n, 256)]),
            int(kept_mask.sum()),
        )
        report["memory"]["minimum_bytes"] = mem.minimum_limit()
    result = DedupResult(
        report=report,
        clusters=list(cluster_rows()),
        pairs=list(pair_rows()),
        kept=docs.ids_of(np.flatnonzero(kept_mask)),
    )
    return result, (result.clusters, result.pairs)


def _write(run: _Run, report: dict, kept_mask: np.ndarray, alternates: Alternates, rows_out: tuple) -> None:
    """The output files and report.json, as one set; then the previous run's files this run
    does not write are removed."""
    out, opts, sources, log = os.fspath(run.out), run.opts, run.sources, run.log
    stale = stale_outputs(out, opts.output_format, sources)  # (before report.json is replaced)
    if run.mem.limited and opts.output_format == "parquet":  # (the first pass kept room for it: `later`)
        _share_for_parquet(run, len(run.docs))
    # the output files as one set (writers.staged): renamed into place together once all are
    # written; a failure on the way (a full disk, Ctrl-C) leaves the previous run's set as it was
    with staged():
        with log.stage("write") as st:
            files = write_outputs(out, sources, run.docs, kept_mask, alternates, rows_out, opts, _progress)
            st.count = len(files)
        report["outdir"] = out
        report["files"] = files + ["report.json"]
        _finish_report(report, log, run.t_start)
        with atomic_open(os.path.join(out, "report.json")) as f:
            import json

            json.dump(writable_tree(report), f, indent=2, ensure_ascii=False)  # (a file name not UTF-8)
            f.write("\n")
    for path in stale:  # only once the new set is in place
        try:
            os.unlink(path)
        except OSError:
            pass  # (gone already, or not ours to remove after all: left as it is)


def _share_for_parquet(run: _Run, n: int) -> None:
    from neardup.stages.parquet_out import block_bytes

    block = run.opts.steps.parquet_block
    in_sizes = [s.size_bytes() for s in run.sources]
    mean = mean_record_bytes(sum(in_sizes) if all(x is not None for x in in_sizes) else None, n)  # type: ignore[arg-type]
    run.mem.share(
        "write",
        0,
        block_bytes(mean, block),
        f"a block of {block:,} kept records as Python objects, "
        f"their Arrow table and its row group (about {mean:,.0f} bytes a record)",
    )


#: Bytes a record is taken to have when the inputs' sizes are not known (compressed, stdin).
MEAN_RECORD_BYTES_UNKNOWN = 2048


def mean_record_bytes(total_bytes: int | None, records: float) -> float:
    if not total_bytes or records <= 0:
        return float(MEAN_RECORD_BYTES_UNKNOWN)
    return total_bytes / records


def _finish_report(report: dict, log, t_start: float) -> None:
    report["stages"] = log.as_list()
    report["first_pass"] = getattr(log, "scan", None)
    report["seconds"] = round(time.perf_counter() - t_start, 4)
    report["peak_rss_mb"] = peak_rss_mb()


#: Rows sampled to size the collected results, and the slack kept on top of the estimate (the
#: lists' over-allocation, the allocator's pools, the temporary id lists of a chunk).
RESULT_SAMPLE = 256
RESULT_SLACK = 1.25


def _share_for_results(
    mem: MemoryBudget,
    cluster_rows,
    n_clusters: int,
    n_members: int,
    pair_rows,
    n_pairs: int,
    docs: DocTable,
    kept_sample: np.ndarray,
    n_kept: int,
) -> None:
    """With ``collect=True`` the clusters, pairs and kept ids are built as Python objects after
    every stage has finished: their size is estimated from a sample of each and checked against
    the limit first (:class:`MemoryLimitError`, naming ``collect=False``, when they do not fit)."""
    from itertools import islice

    def scaled(rows, count: int) -> float:
        sample = list(islice(rows(), RESULT_SAMPLE))
        if not sample:
            return 0.0
        return sum(map(deep_size, sample)) / len(sample) * count + 8 * count

    clusters = list(islice(cluster_rows(), RESULT_SAMPLE))
    c_bytes = 0.0
    if clusters:  # scaled by clusters or by members, whichever says more
        sampled = sum(map(deep_size, clusters))
        members = sum(len(c["members"]) for c in clusters)
        c_bytes = sampled * max(n_clusters / len(clusters), n_members / max(members, 1)) + 8 * n_clusters
    del clusters
    ids = docs.ids_of(kept_sample)
    k_bytes = (sum(map(deep_size, ids)) / len(ids) + 8) * n_kept if len(ids) else 8.0 * n_kept
    need = int(RESULT_SLACK * (c_bytes + scaled(pair_rows, n_pairs) + k_bytes))
    mem.share(
        "results",
        0,
        need,
        "the clusters, pairs and kept ids returned as Python objects "
        "(collect=True; with collect=False they are only written to the output directory)",
    )


def _join(parts: list[np.ndarray], dtype) -> np.ndarray:
    return join_freeing(parts, dtype)


#: Pairs estimated at a time from the signatures (_estimate): their rows are copied out of a
#: spill file's map, 2 x 4,096 x 4 x num_perm bytes (4 MiB at 128).
ESTIMATE_CHUNK = 4096


def _estimate(store: RowStore, row_pairs: np.ndarray) -> np.ndarray:
    """MinHash estimates of pairs of signature rows, a chunk of pairs at a time with their rows
    copied out (RowStore.rows_at): a spilled map's pages are not left resident."""
    out = np.empty(len(row_pairs), dtype=np.float64)
    for at in range(0, len(row_pairs), ESTIMATE_CHUNK):
        p = row_pairs[at : at + ESTIMATE_CHUNK]
        u, inv = np.unique(p, return_inverse=True)
        out[at : at + len(p)] = estimate_pairs(store.rows_at(u), inv.reshape(-1, 2))
    return out


def _rows_of(sig_doc: np.ndarray, n: int, pairs: np.ndarray) -> np.ndarray:
    """Signature rows of document pairs."""
    row_of = np.full(n, -1, np.int64)
    row_of[sig_doc] = np.arange(len(sig_doc))
    return row_of[np.asarray(pairs, dtype=np.int64)]


def _reread_budget(
    mem: MemoryBudget,
    stage: str,
    pairs: np.ndarray,
    ntok: np.ndarray,
    opts: DedupOptions,
    n_later: int,
    sources: list[Source],
) -> int | None:
    """Bytes the held shingle sets of a re-read may take: what is free now, less the re-read's
    own working memory (the inputs' read buffers among it: one input is read at a time) and
    what the clusters stage will need (`n_later` documents)."""
    if not mem.limited:
        return None
    wanted = _sets.unique(pairs)
    work = working_bytes(ntok[wanted], len(pairs), opts.batch_size, opts.settings.k, read_buffer_bytes(sources))
    biggest = int(set_bytes_estimate(ntok[wanted], opts.settings.k).max()) if len(wanted) else 0
    free = mem.share(
        stage,
        CLUSTER_BYTES_PER_DOC * n_later,
        work + biggest,
        "one batch of re-read records, its pairs, the input's read buffer and the largest shingle set",
    )
    assert free is not None  # (mem.limited)
    return free - work


def _keeper_sims(run: _Run, t: _Tables, ver: _Verified, pr: np.ndarray) -> np.ndarray:
    """Exact similarity of each (member, keeper) pair: from the verified pairs when the two were
    a candidate pair (most are), otherwise by re-reading just those documents."""
    n, near, near_sims, opts = t.n, ver.near, ver.near_sims, run.opts
    lo, hi = np.minimum(pr[:, 0], pr[:, 1]), np.maximum(pr[:, 0], pr[:, 1])
    code = lo.astype(np.int64) * n + hi
    out = np.full(len(pr), np.nan)
    if len(near):
        nlo, nhi = np.minimum(near[:, 0], near[:, 1]), np.maximum(near[:, 0], near[:, 1])
        ncode = nlo.astype(np.int64) * n + nhi
        order = np.argsort(ncode, kind="stable")
        ncode = ncode[order]
        pos = np.minimum(np.searchsorted(ncode, code), len(ncode) - 1)
        hit = ncode[pos] == code
        out[hit] = near_sims[order][pos[hit]]
    rest = np.flatnonzero(np.isnan(out))
    if len(rest):
        vbar = _progress(opts.progress, "keeper similarities: re-read", total=len(_sets.unique(pr[rest])))
        sims, st = verify_reread(
            run.sources,
            run.docs,
            pr[rest],
            run.signer,
            run.fields,
            run.limits,
            opts,
            budget=_reread_budget(run.mem, "keeper similarities", pr[rest], t.ntok_all, opts, 0, run.sources),
            size=t.set_size(opts.settings.k),
            progress=vbar,
        )
        if vbar is not None:
            vbar.close()
        out[rest] = sims
        ver.reread_info["keeper_passes"] = st.passes
        ver.reread_info["keeper_documents_read"] = st.documents_read
    return out
