"""The steps of an add's plan that work on arrays: the first earlier copy of each document
(archive, then batch), unique candidate pairs, the union of the new edges with the touched
clusters (join, merge or start), the batch's documents by cluster, the rows a verification
needs, the new clusters' rows, each document's most similar pair.

Each step has a batch form (numpy: sorts over arrays) and a form for a few documents (lists
and dicts: the service's single articles, where numpy's cost per call, a few microseconds
times some sixty calls, was most of the plan). Both make the same decisions
(tests/index/test_small_plan.py runs every add both ways).
"""

from __future__ import annotations

import math

import numpy as np

from neardup import _sets
from neardup.graph import connected_components

__all__ = [
    "first_in_archive",
    "first_in_archive_few",
    "first_in_batch",
    "first_in_batch_few",
    "unique_pairs",
    "unique_pairs_few",
    "join",
    "join_few",
    "group",
    "group_few",
    "pair_rows",
    "pair_rows_few",
    "new_clusters",
    "new_clusters_few",
    "best_pairs",
    "best_pairs_few",
    "concat_hits",
    "nan_if_none",
]


def first_in_archive(qi: np.ndarray, adocs: np.ndarray, tok_idx: np.ndarray, n: int) -> np.ndarray:
    """Per batch document, the first (smallest) archive document with its exact key, else -1.
    (qi, adocs): the exact-key hits, qi indexing tok_idx."""
    arch_exact = np.full(n, -1, np.int64)
    if len(qi):
        order = np.lexsort((adocs, qi))
        qi, adocs = qi[order], adocs[order]
        first = np.concatenate(([True], qi[1:] != qi[:-1]))
        arch_exact[tok_idx[qi[first]]] = adocs[first]
    return arch_exact


def first_in_archive_few(qi: np.ndarray, adocs: np.ndarray, tok_idx: np.ndarray, n: int) -> np.ndarray:
    arch_exact = np.full(n, -1, np.int64)
    best: dict[int, int] = {}
    for q, d in zip(qi.tolist(), adocs.tolist()):
        if d < best.get(q, d + 1):
            best[q] = d
    tl = tok_idx.tolist()
    for q, d in best.items():
        arch_exact[tl[q]] = d
    return arch_exact


def first_in_batch(ek: np.ndarray, rest: np.ndarray, n: int) -> np.ndarray:
    """Per batch document of `rest`, the first earlier one in `rest` with its exact key, else -1."""
    batch_exact = np.full(n, -1, np.int64)
    if len(rest):  # np.unique's index is a key's first position
        _, first_pos, inv = np.unique(ek[rest], return_index=True, return_inverse=True)
        rep = rest[first_pos][inv.reshape(-1)]
        d_ = rep != rest
        batch_exact[rest[d_]] = rep[d_]
    return batch_exact


def first_in_batch_few(ek: np.ndarray, rest: np.ndarray, n: int) -> np.ndarray:
    batch_exact = np.full(n, -1, np.int64)
    first: dict[int, int] = {}
    for i, k in zip(rest.tolist(), ek[rest].tolist()):
        j = first.setdefault(k, i)
        if j != i:
            batch_exact[i] = j
    return batch_exact


