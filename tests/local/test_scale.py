"""The large-corpus machinery of the batch job: compact document tables, rows spilled to a
memory-mapped file, verification re-reading in planned passes under a memory limit. Every
path must give exactly the answer of the unlimited in-memory run."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from nd_helpers import read_jsonl

import neardup
from neardup import _core, synth
from neardup.engines.local import memory
from neardup.engines.local.memory import deep_size
from neardup.engines.local.reread import _held_peak, plan_passes
from neardup.engines.local.store import RowStore
from neardup.errors import InvalidParameterError, MemoryLimitError
from neardup.stages.options import BatchSteps, parse_size


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("scale") / "c.jsonl"
    synth.write_corpus(str(path), originals=1500, copies=500, words=200, seed=5)
    return str(path)


def _answer(res):
    return res.clusters, res.pairs, res.kept


@pytest.fixture
def accounting_only(monkeypatch):
    """The memory budget from the accounted tables alone (the process's resident set read as
    0), so that a limit of a few hundred KB drives a small corpus down every
    spill path; the real resident set is checked in a child process (test_memory_strict).
    JSONL is read in blocks of 4 KB (lines span blocks), so that the reader's buffer, which
    the re-reads count, is small too: the fixture is ``neardup.dedup`` with those steps."""
    monkeypatch.setattr(memory, "current_rss", lambda: 0)
    return functools.partial(neardup.dedup, steps=BatchSteps(read_block_bytes=4096))


def test_memory_limit_spills_and_gives_the_same_answer(corpus, tmp_path, accounting_only):
    free = accounting_only(corpus, tmp_path / "free", batch_size=256)
    mem = free.report["memory"]
    assert mem["rows_spilled_to_disk"] is False and mem["verify_reread"]["passes"] == 1
    assert mem["kept_rows"] == "band keys" and mem["row_bytes"] == 8 * free.report["lsh"]["bands"]
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    # collect=False: the answer is read back from the files (a collected result's Python objects
    # would need more than 450K on their own: test_collected_results_count_against_the_limit)
    tight = accounting_only(
        corpus, tmp_path / "tight", batch_size=16, memory_limit="450K", tmp_dir=str(spill_dir), collect=False
    )
    tm = tight.report["memory"]
    assert tm["limit_bytes"] == 450 * 1024
    assert tm["rows_spilled_to_disk"] is True
    assert tm["verify_reread"]["passes"] > 1
    assert "spilled to a file" in [s for s in tight.report["stages"] if s["name"] == "signatures"][0]["note"]
    assert tm["band_sort"]["external_sort"] is True and tm["band_sort"]["partitions_per_band"] >= 2
    assert free.report["memory"]["band_sort"] == {"external_sort": False}
    assert list(spill_dir.iterdir()) == []  # the spill file is removed at the end
    for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl"):
        assert read_jsonl(tmp_path / "tight" / name) == read_jsonl(tmp_path / "free" / name)
    # sanity: the corpus has planted copies, so the comparison above is not vacuous
    assert free.report["near_pairs"] > 50 and free.report["exact_copies_removed"] > 50


@pytest.mark.parametrize("kw", [dict(verify="estimate"), dict(method="simhash"), dict(measure="containment")])
def test_other_modes_spill_the_same(corpus, tmp_path, kw, accounting_only):
    free = accounting_only(corpus, tmp_path / "free", batch_size=300, **kw)
    # a run under a loose limit reports the least it needs with its rows spilled; between that
    # and that plus the rows, the rows must spill. The results go to files (collect=False), so
    # that the least is the pipeline's, not the Python objects' a collected result would need
    loose = accounting_only(corpus, None, batch_size=16, memory_limit="1G", collect=False, **kw).report["memory"]
    assert loose["rows_spilled_to_disk"] is False
    rows = loose["row_bytes"] * free.report["signatures"]
    limit = loose["minimum_bytes"] + rows // 2
    tight = accounting_only(corpus, tmp_path / "tight", batch_size=16, memory_limit=limit, collect=False, **kw)
    assert tight.report["memory"]["rows_spilled_to_disk"] is True
    for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl"):
        assert read_jsonl(tmp_path / "tight" / name) == read_jsonl(tmp_path / "free" / name)
    assert read_jsonl(tmp_path / "free" / "clusters.jsonl") != []


def test_collected_results_count_against_the_limit(corpus, tmp_path, accounting_only):
    # collect=True builds the clusters, pairs and kept ids as Python objects after the last
    # stage; the run sizes them first and refuses a limit they would not fit in
    loose = accounting_only(corpus, None, batch_size=16, memory_limit="1G")
    actual = deep_size(loose.clusters) + deep_size(loose.pairs) + deep_size(loose.kept)
    check = [c for c in loose.report["memory"]["stage_shares"] if c["stage"] == "results"][0]
    assert actual <= check["needed_bytes"] <= 1.5 * actual  # an upper bound, not a wild one
    limit = memory.limit_for(check["resident_bytes"] + check["needed_bytes"])  # (the margin kept free on top)
    assert _answer(accounting_only(corpus, None, batch_size=16, memory_limit=limit)) == _answer(loose)
    with pytest.raises(MemoryLimitError, match=r"results stage .* collect=False"):
        accounting_only(corpus, None, batch_size=16, memory_limit=limit - 1)
    # written to files instead, the same limit is enough
    files = accounting_only(corpus, tmp_path / "out", batch_size=16, memory_limit=limit - 1, collect=False)
    assert (files.clusters, files.pairs, files.kept) == ([], [], [])
    assert read_jsonl(tmp_path / "out" / "kept.jsonl") != []


def test_keeper_similarity_of_members_not_paired_with_their_keeper(tmp_path):
    # a - b - c chained: b is close to both, a and c less so; the keeper (earliest) is a, so
    # c's similarity to its keeper needs a pair that was never a candidate pair.
    base = [f"w{i}" for i in range(200)]
    b_words = base[:]
    for i in (40, 120):
        b_words[i] = "x" + b_words[i]
    c_words = b_words[:]
    for i in (80, 160):
        c_words[i] = "y" + c_words[i]
    recs = [
        {"id": "a", "text": " ".join(base), "published_at": 1},
        {"id": "b", "text": " ".join(b_words), "published_at": 2},
        {"id": "c", "text": " ".join(c_words), "published_at": 3},
    ]
    # J(a,b) = J(b,c) = 0.903, J(a,c) = 0.815: a-c fails the threshold but joins through b
    res = neardup.dedup(recs, threshold=0.85, bands=64, rows=2)
    assert len(res.pairs) == 2
    assert len(res.clusters) == 1 and res.clusters[0]["keeper"] == "a"
    sims = {m["id"]: m["similarity"] for m in res.clusters[0]["members"]}
    ha, hc = (neardup.Shingler().hashes(r["text"]) for r in (recs[0], recs[2]))
    assert sims["c"] == round(neardup.jaccard(ha, hc), 6) == 0.814815
    assert res.report["memory"]["verify_reread"]["keeper_passes"] == 1  # found by re-reading


def test_plan_passes_splits_only_when_needed():
    a = np.array([0, 1, 2, 3])
    last = np.array([1, 2, 3, 4])  # each set held until the next document
    size = np.array([10, 10, 10, 10])
    assert _held_peak(a, last, size) == 20
    assert plan_passes(a, last, size, None) == [slice(0, 4)]
    assert plan_passes(a, last, size, 20) == [slice(0, 4)]
    parts = plan_passes(a, last, size, 15)
    assert [(p.start, p.stop) for p in parts] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    # a set larger than the budget still gets a pass of its own
    assert plan_passes(np.array([0]), np.array([5]), np.array([100]), 10) == [slice(0, 1)]


def test_row_store_in_memory_and_spilled(tmp_path):
    for budget in (None, 100):
        st = RowStore(3, np.uint64, budget, str(tmp_path))
        st.append(np.arange(6, dtype=np.uint64).reshape(2, 3))
        st.append(np.arange(6, 15, dtype=np.uint64).reshape(3, 3))
        rows = st.finish()
        assert st.spilled is (budget is not None)
        assert np.array_equal(rows, np.arange(15, dtype=np.uint64).reshape(5, 3))
        st.close()
    assert list(tmp_path.iterdir()) == []


def test_parse_size():
    assert parse_size("16G") == 16 << 30
    assert parse_size("512MiB") == 512 << 20
    assert parse_size("1.5k") == 1536
    assert parse_size(1000) == 1000 and parse_size(None) is None
    for bad in ("lots", "16X", "-1G", "0"):
        with pytest.raises(InvalidParameterError, match="size|positive"):
            parse_size(bad)
    with pytest.raises(InvalidParameterError):
        neardup.dedup([{"id": "a", "text": "x"}], memory_limit="sixteen")


def test_a_limit_below_the_tables_stops_early_and_says_how_much(corpus, accounting_only):
    with pytest.raises(MemoryLimitError, match=r"too small for this input.*needs at least about") as e:
        accounting_only(corpus, None, memory_limit="100K")
    assert "bytes per document" in str(e.value)
    assert isinstance(e.value, InvalidParameterError)  # a usage error: exit code 2 from the CLI


def test_id_table_and_first_seen():
    t = _core.IdTable()
    assert [t.insert(x) for x in ("a", "b", "a", "c", "b")] == [-1, -1, 0, -1, 1]
    assert len(t) == 3 and t.take(np.array([2, 0])) == ["c", "a"]
    with pytest.raises(neardup.errors.InvalidInputError, match="outside"):
        t.get(3)
    f = _core.FirstSeen()
    assert f.first(np.array([9, 8, 9], np.uint64), np.array([0, 1, 2])).tolist() == [0, 1, 0]
    with pytest.raises(neardup.InvalidParameterError):
        f.first(np.array([1], np.uint64), np.array([0, 1]))


def test_integer_ids_come_back_as_integers(tmp_path):
    recs = [
        {"id": 7, "text": "the same story about the rain in the city today"},
        {"id": "8", "text": "the same story about the rain in the city today"},
    ]
    res = neardup.dedup(recs)
    assert res.clusters[0]["keeper"] == 7 and res.clusters[0]["members"][0]["id"] == "8"
    assert res.pairs[0]["a"] == 7 and res.kept == [7]


def test_progress_counts_bytes_with_an_eta(corpus, capsys):
    neardup.dedup(corpus, None, progress=True, batch_size=500)
    err = capsys.readouterr().err
    assert "scan + signatures" in err and "B/s" in err  # a byte rate, so tqdm can show an ETA
    assert "verify: re-read candidates" in err


def test_collect_false_writes_the_same_files_and_returns_no_rows(corpus, tmp_path):
    full = neardup.dedup(corpus, tmp_path / "a", batch_size=400)
    lean = neardup.dedup(corpus, tmp_path / "b", batch_size=400, collect=False)
    assert lean.clusters == [] and lean.pairs == [] and lean.kept == []
    assert lean.report["verified_pairs"] == full.report["verified_pairs"] == len(full.pairs)
    for name in ("clusters.jsonl", "pairs.jsonl", "kept.jsonl"):
        assert read_jsonl(tmp_path / "b" / name) == read_jsonl(tmp_path / "a" / name)
    assert read_jsonl(tmp_path / "a" / "clusters.jsonl") == full.clusters


def test_rows_are_built_in_chunks(corpus):
    whole = neardup.dedup(corpus, None)
    chunked = neardup.dedup(corpus, None, steps=BatchSteps(row_chunk=7))  # many chunks, clusters straddling none
    assert _answer(chunked) == _answer(whole)


@pytest.mark.parametrize("n,b,budget", [(5000, 3, 16 * 1024), (3000, 13, 20_000), (1, 2, 10), (40, 2, 10)])
def test_external_band_sort_gives_the_in_memory_pairs(tmp_path, n, b, budget):
    from neardup.stages.candidates import pairs_from_keys

    rng = np.random.default_rng(n)
    # few distinct keys per band (many buckets of several rows), and a top-bit-heavy key to
    # land in the last partition
    keys = rng.integers(0, 400, size=(n, b), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    if n > 2:
        keys[:2, 0] = np.uint64(2**64 - 1)
    info: dict = {}
    ext = pairs_from_keys(keys, sort_budget=budget, tmp_dir=str(tmp_path), info=info)
    mem = pairs_from_keys(keys)
    assert ext.dtype == mem.dtype == np.uint32
    assert np.array_equal(ext, mem)
    if n >= 2:
        assert info["external_sort"] is True
    assert list(tmp_path.iterdir()) == []  # partition files removed
