"""Engine-neutral kernels: ``pyarrow.Table -> pyarrow.Table`` functions over the Rust core.

Each kernel is a pure function of one Arrow table (one partition, or one batch of it) and its
parameters, so any engine that can hand Arrow batches to Python runs them: Spark's
``mapInArrow`` (``neardup.engines.spark``) today, Dask or Ray later. None of them keeps state
between calls and none of them reads files: the engine moves the data, the kernel computes.

Documents are named by ``pos`` (int64): ``input index << 40 | record number`` (1-based line of
a JSONL file, row of a Parquet file), so ``pos`` order is input order — the order the local
engine (``neardup.engines.local``) numbers documents in. That makes the answers of both engines
identical: the exact-pass representative of a group is its earliest document, a component is
labelled by its earliest document, clusters are numbered by that label.

The kernels, in pipeline order:

=====================  ===========================================  =========================================
kernel                 input columns                                output columns
=====================  ===========================================  =========================================
check_jsonl            src, recno, value (one JSONL line)           CHECKED
check_rows             src, recno, <record columns>                 CHECKED
check_csv              src, recno, value (record as JSON), error    CHECKED
exact_keys             pos, text                                    pos, xkey, ntok
doc_keys               CHECKED                                      CHECKED - text + xkey, ntok, bkeys, fp
exact_groups           pos, xkey, ntok (grouped by xkey)            pos, rep
band_rows              pos, text                                    band, key, pos [, sig]
bucket_members         band, key, pos (grouped by band, key)        members (list<int64>, >= 2, sorted)
verify_buckets         bid, pos, text|sig (grouped by bid)          a, b, similarity[6] (spanning edges only)
large_star/small_star  u, v (grouped by u)                          u, v
edge_checksum          u, v                                         n, checksum (one row)
keeper_rows            label, pos, key, time, source, xkey, rep     one row per cluster member, rule order
pair_similarity        text_a, text_b | sig_a, sig_b | fp_a, fp_b   similarity, similarity6 (rounded)
=====================  ===========================================  =========================================

With ``method="simhash"`` the band keys of ``doc_keys`` are the fingerprint's blocks and the
buckets are formed and verified by :mod:`neardup.kernels.simhash` (``simhash_candidates``,
``simhash_verify``) instead of ``bucket_members`` / ``verify_buckets``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup import _core, _sets
from neardup.errors import RecordError
from neardup.io.readers import parse_json_line
from neardup.io.records import Fields, Limits, check_record
from neardup.kernels.common import _cached, _sets_of, round6
from neardup.lsh import band_keys
from neardup.minhash import MinHash
from neardup.settings import Settings
from neardup.shingle import Shingler
from neardup.simhash import SimHash
from neardup.stages.keepers import source_ranks
from neardup.stages.options import DedupOptions

__all__ = [
    "POS_SHIFT",
    "make_pos",
    "pos_src",
    "pos_recno",
    "CHECKED",
    "KernelParams",
    "check_jsonl",
    "check_rows",
    "check_csv",
    "exact_keys",
    "doc_keys",
    "exact_groups",
    "band_rows",
    "bucket_members",
    "verify_buckets",
    "large_star",
    "small_star",
    "edge_checksum",
    "keeper_rows",
    "pair_similarity",
    "kept_jsonl_line",
    "simhash_candidates",
    "simhash_verify",
]

POS_SHIFT = 40  # record numbers up to 2**40; input index in the bits above


def make_pos(src, recno):
    return (np.asarray(src, dtype=np.int64) << POS_SHIFT) | np.asarray(recno, dtype=np.int64)


def pos_src(pos):
    return np.asarray(pos, dtype=np.int64) >> POS_SHIFT


def pos_recno(pos):
    return np.asarray(pos, dtype=np.int64) & ((1 << POS_SHIFT) - 1)


#: Schema of a checked record: the local engine's :class:`neardup.io.records.Checked`, plus
#: the error of a record that failed its check (``error`` is a JSON ``RecordError.as_dict``).
CHECKED = pa.schema(
    [
        ("pos", pa.int64()),
        ("id", pa.string()),  # the id as a string (Checked.key)
        ("id_int", pa.bool_()),  # the id was an integer in the input
        ("text", pa.large_string()),  # title + "\n" + text when a title field is set
        ("time", pa.float64()),  # epoch seconds; NaN when missing or unreadable
        ("source", pa.string()),
        ("time_error", pa.string()),
        ("error", pa.string()),  # null for a good record
    ]
)


@dataclass(frozen=True)
class KernelParams:
    """What the kernels need (picklable, small, hashable): the run's :class:`Settings` and the
    threads each kernel call may use. The default settings are ``neardup dedup``'s, so that a
    kernel called with defaults signs as the local engine does."""

    settings: Settings = field(default_factory=Settings)
    threads: int | None = 1

    @classmethod
    def from_options(cls, opts: DedupOptions, bands: int, rows: int, threads: int | None = 1) -> KernelParams:
        """The kernels' parameters of a run, its MinHash bands pinned at (bands, rows)."""
        settings = opts.settings
        if settings.method == "minhash":
            settings = settings.replace(bands=bands, rows=rows)
        return cls(settings=settings, threads=threads)

    @property
    def bands(self) -> int:
        """Band keys per document: the LSH bands, or SimHash's ``max_distance + 1`` blocks."""
        return self.settings.band_shape()[0]

    nkeys = bands

    @property
    def rows(self) -> int:
        return self.settings.band_shape()[1]

    def shingler(self) -> Shingler:
        return self.settings.shingler()

    def minhash(self) -> MinHash:
        return self.settings.minhash()

    def simhash(self) -> SimHash:
        return self.settings.simhash()


