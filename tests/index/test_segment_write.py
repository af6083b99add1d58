"""Segment files written paced (background folds, segment.write_segment(paced=True)): in synced
pieces, so that a big merge does not reach the disk in one burst at its final fsync. The file
is the same, byte for byte, as one written whole."""

import os
import sys

import numpy as np
import pytest

from neardup.index import fold
from neardup.index.segment import Postings, read_segment, write_segment


def _postings(n: int, bands: int = 4, seed: int = 1) -> Postings:
    rng = np.random.default_rng(seed)
    docs = np.arange(1, n + 1, dtype=np.uint32)
    exact = rng.integers(1, 2**63, n, dtype=np.uint64)
    keys = rng.integers(0, 2**63, (n, bands), dtype=np.uint64)
    return Postings.build(docs, exact, keys, bands)


def test_paced_write_is_the_same_file_synced_in_pieces(tmp_path, monkeypatch):
    p = _postings(20_000)
    whole, paced = tmp_path / "whole.ndx", tmp_path / "paced.ndx"
    assert write_segment(str(whole), p) == write_segment_counting(monkeypatch, str(paced), p, 64 << 10)
    assert whole.read_bytes() == paced.read_bytes()
    back = read_segment(str(paced))
    for (k1, d1), (k2, d2) in zip([p.exact, *p.bands], [back.exact, *back.bands]):
        assert np.array_equal(k1, k2) and np.array_equal(d1, d2)


def write_segment_counting(monkeypatch, path, p, pace):
    """write_segment with a small pace; checks that no more than two pieces' worth
    of bytes was ever written unsynced (a piece ends at an array's end or after `pace` bytes;
    a sync follows once `pace` bytes are unsynced)."""
    at = [0]
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (at.append(os.fstat(fd).st_size), real(fd))[1])
    out = write_segment(path, p, pace=pace)
    at.append(os.path.getsize(path))  # the final fsync
    gaps = [b - a for a, b in zip(at, at[1:])]
    assert len(gaps) > 10 and max(gaps) <= 2 * pace, gaps
    monkeypatch.setattr(os, "fdatasync", real)
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_background_fold_thread_is_niced(tmp_path):
    """The fold thread lowers its own CPU priority (Linux: per thread), not the process's."""
    import threading

    got = {}

    def run():
        fold._lower_priority()
        got["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = os.getpriority(os.PRIO_PROCESS, 0)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert got["nice"] == max(before, fold.FOLD_NICE)
    assert os.getpriority(os.PRIO_PROCESS, 0) == before  # this thread (and the process) unchanged
