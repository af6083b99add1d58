"""Background folds of level 0 (index/fold.py): the segment is built without the writer lock and
listed in one short transaction. They change where postings live, never an answer."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import ix_helpers as h
import pytest

from neardup.index import Index, fold

#: folds early and often: level 0 of 50 documents at most (100 before the inline backstop)
FOLDING = {"l0_max": 50, "l0_fold_at": 20, "background_fold": True}


def _segments(d):
    return sorted(f for f in os.listdir(d) if f.startswith("seg-"))


def _listed(ix):
    return [r[0] for r in ix._conn().execute("SELECT file FROM segments ORDER BY seg")]


def _level0(ix):
    return [r[0] for r in ix._conn().execute("SELECT doc FROM level0 ORDER BY doc")]


def _verdicts(vs):
    return [v.as_dict() for v in vs]


def _same_after_reopen(d, ref, probes) -> None:
    """Index `d`, opened again from disk, passes check() and answers `probes` as `ref` does."""
    with Index.open(d) as again, Index.open(ref) as r:
        again.check()
        assert _verdicts(again.query(probes)) == _verdicts(r.query(probes))


def test_background_folds_give_the_same_answers(tmp_path, corpus):
    """Adds, removes and queries, interleaved, on an index that never folds and on one that
    folds in the background all the time: the same verdicts, clusters and query answers."""
    plain = Index.create(tmp_path / "plain", prefer_source=["agency"])
    Index.create(tmp_path / "bg", prefer_source=["agency"]).close()
    bg = Index.open(tmp_path / "bg", **FOLDING)
    rng = random.Random(5)
    docs = list(corpus)
    probes = [d["text"] for d in rng.sample(docs, 25)]
    s, step, removed = 0, 0, []
    try:
        for batch, s in h.uneven_batches(docs, rng, 1, 14):
            assert _verdicts(bg.add(batch)) == _verdicts(plain.add(batch))
            step += 1
            if step % 9 == 0:  # a removal, sometimes of a document a running fold is reading
                victim = rng.choice([d["id"] for d in docs[:s] if d["id"] not in removed])
                removed.append(victim)
                assert bg.remove([victim]) == plain.remove([victim]) == 1
            if step % 5 == 0:
                assert _verdicts(bg.query(probes)) == _verdicts(plain.query(probes))
        bg._folder.wait()
        assert bg._folder.errors == 0, bg._folder.last_error
        assert bg._folder.folds >= 5
        # merged as they go (test_tiers.py): fewer segments than folds, none unlisted on disk
        assert 1 <= len(_listed(bg)) < bg._folder.folds and len(_level0(bg)) < 100
        assert _segments(bg.directory) == sorted(_listed(bg))
        assert len(_listed(plain)) == 0  # every posting of the plain index is in level 0
        assert h.cluster_sets(bg.clusters()) == h.cluster_sets(plain.clusters())
        assert h.member_sims(bg.clusters()) == h.member_sims(plain.clusters())
        assert _verdicts(bg.query(probes)) == _verdicts(plain.query(probes))
    finally:
        bg.close()
        plain.close()
    _same_after_reopen(tmp_path / "bg", tmp_path / "plain", probes)  # state from disk


def test_removal_while_the_segment_is_built(tmp_path, corpus):
    """A document removed after the fold read level 0 is listed by the new segment, but its
    tombstone keeps it out of every answer, in this process and after a reopen."""
    d = tmp_path / "ix"
    Index.create(d).close()
    copies = [
        x for x in corpus if x.get("truth", "").startswith("o") and x["id"].startswith("c") and int(x["truth"][1:]) < 40
    ]
    docs = corpus[:40] + [x for x in corpus[40:160] if x not in copies]
    victim = next(x for x in docs[:40] if any(c["truth"] == x["id"] for c in copies))
    probes = [victim["text"]] + [c["text"] for c in copies if c["truth"] == victim["id"]]
    rest = docs[45:] + copies
    with Index.open(d, **FOLDING, segment_min=10_000) as ix, Index.create(tmp_path / "ref") as ref:
        ix.background_fold = False  # folds by hand here (and no inline fold below 50 documents)
        ix.add(docs[:40])
        pf = fold.prepare(ix)
        assert pf is not None and pf.upto == 40
        assert ix.remove([victim["id"]]) == 1
        ix.add(docs[40:45])  # adds go on meanwhile, to level 0
        assert fold.commit(ix, pf)
        seg = ix._segcache.get(pf.name, pf.size, pf.crc)
        victim_doc = docs.index(victim) + 1
        assert victim_doc <= 40 and victim_doc in seg.exact[1]  # listed by the segment ...
        assert victim_doc in ix._state_for(ix._conn()).tombstones  # ... and tombstoned
        assert _level0(ix) == list(range(41, 46))
        ref.add(docs[:40]), ref.remove([victim["id"]]), ref.add(docs[40:45])  # the same, never folded
        before = _verdicts(ix.query(probes))
        assert before == _verdicts(ref.query(probes))
        assert all(v["closest"] != victim["id"] for v in before)
        assert _verdicts(ix.add(rest)) == _verdicts(ref.add(rest))
        assert h.cluster_sets(ix.clusters()) == h.cluster_sets(ref.clusters())
    _same_after_reopen(d, tmp_path / "ref", probes)


@pytest.mark.parametrize("change", ["compact", "inline fold"])
def test_fold_is_dropped_when_the_index_moved_on(tmp_path, corpus, change):
    """A compact or an inline fold (each takes level 0 itself) between build and commit: the
    fold's file is deleted and nothing else changes."""
    d = tmp_path / "ix"
    Index.create(d).close()
    with Index.open(d, segment_min=100) as ix:
        ix.add(corpus[:60])  # level 0
        pf = fold.prepare(ix)
        assert os.path.exists(d / pf.name)
        if change == "compact":
            ix.compact()
        else:
            ix.add(corpus[60:200])  # >= segment_min: a segment, level 0 folded into it
        listed, level0 = _listed(ix), _level0(ix)
        assert level0 == []
        assert not fold.commit(ix, pf)
        assert not os.path.exists(d / pf.name)
        assert (_listed(ix), _level0(ix)) == (listed, level0)
        assert _segments(d) == sorted(listed)
        ix.check()


