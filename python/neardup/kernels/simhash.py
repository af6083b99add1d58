"""SimHash kernels: the local engine's block tables, split into buckets an engine can shuffle.

The local engine's candidates for ``--method simhash`` are every pair of fingerprints within
``max_distance`` bits (``stages.candidates.hamming_pairs``, Rust ``hamming_candidates``):
the 64 bits are cut into ``max_distance + 1`` blocks, and a pair within the distance agrees
on at least one whole block (pigeonhole), so it shares that block's value. Each pair is
reported once, under the *first* block on which it agrees.

Here the same rule is spread over (block, block value) buckets — the band rows of SimHash:

=====================  ===========================================  =========================================
kernel                 input columns                                output columns
=====================  ===========================================  =========================================
simhash_candidates     band, key, pos, fp (grouped by band, key)    bid, band, pos, fp, ncand
simhash_verify         bid, band, pos, fp [, text] (by bid)         a, b, similarity, similarity6
=====================  ===========================================  =========================================

``simhash_candidates`` keeps, of each bucket, the members of the pairs it *owns* (within the
distance, first agreeing block = this bucket's block): every candidate pair of the local
engine is owned by exactly one bucket, so ``ncand`` summed over all rows is the local
engine's candidate count. ``simhash_verify`` runs the per-bucket union-find of
``verify_buckets`` over the owned pairs only: a pair is verified only if its ends are not
already connected, and only spanning edges are emitted, so a bucket of many near copies
costs one verification per copy, not one per pair.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from neardup import _core, _sets
from neardup.kernels.common import _sets_of, round6
from neardup.simhash import block_keys, block_masks  # noqa: F401 - part of this module's kernels

__all__ = [
    "block_masks",
    "block_keys",
    "first_shared_block",
    "simhash_candidates",
    "simhash_verify",
    "hamming_similarity",
]


def first_shared_block(x: np.ndarray, y: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Per pair, the first block on which the two fingerprints agree (``len(masks)``: none)."""
    z = np.bitwise_xor(np.asarray(x, np.uint64), np.asarray(y, np.uint64))
    eq = (z[:, None] & masks[None, :]) == 0
    return np.where(eq.any(axis=1), eq.argmax(axis=1), len(masks))


def hamming_similarity(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The local engine's SimHash estimate: 1 - (differing bits) / 64."""
    return 1.0 - _hamming(x, y).astype(np.float64) / 64.0


def _owned_pairs(fp: np.ndarray, band: int, masks: np.ndarray, d: int, threads) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j) of rows of ``fp`` within ``d`` bits whose first agreeing block is
    ``band``, with their distance (the Rust core's all-pairs Hamming search)."""
    if len(fp) < 2:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.int64)
    pairs: np.ndarray
    dist: np.ndarray
    pairs, dist = _core._allpairs_hamming(np.ascontiguousarray(fp, dtype=np.uint64), int(d), threads)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    dist = np.asarray(dist, dtype=np.int64)
    if len(pairs):
        own = first_shared_block(fp[pairs[:, 0]], fp[pairs[:, 1]], masks) == band
        pairs, dist = pairs[own], dist[own]
    return pairs, dist


