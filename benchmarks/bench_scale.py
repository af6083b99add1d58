"""Issue 5's single-machine benchmark: `neardup dedup` on 1M, 3M and 10M synthetic articles.

For each size: the corpus is written by `neardup synth` (the guide's mix: 5/6 originals of 300
real English words, 1/6 copies in thirds), timed; then `neardup dedup` runs in a child process
whose wall time, CPU time and peak RSS come from wait4, with the per-stage figures from its
report.json; then recall is measured on the planted copies: every copy whose exact Jaccard with
its original (word 5-shingles, as dedup uses) is >= 0.8 must be in its original's cluster.

    python benchmarks/bench_scale.py --sizes 1000000,3000000,10000000 --dir /work/scale
    python benchmarks/bench_scale.py --sizes 1000000 --memory-limit 2G     # the spill path

The corpora are large (1.77 GB of JSONL per million articles): --dir must have room for the
corpus and the kept records (about 1.8x the corpus). Run by hand, never in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from bench_dedup import run_child  # noqa: E402  (wait4: wall, CPU, peak RSS of a child)


def du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def cluster_of(outdir: Path) -> dict:
    """id -> keeper id, for every document in a cluster of two or more."""
    where: dict = {}
    with open(outdir / "clusters.jsonl", "rb") as f:
        for line in f:
            c = json.loads(line)
            where[c["keeper"]] = c["keeper"]
            for m in c["members"]:
                where[m["id"]] = c["keeper"]
    return where


def planted_recall(corpus: Path, outdir: Path, threshold: float = 0.8, batch: int = 8192) -> dict:
    """Recall at J >= threshold over (copy, original) pairs, with exact Jaccard.

    `neardup synth` writes each chunk of originals followed by the copies of those originals,
    so only the current chunk's originals are held; a copy whose original is not among them
    stops the benchmark (the count would otherwise be wrong)."""
    import orjson

    import neardup
    from neardup.stages.verify import HashSets, verify_exact

    shingler = neardup.Shingler(k=5, unit="word")
    where = cluster_of(outdir)
    originals: dict[str, str] = {}
    last_was_copy = False
    pend_ids: list[tuple[str, str, str]] = []  # (copy id, original id, kind)
    pend_texts: list[str] = []
    tally = {"pairs": 0, "at_or_above": 0, "found": 0, "missed": [], "by_kind": {}}

    def flush() -> None:
        if not pend_ids:
            return
        hashes = shingler.hashes_batch(pend_texts)
        sets = HashSets(hashes)
        m = len(pend_ids)
        pairs = np.stack([np.arange(0, 2 * m, 2), np.arange(1, 2 * m, 2)], axis=1)
        sims = verify_exact(sets, pairs)
        for (cid, oid, kind), s in zip(pend_ids, sims.tolist()):
            tally["pairs"] += 1
            k = tally["by_kind"].setdefault(kind, {"pairs": 0, "at_or_above": 0, "found": 0})
            k["pairs"] += 1
            if s >= threshold:
                tally["at_or_above"] += 1
                k["at_or_above"] += 1
                kc, ko = where.get(cid), where.get(oid)
                if kc is not None and kc == ko:
                    tally["found"] += 1
                    k["found"] += 1
                elif len(tally["missed"]) < 20:
                    tally["missed"].append({"copy": cid, "original": oid, "jaccard": round(s, 4)})
        pend_ids.clear()
        pend_texts.clear()

    with open(corpus, "rb") as f:
        for line in f:
            r = orjson.loads(line)
            if r["original_id"] is None:
                if last_was_copy:
                    originals.clear()  # a new chunk of originals
                    last_was_copy = False
                originals[r["id"]] = r["text"]
                continue
            last_was_copy = True
            o = originals.get(r["original_id"])
            if o is None:
                raise SystemExit(f"copy {r['id']}: original {r['original_id']} not in its chunk")
            pend_ids.append((r["id"], r["original_id"], r["copy_kind"]))
            pend_texts += [r["text"], o]
            if len(pend_ids) >= batch:
                flush()
    flush()
    tally["recall"] = tally["found"] / tally["at_or_above"] if tally["at_or_above"] else None
    return tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,3000000,10000000")
    ap.add_argument("--dir", default="/work/scale", help="where corpora and outputs go")
    ap.add_argument("--memory-limit", default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--keep-output", action="store_true", help="keep each size's output directory")
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    base = Path(a.dir)
    base.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in [int(x) for x in a.sizes.split(",")]:
        copies = round(n / 6)
        corpus = base / f"synth-{n}.jsonl"
        row: dict = {"articles": n, "originals": n - copies, "copies": copies}
        if not corpus.exists():
            row["synth"] = run_child(
                [
                    sys.executable,
                    "-m",
                    "neardup",
                    "synth",
                    "-o",
                    str(corpus),
                    "--originals",
                    str(n - copies),
                    "--copies",
                    str(copies),
                ]
            )
        row["corpus_bytes"] = du(corpus)
        out = base / f"out-{n}{a.tag}"
        if out.exists():
            subprocess.run(["rm", "-rf", str(out)], check=True)
        argv = [sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", str(out), "-q", "--json"]
        if a.memory_limit:
            argv += ["--memory-limit", a.memory_limit]
        if a.threads:
            argv += ["--threads", str(a.threads)]
        row["loadavg_start"] = os.getloadavg()
        with open(base / f"report-{n}{a.tag}.stdout", "w") as so:
            row["dedup"] = run_child(argv, stdout=so)
        row["loadavg_end"] = os.getloadavg()
        rep = json.loads((out / "report.json").read_text())
        row["stages"] = [
            {k: s.get(k) for k in ("name", "seconds", "cpu_seconds", "count", "peak_rss_mb", "note")}
            for s in rep["stages"]
        ]
        row["first_pass"] = rep.get("first_pass")
        row["memory"] = rep.get("memory")
        row["counts"] = {
            k: rep[k]
            for k in (
                "documents",
                "exact_copies_removed",
                "signatures",
                "candidates",
                "near_pairs",
                "clusters",
                "copies_removed",
                "kept",
            )
        }
        row["output_bytes"] = {p.name: du(p) for p in sorted(out.iterdir())}
        t0 = time.perf_counter()
        row["recall"] = planted_recall(corpus, out)
        row["recall_seconds"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("articles", "dedup", "counts")}), flush=True)
        print(
            f"  recall at J>=0.8: {row['recall']['recall']:.5f} "
            f"({row['recall']['found']:,} of {row['recall']['at_or_above']:,})",
            flush=True,
        )
        mem = row["memory"] or {}
        if mem.get("limit_bytes"):
            print(
                f"  limit {mem['limit_bytes'] / 2**20:,.0f} MiB, least needed {mem['minimum_bytes'] / 2**20:,.0f} MiB, "
                f"report peak (VmHWM) {rep['peak_rss_mb']:,.0f} MiB; load {row['loadavg_start']} -> "
                f"{row['loadavg_end']}",
                flush=True,
            )
        if not a.keep_output:
            subprocess.run(["rm", "-rf", str(out)], check=True)
    RESULTS.mkdir(exist_ok=True)
    dest = RESULTS / f"scale{a.tag}.json"
    result = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "argv": sys.argv,
        "loadavg_end": os.getloadavg(),
        "rows": rows,
    }
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {dest}")
    print("| articles | wall | CPU | peak RSS | first pass | verify | write | recall |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        st = {s["name"]: s for s in r["stages"]}
        print(
            f"| {r['articles']:,} | {r['dedup']['wall_s']} s | {r['dedup']['cpu_s']} s | "
            f"{r['dedup']['peak_rss_mib']:,.0f} MiB | {r['first_pass']['seconds']:.1f} s | "
            f"{st['verify']['seconds']:.1f} s | {st.get('write', {}).get('seconds', 0):.1f} s | "
            f"{r['recall']['recall']:.4%} |"
        )


if __name__ == "__main__":
    main()
