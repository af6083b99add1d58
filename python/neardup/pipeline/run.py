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

import neardup
from neardup.io.errors import RecordError
from neardup.io.readers import JsonlSource, ParquetSource, RecordsSource, Source, open_sources
from neardup.io.records import Limits, check_record
from neardup.io.writers import atomic_open, dumps, ensure_output_dir, write_jsonl
from neardup.pipeline.candidates import choose_bands, curve_table, hamming_pairs, lsh_pairs
from neardup.pipeline.keepers import pick_keepers, source_ranks
from neardup.pipeline.options import DedupOptions
from neardup.pipeline.report import StageLog, peak_rss_mb, summary_text
from neardup.pipeline.signer import Signer, exact_keys
from neardup.pipeline.verify import HashSets, estimate_pairs, verify_exact

__all__ = ["DedupResult", "run", "MAX_SKIPPED_LISTED"]

MAX_SKIPPED_LISTED = 1000


@dataclass
class DedupResult:
    """What a run found. ``clusters`` and ``pairs`` are the rows of clusters.jsonl and
    pairs.jsonl; ``kept`` the ids of the kept documents in input order."""

    report: dict
    clusters: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    kept: list[Any] = field(default_factory=list)

    def summary(self) -> str:
        return summary_text(self.report)


class _Docs:
    """Per-document state of pass 1 (no text)."""

    def __init__(self) -> None:
        self.ids: list[Any] = []
        self.keys: list[str] = []
        self.times: list[float] = []
        self.sources: list[str | None] = []
        self.src: list[int] = []
        self.recno: list[int] = []
        self.where: dict[str, int] = {}  # id -> document index (duplicate check)

    def __len__(self) -> int:
        return len(self.ids)


def _progress(enabled: bool, desc: str, total: int | None = None, unit: str = "doc"):
    if enabled:
        try:
            from tqdm import tqdm

            return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, leave=False)
        except ImportError:  # pragma: no cover
            pass
    return None


def run(inputs: Any, out: str | os.PathLike | None, opts: DedupOptions) -> DedupResult:
    opts.check()
    t_start = time.perf_counter()
    log = StageLog()
    sources = open_sources(inputs)
    try:
        return _run(sources, out, opts, log, t_start)
    finally:
        for s in sources:
            s.close()


