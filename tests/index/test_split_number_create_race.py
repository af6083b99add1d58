"""Leftovers: which part of a split cluster keeps its number (the part holding the keeper, or
its successor when the keeper is removed, else the oldest document); two ``Index.create`` on
one directory at once (exactly one makes the index); ``disk_bytes`` counts the index's own
files only."""

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import ix_helpers as h
import numpy as np

from neardup.index import Index

T0 = 1_790_000_000


# -- 1. the number of a split cluster ----------------------------------------------------------

#: b is published first: the keeper of the story once mab joins it, though a was added first
#: (the cluster's oldest document)
PUBLISHED = {"a": T0 + 10, "b": T0, "bx": T0 + 50, "c": T0 + 20, "mbc": T0 + 30, "mab": T0 + 40}


def _story(path, ids=("a", "b", "c", "mbc", "mab")) -> Index:
    """Clusters 1 (a), 2 (b), 3 (c); mbc merges 3 into 2, mab merges 2 into 1: one story,
    number 1, whose keeper is b (published first) and whose oldest document is a."""
    tx = h.chain_texts(11)
    ix = Index.create(path)
    for k in ids:
        ix.add([{"id": k, "text": tx[k.rstrip("x") if k == "bx" else k], "published_at": PUBLISHED[k]}])
    assert ix.get_cluster(1)["keeper"] == "b" and ix.get_document("a")["cluster"] == 1
    assert {m["id"] for m in ix.get_cluster(1)["members"]} == set(ids)
    return ix


def _counts_ok(ix: Index, stories: int, clusters: int) -> None:
    ix.check()  # (recounts: the counts in meta are right)
    st = ix.stats()
    assert (st["stories"], st["clusters"]) == (stories, clusters)


def test_the_part_holding_the_keeper_keeps_the_number(tmp_path):
    with _story(tmp_path / "ix") as ix:
        ix.remove(["mab"])  # {a} and {b, c, mbc}: the story's card (b) stays number 1
        c1 = ix.get_cluster(1)
        assert c1["keeper"] == "b" and {m["id"] for m in c1["members"]} == {"b", "c", "mbc"}
        a = ix.get_document("a")
        assert a["cluster"] not in (1, 2, 3) and a["keeper"] == "a"  # a new number (was: a kept 1)
        # the merged clusters follow their representatives (b, c): both in 1
        assert [ix.get_cluster(c)["merged_into"] for c in (2, 3)] == [1, 1]
        assert h.follow(ix, 2) == h.follow(ix, 3) == {"b", "c", "mbc"}
        _counts_ok(ix, stories=2, clusters=1)


def test_a_removed_keeper_passes_the_number_to_its_successor(tmp_path):
    with _story(tmp_path / "ix") as ix:
        # b (the keeper) goes with the bridge: {a} and {c, mbc}; b's most similar surviving
        # stored pair is mbc, so {c, mbc} keeps 1 (was: a, the oldest)
        ix.remove(["b", "mab"])
        c1 = ix.get_cluster(1)
        assert {m["id"] for m in c1["members"]} == {"c", "mbc"} and c1["keeper"] == "c"  # (the keeper rule)
        assert ix.get_document("a")["cluster"] not in (1, 2, 3)
        assert h.follow(ix, 2) == h.follow(ix, 3) == {"c", "mbc"}
        _counts_ok(ix, stories=2, clusters=1)


def test_a_removed_keeper_passes_the_number_to_its_exact_copy_first(tmp_path):
    with _story(tmp_path / "ix", ("a", "b", "bx", "c", "mbc", "mab")) as ix:
        assert ix.get_document("bx")["match"] == "exact"
        ix.remove(["b", "mab"])
        c1 = ix.get_cluster(1)
        assert {m["id"] for m in c1["members"]} == {"bx", "c", "mbc"} and c1["keeper"] == "c"
        assert ix.get_document("a")["cluster"] not in (1, 2, 3)
        rep = (
            sqlite3.connect(tmp_path / "ix" / "index.sqlite")
            .execute("SELECT d.id FROM clusters c JOIN documents d ON d.doc = c.keeper WHERE c.cluster = 2")
            .fetchone()
        )
        assert rep == ("bx",)  # the merged cluster's representative: the same successor
        _counts_ok(ix, stories=2, clusters=1)


