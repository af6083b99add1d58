"""Large LSH buckets (DedupOptions.large_bucket): verified by a per-bucket union-find with only
spanning edges kept. Clusters, keepers and kept records must be exactly those of the run that
lists every pair of every bucket (large_bucket=None)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time

import numpy as np
import pytest

import neardup
from neardup.engines.local import memory

WORDS = [f"w{i}" for i in range(60)]


def _corpus(seed: int, groups: int = 6, per_group: int = 60, noise: int = 80) -> list[dict]:
    """Groups of short variants of one text (one or two words changed, some dropped), which
    share LSH buckets of dozens of documents, with pairs on both sides of the threshold; and
    unrelated texts."""
    rng = random.Random(seed)
    recs = []
    for g in range(groups):
        base = [rng.choice(WORDS) for _ in range(rng.randint(50, 90))]
        for v in range(per_group):
            t = base[:]
            for _ in range(rng.randint(0, 3)):
                t[rng.randrange(len(t))] = f"x{rng.randrange(9)}"
            if rng.random() < 0.3:
                del t[rng.randrange(len(t))]
            recs.append(
                {
                    "id": f"g{g}-{v}",
                    "text": " ".join(t),
                    "published_at": rng.randint(0, 50),
                    "source": rng.choice(["agency", "site-a", "site-b"]),
                }
            )
    for i in range(noise):
        recs.append({"id": f"n{i}", "text": " ".join(rng.choice(WORDS) for _ in range(20)), "published_at": i})
    rng.shuffle(recs)
    return recs


def _components(res) -> set[frozenset]:
    return {frozenset([c["keeper"], *(m["id"] for m in c["members"])]) for c in res.clusters}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(measure="containment", threshold=0.7),
        dict(verify="estimate"),
        dict(bands=20, rows=2, threshold=0.6),
        dict(prefer_source="agency", threshold=0.7),
    ],
)
def test_same_clusters_and_keepers_as_every_pair(seed, kw):
    recs = _corpus(seed)
    every = neardup.dedup(recs, None, large_bucket=None, **kw)
    assert every.report["large_buckets"] is None
    for limit in (2, 7, 15):
        res = neardup.dedup(recs, None, large_bucket=limit, **kw)
        lb = res.report["large_buckets"]
        assert lb["buckets"] > 0 and lb["largest"] > limit  # the path under test ran
        assert _components(res) == _components(every)
        assert res.clusters == every.clusters  # keepers, member order and similarities to keepers
        assert res.kept == every.kept
        # pairs: every spanning edge is a verified pair of the full run, with its similarity
        full = {(p["a"], p["b"]): p["similarity"] for p in every.pairs}
        assert all(full[(p["a"], p["b"])] == p["similarity"] for p in res.pairs)
        assert len(res.pairs) <= len(every.pairs)
    assert len(every.clusters) >= 6


@pytest.fixture
def accounting_only(monkeypatch):
    monkeypatch.setattr(memory, "current_rss", lambda: 0)


def test_groups_under_a_limit(accounting_only, tmp_path):
    recs = _corpus(11, groups=8, per_group=60)
    every = neardup.dedup(recs, None, large_bucket=None)
    loose = neardup.dedup(recs, None, large_bucket=8, memory_limit="1G", batch_size=16)
    tight = neardup.dedup(
        recs,
        None,
        large_bucket=8,
        memory_limit=loose.report["memory"]["minimum_bytes"] + 4096,
        batch_size=16,
        tmp_dir=str(tmp_path),
    )
    assert tight.report["large_buckets"]["groups"] > 1  # the buckets' sets were taken a group at a time
    for res in (loose, tight):
        assert res.clusters == every.clusters and res.kept == every.kept
    assert tight.pairs == loose.pairs  # the same buckets in the same order, in memory or not


def test_twenty_thousand_near_copies_in_one_bucket():
    text = "heavy rain lashed the coastal city on sunday closing schools and roads across the district today"
    recs = [{"id": i, "text": f"{text} {i}", "published_at": i} for i in range(20_000)]
    t0 = time.perf_counter()
    res = neardup.dedup(recs, None, batch_size=4096)
    took = time.perf_counter() - t0
    lb = res.report["large_buckets"]
    n = len(recs)
    assert len(res.clusters) == 1 and res.clusters[0]["size"] == n and res.clusters[0]["keeper"] == 0
    assert lb["largest"] > 10_000
    # linear, not quadratic: one check and at most one edge per document (all pairs of the
    # bucket would be 2e8); the pairs listed outside the large buckets stay few
    assert lb["checks"] < 2 * n and lb["spanning_edges"] == n - 1 == len(res.pairs)
    assert res.report["candidates"] < 50 * n
    assert took < 60, took
    ids = np.array([m["id"] for m in res.clusters[0]["members"]])
    assert np.array_equal(ids, np.arange(1, n))


@pytest.mark.parametrize("budget", [16 * 1024, 3000])
def test_external_band_sort_keeps_the_same_large_buckets(tmp_path, budget):
    from neardup.stages.candidates import pairs_from_keys

    rng = np.random.default_rng(budget)
    keys = rng.integers(0, 60, size=(4000, 5), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    keys[::7, 1] = np.uint64(12345)  # one bucket of 572 rows in band 1...
    keys[::7, 3] = np.uint64(777)  # ...and the same rows again in band 3: listed once
    mem_large: list = []
    ext_large: list = []
    info: dict = {}
    in_mem = pairs_from_keys(keys, large_bucket=80, large=mem_large)
    ext = pairs_from_keys(keys, sort_budget=budget, tmp_dir=str(tmp_path), info=info, large_bucket=80, large=ext_large)
    assert info["external_sort"] is True
    assert np.array_equal(in_mem, ext)
    assert [m.tolist() for m in ext_large] == [m.tolist() for m in mem_large]
    assert sum(1 for m in mem_large if m.tolist() == list(range(0, 4000, 7))) == 1
    # every pair of the full listing is either listed or inside a large bucket. The sets of
    # pairs (a, b) as sorted arrays of one integer each, a * len(keys) + b (rows are below
    # len(keys): one pair, one number), compared with searchsorted: the same subset checks as
    # Python sets of tuples, which took 3 of the test's 5 s (730,000 pairs; m.tolist() per
    # element). (np.unique and np.isin took 0.5 s each here: numpy 2.4's hash-based unique.)
    n = len(keys)

    def distinct(c: np.ndarray) -> np.ndarray:
        c = np.sort(c)
        first = np.ones(len(c), dtype=bool)
        first[1:] = c[1:] != c[:-1]
        return c[first]  # each once, as in a set

    def coded(pairs) -> np.ndarray:
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        assert ((pairs >= 0) & (pairs < n)).all()
        return distinct(pairs[:, 0] * n + pairs[:, 1])

    def subset(a: np.ndarray, b: np.ndarray) -> bool:
        """a <= b, for two sorted arrays of distinct integers."""
        if len(a) == 0:
            return True
        at = np.minimum(np.searchsorted(b, a), len(b) - 1)
        return len(b) > 0 and bool((b[at] == a).all())

    every = coded(pairs_from_keys(keys))
    listed = coded(in_mem)
    # the pairs inside each bucket: (m[i], m[j]) for i < j, in the bucket's order
    inside = coded(
        np.concatenate(
            [
                np.stack([m[i], m[j]], axis=1)
                for m in (np.asarray(m, dtype=np.int64) for m in mem_large)
                for i, j in [np.triu_indices(len(m), 1)]
            ]
        )
    )
    assert subset(listed, every) and subset(every, distinct(np.concatenate([listed, inside])))
    assert all(len(m) > 80 for m in mem_large) and len(listed) < len(every)


_BUCKET_CHILD = r"""
import json, sys
import neardup
n = int(sys.argv[1])
text = "heavy rain lashed the coastal city on sunday closing schools and roads across the district today"
res = neardup.dedup([{"id": i, "text": f"{text} {i}"} for i in range(n)], None, batch_size=4096)
hwm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"hwm": hwm, "largest": res.report["large_buckets"]["largest"]}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_large_bucket_never_holds_its_pairs():
    def child(n: int) -> dict:
        out = subprocess.run([sys.executable, "-c", _BUCKET_CHILD, str(n)], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    base = child(1)  # the interpreter, the imports and a run's fixed costs
    big = child(20_000)
    m = big["largest"]
    assert m > 10_000
    # the pairs of that one bucket in one band, as two uint32 each, would take 8 m(m-1)/2
    # bytes (about 1 GB); the whole run grows by a small fraction of that
    assert big["hwm"] - base["hwm"] < 8 * m * (m - 1) // 2 // 20, (big, base)