def _run(sources: list[Source], out, opts: DedupOptions, log: StageLog, t_start: float) -> DedupResult:
    fields = opts.fields
    limits = Limits(max_chars=opts.max_chars)
    docs = _Docs()
    skipped: list[dict] = []
    n_skipped = 0
    bad_times: list[dict] = []  # unreadable times: kept as missing, listed here
    n_bad_times = 0
    per_input = [{"path": s.name, "format": s.format, "records": 0, "skipped": 0} for s in sources]
    signer = Signer(opts)
    first_of: dict[int, int] = {}  # exact key -> first document with it
    exact_key_parts: list[np.ndarray] = []
    rep_of_parts: list[np.ndarray] = []  # per document: the first document with its exact key
    sig_parts: list[np.ndarray] = []
    sig_doc_parts: list[np.ndarray] = []  # document index of each signature row
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
    bar = _progress(opts.progress, "scan + signatures")
    batches: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()
    read_clock = {"wall": 0.0, "cpu": 0.0, "blocked": 0.0}
    _END = object()

    def put(item) -> bool:
        t0 = time.perf_counter()
        while not stop.is_set():
            try:
                batches.put(item, timeout=0.1)
                read_clock["blocked"] += time.perf_counter() - t0
                return True
            except queue.Full:
                continue
        return False

    def reader() -> None:
        nonlocal n_bad_times
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            for src_i, src in enumerate(sources):
                batch_texts: list[str] = []
                batch_docs: list[int] = []
                name = src.name
                where = docs.where
                ids_append, keys_append = docs.ids.append, docs.keys.append
                times_append, sources_append = docs.times.append, docs.sources.append
                src_append, recno_append = docs.src.append, docs.recno.append
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
                    key = c.key
                    prev = where.get(key)
                    if prev is not None:
                        fail(RecordError(name, recno, f"duplicate id {key!r} (first at "
                                         f"{sources[docs.src[prev]].name}:{docs.recno[prev]})", field=fields.id),
                             src_i)
                        continue
                    if c.time_error is not None:
                        n_bad_times += 1
                        if len(bad_times) < MAX_SKIPPED_LISTED:
                            bad_times.append({"file": name, "line": recno, "field": fields.time,
                                              "reason": c.time_error})
                    where[key] = d
                    ids_append(c.id)
                    keys_append(key)
                    times_append(c.time)
                    sources_append(c.source)
                    src_append(src_i)
                    recno_append(recno)
                    batch_texts.append(c.text)
                    batch_docs.append(d)
                    d += 1
                    if len(batch_texts) >= batch_size:
                        if not put((batch_texts, batch_docs)):
                            return
                        batch_texts, batch_docs = [], []
                per_input[src_i]["records"] = d - n_before
                if batch_texts and not put((batch_texts, batch_docs)):
                    return
            put(_END)
        except BaseException as exc:  # handed to the main thread, which raises it
            put(exc)
        finally:
            read_clock["wall"] = time.perf_counter() - w0
            read_clock["cpu"] = time.thread_time() - c0

    def consume(batch_texts: list[str], batch_docs: list[int]) -> None:
        nonlocal t_exact, t_sig, no_tokens
        t0 = time.perf_counter()
        keys, ntok = exact_keys(batch_texts, opts.threads)
        rep = np.empty(len(keys), dtype=np.int64)
        new_rows: list[int] = []
        setdefault = first_of.setdefault
        for row, (key, d, nt) in enumerate(zip(keys.tolist(), batch_docs, ntok.tolist())):
            if nt == 0:
                rep[row] = d  # nothing to compare: a document of its own
                continue
            r = setdefault(key, d)
            rep[row] = r
            if r == d:
                new_rows.append(row)
        no_tokens += int((ntok == 0).sum())
        exact_key_parts.append(np.where(ntok == 0, np.uint64(0), keys))
        rep_of_parts.append(rep)
        t1 = time.perf_counter()
        t_exact += t1 - t0
        if new_rows:
            sig = signer.batch([batch_texts[i] for i in new_rows])
            sig_parts.append(sig)
            sig_doc_parts.append(np.asarray(batch_docs, dtype=np.int64)[new_rows])
        t_sig += time.perf_counter() - t1
        if bar is not None:
            bar.update(len(batch_texts))

    with log.stage("read") as st_read:
        thread = threading.Thread(target=reader, name="neardup-reader", daemon=True)
        thread.start()
        try:
            while True:
                item = batches.get()
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    raise item
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
    log.stages.append(Stage("signatures", t_sig, None, None, "", peak_rss_mb()))
    log.scan = {"seconds": round(scan_wall, 4), "cpu_seconds": round(scan_cpu or 0.0, 4),
                "note": "the whole first pass (read, exact, signatures overlap)"}
    docs.where = {}  # no longer needed: free it

    n = len(docs)
    exact_key = np.concatenate(exact_key_parts) if exact_key_parts else np.zeros(0, np.uint64)
    rep_of = np.concatenate(rep_of_parts) if rep_of_parts else np.zeros(0, np.int64)
    if opts.method == "minhash":
        sigs = np.concatenate(sig_parts) if sig_parts else np.zeros((0, opts.num_perm), np.uint32)
    else:
        sigs = np.concatenate(sig_parts) if sig_parts else np.zeros(0, np.uint64)
    sig_doc = np.concatenate(sig_doc_parts) if sig_doc_parts else np.zeros(0, np.int64)
    del exact_key_parts, rep_of_parts, sig_parts, sig_doc_parts, first_of
    exact_dups = np.flatnonzero(rep_of != np.arange(n))
    exact_groups = len(np.unique(rep_of[exact_dups]))
    log.stages[-2].count = int(len(exact_dups))
    log.stages[-1].count = int(len(sig_doc))
    times = np.asarray(docs.times, dtype=np.float64)

    # ---- candidates -----------------------------------------------------------------------
    lsh_info: dict | None = None
    with log.stage("candidates") as st:
        if opts.method == "minhash":
            b, r = choose_bands(opts.threshold, opts.num_perm, opts.recall, opts.bands, opts.rows)
            from neardup import lsh

            lsh_info = {
                "bands": b,
                "rows": r,
                "rule": "pinned" if opts.bands is not None else f"recall >= {opts.recall} at the threshold",
                "p_at_threshold": float(lsh.candidate_probability(opts.threshold, b, r)),
                "curve": curve_table(b, r),
            }
            cand = lsh_pairs(sigs, b, r)
            hamming = None
        else:
            cand, hamming = hamming_pairs(sigs, opts.max_distance, opts.threads)
        st.count = int(len(cand))
    # candidate pairs in signature-row space; document index of each side
    cand_docs = sig_doc[cand.astype(np.int64)] if len(cand) else np.zeros((0, 2), np.int64)

    # ---- verification ---------------------------------------------------------------------
    sets: HashSets | None = None
    set_docs = np.zeros(0, np.int64)
    with log.stage("verify") as st:
        if opts.verify == "exact":
            set_docs = np.unique(cand_docs)
            sets = _load_sets(sources, docs, set_docs, signer, fields, limits, opts)
            local = np.searchsorted(set_docs, cand_docs)
            sims = verify_exact(sets, local, opts.measure, opts.threads) if len(cand) else np.zeros(0)
            ok = sims >= opts.threshold
        elif opts.method == "minhash":
            sims = estimate_pairs(sigs, cand.astype(np.int64)) if len(cand) else np.zeros(0)
            ok = sims >= opts.threshold
        else:
            sims = 1.0 - hamming.astype(np.float64) / 64.0
            ok = np.ones(len(cand), dtype=bool)
        near = cand_docs[ok]
        near_sims = sims[ok]
        st.count = int(ok.sum())
        st.note = f"{opts.verify} {opts.measure}"

    # ---- clusters and keepers -------------------------------------------------------------
    with log.stage("clusters") as st:
        edges = np.concatenate([np.stack([rep_of[exact_dups], exact_dups], axis=1), near]).astype(np.uint32)
        labels = np.asarray(neardup.connected_components(n, edges), dtype=np.int64) if n else np.zeros(0, np.int64)
        counts = np.bincount(labels, minlength=n) if n else np.zeros(0, np.int64)
        members = np.flatnonzero(counts[labels] >= 2) if n else np.zeros(0, np.int64)
        src_rank = source_ranks(docs.sources, opts.prefer_source)
        id_arr = np.array(docs.keys, dtype=str) if n else np.zeros(0, dtype=str)
        id_rank = np.empty(n, dtype=np.int64)
        id_rank[np.argsort(id_arr, kind="stable")] = np.arange(n)
        ordered, starts = pick_keepers(labels, members, times, src_rank, id_rank)
        keeper_of = np.arange(n)
        ends = np.r_[starts[1:], len(ordered)].astype(np.int64)
        sizes = ends - starts
        keepers = ordered[starts] if len(ordered) else np.zeros(0, np.int64)
        keeper_of[ordered] = np.repeat(keepers, sizes)
        st.count = int(len(starts))
        # similarity of each member to its keeper
        others = ordered[keeper_of[ordered] != ordered]
        kp = keeper_of[others]
        same = exact_key[others] == exact_key[kp]
        same &= exact_key[others] != 0
        msim = np.ones(len(others), dtype=np.float64)
        need = ~same
        pr = np.stack([rep_of[others[need]], rep_of[kp[need]]], axis=1)
        if len(pr):
            if opts.verify == "exact":
                msim[need] = verify_exact(sets, np.searchsorted(set_docs, pr), opts.measure, opts.threads)
            elif opts.method == "minhash":
                row_of = np.full(n, -1, np.int64)
                row_of[sig_doc] = np.arange(len(sig_doc))
                msim[need] = estimate_pairs(sigs, row_of[pr])
            else:
                row_of = np.full(n, -1, np.int64)
                row_of[sig_doc] = np.arange(len(sig_doc))
                x = sigs[row_of[pr[:, 0]]] ^ sigs[row_of[pr[:, 1]]]
                msim[need] = 1.0 - np.array([int(v).bit_count() for v in x.tolist()]) / 64.0
    removed = int(len(others))
    near_removed = int((~same).sum())
    ids = docs.ids
    clusters_rows = []
    o_pos = 0
    # members (other than the keeper) follow their keeper in `ordered`, in rule order
    others_set_order = {int(d): i for i, d in enumerate(others.tolist())}
    msim_l = msim.tolist()
    same_l = same.tolist()
    for ci, (s0, e0) in enumerate(zip(starts.tolist(), ends.tolist())):
        keeper = int(ordered[s0])
        mem = []
        for d in ordered[s0 + 1 : e0].tolist():
            i = others_set_order[d]
            mem.append({"id": ids[d], "similarity": round(msim_l[i], 6), "match": "exact" if same_l[i] else "near"})
        clusters_rows.append({"cluster": ci, "keeper": ids[keeper], "size": e0 - s0, "members": mem})
        o_pos += e0 - s0 - 1
    pairs_rows = [
        {"a": ids[a], "b": ids[b], "similarity": 1.0, "match": "exact"}
        for a, b in zip(rep_of[exact_dups].tolist(), exact_dups.tolist())
    ]
    pairs_rows += [
        {"a": ids[a], "b": ids[b], "similarity": round(s, 6), "match": "near"}
        for (a, b), s in zip(near.tolist(), near_sims.tolist())
    ]
    kept_mask = np.ones(n, dtype=bool)
    kept_mask[others] = False
    alternates: dict[int, list] = {}
    for s0, e0 in zip(starts.tolist(), ends.tolist()):
        alternates[int(ordered[s0])] = [ids[d] for d in ordered[s0 + 1 : e0].tolist()]

    report: dict[str, Any] = {
        "neardup_version": getattr(neardup, "__version__", "?"),
        "inputs": per_input,
        "method": opts.method,
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
        "candidates": int(len(cand)),
        "verified_pairs": int(len(pairs_rows)),
        "near_pairs": int(len(near)),
        "clusters": int(len(starts)),
        "copies_removed": removed,
        "near_copies_removed": near_removed,
        "kept": int(kept_mask.sum()),
        "outdir": None,
        "files": [],
    }
    kept_ids = [ids[d] for d in np.flatnonzero(kept_mask).tolist()]
    result = DedupResult(report=report, clusters=clusters_rows, pairs=pairs_rows, kept=kept_ids)

    if out is not None:
        with log.stage("write") as st:
            files = _write_outputs(os.fspath(out), sources, docs, kept_mask, alternates, result, opts, fields)
            st.count = len(files)
        report["outdir"] = os.fspath(out)
        report["files"] = files + ["report.json"]
    report["stages"] = log.as_list()
    report["first_pass"] = getattr(log, "scan", None)
    report["seconds"] = round(time.perf_counter() - t_start, 4)
    report["peak_rss_mb"] = peak_rss_mb()
    if out is not None:
        with atomic_open(os.path.join(os.fspath(out), "report.json")) as f:
            import json

            json.dump(report, f, indent=2, ensure_ascii=False)
            f.write("\n")
    return result


