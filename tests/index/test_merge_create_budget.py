"""Leftovers: where a merged cluster's number leads after removals split or empty the cluster it
went into; Index.create on a file, on a file's path and on the remains of an index; the
budget's candidate groups made once (rounds_needed) for archive_rounds."""

import os
import shutil
import sqlite3

import ix_helpers
import numpy as np
import pytest

from neardup.errors import DocumentNotFoundError, IndexExistsError, IndexNotFoundError, NeardupError
from neardup.index import Index, Steps, budget

T0 = 1_790_000_000


# -- 1. merged_into after a split ------------------------------------------------------------


def _chain(path) -> Index:
    """Clusters 1 (a), 2 (b), 3 (c); mbc merges 3 into 2, then mab merges 2 into 1 (3 is
    re-pointed to 1): a merge chain, all five documents in cluster 1."""
    tx = ix_helpers.chain_texts(5)
    ix = Index.create(path)
    for i, k in enumerate(["a", "b", "c", "mbc", "mab"]):
        ix.add([{"id": k, "text": tx[k], "published_at": T0 + i}])
    assert [ix.get_cluster(c)["merged_into"] for c in (1, 2, 3)] == [None, 1, 1]
    assert {m["id"] for m in ix.get_cluster(1)["members"]} == set(tx)
    return ix


def _gone(ix: Index, cluster: int) -> None:
    with pytest.raises(DocumentNotFoundError, match="all were removed"):
        ix.get_cluster(cluster)


def test_merged_clusters_follow_their_documents_through_splits(tmp_path):
    with _chain(tmp_path / "ix") as ix:
        ix.remove(["mab"])  # 1 splits: {a} keeps 1, {b, c, mbc} is a new cluster
        assert ix_helpers.follow(ix, 1) == {"a"}
        assert "b" in ix_helpers.follow(ix, 2)  # (it led to 1, which holds a only)
        assert "c" in ix_helpers.follow(ix, 3)
        ix.remove(["mbc"])  # that one splits again: {b}, {c}
        assert ix_helpers.follow(ix, 2) == {"b"}
        assert ix_helpers.follow(ix, 3) == {"c"}
        ix.check()
        ix.remove(["c"])  # every document once in 3 is gone: said at once, not via a pointer
        _gone(ix, 3)
        assert ix.get_cluster(2)["merged_into"] is not None and ix_helpers.follow(ix, 2) == {"b"}
        # a merged cluster keeps its representative, but it is no story of its own
        stories = ix.recent_clusters(limit=100, min_size=0)
        assert sorted(s["keeper"] for s in stories) == ["a", "b"]
        assert all(ix.get_cluster(s["cluster"])["merged_into"] is None for s in stories)
        ix.check()
        assert ix.stats()["stories"] == 2


def test_a_removed_representative_passes_to_its_nearest_surviving_document(tmp_path):
    with _chain(tmp_path / "ix") as ix:
        # 2's representative (b, its keeper when merged) goes with the bridge: {a} keeps 1,
        # {c, mbc} (once in 2) is a new cluster, found through b's pair with mbc
        ix.remove(["b", "mab"])
        assert ix_helpers.follow(ix, 1) == {"a"}
        assert ix_helpers.follow(ix, 2) == {"c", "mbc"}
        assert ix_helpers.follow(ix, 3) == {"c", "mbc"}
        ix.remove(["mbc"])
        assert ix_helpers.follow(ix, 2) == {"c"} and ix_helpers.follow(ix, 3) == {"c"}
        ix.check()


def test_a_removed_representative_passes_to_its_exact_copy_first(tmp_path):
    tx = ix_helpers.chain_texts(5)
    with Index.create(tmp_path / "ix") as ix:
        for i, k in enumerate(["a", "b", "bx", "c", "mbc", "mab"]):
            ix.add([{"id": k, "text": tx[k.rstrip("x") if k == "bx" else k], "published_at": T0 + i}])
            if k == "bx":
                assert ix.get_document("bx")["match"] == "exact" and ix.get_document("bx")["keeper"] == "b"
        assert ix.get_cluster(2)["merged_into"] == 1
        ix.remove(["b", "mab"])
        assert ix_helpers.follow(ix, 2) == {"bx", "c", "mbc"}
        con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
        rep = con.execute("SELECT d.id FROM clusters c JOIN documents d ON d.doc = c.keeper WHERE c.cluster = 2")
        assert rep.fetchone() == ("bx",)  # (not mbc, b's most similar stored pair)
        con.close()
        ix.check()


