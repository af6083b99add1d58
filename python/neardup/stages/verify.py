"""Verification of candidate pairs and exact set kernels (Rust: ``neardup._core._allpairs_*``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup import _core

__all__ = ["HashSets", "verify_exact", "estimate_pairs", "self_join"]


class HashSets:
    """Many sorted distinct u64 shingle-hash sets in CSR form (data + offsets)."""

    def __init__(self, sets: Sequence[np.ndarray]) -> None:
        lengths = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
        self.offsets = np.zeros(len(sets) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.data = (
            np.concatenate([np.asarray(s, dtype=np.uint64) for s in sets]) if len(sets) else np.zeros(0, np.uint64)
        )
        if self.data.dtype != np.uint64:
            self.data = self.data.astype(np.uint64)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def verify_exact(sets: HashSets, pairs: np.ndarray, measure: str = "jaccard", threads: int | None = None) -> np.ndarray:
    """Exact Jaccard (or containment: shared over the smaller set) of each pair of set indices."""
    pairs = np.ascontiguousarray(pairs, dtype=np.uint32).reshape(-1, 2)
    return _core._allpairs_verify(sets.data, sets.offsets, pairs, measure, threads)


def estimate_pairs(sigs: np.ndarray, pairs: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """MinHash estimate (share of equal positions) for each pair of signature rows."""
    out = np.empty(len(pairs), dtype=np.float64)
    for s in range(0, len(pairs), chunk):
        p = pairs[s : s + chunk]
        out[s : s + chunk] = (sigs[p[:, 0]] == sigs[p[:, 1]]).mean(axis=1)
    return out


def self_join(sets: HashSets, threshold: float, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (i < j) with exact Jaccard >= threshold, and its Jaccard (AllPairs, exact)."""
    return _core._allpairs_self_join(sets.data, sets.offsets, float(threshold), threads)