def test_without_keeper_or_successor_the_oldest_document_keeps_the_number(tmp_path):
    with _story(tmp_path / "ix") as ix:
        ix.remove(["b", "mbc", "mab"])  # b's pairs all go with it: {a} (the oldest) keeps 1, {c}
        assert ix.get_document("a")["cluster"] == 1
        assert ix.get_document("c")["cluster"] not in (1, 2, 3)
        _counts_ok(ix, stories=2, clusters=0)


def test_surviving_keepers_keep_their_numbers_through_random_removes(tmp_path):
    """Over the synthetic corpus (bridge articles, exact and near copies, prefer_source): after
    every remove, each keeper that survives is still its cluster's keeper, under the same
    number, and the clusters are neardup dedup's over the documents left."""
    import neardup

    rng = np.random.default_rng(5)
    corpus = h.synth(originals=100, copies=80, bridges=8, seed=9)
    with Index.create(tmp_path / "ix", prefer_source=["agency"]) as ix:
        for day in h.days(corpus, 2):
            ix.add(day)
        left = {d["id"] for d in corpus}
        moved_keeper = 0
        con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
        for round_ in range(4):
            before = {r["keeper"]: r["cluster"] for r in ix.clusters()}
            ids = sorted(left)
            gone = set(rng.choice(ids, size=25, replace=False).tolist())
            heirs = {}
            if round_ == 0:
                # the bridge articles, each its story's keeper (agency, published first): the
                # story splits, and the part holding its most similar surviving pair keeps the
                # number (the oldest document, the old rule's, is as often in the other part)
                bridges = {i for i in left if i.startswith("bX")}
                gone |= bridges
                for b in sorted(bridges):
                    doc, cluster = con.execute("SELECT doc, cluster FROM documents WHERE id = ?", (b,)).fetchone()
                    assert before.get(b) == cluster
                    near = con.execute(
                        "SELECT d.id, d.doc, p.similarity FROM pairs p JOIN documents d "
                        "ON d.doc = (CASE WHEN p.a = ? THEN p.b ELSE p.a END) WHERE (p.a = ? OR p.b = ?) "
                        "AND d.cluster = ?",
                        (doc, doc, doc, cluster),
                    ).fetchall()
                    near = [x for x in near if x[0] not in gone]
                    if near:
                        heirs[min(near, key=lambda x: (-x[2], x[1]))[0]] = cluster
                assert len(heirs) >= 4
            ix.remove(sorted(gone))
            left -= gone
            for heir, cluster in heirs.items():
                assert ix.get_document(heir)["cluster"] == cluster, heir
            for keeper, cluster in before.items():
                if keeper in left:
                    d = ix.get_document(keeper)
                    assert (d["cluster"], d["keeper"]) == (cluster, keeper)
                else:
                    moved_keeper += 1
            ref = neardup.dedup([d for d in corpus if d["id"] in left], None, prefer_source=["agency"])
            assert h.cluster_sets(ix.clusters()) == h.cluster_sets(ref.clusters)
            ix.check()
        con.close()
        assert moved_keeper > 0


# -- 2. two creates at once ------------------------------------------------------------------

