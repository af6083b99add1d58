"""Clustering and pair metrics, vectorised with NumPy (no per-pair Python loops)."""

from __future__ import annotations

import numpy as np

__all__ = ["comb2", "contingency_sums", "pairwise_scores", "adjusted_rand_index", "co_clustered"]


def comb2(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x * (x - 1) / 2


def contingency_sums(true: np.ndarray, pred: np.ndarray) -> tuple[float, float, float, float]:
    """(sum over cells C(n_ij, 2), sum over true clusters C(a_i, 2), sum over predicted
    clusters C(b_j, 2), C(n, 2)) for two labelings of the same n items."""
    true = np.asarray(true, dtype=np.int64)
    pred = np.asarray(pred, dtype=np.int64)
    n = len(true)
    if n == 0:
        return 0.0, 0.0, 0.0, 0.0
    _, t = np.unique(true, return_inverse=True)
    _, p = np.unique(pred, return_inverse=True)
    cell = t * (p.max() + 1) + p
    _, nij = np.unique(cell, return_counts=True)
    a = np.bincount(t)
    b = np.bincount(p)
    return float(comb2(nij).sum()), float(comb2(a).sum()), float(comb2(b).sum()), float(n * (n - 1) / 2)


def pairwise_scores(true: np.ndarray, pred: np.ndarray) -> dict:
    """Pairwise precision, recall and F1: a pair of items is positive when it shares a cluster."""
    both, t, p, _ = contingency_sums(true, pred)
    precision = both / p if p else 1.0
    recall = both / t if t else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "true_pairs": int(t),
        "predicted_pairs": int(p),
        "common_pairs": int(both),
    }


def adjusted_rand_index(true: np.ndarray, pred: np.ndarray) -> float:
    """Hubert and Arabie's adjusted Rand index (1.0 for identical partitions)."""
    both, t, p, total = contingency_sums(true, pred)
    if total == 0:
        return 1.0
    expected = t * p / total
    maximum = (t + p) / 2
    if maximum == expected:
        return 1.0
    return (both - expected) / (maximum - expected)


def co_clustered(labels: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Boolean per pair (rows of item indices): do both items carry the same label?"""
    if len(pairs) == 0:
        return np.zeros(0, dtype=bool)
    return labels[pairs[:, 0]] == labels[pairs[:, 1]]
