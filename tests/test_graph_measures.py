"""Union-find clusters and the exact measures."""

from __future__ import annotations

import numpy as np
import pytest

import neardup


def test_connected_components_labels_by_smallest_member() -> None:
    labels = neardup.connected_components(6, np.array([[4, 2], [2, 5], [1, 0]]))
    assert labels.tolist() == [0, 0, 2, 3, 2, 2]
    assert neardup.connected_components(3, []).tolist() == [0, 1, 2]
    with pytest.raises(neardup.InvalidParameterError, match="outside"):
        neardup.connected_components(3, [[0, 3]])


def test_union_find_object() -> None:
    uf = neardup.UnionFind(4)
    assert uf.union(0, 3) and not uf.union(3, 0)
    assert uf.find(3) == uf.find(0)
    uf.grow(6)
    uf.union(5, 3)
    assert uf.labels().tolist() == [0, 1, 2, 0, 4, 0]
    with pytest.raises(neardup.InvalidInputError, match="outside"):
        uf.find(10)
    assert uf.find(np.int64(3)) == uf.find(0)  # NumPy integers are integers


@pytest.mark.parametrize(
    "call, error, says",
    [
        (lambda uf: uf.find(1.5), neardup.InvalidParameterError, "must be an integer, got float"),
        (lambda uf: uf.union("a", 1), neardup.InvalidParameterError, "must be an integer, got str"),
        (lambda uf: uf.union(True, 1), neardup.InvalidParameterError, "got a bool"),
        (lambda uf: uf.find(np.bool_(True)), neardup.InvalidParameterError, "got a bool"),
        (lambda uf: uf.find(2**70), neardup.InvalidInputError, "node 1180591620717411303424 is outside 0..4"),
        (lambda uf: uf.union(0, -(2**70)), neardup.InvalidInputError, "is outside 0..4"),
        (lambda uf: uf.grow(2.0), neardup.InvalidParameterError, "must be an integer"),
        (lambda uf: uf.grow(2**40), neardup.InvalidParameterError, "n must be in 0..2\\^32"),
        (lambda uf: neardup.UnionFind(True), neardup.InvalidParameterError, "got a bool"),
        (lambda uf: neardup.UnionFind(-1), neardup.InvalidParameterError, "n must be in 0..2\\^32"),
    ],
)
def test_union_find_arguments_are_checked(call, error, says) -> None:
    """Node numbers and sizes as the rest of the API's integers (neardup._ints): PyO3 raised its
    own TypeError / OverflowError for these, and took True for 1."""
    uf = neardup.UnionFind(4)
    with pytest.raises(error, match=says):
        call(uf)
    assert uf.labels().tolist() == [0, 1, 2, 3]  # nothing changed


def test_jaccard_and_containment() -> None:
    story = neardup.Shingler().hashes(" ".join(f"w{i}" for i in range(124)))
    page = neardup.Shingler().hashes(
        " ".join(f"p{i}" for i in range(450))
        + " "
        + " ".join(f"w{i}" for i in range(124))
        + " "
        + " ".join(f"q{i}" for i in range(450))
    )
    assert neardup.containment(story, page) == 1.0
    assert neardup.jaccard(story, page) < 0.15
    assert neardup.jaccard(story, story) == 1.0
    e = np.array([], dtype=np.uint64)
    assert neardup.jaccard(e, e) == 0.0 and neardup.containment(e, story) == 0.0


@pytest.mark.parametrize(
    "call",
    [
        lambda: neardup.jaccard([1.7], [1]),  # (1.0: the float truncated)
        lambda: neardup.jaccard([[1, 2]], [[1, 2]]),
        lambda: neardup.jaccard([-1], [1]),
        lambda: neardup.jaccard(None, [1]),
        lambda: neardup.jaccard(["a"], [1]),
        lambda: neardup.jaccard([2**64], [1]),
        lambda: neardup.containment([True], [1]),
        lambda: neardup.MinHash.from_params([1.5], [0]),
        lambda: neardup.MinHash.from_params([-1], [0]),
        lambda: neardup.SimHash.from_weighted([1, 2], [0.5, 0.5]),  # (fingerprint 0: weights truncated)
        lambda: neardup.SimHash.from_weighted([1, 2], [-1, 1]),
        lambda: neardup.hamming(np.array([1.9]), 0),
        lambda: neardup.hamming(1.0, 0),
        lambda: neardup.hamming(np.array([-1]), 0),  # (64: wrapped to 2^64 - 1)
        lambda: neardup.hamming(True, False),
        lambda: neardup.connected_components(2.5, [[0, 1]]),  # (ran with n = 2)
        lambda: neardup.connected_components(-1, []),
        lambda: neardup.connected_components(None, [[0, 1]]),
    ],
)
def test_ids_and_counts_are_integers_or_a_neardup_error(call):
    """Floats were truncated, negative numbers wrapped, bools counted as 1, and the rest were
    built-in OverflowError/TypeError/ValueError: each is an InvalidParameterError naming it."""
    with pytest.raises(neardup.InvalidParameterError):
        call()


def test_ids_as_lists_of_python_ints_are_read_exactly():
    h = neardup.Shingler().hashes("the quick brown fox jumps over the lazy dog")
    assert neardup.jaccard(h.tolist(), h) == 1.0  # ids on both sides of 2^63 (NumPy: float64)
    assert neardup.hamming([1, 2**63 + 5], [0, 5]).tolist() == [1, 1]
    assert neardup.hamming(np.array([5], np.uint64), 3).tolist() == [2] and neardup.hamming(5, 3) == 2
    with pytest.raises(neardup.InvalidParameterError, match=r"outside 0\.\.4"):
        neardup.connected_components(5, [[3, 5]])  # (said "outside 0..5")