_WORKER = textwrap.dedent("""
    import json, random, sys, time
    from neardup.index import Index, store

    rng = random.Random(int(sys.argv[1]))
    real = store.WriterLock.acquire

    def late(self):
        # a process descheduled between its checks and the lock, for up to 250 ms (a create
        # holds the lock for some 20-100 ms)
        time.sleep(rng.uniform(0, 0.25))
        real(self)

    store.WriterLock.acquire = late
    print("ready", flush=True)
    for line in sys.stdin:
        try:
            Index.create(line.strip()).close()
            out = {"ok": True}
        except Exception as exc:
            out = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
        print(json.dumps(out), flush=True)
""")


def test_two_creates_at_once_make_one_index(tmp_path):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(seed)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for seed in (1, 2)
    ]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        for round_ in range(20):
            d = tmp_path / f"ix{round_}"
            for p in procs:  # both given the directory together
                p.stdin.write(f"{d}\n")
            for p in procs:
                p.stdin.flush()
            outs = [json.loads(p.stdout.readline()) for p in procs]
            assert sum(o["ok"] for o in outs) == 1, (round_, outs)
            loser = next(o for o in outs if not o["ok"])
            assert loser["error"] == "IndexExistsError" and "already holds an index" in loser["message"], loser
            with Index.open(d) as ix:
                ix.add([{"id": "x", "text": "the index one create made, whole and writable"}])
                assert ix.check()["texts"] == 1 and ix.stats()["documents"] == 1
            assert not (d / "index.sqlite.init").exists()
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=60)
            p.stdout.close()


# -- 3. disk_bytes ---------------------------------------------------------------------------


def test_disk_bytes_counts_only_the_index_files(tmp_path, small_segments):
    d = tmp_path / "ix"
    with Index.create(d, **small_segments) as ix:
        ix.add(h.synth(originals=160, copies=40, bridges=0, words=60, seed=2))
        (d / "notes.txt").write_bytes(b"n" * 300_000)  # the user's files, and a subdirectory's
        (d / "export.jsonl").write_bytes(b"e" * 200_000)
        (d / "texts-old.dat").write_bytes(b"t" * 100_000)  # (named like a log, but not the index's)
        (d / "sub").mkdir()
        (d / "sub" / "big.bin").write_bytes(b"b" * 400_000)
        own = {f for f in os.listdir(d) if f == "lock" or f.startswith(("index.sqlite", "seg-", "texts-0"))}
        assert any(f.startswith("seg-") for f in own) and "index.sqlite-wal" in own
        want = sum(os.path.getsize(d / f) for f in own)
        assert ix.disk_bytes() == want
        assert ix.stats()["disk_bytes"] == ix.disk_bytes()
        assert ix.compact()["bytes_after"] == ix.disk_bytes()


def test_a_writers_recovery_deletes_only_the_index_files(tmp_path, small_segments):
    """A writer's open deletes segment and text files the index does not list (an interrupted
    add's, a merged segment's): by prefix, it deleted a user's texts-notes.txt, seg-plan.md and
    retired-plans.doc in the directory too. Now only names of the index's own layout."""
    d = tmp_path / "ix"
    with Index.create(d, **small_segments) as ix:
        ix.add(h.synth(originals=60, copies=20, bridges=0, words=60, seed=4))
    mine = {
        "texts-notes.txt": b"my notes",
        "seg-plan.md": b"a plan",
        "retired-plans.doc": b"old plans",
        "texts-old.dat": b"not a log of this index",
    }
    for name, data in mine.items():
        (d / name).write_bytes(data)
    strays = [
        "seg-99999999-deadbeef.ndx",
        "seg-00000001-0000beef.ndx.tmp-12345",
        "texts-000099.dat",
        "retired-seg-00000007-abcdef01.ndx",
    ]  # the index's names, not listed: an interrupted write's
    for name in strays:
        (d / name).write_bytes(b"x" * 64)
    with Index.open(d) as ix:
        ix.add([{"id": "after", "text": "one more article for the writer to open the index with"}])
        ix.check()  # (raises on damage)
    for name, data in mine.items():
        assert (d / name).read_bytes() == data, name
    assert [n for n in strays if (d / n).exists()] == []
