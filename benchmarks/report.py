#!/usr/bin/env python3
"""Markdown tables from a bench_signatures.py JSON file: python benchmarks/report.py RESULT.json"""

from __future__ import annotations

import json
import sys


def fmt(x: float | None, nd: int = 1) -> str:
    return "–" if x is None else f"{x:,.{nd}f}"


def main(path: str) -> None:
    d = json.load(open(path))
    m = d["meta"]
    # ratios and targets are recomputed from the raw timings with the current rules
    sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
    import bench_signatures as bs

    res = bs.Results(m["args"]["originals"] + m["args"]["copies"])
    res.rows = d["timings"]
    cores = m["cpu"]["cores"]
    if any(r.get("lib") == "neardup" for r in res.rows):
        d["ratios"] = bs.compute_ratios(res, cores)
        d["targets"] = bs.targets(res, d["accuracy"], cores)
    print(
        f"Run {m['date_utc']} UTC, {m['args']['originals'] + m['args']['copies']:,} documents "
        f"({m['args']['originals']:,} originals + {m['args']['copies']:,} copies, {m['args']['words']} words), "
        f"best of {m['args']['repeat']}; datasketch {m['datasketch']}, rensa {m['rensa']}, neardup {m['neardup']}, "
        f"Python {m['python']}, NumPy {m['numpy']}; load average {m['loadavg_start'][0]:.1f} at start, "
        f"{m['loadavg_end'][0]:.1f} at end; {m['seconds']:.0f} s in all.\n"
    )
    for section, title in (
        ("text->sig", "text → 128-value signature (peers include their Python shingling)"),
        ("python", "the peers' Python shingling alone"),
        ("shingles->sig", "shingle tokens → signature"),
        ("hashes->sig", "64-bit shingle hashes → signature"),
        ("text->hashes", "text → shingle hashes (neardup)"),
        ("simhash", "SimHash fingerprints (neardup)"),
    ):
        rows = [r for r in d["timings"] if r["section"] == section]
        if not rows:
            continue
        print(f"**{title}**\n")
        print("| what | threads | docs | µs/doc wall (best) | µs/doc wall (median) | CPU µs/doc |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            thr = r.get("threads") or ("rayon default" if r.get("lib") == "rensa" else "1")
            print(
                f"| {r['name']} | {thr} | {r['docs']:,} | {fmt(r['us_per_doc'])} | {fmt(r['us_per_doc_median'])} | "
                f"{fmt(r['cpu_us_per_doc'])} |"
            )
        print()
    acc = d["accuracy"]
    ex = acc["_exact"]
    print(
        f"**accuracy against exact Jaccard** — {ex['pairs']} pairs, J from {ex['jaccard_min']:.3f} to "
        f"{ex['jaccard_max']:.3f} (per 0.2 band: {ex['by_band']}); the binomial std √(J(1−J)/128) averages "
        f"{ex['theory_std_mean']:.4f} over these pairs.\n"
    )
    print("| library / scheme | mean error | std | RMSE | MAE | RMSE − datasketch's, 95% CI |")
    print("|---|---:|---:|---:|---:|---|")
    for name, s in acc.items():
        if name.startswith("_"):
            continue
        ci = s.get("rmse_minus_datasketch_ci95")
        cis = f"[{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else "reference"
        print(f"| {name} | {s['mean_error']:+.4f} | {s['std']:.4f} | {s['rmse']:.4f} | {s['mae']:.4f} | {cis} |")
    print()
    if d["ratios"]:
        keys = [k for k in d["ratios"][0] if k != "peer"]
        print("**ratios, peer ÷ neardup multiply-shift (unit=word)**\n")
        print("| peer | " + " | ".join(k.replace("_", " ") for k in keys) + " |")
        print("|---|" + "---:|" * len(keys))
        for r in d["ratios"]:
            print(f"| {r['peer']} | " + " | ".join(f"{r[k]:.1f}×" for k in keys) + " |")
        print()
    if d["targets"]:
        print("**issue 2's targets**\n")
        print("| target | measured | met? | note |")
        print("|---|---:|---|---|")
        for t in d["targets"]:
            v = t["value"]
            vs = "–" if v is None else (f"{v:.4f}" if v < 1 else f"{v:.1f}")
            print(f"| {t['target']} | {vs} | {'yes' if t['met'] else '**no**'} | {t.get('note', '')} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
