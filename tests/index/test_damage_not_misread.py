"""What a reader or writer takes for damage, and what it does not (found by a tester):

* a scrubbing remove zeroes a removed text right after its commit; a reader whose snapshot
  still listed the document read zeroes and reported the sound index as damaged;
* a damaged `text_files.committed` or `meta.next_*` was trusted: the writer's recovery cut
  committed texts off the log, or a new document took a removed one's number;
* deleting DIR/lock (it holds a pid and looks like a stale pid file) let a second writer in.
"""

from __future__ import annotations

import sqlite3

import pytest

from neardup.errors import DocumentNotFoundError, IndexCorruptError, IndexLockedError
from neardup.index import Index, store


def _docs(n: int, tag: str = "d") -> list[dict]:
    return [
        {"id": f"{tag}{i}", "text": f"story {tag} {i} " + " ".join(f"w{i}x{j}" for j in range(40))} for i in range(n)
    ]


@pytest.fixture
def ix_dir(make_index):
    return make_index(_docs(20))


def _remove_during_first_read(monkeypatch, d, victim: str) -> list[int]:
    """The next text read of any reader first lets another Index (as another process would)
    remove `victim` with a scrub: committed, its text zeroed."""
    fired: list[int] = []
    orig_read, orig_many = store.TextLog.read, store.TextLog.read_many

    def hook():
        if not fired:
            fired.append(1)
            with Index.open(d) as w:
                assert w.remove([victim]) == 1

    monkeypatch.setattr(store.TextLog, "read", lambda self, *a, **k: (hook(), orig_read(self, *a, **k))[1])
    monkeypatch.setattr(store.TextLog, "read_many", lambda self, *a, **k: (hook(), orig_many(self, *a, **k))[1])
    return fired


def test_check_beside_a_scrubbing_remove_is_not_damage(ix_dir, monkeypatch):
    with Index.open(ix_dir) as r:
        first = r._conn().execute("SELECT id FROM documents ORDER BY doc LIMIT 1").fetchone()[0]
        fired = _remove_during_first_read(monkeypatch, ix_dir, first)
        res = r.check()
        assert fired and res["texts"] == 19  # the removed one is not counted, nor damage


def test_get_document_removed_while_read_is_not_found(ix_dir, monkeypatch):
    with Index.open(ix_dir) as r:
        fired = _remove_during_first_read(monkeypatch, ix_dir, "d3")
        with pytest.raises(DocumentNotFoundError):
            r.get_document("d3")
        assert fired
        assert r.get_document("d4")["id"] == "d4"


def test_query_whose_candidate_is_removed_while_verified(ix_dir, monkeypatch):
    text = _docs(20)[5]["text"] + " extra"
    with Index.open(ix_dir) as r:
        fired = _remove_during_first_read(monkeypatch, ix_dir, "d5")
        v = r.query(text)[0]
        assert fired and v.status == "new"  # its only match is gone


def test_real_damage_is_still_reported(ix_dir):
    """A text that fails its checksum while its row is unchanged is damage, as before."""
    with Index.open(ix_dir) as ix:
        (name,) = ix._conn().execute("SELECT name FROM text_files").fetchone()
        (off,) = ix._conn().execute("SELECT text_offset FROM documents WHERE id = 'd2'").fetchone()
    with open(ix_dir / name, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 1]))
    with Index.open(ix_dir) as r:
        with pytest.raises(IndexCorruptError, match="checksum"):
            r.get_document("d2")
        with pytest.raises(IndexCorruptError, match="checksum"):
            r.check()


def _set(d, sql: str, *args) -> None:
    con = sqlite3.connect(d / "index.sqlite")
    with con:
        con.execute(sql, args)
    con.close()


def test_a_lowered_committed_length_is_reported_not_cut(ix_dir):
    with Index.open(ix_dir) as ix:
        (committed,) = ix._conn().execute("SELECT committed FROM text_files").fetchone()
        (name,) = ix._conn().execute("SELECT name FROM text_files").fetchone()
    size = (ix_dir / name).stat().st_size
    _set(ix_dir, "UPDATE text_files SET committed = ?", committed - 1000)  # one damaged number
    with Index.open(ix_dir) as ix:
        with pytest.raises(IndexCorruptError, match="committed length"):
            ix.check()
        with pytest.raises(IndexCorruptError, match="committed length"):
            ix.add(_docs(1, "new"))
    assert (ix_dir / name).stat().st_size == size  # the log was not cut
    _set(ix_dir, "UPDATE text_files SET committed = ?", committed)  # mended: all texts there
    with Index.open(ix_dir) as ix:
        ix.add(_docs(1, "new"))
        assert ix.check()["texts"] == 21


@pytest.mark.parametrize("key, value", [("next_doc", 3), ("next_cluster", 1), ("next_batch", 0), ("next_doc", "x")])
def test_a_lowered_next_number_is_reported(ix_dir, key, value):
    _set(ix_dir, "UPDATE meta SET value = ? WHERE key = ?", str(value), key)
    with Index.open(ix_dir) as ix:
        with pytest.raises(IndexCorruptError, match=f"meta.{key}"):
            ix.check()
        with pytest.raises(IndexCorruptError, match=f"meta.{key}"):
            ix.add(_docs(1, "new"))
        assert ix.stats()["documents"] == 20  # reads go on


