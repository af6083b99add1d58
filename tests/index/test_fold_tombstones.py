"""A served index that evicts by age keeps a bounded number of tombstones: a merging fold
deletes the tombstones of the documents it dropped (fold.py). Until 2026-12-01 they stayed until
a compact, which a served index never gets: every removed document's tombstone stayed in
memory, and each remove copied them all. The invariant that matters is checked after every
step: every document a segment or level 0 lists and the index no longer holds has a tombstone."""

from test_fold import _verdicts

from neardup.index import Index, fold


def _listed(ix) -> set:
    conn = ix._conn()
    st = ix._state_for(conn)
    out = set()
    for name, size, crc in st.segments:
        p = ix._segcache.get(name, size, crc)
        out.update(p.exact[1].tolist())
        if p.bands:
            out.update(p.bands[0][1].tolist())
    out.update(r[0] for r in conn.execute("SELECT doc FROM level0"))
    return out


def _check(ix) -> int:
    conn = ix._conn()
    live = {r[0] for r in conn.execute("SELECT doc FROM documents")}
    tomb = {r[0] for r in conn.execute("SELECT doc FROM tombstones")}
    assert set(ix._state_for(conn).tombstones.tolist()) == tomb
    listed = _listed(ix)
    assert listed - live <= tomb, sorted(listed - live - tomb)[:5]  # nothing removed comes back
    return len(tomb)


def test_eviction_by_age_keeps_the_tombstones_bounded(tmp_path, corpus):
    d = tmp_path / "ix"
    Index.create(d).close()
    ix = Index.open(d, l0_max=10**6, l0_fold_at=10**6, background_fold=True)
    ref = Index.create(tmp_path / "ref")
    day, keep_days = 40, 3
    counts = []
    try:
        for k in range(12):
            batch = corpus[k * day : (k + 1) * day]
            assert _verdicts(ix.add(batch)) == _verdicts(ref.add(batch))
            assert fold.fold_once(ix)
            if k >= keep_days:  # the day that fell out of the window
                old = [x["id"] for x in corpus[(k - keep_days) * day : (k - keep_days + 1) * day]]
                assert ix.remove(old) == ref.remove(old) == day
            counts.append(_check(ix))
        probes = [x["text"] for x in corpus[::7]]
        assert _verdicts(ix.query(probes)) == _verdicts(ref.query(probes))
    finally:
        ix.close()
        ref.close()
    removed = day * (12 - keep_days)
    # without the pruning every removed document kept its tombstone: 360 here
    assert counts[-1] < removed / 2 and max(counts[-4:]) <= 4 * keep_days * day, counts
    with Index.open(d) as again:  # a fresh process's state: the same
        assert _check(again) == counts[-1]
        assert again.check()["texts"] == keep_days * day
