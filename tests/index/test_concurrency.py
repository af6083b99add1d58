"""A reader racing a compact (in another Index, as another process would) never fails: a file
its snapshot listed that compact has since removed sends it to the newer manifest."""

import os
import threading
import time

import pytest

from neardup.index import Index, IndexCorruptError, store


def _build(tmp_path, corpus, tuning):
    d = tmp_path / "ix"
    with Index.create(d, **tuning) as ix:
        for s in range(0, 600, 150):
            ix.add(corpus[s : s + 150])
    return d


def test_query_while_compact_removes_the_segments(tmp_path, corpus, small_segments, monkeypatch):
    d = _build(tmp_path, corpus, small_segments)
    segs_before = sorted(f for f in os.listdir(d) if f.startswith("seg-"))
    assert len(segs_before) >= 2
    text = corpus[0]["text"]
    with Index.open(d) as fresh:
        expected = [v.as_dict() for v in fresh.query(text)]
    writer, reader = Index.open(d), Index.open(d)
    real = store.read_segment
    fired = []
    compacting = []
    failed = []

    def run_compact():
        try:
            writer.compact()
        except BaseException as exc:  # re-raised below
            failed.append(exc)

    def compact_first(path, size=None, crc=None):
        # the reader has its manifest; the compact lands before it opens the first segment.
        # The compact runs in a thread of its own, as another process's would: called here in
        # the reader's thread, its closing wal_checkpoint(TRUNCATE) waited out SQLite's 30 s
        # busy timeout on this reader's open read. The reader goes on only once the compact
        # has committed and removed every segment its snapshot listed (what compact does
        # before that checkpoint), so it meets the same gone files as before.
        if not fired:
            fired.append(os.path.basename(path))
            t = threading.Thread(target=run_compact)
            t.start()
            compacting.append(t)
            deadline = time.monotonic() + 60
            while any(os.path.exists(d / f) for f in segs_before) and t.is_alive():
                assert time.monotonic() < deadline, "the compact did not remove the segments"
                time.sleep(0.005)
            assert not failed, failed
        return real(path, size, crc)

    monkeypatch.setattr(store, "read_segment", compact_first)
    try:
        got = [v.as_dict() for v in reader.query(text)]
    finally:
        for t in compacting:
            t.join(60)
        writer.close()
    assert not failed, failed
    assert fired and fired[0] in segs_before and not os.path.exists(d / fired[0])
    assert got == expected and got[0]["status"] == "duplicate"
    assert reader.check()["segments"] == 1
    reader.close()


def test_text_read_while_compact_replaces_the_text_log(tmp_path, corpus, small_segments, monkeypatch):
    d = _build(tmp_path, corpus, small_segments)
    ident = corpus[3]["id"]
    writer, reader = Index.open(d), Index.open(d)
    real = store.TextLog._fd
    fired = []

    def compact_first(self, name, few=True):
        if self is reader._texts and not fired:
            fired.append(name)
            writer.compact()
        return real(self, name, few)

    monkeypatch.setattr(store.TextLog, "_fd", compact_first)
    try:
        doc = reader.get_document(ident)
        cl = reader.get_cluster(doc["cluster"], texts=True)
    finally:
        writer.close()
    assert fired == ["texts-000001.dat"] and not os.path.exists(d / "texts-000001.dat")
    assert doc["text"] == corpus[3]["text"]
    assert any(m["id"] == ident and m["text"] == corpus[3]["text"] for m in cl["members"])
    reader.close()


def test_a_listed_file_that_is_missing_is_still_damage(tmp_path, corpus, small_segments):
    d = _build(tmp_path, corpus, small_segments)
    with Index.open(d) as ix:
        seg = next(f for f in os.listdir(d) if f.startswith("seg-"))
        os.unlink(d / seg)  # not a compact: the manifest still lists it
        with pytest.raises(IndexCorruptError, match="missing"):
            ix.query(corpus[0]["text"])


def test_compact_keeps_other_threads_text_descriptors_open(tmp_path, corpus, small_segments):
    d = _build(tmp_path, corpus, small_segments)
    with Index.open(d) as ix:
        ix.get_document(corpus[0]["id"])  # opens texts-000001.dat
        fd = ix._texts.fds[("texts-000001.dat", True)]  # (a single text: the few-texts descriptor)
        ix.compact()
        # a thread that looked the descriptor up before the compact may still pread it
        assert os.pread(fd, 1, 0)
        assert ix.get_document(corpus[0]["id"])["text"] == corpus[0]["text"]


def test_a_compact_does_not_wait_for_a_reader_in_a_transaction(tmp_path, corpus, small_segments):
    """compact ends with a WAL checkpoint that waits for readers; a reader holding a read
    transaction (an export's generator paused beside it) held the compact, under the writer
    lock, for SQLite's whole 30 s busy timeout."""
    d = tmp_path / "ix"
    with Index.create(d, **small_segments) as ix:
        ix.add(corpus[:300])
        ix.remove([corpus[5]["id"]])
    writer, reader = Index.open(d), Index.open(d)
    try:
        rows = reader.clusters(min_size=1)
        next(rows)  # its snapshot open, the generator paused
        t = time.monotonic()
        writer.compact()
        assert time.monotonic() - t < 10
        assert sum(1 for _ in rows) >= 1  # the paused reader goes on
    finally:
        writer.close()
        reader.close()
    with Index.open(d) as ix:
        assert ix.check()["texts"] == 299
