"""Candidate pairs: LSH bands over MinHash signatures, block tables over SimHash fingerprints.

Both are batch self-joins whose pairs ``(i, j)`` have ``i < j`` in input order, which is what
"each document is queried against earlier ones only, then inserted" gives.
"""
from __future__ import annotations

import numpy as np

from neardup import _core
from neardup.errors import InvalidParameterError

__all__ = ["choose_bands", "curve_table", "lsh_pairs", "pairs_from_keys", "hamming_pairs"]


def choose_bands(threshold: float, num_perm: int, recall: float = 0.95, bands: int | None = None,
                 rows: int | None = None) -> tuple[int, int]:
    """(b, r): pinned, or the recall-targeted choice (fewest expected candidates such that a pair
    at the threshold is found with probability >= `recall`)."""
    from neardup import lsh

    if bands is not None and rows is not None:
        if bands * rows > num_perm:
            raise InvalidParameterError(f"bands x rows = {bands * rows} exceeds num_perm = {num_perm}")
        return int(bands), int(rows)
    b, r = lsh.params_for_recall(threshold, num_perm, recall=recall)
    return int(b), int(r)


def curve_table(b: int, r: int, points=(0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)) -> list[dict]:
    from neardup import lsh

    return [{"similarity": s, "p_candidate": float(lsh.candidate_probability(s, b, r))} for s in points]


def lsh_pairs(sigs: np.ndarray, b: int, r: int) -> np.ndarray:
    """Pairs (i < j) of rows of `sigs` sharing at least one of `b` bands of `r` rows."""
    from neardup import lsh

    if len(sigs) < 2:
        return np.zeros((0, 2), dtype=np.uint32)
    return pairs_from_keys(lsh.band_keys(np.ascontiguousarray(sigs), b, r))


def pairs_from_keys(keys: np.ndarray) -> np.ndarray:
    """Pairs (i < j) of rows of an (n, b) band-key matrix (in memory or memory-mapped) that
    share a key in at least one band."""
    from neardup import lsh

    if len(keys) < 2:
        return np.zeros((0, 2), dtype=np.uint32)
    pairs = lsh.candidate_pairs(keys)
    return np.ascontiguousarray(pairs, dtype=np.uint32).reshape(-1, 2)


def hamming_pairs(fps: np.ndarray, max_distance: int, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j) of 64-bit fingerprints within `max_distance` bits, with their distance
    (block-permuted tables: ``max_distance + 1`` blocks, exact by the pigeonhole principle)."""
    pairs, dist = _core._allpairs_hamming(np.ascontiguousarray(fps, dtype=np.uint64), int(max_distance), threads)
    return pairs, dist