# ---- records ----------------------------------------------------------------------------


def _checked_table(rows: list[tuple], extra: dict | None = None) -> pa.Table:
    cols: list[Sequence[Any]] = list(zip(*rows)) if rows else [[] for _ in CHECKED.names]
    arrays = [pa.array(list(c), type=f.type) for c, f in zip(cols, CHECKED)]
    t = pa.Table.from_arrays(arrays, schema=CHECKED)
    if extra:
        for name, arr in extra.items():
            t = t.append_column(name, arr)
    return t


def _check_one(rec, fields: Fields, limits: Limits, name: str, src: int, recno: int) -> tuple:
    pos = (src << POS_SHIFT) | recno
    if isinstance(rec, RecordError):
        return (pos, None, None, None, math.nan, None, None, json.dumps(rec.as_dict()))
    try:
        c = check_record(rec, fields, limits, name, recno)
    except RecordError as err:
        return (pos, None, None, None, math.nan, None, None, json.dumps(err.as_dict()))
    return (pos, c.key, isinstance(c.id, int), c.text, c.time, c.source, c.time_error, None)


def check_jsonl(table: pa.Table, *, fields: Fields, limits: Limits, names: Sequence[str]) -> pa.Table:
    """Parse and check JSONL lines exactly as the local engine does (``parse_json_line`` then
    ``check_record``). ``value``: the lines as strings, or as bytes (then invalid UTF-8 is
    reported as the local engine reports it). Blank lines are not records and are dropped."""
    src = table.column("src").to_numpy()
    recno = table.column("recno").to_numpy()
    col = table.column("value")
    binary = pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)
    rows = []
    for s, r, line in zip(src.tolist(), recno.tolist(), col.to_pylist()):
        if line is None or not line.strip():
            continue
        name = names[s]
        rec = parse_json_line(name, r, line if binary else line.encode("utf-8"))
        rows.append(_check_one(rec, fields, limits, name, s, r))
    return _checked_table(rows)


def check_rows(
    table: pa.Table, *, fields: Fields, limits: Limits, names: Sequence[str], renames: dict[str, str] | None = None
) -> pa.Table:
    """Check records given as columns (Parquet, a DataFrame), as the local engine does.
    `renames`: column name -> the record's field name, for fields named as ``src``/``recno``."""
    src = table.column("src").to_numpy()
    recno = table.column("recno").to_numpy()
    rest = table.drop_columns(["src", "recno"])
    if renames:
        rest = rest.rename_columns([renames.get(c, c) for c in rest.column_names])
    recs = rest.to_pylist()
    rows = [_check_one(rec, fields, limits, names[s], s, r) for s, r, rec in zip(src.tolist(), recno.tolist(), recs)]
    return _checked_table(rows)