def test_emptying_the_target_empties_every_cluster_merged_into_it(tmp_path):
    with _chain(tmp_path / "ix") as ix:
        ix.remove(["a", "b", "c", "mbc", "mab"])
        for c in (1, 2, 3):
            _gone(ix, c)
        ix.check()
        assert ix.stats()["stories"] == 0


def test_merged_clusters_without_a_representative_follow_the_number(tmp_path):
    """An index whose merges kept no representative (before 2026-12-01: keeper NULL) still
    leads to the cluster keeping the number, and empties with it."""
    ix = _chain(tmp_path / "ix")
    ix.close()
    con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
    con.execute("UPDATE clusters SET keeper = NULL WHERE merged_into IS NOT NULL")
    con.commit()
    con.close()
    with Index.open(tmp_path / "ix") as ix:
        ix.remove(["mab"])
        assert ix_helpers.follow(ix, 2) == {"a"} and ix_helpers.follow(ix, 3) == {"a"}
        ix.remove(["a"])
        _gone(ix, 2)
        _gone(ix, 3)
        ix.check()


# -- 2. Index.create where a file is, or the remains of an index -------------------------------


def test_create_on_a_file_says_so(tmp_path, capsys):
    from neardup.cli import main

    f = tmp_path / "afile"
    f.write_text("x")
    for p in (f, f / "sub"):
        with pytest.raises(OSError) as ei:  # (an OutputError: a NeardupError and an OSError)
            Index.create(p)
        assert isinstance(ei.value, NeardupError)  # was a bare FileExistsError / NotADirectoryError
        assert str(p) in str(ei.value)
    assert "a file is there, not a directory" in str(pytest.raises(OSError, Index.create, f).value)
    assert f.read_text() == "x"
    assert main(["index", "init", str(f)]) == 5  # as the other unwritable places (exit 5)
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "a file is there, not a directory" in err
    with pytest.raises(IndexNotFoundError, match="a file, not an index"):  # open: said as a file, not "create one"
        Index.open(f)
    assert main(["index", "stats", str(f)]) == 9


