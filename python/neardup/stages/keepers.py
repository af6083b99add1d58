"""The keeper rule: which document of a cluster is shown, the others becoming its alternates.

Default order, all vectorised: earliest time (documents without a time come last), then the
sources listed in ``prefer_source`` in that order (the original agency first; unlisted sources
after them), then the smallest id (string order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["source_ranks", "pick_keepers"]


def source_ranks(sources: Sequence[str | None], prefer: Sequence[str]) -> np.ndarray:
    """Rank of each document's source in `prefer` (len(prefer) when not listed)."""
    order: dict[str | None, int] = {s: i for i, s in enumerate(prefer)}
    unlisted = len(prefer)
    return np.fromiter((order.get(s, unlisted) for s in sources), dtype=np.int64, count=len(sources))


def pick_keepers(
    labels: np.ndarray,
    members: np.ndarray,
    times: np.ndarray,
    src_rank: np.ndarray,
    id_rank: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """For documents `members` with cluster `labels[members]`, sort each cluster by the keeper
    rule. Returns (ordered members, start offsets of each cluster in that order)."""
    t = times[members]
    t = np.where(np.isnan(t), np.inf, t)
    order = np.lexsort((id_rank[members], src_rank[members], t, labels[members]))
    ordered = members[order]
    lab = labels[ordered]
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]]) if len(lab) else np.zeros(0, dtype=np.int64)
    return ordered, starts