def test_reader_snapshot_across_a_fold(tmp_path, corpus):
    """A reader (another Index, as another process) inside one read transaction keeps seeing
    the index as it was (the manifest without the new segment, level 0 with its documents),
    and after it the folded index: the same answers either way."""
    d = tmp_path / "ix"
    Index.create(d).close()
    probes = [x["text"] for x in corpus[200:260:3]] + [corpus[5]["text"]]
    with Index.open(d, segment_min=10_000) as w, Index.open(d) as r:
        w.add(corpus[:200])
        expected = _verdicts(r.query(probes))
        conn = r._conn()
        conn.execute("BEGIN")
        try:
            assert conn.execute("SELECT COUNT(*) FROM level0").fetchone()[0] == 200  # the snapshot starts
            assert w.fold()  # committed while the reader's snapshot is open
            st = r._state_for(conn)
            assert st.segments == [] and len(st.l0.docs) == 200
            checked, extras = r._checked([{"id": f"query-{i}", "text": t} for i, t in enumerate(probes)], None, 10**6)
            in_snapshot = [v.as_dict() for v in r._plan(conn, checked, extras).verdicts]
        finally:
            conn.execute("COMMIT")
        assert in_snapshot == expected
        assert _verdicts(r.query(probes)) == expected  # the new generation: segment, empty level 0
        st = r._state_for(conn)
        assert len(st.segments) == 1 and len(st.l0.docs) == 0
        assert _verdicts(w.query(probes)) == expected


def test_backstop_folds_inline_when_background_folds_fall_behind(tmp_path, corpus):
    """With background folds on, an add folds inline only past 2 x l0_max."""
    Index.create(tmp_path / "ix").close()
    with Index.open(tmp_path / "ix", **FOLDING) as ix:
        ix._folder.maybe_start = lambda n: False  # no background fold ever starts
        ix.add(corpus[:90])  # 90 > l0_max 50 but <= 100: still level 0
        assert _listed(ix) == [] and len(_level0(ix)) == 90
        ix.add(corpus[90:101])  # past 100: the inline fold
        assert len(_listed(ix)) == 1 and _level0(ix) == []


def test_segment_written_but_never_listed_is_deleted_by_the_next_writer(tmp_path, corpus):
    """A crash between the segment write and the commit leaves a file the manifest does not
    list: ignored by readers, deleted when the next writer opens the index."""
    d = tmp_path / "ix"
    Index.create(d).close()
    with Index.open(d) as ix:
        ix.add(corpus[:50])
        expected = _verdicts(ix.query([corpus[1]["text"]]))
        pf = fold.prepare(ix)  # and the process "dies" here: never committed
    assert pf.name in _segments(d)
    with Index.open(d) as ix:
        assert _verdicts(ix.query([corpus[1]["text"]])) == expected  # a reader ignores it
        ix.add(corpus[50:51])  # the writer's recovery
        assert _segments(d) == [] and len(_level0(ix)) == 51
        ix.check()