def check_csv(table: pa.Table, *, fields: Fields, limits: Limits, names: Sequence[str]) -> pa.Table:
    """Check records read by the local engine's CSV reader: ``value`` is the record (a dict of
    strings) as JSON, or ``error`` the reader's own error (``RecordError.as_dict`` as JSON),
    which is kept as it is."""
    src = table.column("src").to_numpy()
    recno = table.column("recno").to_numpy()
    rows = []
    for s, r, v, e in zip(
        src.tolist(), recno.tolist(), table.column("value").to_pylist(), table.column("error").to_pylist()
    ):
        if e is not None:
            d = json.loads(e)
            rec = RecordError(d["file"], d["line"], d["reason"], field=d.get("field"))
        else:
            rec = json.loads(v)
        rows.append(_check_one(rec, fields, limits, names[s], s, r))
    return _checked_table(rows)


# ---- exact pass -------------------------------------------------------------------------


def exact_keys(table: pa.Table, threads: int | None = 1, unit: str = "word") -> pa.Table:
    """The local engine's exact key (normalised text hash in `unit`'s tokens, ``_core._exact_keys``)
    and token count of each text; ``xkey`` is 0 for a text with no tokens (it is a document of
    its own)."""
    texts = table.column("text").to_pylist()
    if texts:
        keys, ntok = _core._exact_keys(texts, threads, unit)
        keys = np.asarray(keys, dtype=np.uint64)
        ntok = np.asarray(ntok, dtype=np.int64)
    else:
        keys, ntok = np.zeros(0, np.uint64), np.zeros(0, np.int64)
    keys = np.where(ntok == 0, np.uint64(0), keys).view(np.int64)
    return pa.table(
        {"pos": table.column("pos"), "xkey": pa.array(keys, pa.int64()), "ntok": pa.array(ntok, pa.int64())}
    )


def exact_groups(table: pa.Table) -> pa.Table:
    """Rows grouped by ``xkey`` (all rows of a key in this table): each document's
    representative, the earliest document (smallest ``pos``) with its key."""
    pos = table.column("pos").to_numpy()
    xkey = table.column("xkey").to_numpy()
    ntok = table.column("ntok").to_numpy()
    rep = pos.copy()
    if len(pos):
        order = np.lexsort((pos, xkey))
        k = xkey[order]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        first = np.repeat(pos[order][starts], np.diff(np.r_[starts, len(k)]))
        rep[order] = first
        rep = np.where(ntok == 0, pos, rep)
    return pa.table({"pos": pa.array(pos, pa.int64()), "rep": pa.array(rep, pa.int64())})


