"""SimHash fingerprints and Hamming distance."""

from __future__ import annotations

import numpy as np
import pytest

import neardup

from .conftest import RAIN_BASE, X, Y, Z


def python_simhash(ids: np.ndarray, weights: np.ndarray) -> int:
    totals = [0] * 64
    for h, w in zip(ids.tolist(), weights.tolist()):
        for i in range(64):
            totals[i] += w if (h >> i) & 1 else -w
    return sum(1 << i for i, t in enumerate(totals) if t > 0)


def test_fingerprint_matches_definition() -> None:
    sh = neardup.SimHash()
    ids, counts = sh.shingler.weighted_hashes(RAIN_BASE + " " + RAIN_BASE[:80])
    assert sh.fingerprint(RAIN_BASE + " " + RAIN_BASE[:80]) == python_simhash(ids, counts)
    assert neardup.SimHash.from_weighted(ids, counts) == python_simhash(ids, counts)


def test_batch_equals_single_and_threads() -> None:
    sh = neardup.SimHash()
    texts = [X, Y, Z, RAIN_BASE, ""]
    fps = sh.fingerprints(texts, threads=1)
    assert fps.dtype == np.uint64
    assert [int(f) for f in fps] == [sh.fingerprint(t) for t in texts]
    assert np.array_equal(fps, sh.fingerprints(texts, threads=2))
    assert sh.fingerprint("") == 0


def test_near_copies_are_close() -> None:
    sh = neardup.SimHash()
    edited = RAIN_BASE.replace("sunday", "sunday evening")
    unrelated = Z * 3
    assert neardup.hamming(sh.fingerprint(RAIN_BASE), sh.fingerprint(edited)) < neardup.hamming(
        sh.fingerprint(RAIN_BASE), sh.fingerprint(unrelated)
    )


def test_stopwords_change_features() -> None:
    plain = neardup.SimHash(shingler=neardup.Shingler(k=1))
    no_sw = neardup.SimHash(shingler=neardup.Shingler(k=1), stopwords="english")
    assert no_sw.shingler.stopwords is not None
    assert no_sw.fingerprint("the rain") == no_sw.fingerprint("rain")
    assert plain.fingerprint("the rain") != plain.fingerprint("rain")


def test_hamming_forms() -> None:
    assert neardup.hamming(0, 2**64 - 1) == 64
    a = np.array([0, 1, 3], dtype=np.uint64)
    assert neardup.hamming(a, np.uint64(0)).tolist() == [0, 1, 2]
    with pytest.raises(neardup.InvalidParameterError):
        neardup.hamming(-1, 0)


def test_bits_other_than_64_refused() -> None:
    with pytest.raises(neardup.InvalidParameterError, match="64"):
        neardup.SimHash(bits=32)


def test_arrow_input() -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow is an optional dependency")
    sh = neardup.SimHash()
    texts = [X, Y, "", RAIN_BASE]
    assert np.array_equal(sh.fingerprints(pa.chunked_array([texts[:1], texts[1:]])), sh.fingerprints(texts))
