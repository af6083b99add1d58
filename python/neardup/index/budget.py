"""A budget on the pairs an add verifies and stores for each new document.

Without one, the work of a story grew with the square of its size: every new copy of a story
of m articles was a candidate of all m (they share band keys), so each was verified against
all m and stored m pairs; a batch of 3,000 copies of one story verified and stored 4.5
million pairs (81-134 s, every other write waiting), and a single article joining a story of
3,000 read 3,000 texts.

With the budget (index texts stored, ``store_text``: a removal can then verify again, below):

- **Verification** (:func:`archive_rounds`): a new document's archive candidates are taken by
  cluster, in rounds of ``Steps.candidates_per_cluster`` (those sharing the most bands first): a
  cluster that has a verified pair with the document is done; one that has none yet gives its
  next candidates, until one passes or none is left. So a document joins exactly the
  clusters it would join if every candidate were verified (the clusters are neardup dedup's),
  and its closest article is the most similar of those verified (the most likely ones).
- **Storage** (:func:`kept_pairs`): of a new document's verified pairs, the index stores its
  ``Steps.pairs_per_document`` most similar, and every pair of a spanning forest of the batch's
  pairs (after the exact links and the clusters already known): the stored pairs keep the
  same clusters as all of them.
- **Removal** (``removal.py``): the stored pairs are a subset of the verified ones, so a story
  may look split where it is not; a story that splits on its stored pairs is checked again
  (its remaining articles signed, their LSH candidates across the parts verified), as neardup
  dedup over the articles left would.

Stories up to the budget (nearly all) are untouched: every candidate verified, every pair kept.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from neardup import _core, _sets

__all__ = ["archive_rounds", "rounds_needed", "kept_pairs"]


def _cluster_of(cd: np.ndarray, meta: dict) -> np.ndarray:
    return np.fromiter((meta[d]["cluster"] for d in cd.tolist()), np.int64, len(cd))


def _group_rank(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Order (lexsort of `keys`, the last the group) and each element's rank in its group."""
    o = np.lexsort(keys)
    g = keys[-1][o]
    start = np.concatenate(([True], g[1:] != g[:-1])) if len(g) else np.zeros(0, bool)
    first = np.maximum.accumulate(np.where(start, np.arange(len(g)), 0))
    rank = np.empty(len(g), np.int64)
    rank[o] = np.arange(len(g)) - first
    return o, rank


def archive_rounds(
    ci: np.ndarray,
    cd: np.ndarray,
    hits: np.ndarray,
    groups: np.ndarray,
    verify: Callable[[np.ndarray, np.ndarray], np.ndarray],
    bar: float,
    per_cluster: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Verify the (batch document `ci`, archive document `cd`) candidates in rounds (module
    docstring); `hits`: how many bands each pair shares; `groups`: each candidate's (document,
    cluster) group as a dense number (``rounds_needed``). Returns the verified pairs and their
    similarities; candidates never verified are dropped (they are not pairs)."""
    grp = groups
    _, rank = _group_rank([cd, -hits, grp])  # most bands first, then the earliest document
    sims = np.full(len(ci), np.nan)
    passed = np.zeros(int(grp.max()) + 1 if len(grp) else 0, bool)
    r = 0
    while True:
        sel = np.flatnonzero((rank >= r) & (rank < r + per_cluster) & ~passed[grp])
        if not len(sel):
            break
        s = np.asarray(verify(ci[sel], cd[sel]), np.float64)
        sims[sel] = s
        passed[grp[sel[s >= bar]]] = True
        r += per_cluster
    done = ~np.isnan(sims)
    return ci[done], cd[done], sims[done]


def rounds_needed(ci: np.ndarray, cd: np.ndarray, meta: dict, per_cluster: int) -> np.ndarray | None:
    """None when no document has more archive candidates in one cluster than a round takes
    (nearly always: every candidate is then verified at once); else each candidate's group,
    (document, cluster of its archive document), as a dense number, for ``archive_rounds``
    (made once: each candidate's cluster is a Python look-up, 1.3 s for 3 million)."""
    if len(ci) <= per_cluster:
        return None
    _, groups, counts = np.unique(
        (ci.astype(np.int64) << np.int64(32)) | _cluster_of(cd, meta), return_inverse=True, return_counts=True
    )
    return groups.reshape(-1) if counts.max() > per_cluster else None


def kept_pairs(
    n: int,
    ci: np.ndarray,
    cd: np.ndarray,
    sims_a: np.ndarray,
    bp: np.ndarray,
    sims_b: np.ndarray,
    ae: np.ndarray,
    arch_exact: np.ndarray,
    be: np.ndarray,
    batch_exact: np.ndarray,
    meta: dict,
    per_document: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Which verified pairs to store: masks over the archive pairs (ci, cd) and the batch pairs
    `bp` (a earlier than b). Each new document keeps its `per_document` most similar pairs
    (archive and batch together; ties: archive pairs, then earlier documents), plus the pairs
    of a spanning forest of all of them after the exact links and the archive clusters (each
    a node: its articles are joined by the pairs stored before)."""
    na = len(ci)
    later = np.concatenate([ci, bp[:, 1]]).astype(np.int64)
    if not len(later):
        return np.ones(na, bool), np.ones(len(bp), bool)
    if np.bincount(later, minlength=n).max() <= per_document:
        return np.ones(na, bool), np.ones(len(bp), bool)
    sims = np.concatenate([sims_a, sims_b])
    other = np.concatenate([cd, bp[:, 0]]).astype(np.int64)
    kind = np.concatenate([np.zeros(na, np.int64), np.ones(len(bp), np.int64)])
    _, rank = _group_rank([other, kind, -sims, later])
    keep = rank < per_document
    # the forest: nodes are the batch's documents and the archive clusters touched
    ex_cl = _cluster_of(arch_exact[ae], meta) if len(ae) else np.zeros(0, np.int64)
    cd_cl = _cluster_of(cd, meta)
    touched = _sets.unique(np.concatenate([ex_cl, cd_cl]))
    fixed = (
        np.concatenate(
            [np.stack([ae, n + np.searchsorted(touched, ex_cl)], axis=1), np.stack([batch_exact[be], be], axis=1)]
        )
        .astype(np.int64)
        .reshape(-1, 2)
    )
    edges = np.concatenate([np.stack([ci, n + np.searchsorted(touched, cd_cl)], axis=1), bp]).astype(np.int64)
    o = np.lexsort((np.arange(len(sims)), -sims))  # the strongest pairs first
    forest = _core._spanning_forest(
        n + len(touched), np.ascontiguousarray(np.concatenate([fixed, edges[o]]), dtype=np.uint32), len(fixed)
    )[len(fixed) :]
    keep[o[np.asarray(forest, bool)]] = True
    return keep[:na], keep[na:]