def doc_keys(table: pa.Table, params: KernelParams) -> pa.Table:
    """Checked records (``CHECKED``) → the same rows without ``text``, plus ``xkey``, ``ntok``
    (as :func:`exact_keys`), ``bkeys`` (the ``bands`` band keys of the text's signature, or
    with ``method="simhash"`` the ``max_distance + 1`` blocks of its fingerprint; null for a
    bad record or a text with no tokens) and ``fp`` (the SimHash fingerprint; null for MinHash).

    One kernel for everything the pipeline needs of a text, so an engine reads and checks the
    corpus once and never carries the texts through a shuffle: it fetches them again only
    for the few documents that reach verification. (Exact copies get band keys too and the
    engine drops them: ~5% more signatures, in exchange for one pass over the texts; with
    MinHash that pass also gives the exact keys, each text tokenised once: ``Signer.keyed``.)
    """
    n = table.num_rows
    ok = (
        np.asarray(pc.is_null(table.column("error")).to_numpy(zero_copy_only=False), dtype=bool)
        if n
        else np.zeros(0, bool)
    )
    idx = np.flatnonzero(ok)
    xkey = np.zeros(n, np.int64)
    ntok = np.zeros(n, np.int64)
    b = params.nkeys
    keys = np.zeros((0, b), np.uint64)
    fps = np.zeros(0, np.uint64)
    if len(idx) and params.settings.method == "minhash":
        # signatures, exact keys and token counts in one pass over the texts (read in place)
        text = table.column("text").take(pa.array(idx)).combine_chunks()
        sigs, k_, n_ = _cached(params, "minhash")._signatures_keyed(text, threads=params.threads)
        n_ = np.asarray(n_, np.int64)
        has_tok = n_ > 0
        xkey[idx] = np.where(has_tok, k_, np.uint64(0)).view(np.int64)  # as exact_keys: 0 without tokens
        ntok[idx] = n_
        tok = idx[has_tok]
        if len(tok):
            keys = band_keys(np.ascontiguousarray(sigs[has_tok]), b, params.rows, threads=params.threads)
    elif len(idx):
        good = table.take(pa.array(idx)).select(["pos", "text"])
        ek = exact_keys(good, params.threads, params.settings.unit)
        xkey[idx] = ek.column("xkey").to_numpy()
        ntok[idx] = ek.column("ntok").to_numpy()
        tok = idx[ntok[idx] > 0]
        if len(tok):
            text = table.column("text").take(pa.array(tok)).combine_chunks()
            fps = np.asarray(_cached(params, "simhash").fingerprints(text, threads=params.threads), np.uint64)
            keys = block_keys(fps, params.settings.max_distance)
    else:
        tok = idx
    has = np.zeros(n, bool)
    has[tok] = True
    counts = np.where(has, b, 0)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int32)
    bkeys = pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(np.ascontiguousarray(keys).reshape(-1).view(np.int64), pa.int64()),
        mask=pa.array(~has),
    )
    simhash = params.settings.method == "simhash"
    fp = np.zeros(n, np.uint64)
    if simhash:
        fp[tok] = fps
    fp_col = pa.array(fp.view(np.int64), pa.int64(), mask=~has if simhash else np.ones(n, bool))
    out = table.drop_columns(["text"])
    return (
        out.append_column("xkey", pa.array(xkey, pa.int64()))
        .append_column("ntok", pa.array(ntok, pa.int64()))
        .append_column("bkeys", bkeys)
        .append_column("fp", fp_col)
    )


# ---- signatures and bands ---------------------------------------------------------------


def band_rows(table: pa.Table, params: KernelParams, with_sig: bool = False) -> pa.Table:
    """MinHash signatures of the texts (Arrow strings read in place) and one row per
    (band, band key, document): the guide's "each band's table is independent"."""
    pos = table.column("pos").to_numpy()
    n = len(pos)
    b, r = params.bands, params.rows
    if n:
        text = (
            table.column("text").combine_chunks()
            if isinstance(table.column("text"), pa.ChunkedArray)
            else table.column("text")
        )
        sigs = _cached(params, "minhash").signatures(text, threads=params.threads)
        keys = band_keys(sigs, b, r, threads=params.threads)  # (n, b) uint64
    else:
        sigs = np.zeros((0, params.settings.num_perm), np.uint32)
        keys = np.zeros((0, b), np.uint64)
    out = {
        "band": pa.array(np.tile(np.arange(b, dtype=np.int32), n), pa.int32()),
        "key": pa.array(np.ascontiguousarray(keys).reshape(-1).view(np.int64), pa.int64()),
        "pos": pa.array(np.repeat(pos, b), pa.int64()),
    }
    t = pa.table(out)
    if with_sig:
        sig_bytes = np.ascontiguousarray(sigs).view(np.uint8).reshape(n, -1)
        t2 = pa.table({"pos": pa.array(pos, pa.int64()), "sig": _fixed_binary(sig_bytes)})
        return t, t2
    return t


def _fixed_binary(rows: np.ndarray) -> pa.Array:
    n, w = rows.shape if rows.ndim == 2 else (0, 0)
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(w), n, [None, pa.py_buffer(np.ascontiguousarray(rows).tobytes())]
    )


def signatures(table: pa.Table, params: KernelParams) -> pa.Table:
    """pos, sig (the signature's uint32 values as bytes) for --verify estimate."""
    _, t2 = band_rows(table, params, with_sig=True)
    return t2.set_column(1, "sig", t2.column("sig").cast(pa.binary()))


