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
from typing import Any

import numpy as np

from neardup import _core
from neardup.errors import RecordError
from neardup.io.readers import Source, open_sources, read_buffer_bytes
from neardup.io.records import check_record
from neardup.io.writers import atomic_open, staged, writable_tree
from neardup.engines.local.buckets import LargeBuckets, spanning_pairs
from neardup.stages.candidates import (
    curve_table,
    hamming_pairs,
    lsh_pairs,
    min_sort_bytes,
    pairs_from_keys,
)
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
from neardup.stages.keepers import pick_keepers
from neardup.stages.kept import Alternates, write_outputs
from neardup.stages.options import DedupOptions
from neardup.stages.outputs import DedupResult, check_tmp_dir, out_path, refuse_input_outputs, stale_outputs
from neardup.stages.report import StageLog, peak_rss_mb
from neardup.stages.signer import Signer, exact_keys
from neardup.engines.local.reread import set_bytes_estimate, verify_reread, working_bytes
from neardup.stages.handoff import put_until_stopped, received
from neardup.engines.local.store import RowStore
from neardup.stages.spill import join_freeing
from neardup.stages.verify import estimate_pairs
from neardup import _sets
from neardup.graph import connected_components
from neardup.stages.report import package_version

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


def _run(sources: list[Source], out, opts: DedupOptions, log: StageLog, t_start: float) -> DedupResult:
    fields = opts.fields
    limits = opts.limits()  # (strict_json: a NaN or an infinity written in JSON text is a bad record)
    if opts.memory_limit is not None and out is not None and opts.output_format == "parquet":
        from neardup.stages.parquet_out import warm_up

        warm_up()  # pyarrow's one-off ~50 MiB, in the baseline rather than the write stage's peak
    assert not isinstance(opts.memory_limit, str)  # (bytes once opts.check() has parsed it)
    mem = MemoryBudget(opts.memory_limit)
    docs = DocTable()
    per_input = [{"path": s.name, "format": s.format, "records": 0, "skipped": 0} for s in sources]
    signer = Signer(opts)
    # exact key -> first document with it; in a list so that the first pass can drop the
    # only reference when it ends (the map is the largest thing the first pass frees)
    first_seen = [_core.FirstSeen()]
    exact_key_parts: list[np.ndarray] = []
    rep_of_parts: list[np.ndarray] = []  # per document: the first document with its exact key
    ntok_parts: list[np.ndarray] = []  # per document: tokens (sizes the re-read sets)
    sig_doc_parts: list[np.ndarray] = []  # document index of each signature row
    # What pass 1 keeps per signed document: with exact verification the signatures are only
    # needed for their LSH band keys, so only the keys are kept (8 bytes per band instead of 4
    # per permutation); estimates need the whole signature; SimHash keeps its fingerprint.
    band_rows: tuple[int, int] | None = None
    sizes = [s.size_bytes() for s in sources]
    known = [x for x in sizes if x is not None]
    total_bytes = sum(known) if len(known) == len(sizes) else None

    def exact_map() -> int:
        return first_seen[0].heap_bytes() if first_seen else 0

    def tables() -> int:
        # the per-document tables, the exact pass's map, the exact key / first copy / token
        # count arrays (20 bytes a document) and the document of each signed row (8)
        return docs.nbytes() + exact_map() + 20 * len(docs) + 8 * sum(len(p) for p in sig_doc_parts)

    def later(scale: float) -> float:
        # the larger of what the candidates stage needs (the smallest band sort, twice for its
        # pairs, and with estimates the band keys it forms from the signatures) and what a
        # re-read needs (a batch of records and their sets, the largest set); the Parquet
        # block and the estimate work are kept from the first pass on
        signed = int(scale * sum(len(p) for p in sig_doc_parts))
        b = band_rows[0] if band_rows else 1
        keys = 8 * b * signed if opts.settings.method == "minhash" and opts.settings.verify != "exact" else 0
        # a re-read's batch is at most a batch of the largest documents so far; it is taken
        # only from the candidates' documents, unknown yet, so it is bounded by what the
        # first pass's own batches in flight take (texts, kernels' outputs, reader's buffer)
        in_flight = min(BATCHES_IN_FLIGHT * guard.batch_bytes, guard.text_bytes * scale) + batch_work(guard.batch_docs)
        return (max(keys + 2 * min_sort_bytes(signed, b), min(reread_work(), in_flight)) + parquet_block(scale)
                + estimate_work())

    top_ntok: list = [np.zeros(0, np.uint32), 0]  # the batch_size largest token counts so far, parts merged

    def reread_work() -> int:
        # verification and the keepers' similarities re-read documents a batch at a time
        # (reread.working_bytes, from the largest documents: here the largest so far)
        if opts.settings.verify != "exact" or not ntok_parts:
            return 0
        new = ntok_parts[top_ntok[1]:]
        if new:
            both = np.concatenate([top_ntok[0], *new])
            m = min(len(both), opts.batch_size)
            top_ntok[0], top_ntok[1] = np.partition(both, len(both) - m)[-m:], len(ntok_parts)
        big = top_ntok[0]
        return working_bytes(big, 0, opts.batch_size, opts.settings.k, read_buffer_bytes(sources)) + (
            int(set_bytes_estimate(big, opts.settings.k).max()) if len(big) else 0)

    def estimate_work() -> int:
        # --verify estimate: the clusters stage copies a chunk of pairs' signature rows out of
        # the rows (_estimate: ESTIMATE_CHUNK pairs, two rows each at most), the estimate's own
        # temporaries take as much again, and a spill map's pages stay resident between drops
        # (RowStore.rows_at: 8 MiB). Not kept, a run at 180M peaked at 180.4 MiB (the stage
        # grew 15.5 MiB past the first pass)
        if opts.settings.method != "minhash" or opts.settings.verify != "estimate":
            return 0
        return 2 * (2 * ESTIMATE_CHUNK * opts.settings.num_perm * 4) + (8 << 20)

    def parquet_block(scale: float) -> int:
        # kept.parquet is written a block of records at a time (parquet_out.block_bytes): room
        # kept for it from the start, or the first pass leaves too little and the write stage
        # passes the limit (it has nothing to spill)
        if out is None or opts.output_format != "parquet":
            return 0
        from neardup.stages.parquet_out import block_bytes  # (pyarrow: imported only for Parquet)

        return block_bytes(mean_record_bytes(total_bytes, len(docs) * scale), opts.steps.parquet_block)

    def batch_work(batch_docs: int) -> int:
        # the batches in flight besides their texts: their lists of document numbers (an int
        # object and a pointer each), and for the one in hand the exact pass's keys, token
        # counts and first copies (24 bytes a document), its signatures and band keys; and the
        # reader's buffer
        sig = 4 * opts.settings.num_perm if opts.settings.method == "minhash" else 8
        keys = 8 * band_rows[0] if band_rows is not None and opts.settings.verify == "exact" else 0
        return (BATCHES_IN_FLIGHT * 40 * batch_docs + batch_docs * (24 + sig + keys)
                + read_buffer_bytes(sources))

    def tables_at(final: float) -> tuple[int, int]:
        # tables() once the tables hold `final` documents: the arrays in proportion, the id
        # table and the exact pass's map at the capacity they will have grown to (the
        # reader adds documents ahead of the batch in hand: the tables hold len(docs))
        # (the signed rows and the map's keys are of the batches processed: guard.docs)
        n, done = max(1, len(docs)), max(1, guard.docs)
        ids = docs.ids.heap_bytes()
        linear = (docs.nbytes() - ids + 20 * n) * final / n + 8 * sum(len(p) for p in sig_doc_parts) * final / done
        fs = map_capacity(len(first_seen[0]) * final / done) * 16 if first_seen else 0
        # the id bytes now, from the mean length of 64 ids spread over the table
        sample = docs.ids.take(np.linspace(0, len(docs) - 1, min(64, len(docs))).astype(np.int64))
        id_bytes = sum(len(x.encode()) for x in sample) / max(1, len(sample)) * len(docs)
        return int(linear) + id_table_bytes(ids, len(docs), final, id_bytes) + fs, fs


    guard = FirstPassGuard(mem, tables, exact_map, total_bytes, later, count=lambda: len(docs), work=batch_work,
                           tables_at=tables_at, lead_bytes=opts.steps.read_block_bytes)
    rows_fit = guard.rows_fit if mem.limited else None
    if opts.settings.method == "minhash":
        band_rows = opts.settings.band_shape()
        keep_keys = opts.settings.verify == "exact"
        store = RowStore(band_rows[0] if keep_keys else opts.settings.num_perm, np.uint64 if keep_keys else np.uint32,
                         rows_fit, opts.tmp_dir, "band-keys" if keep_keys else "signatures")
    else:
        keep_keys = False
        store = RowStore(1, np.uint64, rows_fit, opts.tmp_dir, "fingerprints", flat=True)
    mem.held = lambda: tables() + store.ram_bytes
    mem.spillable = lambda: store.ram_bytes
    try:
        return _run_stored(sources, out, opts, log, t_start, fields, limits, mem, docs, per_input, signer,
                           first_seen, exact_key_parts, rep_of_parts, ntok_parts, sig_doc_parts, band_rows,
                           keep_keys, store, guard)
    finally:
        store.close()


