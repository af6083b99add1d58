"""``neardup eval``: exact ground truth for a corpus and how well a dedup run matched it.

Ground truth is the exact similarity self-join of the corpus (AllPairs with prefix filtering,
in Rust): every pair with Jaccard >= the threshold on the same shingles the run used, found
exactly, never sampled; for a ``--measure containment`` run, every pair whose containment
(shared shingles over the smaller set's) is >= the threshold (:func:`containment_join`).
True clusters are the connected components of those pairs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup import _sets
from neardup.errors import InputFileError, InvalidInputError, InvalidParameterError, RecordError
from neardup.evaluate.metrics import adjusted_rand_index, co_clustered, pairwise_scores
from neardup.graph import connected_components
from neardup.io.readers import open_sources
from neardup.io.records import Fields, Limits, check_record
from neardup.io.writers import atomic_open
from neardup.settings import DEFAULT_MAX_CHARS
from neardup.shingle import Shingler
from neardup.stages.verify import HashSets, self_join, verify_exact

__all__ = ["GroundTruth", "ground_truth", "containment_join", "evaluate"]

#: The measures a run can verify with (``--measure``), which eval scores it by.
MEASURES = ("jaccard", "containment")


@dataclass
class GroundTruth:
    ids: list[Any]
    pairs: np.ndarray  # (m, 2) document indices, i < j
    jaccard: np.ndarray  # (m,) each pair's similarity by `measure` (Jaccard, or containment)
    sets: HashSets
    measure: str = "jaccard"

    def labels(self) -> np.ndarray:
        return np.asarray(connected_components(len(self.ids), self.pairs.astype(np.uint32)), dtype=np.int64)


def ground_truth(
    inputs,
    threshold: float,
    *,
    fields: Fields = Fields(),
    k: int = 5,
    unit: str = "word",
    on_error: str = "stop",
    max_chars: int = DEFAULT_MAX_CHARS,
    threads: int | None = None,
    batch_size: int = 8192,
    measure: str = "jaccard",
) -> GroundTruth:
    """Every pair of documents with exact Jaccard (or, with ``measure="containment"``,
    containment) >= threshold (prefix-filtering self-join)."""
    if measure not in MEASURES:
        raise InvalidParameterError(f"measure must be one of {MEASURES}, got {measure!r}")
    shingler = Shingler(k=k, unit=unit, seed=0)
    limits = Limits(max_chars=max_chars)
    ids: list[Any] = []
    seen: set[str] = set()
    sets: list[np.ndarray] = []
    texts: list[str] = []
    sources = open_sources(inputs)
    try:
        for src in sources:
            for recno, rec in src.records():
                try:
                    if isinstance(rec, RecordError):
                        raise rec
                    c = check_record(rec, fields, limits, src.name, recno)
                    if c.key in seen:
                        raise RecordError(src.name, recno, f"duplicate id {c.key!r}", field=fields.id)
                except RecordError:
                    if on_error == "skip":
                        continue
                    raise
                seen.add(c.key)
                ids.append(c.id)
                texts.append(c.text)
                if len(texts) >= batch_size:
                    sets.extend(shingler.hashes_batch(texts, threads=threads))
                    texts.clear()
        if texts:
            sets.extend(shingler.hashes_batch(texts, threads=threads))
    finally:
        for s in sources:
            s.close()
    hs = HashSets(sets)
    if measure == "containment":
        pairs, jac = containment_join(hs, threshold, threads)
    else:
        pairs, jac = self_join(hs, threshold, threads)
    return GroundTruth(
        ids=ids,
        pairs=np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
        jaccard=np.asarray(jac),
        sets=hs,
        measure=measure,
    )


#: Candidate pairs expanded at a time by :func:`containment_join` (16 bytes each, twice).
_JOIN_CHUNK = 1 << 22


def containment_join(sets: HashSets, threshold: float, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (i < j) whose exact containment, shared items over the smaller set's, is
    >= threshold, and that containment; empty sets match nothing.

    Exact by prefix filtering: with items ranked by rising document frequency, a pair with
    containment >= t shares at least ``o = ceil(t m)`` items, m the smaller set's size, so the
    smaller set's first ``m - o + 1`` items hold one of the other's (else the shared items all
    sit in its last o - 1). Each set probes the full posting lists of its prefix's (rare)
    items for the sets at least its size; every candidate is then verified exactly (Rust)."""
    sizes = sets.sizes()
    n = len(sizes)
    empty = np.zeros((0, 2), np.int64), np.zeros(0, np.float64)
    if not len(sets.data) or n < 2:
        return empty
    doc = np.repeat(np.arange(n, dtype=np.int64), sizes)
    uniq, inv, freq = np.unique(sets.data, return_inverse=True, return_counts=True)
    order = np.lexsort((uniq, freq))  # rarest first (ties by value)
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    r = rank[inv.reshape(-1)]
    del inv, uniq
    # postings: the sets holding each item, by rank
    by_rank = np.argsort(r, kind="stable")
    post_doc = doc[by_rank]
    post_start = np.zeros(len(freq) + 1, np.int64)
    np.cumsum(freq[order], out=post_start[1:])
    # each set's prefix: its m - o + 1 rarest items, o = floor(t m) at least 1 (floor, not
    # ceil: a float a hair above the integer never shortens a prefix; a longer one only adds
    # candidates, all verified)
    o = np.maximum(1, np.floor(float(threshold) * sizes).astype(np.int64))
    plen = np.where(sizes > 0, sizes - o + 1, 0)
    in_set = np.lexsort((r, doc))  # each set's items by rank (sets stay in their order)
    pos = np.arange(len(doc), dtype=np.int64) - sets.offsets[:-1][doc[in_set]]
    pre = in_set[pos < plen[doc[in_set]]]
    px, pr = doc[pre], r[pre]
    del pos, in_set, pre, doc, r, by_rank
    counts = post_start[pr + 1] - post_start[pr]
    ends = np.cumsum(counts)
    keys: list[np.ndarray] = []
    lo = 0
    while lo < len(px):
        hi = int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + _JOIN_CHUNK, side="right"))
        hi = max(hi, lo + 1)
        c = counts[lo:hi]
        xs = np.repeat(px[lo:hi], c)
        first = np.cumsum(c) - c
        idx = np.arange(int(c.sum()), dtype=np.int64) - np.repeat(first - post_start[pr[lo:hi]], c)
        ys = post_doc[idx]
        sx, sy = sizes[xs], sizes[ys]
        keep = (sy > sx) | ((sy == sx) & (ys > xs))
        a, b = np.minimum(xs[keep], ys[keep]), np.maximum(xs[keep], ys[keep])
        keys.append(_sets.unique(a * n + b))
        lo = hi
    cand = _sets.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
    if not len(cand):
        return empty
    pairs = np.stack([cand // n, cand % n], axis=1)
    sim = np.asarray(verify_exact(sets, pairs, "containment", threads), dtype=np.float64)
    ok = sim >= threshold
    return pairs[ok], sim[ok]


def _read_jsonl(path: str) -> list[dict]:
    """The objects of a run's output file; :class:`InputFileError` naming the line that is not
    one (a truncated or edited file gave a traceback, exit 1)."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise InputFileError(f"{path}:{i}: not a line of a dedup run's output ({exc})") from None
                if not isinstance(obj, dict):
                    raise InputFileError(f"{path}:{i}: not a line of a dedup run's output (a JSON object)")
                out.append(obj)
    except InputFileError:
        raise
    except OSError as exc:  # (FileNotFoundError too: a run's output directory has every file)
        raise InputFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return out


def evaluate(
    corpus,
    outdir: str,
    threshold: float | None = None,
    png: str | None = None,
    threads: int | None = None,
    write: bool = True,
) -> dict:
    """Compare a dedup run's outputs in `outdir` with the exact ground truth of `corpus`."""
    report = _report(outdir)
    o = report["options"]
    fields = Fields(**{**o["fields"], "time": None, "source": None})  # only ids and texts matter here
    t = threshold if threshold is not None else o["threshold"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 < t <= 1.0:
        raise InvalidParameterError(f"threshold must be in (0, 1], got {t!r}")
    t = float(t)
    # the run's measure: a --measure containment run scored against Jaccard read precision 0
    measure = o.get("measure", "jaccard")
    if measure not in MEASURES:
        raise InputFileError(
            f"{os.path.join(outdir, 'report.json')}: the run's measure {measure!r} is not one "
            f"eval knows ({', '.join(MEASURES)})"
        )
    if png:  # the path checked before the ground truth is computed (minutes on a large corpus)
        from neardup.evaluate.plot import png_path

        png = png_path(png, "eval.png")
    gt = ground_truth(
        corpus,
        t,
        fields=fields,
        k=o["k"],
        unit=o["unit"],
        on_error=o["on_error"],
        max_chars=o["max_chars"],
        threads=threads,
        measure=measure,
    )
    n = len(gt.ids)
    index = {str(i): d for d, i in enumerate(gt.ids)}
    pred = np.arange(n, dtype=np.int64)  # singletons: their own label
    unknown = 0
    for row in _read_jsonl(os.path.join(outdir, "clusters.jsonl")):
        try:
            members = [row["keeper"]] + [m["id"] for m in row["members"]]
            cluster = int(row["cluster"])
        except (KeyError, TypeError, ValueError):
            raise InputFileError(
                f"{os.path.join(outdir, 'clusters.jsonl')}: a line is not a cluster of a dedup "
                "run (keeper, members, cluster)"
            ) from None
        idx = [index.get(str(m)) for m in members]
        unknown += sum(i is None for i in idx)
        known = [i for i in idx if i is not None]
        if known:
            pred[known] = n + cluster
    if unknown or report.get("documents") not in (None, n):
        # scores against another corpus than the run's are meaningless (they read 1.0: its
        # clusters' ids were simply not found)
        raise InvalidInputError(
            f"{outdir} is not a run over this corpus: the run read {report.get('documents', '?'):,} documents, "
            f"the corpus has {n:,}"
            + (f", and {unknown:,} ids of its clusters are not in the corpus" if unknown else "")
            + " (give the corpus the run read, then the run's output directory)"
        )
    found = co_clustered(pred, gt.pairs)
    # precision of the reported pairs: the exact measure of each against the threshold
    rep = _read_jsonl(os.path.join(outdir, "pairs.jsonl"))
    try:
        rp = np.array([[index.get(str(r["a"]), -1), index.get(str(r["b"]), -1)] for r in rep], dtype=np.int64).reshape(
            -1, 2
        )
    except (TypeError, KeyError):
        raise InputFileError(
            f'{os.path.join(outdir, "pairs.jsonl")}: a line is not a pair of a dedup run (no "a" and "b")'
        ) from None
    rp = rp[(rp >= 0).all(axis=1)]
    rj = verify_exact(gt.sets, rp, measure, threads) if len(rp) else np.zeros(0)
    true_labels = gt.labels()
    pw = pairwise_scores(true_labels, pred)
    result = {
        "corpus": [os.fspath(c) for c in corpus] if isinstance(corpus, (list, tuple)) else os.fspath(corpus),
        "outdir": os.fspath(outdir),
        "threshold": t,
        "measure": measure,
        "documents": n,
        "ground_truth": "exact self-join (AllPairs, prefix filtering): every pair, not sampled",
        "true_pairs": int(len(gt.pairs)),
        "true_pairs_found": int(found.sum()),
        "pair_recall": float(found.mean()) if len(found) else 1.0,
        "reported_pairs": int(len(rp)),
        "reported_pairs_true": int((rj >= t).sum()),
        "pair_precision": float((rj >= t).mean()) if len(rj) else 1.0,
        f"reported_pairs_min_{measure}": float(rj.min()) if len(rj) else None,
        "clusters_true": int(len(_sets.unique(true_labels)) - int((np.bincount(true_labels) == 1).sum())),
        "clusters_predicted": int(len({int(x) for x in pred if x >= n})),
        "pairwise_precision": pw["precision"],
        "pairwise_recall": pw["recall"],
        "pairwise_f1": pw["f1"],
        "adjusted_rand_index": adjusted_rand_index(true_labels, pred),
        "unknown_ids_in_output": unknown,
    }
    # recall by similarity band, as the guide reports it (e.g. 0.80-0.85)
    edges = np.round(np.arange(t, 1.0001, 0.05), 4)
    bands = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (gt.jaccard >= lo) & ((gt.jaccard < hi) if hi < 1.0 else (gt.jaccard <= 1.0))
        if sel.any():
            bands.append(
                {"from": float(lo), "to": float(hi), "pairs": int(sel.sum()), "recall": float(found[sel].mean())}
            )
    result[f"recall_by_{measure}"] = bands
    if write:
        with atomic_open(os.path.join(outdir, "eval.json")) as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    if png:
        from neardup.evaluate.plot import histogram

        histogram(gt.jaccard, found, t, png, measure)
        result["png"] = png
    return result


def _report(outdir: str) -> dict:
    """The run's report.json; :class:`InputFileError` saying what is wrong with `outdir`."""
    path = os.path.join(outdir, "report.json")
    if not os.path.isdir(outdir):
        raise InputFileError(f"{outdir}: not a directory: give the corpus first, then the run's output directory")
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except FileNotFoundError:
        raise InputFileError(f"{outdir}: no report.json: not the output directory of a neardup dedup run") from None
    except (OSError, ValueError) as exc:
        raise InputFileError(f"{path}: cannot read it as JSON: {exc}") from None
    o = report.get("options") if isinstance(report, dict) else None
    if not isinstance(o, dict) or not all(
        k in o for k in ("fields", "threshold", "k", "unit", "on_error", "max_chars")
    ):
        raise InputFileError(f"{path}: not the report of a neardup dedup run (its options are missing)")
    return report
