"""The archive's life cycle on the benchmark's index (run by hand, not in CI): a backup, then
eviction steps as `POST /v1/removals` takes them, on the backup (the index itself is left as
it was, so `bench_index.py --keep` can go on using it).

    python benchmarks/bench_index.py --archive 1000000 --day 200000 --skip-load   # builds OUT/ix
    python benchmarks/bench_lifecycle.py --index benchmarks/out/index/ix --steps 1000,10000,10000

Steps (each printed and written to --out as JSON):
1. `neardup index backup INDEX DEST` in a fresh process: wall time, user and system CPU, peak
   resident memory, bytes copied;
2. on the backup: the cut in time below which `--fraction` of the documents lie (publication
   time, or the time added), then `Index.remove(older_than=cut, limit=N)` for each N of
   `--steps` in one open index (one writer, as the service holds it): wall and CPU time of each
   step, and `older_remain` after it;
3. the host's CPU shares (steal among them) over each step, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_index import cpu_shares, host_cpu  # noqa: E402


def shares(before: dict, after: dict) -> dict:
    """The host's CPU shares between two reads of host_cpu() (bench_index's, no process of ours)."""
    return cpu_shares((before, 0.0), (after, 0.0))


def backup(index: str, dest: str) -> dict:
    h0 = host_cpu()
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "neardup", "index", "backup", index, dest],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out, err = p.stdout.read(), p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"backup failed ({p.returncode}): {err.strip()}")
    return {
        "wall_s": round(wall, 3),
        "user_s": round(ru.ru_utime, 2),
        "system_s": round(ru.ru_stime, 2),
        "peak_rss_mib": round(ru.ru_maxrss / 1024, 1),
        "printed": (out + err).strip(),
        "host": shares(h0, host_cpu()),
    }


def cut_at(index: str, fraction: float) -> tuple[float, int]:
    """The time below which `fraction` of the documents lie, and how many documents there are."""
    conn = sqlite3.connect(f"file:{os.path.join(index, 'index.sqlite')}?mode=ro", uri=True)
    try:
        n = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        k = max(1, int(n * fraction))
        t = conn.execute(
            "SELECT COALESCE(published_at, added_at) AS t FROM documents ORDER BY t LIMIT 1 OFFSET ?", (k,)
        ).fetchone()[0]
        return float(t), n
    finally:
        conn.close()


def evict(index: str, cut: float, steps: list[int], scrub: bool) -> list[dict]:
    from neardup.index import Index

    rows = []
    with Index.open(index) as ix:
        ix.query("warm the segments before the first step")
        for n in steps:
            h0, c0, t0 = host_cpu(), time.process_time(), time.perf_counter()
            removed = ix.remove(older_than=cut, limit=n, scrub=scrub)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            host = shares(h0, host_cpu())
            t1 = time.perf_counter()
            more = ix.older_remain(cut)
            rows.append(
                {
                    "limit": n,
                    "removed": removed,
                    "wall_s": round(wall, 3),
                    "cpu_s": round(cpu, 3),
                    "older_remain": more,
                    "older_remain_s": round(time.perf_counter() - t1, 4),
                    "host": host,
                }
            )
            print(
                f"  remove(limit={n:,}): {removed:,} in {wall:.2f} s ({cpu:.2f} s CPU), more: {more}; "
                f"steal {host['steal']:.1%}",
                flush=True,
            )
            if not more:
                break
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=os.path.join(HERE, "out", "index", "ix"))
    ap.add_argument(
        "--dest",
        default=os.path.join(HERE, "out", "lifecycle-backup"),
        help="the backup's directory (removed first; left for a look afterwards)",
    )
    ap.add_argument("--fraction", type=float, default=0.2, help="share of the documents older than the cut")
    ap.add_argument("--steps", default="1000,10000,10000", help="eviction limits, one remove each")
    ap.add_argument("--no-scrub", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "lifecycle.json"))
    a = ap.parse_args()
    shutil.rmtree(a.dest, ignore_errors=True)
    res: dict = {
        "command": " ".join(sys.argv),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(f"backup of {a.index} to {a.dest}", flush=True)
    res["backup"] = b = backup(a.index, a.dest)
    print(
        f"  {b['wall_s']:.1f} s, {b['user_s']:.1f} s user + {b['system_s']:.1f} s system, peak "
        f"{b['peak_rss_mib']:.0f} MiB; steal {b['host']['steal']:.1%}\n  {b['printed']}",
        flush=True,
    )
    cut, n = cut_at(a.dest, a.fraction)
    res.update(documents=n, fraction=a.fraction, cut=cut)
    print(f"eviction on the backup ({n:,} documents, the oldest {a.fraction:.0%} before the cut):", flush=True)
    res["evict"] = evict(a.dest, cut, [int(x) for x in a.steps.split(",")], not a.no_scrub)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
