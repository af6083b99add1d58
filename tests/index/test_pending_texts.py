"""One fsync per small add (index/pending.py): a small add with sync "full" leaves its texts'
log bytes unsynced and keeps the texts in SQLite's pending_texts, made durable by the commit's
WAL fsync. A power cut that takes the unsynced end of the log must lose nothing: readers read
the texts from SQLite, the next writer writes them back into the log.

A power cut is simulated by copying the index (as a process that died would leave it, with the
writer never closed) and cutting its text log back to the length the last log fsync covered."""

from __future__ import annotations

import os
import shutil
import sqlite3

import ix_helpers
import pytest

from neardup.errors import IndexCorruptError
from neardup.index import Index
from neardup.index.store import FORMAT


def _rows(d) -> list[tuple]:
    con = sqlite3.connect(os.path.join(d, "index.sqlite"))
    try:
        return con.execute("SELECT doc, file, offset, length(body) FROM pending_texts ORDER BY doc").fetchall()
    finally:
        con.close()


def _log(d) -> str:
    return os.path.join(d, [n for n in os.listdir(d) if n.startswith("texts-")][0])


def _power_cut(src, dst, keep: int) -> None:
    """The index `src` as a power cut leaves it: a copy whose text log keeps `keep` bytes."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.lock", "lock"))
    with open(_log(dst), "r+b") as f:
        f.truncate(keep)


def _texts(ix, docs) -> dict:
    return {d["id"]: ix.get_document(d["id"])["text"] for d in docs}


@pytest.fixture(scope="module")
def corpus():
    docs = ix_helpers.synth(originals=1100, copies=200, bridges=0, seed=3)
    assert len(docs) >= 1250
    return docs


@pytest.fixture
def base(tmp_path, corpus):
    """An index whose first add fsynced its log (a large add), then single-article adds."""
    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add(corpus[:600])  # over PENDING_MAX_DOCS: the log is fsynced, no rows
        synced = os.path.getsize(_log(d))
        assert _rows(d) == []
    return d, synced


def test_small_fsynced_adds_keep_their_texts_in_sqlite_until_the_log_is_synced(base, corpus, tmp_path):
    d, synced = base
    ix = Index.open(d)
    try:
        singles = corpus[600:640]
        for doc in singles:
            ix.add([doc])
        rows = _rows(d)
        assert len(rows) == 40 and all(length > 0 for _, _, _, length in rows)
        assert rows[0][2] == synced  # the first unsynced byte of the log
        # a power cut now: the log loses everything past its last fsync
        _power_cut(d, tmp_path / "cut", synced)
        # the checkpoint thread's fsync covers them; the next commit drops the rows it covered
        assert ix.sync_texts() is True
        ix.add([corpus[640]])
        assert [r[0] for r in _rows(d)] == [rows[-1][0] + 1]
        expected = _texts(ix, singles)
    finally:
        ix.close()  # a clean close syncs the log and leaves no rows
    assert _rows(d) == []

    cut = str(tmp_path / "cut")
    assert os.path.getsize(_log(cut)) == synced
    # a reader before any writer: the index opens and every text reads, from SQLite
    with Index.open(cut) as rd:
        assert _texts(rd, singles) == expected
        assert rd.check()["texts"] == 640
        assert rd.query([singles[3]["text"]])[0].as_dict()["status"] == "duplicate"
    assert len(_rows(cut)) == 40  # readers change nothing
    # the first writer writes them back into the log and drops the rows
    with Index.open(cut) as wr:
        wr.add([corpus[641]])
        assert [r[0] for r in _rows(cut)] == [rows[-1][0] + 1]  # only the new add's own text
        wr.check()
        assert _texts(wr, singles) == expected
    con = sqlite3.connect(os.path.join(cut, "index.sqlite"))
    committed = con.execute("SELECT committed FROM text_files").fetchone()[0]
    con.close()
    assert os.path.getsize(_log(cut)) == committed


def test_a_log_cut_short_without_rows_to_mend_it_is_still_reported(base, corpus, tmp_path):
    d, synced = base
    with Index.open(d, sync="normal") as ix:  # no fsync and no rows: normal gives no such promise
        for doc in corpus[600:610]:
            ix.add([doc])
        assert _rows(d) == []
    _power_cut(d, tmp_path / "cut", synced)
    with pytest.raises(IndexCorruptError, match="truncated"):
        Index.open(tmp_path / "cut")


def test_removed_texts_do_not_come_back(base, corpus, tmp_path):
    d, synced = base
    ix = Index.open(d)
    try:
        for doc in corpus[600:605]:
            ix.add([doc])
        gone = corpus[602]["id"]
        doc_no = ix._conn().execute("SELECT doc FROM documents WHERE id = ?", (gone,)).fetchone()[0]
        assert doc_no in [r[0] for r in _rows(d)]
        ix.remove([gone])  # scrubbed in the log, and its row deleted with it
        assert doc_no not in [r[0] for r in _rows(d)]
        _power_cut(d, tmp_path / "cut", os.path.getsize(_log(d)))  # nothing lost: only the rewrite runs
    finally:
        ix.close()
    cut = str(tmp_path / "cut")
    with open(_log(cut), "rb") as f:
        before = f.read()
    with Index.open(cut) as wr:
        wr._writer()  # recovery
        assert _rows(cut) == []
        wr.check()
    with open(_log(cut), "rb") as f:
        assert f.read() == before  # the scrubbed bytes stayed zero
    assert corpus[602]["text"].encode() not in before


def test_large_adds_and_compact_drop_the_rows(base, corpus):
    d, _ = base
    with Index.open(d) as ix:
        for doc in corpus[600:603]:
            ix.add([doc])
        assert len(_rows(d)) == 3
        ix.add(corpus[603:1200])  # fsyncs the whole log: every row is covered
        assert _rows(d) == []
        ix.add([corpus[1200]])
        assert len(_rows(d)) == 1
        ix.compact()  # new log, fsynced
        assert _rows(d) == []
        ix.check()


def test_a_format_2_index_is_upgraded(base, corpus):
    d, _ = base
    con = sqlite3.connect(os.path.join(d, "index.sqlite"), isolation_level=None)
    con.execute("DROP TABLE pending_texts")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'format'")
    con.close()
    with Index.open(d) as ix:
        assert ix._conn().execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] == str(FORMAT)
        ix.add([corpus[600]])
        assert len(_rows(d)) == 1