def unique_pairs(ci: np.ndarray, cd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (batch document, archive document) once, sorted; both < 2^32."""
    u = _sets.unique((ci.astype(np.uint64) << np.uint64(32)) | cd.astype(np.uint64))
    return (u >> np.uint64(32)).astype(np.int64), (u & np.uint64(0xFFFFFFFF)).astype(np.int64)


def unique_pairs_few(ci: np.ndarray, cd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = sorted(set(zip(ci.tolist(), cd.tolist())))
    return np.array([a for a, _ in u], np.int64), np.array([d for _, d in u], np.int64)


def join(n, meta, ae, arch_exact, be, batch_exact, ci, cd, bp, next_cluster) -> tuple[np.ndarray, dict, int]:
    """Union-find over the batch documents (nodes 0..n-1) and the archive clusters they touch
    (node n + k for the k-th touched cluster, in increasing order), joined by the exact matches
    (`ae` to the archive, `be` in the batch), the verified candidates (ci, cd) and batch pairs
    `bp`. A component's cluster is the smallest archive cluster in it (the others merged into
    it), else a new one; new ones are numbered from `next_cluster` in the order their first
    document comes. Returns (cluster per batch document, merged: absorbed -> target, the next
    free cluster number)."""
    m_docs = np.fromiter(meta.keys(), np.int64, len(meta))
    m_cl = np.fromiter((m["cluster"] for m in meta.values()), np.int64, len(meta))
    o = np.argsort(m_docs)
    m_docs, m_cl = m_docs[o], m_cl[o]

    def cluster_of_arch(d: np.ndarray) -> np.ndarray:
        return m_cl[np.searchsorted(m_docs, d)] if len(d) else np.zeros(0, np.int64)

    c_ae, c_cd = cluster_of_arch(arch_exact[ae]), cluster_of_arch(cd)
    touched = _sets.unique(np.concatenate([c_ae, c_cd]))
    e = np.concatenate(
        [
            np.stack([ae, n + np.searchsorted(touched, c_ae)], axis=1),
            np.stack([batch_exact[be], be], axis=1),
            np.stack([ci, n + np.searchsorted(touched, c_cd)], axis=1),
            bp,
        ]
    ).astype(np.uint32)
    N = n + len(touched)
    labels = np.asarray(connected_components(N, e), dtype=np.int64) if N else np.zeros(0, np.int64)
    lab_b, lab_t = labels[:n], labels[n:]
    tl, tfirst = np.unique(lab_t, return_index=True)
    ttarget = touched[tfirst]  # touched is sorted: a label's first touched cluster is its smallest
    t_of_touched = ttarget[np.searchsorted(tl, lab_t)] if len(lab_t) else np.zeros(0, np.int64)
    merged = {c: t for c, t in zip(touched.tolist(), t_of_touched.tolist()) if c != t}
    ul, ufirst, uinv = np.unique(lab_b, return_index=True, return_inverse=True)
    pos = np.searchsorted(tl, ul)
    has_t = np.zeros(len(ul), bool)
    if len(tl):
        has_t = tl[np.minimum(pos, len(tl) - 1)] == ul
    comp_cluster = np.empty(len(ul), np.int64)
    comp_cluster[has_t] = ttarget[pos[has_t]]
    newc = np.flatnonzero(~has_t)
    newc = newc[np.argsort(ufirst[newc], kind="stable")]
    comp_cluster[newc] = next_cluster + np.arange(len(newc))
    next_cluster += len(newc)
    cluster_of = comp_cluster[uinv.reshape(-1)] if n else np.zeros(0, np.int64)
    return cluster_of, merged, next_cluster


def join_few(n, meta, ae, arch_exact, be, batch_exact, ci, cd, bp, next_cluster) -> tuple[np.ndarray, dict, int]:
    to_arch = [(i, meta[d]["cluster"]) for i, d in zip(ae.tolist(), arch_exact[ae].tolist())]
    to_arch += [(i, meta[d]["cluster"]) for i, d in zip(ci.tolist(), cd.tolist())]
    touched = sorted({c for _, c in to_arch})
    node = {c: n + k for k, c in enumerate(touched)}
    e = [(i, node[c]) for i, c in to_arch] + list(zip(batch_exact[be].tolist(), be.tolist())) + bp.tolist()
    labels = np.asarray(connected_components(n + len(touched), np.array(e, np.uint32).reshape(-1, 2))).tolist()
    target: dict[int, int] = {}  # component -> its smallest touched cluster (touched is sorted)
    for k, c in enumerate(touched):
        target.setdefault(labels[n + k], c)
    merged = {c: target[labels[n + k]] for k, c in enumerate(touched) if target[labels[n + k]] != c}
    fresh: dict[int, int] = {}
    cluster_of = []
    for lab in labels[:n]:
        c = target.get(lab)
        if c is None:
            c = fresh.get(lab)
            if c is None:
                c = fresh[lab] = next_cluster
                next_cluster += 1
        cluster_of.append(c)
    return np.array(cluster_of, np.int64), merged, next_cluster


def group(cluster_of: np.ndarray, doc_nums: np.ndarray, first_new: int) -> tuple[tuple, dict[int, list[int]]]:
    """The batch documents grouped by cluster: the new clusters of one document (a story of its
    own: its own keeper, no rule to run) as (clusters sorted, their document), and every other
    cluster's batch documents in batch order."""
    n = len(cluster_of)
    by_cl = np.argsort(cluster_of, kind="stable")
    cs = cluster_of[by_cl]
    g_start = np.flatnonzero(np.concatenate(([True], cs[1:] != cs[:-1]))) if n else np.zeros(0, np.int64)
    g_cl = cs[g_start]
    g_size = np.diff(np.concatenate((g_start, [n])))
    single = (g_cl >= first_new) & (g_size == 1)
    singles = (g_cl[single], doc_nums[by_cl[g_start[single]]])
    batch_by_cluster: dict[int, list[int]] = {}
    by_cl_l = by_cl.tolist()
    for c, s0, sz in zip(g_cl[~single].tolist(), g_start[~single].tolist(), g_size[~single].tolist()):
        batch_by_cluster[c] = by_cl_l[s0 : s0 + sz]
    return singles, batch_by_cluster


