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


def test_jaccard_and_containment() -> None:
    story = neardup.Shingler().hashes(" ".join(f"w{i}" for i in range(124)))
    page = neardup.Shingler().hashes(" ".join(f"p{i}" for i in range(450)) + " " + " ".join(f"w{i}" for i in range(124)) + " " + " ".join(f"q{i}" for i in range(450)))
    assert neardup.containment(story, page) == 1.0
    assert neardup.jaccard(story, page) < 0.15
    assert neardup.jaccard(story, story) == 1.0
    e = np.array([], dtype=np.uint64)
    assert neardup.jaccard(e, e) == 0.0 and neardup.containment(e, story) == 0.0
