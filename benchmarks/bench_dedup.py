"""Issue 3's benchmark: the whole `neardup dedup` against the guide's datasketch pipeline.

Same input, same machine, one script. Each engine runs in its own child process, so wall
time, CPU time and peak RSS (from wait4) are that engine's alone. Both write the same
clusters.jsonl / pairs.jsonl layout and are scored by `neardup eval` against the exact ground
truth (an exact self-join of the corpus, never sampled).

The guide's pipeline, as the guide builds it on datasketch 2.0.0: exact pass on lower-cased,
space-folded text; word 5-shingles (`text.lower().split()`); `MinHash(num_perm=128)` with
`update_batch`; `MinHashLSH(params=(16, 8))`, each document queried before it is inserted;
exact Jaccard of every candidate on the shingle sets, kept at >= 0.8; union-find; the
earliest document of each cluster kept.

    python benchmarks/bench_dedup.py                       # the guide's 120,000 articles
    python benchmarks/bench_dedup.py --reuters             # Reuters-21578 from ../shared/data
    python benchmarks/bench_dedup.py --originals 20000 --copies 4000   # a quicker look

Run by hand, never in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "results"
REUTERS = HERE.parent.parent / "shared" / "data" / "reuters21578.jsonl.gz"


def run_child(argv: list[str], **popen) -> dict:
    """Run a command; its wall seconds, CPU seconds and peak RSS (MiB) from wait4."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, **popen)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv[:4]}... exited with {code}")
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
        "peak_rss_mib": round(ru.ru_maxrss / 1024, 1),
    }


# --------------------------------------------------------------------------- datasketch side