def _wanted_masks(docs: _Docs, which: np.ndarray, n_sources: int) -> list[np.ndarray | None]:
    src = np.asarray(docs.src, dtype=np.int64)[which]
    rec = np.asarray(docs.recno, dtype=np.int64)[which]
    masks: list[np.ndarray | None] = []
    for s in range(n_sources):
        r = rec[src == s]
        if len(r) == 0:
            masks.append(None)
            continue
        m = np.zeros(int(r.max()) + 1, dtype=bool)
        m[r] = True
        masks.append(m)
    return masks


def _load_sets(sources, docs: _Docs, set_docs: np.ndarray, signer: Signer, fields, limits, opts) -> HashSets:
    """Re-read the texts of `set_docs` (sorted document indices) only, and shingle them."""
    if len(set_docs) == 0:
        return HashSets([])
    masks = _wanted_masks(docs, set_docs, len(sources))
    # document index for (source, recno)
    src = np.asarray(docs.src, dtype=np.int64)[set_docs]
    rec = np.asarray(docs.recno, dtype=np.int64)[set_docs]
    slot = {(int(s), int(r)): i for i, (s, r) in enumerate(zip(src.tolist(), rec.tolist()))}
    out: list[np.ndarray | None] = [None] * len(set_docs)
    texts: list[str] = []
    slots: list[int] = []

    def flush() -> None:
        if texts:
            for i, h in zip(slots, signer.hashes(texts)):
                out[i] = h
            texts.clear()
            slots.clear()

    bar = _progress(opts.progress, "verify: re-read candidates", total=len(set_docs))
    for s_i, src_obj in enumerate(sources):
        if masks[s_i] is None:
            continue
        for recno, rec_obj in src_obj.records(masks[s_i]):
            if bar is not None:
                bar.update(1)
            c = check_record(rec_obj, fields, limits, src_obj.name, recno)
            texts.append(c.text)
            slots.append(slot[(s_i, recno)])
            if len(texts) >= opts.batch_size:
                flush()
    flush()
    if bar is not None:
        bar.close()
    missing = [i for i, h in enumerate(out) if h is None]
    if missing:
        raise RuntimeError(f"{len(missing)} candidate documents could not be read again (did an input change?)")
    return HashSets(out)  # type: ignore[arg-type]


