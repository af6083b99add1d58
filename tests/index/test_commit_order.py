"""With sync "normal" or "group" a commit does not fsync the WAL. What such a commit made
obsolete (segment and text files replaced by a compact or a merging fold, a removed text) must
not be deleted or overwritten before the commit is on disk: after a power cut the index would
list files that are gone. So the WAL is fsynced first; these tests check the order."""

import os

import pytest

from neardup.index import Index, fold


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _recorder(ix, check):
    seen = []
    real = ix._sync_wal

    def sync():
        seen.append(check())
        real()

    ix._sync_wal = sync
    return seen


@pytest.mark.parametrize("mode", ["normal", "group"])
def test_compact_syncs_its_commit_before_deleting_the_files_it_replaced(tmp_path, corpus, mode):
    d = str(tmp_path / "ix")
    with Index.create(d, segment_min=50) as ix:
        ix.add(corpus[:100])
        ix.add(corpus[100:200])
    old = sorted(f for f in os.listdir(d) if f.startswith(("seg-", "texts-")))
    with Index.open(d, sync=mode) as ix:
        seen = _recorder(ix, lambda: all(os.path.exists(os.path.join(d, f)) for f in old))
        ix.compact()
        assert seen and seen[0] is True  # synced while the replaced files were still there
        assert not any(os.path.exists(os.path.join(d, f)) for f in old)


def test_full_commits_need_no_second_sync(tmp_path, corpus):
    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add(corpus[:50])
        seen = _recorder(ix, lambda: True)
        ix.compact()
        ix.remove([corpus[0]["id"]])
        assert seen == []


@pytest.mark.parametrize("mode", ["normal", "group"])
def test_a_removed_text_is_overwritten_only_after_its_removal_is_on_disk(tmp_path, corpus, mode):
    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add(corpus[:50])
    log = os.path.join(d, [f for f in os.listdir(d) if f.startswith("texts-")][0])
    victim = corpus[7]["text"].encode()
    with Index.open(d, sync=mode) as ix:
        seen = _recorder(ix, lambda: victim in _read(log))
        assert ix.remove([corpus[7]["id"]]) == 1
        assert seen and seen[0] is True  # synced while the text was still in the log
    assert victim not in _read(log)


def test_a_merging_fold_syncs_its_commit_before_deleting_the_merged_segments(tmp_path, corpus):
    d = str(tmp_path / "ix")
    Index.create(d).close()
    ix = Index.open(d, sync="normal", l0_max=10**6, l0_fold_at=10**6, background_fold=True)
    try:
        ix.add(corpus[:20])
        assert fold.fold_once(ix)
        merged = [f for f in os.listdir(d) if f.startswith("seg-")]
        ix.add(corpus[20:40])  # a fold of 20 merges the segment of 20 (<= 2 x 20)
        seen = _recorder(ix, lambda: all(os.path.exists(os.path.join(d, f)) for f in merged))
        assert fold.fold_once(ix)
        assert seen and seen[0] is True
        assert not any(os.path.exists(os.path.join(d, f)) for f in merged)
    finally:
        ix.close()
