"""The text log's reads: a few texts through a descriptor without readahead, many through one
with it (store.TextLog); the same texts either way, checked against their CRC-32s."""

import os

import pytest

from neardup.errors import IndexCorruptError
from neardup.index import Index, store


def _rows(ix):
    conn = ix._conn()
    q = (
        "SELECT d.id, t.name, d.text_offset, d.text_length, d.text_crc FROM documents d "
        "JOIN text_files t ON t.file = d.text_file ORDER BY d.doc"
    )
    return conn.execute(q).fetchall()


def test_few_and_many_texts_read_the_same_through_their_own_descriptors(tmp_path, corpus):
    docs = corpus[: store.FEW_TEXTS * 2]
    with Index.create(tmp_path / "ix") as ix:
        ix.add(docs)
        rows = _rows(ix)
        name = rows[0][1]
        assert {r[1] for r in rows} == {name}
        offs, lens, crcs = [r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows]
        want = [d["text"] for d in docs]
        what = lambda i: rows[i][0]  # noqa: E731
        few = ix._texts.read_many(name, offs[:3], lens[:3], crcs[:3], what)
        many = ix._texts.read_many(name, offs, lens, crcs, what)
        assert few == want[:3] and many == want
        assert ix._texts.read(name, offs[5], lens[5], crcs[5], "doc 5") == want[5]
        fds = dict(ix._texts.fds)  # (a copy: close() clears the table)
        assert set(fds) == {(name, True), (name, False)} and fds[(name, True)] != fds[(name, False)]
        # both check what they read
        bad = [c ^ 1 for c in crcs]
        for n in (3, len(rows)):
            with pytest.raises(IndexCorruptError, match="fails its checksum"):
                ix._texts.read_many(name, offs[:n], lens[:n], bad[:n], what)
    # closing the index closes both
    for fd in fds.values():
        with pytest.raises(OSError):
            os.fstat(fd)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full (every write: ENOSPC)")
def test_a_full_disk_in_the_text_log_is_an_oserror_with_its_errno():
    """The Rust writer's I/O error keeps its errno: a full disk is ENOSPC, which the CLI says as
    such (exit 5); it was an OSError of a message only, and `index add` said exit 4."""
    import errno

    from neardup import _core

    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(OSError) as e:
            _core.write_texts(fd, 0, ["a text"])
    finally:
        os.close(fd)
    assert e.value.errno == errno.ENOSPC and "No space left" in str(e.value)
