"""SimHash indexes: the same clusters as ``neardup dedup --method simhash``, day by day."""

from __future__ import annotations

import ix_helpers as h
import numpy as np
import pytest

import neardup
from neardup.index import Index, IndexConfigError
from neardup.simhash import block_keys, block_masks, hamming


@pytest.mark.parametrize("verify,store_text", [("exact", True), ("estimate", False)])
@pytest.mark.parametrize("paths", ["level0", "segments"])
def test_simhash_days_equal_one_dedup(tmp_path, corpus, request, verify, store_text, paths):
    tuning = request.getfixturevalue("small_segments") if paths == "segments" else {}
    ref = neardup.dedup(corpus, None, method="simhash", max_distance=4, verify=verify, prefer_source=["agency"])
    with Index.create(
        tmp_path / "ix",
        method="simhash",
        max_distance=4,
        verify=verify,
        store_text=store_text,
        prefer_source=["agency"],
        **tuning,
    ) as ix:
        for day in h.days(corpus, 4):
            ix.add(day)
        rows = list(ix.clusters())
        assert ix.config.bands == 5
    assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
    assert h.member_sims(rows) == h.member_sims(ref.clusters)
    # some clusters at all (the corpus has copies SimHash finds)
    assert sum(len(c) > 1 for c in h.cluster_sets(rows)) > 5
    # reopened: the stored method is checked
    with Index.open(tmp_path / "ix") as ix:
        assert ix.config.settings.method == "simhash" and ix.config.settings.max_distance == 4
        v = ix.query(corpus[0]["text"])
        assert v[0].status == "duplicate" and v[0].match == "exact"
    with pytest.raises(IndexConfigError, match="method"):
        Index.open(tmp_path / "ix", method="minhash")


def test_simhash_block_tables_find_every_pair_within_the_distance():
    """The index's band keys for SimHash are dedup's blocks (neardup.simhash.block_keys): a
    pair within the distance shares one."""
    rng = np.random.default_rng(4)
    base = rng.integers(0, 2**63, 200, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 200, dtype=np.uint64)
    for d in (0, 1, 3, 7):
        flips = np.zeros(len(base), np.uint64)
        for i in range(len(base)):
            for b in rng.choice(64, size=int(rng.integers(0, d + 1)), replace=False):
                flips[i] |= np.uint64(1) << np.uint64(int(b))
        other = base ^ flips
        assert (hamming(base, other) <= d).all()
        a, b = block_keys(base, d), block_keys(other, d)
        assert a.shape == (len(base), d + 1)
        assert ((a == b).any(axis=1)).all()  # pigeonhole: one block in common
        # the blocks cover the 64 bits exactly once
        assert (block_keys(np.array([2**64 - 1], np.uint64), d) > 0).all()
        assert np.bitwise_or.reduce(block_masks(d)) == np.uint64(2**64 - 1)
        assert hamming(block_masks(d), np.uint64(0)).sum() == 64


def test_simhash_index_settings_that_do_not_apply_are_refused(tmp_path):
    from neardup.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="signature_bits applies to MinHash"):
        Index.create(tmp_path / "a", method="simhash", verify="estimate", signature_bits=16)
    with pytest.raises(InvalidParameterError, match="method must be one of .'minhash', 'simhash'."):
        Index.create(tmp_path / "b", method="lsh-forest")
    with pytest.raises(InvalidParameterError, match="max_distance"):
        Index.create(tmp_path / "c", method="simhash", max_distance=40)
    assert not (tmp_path / "a" / "index.sqlite").exists() and not (tmp_path / "b").exists()