def _write_outputs(outdir, sources, docs, kept_mask, alternates, result: DedupResult, opts, fields) -> list[str]:
    ensure_output_dir(outdir)
    write_jsonl(os.path.join(outdir, "clusters.jsonl"), result.clusters)
    write_jsonl(os.path.join(outdir, "pairs.jsonl"), result.pairs)
    kept_name = "kept.parquet" if opts.output_format == "parquet" else "kept.jsonl"
    _write_kept(os.path.join(outdir, kept_name), sources, docs, kept_mask, alternates, opts)
    return ["clusters.jsonl", "pairs.jsonl", kept_name]


def _kept_records(sources, docs, kept_mask, alternates, progress=False):
    """(record dict or raw JSON line, alternates) for each kept record, in input order."""
    kept = np.flatnonzero(kept_mask)
    bar = _progress(progress, "write kept records", total=len(kept))
    masks = _wanted_masks(docs, kept, len(sources))
    src = np.asarray(docs.src, dtype=np.int64)
    rec = np.asarray(docs.recno, dtype=np.int64)
    doc_at = {(int(src[d]), int(rec[d])): int(d) for d in kept.tolist() if int(d) in alternates}
    for s_i, s in enumerate(sources):
        if masks[s_i] is None:
            continue
        it = s.raw_lines(masks[s_i]) if isinstance(s, JsonlSource) else s.records(masks[s_i])
        for recno, obj in it:
            d = doc_at.get((s_i, recno))
            if bar is not None:
                bar.update(1)
            yield obj, (alternates[d] if d is not None else [])
    if bar is not None:
        bar.close()


