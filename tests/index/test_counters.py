"""The counts kept in meta (documents, stories, clusters of two or more, text bytes; counters.py)
equal a recount from the tables after every kind of commit: adds that start, grow and merge
clusters (one at a time, as the service, and in batches, to level 0 and to segments), removes
that empty and split clusters, compaction; ``check`` reports wrong counts and ``recount``
repairs them."""

from __future__ import annotations

import random
import sqlite3
from concurrent.futures import Future

import ix_helpers
import pytest

from neardup.errors import IndexCorruptError
from neardup.index import Index, counters
from neardup.service.writer import FIELDS, GroupWriter


def _same(ix: Index) -> dict:
    conn = ix._conn()
    kept, real = counters.read(conn), counters.recount(conn)
    assert kept == real
    return real


def _stats_agree(ix: Index) -> None:
    st = ix.stats()
    conn = ix._conn()
    dups = conn.execute("SELECT COALESCE(SUM(size - 1), 0) FROM clusters WHERE size >= 2").fetchone()[0]
    assert (st["documents"], st["stories"], st["clusters"], st["duplicates"]) == (
        conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM clusters WHERE size > 0").fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM clusters WHERE size >= 2").fetchone()[0],
        dups,
    )
    assert st["text_bytes"] == conn.execute("SELECT COALESCE(SUM(text_length), 0) FROM documents").fetchone()[0]
    assert st["batches"] == conn.execute("SELECT COUNT(*) FROM batches").fetchone()[0]


@pytest.mark.parametrize("segments", [False, True], ids=["level0", "segments"])
def test_counts_follow_adds_merges_removes_and_compaction(tmp_path, corpus, small_segments, segments):
    rng = random.Random(7)
    kw = small_segments if segments else {}
    docs = ix_helpers.days(corpus, 3)
    with Index.create(tmp_path / "ix", **kw) as ix:
        assert _same(ix) == dict.fromkeys(counters.NAMES, 0)
        for day in docs[:-1]:
            for batch, _ in ix_helpers.uneven_batches(day, rng, 1, 170):
                ix.add(batch)
                _same(ix)
        # the last day one article at a time, as the service adds them (its bridges merge clusters)
        plain = [d for d in docs[-1] if d.get("day") != "last"]
        for d in plain[:150] + [d for d in docs[-1] if d.get("day") == "last"]:
            ix.add([d])
        _same(ix)
        conn = ix._conn()
        assert conn.execute("SELECT COUNT(*) FROM clusters WHERE merged_into IS NOT NULL").fetchone()[0] > 0
        _stats_agree(ix)
        # removes: whole clusters (emptied), bridge centres (their clusters split), keepers, singles
        ids = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY doc")]
        bridge = [i for i in ids if i.startswith("bX")]
        next_before = int(ix._meta(conn, "next_cluster"))
        ix.remove(bridge[:5])
        assert int(ix._meta(conn, "next_cluster")) > next_before  # some cluster split in two
        _same(ix)
        keeper_ids = [
            r[0]
            for r in conn.execute(
                "SELECT d.id FROM clusters c JOIN documents d ON d.doc = c.keeper WHERE c.size >= 2 LIMIT 20"
            )
        ]
        ix.remove(keeper_ids)
        _same(ix)
        ix.remove(rng.sample([i for i in ids if i not in set(bridge[:5]) | set(keeper_ids)], 60))
        _stats_agree(ix)
        whole = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM documents WHERE cluster = (SELECT cluster FROM clusters WHERE size >= 2 LIMIT 1)"
            )
        ]
        before = _same(ix)
        ix.remove(whole)
        after = _same(ix)
        assert (after["documents"], after["stories"], after["clusters"]) == (
            before["documents"] - len(whole),
            before["stories"] - 1,
            before["clusters"] - 1,
        )
        ix.compact()
        _same(ix)
        ix.add(plain[150:])
        _same(ix)
        _stats_agree(ix)
        ix.check()


def test_counts_follow_the_services_groups(tmp_path, corpus):
    """Groups of requests (one commit each), a request refused inside a group (its id present):
    only what was committed is counted."""
    with Index.create(tmp_path / "ix") as ix:
        ix.add(corpus[:300])
        gw = GroupWriter(ix, FIELDS)
        try:
            rest = corpus[300:]
            for s in range(0, 240, 6):
                reqs = [[rest[s + j]] for j in range(5)] + [[corpus[s]]]  # the last: id already present
                futs = [Future() for _ in reqs]
                gw.write_group(list(zip(reqs, futs)))
                assert all(f.exception() is None for f in futs[:5])
                assert futs[5].exception() is not None
                _same(ix)
        finally:
            gw.close()
        assert _same(ix)["documents"] == 300 + 200


def test_counts_without_stored_texts(tmp_path, corpus):
    with Index.create(tmp_path / "ix", verify="estimate", store_text=False) as ix:
        ix.add(corpus[:200])
        ix.add([corpus[200]])
        ix.remove([corpus[0]["id"]])
        c = _same(ix)
        assert c["text_bytes"] == 0 and c["documents"] == 200


def test_stats_do_not_scan_documents_or_clusters(tmp_path, corpus):
    """stats reads the counts: it runs no statement over documents or clusters."""
    with Index.create(tmp_path / "ix") as ix:
        ix.add(corpus[:100])
        seen: list[str] = []
        ix._conn().set_trace_callback(seen.append)
        st = ix.stats()
        ix._conn().set_trace_callback(None)
        assert st["documents"] == 100
        assert seen and not [q for q in seen if "FROM documents" in q or "FROM clusters" in q]


def test_check_reports_wrong_counts_and_recount_repairs_them(tmp_path, corpus, capsys):
    from neardup.cli import main

    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:120])
        right = _same(ix)
    con = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    con.execute("UPDATE meta SET value = '7' WHERE key = 'documents'")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'text_bytes'")
    con.close()
    with Index.open(d) as ix:
        with pytest.raises(IndexCorruptError) as e:
            ix.check()
        msg = str(e.value)
        assert "documents 7 (the tables hold 120)" in msg and "text_bytes 1 " in msg and "stories" not in msg
        assert "--recount" in msg
    assert main(["index", "check", str(d)]) != 0
    assert "documents 7" in capsys.readouterr().err
    assert main(["index", "check", "--recount", str(d)]) == 0
    out = capsys.readouterr().out
    assert "documents 120" in out and "index is sound" in out
    with Index.open(d) as ix:
        assert _same(ix) == right
        ix.check()
