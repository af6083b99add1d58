"""``neardup eval``: score a dedup run against the exact ground truth."""

from __future__ import annotations

import argparse
import os
from typing import Any

from neardup.cli.exits import EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("eval", help="score a dedup run against the exact ground truth")
    p.add_argument("corpus", nargs="+", metavar="CORPUS", help="the input(s) the run was made on")
    p.add_argument("outdir", metavar="OUTDIR", help="the run's output directory")
    p.add_argument("--threshold", type=float, default=None, help="default: the run's threshold")
    p.add_argument(
        "--png",
        metavar="FILE",
        default=None,
        help="histogram of true pairs' Jaccard, found/missed (default: OUTDIR/eval.png if "
        "matplotlib is installed; 'none' to skip)",
    )
    p.add_argument("--threads", type=int, default=None)


def run(a: argparse.Namespace) -> int:
    from neardup.evaluate import evaluate

    png = a.png
    if png is None:
        try:
            import matplotlib  # noqa: F401

            png = os.path.join(a.outdir, "eval.png")
        except ImportError:
            png = None
    elif png.lower() == "none":
        png = None
    r = evaluate(a.corpus if len(a.corpus) > 1 else a.corpus[0], a.outdir, a.threshold, png, a.threads)
    m = r["measure"]
    name = "Jaccard" if m == "jaccard" else m
    print(
        f"neardup eval: {r['documents']:,} documents, threshold {r['threshold']}"
        + ("" if m == "jaccard" else f", measure {m} (the run's)")
    )
    print(
        f"- ground truth: {r['true_pairs']:,} pairs with exact {name} >= {r['threshold']} "
        f"(exact self-join, not sampled); {r['clusters_true']:,} true clusters"
    )
    print(
        f"- pair recall: {r['pair_recall']:.4f} ({r['true_pairs_found']:,} of {r['true_pairs']:,} true pairs "
        f"in one cluster)"
    )
    print(
        f"- pair precision: {r['pair_precision']:.4f} ({r['reported_pairs_true']:,} of {r['reported_pairs']:,} "
        f"reported pairs truly >= {r['threshold']})"
    )
    print(
        f"- clusters: pairwise precision {r['pairwise_precision']:.4f}, recall {r['pairwise_recall']:.4f}, "
        f"F1 {r['pairwise_f1']:.4f}; adjusted Rand index {r['adjusted_rand_index']:.4f}"
    )
    for bnd in r[f"recall_by_{m}"]:
        print(
            f"    {'J' if m == 'jaccard' else 'C'} {bnd['from']:.2f}-{bnd['to']:.2f}: {bnd['pairs']:>7,} pairs, recall {bnd['recall']:.4f}"
        )
    print(f"wrote {os.path.join(a.outdir, 'eval.json')}" + (f" and {r['png']}" if r.get("png") else ""))
    return EXIT_OK
