"""The add's bulk helpers: column inserts with literals, the Rust posting look-up, lazy verdicts."""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from neardup import _core
from neardup.index.bulk import SMALL, Const, insert_columns
from neardup.index.store import SMALL_QUERY, lookup


def _table(conn, name):
    conn.execute(f"CREATE TABLE {name} (a INTEGER PRIMARY KEY, b TEXT, c REAL, d INTEGER, e BLOB, f REAL, g TEXT)")


@pytest.mark.parametrize("seed,n", [(s, None) for s in range(5)] + [(7, 1), (8, 3), (9, SMALL), (10, SMALL + 1)])
def test_insert_columns_stores_what_executemany_stores(seed, n):
    # n None: a random size (mostly the literal-and-groups path); small n: every value bound
    rng = random.Random(seed)
    n = rng.randrange(0, 400) if n is None else n
    p_null = rng.choice([0.0, 0.3, 1.0])

    def maybe(v):
        return None if rng.random() < p_null else v

    a = list(range(n))
    b = [maybe(f"id-{rng.randrange(10**6)}'\"") for _ in range(n)]
    c = [maybe(rng.random() * 1e9) for _ in range(n)]
    d = [maybe(rng.randrange(-(2**63), 2**63)) for _ in range(n)]
    e = [maybe(rng.randbytes(rng.randrange(0, 9))) for _ in range(n)]
    conn = sqlite3.connect(":memory:")
    _table(conn, "want")
    _table(conn, "got")
    f_const, g_const = 1796019131.073815, None
    conn.executemany(
        "INSERT INTO want VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(a[i], b[i], c[i], d[i], e[i], f_const, g_const) for i in range(n)],
    )
    insert_columns(conn, "got", [a, b, c, d, e, Const(f_const), Const(g_const)], n)
    want = conn.execute("SELECT * FROM want ORDER BY a").fetchall()
    got = conn.execute("SELECT * FROM got ORDER BY a").fetchall()
    assert got == want
    # the literal float is the same double, not a rounded print of it
    if n:
        assert conn.execute("SELECT count(*) FROM got WHERE f = ?", (f_const,)).fetchone()[0] == n


def test_insert_columns_refuses_what_it_cannot_write_as_a_literal():
    with pytest.raises(TypeError):
        Const("a string")
    with pytest.raises(TypeError):
        Const(float("nan"))
    conn = sqlite3.connect(":memory:")
    _table(conn, "t")
    with pytest.raises(ValueError, match="column 1 has 1 values, expected 2"):
        insert_columns(conn, "t", [[1, 2], ["x"], Const(None), Const(None), Const(None), Const(None), Const(None)], 2)


def _naive(arrays, q):
    out = []
    for keys, docs in arrays:
        for i, k in enumerate(q.tolist()):
            for p in np.flatnonzero(keys == k).tolist():
                out.append((i, int(docs[p])))
    return sorted(out)


