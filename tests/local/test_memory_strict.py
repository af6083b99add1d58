"""--memory-limit measured for real: a dedup in a child process, its peak resident memory read
by the operating system, against the limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from neardup import synth

# The child prints its own high-water mark (VmHWM: this program's memory only) and the
# answer; the parent also reads ru_maxrss from wait4, which on Linux counts the parent's
# memory copied at fork too, so that figure is compared with the limit plus a baseline
# measured the same way.
CHILD = r"""
import json, sys
import neardup
args = json.loads(sys.argv[1])
res = neardup.dedup(args.pop("path"), None, **args)
hwm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"hwm": hwm, "memory": res.report["memory"], "clusters": res.clusters, "pairs": res.pairs,
                  "kept": res.kept}))
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _child(path, **kw) -> tuple[dict, int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps({"path": path, **kw})], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    with proc.stdout, proc.stderr:
        out = proc.stdout.read()
        err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    assert proc.returncode == 0, err.decode()
    return json.loads(out), ru.ru_maxrss * 1024


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("strict") / "c.jsonl"
    synth.write_corpus(str(path), originals=33000, copies=7000, words=120, seed=7)
    return str(path)


def test_peak_rss_stays_under_a_tight_limit(corpus):
    # 64 bands of 2 rows: 512 bytes of band keys per document, so the rows are what must spill
    kw = dict(batch_size=1024, bands=64, rows=2, collect=True)
    # the baseline: the interpreter, the imports and a run's fixed costs, on one record
    _, base_maxrss = _child(_one(corpus), **kw)
    free, _ = _child(corpus, **kw)
    assert free["memory"]["rows_spilled_to_disk"] is False
    rows = free["memory"]["row_bytes"] * 40000
    # the least a limited run needs (rows spilled), from a run under a loose limit; a limit
    # between that and that plus half the rows must be met with the rows spilled
    loose, _ = _child(corpus, memory_limit=free["hwm"] * 2, **kw)
    limit = loose["memory"]["minimum_bytes"] + rows // 2
    assert limit < free["hwm"]  # tight: the unlimited run goes over it
    tight, tight_maxrss = _child(corpus, memory_limit=limit, **kw)
    assert tight["memory"]["rows_spilled_to_disk"] is True
    assert tight["hwm"] <= limit, (tight["hwm"], limit, tight["memory"]["stage_shares"])
    assert tight_maxrss <= limit + base_maxrss
    assert (tight["clusters"], tight["pairs"], tight["kept"]) == (free["clusters"], free["pairs"], free["kept"])
    assert len(free["clusters"]) > 1000  # the corpus has planted copies: the comparison is not vacuous


def test_a_limit_just_over_the_reported_minimum_is_met(corpus):
    # the least a run needs, as a run reports it (and as the error of a run under too small a
    # limit says it), is enough: 3% over it, the run completes under the limit
    kw = dict(batch_size=1024, bands=64, rows=2, collect=True)
    free, _ = _child(corpus, **kw)
    loose, _ = _child(corpus, memory_limit=free["hwm"] * 2, **kw)
    limit = int(loose["memory"]["minimum_bytes"] * 1.03)
    near, _ = _child(corpus, memory_limit=limit, **kw)
    assert near["hwm"] <= limit, (near["hwm"], limit, near["memory"]["stage_shares"])
    assert (near["clusters"], near["pairs"], near["kept"]) == (free["clusters"], free["pairs"], free["kept"])


def _one(corpus: str) -> str:
    path = os.path.join(os.path.dirname(corpus), "one.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"id": "a", "text": "one short story about the rain"}) + "\n")
    return path
