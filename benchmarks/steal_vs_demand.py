"""Does the host's steal follow this VM's own CPU demand? (run by hand; INDEX.md run 18)

The load generator of bench_index.py against its instant server at 200/s (~0.1 of a core), in
30 s windows, alternately alone and beside a burner: busy loops in processes of their own using
a given number of cores (a duty cycle for the fraction). Each window reports the host's steal
(/proc/stat) and the generator's p50 / p99: no neardup in it at all.

    python benchmarks/steal_vs_demand.py --corpus /work/benchix/corpus-1000000-200000-day.jsonl
"""

import argparse
import json
import multiprocessing as mp
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_index as B  # noqa: E402


def burner(share, stop):
    period = 0.01
    while not stop.is_set():
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < period * share:
            pass
        time.sleep(period * (1 - share))


def run(cores, dur, fl):
    stop = mp.Event()
    procs = []
    whole, part = int(cores), cores - int(cores)
    for _ in range(whole):
        procs.append(mp.Process(target=burner, args=(1.0, stop)))
    if part > 0:
        procs.append(mp.Process(target=burner, args=(part, stop)))
    for p in procs:
        p.start()
    time.sleep(0.5)
    h0 = B.host_cpu()
    c0 = B.procs_cpu([p.pid for p in procs])
    row = fl.window(200, dur, f"floor + burner {cores} cores")
    h1 = B.host_cpu()
    c1 = B.procs_cpu([p.pid for p in procs])
    stop.set()
    for p in procs:
        p.join()
    d = {k: h1[k] - h0[k] for k in h1}
    tot = sum(d.values())
    return {
        "burner_cores_asked": cores,
        "burner_cores_used": round((c1 - c0) / tot * 2, 3),
        "steal": round(d["steal"] / tot, 4),
        "p50": round(row["p50_ms"], 2),
        "p99": round(row["p99_ms"], 2),
        "max": round(row["max_ms"], 1),
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="a JSONL file of articles (bench_index.py's day corpus)")
    ap.add_argument("--cores", default="0,0.7,0,1.4,0,0.7,0", help="the burner's cores in each window, in order")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--json", default=None, help="write the windows here too")
    a = ap.parse_args()
    fl = B.Floor(a.corpus, 0)
    out = []
    try:
        for cores in [float(x) for x in a.cores.split(",")]:
            r = run(cores, a.seconds, fl)
            out.append(r)
            print(json.dumps(r), flush=True)
    finally:
        fl.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
