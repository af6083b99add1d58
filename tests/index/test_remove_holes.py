"""A scrubbing remove gives the disk space of the removed texts back (index/holes.py): it
punches holes in the text log instead of writing zeros, so an index that evicts by age while
it is served (compact needs the writer lock) no longer only grows. Where the file system
cannot punch, zeros are written as before; either way the removed bytes read as zeros."""

import ctypes
import errno
import os

import pytest

from neardup.index import Index, holes


def _docs(n, words=3000):
    return [
        {
            "id": f"d{i:04d}",
            "text": f"article {i} " + " ".join(f"w{(i * 7919 + j * 104729) % 999983}" for j in range(words)),
        }
        for i in range(n)
    ]


def _log(d):
    return [os.path.join(d, n) for n in os.listdir(d) if n.startswith("texts-")][0]


def _spans(ix, ids):
    conn = ix._conn()
    return [conn.execute("SELECT text_offset, text_length FROM documents WHERE id = ?", (i,)).fetchone() for i in ids]


def _remove_and_measure(tmp_path):
    d = str(tmp_path / "ix")
    docs = _docs(120)
    with Index.create(d) as ix:
        ix.add(docs)
        gone = [x["id"] for x in docs[10:100]]
        spans = _spans(ix, gone)
        log = _log(d)
        size0, blocks0 = os.path.getsize(log), os.stat(log).st_blocks * 512
        disk0 = ix.disk_bytes()
        assert ix.remove(gone) == 90
        size1, blocks1 = os.path.getsize(log), os.stat(log).st_blocks * 512
        with open(log, "rb") as f:
            for off, ln in spans:
                f.seek(off)
                assert f.read(ln) == bytes(ln)  # the removed texts read as zeros
        kept = docs[:10] + docs[100:]
        assert [ix.get_document(x["id"])["text"] for x in kept] == [x["text"] for x in kept]
        assert ix.check()["texts"] == 30
        disk1 = ix.disk_bytes()
    return size0, size1, blocks0, blocks1, sum(ln for _, ln in spans), disk0, disk1


def test_a_remove_frees_the_space_of_the_texts_it_removed(tmp_path):
    size0, size1, blocks0, blocks1, removed, disk0, disk1 = _remove_and_measure(tmp_path)
    assert size1 == size0  # every offset stays valid
    # each text (~30 KB) gives back its whole blocks: all of it but the two edge blocks
    assert blocks0 - blocks1 >= removed - 90 * 2 * 4096, (blocks0, blocks1, removed)
    # stats' disk figure follows (the log counts the space it takes, not its length)
    assert disk0 - disk1 >= removed - 90 * 2 * 4096 - 64 * 1024, (disk0, disk1)


@pytest.mark.parametrize("how", ["no call", "refused"])
def test_where_holes_cannot_be_punched_zeros_are_written(tmp_path, monkeypatch, how):
    def refused(fd, mode, off, ln):
        ctypes.set_errno(errno.EOPNOTSUPP)
        return -1

    monkeypatch.setattr(holes, "_fallocate", None if how == "no call" else refused)
    size0, size1, blocks0, blocks1, removed, disk0, disk1 = _remove_and_measure(tmp_path)
    assert size1 == size0 and blocks1 >= blocks0 - 8 * 4096  # zeros written: the space stays


def test_another_failure_is_said_not_papered_over(tmp_path, monkeypatch):
    from neardup.errors import ScrubIncompleteError

    def failing(fd, mode, off, ln):
        ctypes.set_errno(errno.EIO)
        return -1

    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add(_docs(5, words=50))
        monkeypatch.setattr(holes, "_fallocate", failing)
        with pytest.raises(ScrubIncompleteError, match="Input/output error"):
            ix.remove(["d0001"])
        monkeypatch.undo()
    with Index.open(d) as ix:  # the next writer's open finishes the overwriting
        ix._writer()
        assert ix._conn().execute("SELECT COUNT(*) FROM scrubs").fetchone()[0] == 0
        assert ix.stats()["documents"] == 4