CHILD = textwrap.dedent("""
    import json, sys
    from neardup.index import Index
    d, path, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
    batches = json.load(open(path))
    with Index.open(d, l0_max=10**6, l0_fold_at=1, background_fold=True) as ix:
        print("open", flush=True)
        for b in batches[start:]:
            ix.add(b)          # each add starts a background fold (level 0 > 1 document) ...
            ix.fold()          # ... and a fold in this thread races it
            print("added", flush=True)
""")


def test_sigkill_during_background_folds_leaves_a_consistent_index(tmp_path):
    """A process adding and folding in the background is killed at random moments: the index
    opens, passes its full check, holds whole batches only, and equals an index built from
    those batches by plain adds."""
    from test_durability import _consistent

    docs = h.synth(originals=900, copies=300, bridges=10, words=100, seed=3)
    batches = [docs[i : i + 8] for i in range(0, len(docs), 8)]
    bpath = tmp_path / "batches.json"
    bpath.write_text(__import__("json").dumps(batches))
    d = str(tmp_path / "ix")
    Index.create(d).close()
    rng = random.Random(77)
    done, kills = 0, 0
    while done < len(batches) and kills < 6:
        p = subprocess.Popen(
            [sys.executable, "-c", CHILD, d, str(bpath), str(done)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # The kill is paced by the child's own progress, not by the clock: a fast machine ran the
        # whole job before a fixed 0.4-1.0 s sleep ended (CI, session 8: 2 kills, not 3).
        # A few whole batches, then a random moment inside the next add, fold or background fold.
        for _ in range(1 + min(rng.randint(1, 6), len(batches) - done - 1)):
            if not p.stdout.readline():
                break  # the child ended early: its stderr says why, below
        time.sleep(rng.uniform(0.0, 0.03))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
        err = p.stderr.read()
        p.stdout.close(), p.stderr.close()
        assert p.returncode in (0, -signal.SIGKILL), err  # the child never fails on its own
        ids, _ = _consistent(d)
        done = 0
        while done < len(batches) and all(x["id"] in ids for x in batches[done]):
            done += 1
        assert ids == {x["id"] for b in batches[:done] for x in b}  # whole batches, in order
    assert kills == 6, kills  # the child is always mid-job when the kill lands
    with Index.open(d) as ix:
        ix.add(batches[done]) if done < len(batches) else None  # a writer: recovery runs
        done += done < len(batches)
        listed = set(_listed(ix))
        assert len(listed) >= 1 and set(_segments(d)) == listed  # no orphan segment left
        got = list(ix.clusters())
        probes = [x["text"] for x in docs[::97]]
        answers = _verdicts(ix.query(probes))
    with Index.create(tmp_path / "ref") as ref:
        for b in batches[:done]:
            ref.add(b)
        assert h.cluster_sets(got) == h.cluster_sets(ref.clusters())
        assert h.member_sims(got) == h.member_sims(ref.clusters())
        assert answers == _verdicts(ref.query(probes))


KILLED_AT = textwrap.dedent("""
    import json, os, signal, sys
    from neardup.index import Index, fold
    d, path, phase = sys.argv[1], sys.argv[2], sys.argv[3]
    die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    with Index.open(d, l0_max=10**6) as ix:
        ix.add(json.load(open(path)))  # level 0
        real = fold.write_segment
        if phase == "writing the segment":  # a temporary file half written
            def write(p, postings, **kw):
                with open(p + f".tmp-{os.getpid()}", "wb") as f:
                    f.write(b"NDXSEG01" + bytes(1000))
                    os.fsync(f.fileno())
                die()
            fold.write_segment = write
        elif phase == "segment written":  # complete, renamed and fsynced, not listed
            fold.write_segment = lambda p, postings, **kw: (real(p, postings, **kw), die())
        elif phase == "in the commit":  # manifest row inserted, level 0 deleted, not committed
            ix._bump = die
        elif phase == "after the commit":  # committed, the in-memory state not yet swapped
            ix._segcache.put = die
        ix.fold()
    print("not killed")
""")


def _killed(tmp_path, script: str, docs: list[dict], phase: str) -> str:
    """A new index in tmp_path/ix, `script` run on it with `docs` until it SIGKILLs itself at
    `phase`; checks that the index opens consistent with all of `docs`; returns its path."""
    from test_durability import _consistent

    d = str(tmp_path / "ix")
    Index.create(d).close()
    path = tmp_path / "docs.json"
    path.write_text(__import__("json").dumps(docs))
    r = subprocess.run([sys.executable, "-c", script, d, str(path), phase], capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL, r.stderr
    ids, _ = _consistent(d)
    assert ids == {x["id"] for x in docs}
    return d


@pytest.mark.parametrize("phase", ["writing the segment", "segment written", "in the commit", "after the commit"])
def test_sigkill_at_each_step_of_a_fold(tmp_path, corpus, phase):
    d = _killed(tmp_path, KILLED_AT, corpus[:120], phase)
    with Index.open(d) as ix:
        committed = phase == "after the commit"
        assert len(_listed(ix)) == committed and len(_level0(ix)) == (0 if committed else 120)
        if phase in ("writing the segment", "segment written"):
            assert len([f for f in os.listdir(d) if f.startswith("seg-")]) == 1  # the orphan
        ix.add(corpus[120:130])  # a writer: its recovery deletes what the manifest does not list
        assert _segments(d) == sorted(_listed(ix))
        got = list(ix.clusters())
    with Index.create(tmp_path / "ref") as ref:
        ref.add(corpus[:120])
        ref.add(corpus[120:130])
        assert h.cluster_sets(got) == h.cluster_sets(ref.clusters())


def test_replaced_level0_is_freed_only_once_nobody_reads_it(tmp_path, corpus):
    """The old level 0's map is emptied in slices (not freed in one GIL-holding stretch), and
    only once no reader holds the state it belongs to."""
    with Index.create(tmp_path / "ix") as ix:
        ix.add(corpus[:100])
        held = ix._state_for(ix._conn())  # as a request still reading the old state would
        m = held.l0.map
        n = len(m)
        assert n > 1000 and ix.fold()
        time.sleep(0.3)
        assert len(held.l0.map) == n  # untouched while held
        del held
        deadline = time.monotonic() + 5
        while m and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(m) == 0


def test_a_failed_fold_changes_nothing_and_a_background_failure_is_reported(tmp_path, corpus, monkeypatch, capsys):
    import sqlite3

    d = tmp_path / "ix"
    Index.create(d).close()
    probes = [x["text"] for x in corpus[:60:7]]
    with Index.open(d, segment_min=10_000) as ix:
        ix.add(corpus[:60])
        expected = _verdicts(ix.query(probes))
        pf = fold.prepare(ix)

        def boom(conn, **kw):
            raise sqlite3.OperationalError("disk I/O error")

        ix._bump = boom  # the commit's transaction fails
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
            fold.commit(ix, pf)
        del ix._bump
        assert not os.path.exists(d / pf.name) and _listed(ix) == [] and len(_level0(ix)) == 60
        assert _verdicts(ix.query(probes)) == expected
    with Index.open(d, **FOLDING) as ix:

        def full(path, p, **kw):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(fold, "write_segment", full)
        ix.add(corpus[60:65])  # 65 documents > l0_fold_at: a background fold starts, and fails
        ix._folder.wait()
        assert ix._folder.errors == 1 and "No space left" in ix._folder.last_error
        assert "background fold of level 0 failed" in capsys.readouterr().err
        assert _segments(d) == [] and len(_level0(ix)) == 65  # the add itself went in
        monkeypatch.undo()
        ix.add(corpus[65:70])  # the next commit starts another fold
        ix._folder.wait()
        assert ix._folder.folds == 1 and len(_listed(ix)) == 1 and _level0(ix) == []
        assert _verdicts(ix.query(probes)) == expected


def test_fold_settings_are_checked_and_stored(tmp_path):
    from neardup.errors import InvalidParameterError

    Index.create(tmp_path / "ix").close()
    with pytest.raises(InvalidParameterError, match="l0_fold_at must be a positive integer"):
        Index.open(tmp_path / "ix", l0_fold_at=0)
    with pytest.raises(InvalidParameterError, match="background_fold must be True or False"):
        Index.open(tmp_path / "ix", background_fold="yes")
    with Index.open(tmp_path / "ix", l0_max=1000) as ix:
        assert ix.tuning.fold_at == 500 and not ix.background_fold  # the CLI's default: inline folds
    Index.create(tmp_path / "b", l0_fold_at=7).close()
    with Index.open(tmp_path / "b") as ix:
        assert ix.tuning.fold_at == 7
