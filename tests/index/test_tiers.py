"""Size-tiered merging by background folds (index/fold.py): a fold also merges the manifest's
small trailing segments into its own, so the number of segments stays logarithmic in the
number of documents. It changes where postings live, never an answer."""

import math
import os
import random
import sqlite3
import textwrap

import ix_helpers as h
import pytest
from test_fold import _killed, _level0, _listed, _same_after_reopen, _segments, _verdicts

from neardup.index import Index, fold

F = fold.MERGE_FACTOR


def _docs_column(ix):
    return [r[0] for r in ix._conn().execute("SELECT docs FROM segments ORDER BY seg")]


def _listed_now(d):
    """The manifest as last committed, whatever snapshot this thread's connections are in."""
    conn = sqlite3.connect(os.path.join(d, "index.sqlite"))
    try:
        return [r[0] for r in conn.execute("SELECT file FROM segments ORDER BY seg")]
    finally:
        conn.close()


def _members(ix, name):
    """The documents a segment lists (band 0 holds one posting per document)."""
    return set(
        ix._segcache.get(
            *ix._conn().execute("SELECT file, bytes, crc FROM segments WHERE file = ?", (name,)).fetchone()
        )
        .bands[0][1]
        .tolist()
    )


def _assert_tiered(ix, smallest_fold):
    """Each segment holds more than F times the documents of the next one (all were made by
    background folds), hence at most 1 + log_F(N / m) segments; no file but the listed ones."""
    docs = _docs_column(ix)
    assert all(a > F * b for a, b in zip(docs, docs[1:])), docs
    assert len(docs) <= 1 + math.log(sum(docs) / smallest_fold, F), docs
    assert _segments(ix.directory) == sorted(_listed(ix))


def test_tail_to_merge():
    assert fold.tail_to_merge([], 10) == 0
    assert fold.tail_to_merge([100], 10) == 0  # 100 > 2 x 10: left alone
    assert fold.tail_to_merge([100], 50) == 1
    assert fold.tail_to_merge([1000, 40, 20], 10) == 2  # 20 <= 20, then 40 <= 60; 1000 > 140
    assert fold.tail_to_merge([1000, 400, 20], 10) == 1  # 400 > 2 x 30
    assert fold.tail_to_merge([70, 30, 10], 10) == 3
    assert fold.tail_to_merge([5, 5, 5], 5, factor=0) == 0  # no merging
    # the cap (Tuning.merge_max): the merged segment stays within it
    assert fold.tail_to_merge([70, 30, 10], 10, cap=50) == 2  # 10 + 10 + 30; + 70 would be 120
    assert fold.tail_to_merge([70, 30, 10], 10, cap=49) == 1
    assert fold.tail_to_merge([70, 30, 10], 10, cap=19) == 0
    assert fold.tail_to_merge([70, 30, 10], 10, cap=120) == 3


def test_merges_stop_at_merge_max(tmp_path):
    """With a cap, folds never merge into a segment over ``merge_max`` documents (only level 0
    itself can make one: a fold of more than the cap), the segments past the capped ones stay
    tiered, and every answer equals that of an index that never folds."""
    docs = h.synth(originals=500, copies=200, bridges=6, words=60, seed=5)
    rng = random.Random(8)
    probes = [d["text"] for d in rng.sample(docs, 15)]
    cap = 120
    plain = Index.create(tmp_path / "plain")
    Index.create(tmp_path / "capped", merge_max=cap).close()
    ix = Index.open(tmp_path / "capped", l0_max=10**6, l0_fold_at=10**6, background_fold=True)
    assert ix.tuning.merge_max == cap  # stored by create, read back by open
    s, merged_any = 0, False
    try:
        for batch, s in h.uneven_batches(docs, rng, 5, 20):  # noqa: B007 - s (documents so far) read after the loop
            assert _verdicts(ix.add(batch)) == _verdicts(plain.add(batch))
            before = set(_listed(ix))
            assert ix.fold()
            merged_any |= bool(before - set(_listed(ix)))
            sizes = _docs_column(ix)
            assert max(sizes) <= cap, sizes
        assert merged_any and len(_docs_column(ix)) >= s // cap  # capped: about N / cap of them
        assert _verdicts(ix.query(probes)) == _verdicts(plain.query(probes))
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(plain.clusters())
    finally:
        ix.close()
        plain.close()
    # a process may override the stored cap for itself; the stored one stays
    with Index.open(tmp_path / "capped", merge_max=10**6) as ix:
        assert ix.tuning.merge_max == 10**6
    with Index.open(tmp_path / "capped") as ix:
        assert ix.tuning.merge_max == cap