def bucket_members(table: pa.Table) -> pa.Table:
    """Rows grouped by (band, key): one row per bucket of two or more documents, its members
    sorted. Singleton buckets (nearly all of them) end here."""
    band = table.column("band").to_numpy().astype(np.int64)
    key = table.column("key").to_numpy()
    pos = table.column("pos").to_numpy()
    if len(pos) < 2:
        return pa.table({"members": pa.array([], pa.list_(pa.int64()))})
    order = np.lexsort((pos, key, band))
    band, key, pos = band[order], key[order], pos[order]
    new = np.r_[True, (band[1:] != band[:-1]) | (key[1:] != key[:-1])]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(pos)]
    big = (ends - starts) >= 2
    starts, ends = starts[big], ends[big]
    if not len(starts):
        return pa.table({"members": pa.array([], pa.list_(pa.int64()))})
    sel = np.concatenate([np.arange(s, e) for s, e in zip(starts.tolist(), ends.tolist())])
    offsets = np.r_[0, np.cumsum(ends - starts)].astype(np.int32)
    members = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(pos[sel], pa.int64()))
    return pa.table({"members": members})


# ---- verification -----------------------------------------------------------------------


def verify_buckets(table: pa.Table, params: KernelParams) -> pa.Table:
    """Rows (bid, pos, text) — or (bid, pos, sig) for ``verify="estimate"`` — grouped by bucket.

    A per-bucket union-find: each document, in ``pos`` order, is verified only against the
    bucket members not already connected to it, and only the edges that join two sets are
    emitted. A bucket of m copies costs m - 1 checks when they all pass (not m(m-1)/2), and
    the components are those of all verified candidate pairs of the bucket, because every
    passing pair either was checked or joins two documents already connected.
    """
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
    bid = table.column("bid").to_numpy()
    pos = table.column("pos").to_numpy()
    order = np.lexsort((pos, bid))
    bid, pos = bid[order], pos[order]
    estimate = params.settings.verify == "estimate"
    if estimate:
        raw = table.column("sig").combine_chunks()
        sig = np.frombuffer(b"".join(raw.take(pa.array(order)).to_pylist()), dtype=np.uint32).reshape(len(pos), -1)
    else:
        texts = table.column("text").take(pa.array(order)).to_pylist()
        # each distinct document once
        upos, first = np.unique(pos, return_index=True)
        sets = _sets_of([texts[i] for i in first.tolist()], params)
        slot = np.searchsorted(upos, pos)

    def sim_batch(i_rows: np.ndarray, j_rows: np.ndarray) -> np.ndarray:
        if estimate:
            return (sig[i_rows] == sig[j_rows]).mean(axis=1)
        from neardup.stages.verify import verify_exact

        pr = np.stack([slot[i_rows], slot[j_rows]], axis=1).astype(np.uint32)
        return verify_exact(sets, pr, params.settings.measure, params.threads)

    starts = np.flatnonzero(np.r_[True, bid[1:] != bid[:-1]])
    ends = np.r_[starts[1:], len(bid)]
    sizes = ends - starts
    out_a, out_b, out_s = [], [], []
    # buckets of two: one check each, batched
    two = starts[sizes == 2]
    if len(two):
        s = sim_batch(two, two + 1)
        ok = s >= params.settings.threshold
        out_a.append(pos[two][ok])
        out_b.append(pos[two + 1][ok])
        out_s.append(s[ok])
    for s0, e0 in zip(starts[sizes > 2].tolist(), ends[sizes > 2].tolist()):
        m = e0 - s0
        parent = list(range(m))

        def find(x: int, parent: list[int] = parent) -> int:  # (this iteration's forest)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for j in range(1, m):
            # every earlier member whose set differs from j's (a failed check against one
            # member says nothing of the other members of its set)
            for i in range(j):
                if find(i) == find(j):
                    continue
                sim = float(sim_batch(np.array([s0 + i]), np.array([s0 + j]))[0])
                if sim >= params.settings.threshold:
                    parent[find(i)] = find(j)
                    out_a.append(np.array([pos[s0 + i]]))
                    out_b.append(np.array([pos[s0 + j]]))
                    out_s.append(np.array([sim]))
    if not out_a:
        return empty
    sims = np.concatenate(out_s).astype(np.float64)
    return pa.table(
        {
            "a": pa.array(np.concatenate(out_a), pa.int64()),
            "b": pa.array(np.concatenate(out_b), pa.int64()),
            "similarity": pa.array(sims, pa.float64()),
            "similarity6": pa.array(round6(sims), pa.float64()),
        }
    )


