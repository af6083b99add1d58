"""Local engine vs Spark local[2] on the same corpus, side by side, with Spark's shuffle sizes.

Run by hand (not in CI):

    python benchmarks/bench_spark.py --originals 100000 --copies 20000 --out /tmp/bench_spark

Writes the corpus with ``neardup.synth`` (the guide's mix: originals of real English words,
copies in thirds: spacing/case, light edits, heavy edits), runs ``neardup.dedup`` and ``dedup_spark`` on it, checks both give the
same clusters and keepers, and reads Spark's event log for the shuffle bytes of every stage.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time


def make_corpus(path: str, originals: int, copies: int, words: int, seed: int) -> None:
    from neardup import synth  # the project's generator: the guide's mix, real English words

    synth.write_corpus(path, originals=originals, copies=copies, words=words, seed=seed)


def _ticks(pid: int) -> float:
    """CPU seconds of process ``pid`` and its descendants (live ones, and reaped ones through
    cutime/cstime): the Spark JVM and its Python workers."""
    hz = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(st[1])
        cpu[int(d)] = sum(int(x) for x in st[11:15]) / hz
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo += [c for c, pp in parent.items() if pp == p and c not in tree]
    return sum(cpu.get(p, 0.0) for p in tree)


def _self_cpu() -> float:
    import resource

    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def shuffle_sizes(event_dir: str) -> dict:
    """Shuffle bytes written and records per stage, from Spark's event log."""
    files = sorted(glob.glob(os.path.join(event_dir, "*")), key=os.path.getmtime)
    if not files:
        return {}
    per_stage: dict[int, dict] = {}
    names: dict[int, str] = {}
    jobs = 0
    last = files[-1]
    # event log v2 is a directory of rolling files (events_1_..., events_2_...)
    parts = (
        sorted(glob.glob(os.path.join(last, "events_*")), key=lambda x: int(os.path.basename(x).split("_")[1]))
        if os.path.isdir(last)
        else [last]
    )
    for part in parts:
        with _open_log(part) as f:
            for line in f:
                ev = json.loads(line)
                kind = ev.get("Event")
                if kind == "SparkListenerJobStart":
                    jobs += 1
                elif kind == "SparkListenerTaskEnd":
                    m = ev.get("Task Metrics") or {}
                    sw = m.get("Shuffle Write Metrics") or {}
                    st = per_stage.setdefault(ev["Stage ID"], {"bytes": 0, "records": 0})
                    st["bytes"] += sw.get("Shuffle Bytes Written", 0)
                    st["records"] += sw.get("Shuffle Records Written", 0)
                elif kind == "SparkListenerStageCompleted":
                    info = ev["Stage Info"]
                    details = info.get("Details", "")
                    names[info["Stage ID"]] = _caller(details) or info.get("Stage Name", "")
                    st = per_stage.setdefault(info["Stage ID"], {"bytes": 0, "records": 0})
                    if info.get("Completion Time") and info.get("Submission Time"):
                        st["seconds"] = (info["Completion Time"] - info["Submission Time"]) / 1000
    rows = [{"stage": s, "name": names.get(s, ""), **v} for s, v in sorted(per_stage.items())]
    # stages that ran (a stage whose shuffle output was already there is skipped: no tasks)
    ran = sum(1 for r in rows if "seconds" in r)
    return {"total_bytes": sum(r["bytes"] for r in rows), "jobs": jobs, "stages_run": ran, "stages": rows}


def _open_log(path: str):
    import io

    if path.endswith(".zstd") or path.endswith(".zst"):
        import zstandard

        raw = open(path, "rb")
        return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True), encoding="utf-8")
    return open(path, encoding="utf-8")


