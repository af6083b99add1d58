"""A/B of two builds of neardup on the same machine, in alternating runs (run by hand).

    python benchmarks/bench_ab.py --b-path NEW/python --corpus guide.jsonl --rounds 8
    python benchmarks/bench_ab.py --b-path NEW/python --index-out DIR --rounds 8 [--load]

Arm A is the neardup installed in this interpreter's environment; arm B is the same
interpreter with ``PYTHONPATH=--b-path`` (a source tree whose ``neardup/`` holds its compiled
``_core``). ``--corpus``: ``neardup dedup CORPUS`` (wall time, report seconds and stages, peak
RSS, the answer's counts, which must agree). ``--index-out``: the day's add of
``bench_index.py --keep --day-only`` on the kept 1M snapshot (build it once with
``bench_index.py --out DIR --skip-load``); ``--load`` also one 60 s POST window at 200/s per arm
and round. The arms alternate, and the first arm flips each round (the machine's drift falls
on both). Writes JSON lines to ``--out`` and prints medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _env(path: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if path:
        env["PYTHONPATH"] = path
    return env


def dedup_run(corpus: str, path: str | None) -> dict:
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-m", "neardup.cli", "dedup", corpus, "-o", out, "-q", "--json"],
            env=_env(path),
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - t0
    rep = json.loads(p.stdout)
    return {
        "wall_s": round(wall, 3),
        "report_s": rep["seconds"],
        "peak_mib": rep["peak_rss_mb"],
        "clusters": rep["clusters"],
        "kept": rep["kept"],
        "stages": {s["name"]: s["seconds"] for s in rep["stages"]},
    }


def index_run(out_dir: str, path: str | None, load: bool) -> dict:
    script = os.path.join(HERE, "bench_index.py")
    subprocess.run(
        [sys.executable, script, "--out", out_dir, "--keep", "--day-only"],
        env=_env(path),
        capture_output=True,
        text=True,
        check=True,
    )
    with open(os.path.join(out_dir, "results-day.json")) as f:
        r = json.load(f)
    row = {
        "day_add_s": r["day_add_s"],
        "in_process_s": r["day_add_stages"]["add_s"],
        "stages": r["day_add_stages"]["stages"],
    }
    if load:
        subprocess.run(
            [
                sys.executable,
                script,
                "--out",
                out_dir,
                "--keep",
                "--rates",
                "200",
                "--duration",
                "60",
                "--sync",
                "full",
                "--writers",
                "process",
            ],
            env=_env(path),
            capture_output=True,
            text=True,
            check=True,
        )
        with open(os.path.join(out_dir, "results.json")) as f:
            row["load"] = json.load(f).get("load")
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--b-path", required=True, help="PYTHONPATH of arm B (a tree with neardup/ and its _core)")
    ap.add_argument("--corpus", help="dedup this file in each run")
    ap.add_argument("--index-out", help="bench_index.py's OUT with a kept 1M snapshot: the day's add")
    ap.add_argument("--load", action="store_true", help="with --index-out: a 60 s POST window at 200/s too")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--out", default="ab.jsonl")
    a = ap.parse_args()
    if not (a.corpus or a.index_out):
        ap.error("give --corpus or --index-out")
    rows = []
    with open(a.out, "a") as f:
        for r in range(1, a.rounds + 1):
            for arm in ("A", "B") if r % 2 else ("B", "A"):
                path = a.b_path if arm == "B" else None
                row = dedup_run(a.corpus, path) if a.corpus else index_run(a.index_out, path, a.load)
                row.update(round=r, arm=arm)
                rows.append(row)
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(json.dumps({k: v for k, v in row.items() if k not in ("stages", "load")}), flush=True)
    key = "wall_s" if a.corpus else "day_add_s"
    for arm in ("A", "B"):
        xs = [x[key] for x in rows if x["arm"] == arm]
        print(f"{arm}: {key} median {statistics.median(xs):.3f} (min {min(xs):.3f}, max {max(xs):.3f}, n {len(xs)})")
    if a.corpus:
        answers = {(x["clusters"], x["kept"]) for x in rows}
        print("answers agree" if len(answers) == 1 else f"ANSWERS DIFFER: {sorted(answers)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
