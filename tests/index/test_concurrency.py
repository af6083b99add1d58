"""A reader racing a compact (in another Index, as another process would) never fails: a file
its snapshot listed that compact has since removed sends it to the newer manifest."""
import os

import pytest

from neardup.index import Index, IndexCorruptError
from neardup.index import store


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

    def compact_first(path, size=None, crc=None):
        # the reader has its manifest; the compact lands before it opens the first segment
        if not fired:
            fired.append(os.path.basename(path))
            writer.compact()
        return real(path, size, crc)

    monkeypatch.setattr(store, "read_segment", compact_first)
    try:
        got = [v.as_dict() for v in reader.query(text)]
    finally:
        writer.close()
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