@pytest.mark.parametrize("seed", range(8))
def test_postings_lookup_finds_every_posting(seed):
    rng = np.random.default_rng(seed)
    span = int(rng.choice([5, 1000, 2**63]))
    arrays = []
    for _ in range(int(rng.integers(1, 4))):
        m = int(rng.integers(0, 300))
        keys = np.sort(rng.integers(0, span, m, dtype=np.uint64))
        arrays.append((keys, rng.integers(0, 2**32, m, dtype=np.uint64).astype(np.uint32)))
    q = rng.integers(0, span, int(rng.integers(5, 200)), dtype=np.uint64)
    qi, d = _core.postings_lookup([k for k, _ in arrays], [d for _, d in arrays], q)
    assert qi.dtype == np.int64 and d.dtype == np.int64
    assert sorted(zip(qi.tolist(), d.tolist())) == _naive(arrays, q)
    # the index's wrapper drops tombstoned documents
    tomb = np.unique(d[: len(d) // 2]) if len(d) else np.zeros(0, np.int64)
    qi2, d2 = lookup(arrays, q, tomb)
    assert sorted(zip(qi2.tolist(), d2.tolist())) == [p for p in _naive(arrays, q) if p[1] not in set(tomb.tolist())]
    # the small path (a single article's few keys, in Rust): the same postings, in order
    small = q[:SMALL_QUERY]
    qi3, d3 = lookup(arrays, small, tomb)
    want = [p for p in _naive(arrays, small) if p[1] not in set(tomb.tolist())]
    assert sorted(zip(qi3.tolist(), d3.tolist())) == want
    held = _core.PostingArrays([k for k, _ in arrays], [d for _, d in arrays])
    assert len(held) == len(arrays)
    qi4, d4 = lookup(arrays, small, tomb, held)
    assert (qi4.tolist(), d4.tolist()) == (qi3.tolist(), d3.tolist())


@pytest.mark.parametrize("seed", range(8))
def test_lookup_bands_equals_a_lookup_per_band(seed):
    """The single article's look-up over every band in one call (segments in Rust, level 0)
    finds what a look-up per band finds (store.lookup plus L0.lookup), tombstones dropped."""
    from neardup.index.store import L0, lookup_bands

    rng = np.random.default_rng(100 + seed)
    span = int(rng.choice([5, 1000, 2**63]))
    bands = int(rng.integers(1, 6))
    per_band = []
    for _ in range(bands):
        arrays = []
        for _ in range(int(rng.integers(0, 4))):
            m = int(rng.integers(0, 200))
            keys = np.sort(rng.integers(0, span, m, dtype=np.uint64))
            arrays.append((keys, rng.integers(0, 5000, m, dtype=np.uint64).astype(np.uint32)))
        per_band.append(arrays)
    handles = [_core.PostingArrays([k for k, _ in a], [d for _, d in a]) for a in per_band]
    l0 = L0()
    for _ in range(int(rng.integers(0, 40))):
        l0.put(int(rng.integers(0, bands)), int(rng.integers(0, span)), int(rng.integers(5000, 6000)))
    q = rng.integers(0, span, (bands, int(rng.integers(1, SMALL_QUERY + 1))), dtype=np.uint64)
    hits = [d for a in per_band for _, d in a] + [np.array(sorted(l0.docs), np.int64)]
    alld = np.concatenate([np.asarray(h, np.int64) for h in hits]) if hits else np.zeros(0, np.int64)
    tomb = np.unique(alld[::3]) if len(alld) and seed % 2 else np.zeros(0, np.int64)
    want = []
    for j in range(bands):
        a, b = lookup(per_band[j], q[j], tomb, handles[j]), l0.lookup(j, q[j], tomb)
        want += list(zip(a[0].tolist(), a[1].tolist())) + list(zip(b[0].tolist(), b[1].tolist()))
    qi, d = lookup_bands(handles, q, tomb, l0)
    assert qi.dtype == np.int64 and d.dtype == np.int64
    assert sorted(zip(qi.tolist(), d.tolist())) == sorted(want)
    assert not set(d.tolist()) & set(tomb.tolist())


def test_lookup_bands_checks_its_arguments():
    from neardup.errors import InvalidParameterError

    h = _core.PostingArrays([np.array([1, 2], np.uint64)], [np.array([7, 8], np.uint32)])
    with pytest.raises(InvalidParameterError, match="3 rows of queries but 1 posting handles"):
        _core.lookup_bands([h], np.zeros((3, 1), np.uint64))
    rows, qi, d = _core.lookup_bands([h, h], np.array([[2], [9]], np.uint64))
    assert (rows.tolist(), qi.tolist(), d.tolist()) == ([0], [0], [8])


def test_postings_lookup_checks_its_arguments():
    from neardup.errors import InvalidParameterError

    k = np.array([1, 2], np.uint64)
    with pytest.raises(InvalidParameterError, match="1 key arrays but 0 document arrays"):
        _core.postings_lookup([k], [], k)
    with pytest.raises(InvalidParameterError, match="keys\\[0\\] has 2 entries but docs\\[0\\] has 1"):
        _core.postings_lookup([k], [np.array([1], np.uint32)], k)


def test_verdicts_are_a_sequence_built_on_demand(tmp_path):
    import ix_helpers as h

    from neardup.index import Index, Verdict

    docs = h.synth(originals=60, copies=30, bridges=0, words=60, seed=5)
    with Index.create(tmp_path / "ix") as ix:
        v = ix.add(docs)
        listed = list(v)
        assert len(v) == len(listed) == len(docs)
        assert all(isinstance(x, Verdict) and x.inserted for x in listed)
        assert [x.id for x in listed] == [d["id"] for d in docs]
        assert v.duplicates == sum(x.status == "duplicate" for x in listed) > 0
        assert v[-1] == listed[-1] and v[3:7] == listed[3:7] and v[::-1] == listed[::-1]
        with pytest.raises(IndexError):
            v[len(docs)]
        # a cluster's keeper and alternates are the same whichever member is asked first
        for x in listed:
            if x.status == "duplicate":
                members = [y for y in listed if y.cluster == x.cluster]
                keeper = [y.id for y in members if y.is_keeper]
                assert keeper == [x.keeper] or (not keeper and x.keeper not in [y.id for y in members])
                assert x.keeper not in x.alternates and x.id in x.alternates + [x.keeper]
        # a dry run: the same texts again match exactly, and nothing is inserted
        q = ix.query([d["text"] for d in docs[:5]])
        assert [(x.inserted, x.status, x.match) for x in q] == [(False, "duplicate", "exact")] * 5
        assert ix.stats()["documents"] == len(docs)
        st = ix.stats()
        assert ix.totals() == {"documents": st["documents"], "clusters": st["clusters"]} and st["clusters"] > 0


def test_insert_columns_groups_of_one_row():
    # NULL patterns that one row each has (a group of one is gathered differently)
    n = SMALL + 4
    conn = sqlite3.connect(":memory:")
    _table(conn, "want")
    _table(conn, "got")
    b = ["x"] * n
    c = [1.5] * n
    b[3] = None  # the only row with b NULL
    c[5] = None  # the only row with c NULL
    b[7] = c[7] = None  # the only row with both
    cols = [list(range(n)), b, c, list(range(n, 2 * n)), [None] * n, [0.25] * n, ["g"] * n]
    conn.executemany("INSERT INTO want VALUES (?, ?, ?, ?, ?, ?, ?)", list(zip(*cols)))
    insert_columns(conn, "got", cols, n)
    assert (
        conn.execute("SELECT * FROM got ORDER BY a").fetchall()
        == conn.execute("SELECT * FROM want ORDER BY a").fetchall()
    )