def pair_similarity(table: pa.Table, params: KernelParams) -> pa.Table:
    """Similarity of each row's pair: exact (``text_a``, ``text_b``) or estimated from
    signatures (``sig_a``, ``sig_b``) or, with ``method="simhash"``, from fingerprints
    (``fp_a``, ``fp_b``: 1 - distance / 64). Other columns are passed through."""
    n = table.num_rows
    if n == 0:
        return table.append_column("similarity", pa.array([], pa.float64())).append_column(
            "similarity6", pa.array([], pa.float64())
        )
    if params.settings.verify == "estimate" and params.settings.method == "simhash":
        sims = hamming_similarity(
            table.column("fp_a").to_numpy().view(np.uint64), table.column("fp_b").to_numpy().view(np.uint64)
        )
    elif params.settings.verify == "estimate":
        a = np.frombuffer(b"".join(table.column("sig_a").to_pylist()), dtype=np.uint32).reshape(n, -1)
        b = np.frombuffer(b"".join(table.column("sig_b").to_pylist()), dtype=np.uint32).reshape(n, -1)
        sims = (a == b).mean(axis=1)
    else:
        from neardup.stages.verify import verify_exact

        texts = table.column("text_a").to_pylist() + table.column("text_b").to_pylist()
        sets = _sets_of(texts, params)
        pr = np.stack([np.arange(n), np.arange(n, 2 * n)], axis=1).astype(np.uint32)
        sims = verify_exact(sets, pr, params.settings.measure, params.threads)
    keep = [c for c in table.column_names if c not in ("text_a", "text_b", "sig_a", "sig_b", "fp_a", "fp_b")]
    sims = np.asarray(sims, np.float64)
    return (
        table.select(keep)
        .append_column("similarity", pa.array(sims, pa.float64()))
        .append_column("similarity6", pa.array(round6(sims), pa.float64()))
    )


# ---- connected components: large-star / small-star (Kiveris et al., SoCC 2014) -------------

_EDGES = pa.schema([("u", pa.int64()), ("v", pa.int64())])


def _grouped(table: pa.Table):
    u = table.column("u").to_numpy()
    v = table.column("v").to_numpy()
    keep = u != v
    u, v = u[keep], v[keep]
    if not len(u):
        return None
    u, v = _sets.unique_rows(u, v)  # sorted by (u, v), duplicates gone
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    return u, v, starts


def _stars(table: pa.Table):
    """The grouped edges, each group's m = min(Γ(u) ∪ {u}) and m repeated over the group;
    None for an empty table."""
    g = _grouped(table)
    if g is None:
        return None
    u, v, starts = g
    m = np.minimum(np.minimum.reduceat(v, starts), u[starts])
    return u, v, starts, m, np.repeat(m, np.diff(np.r_[starts, len(u)]))


def _no_edges() -> pa.Table:
    return pa.Table.from_arrays([pa.array([], pa.int64())] * 2, schema=_EDGES)


def large_star(table: pa.Table) -> pa.Table:
    """Input: both directions of every edge, grouped by ``u``. For each node u with
    m = min(Γ(u) ∪ {u}), emit (v, m) for every neighbour v > u."""
    g = _stars(table)
    if g is None:
        return _no_edges()
    u, v, _, _, m_all = g
    sel = v > u
    return pa.Table.from_arrays([pa.array(v[sel], pa.int64()), pa.array(m_all[sel], pa.int64())], schema=_EDGES)


def small_star(table: pa.Table) -> pa.Table:
    """Input: every edge as (larger, smaller), grouped by ``u`` (the larger end). For each
    node u with N = {v <= u} and m = min(N ∪ {u}), emit (v, m) for every v in N ∪ {u}, v != m."""
    g = _stars(table)
    if g is None:
        return _no_edges()
    u, v, starts, m, m_all = g
    nodes = np.concatenate([v, u[starts]])
    mins = np.concatenate([m_all, m])
    sel = nodes != mins
    return pa.Table.from_arrays([pa.array(nodes[sel], pa.int64()), pa.array(mins[sel], pa.int64())], schema=_EDGES)