def test_many_folds_stay_logarithmic_and_give_the_same_answers(tmp_path):
    """~110 folds of uneven size, with removes between them: after every fold the segments are
    tiered (so few), no document has been rewritten more than log_(1+1/F)(N / m) times, and
    every verdict, cluster and similarity equals that of an index that never folds."""
    docs = h.synth(originals=700, copies=300, bridges=8, words=60, seed=11)
    rng = random.Random(3)
    probes = [d["text"] for d in rng.sample(docs, 20)]
    plain = Index.create(tmp_path / "plain")
    Index.create(tmp_path / "tiered").close()
    # background_fold with a huge l0_max: no add ever folds inline, every fold is by hand here
    ix = Index.open(tmp_path / "tiered", l0_max=10**6, l0_fold_at=10**6, background_fold=True)
    rewrites: dict[int, int] = {}
    smallest, folds, merges, s, removed = 10**9, 0, 0, 0, set()
    try:
        for batch, s in h.uneven_batches(docs, rng, 3, 15):
            assert _verdicts(ix.add(batch)) == _verdicts(plain.add(batch))
            if rng.random() < 0.15:  # removes between folds: from level 0 or from any segment
                victim = rng.choice([d["id"] for d in docs[:s] if d["id"] not in removed])
                removed.add(victim)
                assert ix.remove([victim]) == plain.remove([victim]) == 1
            before = {name: _members(ix, name) for name in _listed(ix)}
            n0 = len(_level0(ix))
            assert ix.fold()
            folds += 1
            smallest = min(smallest, n0)
            gone = set(before) - set(_listed(ix))
            merges += bool(gone)
            for name in gone:
                for d in before[name]:
                    rewrites[d] = rewrites.get(d, 0) + 1
            _assert_tiered(ix, smallest)
            if folds % 10 == 0:
                assert _verdicts(ix.query(probes)) == _verdicts(plain.query(probes))
        assert folds >= 100 and merges >= folds // 3
        total = sum(_docs_column(ix))
        assert len(_listed(ix)) <= 1 + math.log(total / smallest, F)  # ~8, where appending made 100+
        # (N: every document added; a merge's segment grows by >= 1 + 1/F, less what it drops)
        assert max(rewrites.values()) <= math.log(s / smallest, 1 + 1 / F)
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(plain.clusters())
        assert h.member_sims(ix.clusters()) == h.member_sims(plain.clusters())
        assert _verdicts(ix.query(probes)) == _verdicts(plain.query(probes))
        rest = [dict(d, id=d["id"] + "-again") for d in docs[::37]]  # later adds against it all
        assert _verdicts(ix.add(rest)) == _verdicts(plain.add(rest))
    finally:
        ix.close()
        plain.close()
    _same_after_reopen(tmp_path / "tiered", tmp_path / "plain", probes)


def _index_with_segments(d, docs, sizes, steps=None):
    """An index whose segments were made by folds of these sizes (level 0 then empty)."""
    Index.create(d).close()
    ix = Index.open(d, l0_max=10**6, l0_fold_at=10**6, background_fold=True, steps=steps)
    s = 0
    for n in sizes:
        ix.add(docs[s : s + n])
        s += n
        assert fold.fold_once(ix)
    return ix, s