def group_few(cluster_of: np.ndarray, doc_nums: np.ndarray, first_new: int) -> tuple[tuple, dict[int, list[int]]]:
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(cluster_of.tolist()):
        groups.setdefault(c, []).append(i)
    dn = doc_nums.tolist()
    one = [c for c in sorted(groups) if c >= first_new and len(groups[c]) == 1]
    singles = (np.array(one, np.int64), np.array([dn[groups[c][0]] for c in one], np.int64))
    return singles, {c: groups[c] for c in sorted(groups) if not (c >= first_new and len(groups[c]) == 1)}


def pair_rows(ci: np.ndarray, cd: np.ndarray, bp: np.ndarray) -> tuple[np.ndarray, list, list, np.ndarray]:
    """The items a verification needs, batch documents (sorted) then archive ones (sorted), and
    each candidate pair, (ci, cd) then `bp`, as a pair of rows of that list of items. Returns
    (batch documents as an array, as a list, archive documents, the pairs of rows)."""
    batch_need = _sets.unique(np.concatenate([ci, bp.reshape(-1)]))
    arch_need = _sets.unique(cd)
    nb = len(batch_need)
    pa = np.stack([np.searchsorted(batch_need, ci), nb + np.searchsorted(arch_need, cd)], axis=1).reshape(-1, 2)
    pb = np.searchsorted(batch_need, bp).reshape(-1, 2)
    return batch_need, batch_need.tolist(), arch_need.tolist(), np.concatenate([pa, pb])


def pair_rows_few(ci: np.ndarray, cd: np.ndarray, bp: np.ndarray) -> tuple[np.ndarray, list, list, np.ndarray]:
    bpl = bp.tolist()
    bl = sorted(set(ci.tolist()).union(x for p in bpl for x in p))
    al = sorted(set(cd.tolist()))
    row = {x: k for k, x in enumerate(bl)}
    row_a = {d: len(bl) + k for k, d in enumerate(al)}
    pairs = [(row[i], row_a[d]) for i, d in zip(ci.tolist(), cd.tolist())] + [(row[a], row[b]) for a, b in bpl]
    return np.array(bl, np.int64), bl, al, np.array(pairs, np.int64).reshape(-1, 2)


def new_clusters(singles: tuple[np.ndarray, np.ndarray], multi: list[tuple[int, int, int]]) -> tuple[list, list, list]:
    """The rows of an add's new clusters, in increasing order (appended to the table's B-tree):
    the singles (a new document, its own keeper) and `multi`, (cluster, keeper, size) of the new
    clusters of several documents. Returns the columns cluster, keeper, size."""
    ncl = np.concatenate([singles[0], np.array([r[0] for r in multi], np.int64)])
    nkeep = np.concatenate([singles[1], np.array([r[1] for r in multi], np.int64)])
    nsize = np.concatenate([np.ones(len(singles[0]), np.int64), np.array([r[2] for r in multi], np.int64)])
    o = np.argsort(ncl, kind="stable")
    return ncl[o].tolist(), nkeep[o].tolist(), nsize[o].tolist()


def new_clusters_few(
    singles: tuple[np.ndarray, np.ndarray], multi: list[tuple[int, int, int]]
) -> tuple[list, list, list]:
    rows = sorted([(c, k, 1) for c, k in zip(singles[0].tolist(), singles[1].tolist())] + multi)
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def best_pairs(tgt: np.ndarray, sims: np.ndarray) -> list[int]:
    """Per target, the position of its most similar pair (the first of equals)."""
    o = np.lexsort((np.arange(len(tgt)), -sims, tgt))
    return o[np.concatenate(([True], tgt[o][1:] != tgt[o][:-1]))].tolist()


def best_pairs_few(tgt: np.ndarray, sims: np.ndarray) -> list[int]:
    best: dict[int, int] = {}
    sl = sims.tolist()
    for p, i in enumerate(tgt.tolist()):
        b = best.get(i)
        if b is None or sl[p] > sl[b]:
            best[i] = p
    return list(best.values())


def concat_hits(a, b):
    if len(b[0]) == 0:
        return a
    if len(a[0]) == 0:
        return b
    return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])


def nan_if_none(x) -> float:
    return math.nan if x is None else float(x)
