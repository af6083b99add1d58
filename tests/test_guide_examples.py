"""The guide's printed examples, reproduced exactly."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import neardup
from neardup import lsh

from .conftest import X, Y, Z


def guide_shingle_ids(text: str, k: int = 3) -> np.ndarray:
    """The guide's `shingle_ids`, verbatim in behaviour."""
    words = text.lower().split()
    ids = {
        int.from_bytes(hashlib.blake2b(" ".join(words[i : i + k]).encode(), digest_size=8).digest(), "little")
        for i in range(len(words) - k + 1)
    }
    return np.fromiter(ids, dtype=np.uint64)


def guide_make_hashes(n: int = 128, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**63, size=n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    return a, b


def guide_minhash(ids: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = np.right_shift(np.outer(a, ids) + b[:, None], np.uint64(32))
    return h.min(axis=1)


def test_shingle_counts_and_jaccard() -> None:
    s = neardup.Shingler(k=3, unit="whitespace", hash="blake2b")
    hx, hy = s.hashes(X), s.hashes(Y)
    shared = len(np.intersect1d(hx, hy))
    assert (len(hx), len(hy), shared) == (13, 13, 10)
    assert round(neardup.jaccard(hx, hy), 3) == 0.625


def test_blake2b_ids_equal_the_guides() -> None:
    s = neardup.Shingler(k=3, unit="whitespace", hash="blake2b")
    assert np.array_equal(s.hashes(X), np.sort(guide_shingle_ids(X)))


def test_multiply_shift_equals_the_guides_numpy() -> None:
    a, b = guide_make_hashes()
    s = neardup.Shingler(k=3, unit="whitespace", hash="blake2b")
    mh = neardup.MinHash.from_params(a, b, shingler=s)
    for text in (X, Y, Z):
        expected = guide_minhash(guide_shingle_ids(text), a, b).astype(np.uint32)
        assert np.array_equal(mh.signature(text), expected)
    sx, sy = mh.signature(X), mh.signature(Y)
    assert sx.shape == (128,)
    assert round(neardup.estimate_jaccard(sx, sy), 3) == 0.609


def test_simhash_example() -> None:
    sh = neardup.SimHash(shingler=neardup.Shingler(k=3, unit="whitespace", hash="blake2b"))
    fx, fy, fz = sh.fingerprint(X), sh.fingerprint(Y), sh.fingerprint(Z)
    assert f"{fx:016x}" == "0ddcdfbea0832796"
    assert (neardup.hamming(fx, fy), neardup.hamming(fx, fz)) == (11, 33)


@pytest.mark.parametrize("s", [0.5, 0.7, 0.8, 0.9])
def test_candidate_chance_rows(s: float) -> None:
    def guide(s: float, b: int, r: int) -> float:
        return 1 - (1 - s**r) ** b

    assert lsh.candidate_probability(s, 16, 8) == pytest.approx(guide(s, 16, 8), rel=1e-12)
    assert lsh.candidate_probability(s, 9, 13) == pytest.approx(guide(s, 9, 13), rel=1e-12)


def test_printed_row_at_point_eight() -> None:
    assert round(lsh.candidate_probability(0.8, 16, 8), 3) == 0.947
    assert round(lsh.candidate_probability(0.8, 9, 13), 3) == 0.399


def test_mmds_twenty_by_five() -> None:
    assert lsh.candidate_probability(0.8, 20, 5) == pytest.approx(0.99965, abs=1e-5)
    assert lsh.candidate_probability(0.3, 20, 5) == pytest.approx(0.0475, abs=1e-4)