def _caller(details: str) -> str:
    for line in details.splitlines():
        if "neardup/engines/spark/" in line:  # (run.py and stages.py start the jobs)
            return line.strip()
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--originals", type=int, default=100_000)
    ap.add_argument("--copies", type=int, default=20_000)
    ap.add_argument("--words", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/bench_spark")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="shuffle partitions (default: the engine's, from the input's read splits)",
    )
    ap.add_argument(
        "--session-shuffle-partitions",
        type=int,
        default=None,
        help="set spark.sql.shuffle.partitions on the session (how the benchmark ran "
        "before the engine set it per run; for measuring older versions)",
    )
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument(
        "--method",
        choices=["minhash", "simhash"],
        default="minhash",
        help="both engines' --method (SimHash with its default --max-distance 3)",
    )
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    corpus = os.path.join(a.out, f"corpus_{a.originals}_{a.copies}_{a.words}_{a.seed}.jsonl")
    if not os.path.exists(corpus):
        t = time.perf_counter()
        make_corpus(corpus, a.originals, a.copies, a.words, a.seed)
        print(f"corpus: {corpus} written in {time.perf_counter() - t:.1f} s", flush=True)
    size_mb = os.path.getsize(corpus) / 1e6
    import neardup

    res: dict = {
        "method": a.method,
        "load_at_start": os.getloadavg(),
        "corpus": corpus,
        "corpus_mb": round(size_mb, 1),
        "documents": a.originals + a.copies,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    local = None
    if not a.skip_local:
        t, c = time.perf_counter(), _self_cpu()
        local = neardup.dedup(corpus, os.path.join(a.out, "local"), prefer_source=["agency"], method=a.method)
        res["local_seconds"] = round(time.perf_counter() - t, 2)
        res["local_cpu_seconds"] = round(_self_cpu() - c, 2)
        res["load_before_spark"] = os.getloadavg()
        res["local_peak_rss_mb"] = local.report["peak_rss_mb"]
        res["local_stages"] = local.report["stages"]
        print(f"local engine: {res['local_seconds']} s", flush=True)
    from neardup.engines.spark import dedup_spark, session

    events = os.path.join(a.out, "spark-events")
    os.makedirs(events, exist_ok=True)
    t = time.perf_counter()
    spark = session(
        a.master,
        app_name="neardup-bench",
        shuffle_partitions=a.session_shuffle_partitions,
        conf={
            "spark.driver.memory": a.driver_memory,
            "spark.eventLog.enabled": "true",
            "spark.eventLog.compress": "false",
            "spark.eventLog.dir": "file://" + os.path.abspath(events),
            "spark.local.dir": os.path.join(a.out, "spark-local"),
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    res["spark_session_seconds"] = round(time.perf_counter() - t, 2)
    jvm = spark.sparkContext._gateway.proc.pid
    t, c, cj = time.perf_counter(), _self_cpu(), _ticks(jvm)
    sp = dedup_spark(
        spark, corpus, os.path.join(a.out, "spark"), prefer_source=["agency"], partitions=a.partitions, method=a.method
    )
    res["spark_seconds"] = round(time.perf_counter() - t, 2)
    res["spark_cpu_seconds"] = round(_self_cpu() - c + _ticks(jvm) - cj, 2)
    res["spark_cpu_note"] = "driver Python + the JVM and its Python workers"
    res["load_after_spark"] = os.getloadavg()
    res["spark_stages"] = sp.report["stages"]
    res["spark_band_rows"] = sp.report["spark"]["band_rows"]
    res["spark_partitions"] = sp.report["spark"]["partitions"]
    res["spark_components_rounds"] = sp.report["spark"]["components_rounds"]
    print(f"spark {a.master}: {res['spark_seconds']} s (+ {res['spark_session_seconds']} s session start)", flush=True)
    spark.stop()
    res["shuffle"] = shuffle_sizes(events)
    if local is not None:
        from neardup.engines.spark import read_outputs

        back = read_outputs(os.path.join(a.out, "spark"))  # what Spark wrote (Parquet)
        # the same clusters, keepers and member similarities imply the same kept records
        res["same_clusters_and_keepers"] = [
            (c["cluster"], str(c["keeper"]), [(str(m["id"]), m["similarity"]) for m in c["members"]])
            for c in local.clusters
        ] == [
            (c["cluster"], str(c["keeper"]), [(str(m["id"]), m["similarity"]) for m in c["members"]])
            for c in back.clusters
        ]
        res["ratio_spark_over_local"] = round(res["spark_seconds"] / res["local_seconds"], 2)
        res["cpu_ratio_spark_over_local"] = round(res["spark_cpu_seconds"] / max(res["local_cpu_seconds"], 1e-9), 2)
    for k in ("clusters", "copies_removed", "exact_copies_removed", "near_pairs"):
        res[k] = sp.report[k]
    with open(os.path.join(a.out, "bench_spark.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps({k: v for k, v in res.items() if k not in ("local_stages", "spark_stages", "shuffle")}, indent=2))
    print("spark stages:")
    for s in res["spark_stages"]:
        print(f"  {s['name']:<12} {s['seconds']:8.2f} s")
    print(
        f"shuffle written: {res['shuffle'].get('total_bytes', 0) / 1e6:.1f} MB in total; "
        f"{res['shuffle'].get('jobs', 0)} jobs, {res['shuffle'].get('stages_run', 0)} stages run"
    )
    for s in res["shuffle"].get("stages", []):
        print(
            f"  stage {s['stage']:>3}: {s.get('seconds', 0):7.1f} s {s['bytes'] / 1e6:9.2f} MB, "
            f"{s['records']:>10,} records  {s['name'][:100]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
