"""What a delete writes. The SQLite that Python links on Debian is built with SECURE_DELETE on:
every page a DELETE frees is zeroed, so written to the WAL (and copied again by the
checkpoint). The writer's connection sets FAST (store.connect), so a background fold emptying
level 0 writes a few pages, not all of level 0's; a scrubbing ``remove`` sets ON for its own
transaction, so the removed rows leave nothing in the database file."""

import os
import sqlite3

from neardup.index import Index, fold

FRAME = 24 + 4096  # a WAL frame: its header and one page (the default page size)


def _docs(n, prefix):
    # distinct texts (no two near each other), short enough that level 0 dominates the pages
    return [
        {"id": f"{prefix}{i:05d}", "text": f"item {i} " + " ".join(f"w{(i * 7919 + j) % 100003}" for j in range(12))}
        for i in range(n)
    ]


def _wal_frames(d):
    wal = os.path.join(d, "index.sqlite-wal")
    size = os.path.getsize(wal) if os.path.exists(wal) else 0
    return max(0, size - 32) // FRAME


def test_a_fold_emptying_level_0_writes_a_few_pages_not_all_of_level_0(tmp_path):
    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add(_docs(3000, "d"))
        conn = ix._writer()
        level0_bytes = conn.execute("SELECT sum(length(bands)) + 16 * count(*) FROM level0").fetchone()[0]
        level0_pages = level0_bytes // 4096
        assert level0_pages >= 80
        pf = fold.prepare(ix)
        assert pf is not None
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert _wal_frames(d) == 0
        assert fold.commit(ix, pf)
        assert conn.execute("SELECT count(*) FROM level0").fetchone()[0] == 0
        written = _wal_frames(d)
        # page 1, meta, segments, level 0's root, the freelist's trunk (and an interior page or
        # two): with SECURE_DELETE on, every one of level 0's pages as well
        assert written <= 12, (written, level0_pages)
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 2  # FAST


def test_a_scrubbing_remove_leaves_no_trace_of_the_rows_in_the_database_file(tmp_path):
    d = str(tmp_path / "ix")
    marker = b"confidential-source-"
    with Index.create(d) as ix:
        ix.add(_docs(40, "keep-"))
        ix.add(_docs(1500, marker.decode()))  # the documents table's and its id index's pages
        assert ix.remove([f"{marker.decode()}{i:05d}" for i in range(1500)]) == 1500
        conn = ix._writer()
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 2  # back to FAST after it
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert ix.get_document("keep-00007")["id"] == "keep-00007"
    with open(os.path.join(d, "index.sqlite"), "rb") as f:
        data = f.read()
    assert marker not in data
    assert b"keep-00007" in data
    # the file is a sound database after it
    c = sqlite3.connect(os.path.join(d, "index.sqlite"))
    try:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        c.close()


def test_a_removed_text_leaves_no_copy_in_the_database_file(tmp_path):
    """A small add keeps its texts in ``pending_texts`` until the log is fsynced (pending.py);
    those rows were deleted with FAST, which left the texts in the pages it freed (free-list
    pages, part of no table): a removed article's text stayed readable in index.sqlite, and in
    every copy of it, after a scrubbing remove had zeroed it in the log. The rows are deleted
    with secure_delete ON now. Texts of one page and of several (overflow pages)."""
    d = str(tmp_path / "ix")
    short, long_ = b"zqxconfidentialshort", b"zqxconfidentiallong"
    with Index.create(d) as ix:
        ix.add(
            _docs(50, "keep-")
            + [{"id": "s1", "text": (short.decode() + " ") * 30}, {"id": "s2", "text": (long_.decode() + " ") * 600}]
        )
    # (the close fsynced the log and deleted the rows)
    with Index.open(d) as ix:
        assert ix.remove(["s1", "s2"]) == 2
        ix._writer().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert ix.get_document("keep-00007")["id"] == "keep-00007"
    for name in os.listdir(d):
        with open(os.path.join(d, name), "rb") as f:
            data = f.read()
        assert short not in data and long_ not in data, name


def test_a_removed_text_leaves_no_copy_in_the_wal_while_the_index_stays_open(tmp_path):
    """While the index stays open (the service's writer holds it for its whole life), the WAL
    file keeps the frames of earlier commits until they are overwritten: the frame that
    inserted a small add's ``pending_texts`` row held the text after its scrubbing remove had
    zeroed it everywhere else. A scrubbing remove now ends with a truncating checkpoint."""
    d = str(tmp_path / "ix")
    marker = b"zqxwalconfidential"
    with Index.create(d) as ix:
        ix.add(_docs(50, "keep-"))
    with Index.open(d, sync="full") as ix:
        ix.add([{"id": "w1", "text": (marker.decode() + " ") * 40}])  # a small add: a pending row
        conn = ix._writer()
        assert conn.execute("SELECT count(*) FROM pending_texts").fetchone()[0] == 1
        with open(os.path.join(d, "index.sqlite-wal"), "rb") as f:
            assert marker in f.read()  # (the premise: the row's frame is in the WAL)
        assert ix.remove(["w1"]) == 1
        assert ix.get_document("keep-00007")["id"] == "keep-00007"
        for name in os.listdir(d):  # the index still open: the WAL file as the service leaves it
            with open(os.path.join(d, name), "rb") as f:
                assert marker not in f.read(), name


def test_a_reader_holding_the_wal_delays_its_truncation_to_the_checkpoint_thread(tmp_path):
    """A reader in a read transaction keeps the WAL's frames: the remove does not wait for it
    (100 ms at most, under the writer lock), and the service's checkpoint thread truncates
    the WAL once the reader lets go."""
    import time

    from neardup.service.writer import Checkpointer

    d = str(tmp_path / "ix")
    marker = b"zqxheldconfidential"
    with Index.create(d) as ix:
        ix.add(_docs(50, "keep-"))
    with Index.open(d, sync="full") as ix:
        ix.add([{"id": "h1", "text": (marker.decode() + " ") * 40}])
        reader = sqlite3.connect(os.path.join(d, "index.sqlite"), isolation_level=None)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM documents").fetchone()[0] == 51  # its snapshot
        t0 = time.monotonic()
        assert ix.remove(["h1"]) == 1
        assert time.monotonic() - t0 < 5
        assert ix.scrub_wal() is False  # still held
        with open(os.path.join(d, "index.sqlite-wal"), "rb") as f:
            assert marker in f.read()
        cp = Checkpointer(ix, every=0.05, wal_max=None)
        try:
            reader.execute("COMMIT")
            reader.close()
            deadline = time.monotonic() + 10
            while ix._wal_scrub_due and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not ix._wal_scrub_due
        finally:
            cp.close()
        assert ix.scrub_wal() is True
        for name in os.listdir(d):
            with open(os.path.join(d, name), "rb") as f:
                assert marker not in f.read(), name
        assert ix.get_document("keep-00003")["id"] == "keep-00003"
