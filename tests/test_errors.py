"""Bad input gets a specific exception naming the item; panics never kill the process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import neardup
from neardup import _core


@pytest.fixture(params=["multiply-shift", "oph", "datasketch-affine32"])
def mh(request: pytest.FixtureRequest) -> neardup.MinHash:
    return neardup.MinHash(num_perm=16, scheme=request.param)


def test_hierarchy() -> None:
    assert issubclass(neardup.InvalidParameterError, ValueError)
    assert issubclass(neardup.InvalidInputError, ValueError)
    assert issubclass(neardup.InputTypeError, TypeError)
    assert issubclass(neardup.InternalError, RuntimeError)
    for cls in (
        neardup.InvalidParameterError,
        neardup.InvalidInputError,
        neardup.InputTypeError,
        neardup.InternalError,
    ):
        assert issubclass(cls, neardup.NeardupError)


@pytest.mark.parametrize("bad", [None, b"bytes", 42, ["nested"]])
def test_non_str_item_names_its_index(mh: neardup.MinHash, bad: object) -> None:
    with pytest.raises(neardup.InputTypeError, match=r"item 2: expected str, got") as info:
        mh.signatures(["ok", "fine", bad, "later"])
    assert info.value.index == 2


def test_single_text_of_wrong_type(mh: neardup.MinHash) -> None:
    with pytest.raises(neardup.InputTypeError, match="expected str, got NoneType"):
        mh.signature(None)  # type: ignore[arg-type]
    with pytest.raises(neardup.InputTypeError, match="single str"):
        mh.signatures("a whole string, not a list")
    with pytest.raises(neardup.InputTypeError, match="expected a list of str, got int"):
        mh.signatures(5)  # type: ignore[arg-type]


def test_lone_surrogate_names_its_index(mh: neardup.MinHash) -> None:
    with pytest.raises(neardup.InvalidInputError, match="item 1: text is not valid Unicode") as info:
        mh.signatures(["fine", "bad \ud800 text"])
    assert info.value.index == 1
    with pytest.raises(neardup.InvalidInputError, match="not valid Unicode"):
        neardup.Shingler().hashes("\udfff")
    with pytest.raises(neardup.InvalidInputError, match="item 0"):
        neardup.SimHash().fingerprints(["\ud800"])


def test_empty_strings_are_valid(mh: neardup.MinHash) -> None:
    sigs = mh.signatures(["", "", "a"])
    assert np.all(sigs[0] == 0xFFFFFFFF) and np.array_equal(sigs[0], sigs[1])


def test_ten_megabyte_document(mh: neardup.MinHash) -> None:
    rng = np.random.default_rng(0)
    words = np.array(["rain", "coast", "karnataka", "goa", "wind", "sea", "school", "monday", "officials"])
    text = " ".join(words[rng.integers(0, len(words), size=1_600_000)])
    assert len(text) > 10_000_000
    sig = mh.signatures([text, "short"], threads=2)
    assert sig.shape == (2, 16)
    assert np.array_equal(sig[0], mh.signature(text))
    assert neardup.SimHash().fingerprint(text) == neardup.SimHash().fingerprints([text])[0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_perm": 0}, "num_perm"),
        ({"num_perm": -1}, "num_perm"),
        ({"num_perm": 1 << 20}, "num_perm"),
        ({"scheme": "minhash-classic"}, "unknown scheme"),
        ({"seed": -5}, "seed"),
        ({"scheme": "datasketch-affine32", "seed": 2**33}, "seed"),
        ({"shingler": "word"}, "shingler"),
    ],
)
def test_bad_minhash_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(neardup.InvalidParameterError, match=match):
        neardup.MinHash(**kwargs)


def test_bad_threads(mh: neardup.MinHash) -> None:
    for bad in (0, -2):
        with pytest.raises(neardup.InvalidParameterError, match="threads"):
            mh.signatures(["a"], threads=bad)


def test_from_params_checks() -> None:
    with pytest.raises(neardup.InvalidParameterError, match="odd"):
        neardup.MinHash.from_params([2, 3], [0, 0])
    with pytest.raises(neardup.InvalidParameterError, match="same length"):
        neardup.MinHash.from_params([1, 3], [0])


def test_affine32_hash_range() -> None:
    mh = neardup.MinHash(scheme="datasketch-affine32", num_perm=8)
    with pytest.raises(neardup.InvalidInputError, match="hash 1 is"):
        mh.signature_from_hashes(np.array([5, 2**40], dtype=np.uint64))


def test_bad_tokens() -> None:
    with pytest.raises(neardup.InputTypeError, match="token 1: expected bytes, got str"):
        neardup.MinHash().signature_from_tokens([b"ok", "not bytes"])


def test_measures_need_sorted_ids() -> None:
    with pytest.raises(neardup.InvalidInputError, match="sorted and distinct"):
        neardup.jaccard(np.array([3, 1], dtype=np.uint64), np.array([1], dtype=np.uint64))


def test_panic_becomes_internal_error_and_process_lives() -> None:
    with pytest.raises(neardup.InternalError, match="deliberate test panic"):
        _core._panic_for_tests()
    with pytest.raises(neardup.InternalError, match="deliberate test panic in a worker"):
        _core._panic_for_tests(in_worker=True)
    # The interpreter and the thread pools keep working after a panic.
    assert neardup.MinHash(num_perm=4).signatures(["a b c"], threads=2).shape == (1, 4)


def test_panic_in_a_fresh_process_exits_cleanly() -> None:
    code = (
        "import neardup, neardup._core as c\n"
        "try:\n    c._panic_for_tests(True)\nexcept neardup.InternalError as e:\n    print('caught', type(e).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "caught InternalError" in out.stdout
