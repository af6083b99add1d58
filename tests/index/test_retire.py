"""Segments merged away by a background fold are deleted gradually (fold._retire, gradual):
renamed out of the way, cut down a piece at a time, then unlinked. Readers see them gone at the
rename; a reader that opened one just before reads it short and is told it is gone, not that
the index is damaged; a crash mid-way leaves a retired file that the next writer deletes."""

import os

import pytest
from test_fold import _listed, _same_after_reopen, _verdicts
from test_segment_write import _postings
from test_tiers import _index_with_segments

from neardup.errors import FileGoneError, IndexCorruptError
from neardup.index import Index, fold, segment
from neardup.index.segment import read_segment, write_segment
from neardup.index.tuning import Steps


def test_a_gradual_retire_cuts_the_file_down_then_deletes_it(tmp_path, corpus, monkeypatch):
    sizes = []
    real = os.ftruncate
    monkeypatch.setattr(os, "ftruncate", lambda fd, n: (sizes.append(n), real(fd, n))[1])
    ix, s = _index_with_segments(tmp_path / "ix", corpus, [100, 15], steps=Steps(retire_step=1024, retire_pause=0.0))
    ref = Index.create(tmp_path / "ref")
    try:
        ref.add(corpus[:s])
        ix.add(corpus[s : s + 20]), ref.add(corpus[s : s + 20])
        pf = fold.prepare(ix)
        assert pf is not None and pf.replaces == _listed(ix)[-1:]
        old = tmp_path / "ix" / pf.replaces[0]
        size = old.stat().st_size
        assert size > 3 * 1024
        sizes.clear()  # (adds truncate their text log's tail)
        assert fold.commit(ix, pf, gradual=True)
        # cut 1 KB at a time down to nothing, then gone; nothing retired is left
        assert sizes == list(range(size - 1024, 0, -1024)) + [0]
        assert not old.exists()
        assert not [n for n in os.listdir(tmp_path / "ix") if n.startswith(fold.RETIRED)]
        assert set(n for n in os.listdir(tmp_path / "ix") if n.startswith("seg-")) == set(_listed(ix))
        probes = [corpus[i]["text"] for i in (3, 105, 110, s + 5)]
        assert _verdicts(ix.query(probes)) == _verdicts(ref.query(probes))
    finally:
        ix.close()
        ref.close()
    _same_after_reopen(tmp_path / "ix", tmp_path / "ref", probes)


def test_the_writers_recovery_deletes_a_retired_file_a_crash_left(tmp_path, corpus):
    ix, _ = _index_with_segments(tmp_path / "ix", corpus, [30])
    ix.close()
    left = tmp_path / "ix" / (fold.RETIRED + "seg-00000009-0badf00d.ndx")
    left.write_bytes(b"x" * 5000)  # half cut down when the process died
    with Index.open(tmp_path / "ix") as ix:
        ix.add(corpus[30:32])  # a writer: its recovery ran
    assert not left.exists()
    assert len(_listed_files(tmp_path / "ix")) == 1


def _listed_files(d):
    return [n for n in os.listdir(d) if n.startswith("seg-")]


def test_a_segment_read_short_because_it_was_retired_is_gone_not_damaged(tmp_path, monkeypatch):
    path = str(tmp_path / "seg-00000001-00000000.ndx")
    size, crc = write_segment(path, _postings(2000))
    real_open = open

    def open_then_retired(p, mode="r", *a, **k):
        f = real_open(p, mode, *a, **k)
        # the fold renames and cuts it down after this reader opened it
        os.rename(p, p + ".moved")
        os.truncate(p + ".moved", size // 2)
        return f

    monkeypatch.setattr(segment, "open", open_then_retired, raising=False)
    with pytest.raises(FileGoneError, match="removed .* while it was read"):
        read_segment(path, size, crc)
    # the same short read with the file still in place is damage
    monkeypatch.undo()
    os.rename(path + ".moved", path)
    with pytest.raises(IndexCorruptError, match="truncated or altered") as e:
        read_segment(path, size, crc)
    assert not isinstance(e.value, FileGoneError)
