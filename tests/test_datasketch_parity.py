"""datasketch 2.0.0 parity: signatures bit for bit, LeanMinHash bytes, the LSH optimiser."""

from __future__ import annotations

import numpy as np
import pytest

import neardup
from neardup import datasketch_compat, lsh

datasketch = pytest.importorskip("datasketch", reason="datasketch 2.0.0 is a test extra")
from datasketch import LeanMinHash  # noqa: E402
from datasketch import MinHash as DSMinHash  # noqa: E402
from datasketch.lsh import _optimal_param  # noqa: E402

from .conftest import RAIN_BASE, X, Y  # noqa: E402


def ds_signature(tokens: list[bytes], num_perm: int, seed: int) -> np.ndarray:
    m = DSMinHash(num_perm=num_perm, seed=seed)
    m.update_batch(tokens)
    return m.hashvalues


@pytest.mark.parametrize(("num_perm", "seed"), [(128, 1), (64, 7), (256, 12345), (1, 0)])
def test_tokens_bit_identical(num_perm: int, seed: int) -> None:
    mh = neardup.MinHash(num_perm=num_perm, seed=seed, scheme="datasketch-affine32")
    for text in (X, Y, RAIN_BASE, "ಕರಾವಳಿ ಕರ್ನಾಟಕ ಭಾರೀ ಮಳೆ"):
        tokens = [s.encode() for s in mh.shingler.shingles(text)]
        ours = mh.signature_from_tokens(tokens)
        theirs = ds_signature(tokens, num_perm, seed)
        assert theirs.dtype == np.uint32
        assert np.array_equal(ours, theirs)
        # The text path shingles, then hashes each shingle's UTF-8 with sha1_hash32.
        assert np.array_equal(mh.signature(text), theirs)


def test_params_equal_datasketch() -> None:
    mh = neardup.MinHash(num_perm=128, seed=3, scheme="datasketch-affine32")
    a, b = DSMinHash(num_perm=128, seed=3).permutations
    assert np.array_equal(mh.a, a) and np.array_equal(mh.b, b)


def test_batch_equals_datasketch_bulk() -> None:
    shingler = neardup.Shingler(k=5)
    mh = neardup.MinHash(scheme="datasketch-affine32", shingler=shingler)
    texts = [RAIN_BASE, RAIN_BASE + " also read the full forecast", X, Y]
    ours = mh.signatures(texts, threads=2)
    bulk = DSMinHash.bulk([[s.encode() for s in shingler.shingles(t)] for t in texts], num_perm=128)
    assert np.array_equal(ours, np.vstack([m.hashvalues for m in bulk]))


def test_empty_set_matches_datasketch() -> None:
    mh = neardup.MinHash(num_perm=16, scheme="datasketch-affine32")
    assert np.array_equal(mh.signature_from_tokens([]), DSMinHash(num_perm=16).hashvalues)


@pytest.mark.parametrize("byteorder", ["@", "<", ">"])
def test_lean_minhash_bytes_round_trip(byteorder: str) -> None:
    tokens = [s.encode() for s in neardup.Shingler().shingles(RAIN_BASE)]
    m = DSMinHash(num_perm=128, seed=5)
    m.update_batch(tokens)
    lean = LeanMinHash(m)
    buf = bytearray(lean.bytesize(byteorder))
    lean.serialize(buf, byteorder)
    seed, sig = datasketch_compat.from_lean_bytes(bytes(buf), byteorder)
    assert seed == 5
    ours = neardup.MinHash(seed=5, scheme="datasketch-affine32").signature_from_tokens(tokens)
    assert np.array_equal(sig, ours)
    written = datasketch_compat.to_lean_bytes(ours, 5, byteorder)
    assert written == bytes(buf)
    back = LeanMinHash.deserialize(written, byteorder)
    assert back.seed == 5 and np.array_equal(back.hashvalues, ours)


def test_lean_bytes_refuses_legacy_and_truncated() -> None:
    m = DSMinHash(num_perm=8, scheme="legacy")
    lean = LeanMinHash(m)
    buf = bytearray(lean.bytesize())
    lean.serialize(buf)
    with pytest.raises(neardup.InvalidInputError, match="legacy"):
        datasketch_compat.from_lean_bytes(bytes(buf))
    good = datasketch_compat.to_lean_bytes(np.arange(8, dtype=np.uint32), 1)
    with pytest.raises(neardup.InvalidInputError, match="truncated"):
        datasketch_compat.from_lean_bytes(good[:-3])


@pytest.mark.parametrize(
    ("threshold", "num_perm", "weights"),
    [
        (0.8, 128, (0.5, 0.5)),
        (0.8, 128, (0.3, 0.7)),
        (0.5, 128, (0.5, 0.5)),
        (0.9, 256, (0.5, 0.5)),
        (0.7, 64, (0.2, 0.8)),
        (0.3, 32, (0.5, 0.5)),
        (0.95, 100, (0.5, 0.5)),
    ],
)
def test_optimiser_agrees_with_datasketch(threshold: float, num_perm: int, weights: tuple[float, float]) -> None:
    assert lsh.optimal_params(threshold, num_perm, weights) == _optimal_param(threshold, num_perm, *weights)


def test_optimiser_guide_choices() -> None:
    assert lsh.optimal_params(0.8, 128) == (9, 13)
    assert lsh.optimal_params(0.8, 128, weights=(0.3, 0.7)) == (11, 11)