def test_removes_while_a_merge_fold_is_built(tmp_path, corpus):
    """A document removed before the fold's snapshot is dropped from the merged segment, and its
    tombstone with it; one removed after it, from a merged segment or from level 0, is still
    listed by the new segment but hidden by its tombstone, as for a plain fold."""
    # segments of 100 and 15 documents: a fold of 20 merges the 15 (<= 2 x 20), not the 100
    ix, s = _index_with_segments(tmp_path / "ix", corpus, [100, 15])
    ref = Index.create(tmp_path / "ref")
    try:
        ref.add(corpus[:100]), ref.add(corpus[100:115])
        early = corpus[105]["id"]  # in the 15-document segment
        assert ix.remove([early]) == ref.remove([early]) == 1
        ix.add(corpus[115:135]), ref.add(corpus[115:135])
        pf = fold.prepare(ix)
        assert pf is not None and len(pf.replaces) == 1 and pf.replaces == _listed(ix)[-1:]
        late_seg, late_l0 = corpus[110]["id"], corpus[120]["id"]
        for victim in (late_seg, late_l0):
            assert ix.remove([victim]) == ref.remove([victim]) == 1
        ix.add(corpus[135:140]), ref.add(corpus[135:140])  # adds go on meanwhile, to level 0
        assert fold.commit(ix, pf)
        assert not os.path.exists(tmp_path / "ix" / pf.replaces[0])
        assert len(_listed(ix)) == 2 and _level0(ix) == list(range(136, 141))
        merged = _members(ix, pf.name)
        assert 106 not in merged and {111, 121} <= merged  # doc numbers: position + 1
        # 106's tombstone went with the merge that dropped it (no file lists it); 111 and 121,
        # removed after the fold's snapshot, are still listed by the new segment: kept
        tomb = set(ix._state_for(ix._conn()).tombstones.tolist())
        assert {111, 121} <= tomb and 106 not in tomb
        assert {r[0] for r in ix._conn().execute("SELECT doc FROM tombstones")} == tomb
        probes = [corpus[i]["text"] for i in (105, 110, 120, 3, 130)]
        assert _verdicts(ix.query(probes)) == _verdicts(ref.query(probes))
        rest = corpus[140:260]
        assert _verdicts(ix.add(rest)) == _verdicts(ref.add(rest))
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(ref.clusters())
        assert h.member_sims(ix.clusters()) == h.member_sims(ref.clusters())
    finally:
        ix.close()
        ref.close()
    _same_after_reopen(tmp_path / "ix", tmp_path / "ref", probes)


def test_reader_holding_an_old_snapshot_across_a_merge(tmp_path, corpus):
    """A reader in a snapshot that lists the segments a fold merges away: if it has loaded
    them it keeps answering from them; if not, it meets their deletion and retries on the new
    manifest. In another process (another Index) and in the writer's own process alike."""
    d = tmp_path / "ix"
    w, _ = _index_with_segments(d, corpus, [150, 25, 10])
    probes = [x["text"] for x in corpus[100:260:6]] + [corpus[180]["text"], corpus[5]["text"]]
    try:
        w.add(corpus[185:200])  # level 0: the next fold merges the 25 and 10 segments with it
        expected = _verdicts(w.query(probes))
        old = _listed(w)

        # 1. a reader that loaded every segment in its snapshot keeps it across the merge
        with Index.open(d) as r:
            conn = r._conn()
            conn.execute("BEGIN")
            try:
                st = r._state_for(conn)
                r._arrays(st)
                assert w.fold() and len(_listed(w)) == 2
                assert not os.path.exists(d / old[-1])  # deleted under the reader
                checked, extras = r._checked(
                    [{"id": f"query-{i}", "text": t} for i, t in enumerate(probes)], None, 10**6
                )
                assert [v.as_dict() for v in r._plan(conn, checked, extras).verdicts] == expected
                assert r._state_for(conn).segments == st.segments
            finally:
                conn.execute("COMMIT")
            assert _verdicts(r.query(probes)) == expected  # then the new manifest
            assert [s[0] for s in r._state_for(r._conn()).segments] == _listed(w)

        # 2. readers whose snapshot listed segments they had not loaded when a fold deleted
        # them: another Index with an empty cache, and the writer itself (its cache forgets them)
        for k, reader in enumerate(("another process", "the writer's process")):
            w.add(corpus[200 + 20 * k :][:10])
            assert fold.commit(w, fold.prepare(w, factor=0))  # a small last segment, not merged
            w.add(corpus[210 + 20 * k :][:10])  # the next fold merges it
            expected = _verdicts(w.query(probes))
            r = Index.open(d) if reader == "another process" else w
            calls, replaced = [], []
            real = r._state_for

            def state_then_fold(conn, real=real, calls=calls, replaced=replaced):
                st = real(conn)
                calls.append([s[0] for s in st.segments])
                if len(calls) == 1:  # the snapshot is taken: a fold merges and deletes files now
                    before = _listed_now(d)  # (w's own connection is inside the snapshot)
                    assert w.fold()
                    replaced.extend(set(before) - set(_listed_now(d)))
                return st

            r._state_for = state_then_fold
            try:
                assert _verdicts(r.query(probes)) == expected
            finally:
                del r._state_for
                if r is not w:
                    r.close()
            assert replaced and set(replaced) <= set(calls[0])  # the snapshot listed them ...
            assert len(calls) == 2 and not set(replaced) & set(calls[1])  # ... so it read again
    finally:
        w.close()