def edge_checksum(table: pa.Table) -> pa.Table:
    """One row: the number of edges and an order-free checksum (sum of a 64-bit mix of each
    (u, v), wrapping). Summed over partitions, equal before and after a round means converged."""
    u = table.column("u").to_numpy().astype(np.uint64)
    v = table.column("v").to_numpy().astype(np.uint64)
    with np.errstate(over="ignore"):
        x = u * np.uint64(0x9E3779B97F4A7C15) ^ (v + np.uint64(0xBF58476D1CE4E5B9))
        x ^= x >> np.uint64(31)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(29)
        s = np.uint64(x.sum(dtype=np.uint64)) if len(x) else np.uint64(0)
    return pa.table({"n": pa.array([len(u)], pa.int64()), "checksum": pa.array([s.view(np.int64)], pa.int64())})


# ---- keepers ----------------------------------------------------------------------------


def keeper_rows(table: pa.Table, prefer_source: Sequence[str]) -> pa.Table:
    """Rows (label, pos, id, time, source, xkey, rep) of cluster members, grouped by label.
    Sorts each cluster by the local engine's keeper rule (``pick_keepers``: earliest time, then
    ``prefer_source`` order, then smallest id) and returns, per member: label, pos, id, rank
    (0 = keeper), size, keeper_pos, keeper_id, rep, keeper_rep and ``exact`` (same non-empty
    exact key as the keeper)."""
    from neardup.stages.keepers import pick_keepers

    label = table.column("label").to_numpy()
    pos = table.column("pos").to_numpy()
    ids = table.column("id").to_pylist()
    n = len(pos)
    times = table.column("time").to_numpy(zero_copy_only=False).astype(np.float64)
    src_rank = source_ranks(table.column("source").to_pylist(), prefer_source)
    id_arr = np.array(ids, dtype=str) if n else np.zeros(0, dtype=str)
    id_rank = np.empty(n, dtype=np.int64)
    id_rank[np.argsort(id_arr, kind="stable")] = np.arange(n)
    ordered, starts = pick_keepers(label, np.arange(n), times, src_rank, id_rank)
    ends = np.r_[starts[1:], len(ordered)].astype(np.int64)
    sizes = ends - starts
    keeper = np.repeat(ordered[starts], sizes) if n else np.zeros(0, np.int64)
    rank = np.arange(len(ordered)) - np.repeat(starts, sizes) if n else np.zeros(0, np.int64)
    xkey = table.column("xkey").to_numpy()
    rep = table.column("rep").to_numpy()
    exact = (xkey[ordered] == xkey[keeper]) & (xkey[ordered] != 0)
    return pa.table(
        {
            "label": pa.array(label[ordered], pa.int64()),
            "pos": pa.array(pos[ordered], pa.int64()),
            "id": pa.array([ids[i] for i in ordered.tolist()], pa.string()),
            "rank": pa.array(rank, pa.int64()),
            "size": pa.array(np.repeat(sizes, sizes), pa.int64()),
            "keeper_pos": pa.array(pos[keeper], pa.int64()),
            "keeper_id": pa.array([ids[i] for i in keeper.tolist()], pa.string()),
            "rep": pa.array(rep[ordered], pa.int64()),
            "keeper_rep": pa.array(rep[keeper], pa.int64()),
            "exact": pa.array(exact, pa.bool_()),
        }
    )


# ---- output -----------------------------------------------------------------------------

_ALT = '"alternates"'


def kept_jsonl_line(line: str, alternates: list) -> str:
    """A kept JSONL record with its alternates, as the local engine writes it: the raw line
    with ``,"alternates":[...]`` spliced in before the closing brace (the record untouched)."""
    from neardup.io.writers import dumps

    if isinstance(line, bytes):
        line = line.decode("utf-8")  # a kept record parsed, so it is valid UTF-8
    s = line.rstrip()
    if s.endswith("}") and _ALT not in s:
        return s[:-1] + ',"alternates":' + dumps(alternates) + "}"
    obj = json.loads(s)
    obj["alternates"] = alternates
    return dumps(obj)


# SimHash's buckets and verification (their own module; they use round6 and _sets_of above)
from neardup.kernels.simhash import (  # noqa: E402
    block_keys,
    hamming_similarity,
    simhash_candidates,
    simhash_verify,
)