def test_a_removed_number_is_not_given_again(ix_dir):
    """Lowered onto the number of a removed document whose tombstone a segment still needs:
    the new document would have been hidden by that tombstone."""
    with Index.open(ix_dir) as ix:
        ix.fold()
        ix.remove(["d19"])
        (top,) = ix._conn().execute("SELECT MAX(doc) FROM tombstones").fetchone()
    _set(ix_dir, "UPDATE meta SET value = ? WHERE key = 'next_doc'", str(top))
    with Index.open(ix_dir) as ix:
        with pytest.raises(IndexCorruptError, match="meta.next_doc"):
            ix.add(_docs(1, "new"))


def test_a_deleted_lock_file_lets_no_second_writer_in(ix_dir):
    with Index.open(ix_dir) as a:
        a.add(_docs(1, "a"))  # a holds the writer lock
        (ix_dir / "lock").unlink()  # as one deletes a stale pid file
        with Index.open(ix_dir) as b:
            with pytest.raises(IndexLockedError, match="index is locked"):
                b.add(_docs(1, "b"))
        a.add(_docs(1, "a2"))
    with Index.open(ix_dir) as c:  # released on close: the next writer goes on
        c.add(_docs(1, "c"))
        assert c.check()["texts"] == 23


def test_a_remove_whose_scrub_fails_says_it_is_committed(ix_dir, monkeypatch):
    """The removal commits, then overwriting the texts meets a full disk: the error says the
    documents are removed (it said "the index is as it was before this command"), and the next
    writer finishes the scrub."""
    import errno

    from neardup.errors import ScrubIncompleteError
    from neardup.index.core import Index as Ix

    calls = []
    orig = Ix._scrub

    def full(self, conn):
        calls.append(1)
        if len(calls) == 2:  # the first is the writer's open; the second the remove's
            raise OSError(errno.ENOSPC, "No space left on device")
        return orig(self, conn)

    monkeypatch.setattr(Ix, "_scrub", full)
    with Index.open(ix_dir) as ix:
        with pytest.raises(ScrubIncompleteError, match=r"removed 2 document\(s\) \(committed\)"):
            ix.remove(["d1", "d2"])
        assert ix.stats()["documents"] == 18
        assert ix._conn().execute("SELECT COUNT(*) FROM scrubs").fetchone()[0] > 0
    monkeypatch.setattr(Ix, "_scrub", orig)
    with Index.open(ix_dir) as ix:
        ix.add(_docs(1, "n"))  # the next writer's open overwrites them
        assert ix._conn().execute("SELECT COUNT(*) FROM scrubs").fetchone()[0] == 0
        assert ix.check()["texts"] == 19


def test_the_cli_says_committed_and_damaged(ix_dir, monkeypatch, capsys):
    """The command's messages and exit codes for those two: exit 5 with the remove's own words,
    and SQLite's "malformed" met mid-command is damage (exit 7), not a traceback."""
    import errno
    import sqlite3 as sq

    from neardup.cli import index as icli
    from neardup.cli import main
    from neardup.index.core import Index as Ix

    calls = []

    def full(self, conn):
        calls.append(1)
        if len(calls) == 2:  # the remove's (the first is the writer's open)
            raise OSError(errno.ENOSPC, "full")

    monkeypatch.setattr(Ix, "_scrub", full)
    assert main(["index", "remove", str(ix_dir), "--ids", "d1"]) == 5
    err = capsys.readouterr().err
    assert "(committed)" in err and "as it was before" not in err

    def malformed(a):
        raise sq.DatabaseError("database disk image is malformed")

    monkeypatch.setitem(icli._INDEX, "export", malformed)
    assert main(["index", "export", str(ix_dir), "-o", str(ix_dir.parent / "x.jsonl")]) == 7
    assert "the index is damaged: index.sqlite: database disk image is malformed" in capsys.readouterr().err


def test_no_space_to_open_is_said_as_such(tmp_path, monkeypatch):
    """With 0 bytes free SQLite cannot make its -wal and -shm files ("disk I/O error"): every
    command said the index was damaged."""
    import errno
    import sqlite3 as sq

    class Refusing:
        def execute(self, *a):
            raise sq.OperationalError("disk I/O error")

        def close(self):
            pass

    monkeypatch.setattr(store.sqlite3, "connect", lambda *a, **k: Refusing())
    monkeypatch.setattr(store, "_no_space", lambda d: True)
    with pytest.raises(OSError) as e:
        store.connect(str(tmp_path / "index.sqlite"))
    assert e.value.errno == errno.ENOSPC and "no space left" in str(e.value)
    monkeypatch.setattr(store, "_no_space", lambda d: False)
    with pytest.raises(IndexCorruptError, match="not a readable SQLite database"):
        store.connect(str(tmp_path / "index.sqlite"))