def _bucket_id(band: np.ndarray, key: np.ndarray) -> np.ndarray:
    """An int64 name for a (block, block value) bucket (splitmix64 of both). Two buckets that
    collided would only be verified together: their owned pairs stay apart, because the
    verification keys groups by (band, bid) and a pair owned by block b agrees on block b."""
    with np.errstate(over="ignore"):
        x = np.asarray(key, np.uint64) ^ (np.asarray(band, np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x.view(np.int64)


_MEMBERS = pa.schema(
    [("bid", pa.int64()), ("band", pa.int32()), ("pos", pa.int64()), ("fp", pa.int64()), ("ncand", pa.int64())]
)


def simhash_candidates(table: pa.Table, params) -> pa.Table:
    """Rows (band, key, pos, fp), every row of a (band, key) bucket in this table → the rows
    of the members of the pairs each bucket owns, named by bucket (``bid``); ``ncand``: the
    owned pairs, counted on one row of the table (0 on the others)."""
    d = params.settings.max_distance
    masks = block_masks(d)
    band = table.column("band").to_numpy().astype(np.int64)
    pos = table.column("pos").to_numpy()
    fp = table.column("fp").to_numpy().view(np.uint64)
    out_rows: list[np.ndarray] = []
    out_band: list[np.ndarray] = []
    total = 0
    for j in _sets.unique(band).tolist():
        # one search over the block's rows of this table: pairs owned by block j agree on
        # block j, so they are pairs of one bucket; pairs of other blocks are dropped
        sel = np.flatnonzero(band == j)
        pairs, _ = _owned_pairs(fp[sel], j, masks, d, params.threads)
        if not len(pairs):
            continue
        total += len(pairs)
        out_rows.append(sel[_sets.unique(pairs)])
        out_band.append(np.full(len(out_rows[-1]), j, np.int64))
    if not out_rows:
        rows, bands = np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        rows, bands = np.concatenate(out_rows), np.concatenate(out_band)
    f = fp[rows]
    ncand = np.zeros(len(rows), np.int64)
    if len(rows):
        ncand[0] = total
    return pa.Table.from_arrays(
        [
            pa.array(_bucket_id(bands, f & masks[bands]), pa.int64()),
            pa.array(bands.astype(np.int32), pa.int32()),
            pa.array(pos[rows], pa.int64()),
            pa.array(f.view(np.int64), pa.int64()),
            pa.array(ncand, pa.int64()),
        ],
        schema=_MEMBERS,
    )


def simhash_verify(table: pa.Table, params) -> pa.Table:
    """Rows (bid, band, pos, fp), plus ``text`` for exact verification, grouped by bucket →
    the spanning edges (a < b by ``pos``) of the verified owned pairs of each bucket.

    ``verify="exact"``: a pair passes when the exact Jaccard (or containment) of its texts
    reaches the threshold, as in the local engine; ``"estimate"``: every candidate passes,
    with similarity 1 - distance / 64 (the local engine's SimHash estimate)."""
    from neardup.stages.verify import verify_exact

    empty = pa.table(
        {
            "a": pa.array([], pa.int64()),
            "b": pa.array([], pa.int64()),
            "similarity": pa.array([], pa.float64()),
            "similarity6": pa.array([], pa.float64()),
        }
    )
    if table.num_rows == 0:
        return empty
    d = params.settings.max_distance
    masks = block_masks(d)
    bid = table.column("bid").to_numpy()
    band = table.column("band").to_numpy().astype(np.int64)
    pos = table.column("pos").to_numpy()
    order = np.lexsort((pos, bid, band))
    bid, band, pos = bid[order], band[order], pos[order]
    fp = table.column("fp").to_numpy().view(np.uint64)[order]
    exact = params.settings.verify == "exact"
    if exact:
        texts = table.column("text").take(pa.array(order)).to_pylist()
        upos, first = np.unique(pos, return_index=True)  # each distinct document once
        sets = _sets_of([texts[i] for i in first.tolist()], params)
        slot = np.searchsorted(upos, pos)

    def sims(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        if exact:
            pr = np.stack([slot[i], slot[j]], axis=1).astype(np.uint32)
            return np.asarray(verify_exact(sets, pr, params.settings.measure, params.threads), np.float64)
        return hamming_similarity(fp[i], fp[j])

    def passes(s: np.ndarray) -> np.ndarray:
        return s >= params.settings.threshold if exact else np.ones(len(s), bool)

    new = np.r_[True, (band[1:] != band[:-1]) | (bid[1:] != bid[:-1])]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(pos)]
    sizes = ends - starts
    out_a, out_b, out_s = [], [], []
    # buckets of two: their one pair is owned (the candidates kernel kept its members), but
    # it is checked again here, so the kernel stands on its own
    two = starts[sizes == 2]
    if len(two):
        own = (first_shared_block(fp[two], fp[two + 1], masks) == band[two]) & (_hamming(fp[two], fp[two + 1]) <= d)
        two = two[own]
        s = sims(two, two + 1)
        ok = passes(s)
        out_a.append(pos[two][ok])
        out_b.append(pos[two + 1][ok])
        out_s.append(s[ok])  # noqa: E702
    for s0, e0 in zip(starts[sizes > 2].tolist(), ends[sizes > 2].tolist()):
        pairs, _ = _owned_pairs(fp[s0:e0], int(band[s0]), masks, d, params.threads)
        parent = list(range(e0 - s0))

        def find(x: int, parent: list[int] = parent) -> int:  # (this iteration's forest)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for i, j in pairs.tolist():  # sorted by (i, j): earlier documents first
            ri, rj = find(i), find(j)
            if ri == rj:
                continue  # already connected: this pair cannot change the components
            s = sims(np.array([s0 + i]), np.array([s0 + j]))
            if passes(s)[0]:
                parent[ri] = rj
                out_a.append(pos[[s0 + i]])
                out_b.append(pos[[s0 + j]])
                out_s.append(s)  # noqa: E702
    if not out_a:
        return empty
    a, b = np.concatenate(out_a), np.concatenate(out_b)
    s = np.concatenate(out_s).astype(np.float64)
    return pa.table(
        {
            "a": pa.array(np.minimum(a, b), pa.int64()),
            "b": pa.array(np.maximum(a, b), pa.int64()),
            "similarity": pa.array(s, pa.float64()),
            "similarity6": pa.array(round6(s), pa.float64()),
        }
    )


def _hamming(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from neardup.simhash import hamming

    return np.asarray(hamming(np.asarray(x, np.uint64), np.asarray(y, np.uint64)), np.int64)
