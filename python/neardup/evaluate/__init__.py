"""``neardup eval``: exact ground truth for a corpus and how well a dedup run matched it.

Ground truth is the exact similarity self-join of the corpus (AllPairs with prefix filtering,
in Rust): every pair with Jaccard >= the threshold on the same shingles the run used, found
exactly, never sampled. True clusters are the connected components of those pairs.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

import neardup
from neardup.evaluate.metrics import adjusted_rand_index, co_clustered, pairwise_scores
from neardup.errors import InvalidInputError, InvalidParameterError
from neardup.io.errors import InputFileError, RecordError
from neardup.io.readers import open_sources
from neardup.io.records import Fields, Limits, check_record
from neardup.io.writers import atomic_open
from neardup.pipeline.verify import HashSets, self_join, verify_exact

__all__ = ["GroundTruth", "ground_truth", "evaluate"]


@dataclass
class GroundTruth:
    ids: list[Any]
    pairs: np.ndarray  # (m, 2) document indices, i < j
    jaccard: np.ndarray  # (m,)
    sets: HashSets

    def labels(self) -> np.ndarray:
        return np.asarray(neardup.connected_components(len(self.ids), self.pairs.astype(np.uint32)), dtype=np.int64)


def ground_truth(inputs, threshold: float, *, fields: Fields = Fields(), k: int = 5, unit: str = "word",
                 on_error: str = "stop", max_chars: int = 5_000_000, threads: int | None = None,
                 batch_size: int = 8192) -> GroundTruth:
    """Every pair of documents with exact Jaccard >= threshold (prefix-filtering self-join)."""
    shingler = neardup.Shingler(k=k, unit=unit, seed=0)
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
    pairs, jac = self_join(hs, threshold, threads)
    return GroundTruth(ids=ids, pairs=np.asarray(pairs, dtype=np.int64).reshape(-1, 2), jaccard=np.asarray(jac), sets=hs)


def _read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def evaluate(corpus, outdir: str, threshold: float | None = None, png: str | None = None,
             threads: int | None = None, write: bool = True) -> dict:
    """Compare a dedup run's outputs in `outdir` with the exact ground truth of `corpus`."""
    report = _report(outdir)
    o = report["options"]
    fields = Fields(**{**o["fields"], "time": None, "source": None})  # only ids and texts matter here
    t = threshold if threshold is not None else o["threshold"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 < t <= 1.0:
        raise InvalidParameterError(f"threshold must be in (0, 1], got {t!r}")
    t = float(t)
    gt = ground_truth(corpus, t, fields=fields, k=o["k"], unit=o["unit"], on_error=o["on_error"],
                      max_chars=o["max_chars"], threads=threads)
    n = len(gt.ids)
    index = {str(i): d for d, i in enumerate(gt.ids)}
    pred = np.arange(n, dtype=np.int64)  # singletons: their own label
    unknown = 0
    for row in _read_jsonl(os.path.join(outdir, "clusters.jsonl")):
        members = [row["keeper"]] + [m["id"] for m in row["members"]]
        idx = [index.get(str(m)) for m in members]
        unknown += sum(i is None for i in idx)
        idx = [i for i in idx if i is not None]
        if idx:
            pred[idx] = n + int(row["cluster"])
    if unknown or report.get("documents") not in (None, n):
        # scores against another corpus than the run's are meaningless (they read 1.0: its
        # clusters' ids were simply not found)
        raise InvalidInputError(
            f"{outdir} is not a run over this corpus: the run read {report.get('documents', '?'):,} documents, "
            f"the corpus has {n:,}" + (f", and {unknown:,} ids of its clusters are not in the corpus" if unknown else "")
            + " (give the corpus the run read, then the run's output directory)")
    found = co_clustered(pred, gt.pairs)
    # precision of the reported pairs: exact Jaccard of each against the threshold
    rep = _read_jsonl(os.path.join(outdir, "pairs.jsonl"))
    rp = np.array([[index.get(str(r["a"]), -1), index.get(str(r["b"]), -1)] for r in rep], dtype=np.int64).reshape(-1, 2)
    rp = rp[(rp >= 0).all(axis=1)]
    rj = verify_exact(gt.sets, rp, "jaccard", threads) if len(rp) else np.zeros(0)
    true_labels = gt.labels()
    pw = pairwise_scores(true_labels, pred)
    result = {
        "corpus": [os.fspath(c) for c in corpus] if isinstance(corpus, (list, tuple)) else os.fspath(corpus),
        "outdir": os.fspath(outdir),
        "threshold": t,
        "documents": n,
        "ground_truth": "exact self-join (AllPairs, prefix filtering): every pair, not sampled",
        "true_pairs": int(len(gt.pairs)),
        "true_pairs_found": int(found.sum()),
        "pair_recall": float(found.mean()) if len(found) else 1.0,
        "reported_pairs": int(len(rp)),
        "reported_pairs_true": int((rj >= t).sum()),
        "pair_precision": float((rj >= t).mean()) if len(rj) else 1.0,
        "reported_pairs_min_jaccard": float(rj.min()) if len(rj) else None,
        "clusters_true": int(len(np.unique(true_labels)) - int((np.bincount(true_labels) == 1).sum())),
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
            bands.append({"from": float(lo), "to": float(hi), "pairs": int(sel.sum()), "recall": float(found[sel].mean())})
    result["recall_by_jaccard"] = bands
    if write:
        with atomic_open(os.path.join(outdir, "eval.json")) as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    if png:
        from neardup.evaluate.plot import histogram

        if os.path.isdir(png):
            png = os.path.join(png, "eval.png")
        elif not os.path.splitext(png)[1]:
            png += ".png"  # (matplotlib adds it: the file written is named for what is said)
        histogram(gt.jaccard, found, t, png)
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
    if not isinstance(o, dict) or not all(k in o for k in ("fields", "threshold", "k", "unit", "on_error", "max_chars")):
        raise InputFileError(f"{path}: not the report of a neardup dedup run (its options are missing)")
    return report