KILLED_IN_MERGE = textwrap.dedent("""
    import json, os, signal, sys
    from neardup.index import Index, fold
    d, path, phase = sys.argv[1], sys.argv[2], sys.argv[3]
    docs = json.load(open(path))
    die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    with Index.open(d, l0_max=10**6, l0_fold_at=10**6, background_fold=True) as ix:
        for s, e in ((0, 150), (150, 175), (175, 185)):  # three segments: 150, 25, 10 (none merged)
            ix.add(docs[s:e])
            ix.fold()
        ix.add(docs[185:200])  # the next fold merges the last two into its own: 150, 50
        real = fold.write_segment
        if phase == "segment written":  # merged segment complete, renamed and fsynced, not listed
            fold.write_segment = lambda p, postings, **kw: (real(p, postings, **kw), die())
        elif phase == "in the commit":  # manifest rows swapped, level 0 deleted, not committed
            ix._bump = die
        elif phase == "after the commit":  # committed, the merged files not yet deleted
            fold._retire = die
        elif phase == "deleting the merged files":  # one of the two deleted
            n = []
            real_unlink = fold._unlink
            fold._unlink = lambda p: (real_unlink(p), n.append(1), len(n) == 1 and die())
        ix.fold()
    print("not killed")
""")


@pytest.mark.parametrize("phase", ["segment written", "in the commit", "after the commit", "deleting the merged files"])
def test_sigkill_at_each_step_of_a_merge_fold(tmp_path, corpus, phase):
    """Killed at each step of a fold that merges segments: the index opens consistent, with
    either the old manifest (three segments, level 0 full) or the new one (two); the next
    writer deletes every file the manifest does not list; answers equal a never-folded index."""
    d = _killed(tmp_path, KILLED_IN_MERGE, corpus[:200], phase)
    committed = phase in ("after the commit", "deleting the merged files")
    with Index.open(d) as ix:
        listed = _listed(ix)
        assert len(listed) == (2 if committed else 3) and len(_level0(ix)) == (0 if committed else 15)
        leftovers = set(_segments(d)) - set(listed)
        assert (
            len(leftovers)
            == {"segment written": 1, "in the commit": 1, "after the commit": 2, "deleting the merged files": 1}[phase]
        )
        ix.add(corpus[200:210])  # a writer: its recovery deletes what the manifest does not list
        assert _segments(d) == sorted(_listed(ix))
        got = list(ix.clusters())
        probes = [x["text"] for x in corpus[:300:9]]
        answers = _verdicts(ix.query(probes))
    with Index.create(tmp_path / "ref") as ref:
        ref.add(corpus[:200])
        ref.add(corpus[200:210])
        assert h.cluster_sets(got) == h.cluster_sets(ref.clusters())
        assert h.member_sims(got) == h.member_sims(ref.clusters())
        assert answers == _verdicts(ref.query(probes))
