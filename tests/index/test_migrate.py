"""An index of an older format is upgraded in place on open: format 1 (level 0 as one row per
posting) through every later one; format 3 (no counts in meta) to 4."""

import sqlite3

import numpy as np
import pytest

from neardup.errors import IndexLockedError
from neardup.index import Index, counters
from neardup.index.store import FORMAT


def _drop_counts(con):
    con.execute(f"DELETE FROM meta WHERE key IN ({','.join('?' * len(counters.NAMES))})", counters.NAMES)


def _to_format_1(db):
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("BEGIN")
    con.execute(
        "CREATE TABLE postings (band INTEGER NOT NULL, key INTEGER NOT NULL, doc INTEGER NOT NULL, "
        "PRIMARY KEY (band, key, doc)) WITHOUT ROWID"
    )
    for doc, ek, bands in con.execute("SELECT doc, exact_key, bands FROM level0").fetchall():
        con.execute("INSERT INTO postings VALUES (-1, ?, ?)", (ek, doc))
        for j, k in enumerate(np.frombuffer(bands, "<u8").tolist()):
            con.execute(
                "INSERT OR IGNORE INTO postings VALUES (?, ?, ?)", (j, k - (1 << 64) if k >= 1 << 63 else k, doc)
            )
    con.execute("DROP TABLE level0")
    con.execute("DROP TABLE pending_texts")
    _drop_counts(con)
    con.execute("UPDATE meta SET value = '1' WHERE key = 'format'")
    con.execute("COMMIT")
    con.close()


def test_format_1_index_is_upgraded_on_open(tmp_path, corpus):
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:200])  # level 0 (under segment_min)
        before = [v.as_dict() for v in ix.query([c["text"] for c in corpus[200:260]])]
        level0 = ix._conn().execute("SELECT doc, exact_key, bands FROM level0 ORDER BY doc").fetchall()
    _to_format_1(d / "index.sqlite")
    with Index.open(d) as ix:
        con = ix._conn()
        assert con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] == str(FORMAT)
        assert counters.read(con) == counters.recount(con)
        assert con.execute("SELECT doc, exact_key, bands FROM level0 ORDER BY doc").fetchall() == level0
        assert [v.as_dict() for v in ix.query([c["text"] for c in corpus[200:260]])] == before
        ix.add(corpus[200:300])
        ix.check()


def test_merge_update_uses_the_merged_into_index_and_writers_add_it(tmp_path, corpus):
    d = tmp_path / "ix"
    Index.create(d).close()
    con = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    plan = con.execute("EXPLAIN QUERY PLAN UPDATE clusters SET merged_into = 1 WHERE merged_into = 2").fetchall()
    assert "clusters_merged" in str(plan)  # not a scan of every cluster, once per merge
    con.execute("DROP INDEX clusters_merged")  # as in an index made before the index existed
    con.close()
    with Index.open(d) as ix:
        ix.add(corpus[:20])  # a writer adds it
        names = [r[0] for r in ix._conn().execute("SELECT name FROM sqlite_master WHERE type = 'index'")]
        assert "clusters_merged" in names


def test_format_3_index_gets_its_counts_on_open(tmp_path, corpus):
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:300])
        ix.remove([corpus[0]["id"], corpus[5]["id"]])
        want = counters.recount(ix._conn())
    con = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    _drop_counts(con)
    con.execute("UPDATE meta SET value = '3' WHERE key = 'format'")
    con.close()
    with Index.open(d) as ix:
        con = ix._conn()
        assert con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] == str(FORMAT)
        assert counters.read(con) == want and want["documents"] == 298 and want["text_bytes"] > 0
        ix.add(corpus[300:320])
        assert ix.stats()["documents"] == 318
        ix.check()


def test_format_3_index_is_not_upgraded_while_a_writer_holds_it(tmp_path, corpus):
    """The upgrade writes: with another writer holding the lock, opening says so and changes nothing."""
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:50])
    con = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    _drop_counts(con)
    con.execute("UPDATE meta SET value = '3' WHERE key = 'format'")
    con.close()
    from neardup.index.store import WriterLock

    lock = WriterLock(str(d))
    lock.acquire()
    try:
        with pytest.raises(IndexLockedError):
            Index.open(d)
    finally:
        lock.release()
    con = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    assert con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] == "3"
    con.close()
    with Index.open(d) as ix:
        assert ix.stats()["documents"] == 50


def test_format_4_index_is_upgraded_to_5_and_a_newer_format_is_refused(tmp_path, corpus):
    """Format 5 only changes what `pairs` may hold (a budget of a large story's pairs): a
    format-4 index is upgraded by its number, and a neardup that reads 5 refuses 6, as a
    format-4 neardup refuses 5 (its removal would take the budget for all the pairs)."""
    from neardup.index import IndexConfigError

    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(corpus[:100])
    con = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    con.execute("UPDATE meta SET value = '4' WHERE key = 'format'")
    con.close()
    with Index.open(d) as ix:
        assert ix._conn().execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] == "5" == str(FORMAT)
        ix.add(corpus[100:120])
        ix.check()
    con = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    con.execute("UPDATE meta SET value = '6' WHERE key = 'format'")
    con.close()
    with pytest.raises(IndexConfigError, match="index format '6', this neardup reads 5"):
        Index.open(d)
