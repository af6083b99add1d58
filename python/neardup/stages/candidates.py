"""Candidate pairs: LSH bands over MinHash signatures, block tables over SimHash fingerprints.

Both are batch self-joins whose pairs ``(i, j)`` have ``i < j`` in input order, which is what
"each document is queried against earlier ones only, then inserted" gives.
"""

from __future__ import annotations

import os

import numpy as np

from neardup import _core, _sets
from neardup.settings import choose_bands
from neardup.stages.spill import private_dir, spill_error

__all__ = ["choose_bands", "curve_table", "lsh_pairs", "pairs_from_keys", "hamming_pairs", "min_sort_bytes"]


def curve_table(b: int, r: int, points=(0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)) -> list[dict]:
    from neardup import lsh

    return [{"similarity": s, "p_candidate": float(lsh.candidate_probability(s, b, r))} for s in points]


def lsh_pairs(
    sigs: np.ndarray,
    b: int,
    r: int,
    sort_budget: int | None = None,
    tmp_dir: str | None = None,
    info: dict | None = None,
    large_bucket: int | None = None,
    large: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Pairs (i < j) of rows of `sigs` sharing at least one of `b` bands of `r` rows."""
    from neardup import lsh

    if len(sigs) < 2:
        return np.zeros((0, 2), dtype=np.uint32)
    if isinstance(sigs, np.memmap) and sigs.filename:
        # spilled signatures (--verify estimate under --memory-limit): their band keys a chunk
        # of rows at a time by plain reads, as the external sort reads keys (_chunk): hashing
        # the whole map at once made every page of it resident, uncounted (77 MB of a 150k
        # corpus's signatures: --memory-limit 150M peaked at 195 MiB in this stage)
        keys = np.empty((len(sigs), b), np.uint64)
        for at in range(0, len(sigs), SIG_CHUNK_ROWS):
            keys[at : at + SIG_CHUNK_ROWS] = lsh.band_keys(_chunk(sigs, at, min(len(sigs), at + SIG_CHUNK_ROWS)), b, r)
    else:
        keys = lsh.band_keys(np.ascontiguousarray(sigs), b, r)
    return pairs_from_keys(keys, sort_budget, tmp_dir, info, large_bucket=large_bucket, large=large)


#: Signature rows read at a time from a spill file to form their band keys (4 MiB at 128 x 4 bytes).
SIG_CHUNK_ROWS = 8192


def pairs_from_keys(
    keys: np.ndarray,
    sort_budget: int | None = None,
    tmp_dir: str | None = None,
    info: dict | None = None,
    external: bool = False,
    large_bucket: int | None = None,
    large: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Pairs (i < j) of rows of an (n, b) band-key matrix (in memory or memory-mapped) that
    share a key in at least one band, sorted, each once.

    Each band's (key, row) column is sorted to find its buckets: in memory (16 bytes per row,
    one column per core at a time) when that fits in `sort_budget`, otherwise externally: the
    column is split by the top bits of its keys into partition files small enough to sort in
    the budget, and each partition is sorted on its own (equal keys always share a partition).
    Both give the same pairs. ``external=True`` forces the external path (spilled keys: it
    reads a memory map in chunks with plain reads, so its pages never count as resident).

    With `large_bucket`, a bucket of more rows than that lists none of its pairs: its rows
    (ascending) are appended to `large` instead, once however many bands share it
    (``engines.local.buckets`` verifies them without their pairs)."""
    from neardup import lsh

    n = len(keys)
    if n < 2:
        return np.zeros((0, 2), dtype=np.uint32)
    cores = os.cpu_count() or 1
    if large_bucket is not None and large is None:
        raise ValueError("large_bucket needs a list to put the large buckets in")
    found: list[np.ndarray] = []
    if not external and (sort_budget is None or 16 * n * min(cores, keys.shape[1]) <= sort_budget):
        if large_bucket is None:
            pairs = lsh.candidate_pairs(keys)
        else:
            pairs, offs, members = _core._lsh_candidates_capped(np.ascontiguousarray(keys, np.uint64), large_bucket)
            found = [members[offs[k] : offs[k + 1]] for k in range(len(offs) - 1)]
        pairs = np.ascontiguousarray(pairs, dtype=np.uint32).reshape(-1, 2)
    else:
        budget = sort_budget if sort_budget is not None else 16 * n
        pairs = _external_pairs(keys, budget, tmp_dir, info if info is not None else {}, large_bucket, found)
    if large is not None:
        large.extend(_distinct(found))
    return pairs


def _distinct(buckets: list[np.ndarray]) -> list[np.ndarray]:
    """Each bucket once (the same rows often share a key in several bands), in a fixed order."""
    seen: dict[bytes, np.ndarray] = {}
    for m in buckets:
        seen.setdefault(np.ascontiguousarray(m, np.uint32).tobytes(), m)
    return [seen[k] for k in sorted(seen)]


#: At most this many partition files per band (each a key file and a row file).
MAX_PARTS = 256
#: Fewest rows the external sort reads at a time (fewer only makes more reads of the file).
MIN_CHUNK = 256


#: Bytes per row of a chunk in flight: the rows, their column, row numbers, partition ids
#: and order.
def _chunk_row_bytes(b: int) -> int:
    return 8 * b + 40


def min_sort_bytes(n: int, b: int) -> int:
    """The least the external band sort can run in: a chunk of rows and one partition."""
    return min(n, MIN_CHUNK) * _chunk_row_bytes(b) + 48 * (n // MAX_PARTS + 1)


def _external_pairs(
    keys: np.ndarray,
    sort_budget: int,
    tmp_dir: str | None,
    info: dict,
    large_bucket: int | None = None,
    large: list | None = None,
) -> np.ndarray:
    n, b = keys.shape
    rows_per_part = max(1024, sort_budget // 16)
    parts = 2
    while parts < MAX_PARTS and parts * rows_per_part < n:
        parts *= 2
    shift = np.uint64(64 - parts.bit_length() + 1)  # the top log2(parts) bits pick the partition
    # rows read at a time: the whole-row chunk plus its column, row numbers, partition ids and
    # order stay within the budget
    chunk = max(MIN_CHUNK, sort_budget // _chunk_row_bytes(b))
    found = np.zeros(0, np.int64)  # pair codes i * n + j so far, distinct
    written = 0
    with private_dir("neardup-bands-", tmp_dir, "the band sort's partition files") as d:
        for band in range(b):
            codes: list[np.ndarray] = []
            kf: list = []
            rf: list = []
            try:
                # a full spill disk (or any failed write there) is one line naming --tmp-dir, not
                # a traceback (store.spill_error); the files are closed (flushed) inside the try
                kf += [open(os.path.join(d, f"k{j}"), "wb") for j in range(parts)]
                rf += [open(os.path.join(d, f"r{j}"), "wb") for j in range(parts)]
                for s in range(0, n, chunk):
                    col = np.ascontiguousarray(_chunk(keys, s, min(n, s + chunk))[:, band], dtype=np.uint64)
                    rows = np.arange(s, s + len(col), dtype=np.uint32)
                    part = (col >> shift).astype(np.int64)
                    order = np.argsort(part, kind="stable")  # rows stay ascending within a part
                    bounds = np.searchsorted(part[order], np.arange(parts + 1))
                    kc, rc = col[order], rows[order]
                    for j in np.flatnonzero(np.diff(bounds)).tolist():
                        kf[j].write(kc[bounds[j] : bounds[j + 1]].tobytes())
                        rf[j].write(rc[bounds[j] : bounds[j + 1]].tobytes())
                    written += kc.nbytes + rc.nbytes
                for f in kf + rf:
                    f.close()
            except OSError as exc:
                raise spill_error(
                    exc, tmp_dir, f"the band sort's partition files (band {band + 1} of {b})", 0, written
                ) from exc
            finally:
                for f in kf + rf:
                    try:
                        f.close()
                    except OSError:
                        pass
            for j in range(parts):
                k = np.fromfile(os.path.join(d, f"k{j}"), dtype=np.uint64)
                if len(k) < 2:
                    continue
                r = np.fromfile(os.path.join(d, f"r{j}"), dtype=np.uint32)
                local: np.ndarray
                if large_bucket is None:
                    local = _core.candidate_pairs(k.reshape(-1, 1))
                else:
                    local, offs, members = _core._lsh_candidates_capped(k.reshape(-1, 1), large_bucket)
                    assert large is not None  # (pairs_from_keys checked it)
                    large.extend(r[members[offs[q] : offs[q + 1]]] for q in range(len(offs) - 1))
                local = np.asarray(local, dtype=np.int64).reshape(-1, 2)
                if len(local):
                    g = r[local].astype(np.int64)  # local i < j means row r[i] < r[j]
                    codes.append(g[:, 0] * n + g[:, 1])
            if codes:  # merged band by band: a pair found in several bands is held once
                found = _sets.union(found, np.concatenate(codes))
    info.update({"external_sort": True, "partitions_per_band": parts})
    return np.stack([found // n, found % n], axis=1).astype(np.uint32)


def _chunk(keys: np.ndarray, s: int, e: int) -> np.ndarray:
    """Rows s..e of a row matrix (band keys, signatures); of a memory map by a plain read (no
    page stays mapped)."""
    if isinstance(keys, np.memmap) and keys.filename:
        width = keys.shape[1]
        with open(keys.filename, "rb") as f:
            f.seek(keys.offset + s * width * keys.dtype.itemsize)
            return np.fromfile(f, dtype=keys.dtype, count=(e - s) * width).reshape(-1, width)
    return keys[s:e]


def hamming_pairs(fps: np.ndarray, max_distance: int, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j) of 64-bit fingerprints within `max_distance` bits, with their distance
    (block-permuted tables: ``max_distance + 1`` blocks, exact by the pigeonhole principle)."""
    pairs, dist = _core._allpairs_hamming(np.ascontiguousarray(fps, dtype=np.uint64), int(max_distance), threads)
    return pairs, dist