def _run_stored(sources, out, opts, log, t_start, fields, limits, mem, docs, per_input, signer, first_seen,
                exact_key_parts, rep_of_parts, ntok_parts, sig_doc_parts, band_rows, keep_keys, store, mem_guard):
    skipped: list[dict] = []
    n_skipped = 0
    bad_times: list[dict] = []  # unreadable times: kept as missing, listed here
    n_bad_times = 0
    no_tokens = 0

    def fail(err: RecordError, src_i: int) -> None:
        nonlocal n_skipped
        if opts.on_error == "stop":
            raise err
        n_skipped += 1
        per_input[src_i]["skipped"] += 1
        if len(skipped) < MAX_SKIPPED_LISTED:
            skipped.append(err.as_dict())

    # ---- pass 1: scan, exact pass, signatures -------------------------------------------
    # A reader thread parses and checks records (Python, holding the GIL) while this thread
    # runs the exact-pass and signature kernels on the previous batch (Rust, GIL released), so
    # the two overlap. Batches go through a queue of two.
    t_exact = 0.0
    t_sig = 0.0
    sizes = [s.size_bytes() for s in sources]
    total_bytes = sum(sizes) if all(x is not None for x in sizes) else None
    guard = mem_guard
    # With every input a plain file, progress counts bytes, so the bar has a rate and an ETA.
    bar = _progress(opts.progress, "scan + signatures", total=total_bytes, unit="B" if total_bytes else "doc")
    batches: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()
    read_clock = {"wall": 0.0, "cpu": 0.0, "blocked": 0.0}
    _END = object()

    def put(item) -> bool:
        t0 = time.perf_counter()
        if put_until_stopped(batches, item, stop):
            read_clock["blocked"] += time.perf_counter() - t0
            return True
        return False

    def reader() -> None:
        nonlocal n_bad_times
        w0, c0 = time.perf_counter(), time.thread_time()
        done_bytes = 0
        try:
            for src_i, src in enumerate(sources):
                batch_texts: list[str] = []
                batch_docs: list[int] = []
                name = src.name
                add = docs.add
                batch_size = opts.batch_size
                d = len(docs)
                n_before = d
                for recno, rec in src.records():
                    if stop.is_set():
                        return
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
                        fail(RecordError(name, recno, f"duplicate id {c.key!r} (first at "
                                         f"{sources[docs.src[prev]].name}:{docs.recno[prev]})", field=fields.id),
                             src_i)
                        continue
                    if c.time_error is not None:
                        n_bad_times += 1
                        if len(bad_times) < MAX_SKIPPED_LISTED:
                            bad_times.append({"file": name, "line": recno, "field": fields.time,
                                              "reason": c.time_error})
                    batch_texts.append(c.text)
                    batch_docs.append(d)
                    d += 1
                    if len(batch_texts) >= batch_size:
                        if not put((batch_texts, batch_docs, done_bytes + src.bytes_read)):
                            return
                        batch_texts, batch_docs = [], []
                per_input[src_i]["records"] = d - n_before
                done_bytes += src.bytes_read
                if batch_texts and not put((batch_texts, batch_docs, done_bytes)):
                    return
            put(_END)
        except BaseException as exc:  # handed to the main thread, which raises it
            put(exc)
        finally:
            read_clock["wall"] = time.perf_counter() - w0
            read_clock["cpu"] = time.thread_time() - c0

    def consume(batch_texts: list[str], batch_docs: list[int], bytes_done: int) -> None:
        nonlocal t_exact, t_sig, no_tokens
        t0 = time.perf_counter()
        keys, ntok = exact_keys(batch_texts, opts.threads, opts.settings.unit)
        bdocs = np.asarray(batch_docs, dtype=np.int64)
        rep = bdocs.copy()  # a document without tokens has nothing to compare: its own group
        has = ntok > 0
        rep[has] = first_seen[0].first(np.ascontiguousarray(keys[has]), np.ascontiguousarray(bdocs[has]))
        new_rows = np.flatnonzero(has & (rep == bdocs))
        no_tokens += int((~has).sum())
        exact_key_parts.append(np.where(has, keys, np.uint64(0)))
        rep_of_parts.append(rep)
        ntok_parts.append(np.minimum(ntok, np.uint64(2**32 - 1)).astype(np.uint32))
        t1 = time.perf_counter()
        t_exact += t1 - t0
        if len(new_rows):
            sig = signer.batch([batch_texts[i] for i in new_rows.tolist()])
            if keep_keys:
                sig = _core.band_keys(sig, band_rows[0], band_rows[1], opts.threads)
            store.append(sig)
            sig_doc_parts.append(bdocs[new_rows])
        t_sig += time.perf_counter() - t1
        guard.update(batch_docs[-1] + 1, bytes_done if total_bytes else None,
                     sum(map(sys.getsizeof, batch_texts)) if mem.limited else 0, len(batch_texts))
        guard.check(store.ram_bytes)
        if bar is not None:
            if total_bytes:
                bar.set_postfix_str(f"{len(docs):,} docs", refresh=False)
                bar.update(bytes_done - bar.n)
            else:
                bar.update(len(batch_texts))

    with log.stage("read") as st_read:
        thread = threading.Thread(target=reader, name="neardup-reader", daemon=True)
        thread.start()
        try:
            for item in received(batches, _END):
                consume(*item)
        finally:
            stop.set()
            while thread.is_alive():  # let a blocked reader see `stop`
                try:
                    batches.get(timeout=0.05)
                except queue.Empty:
                    pass
            thread.join()
        st_read.count = len(docs)
    if bar is not None:
        bar.close()
    scan = log.stages[-1]
    scan_wall, scan_cpu = scan.seconds, scan.cpu_seconds
    scan.seconds = max(0.0, read_clock["wall"] - read_clock["blocked"])
    scan.cpu_seconds = read_clock["cpu"]
    scan.note = "parse and check records (a thread, overlapping the next two stages)"
    Stage = type(scan)
    log.stages.append(Stage("exact", t_exact, None, None, "normalise and hash; group identical texts", peak_rss_mb()))
    log.stages.append(Stage("signatures", t_sig, None, None,
                            ("band keys kept" if keep_keys else "signatures kept")
                            + (", spilled to a file" if store.spilled else ", in memory"),
                            peak_rss_mb()))
    log.scan = {"seconds": round(scan_wall, 4), "cpu_seconds": round(scan_cpu or 0.0, 4),
                "note": "the whole first pass (read, exact, signatures overlap)"}
    first_seen.clear()  # the exact pass's map: its only reference
    release_freed()

    n = len(docs)
    exact_key = _join(exact_key_parts, np.uint64)
    rep_of = _join(rep_of_parts, np.int64)
    ntok_all = _join(ntok_parts, np.uint32)
    rows = store.finish()
    sig_doc = _join(sig_doc_parts, np.int64)
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
        "kept_rows": "band keys" if keep_keys else ("signatures" if opts.settings.method == "minhash" else "fingerprints"),
        "row_bytes": store.row_bytes,
        "rows_spilled_to_disk": store.spilled,
        "baseline_rss_bytes": mem.base if mem.limited else None,
        "stage_shares": mem.checks,  # what each stage was given, from what was resident
    }

    # ---- candidates -----------------------------------------------------------------------
    lsh_info: dict | None = None
    large_rows: list[np.ndarray] = []  # LSH buckets above opts.large_bucket, as signature rows
    with log.stage("candidates") as st:
        if opts.settings.method == "minhash":
            b, r = band_rows
            from neardup import lsh

            lsh_info = {
                "bands": b,
                "rows": r,
                "rule": "pinned" if opts.settings.bands is not None else f"recall >= {opts.settings.recall} at the threshold",
                "p_at_threshold": float(lsh.candidate_probability(opts.settings.threshold, b, r)),
                "curve": curve_table(b, r),
            }
            sort_info: dict = {"external_sort": False}
            # the sort gets half of what is free (the pairs it finds take the other half);
            # estimates form their band keys first (8 bytes per band per row)
            keys_bytes = 0 if keep_keys else 8 * b * len(rows)
            free = mem.share("candidates", CLUSTER_BYTES_PER_DOC * n, keys_bytes + 2 * min_sort_bytes(len(rows), b),
                             "its band keys and the smallest external sort")
            sort_budget = None if free is None else (free - keys_bytes) // 2
            big = dict(large_bucket=opts.large_bucket, large=large_rows if opts.large_bucket else None)
            if keep_keys:
                # spilled keys are read back in chunks by the external sort (never mapped whole)
                cand = pairs_from_keys(rows, sort_budget, opts.tmp_dir, sort_info, external=store.spilled, **big)
            else:
                cand = lsh_pairs(rows, b, r, sort_budget, opts.tmp_dir, sort_info, **big)
            memory["band_sort"] = sort_info
            hamming = None
        else:
            cand, hamming = hamming_pairs(rows, opts.settings.max_distance, opts.threads)
        st.count = int(len(cand))
    rows = None  # later stages take them from the store: spilled if a stage needs the room
    if keep_keys:  # band keys are for the candidate stage only: free them (or their file) now
        store.close()
    else:
        mem.spill = store.spill_now
    # candidate pairs in signature-row space; document index of each side
    cand_docs = sig_doc[cand.astype(np.int64)] if len(cand) else np.zeros((0, 2), np.int64)
    del cand
    held.append(cand_docs)
    lb = LargeBuckets(np.r_[0, np.cumsum([len(m) for m in large_rows])].astype(np.int64),
                      sig_doc[np.concatenate(large_rows).astype(np.int64)] if large_rows else np.zeros(0, np.int64))
    del large_rows
    held.append(lb.members)

    # ---- verification ---------------------------------------------------------------------
    def set_size(which: np.ndarray) -> np.ndarray:
        return set_bytes_estimate(ntok_all[which], opts.settings.k)

    reread_info: dict = {}
    with log.stage("verify") as st:
        if opts.settings.verify == "exact":
            vbar = _progress(opts.progress, "verify: re-read candidates", total=len(_sets.unique(cand_docs)))
            sims, vstats = verify_reread(sources, docs, cand_docs, signer, fields, limits, opts,
                                         budget=_reread_budget(mem, "verify", cand_docs, ntok_all, opts, n, sources),
                                         size=set_size, progress=vbar)
            if vbar is not None:
                vbar.close()
            reread_info = {"passes": vstats.passes, "documents_read": vstats.documents_read,
                           "peak_held_bytes_estimate": vstats.peak_held_bytes_estimate}
            ok = sims >= opts.settings.threshold
        elif opts.settings.method == "minhash":
            sims = _estimate(store, _rows_of(sig_doc, n, cand_docs)) if len(cand_docs) else np.zeros(0)
            ok = sims >= opts.settings.threshold
        else:
            sims = 1.0 - hamming.astype(np.float64) / 64.0
            ok = np.ones(len(cand_docs), dtype=bool)
        near = cand_docs[ok]
        near_sims = sims[ok]
        large_info = None
        if opts.large_bucket is not None and opts.settings.method == "minhash":
            sigs_of = None if opts.settings.verify == "exact" else (lambda d: store.rows_at(np.searchsorted(sig_doc, d)))
            span, span_sims, large_info = spanning_pairs(lb, near, n, sources, docs, signer, fields, limits, opts,
                                                         mem, ntok_all if opts.settings.verify == "exact" else None, sigs_of)
            if len(span):  # in the order of the other pairs: by (a, b)
                both = np.concatenate([near.astype(np.int64).reshape(-1, 2), span])
                order = np.lexsort((both[:, 1], both[:, 0]))
                near, near_sims = both[order], np.concatenate([near_sims, span_sims])[order]
        st.count = int(len(near))
        st.note = f"{opts.settings.verify} {opts.settings.measure}"
    memory["verify_reread"] = reread_info or None

    # ---- clusters and keepers -------------------------------------------------------------
    with log.stage("clusters") as st:
        edges = np.concatenate([np.stack([rep_of[exact_dups], exact_dups], axis=1), near]).astype(np.uint32)
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
        at, starts = pick_keepers(labels[members], np.arange(len(members)), times[members],
                                  docs.source_rank(opts.settings.prefer_source, members), id_rank)
        ordered = members[at]
        del id_rank, labels, at
        ends = np.r_[starts[1:], len(ordered)].astype(np.int64)
        sizes = ends - starts
        keepers = ordered[starts] if len(ordered) else np.zeros(0, np.int64)
        kp_all = np.repeat(keepers, sizes)  # the keeper of each document of `ordered`
        st.count = int(len(starts))
        # similarity of each member to its keeper
        is_other = kp_all != ordered
        others, kp = ordered[is_other], kp_all[is_other]
        del kp_all, is_other
        same = exact_key[others] == exact_key[kp]
        same &= exact_key[others] != 0
        msim = np.ones(len(others), dtype=np.float64)
        need = ~same
        pr = np.stack([rep_of[others[need]], rep_of[kp[need]]], axis=1)
        if len(pr):
            if opts.settings.verify == "exact":
                msim[need] = _keeper_sims(pr, near, near_sims, n, sources, docs, signer, fields, limits, opts,
                                          mem, set_size, ntok_all, reread_info)
            elif opts.settings.method == "minhash":
                msim[need] = _estimate(store, _rows_of(sig_doc, n, pr))
            else:
                rp = _rows_of(sig_doc, n, pr)
                # (a memory map if a stage had to spill them: read without leaving pages resident)
                x = store.rows_at(rp[:, 0]) ^ store.rows_at(rp[:, 1])
                msim[need] = 1.0 - np.array([int(v).bit_count() for v in x.tolist()]) / 64.0
    removed = int(len(others))
    near_removed = int((~same).sum())
    # the others of cluster c are ordered[starts[c] + 1 : ends[c]], and others[i] is the
    # (i + c + 1)-th document of `ordered` (each cluster puts its keeper first): so the i-th
    # other sits at ordered position i + c + 1, with no per-document lookup table
    alternates = Alternates(docs, ordered, starts, ends)

    def cluster_rows():
        # built a chunk of clusters at a time, so a large run need not hold them all
        for lo in range(0, len(starts), opts.steps.row_chunk):
            hi = min(lo + opts.steps.row_chunk, len(starts))
            starts_l, ends_l = starts[lo:hi].tolist(), ends[lo:hi].tolist()
            base = starts_l[0]
            ids_c = docs.ids_of(ordered[base : ends_l[-1]])
            for ci in range(lo, hi):
                s0, e0 = starts_l[ci - lo], ends_l[ci - lo]
                mem_rows = []
                for j in range(s0 + 1, e0):
                    i = j - ci - 1
                    mem_rows.append({"id": ids_c[j - base], "similarity": round(float(msim[i]), 6),
                                     "match": "exact" if same[i] else "near"})
                yield {"cluster": ci, "keeper": ids_c[s0 - base], "size": e0 - s0, "members": mem_rows}

    def pair_rows():
        for lo in range(0, len(exact_dups), opts.steps.row_chunk):
            ea = docs.ids_of(rep_of[exact_dups[lo : lo + opts.steps.row_chunk]])
            eb = docs.ids_of(exact_dups[lo : lo + opts.steps.row_chunk])
            for x, y in zip(ea, eb):
                yield {"a": x, "b": y, "similarity": 1.0, "match": "exact"}
        for lo in range(0, len(near), opts.steps.row_chunk):
            chunk = near[lo : lo + opts.steps.row_chunk]
            na, nb = docs.ids_of(chunk[:, 0]), docs.ids_of(chunk[:, 1])
            for x, y, sim in zip(na, nb, near_sims[lo : lo + opts.steps.row_chunk].tolist()):
                yield {"a": x, "b": y, "similarity": round(sim, 6), "match": "near"}

    kept_mask = np.ones(n, dtype=bool)
    kept_mask[others] = False
    # the least this run needed (with everything that can spill spilled), when it was limited
    memory["minimum_bytes"] = mem.minimum if mem.limited else None
    if not keep_keys:  # a later stage may have spilled them (keys are freed after the candidates)
        memory["rows_spilled_to_disk"] = store.spilled

    report: dict[str, Any] = {
        "neardup_version": package_version(),
        "inputs": per_input,
        "method": opts.settings.method,
        "options": opts.as_dict(),
        "documents": n,
        "skipped": n_skipped,
        "skipped_records": skipped,
        "skipped_listed_max": MAX_SKIPPED_LISTED,
        "no_token_documents": no_tokens,
        "unreadable_times": n_bad_times,
        "unreadable_time_records": bad_times,
        "exact_groups": exact_groups,
        "exact_copies_removed": int(len(exact_dups)),
        "signatures": int(len(sig_doc)),
        "lsh": lsh_info,
        "candidates": int(len(cand_docs)),
        "large_buckets": large_info,
        "verified_pairs": int(len(exact_dups) + len(near)),
        "near_pairs": int(len(near)),
        "clusters": int(len(starts)),
        "copies_removed": removed,
        "near_copies_removed": near_removed,
        "kept": int(kept_mask.sum()),
        "memory": memory,
        "outdir": None,
        "files": [],
    }
    if opts.collect:
        if mem.limited:  # the results as Python objects are part of the process too
            _share_for_results(mem, cluster_rows, len(starts), removed, pair_rows,
                               len(exact_dups) + len(near), docs, np.flatnonzero(kept_mask[: min(n, 256)]),
                               int(kept_mask.sum()))
            memory["minimum_bytes"] = mem.minimum
        result = DedupResult(report=report, clusters=list(cluster_rows()), pairs=list(pair_rows()),
                             kept=docs.ids_of(np.flatnonzero(kept_mask)))
        rows_out = (result.clusters, result.pairs)
    else:  # the rows go straight to the files (the CLI: a large run need not hold them)
        result = DedupResult(report=report)
        rows_out = (cluster_rows(), pair_rows())

    if out is None:
        _finish_report(report, log, t_start)
        return result
    stale = stale_outputs(os.fspath(out), opts.output_format, sources)  # (before report.json is replaced)
    if mem.limited and opts.output_format == "parquet":  # (the first pass kept room for it: `later`)
        from neardup.stages.parquet_out import block_bytes

        in_sizes = [s.size_bytes() for s in sources]
        mean = mean_record_bytes(sum(in_sizes) if all(x is not None for x in in_sizes) else None, n)
        mem.share("write", 0, block_bytes(mean, opts.steps.parquet_block), f"a block of {opts.steps.parquet_block:,} kept records as Python objects, "
                  f"their Arrow table and its row group (about {mean:,.0f} bytes a record)")
    # the output files as one set (writers.staged): renamed into place together once all are
    # written; a failure on the way (a full disk, Ctrl-C) leaves the previous run's set as it was
    with staged():
        with log.stage("write") as st:
            files = write_outputs(os.fspath(out), sources, docs, kept_mask, alternates, rows_out, opts, _progress)
            st.count = len(files)
        report["outdir"] = os.fspath(out)
        report["files"] = files + ["report.json"]
        _finish_report(report, log, t_start)
        with atomic_open(os.path.join(os.fspath(out), "report.json")) as f:
            import json

            json.dump(writable_tree(report), f, indent=2, ensure_ascii=False)  # (a file name not UTF-8)
            f.write("\n")
    for path in stale:  # only once the new set is in place
        try:
            os.unlink(path)
        except OSError:
            pass  # (gone already, or not ours to remove after all: left as it is)
    return result


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


