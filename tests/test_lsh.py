"""LSH arithmetic, band keys and candidate pairs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import neardup
from neardup import lsh


def test_probability_array_form() -> None:
    s = np.linspace(0, 1, 11)
    p = lsh.candidate_probability(s, 16, 8)
    assert p.shape == (11,) and p[0] == 0 and p[-1] == 1
    assert np.all(np.diff(p) >= 0)


def test_params_for_recall_meets_target_and_is_cheapest() -> None:
    b, r = lsh.params_for_recall(0.8, 128, recall=0.95)
    assert lsh.candidate_probability(0.8, b, r) >= 0.95 and b * r <= 128
    # Brute force over every (b, r): none that meets the recall has a smaller FP area.
    best = min(
        (lsh.false_positive_area(0.8, bb, rr), bb * rr, (bb, rr))
        for bb in range(1, 129)
        for rr in range(1, 128 // bb + 1)
        if lsh.candidate_probability(0.8, bb, rr) >= 0.95
    )
    assert (b, r) == best[2]
    # It beats datasketch's choice at the threshold by a wide margin.
    assert lsh.candidate_probability(0.8, *lsh.optimal_params(0.8, 128)) < 0.5


def test_threshold_one_and_tiny_num_perm() -> None:
    assert lsh.params_for_recall(1.0, 128) == (1, 128)
    assert lsh.optimal_params(1.0, 128) == (1, 128)
    assert lsh.params_for_recall(0.5, 2, recall=0.7) == (2, 1)
    with pytest.raises(neardup.InvalidParameterError, match="raise num_perm or lower recall"):
        lsh.params_for_recall(0.8, 1)
    assert lsh.optimal_params(0.8, 1) == (1, 1)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: lsh.params_for_recall(0.0, 128), "threshold"),
        (lambda: lsh.params_for_recall(1.5, 128), "threshold"),
        (lambda: lsh.params_for_recall(0.8, 0), "num_perm"),
        (lambda: lsh.params_for_recall(0.8, 128, recall=1.0), "recall"),
        (lambda: lsh.optimal_params(0.8, 128, weights=(-1, 1)), "weights"),
        (lambda: lsh.optimal_params(float("nan"), 128), "threshold"),
        (lambda: lsh.candidate_probability(1.2, 2, 2), "s must be"),
        (lambda: lsh.candidate_probability(0.5, 0, 2), "b must be"),
    ],
)
def test_bad_lsh_parameters(call, match: str) -> None:  # noqa: ANN001
    with pytest.raises(neardup.InvalidParameterError, match=match):
        call()


def test_band_keys_depend_on_band_values_only() -> None:
    rng = np.random.default_rng(1)
    sigs = rng.integers(0, 2**32, size=(5, 12), dtype=np.uint32)
    sigs[3, :4] = sigs[0, :4]  # rows 0 and 3 share band 0 (r = 4)
    keys = lsh.band_keys(sigs, 3, 4)
    assert keys.shape == (5, 3) and keys.dtype == np.uint64
    assert keys[0, 0] == keys[3, 0] and keys[0, 1] != keys[3, 1]
    # Equal values in different bands give different keys (band index seeds the hash).
    same = np.tile(np.uint32(7), (1, 8))
    k2 = lsh.band_keys(same, 2, 4)
    assert k2[0, 0] != k2[0, 1]
    assert np.array_equal(keys, lsh.band_keys(sigs, 3, 4, threads=1))
    with pytest.raises(neardup.InvalidParameterError, match="at most num_perm"):
        lsh.band_keys(sigs, 4, 4)


def test_candidate_pairs_equal_brute_force() -> None:
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 6, size=(40, 3), dtype=np.uint64)  # many collisions
    got = {tuple(p) for p in lsh.candidate_pairs(keys).tolist()}
    want = {(i, j) for i, j in itertools.combinations(range(40), 2) if np.any(keys[i] == keys[j])}
    assert got == want
    assert lsh.candidate_pairs(np.zeros((0, 3), dtype=np.uint64)).shape == (0, 2)


def test_lsh_finds_near_copies_end_to_end() -> None:
    from .conftest import RAIN_BASE

    texts = [
        RAIN_BASE,
        RAIN_BASE.replace("sunday", "sunday evening"),
        RAIN_BASE + " also read the full forecast on our weather page",
        "the city corporation has started a drive to clear blocked drains before the monsoon "
        "and residents can report problems on the helpline officials said the work will finish",
    ]
    mh = neardup.MinHash()
    keys = lsh.band_keys(mh.signatures(texts), 16, 8)
    pairs = {tuple(p) for p in lsh.candidate_pairs(keys).tolist()}
    assert {(0, 1), (0, 2)} <= pairs
    assert not any(3 in p for p in pairs)


@pytest.mark.parametrize(
    "call",
    [
        lambda: lsh.false_positive_area(float("nan"), 9, 13),  # these looped for ever (the integrator on NaN)
        lambda: lsh.false_negative_area(float("nan"), 9, 13),
        lambda: lsh.false_positive_area(2.0, 9, 13),
        lambda: lsh.false_positive_area(float("inf"), 9, 13),
        lambda: lsh.false_positive_area(1.01, 9, 13),  # (answered 0.202)
        lambda: lsh.false_positive_area(0.5, 1, 2**31),
        lambda: lsh.false_negative_area(0.5, 2**31, 1),
        lambda: lsh.candidate_probability(0.5, 1, 2**31),  # inf
        lambda: lsh.candidate_probability(0.5, 2**32 - 1, 1),  # -1.0
        lambda: lsh.candidate_probability("0.5", 9, 13),  # a string read as a number
        lambda: lsh.candidate_probability(True, 9, 13),
        lambda: lsh.optimal_params(True, 128),
        lambda: lsh.optimal_params(None, 128),
        lambda: lsh.optimal_params(0.5, 128, "12"),  # read as the weights (1, 2)
        lambda: lsh.params_for_recall("x", 128),
        lambda: lsh.params_for_recall(0.8, 128, float("nan")),
    ],
)
def test_lsh_arithmetic_refuses_what_it_cannot_answer(call):
    with pytest.raises(neardup.InvalidParameterError):
        call()


def test_lsh_arithmetic_at_the_edges_of_its_range():
    assert lsh.candidate_probability(0.999, 1, 2**31 - 1) == 0.0
    assert lsh.false_positive_area(1, 9, 13) == pytest.approx(lsh.false_positive_area(1.0, 9, 13))
    assert 0.0 <= lsh.false_negative_area(0.0, 9, 13) <= 1.0