_ALT = b'"alternates"'


def _write_kept(path, sources, docs, kept_mask, alternates, opts) -> None:
    if opts.output_format == "parquet":
        _write_kept_parquet(path, sources, docs, kept_mask, alternates, opts)
        return
    with atomic_open(path, "wb") as f:
        if all(isinstance(s, JsonlSource) for s in sources):
            _write_kept_jsonl_blocks(f, sources, docs, kept_mask, alternates, opts)
            return
        for obj, alts in _kept_records(sources, docs, kept_mask, alternates, opts.progress):
            if isinstance(obj, bytes):
                obj = _with_alternates(obj, dumps(alts).encode("utf-8"))
                f.write(obj)
                f.write(b"\n")
                continue
            obj["alternates"] = alts
            f.write(dumps(obj).encode("utf-8"))
            f.write(b"\n")


def _with_alternates(line: bytes, alts_json: bytes) -> bytes:
    """The JSON object `line` with an "alternates" field: the original bytes are kept and the
    field added before the closing brace; a line that already has the field is re-encoded."""
    line = line.rstrip()
    if line.endswith(b"}") and _ALT not in line:
        return line[:-1] + b',"alternates":' + alts_json + b"}"
    import json

    obj = json.loads(line)
    obj["alternates"] = json.loads(alts_json)
    return dumps(obj).encode("utf-8")


def _write_kept_jsonl_blocks(f, sources, docs, kept_mask, alternates, opts) -> None:
    """JSONL to JSONL, a block of lines at a time: the kept lines are copied byte for byte."""
    kept = np.flatnonzero(kept_mask)
    masks = _wanted_masks(docs, kept, len(sources))
    src = np.asarray(docs.src, dtype=np.int64)
    rec = np.asarray(docs.recno, dtype=np.int64)
    bar = _progress(opts.progress, "write kept records", total=len(kept))
    for s_i, s in enumerate(sources):
        m = masks[s_i]
        if m is None:
            continue
        alt = {int(rec[d]): dumps(a).encode("utf-8") for d, a in alternates.items() if src[d] == s_i}
        empty = b"[]"
        for start, lines in s.blocks():
            sel = m[start : start + len(lines)]
            idx = np.flatnonzero(sel).tolist()
            if not idx:
                continue
            out = [_with_alternates(lines[i], alt.get(start + i, empty)) for i in idx]
            out.append(b"")
            f.write(b"\n".join(out))
            if bar is not None:
                bar.update(len(idx))
    if bar is not None:
        bar.close()


def _write_kept_parquet(path, sources, docs, kept_mask, alternates, opts) -> None:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    schema = None
    rows: list[dict] = []

    def flush(tmp_f) -> None:
        nonlocal writer, schema
        if not rows:
            return
        table = pa.Table.from_pylist(rows, schema=schema)
        if writer is None:
            schema = table.schema
            writer = pq.ParquetWriter(tmp_f, schema)
        writer.write_table(table)
        rows.clear()

    with atomic_open(path, "wb") as f:
        for obj, alts in _kept_records(sources, docs, kept_mask, alternates, opts.progress):
            if isinstance(obj, bytes):
                obj = json.loads(obj)
            obj["alternates"] = [str(a) for a in alts]
            rows.append(obj)
            if len(rows) >= 8192:
                flush(f)
        flush(f)
        if writer is None:
            pq.write_table(pa.table({"alternates": pa.array([], pa.list_(pa.string()))}), f)
        else:
            writer.close()