def test_create_in_a_directory_holding_other_files_leaves_them(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    with Index.create(d) as ix:
        ix.add([{"id": "a", "text": "heavy rain over the coast"}])
    assert (d / "notes.txt").read_text() == "mine"
    # an interrupted create's leftovers (the lock, an empty log, the half-made database and its
    # journal) are no index: made again
    e = tmp_path / "e"
    e.mkdir()
    for n in ("lock", "texts-000001.dat", "index.sqlite.init", "index.sqlite.init-journal"):
        (e / n).write_bytes(b"")
    (e / "index.sqlite.init-journal").write_bytes(b"junk")
    with Index.create(e) as ix:
        assert ix.totals()["documents"] == 0
    assert not os.path.exists(e / "index.sqlite.init-journal")


def test_create_refuses_the_remains_of_an_index(tmp_path, capsys):
    """A directory whose index.sqlite was deleted, its WAL and text log left: a new index there
    replayed the old WAL into its database (the old documents came back) and appended to the
    old log."""
    from neardup.cli import main

    src = tmp_path / "old"
    ix = Index.create(src)
    ix.add([{"id": f"x{i}", "text": f"old document number {i} with a few more words"} for i in range(20)])
    shutil.copytree(src, tmp_path / "left")  # as a crash leaves it: the WAL not checkpointed
    ix.close()
    left = tmp_path / "left"
    os.unlink(left / "index.sqlite")
    assert os.path.getsize(left / "index.sqlite-wal") > 0
    with pytest.raises(IndexExistsError, match="remains of an index"):
        Index.create(left)
    assert main(["index", "init", str(left)]) == 9
    err = capsys.readouterr().err
    assert "remains of an index" in err and "index.sqlite-wal" in err and "Traceback" not in err
    assert not os.path.exists(left / "index.sqlite")
    os.unlink(left / "index.sqlite-wal")  # a text log (or segments) alone: the same
    with pytest.raises(IndexExistsError, match="texts-000001.dat"):
        Index.create(left)


# -- 3. the budget's groups made once ------------------------------------------------------------


def _candidates(rng, n=40, n_arch=200, m=3000, clusters=5):
    meta = {1000 + d: {"cluster": int(rng.integers(0, clusters))} for d in range(n_arch)}
    ci = rng.integers(0, n, m).astype(np.int64)
    cd = (1000 + rng.integers(0, n_arch, m)).astype(np.int64)
    u = np.unique(np.stack([ci, cd], axis=1), axis=0)
    return u[:, 0].copy(), u[:, 1].copy(), rng.integers(1, 6, len(u)), meta


def _verify(i, d):
    return ((np.asarray(i) * 31 + np.asarray(d) * 17) % 97) / 96.0


def _groups_by_hand(ci, cd, meta):
    keys = sorted({(int(i), meta[int(d)]["cluster"]) for i, d in zip(ci, cd)})
    num = {k: n for n, k in enumerate(keys)}
    return np.array([num[(int(i), meta[int(d)]["cluster"])] for i, d in zip(ci, cd)], np.int64)


def test_rounds_needed_gives_the_groups_once_for_archive_rounds(monkeypatch):
    rng = np.random.default_rng(2)
    calls = []
    real = budget._cluster_of

    def counting(cd, meta):
        calls.append(len(cd))
        return real(cd, meta)

    monkeypatch.setattr(budget, "_cluster_of", counting)
    for trial in range(20):
        ci, cd, hits, meta = _candidates(rng, clusters=int(rng.integers(1, 7)))
        per = int(rng.integers(1, 6))
        calls.clear()
        groups = budget.rounds_needed(ci, cd, meta, per_cluster=per)
        assert calls == [len(cd)], trial  # each candidate's cluster looked up once
        # (~70 candidates per document in at most 7 clusters: over rounds of 5)
        assert groups is not None
        np.testing.assert_array_equal(groups, _groups_by_hand(ci, cd, meta))
        got = budget.archive_rounds(ci, cd, hits, groups, _verify, 0.8, per_cluster=per)
        assert calls == [len(cd)], trial  # and not again by archive_rounds
        assert len(got[0]) and np.all(~np.isnan(got[2]))
    # under the budget: None, nothing more to hold
    ci, cd, hits, meta = _candidates(rng, clusters=6)
    assert budget.rounds_needed(ci[:3], cd[:3], meta, per_cluster=5) is None
    assert budget.rounds_needed(ci, cd, meta, per_cluster=10_000) is None


def test_adds_over_the_budget_look_each_candidates_cluster_up_once(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    base = [f"w{int(x)}" for x in rng.integers(0, 5000, 150)]
    recs = []
    for i in range(120):
        t = list(base)
        for p in rng.choice(150, size=int(rng.integers(0, 4)), replace=False):
            t[p] = f"v{int(rng.integers(0, 5000))}"
        recs.append({"id": f"p{i:03d}", "text": " ".join(t), "published_at": T0 + i})
    calls, asked, rounds = [], [], []
    real_cl, real_needed, real_rounds = budget._cluster_of, budget.rounds_needed, budget.archive_rounds
    monkeypatch.setattr(budget, "_cluster_of", lambda cd, meta: calls.append(len(cd)) or real_cl(cd, meta))
    monkeypatch.setattr(budget, "rounds_needed", lambda *a, **k: asked.append(len(a[0])) or real_needed(*a, **k))
    monkeypatch.setattr(budget, "archive_rounds", lambda *a, **k: rounds.append(len(a[0])) or real_rounds(*a, **k))
    with Index.create(tmp_path / "ix", steps=Steps(candidates_per_cluster=2)) as ix:
        for s in range(0, 120, 30):
            ix.add(recs[s : s + 30])
        ix.check()
    assert rounds  # the adds were over the budget
    # each add asks once, and each candidate's cluster is looked up at most once per add (by
    # rounds_needed; archive_rounds takes its groups)
    assert len(asked) == 4 and len(calls) <= len(asked)
    assert all(n in calls for n in rounds)
