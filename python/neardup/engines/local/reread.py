"""Exact verification without keeping texts: re-read only the documents in candidate pairs, in
input order, and hold each shingle set only as long as a later pair still needs it.

Pairs ``(a, b)`` (document indices, ``a < b``) are checked when ``b`` is read; ``a``'s set is
held from when it is read until its last pair has been checked, ``b``'s only for its batch.
Near-duplicates in real feeds (and in the synthetic corpus) arrive close together, so few sets
are held at once. When the held sets would exceed the memory budget anyway, the pairs are split
by ranges of ``a`` into passes, each re-reading the input from its first document; how much one
pass would hold is known before reading (from the token counts of the exact pass), so the split
is planned, not discovered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neardup import _sets
from neardup.io.records import check_record
from neardup.stages.verify import HashSets, verify_exact

__all__ = ["RereadStats", "read_sets", "verify_reread", "plan_passes", "set_bytes_estimate", "working_bytes"]

#: Per held set: the NumPy array header and the dict entry around the 8-byte hashes.
SET_OVERHEAD = 160
#: Per pair while verifying: the sorted copy, its similarity, the b-order and the slices.
PAIR_BYTES = 96


def working_bytes(ntok: np.ndarray, pairs: int, batch_size: int, k: int, read_bytes: int = 0) -> int:
    """What a re-read needs besides the held sets: its pair arrays, the input reader's buffer
    (`read_bytes`: ``Source.read_buffer_bytes``), and one batch of records (the parsed record
    and text, about 4 bytes a token as UTF-8 and more as Python objects) with their shingle
    sets; from the largest documents, so a batch of them still fits."""
    if len(ntok) == 0:
        return PAIR_BYTES * pairs + read_bytes
    m = min(len(ntok), batch_size)
    big = np.partition(ntok, len(ntok) - m)[-m:]
    per_doc = 24 * big.astype(np.int64) + 8 * np.maximum(big.astype(np.int64) - k + 1, 1) + 1024
    return int(PAIR_BYTES * pairs + per_doc.sum()) + read_bytes


@dataclass
class RereadStats:
    passes: int = 0
    documents_read: int = 0
    peak_held_bytes_estimate: int = 0


def set_bytes_estimate(ntok: np.ndarray, k: int) -> np.ndarray:
    """Bytes one shingle set takes, from the exact pass's token counts (an upper bound on the
    number of distinct shingles, for word and whitespace units)."""
    shingles = np.maximum(ntok.astype(np.int64) - k + 1, 1)
    return 8 * shingles + SET_OVERHEAD


def _held_peak(a: np.ndarray, last_b: np.ndarray, size: np.ndarray) -> int:
    """Largest total size of a-sets held at once: a-set i is held on [a[i], last_b[i]]."""
    if len(a) == 0:
        return 0
    pos = np.concatenate([a, last_b])
    delta = np.concatenate([size, -size])
    # at equal positions frees come after loads: a set is held through its last pair
    order = np.lexsort((delta < 0, pos))
    return int(np.cumsum(delta[order]).max())


def plan_passes(a_docs: np.ndarray, last_b: np.ndarray, size: np.ndarray, budget: int | None) -> list[slice]:
    """Contiguous ranges (slices of the sorted `a_docs`) whose held sets each fit in `budget`."""
    n = len(a_docs)
    if n == 0:
        return []
    if budget is None:
        return [slice(0, n)]
    out: list[slice] = []
    stack = [(0, n)]
    while stack:
        s, e = stack.pop()
        if e - s == 1 or _held_peak(a_docs[s:e], last_b[s:e], size[s:e]) <= budget:
            out.append(slice(s, e))
        else:
            m = (s + e) // 2
            stack.append((m, e))
            stack.append((s, m))
    out.sort(key=lambda sl: sl.start)
    return out


def verify_reread(
    sources, docs, pairs: np.ndarray, signer, fields, limits, opts, *, budget: int | None, size, progress=None
) -> tuple[np.ndarray, RereadStats]:
    """Exact similarity (``opts.settings.measure``) of every pair of document indices; `size(docs)`
    gives the set size estimates of documents `docs` (:func:`set_bytes_estimate`)."""
    stats = RereadStats()
    m = len(pairs)
    sims = np.zeros(m, dtype=np.float64)
    if m == 0:
        return sims, stats
    pairs = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)  # (a < b); measures are symmetric
    a, b = pairs[:, 0], pairs[:, 1]
    a_docs, inv = np.unique(a, return_inverse=True)
    last_b = np.zeros(len(a_docs), dtype=np.int64)
    np.maximum.at(last_b, inv, b)
    sz = size(a_docs)
    passes = plan_passes(a_docs, last_b, sz, budget)
    stats.passes = len(passes)
    for sl in passes:
        lo, hi = a_docs[sl.start], a_docs[sl.stop - 1]
        sel = np.flatnonzero((a >= lo) & (a <= hi))
        stats.peak_held_bytes_estimate = max(stats.peak_held_bytes_estimate, _held_peak(a_docs[sl], last_b[sl], sz[sl]))
        _one_pass(sources, docs, pairs[sel], sel, sims, signer, fields, limits, opts, stats, progress)
    return sims, stats


def _one_pass(sources, docs, pairs, where, sims, signer, fields, limits, opts, stats, progress) -> None:
    a, b = pairs[:, 0], pairs[:, 1]
    order = np.argsort(b, kind="stable")  # pairs in the order their b is read
    a, b, where = a[order], b[order], where[order]
    a_set, inv = np.unique(a, return_inverse=True)
    a_last = np.zeros(len(a_set), dtype=np.int64)
    np.maximum.at(a_last, inv, b)
    free_order = a_set[np.argsort(a_last, kind="stable")].tolist()
    free_at = np.sort(a_last).tolist()
    f = 0  # next a-set (by last use) to free
    wanted = _sets.union(a_set, b)  # sorted document indices: input order
    held: dict[int, np.ndarray] = {}
    p = 0  # next pair (in b order) to check
    batch_docs: list[int] = []
    batch_texts: list[str] = []

    def flush() -> None:
        nonlocal p, f
        if not batch_docs:
            return
        hashes = signer.hashes(batch_texts)
        bd = np.asarray(batch_docs, dtype=np.int64)
        pos = np.searchsorted(a_set, bd)
        is_a = (pos < len(a_set)) & (a_set[np.minimum(pos, len(a_set) - 1)] == bd)
        for i in np.flatnonzero(is_a).tolist():
            held[batch_docs[i]] = hashes[i]
        top = batch_docs[-1]
        q = int(np.searchsorted(b, top, side="right"))
        if q > p:
            pa, pb = a[p:q], b[p:q]
            ids = _sets.unique(np.concatenate([pa, pb]))
            here = dict(zip(batch_docs, hashes))
            arrays = [held[d] if d in held else here[d] for d in ids.tolist()]
            local = np.stack([np.searchsorted(ids, pa), np.searchsorted(ids, pb)], axis=1)
            sims[where[p:q]] = verify_exact(HashSets(arrays), local, opts.settings.measure, opts.threads)
            p = q
        while f < len(free_at) and free_at[f] <= top:
            held.pop(free_order[f], None)
            f += 1
        batch_docs.clear()
        batch_texts.clear()

    for d, text in _texts(sources, docs, wanted, fields, limits, stats, progress):
        batch_docs.append(d)
        batch_texts.append(text)
        if len(batch_docs) >= opts.batch_size:
            flush()
    flush()
    if p != len(b):
        raise RuntimeError(f"{len(b) - p} candidate pairs were not verified (an input changed?)")


def _texts(sources, docs, wanted: np.ndarray, fields, limits, stats: RereadStats, progress):
    """(document, text) of each document of `wanted` (sorted), read again in input order."""
    src = docs.src_array()[wanted]
    rec = docs.recno_array()[wanted]
    for s_i, s in enumerate(sources):
        mine = np.flatnonzero(src == s_i)
        if len(mine) == 0:
            continue
        mask = np.zeros(int(rec[mine].max()) + 1, dtype=bool)
        mask[rec[mine]] = True
        expect = iter(zip(wanted[mine].tolist(), rec[mine].tolist()))
        for recno, obj in s.records(mask):
            d, want_rec = next(expect, (None, None))
            if want_rec != recno:
                raise RuntimeError(
                    f"{s.name}: record {recno} came back where record {want_rec} was expected "
                    "(did the input change during the run?)"
                )
            stats.documents_read += 1
            if progress is not None:
                progress.update(1)
            yield d, check_record(obj, fields, limits, s.name, recno).text
        if next(expect, None) is not None:
            raise RuntimeError(f"{s.name}: some candidate records could not be read again (did the input change?)")


def read_sets(sources, docs, wanted: np.ndarray, signer, fields, limits, opts, progress=None) -> tuple[list, int]:
    """The shingle sets of documents `wanted` (sorted), in that order, and how many were read."""
    stats = RereadStats()
    sets: list[np.ndarray] = []
    batch: list[str] = []
    for _, text in _texts(sources, docs, np.asarray(wanted, dtype=np.int64), fields, limits, stats, progress):
        batch.append(text)
        if len(batch) >= opts.batch_size:
            sets.extend(signer.hashes(batch))
            batch.clear()
    if batch:
        sets.extend(signer.hashes(batch))
    if len(sets) != len(wanted):
        raise RuntimeError("some documents of large buckets could not be read again (did the input change?)")
    return sets, stats.documents_read
