"""Benchmark: one story of many copies in the persistent index (run by hand, not in CI).

A story of m articles is a candidate of each new copy m times. Measured here, in one process
per arm so that two builds can be compared side by side (``PYTHONPATH`` picks the build):

1. a batch of ``--copies`` near copies of one 300-word story (each differs in a tail word)
   added to a new index: the add's time and the pairs stored;
2. ``--singles`` more copies added one at a time (the service's case): median and max time.

    python benchmarks/bench_big_story.py --copies 3000 --out /tmp/big --json res.json
    PYTHONPATH=/path/to/other/python python benchmarks/bench_big_story.py ...   # the other build

Figures are seconds of wall time on a shared machine: compare the arms run in turns.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=3000)
    ap.add_argument("--singles", type=int, default=20)
    ap.add_argument("--words", type=int, default=300)
    ap.add_argument("--out", default="/tmp/neardup-big-story")
    ap.add_argument("--json", default=None, help="write the figures here too")
    a = ap.parse_args()
    import neardup

    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(5000)]
    base = " ".join(rng.choice(vocab) for _ in range(a.words))
    shutil.rmtree(a.out, ignore_errors=True)
    ix = neardup.Index.create(a.out)
    recs = [{"id": f"p{i}", "text": f"{base} tail{i}"} for i in range(a.copies)]
    t0 = time.perf_counter()
    vs = ix.add(recs)
    batch_s = time.perf_counter() - t0
    assert len({v.cluster for v in vs}) == 1
    times = []
    for i in range(a.singles):
        t0 = time.perf_counter()
        v = ix.add([{"id": f"single{i}", "text": f"{base} single{i} extra"}])[0]
        times.append(time.perf_counter() - t0)
        assert v.status == "duplicate"
    ix.close()
    con = sqlite3.connect(os.path.join(a.out, "index.sqlite"))
    pairs = con.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]
    con.close()
    res = {
        "neardup": os.path.dirname(neardup.__file__),
        "copies": a.copies,
        "words": a.words,
        "batch_add_s": round(batch_s, 3),
        "pairs_stored": pairs,
        "single_add_ms_median": round(statistics.median(times) * 1000, 1),
        "single_add_ms_max": round(max(times) * 1000, 1),
        "singles": a.singles,
    }
    print(json.dumps(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
