"""The service's latency across a fold of level 0: inline (in the request that fills level 0)
against background (index/fold.py), on the same index, in the same session (run by hand).

    python benchmarks/bench_index.py --archive 200000 --day 20000 --out OUT --skip-load   # the index
    flock /tmp/neardup-heavy.lock python benchmarks/bench_fold.py --out OUT

Level 0 of a copy of OUT/ix is first filled with `--fill` new articles (in adds smaller than
segment_min, so they stay in level 0), just under the 50,000 at which the inline fold happens;
then, for each round, each mode on a fresh copy of that (inline, background, and none: no fold
in the window, the control): ``neardup serve --fold MODE`` and
bench_index's open-loop load generator (one article per POST at `--rate` for `--duration` s),
which crosses the fold. Figures: p50/p99/max latency per mode, and the index's segments and
level 0 after the run (to show that the fold happened).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_index  # noqa: E402

#: neardup serve's options per mode; "none": no fold in the window (level 0 stays under the
#: background fold's threshold and the 2 x l0_max backstop), the control
MODES = {
    "inline": ("--fold", "inline"),
    "background": ("--fold", "background"),
    "none": ("--fold", "background", "--l0-fold-at", "100000000"),
}


def fill_level0(base: str, out: str, n: int, chunk: int) -> None:
    from neardup.index import Index

    src = os.path.join(out, f"fill-{n}.jsonl")
    if not os.path.exists(src):
        bench_index.make_corpus(src + ".tmp", n, 300, seed=97)  # another vocabulary: new stories
        with open(src + ".tmp") as f, open(src, "w") as g:
            for line in f:
                r = json.loads(line)
                r["id"] = "fill-" + r["id"]
                g.write(json.dumps(r) + "\n")
        os.unlink(src + ".tmp")
    with open(src) as f:
        rows = [json.loads(x) for x in f]
    with Index.open(base) as ix:
        for s in range(0, n, chunk):
            t0 = time.perf_counter()
            ix.add(rows[s : s + chunk])
            print(f"  level 0 fill: {min(n, s + chunk):,} in {time.perf_counter() - t0:.1f} s", flush=True)
        st = ix.stats()
    print(
        f"base: {st['documents']:,} articles, {st['segments']} segments, level 0 {st['level0_documents']:,}", flush=True
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="bench_index.py's OUT (holds ix and the day's corpus)")
    ap.add_argument("--fill", type=int, default=48_500, help="articles put in level 0 before the load")
    ap.add_argument("--chunk", type=int, default=9_700, help="articles per fill add (< segment_min)")
    ap.add_argument("--l0-max", type=int, default=None, help="passed to neardup serve (default: the index's)")
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sync", default="normal")
    a = ap.parse_args()
    day = next(os.path.join(a.out, f) for f in os.listdir(a.out) if f.endswith("-day.jsonl"))
    base = os.path.join(a.out, "ix-fold-base")
    if not os.path.exists(base):
        shutil.copytree(os.path.join(a.out, "ix"), base)
        fill_level0(base, a.out, a.fill, a.chunk)
    from neardup.index import Index

    extra = ("--l0-max", str(a.l0_max)) if a.l0_max else ()
    rows = []
    for r in range(a.rounds):
        for mode in MODES:
            run = os.path.join(a.out, "ix-fold-run")
            shutil.rmtree(run, ignore_errors=True)
            shutil.copytree(base, run)
            print(f"round {r + 1}, --fold {mode}:", flush=True)
            res = bench_index.load_test(run, day, [a.rate], a.duration, a.sync, 0, (*MODES[mode], *extra))[0]
            with Index.open(run) as ix:
                st = ix.stats()
            res.update(round=r + 1, fold=mode, segments_after=st["segments"], level0_after=st["level0_documents"])
            print(f"  after: {st['segments']} segments, level 0 {st['level0_documents']:,}", flush=True)
            rows.append(res)
    shutil.rmtree(os.path.join(a.out, "ix-fold-run"), ignore_errors=True)
    for mode in MODES:
        m = [x for x in rows if x["fold"] == mode]
        print(
            f"{mode:>10}: p50 "
            + ", ".join(f"{x['p50_ms']:.1f}" for x in m)
            + " ms; p99 "
            + ", ".join(f"{x['p99_ms']:.1f}" for x in m)
            + " ms; max "
            + ", ".join(f"{x['max_ms']:.1f}" for x in m)
            + " ms"
        )
    with open(os.path.join(a.out, "results-fold.json"), "w") as f:
        json.dump({"command": " ".join(sys.argv), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
