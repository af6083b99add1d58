"""Segments and a single article's lookup cost after many background folds, with the size-tiered
merge (fold.MERGE_FACTOR) and without it (factor 0: every fold appends a segment). Small and
synthetic, run by hand:

    flock /tmp/neardup-heavy.lock python benchmarks/bench_tiers.py --folds 200 --fold-docs 200

For each mode, on a fresh index: `--folds` rounds of one add of `--fold-docs` synthetic articles
(level 0) followed by ``fold.prepare(ix, factor=F)`` + ``fold.commit`` (what the service's fold
thread does). Then: the segments, the folds' total build time, and over `--queries` new
single-article texts the median of (a) the band and exact lookups alone (what ``Index._plan``
does against every segment: the part that grows with their number) and (b) a whole
``ix.query``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "index"))

import ix_helpers  # noqa: E402

from neardup.index import Index, fold, store  # noqa: E402
from neardup.index.intake import sign  # noqa: E402


def lookup_ms(ix, texts) -> float:
    """Median wall ms of one article's lookups (exact key, then every band) over every segment."""
    conn = ix._conn()
    st = ix._state_for(conn)
    arrays = ix._arrays(st)
    signed = [sign([t], ix.signer, ix.config.bands, ix.config.rows, ix.threads) for t in texts]
    out = []
    for s in signed:
        t0 = time.perf_counter()
        store.lookup([p.exact for p in arrays], s.exact_keys, st.tombstones)
        for j in range(ix.config.bands):
            store.lookup([p.bands[j] for p in arrays], np.ascontiguousarray(s.band_keys[:, j]), st.tombstones)
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def run(factor: int, folds: int, fold_docs: int, queries: list[str], docs: list[dict]) -> dict:
    with tempfile.TemporaryDirectory() as d:
        Index.create(d).close()
        with Index.open(d, l0_max=10**7, l0_fold_at=10**7, background_fold=True) as ix:
            build, written = 0.0, 0
            for i in range(folds):
                ix.add(docs[i * fold_docs : (i + 1) * fold_docs])
                with ix._wlock:
                    ix._writer()
                pf = fold.prepare(ix, factor=factor)
                build += pf.build_s
                written += pf.size
                assert fold.commit(ix, pf)
            segs = [r[0] for r in ix._conn().execute("SELECT docs FROM segments ORDER BY seg")]
            lk = lookup_ms(ix, queries)
            q = []
            for t in queries:
                t0 = time.perf_counter()
                ix.query(t)
                q.append((time.perf_counter() - t0) * 1000)
        return {
            "factor": factor,
            "segments": len(segs),
            "docs": segs if len(segs) <= 12 else f"{max(segs)}..{min(segs)}",
            "fold_build_s": round(build, 2),
            "written_mb": round(written / 1e6, 1),
            "lookup_ms": round(lk, 3),
            "query_ms": round(statistics.median(q), 2),
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", type=int, default=200)
    ap.add_argument("--fold-docs", type=int, default=200)
    ap.add_argument("--queries", type=int, default=200)
    a = ap.parse_args()
    n = a.folds * a.fold_docs
    docs = ix_helpers.synth(originals=n * 7 // 10, copies=n - n * 7 // 10, bridges=0, words=60, seed=5)[:n]
    queries = [d["text"] for d in ix_helpers.synth(originals=a.queries, copies=0, bridges=0, words=60, seed=99)]
    print(f"{a.folds} folds of {a.fold_docs} articles ({n:,} in all), {a.queries} single-article queries")
    for factor in (fold.MERGE_FACTOR, 0):
        print(run(factor, a.folds, a.fold_docs, queries, docs), flush=True)


if __name__ == "__main__":
    main()
