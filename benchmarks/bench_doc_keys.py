"""The Spark engine's per-record kernel, ``kernels.doc_keys`` (exact key, token count, band keys
of each checked record), timed in one process on a synthetic corpus (``neardup.synth``, the
guide's mix). To compare two commits, run it with each one's ``python/`` on PYTHONPATH, in
turns, and compare the medians (the machines are shared: ratios, not absolute times):

    flock /tmp/neardup-heavy.lock python benchmarks/bench_doc_keys.py --records 40000
    flock /tmp/neardup-heavy.lock env PYTHONPATH=/path/to/other/python python benchmarks/bench_doc_keys.py --records 40000

Prints the median and fastest of --repeats runs and a digest of the output table (the same
digest for both commits: the same keys). Run by hand, never in CI.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time

import pyarrow as pa

from neardup import kernels as K
from neardup import synth
from neardup.io.records import Fields, Limits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=40000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="threads of the kernel (a Spark task: 1)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.jsonl")
        copies = a.records // 6
        synth.write_corpus(path, originals=a.records - copies, copies=copies, seed=7)
        with open(path, "rb") as f:
            lines = [line.rstrip(b"\n") for line in f]
    t = pa.table(
        {
            "src": pa.array([0] * len(lines), pa.int32()),
            "recno": pa.array(range(1, len(lines) + 1), pa.int64()),
            "value": pa.array(lines, pa.binary()),
        }
    )
    checked = K.check_jsonl(t, fields=Fields(), limits=Limits(), names=["corpus.jsonl"])
    params = K.KernelParams(threads=a.threads)
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        out = K.doc_keys(checked, params)
        times.append(time.perf_counter() - t0)
    digest = hashlib.sha1(
        b"".join(c.to_numpy(zero_copy_only=False).tobytes() for c in (out.column("xkey"), out.column("ntok")))
        + str(out.column("bkeys").to_pylist()).encode()
    ).hexdigest()[:16]
    print(
        f"{K.__file__}\ndoc_keys on {len(lines):,} records, {a.threads} thread(s): median {statistics.median(times):.3f} s, "
        f"fastest {min(times):.3f} s; output digest {digest}"
    )


if __name__ == "__main__":
    main()
