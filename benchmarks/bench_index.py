"""Benchmark of the persistent index and the service (run by hand, not in CI).

    python benchmarks/bench_index.py --archive 1000000 --day 200000        # the issue's scale
    python benchmarks/bench_index.py --archive 100000 --day 20000 --quick   # a quick look
    python benchmarks/bench_index.py --keep --day-only [--cold]              # the day's add again

Steps (every figure printed and written to OUT/results.json):
1. a corpus of archive + day articles of `--words` words (the guide's recipe: one sixth are copies,
   a third of those differing in spacing/case only, a third with 1-8 edited words, a third with
   30-60), from `neardup synth` when this build has it, else from the generator below
   (Zipf-distributed made-up words); shuffled, then split into the archive and the day;
2. `neardup index init` + `neardup index add` of the archive in `--chunks` adds (as daily jobs
   would build it), timed;
3. the day's add (`neardup index add DIR day.jsonl`, a fresh process, timed end to end, and
   in-process with a breakdown);
4. reopen: `Index.open` + the first query (which loads and checks every segment), fresh process;
5. bytes on disk per article beyond the texts, resident memory per article of a process that
   has the index open and loaded;
6. `neardup serve` on 127.0.0.1 and an open-loop load generator (a separate process) posting one
   article per request at fixed rates: p50/p99 latency per rate, and the highest rate held with
   p99 <= 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------------------ corpus
def make_corpus(path: str, n: int, words: int, seed: int) -> None:
    try:
        import orjson

        dumps = orjson.dumps
    except ImportError:  # pragma: no cover
        dumps = lambda o: json.dumps(o).encode()  # noqa: E731
    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
    vocab = set()
    while len(vocab) < 50_000:
        vocab.add("".join(rng.choice(letters, int(rng.integers(2, 11)))))
    vocab = np.array(sorted(vocab), dtype=object)
    rng.shuffle(vocab)
    cdf = np.cumsum(1.0 / np.arange(1, len(vocab) + 1) ** 1.07)
    cdf /= cdf[-1]
    n_copies = n // 6
    n_orig = n - n_copies
    t0 = 1_790_000_000
    order = rng.permutation(n)  # position of each generated article in the file
    out = [None] * n
    chunk = 50_000
    kept: dict[int, np.ndarray] = {}
    sources = np.array([f"site-{i}" for i in range(300)], dtype=object)
    # originals that will be copied: chosen in advance so their words can be kept
    copy_of = rng.integers(0, n_orig, size=n_copies)
    need = set(copy_of.tolist())
    for s in range(0, n_orig, chunk):
        m = min(chunk, n_orig - s)
        idx = np.searchsorted(cdf, rng.random((m, words)))
        for i in range(m):
            d = s + i
            if d in need:
                kept[d] = idx[i]
            out[order[d]] = (f"a{d:08d}", " ".join(vocab[idx[i]]), None)
    for c in range(n_copies):
        o = int(copy_of[c])
        w = vocab[kept[o]].copy()
        kind = c % 3
        if kind == 0:
            text = "  ".join(x.upper() if rng.random() < 0.3 else x for x in w)
        else:
            k = int(rng.integers(1, 9)) if kind == 1 else int(rng.integers(30, 61))
            pos = rng.choice(words, size=k, replace=False)
            w[pos] = vocab[np.searchsorted(cdf, rng.random(k))]
            text = " ".join(w)
        out[order[n_orig + c]] = (f"c{c:08d}", text, f"a{o:08d}")
    with open(path, "wb") as f:
        for i, (ident, text, orig) in enumerate(out):
            rec = {"id": ident, "text": text, "published_at": t0 + i, "source": sources[i % 300]}
            if orig:
                rec["copy_of"] = orig
            f.write(dumps(rec))
            f.write(b"\n")


def split(path: str, first: int, a: str, b: str) -> None:
    with open(path, "rb") as f, open(a, "wb") as fa, open(b, "wb") as fb:
        for i, line in enumerate(f):
            (fa if i < first else fb).write(line)


def split_chunks(path: str, parts: int, prefix: str) -> list[str]:
    with open(path, "rb") as f:
        lines = f.readlines()
    names = []
    for p in range(parts):
        name = f"{prefix}{p}.jsonl"
        with open(name, "wb") as out:
            out.writelines(lines[p * len(lines) // parts : (p + 1) * len(lines) // parts])
        names.append(name)
    return names


# ------------------------------------------------------------------------------ helpers
CPU: list[float] = []  # CPU seconds (user + system) of each neardup() call, in order


def neardup(*args: str, env=None) -> tuple[float, str]:
    """Run the CLI in a fresh process: (wall seconds, stdout); its CPU seconds go to CPU (on a
    shared machine the CPU time is the steadier figure)."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "neardup.cli", *args], capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime)
    if r.returncode != 0:
        raise SystemExit(f"neardup {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return dt, r.stdout


def reopen_probe(d: str) -> dict:
    code = f"""
import time, json, resource
t0 = time.perf_counter()
from neardup.index import Index
t_imp = time.perf_counter() - t0
t1 = time.perf_counter()
ix = Index.open({d!r})
t_open = time.perf_counter() - t1
t2 = time.perf_counter()
ix.query("heavy rain is likely over coastal karnataka and goa for the next three days the weather office said")
t_first = time.perf_counter() - t2
t3 = time.perf_counter()
for i in range(50):
    ix.query("the city corporation has started a drive to clear blocked drains before the monsoon " + str(i))
t_q = (time.perf_counter() - t3) / 50
rss = int(open('/proc/self/statm').read().split()[1]) * 4096
print(json.dumps({{"import_s": t_imp, "open_s": t_open, "first_query_s": t_first, "query_ms": t_q * 1000,
                  "rss_bytes": rss, "docs": ix.stats()["documents"]}}))
"""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = json.loads(r.stdout)
    out["process_s"] = time.perf_counter() - t0
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LOADGEN = r"""
# A lean open-loop load generator: raw HTTP/1.1 keep-alive on asyncio streams (no client library
# overhead), requests built before the clock starts, latency measured from each request's
# scheduled time (no coordinated omission).
import asyncio, json, sys, threading, time
from itertools import islice

async def main(host, port, rate, duration, docs_path, start, conns=32):
    n = int(rate * duration)
    with open(docs_path, "rb") as f:
        docs = [json.loads(l) for l in islice(f, start, start + n)]
    reqs = []
    for i in range(n):
        d = docs[i % len(docs)]
        w = d["text"].split()
        # one in five a near copy of an indexed article (its first 10 words replaced), the
        # others new stories (the words reversed: no 5-word run in common)
        text = " ".join((["fresh%d" % j for j in range(10)] + w[10:]) if i % 5 == 0 else w[::-1])
        # the run's tag keeps ids new when a kept index is load-tested again (--keep)
        body = json.dumps({"id": f"{d['id']}-r{int(rate)}-s{start}-{i}-{TAG}", "text": text,
                           "published_at": d["published_at"], "source": d["source"]}).encode()
        reqs.append(b"POST /v1/documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    q = asyncio.Queue()
    lat, when, errors = [], [], 0

    async def conn():
        nonlocal errors
        r, w = await asyncio.open_connection(host, port)
        while True:
            item = await q.get()
            if item is None:
                w.close()
                return
            t_s, data = item
            w.write(data)
            await w.drain()
            head = await r.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            cl = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    cl = int(line.split(b":")[1])
            await r.readexactly(cl)
            lat.append(time.perf_counter() - t_s)
            when.append((lat[-1], t_s - t0))
            if status != 200:
                errors += 1

    workers = [asyncio.create_task(conn()) for _ in range(conns)]
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()

    def pace():
        # the clock is a thread's time.sleep (clock_nanosleep), not asyncio.sleep: the event
        # loop's timers wait in epoll, whose timeout is whole milliseconds rounded up, so each
        # request left up to 1 ms late and that lateness was counted as the server's (measured
        # against a server that answers at once: p50 1.18-1.25 ms this way, 0.65-0.88 ms paced
        # by a thread)
        for i in range(n):
            t_s = t0 + i / rate
            delay = t_s - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            loop.call_soon_threadsafe(q.put_nowait, (t_s, reqs[i]))
        for _ in workers:
            loop.call_soon_threadsafe(q.put_nowait, None)

    t0 = time.perf_counter()
    threading.Thread(target=pace, daemon=True).start()
    await asyncio.gather(*workers)
    wall = time.perf_counter() - t0
    lat.sort()
    qf = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
    # where in the window the slowest requests were sent (seconds from its start): a stall shows
    # as a run of them within a fraction of a second
    worst = [[round(t, 3), round(x * 1000, 1)] for x, t in sorted(when, reverse=True)[:12]]
    # a long run is also cut into 20 s windows by send time (runs 5-10 were 20 s each): the p99 of
    # each says whether a bad stretch (a disk stall) is spread over the run or held in one window
    nwin = max(1, int(duration // 20))
    cut = [[] for _ in range(nwin)]
    for x, t in when:
        cut[min(int(t // 20), nwin - 1)].append(x)  # a remainder under 20 s joins the last window
    per = [round(sorted(xs)[int(0.99 * len(xs))] * 1000, 2) if xs else None for xs in cut]
    # the seconds that held requests over 10 ms, and how many: a stall is a few in one second,
    # a slow stretch many seconds with one or two each
    over = {}
    for x, t in when:
        if x > 0.010:
            over[int(t)] = over.get(int(t), 0) + 1
    if len(sys.argv) > 8:  # every request's [send offset s, latency ms], for a trace to be laid beside
        with open(sys.argv[8], "w") as f:
            json.dump({"t0_monotonic": t0, "requests": sorted([round(t, 4), round(x * 1000, 3)] for x, t in when)}, f)
    print(json.dumps({"rate": rate, "requests": n, "errors": errors, "achieved_rate": n / wall,
                      "p50_ms": qf(0.50), "p90_ms": qf(0.90), "p99_ms": qf(0.99), "max_ms": lat[-1] * 1000,
                      "over_10ms": sum(x > 0.010 for x in lat), "over_50ms": sum(x > 0.050 for x in lat),
                      "p99_per_20s_ms": per, "over_10ms_by_second": sorted(over.items()), "slowest_at_s_ms": worst}))

TAG = sys.argv[7]
asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], int(sys.argv[6])))
"""


def run_loadgen(port: int, rate: float, duration: float, docs_path: str, start: int, tag: str) -> dict:
    """One LOADGEN run against 127.0.0.1:`port` (day articles from `start`; `tag` keeps ids new)."""
    r = subprocess.run(
        [sys.executable, "-c", LOADGEN, "127.0.0.1", str(port), str(rate), str(duration), docs_path, str(start), tag],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(r.stdout)


#: a server that answers every request at once (200, "{}"): the load generator's own floor,
#: what it reports when the server takes no time (its parsing, the loopback, its clock)
FLOOR_SERVER = r"""
import asyncio, sys

async def handle(r, w):
    while True:
        try:
            head = await r.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        cl = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                cl = int(line.split(b":")[1])
        await r.readexactly(cl)
        w.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")

async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await srv.serve_forever()

asyncio.run(main())
"""


class Floor:
    """FLOOR_SERVER, running: ``window(rate, seconds)`` is the load generator against it (same
    requests, same clock), the part of every reported latency that is the generator's, the
    loopback's and the host's, not neardup's. ``--floor-beside`` runs one right before and right
    after each of neardup's windows: the host's noise changes from minute to minute, and a
    window's p99 is read beside the floor's of the same minutes."""

    def __init__(self, docs_path: str, start: int) -> None:
        self.docs_path, self.start = docs_path, start
        self.port = free_port()
        self.srv = subprocess.Popen(
            [sys.executable, "-c", FLOOR_SERVER, str(self.port)], stdout=subprocess.PIPE, text=True
        )
        self.srv.stdout.readline()

    def window(self, rate: float, duration: float, say: str = "load generator floor") -> dict:
        cpu0 = (host_cpu(), 0)
        row = run_loadgen(self.port, rate, duration, self.docs_path, self.start, "floor")
        row["host_cpu"] = hc = cpu_shares(cpu0, (host_cpu(), 0))
        print(
            f"  {say} {rate:>6.0f} req/s: p50 {row['p50_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms, "
            f"max {row['max_ms']:.1f} ms; host CPU steal {hc['steal']:.1%}",
            flush=True,
        )
        for k in ("over_10ms_by_second", "slowest_at_s_ms"):
            row.pop(k, None)
        return row

    def close(self) -> None:
        self.srv.terminate()
        self.srv.wait(30)


def loadgen_floor(docs_path: str, rates: list[float], duration: float, start: int) -> list[dict]:
    """The load generator against FLOOR_SERVER at each rate (Floor)."""
    fl = Floor(docs_path, start)
    try:
        return [fl.window(rate, duration) for rate in rates]
    finally:
        fl.close()


def stage_deltas(before: dict, after: dict) -> dict:
    """The server's stage counts (timings.py) between two reads of GET /v1/stats: how many of
    each stage ran in the window, and how many took over each threshold."""
    out = {}
    for name, a in after.items():
        b = before.get(name, {"count": 0, "over_ms": {k: 0 for k in a["over_ms"]}})
        out[name] = {
            "count": a["count"] - b["count"],
            "over_ms": {k: n - b["over_ms"][k] for k, n in a["over_ms"].items()},
        }
    return out


def host_cpu() -> dict[str, float]:
    """The machine's CPU seconds by kind since boot (the service's own reader: GET /v1/stats
    reports the same as service.host_cpu)."""
    from neardup.service.hostcpu import host_cpu as read

    return read()["seconds"]


def procs_cpu(pids) -> float:
    """User + system CPU seconds of these processes so far (0 for one that has gone)."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def cpu_shares(before: tuple[dict, float], after: tuple[dict, float]) -> dict[str, float]:
    """Per kind, the share of the machine's CPU time in a window (1.0 = every core all along),
    and `ours_cores`: the server's and writer's processes, in cores. `steal` is time this VM's
    cores waited for the host while they had work: the other tenants; the tail moves with it."""
    d = {k: after[0][k] - before[0][k] for k in after[0]}
    total = sum(d.values()) or 1.0
    out = {k: round(v / total, 4) for k, v in d.items()}
    out["ours_cores"] = round((after[1] - before[1]) / total * (os.cpu_count() or 1), 3)
    return out


def load_test(
    d: str,
    docs_path: str,
    rates: list[float],
    duration: float,
    sync: str,
    start: int,
    serve_args: tuple[str, ...] = (),
    warm=None,
    floor: tuple[Floor, float] | None = None,
) -> list[dict]:
    """`serve_args`: more options for ``neardup serve`` (bench_fold.py: --fold, --l0-max).
    `floor`: (a running Floor, seconds): a floor window right before and right after each rate's.
    `warm`: called before each rate's window (warm_texts): this machine's kernel pages out
    file pages that are not mapped and were left unread for about a minute (a DAMON `pageout`
    scheme: 12 aggregation intervals of 5 s), so texts read once before a mode's four windows
    leave the cache while they run (measured idle: 8% of 850 MB of warmed texts in 2 minutes)."""
    import httpx

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    srv = subprocess.Popen(
        [sys.executable, "-m", "neardup.cli", "serve", d, "--port", str(port), "--sync", sync, *serve_args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                h = httpx.get(url + "/v1/health", timeout=1)
                if h.status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        # --writer process: the index lives in the writer's process; resident memory is both's
        pids = {srv.pid, h.json()["writer"]["pid"]}
        # warm: loads and checks every segment
        httpx.post(
            url + "/v1/documents?dry_run=true", json={"id": "warm", "text": "warm up text for the server"}, timeout=120
        )
        res = []

        def shape() -> tuple:
            st = httpx.get(url + "/v1/stats", timeout=120).json()
            return st["level0_documents"], st["segments"], st["segment_postings_docs"], st["service"]["timings"]

        for rate in rates:
            if warm is not None:
                warm()
            before_floor = floor[0].window(rate, floor[1], "floor before") if floor else None
            before = shape()
            cpu0 = (host_cpu(), procs_cpu(pids))
            row = run_loadgen(port, rate, duration, docs_path, start, f"{os.getpid()}x{int(time.time())}")
            start += int(rate * duration)
            row["host_cpu"] = cpu_shares(cpu0, (host_cpu(), procs_cpu(pids)))
            row["server_rss_bytes"] = sum(int(open(f"/proc/{p}/statm").read().split()[1]) * 4096 for p in pids)
            row["sync"] = sync
            row["serve_args"] = list(serve_args)
            # whether a background fold of level 0 (and the merge of small segments it may make)
            # committed during the window: a fold every ~25,000 articles is part of the steady
            # state, but a 20 s window at 200/s holds 4,000; the rows say which windows had one
            after = shape()
            row["fold_in_window"] = after[0] < before[0] or after[1:3] != before[1:3]
            row["level0_before_after"] = [before[0], after[0]]
            # the server's own count of its slow stages in the window (GET /v1/stats: the
            # front's POSTs, the writer's groups, the WAL fsyncs and checkpoint rounds)
            row["server_stages"] = stage_deltas(before[3], after[3])
            print(
                f"  sync={sync} {' '.join(serve_args)} {rate:>6.0f} req/s: p50 {row['p50_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms, "
                f"max {row['max_ms']:.1f} ms, achieved {row['achieved_rate']:.0f}/s, errors {row['errors']}, "
                f"{row['over_10ms']} over 10 ms; p99 per 20 s {row['p99_per_20s_ms']}"
                f"{', a fold in the window' if row['fold_in_window'] else ''}",
                flush=True,
            )
            hc = row["host_cpu"]
            print(
                f"    host CPU: steal {hc['steal']:.1%}, iowait {hc['iowait']:.1%}, idle {hc['idle']:.1%}; "
                f"server + writer {hc['ours_cores']:.2f} cores",
                flush=True,
            )
            stages = row["server_stages"]
            fs = stages.get("wal_fsync")
            print(
                "    server, over 10 ms: "
                + ", ".join(f"{k} {v['over_ms']['10']} of {v['count']}" for k, v in stages.items() if v["count"])
                + "; WAL fsyncs over 50 / 100 ms: "
                + (f"{fs['over_ms']['50']} / {fs['over_ms']['100']}" if fs else "-"),
                flush=True,
            )
            if floor:
                row["floor_before_after"] = [before_floor, floor[0].window(rate, floor[1], "floor after")]
            res.append(row)
            if row["p99_ms"] > 200:
                break
        return res
    finally:
        srv.terminate()
        srv.wait(30)


# ------------------------------------------------------------------------------ main
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--archive", type=int, default=1_000_000)
    ap.add_argument("--day", type=int, default=200_000)
    ap.add_argument("--words", type=int, default=300)
    ap.add_argument("--chunks", type=int, default=5, help="adds that build the archive")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "index"))
    ap.add_argument("--rates", default="200,400,600,800,1000")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--no-text-too", action="store_true", help="also build an index without texts (estimate)")
    ap.add_argument(
        "--signature-bits",
        type=int,
        choices=[16, 32],
        default=32,
        help="bits per MinHash value kept by the no-text index (16: b-bit)",
    )
    ap.add_argument("--keep", action="store_true", help="reuse the corpus and index of an earlier run")
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--sync", default="full,normal", help="service durability modes to load-test")
    ap.add_argument(
        "--writers",
        default="process",
        help="neardup serve --writer kinds to load-test, e.g. process,thread (each with each --sync; "
        "results keyed 'full', 'normal' for process, 'full/thread', ... for the others)",
    )
    ap.add_argument(
        "--cold",
        action="store_true",
        help="drop the page cache (needs root) before each timed day's add: the archive's files, "
        "texts and the day's file are then read from disk",
    )
    ap.add_argument(
        "--warm",
        choices=["all", "recent", "none"],
        default="all",
        help="load tests: before each window read into the page cache the whole text log (all: a "
        "server whose cache holds its texts), its last quarter (recent: runs 5-11; a near copy's "
        "older cluster-mates are then read from the disk), or nothing (none)",
    )
    ap.add_argument("--cold-texts", action="store_true", help="the same as --warm none")
    ap.add_argument(
        "--floor-beside",
        type=float,
        default=0,
        metavar="SECONDS",
        help="a window of the load generator against a server that answers at once, this long, "
        "right before and after each load window (the host's noise of those minutes)",
    )
    ap.add_argument(
        "--day-only",
        action="store_true",
        help="with --keep: time the day's add again on a fresh copy of the kept 1M snapshot "
        "(OUT/ix-before-day), then stop",
    )
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    res: dict = {
        "archive": a.archive,
        "day": a.day,
        "words": a.words,
        "cpus": os.cpu_count(),
        "command": " ".join(sys.argv),
        "load_average_at_start": os.getloadavg(),
    }
    corpus = os.path.join(a.out, f"corpus-{a.archive}-{a.day}.jsonl")
    arch, day = corpus.replace(".jsonl", "-archive.jsonl"), corpus.replace(".jsonl", "-day.jsonl")
    if not (a.keep and os.path.exists(day)):
        t0 = time.perf_counter()
        make_corpus(corpus, a.archive + a.day, a.words, seed=11)
        split(corpus, a.archive, arch, day)
        os.unlink(corpus)
        print(f"corpus: {a.archive:,} + {a.day:,} articles in {time.perf_counter() - t0:.1f} s", flush=True)
    d = os.path.join(a.out, "ix")
    snap = d + "-before-day"
    if a.day_only:
        day_add(res, d, snap, day, a.day, a.cold)
        with open(os.path.join(a.out, "results-day.json"), "w") as f:
            json.dump(res, f, indent=2)
        return
    if not (a.keep and os.path.exists(d)):
        shutil.rmtree(d, ignore_errors=True)
        _reset_start(a.out)
        neardup("index", "init", d)
        chunks = split_chunks(arch, a.chunks, os.path.join(a.out, "archive-part"))
        t_build = []
        for c in chunks:
            dt, _ = neardup("index", "add", d, c)
            t_build.append(dt)
            print(f"archive add of {a.archive // a.chunks:,}: {dt:.2f} s wall, {CPU[-1]:.2f} s CPU", flush=True)
            os.unlink(c)
        res["archive_adds_s"] = t_build
        # the archive before the day is kept (OUT/ix-before-day) so that --keep --day-only can
        # time the day's add again on a fresh copy
        shutil.rmtree(snap, ignore_errors=True)
        shutil.copytree(d, snap)
        day_add(res, d, snap, day, a.day, a.cold)
    r = reopen_probe(d)
    res["reopen"] = r
    print(
        f"reopen: open {r['open_s']:.3f} s, first query (loads + checks segments) {r['first_query_s']:.3f} s, "
        f"then {r['query_ms']:.2f} ms per query; process RSS {r['rss_bytes'] / 2**20:.0f} MiB",
        flush=True,
    )
    from neardup.index import Index

    with Index.open(d) as ix:
        st = ix.stats()
    res["stats"] = st
    n = st["documents"]
    res["bytes_per_article_beyond_text"] = (st["disk_bytes"] - st["text_bytes"]) / n
    res["rss_per_article"] = r["rss_bytes"] / n
    print(
        f"on disk: {st['disk_bytes'] / 2**20:.0f} MiB for {n:,} articles; beyond the texts "
        f"{res['bytes_per_article_beyond_text']:.0f} bytes/article; resident {res['rss_per_article']:.0f} "
        f"bytes/article (whole process)",
        flush=True,
    )
    if a.no_text_too:
        d2 = os.path.join(a.out, "ix-notext")
        shutil.rmtree(d2, ignore_errors=True)
        neardup("index", "init", d2, "--verify", "estimate", "--no-text", "--signature-bits", str(a.signature_bits))
        dt, _ = neardup("index", "add", d2, arch)
        dt2, _ = neardup("index", "add", d2, day)
        with Index.open(d2) as ix:
            st2 = ix.stats()
        r2 = reopen_probe(d2)
        res["no_text"] = {
            "archive_add_s": dt,
            "day_add_s": dt2,
            "bytes_per_article": st2["disk_bytes"] / st2["documents"],
            "rss_per_article": r2["rss_bytes"] / st2["documents"],
            "reopen": r2,
        }
        print(
            f"without texts (verify estimate): archive add {dt:.1f} s, day add {dt2:.1f} s, "
            f"{res['no_text']['bytes_per_article']:.0f} bytes/article on disk",
            flush=True,
        )
    if not a.skip_load:
        print("service load (one article per POST, open loop, loopback):", flush=True)
        rates = [float(x) for x in a.rates.split(",")]
        res["load"] = {}
        res["highest_rate_p99_le_50ms"] = {}
        # each run takes the next day articles (OUT/load-next-start): with --keep, a run that
        # reused earlier runs' articles would post exact copies of them (every "new story" a
        # duplicate, clusters growing run after run) instead of the intended mix
        modes = [(sync, w) for sync in a.sync.split(",") for w in a.writers.split(",")]
        start = _next_start(a.out, a.day, int(sum(rates) * a.duration) * len(modes))
        res["loadgen_floor"] = loadgen_floor(day, rates, a.duration, start)
        fl = Floor(day, start) if a.floor_beside > 0 else None
        for sync, w in modes:
            how = "none" if a.cold_texts else a.warm
            warm = (
                None
                if how == "none"
                else (lambda: warm_texts(d, 1.0 if how == "all" else 1.5 * a.day / (a.archive + a.day)))
            )
            lt = load_test(
                d,
                day,
                rates,
                a.duration,
                sync,
                start,
                ("--writer", w),
                warm=warm,
                floor=(fl, a.floor_beside) if fl else None,
            )
            start += int(sum(rates) * a.duration)
            key = sync if w == "process" else f"{sync}/{w}"
            # a mode given twice (--sync full,full: repeats) keeps every run: 'full', 'full#2', ...
            key = next(k for k in [key] + [f"{key}#{i}" for i in range(2, 100)] if k not in res["load"])
            res["load"][key] = lt
            held = [x["rate"] for x in lt if x["p99_ms"] <= 50 and x["errors"] == 0]
            res["highest_rate_p99_le_50ms"][key] = max(held) if held else None
        if fl is not None:
            fl.close()
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(f"wrote {os.path.join(a.out, 'results.json')}")


def warm_texts(d: str, fraction: float) -> None:
    """Read the last `fraction` of the text log into the page cache, as a server that has been
    answering for a while holds it (1.0: all of it). Without this the run measures whatever an
    earlier command left in the cache. A near copy's verification reads the texts of its
    candidates, the article it copies and that article's older cluster-mates, and its similarity
    to the keeper the keeper's: with only the last quarter warmed (runs 5-11), 16% of a window's
    text reads fell on archive texts and went to the disk (traced, 20 s at 200/s: p50 1.47 ms,
    p99 28.7, against 0.13 / 0.56 in the warmed part; 202 requests over 10 ms against 44 with
    all of it warmed)."""
    for name in sorted(os.listdir(d)):
        if name.startswith("texts-"):
            path = os.path.join(d, name)
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                f.seek(int(size * (1 - min(1.0, fraction))))
                while f.read(1 << 24):
                    pass


def _reset_start(out: str) -> None:
    with open(os.path.join(out, "load-next-start"), "w") as f:
        f.write("0")


def _next_start(out: str, n_day: int, need: int) -> int:
    """The first day article of this run's load test; the counter moves past the ones it uses.
    Indexes load-tested before the counter existed used articles from 0: it starts at 30,000."""
    path = os.path.join(out, "load-next-start")
    try:
        with open(path) as f:
            start = int(f.read().strip())
    except (OSError, ValueError):
        start = 30_000
    if start + need > n_day:
        raise SystemExit(
            f"the day's articles from {start:,} are used up by earlier load tests on this index "
            f"(need {need:,} of {n_day:,}): rebuild the index (without --keep)"
        )
    with open(path, "w") as f:
        f.write(str(start + need))
    return start


def drop_page_cache() -> bool:
    """Write back and drop the page cache (root only): the next reads come from the disk."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True
    except OSError:
        return False


#: seconds of rest between the copies of the archive and the timed day's add (see day_add)
SETTLE_S = 30


def day_add(res: dict, d: str, snap: str, day: str, n_day: int, cold: bool = False) -> None:
    """The day's add onto a fresh copy of the archive: a fresh process, end to end (import, read
    JSONL, check, sign, look up, verify, cluster, write, commit), then the same add in-process on
    another fresh copy, timed by stage. `cold`: the page cache is dropped before each."""
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(snap, d)
    _reset_start(os.path.dirname(d))  # the index holds none of the load tests' articles now
    tmp = d + "-stages"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(snap, tmp)
    os.sync()  # the copies' write-back must not land in the timed add
    # nor what the disk still does for them once sync returns: the two 2.5 GB copies and the
    # deletion of the previous ones (trimmed: the disk is mounted with `discard`). Timed right
    # after sync, the add took 16.6 / 17.3 s end to end (2026-11-30, session 8), against 15.4
    # and 13.1 s for the same add 20-30 s after a single copy
    time.sleep(SETTLE_S)
    res["settle_s"] = SETTLE_S
    res["cold"] = drop_page_cache() if cold else False
    if cold and not res["cold"]:
        print("could not drop the page cache (not root?): the run is warm", flush=True)
    res["load_average_before_day"] = os.getloadavg()
    h0 = (host_cpu(), 0.0)
    dt, out = neardup("index", "add", d, day, "--json")
    res["day_add_host_cpu"] = host = cpu_shares(h0, (host_cpu(), 0.0))
    res["day_add_s"] = dt
    res["day_add_cpu_s"] = CPU[-1]
    res["day_add"] = json.loads(out.strip().splitlines()[-1])
    print(
        f"day's add of {n_day:,}: {dt:.2f} s wall, {CPU[-1]:.2f} s CPU ({res['day_add']}); "
        f"load average {os.getloadavg()}; host steal {host['steal']:.1%}, idle {host['idle']:.1%}",
        flush=True,
    )
    if res["cold"]:
        drop_page_cache()
    res["day_add_stages"] = stage_breakdown(tmp, day)
    shutil.rmtree(tmp, ignore_errors=True)


def stage_breakdown(d: str, day: str) -> dict:
    """The day's add in-process, with the time of each stage (``Index.last_stages``: wall clock
    around the add's own steps, nothing timed per document)."""
    code = f"""
import json, time, resource
t0 = time.perf_counter()
from neardup.index import Index
ix = Index.open({d!r})
t1 = time.perf_counter()
c1 = time.process_time()
v = ix.add({day!r})
t2 = time.perf_counter()
print(json.dumps({{"open_s": t1 - t0, "add_s": t2 - t1, "add_cpu_s": time.process_time() - c1,
                  "stages": ix.last_stages}}))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = json.loads(r.stdout)
    print(f"  in-process: add {out['add_s']:.2f} s wall, {out['add_cpu_s']:.2f} s CPU; by stage:", flush=True)
    for k, v in out["stages"].items():
        print(f"    {k}: {v:.2f} s", flush=True)
    return out


if __name__ == "__main__":
    main()