def datasketch_pipeline(corpus: str, outdir: str, id_field: str, text_field: str) -> None:
    """The guide's pipeline on datasketch 2.0.0 (runs in the child process)."""
    import gzip
    import re

    from datasketch import MinHash, MinHashLSH

    stages: dict[str, float] = {}
    opener = gzip.open if corpus.endswith(".gz") else open
    t = time.perf_counter()
    ids, texts = [], []
    with opener(corpus, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            text = rec.get(text_field)
            if not isinstance(text, str):
                continue
            ids.append(str(rec[id_field]))
            texts.append(text)
    stages["read"] = time.perf_counter() - t

    # Exact pass: lower case and single spaces.
    t = time.perf_counter()
    first: dict[str, int] = {}
    exact_pairs = []
    space = re.compile(r"\s+")
    todo = []
    for i, text in enumerate(texts):
        key = space.sub(" ", text.lower()).strip()
        j = first.setdefault(key, i)
        if j != i:
            exact_pairs.append((j, i, 1.0))
        else:
            todo.append(i)
    stages["exact"] = time.perf_counter() - t

    def shingles(text: str, k: int = 5) -> set[str]:
        words = text.lower().split()
        return {" ".join(words[i : i + k]) for i in range(len(words) - k + 1)}

    t = time.perf_counter()
    sets = {i: shingles(texts[i]) for i in todo}
    stages["shingles"] = time.perf_counter() - t

    t = time.perf_counter()
    sigs = {}
    for i in todo:
        m = MinHash(num_perm=128)
        m.update_batch([s.encode() for s in sets[i]])
        sigs[i] = m
    stages["minhash"] = time.perf_counter() - t

    t = time.perf_counter()
    lsh = MinHashLSH(num_perm=128, params=(16, 8))
    candidates = []
    for i in todo:
        for j in lsh.query(sigs[i]):
            candidates.append((j, i))
        lsh.insert(i, sigs[i])
    stages["lsh"] = time.perf_counter() - t

    t = time.perf_counter()
    verified = []
    for j, i in candidates:
        a, b = sets[j], sets[i]
        u = len(a | b)
        jac = len(a & b) / u if u else 0.0
        if jac >= 0.8:
            verified.append((j, i, jac))
    stages["verify"] = time.perf_counter() - t

    t = time.perf_counter()
    parent = list(range(len(texts)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b, _ in exact_pairs + verified:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(len(texts)):
        groups.setdefault(find(i), []).append(i)
    stages["union_find"] = time.perf_counter() - t

    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "clusters.jsonl"), "w", encoding="utf-8") as f:
        c = 0
        for members in groups.values():
            if len(members) < 2:
                continue
            keeper = min(members)
            f.write(
                json.dumps(
                    {
                        "cluster": c,
                        "keeper": ids[keeper],
                        "size": len(members),
                        "members": [{"id": ids[m]} for m in members if m != keeper],
                    }
                )
                + "\n"
            )
            c += 1
    with open(os.path.join(outdir, "pairs.jsonl"), "w", encoding="utf-8") as f:
        for a, b, s in verified:
            f.write(json.dumps({"a": ids[a], "b": ids[b], "similarity": s}) + "\n")
    summary = {
        "documents": len(texts),
        "exact_copies_removed": len(exact_pairs),
        "candidates": len(candidates),
        "verified_pairs": len(verified),
        "clusters": c,
        "copies_removed": sum(len(m) - 1 for m in groups.values()),
        "stages_s": {k: round(v, 2) for k, v in stages.items()},
    }
    with open(os.path.join(outdir, "datasketch_summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)


# --------------------------------------------------------------------------- driver


def neardup_argv(corpus: str, outdir: str, extra: list[str]) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import sys; from neardup.cli import main; sys.exit(main())",
        "dedup",
        corpus,
        "-o",
        outdir,
        "--quiet",
        *extra,
    ]


def score(corpus: str, outdir: str, options_from: str | None = None) -> dict:
    from neardup.evaluate import evaluate

    if options_from:  # the datasketch run is scored with the neardup run's shingle settings
        with open(os.path.join(options_from, "report.json"), encoding="utf-8") as f:
            rep = json.load(f)
        with open(os.path.join(outdir, "report.json"), "w", encoding="utf-8") as f:
            json.dump({"options": rep["options"]}, f)
    r = evaluate(corpus, outdir, write=False)
    keys = (
        "true_pairs",
        "true_pairs_found",
        "pair_recall",
        "reported_pairs",
        "pair_precision",
        "reported_pairs_min_jaccard",
        "pairwise_f1",
        "adjusted_rand_index",
        "recall_by_jaccard",
    )
    return {k: r[k] for k in keys}


def compare(name: str, corpus: str, fields: list[str], id_field: str, text_field: str, skip_ds: bool) -> dict:
    out = HERE / "out" / name
    nd_out, ds_out = str(out / "neardup"), str(out / "datasketch")
    print(f"\n== {name}: neardup dedup", flush=True)
    nd = run_child(neardup_argv(corpus, nd_out, fields))
    with open(os.path.join(nd_out, "report.json"), encoding="utf-8") as f:
        rep = json.load(f)
    nd.update(
        {
            k: rep.get(k)
            for k in ("documents", "exact_copies_removed", "candidates", "verified_pairs", "clusters", "copies_removed")
        }
    )
    nd["stages_s"] = {s["name"]: s["seconds"] for s in rep["stages"]}
    nd["eval"] = score(corpus, nd_out)
    result = {"corpus": corpus, "neardup": nd}
    if not skip_ds:
        print(f"== {name}: the guide's datasketch pipeline", flush=True)
        ds = run_child([sys.executable, __file__, "--_datasketch", corpus, ds_out, id_field, text_field])
        with open(os.path.join(ds_out, "datasketch_summary.json"), encoding="utf-8") as f:
            ds.update(json.load(f))
        ds["eval"] = score(corpus, ds_out, options_from=nd_out)
        result["datasketch"] = ds
        result["speedup_wall"] = round(ds["wall_s"] / nd["wall_s"], 1)
        result["speedup_cpu"] = round(ds["cpu_s"] / nd["cpu_s"], 1)
    return result


def table(res: dict) -> str:
    rows = [
        ("wall s", "wall_s"),
        ("CPU s", "cpu_s"),
        ("peak RSS MiB", "peak_rss_mib"),
        ("exact copies removed", "exact_copies_removed"),
        ("candidates", "candidates"),
        ("verified pairs", "verified_pairs"),
        ("clusters", "clusters"),
        ("copies removed", "copies_removed"),
    ]
    engines = [e for e in ("neardup", "datasketch") if e in res]
    lines = ["| | " + " | ".join(engines) + " |", "|---|" + "---|" * len(engines)]
    for label, key in rows:
        lines.append(f"| {label} | " + " | ".join(str(res[e].get(key)) for e in engines) + " |")
    for label, key in (
        ("recall of true pairs (J >= 0.8)", "pair_recall"),
        ("precision of reported pairs", "pair_precision"),
        ("lowest J among reported pairs", "reported_pairs_min_jaccard"),
        ("pairwise F1", "pairwise_f1"),
        ("adjusted Rand index", "adjusted_rand_index"),
    ):
        vals = []
        for e in engines:
            v = res[e]["eval"][key]
            vals.append(f"{v:.4f}" if isinstance(v, float) else str(v))
        lines.append(f"| {label} | " + " | ".join(vals) + " |")
    if "speedup_wall" in res:
        lines.append(
            f"| **speed-up** (datasketch / neardup) | wall {res['speedup_wall']}x, CPU {res['speedup_cpu']}x | |"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--_datasketch":
        datasketch_pipeline(*sys.argv[2:6])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--originals", type=int, default=100_000)
    ap.add_argument("--copies", type=int, default=20_000)
    ap.add_argument("--corpus", help="an existing synthetic corpus (default: made with neardup.synth)")
    ap.add_argument("--reuters", action="store_true", help="Reuters-21578 instead of the synthetic corpus")
    ap.add_argument("--skip-datasketch", action="store_true")
    ap.add_argument("--json", help="write the results here (default benchmarks/results/dedup_<name>.json)")
    args = ap.parse_args()

    if args.reuters:
        name, corpus = "reuters", str(REUTERS)
        fields = ["--time-field", "date", "--on-error", "skip"]
    else:
        name = f"synth_{args.originals}_{args.copies}"
        corpus = args.corpus or str(DATA / f"{name}.jsonl")
        fields = ["--prefer-source", "agency"]
        if not os.path.exists(corpus):
            from neardup.synth import write_corpus

            DATA.mkdir(parents=True, exist_ok=True)
            print(f"writing {corpus}", flush=True)
            write_corpus(corpus, originals=args.originals, copies=args.copies)
    res = compare(name, corpus, fields, "id", "text", args.skip_datasketch)
    res["load_average_after"] = os.getloadavg()
    print("\n" + table(res))
    RESULTS.mkdir(exist_ok=True)
    path = args.json or str(RESULTS / f"dedup_{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
    print(f"\nresults in {path}")


if __name__ == "__main__":
    main()