def _share_for_results(mem: MemoryBudget, cluster_rows, n_clusters: int, n_members: int, pair_rows,
                       n_pairs: int, docs: DocTable, kept_sample: np.ndarray, n_kept: int) -> None:
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
    mem.share("results", 0, need, "the clusters, pairs and kept ids returned as Python objects "
              "(collect=True; with collect=False they are only written to the output directory)")


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


def _reread_budget(mem: MemoryBudget, stage: str, pairs: np.ndarray, ntok: np.ndarray, opts: DedupOptions,
                   n_later: int, sources: list[Source]) -> int | None:
    """Bytes the held shingle sets of a re-read may take: what is free now, less the re-read's
    own working memory (the inputs' read buffers among it: one input is read at a time) and
    what the clusters stage will need (`n_later` documents)."""
    if not mem.limited:
        return None
    wanted = _sets.unique(pairs)
    work = working_bytes(ntok[wanted], len(pairs), opts.batch_size, opts.settings.k, read_buffer_bytes(sources))
    biggest = int(set_bytes_estimate(ntok[wanted], opts.settings.k).max()) if len(wanted) else 0
    free = mem.share(stage, CLUSTER_BYTES_PER_DOC * n_later, work + biggest,
                     "one batch of re-read records, its pairs, the input's read buffer and the largest shingle set")
    assert free is not None  # (mem.limited)
    return free - work


def _keeper_sims(pr, near, near_sims, n, sources, docs, signer, fields, limits, opts, mem, set_size,
                 ntok_all, reread_info) -> np.ndarray:
    """Exact similarity of each (member, keeper) pair: from the verified pairs when the two were
    a candidate pair (most are), otherwise by re-reading just those documents."""
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
        sims, st = verify_reread(sources, docs, pr[rest], signer, fields, limits, opts,
                                 budget=_reread_budget(mem, "keeper similarities", pr[rest], ntok_all, opts, 0, sources),
                                 size=set_size, progress=vbar)
        if vbar is not None:
            vbar.close()
        out[rest] = sims
        reread_info["keeper_passes"] = st.passes
        reread_info["keeper_documents_read"] = st.documents_read
    return out
