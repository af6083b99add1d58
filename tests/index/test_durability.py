"""Durability: all-or-nothing adds under SIGKILL, the writer lock, corrupt and truncated files."""

import os
import random
import signal
import subprocess
import sys
import time

import ix_helpers as h
import pytest

import neardup
from neardup.index import Index, IndexCorruptError, IndexLockedError


def _consistent(d):
    """The index opens, passes its full check, and its clusters agree with its documents."""
    with Index.open(d) as ix:
        ix.check()
        con = ix._conn()
        sizes = dict(con.execute("SELECT cluster, COUNT(*) FROM documents GROUP BY cluster").fetchall())
        rows = con.execute("SELECT cluster, size, keeper FROM clusters WHERE size > 0").fetchall()
        assert {c: s for c, s, _ in rows} == sizes
        for c, _, k in rows:
            assert con.execute("SELECT cluster FROM documents WHERE doc = ?", (k,)).fetchone()[0] == c
        ids = {r[0] for r in con.execute("SELECT id FROM documents")}
        return ids, list(ix.clusters())


def test_sigkill_during_add_leaves_batch_wholly_in_or_out(tmp_path):
    docs = h.synth(originals=2400, copies=900, bridges=20, words=150, seed=7)
    batches = [docs[i : i + 700] for i in range(0, len(docs), 700)]
    files = [h.write_jsonl(tmp_path / f"b{i}.jsonl", b) for i, b in enumerate(batches)]
    d = str(tmp_path / "ix")
    Index.create(d).close()
    rng = random.Random(1234)
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "neardup.cli", "index", "add", d]
    # how long one add takes (including interpreter start), on a throwaway copy
    t0 = time.perf_counter()
    Index.create(str(tmp_path / "probe")).close()
    subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", "add", str(tmp_path / "probe"), files[0]],
        check=True,
        capture_output=True,
    )
    full = time.perf_counter() - t0
    inside: list[int] = []
    b = 0
    kills = 0
    outcomes = {"in": 0, "out": 0}
    while b < len(batches) and kills < 14:
        tuning = ["--segment-min", rng.choice(["100", "100000"])]  # segment file or level 0
        before, _ = _consistent(d)
        p = subprocess.Popen(cmd + [files[b]] + tuning, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, full * 1.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        kills += 1
        after, _ = _consistent(d)
        ids = {x["id"] for x in batches[b]}
        if after == before:
            outcomes["out"] += 1
        else:
            assert after == before | ids, "a batch was half inserted"
            outcomes["in"] += 1
            inside.append(b)
            b += 1
    # finish the remaining batches normally; the next writer cleans what killed ones left behind
    for rest in range(b, len(batches)):
        subprocess.run(cmd + [files[rest]], check=True, capture_output=True, env=env)
        inside.append(rest)
    ids, rows = _consistent(d)
    assert ids == {x["id"] for x in docs}
    assert not [f for f in os.listdir(d) if f.endswith(".tmp") or ".tmp-" in f]
    ref = neardup.dedup(docs, None)
    assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
    assert outcomes["out"] >= 1  # at least some kills landed before the commit


def test_one_writer_at_a_time_readers_not_blocked(tmp_path, corpus):
    d = tmp_path / "ix"
    with Index.create(d) as w:
        w.add(corpus[:50])  # takes the writer lock
        with Index.open(d) as other:
            with pytest.raises(IndexLockedError, match="index is locked"):
                other.add(corpus[50:60])
            with pytest.raises(IndexLockedError):
                other.remove([corpus[0]["id"]])
            # reading works while the writer holds the lock
            assert other.stats()["documents"] == 50
            assert other.query(corpus[0]["text"])[0].closest == corpus[0]["id"]
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "index",
                "add",
                str(d),
                h.write_jsonl(tmp_path / "x.jsonl", corpus[60:70]),
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 6 and "index is locked" in r.stderr
        r = subprocess.run(
            [sys.executable, "-m", "neardup.cli", "index", "stats", str(d)], capture_output=True, text=True
        )
        assert r.returncode == 0
    with Index.open(d) as again:  # released on close
        again.add(corpus[60:70])


def _make(tmp_path, corpus, monkeypatch):
    d = tmp_path / "ix"
    with Index.create(d, segment_min=10) as ix:
        ix.add(corpus[:100])
    seg = next(f for f in os.listdir(d) if f.startswith("seg-"))
    return d, d / seg, d / "texts-000001.dat"


def _flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))


def test_corrupt_segment_is_reported(tmp_path, corpus, monkeypatch):
    d, seg, _ = _make(tmp_path, corpus, monkeypatch)
    _flip(seg, os.path.getsize(seg) // 2)
    with Index.open(d) as ix:
        with pytest.raises(IndexCorruptError, match="checksum"):
            ix.query(corpus[0]["text"])
        with pytest.raises(IndexCorruptError):
            ix.add(corpus[100:110])
    from neardup.cli import main

    assert main(["index", "check", str(d)]) == 7


def test_truncated_or_missing_segment_is_reported(tmp_path, corpus, monkeypatch):
    d, seg, _ = _make(tmp_path, corpus, monkeypatch)
    data = seg.read_bytes()
    seg.write_bytes(data[:-100])
    with pytest.raises(IndexCorruptError, match="truncated"):
        Index.open(d)
    seg.unlink()
    with pytest.raises(IndexCorruptError, match="missing"):
        Index.open(d)


def test_corrupt_or_truncated_text_is_reported(tmp_path, corpus, monkeypatch):
    d, _, texts = _make(tmp_path, corpus, monkeypatch)
    _flip(texts, 10)
    with Index.open(d) as ix:
        with pytest.raises(IndexCorruptError, match="checksum"):
            ix.get_document(corpus[0]["id"])
        with pytest.raises(IndexCorruptError):
            ix.check()
        # a near-duplicate of it needs its text for verification (read in bulk): reported,
        # naming the document, not used
        with pytest.raises(IndexCorruptError, match=f"text of {corpus[0]['id']!r} fails its checksum"):
            ix.query(corpus[0]["text"] + " extra words here")
    data = texts.read_bytes()
    texts.write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexCorruptError, match="truncated"):
        Index.open(d)


def test_corrupt_database_is_reported(tmp_path, corpus, monkeypatch):
    d, _, _ = _make(tmp_path, corpus, monkeypatch)
    db = d / "index.sqlite"
    with open(db, "r+b") as f:
        f.write(b"this is not sqlite at all")
    with pytest.raises(IndexCorruptError):
        Index.open(d)


def test_failed_large_add_leaves_only_garbage_past_the_committed_text(tmp_path, monkeypatch):
    """A large add writes its texts (in a background thread) while it is read and planned; when
    the add then fails (an id already indexed, found while reading; or the plan), those bytes
    belong to nothing and the next add overwrites them."""
    from neardup.index import DuplicateIdError
    from neardup.index.append import BACKGROUND_MIN

    docs = h.synth(originals=BACKGROUND_MIN + 300, copies=100, bridges=0, words=60, seed=3)
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add(docs[:50])
        committed = ix._last_text_file(ix._conn())[2]
        bad = docs[50 : 50 + BACKGROUND_MIN + 10] + [docs[0]]  # the last id is already indexed
        with pytest.raises(DuplicateIdError):
            ix.add(bad)
        assert ix._last_text_file(ix._conn())[2] == committed
        assert os.path.getsize(d / "texts-000001.dat") > committed  # garbage past the committed length

        def failing_plan(*a, **k):
            raise RuntimeError("the plan failed")

        monkeypatch.setattr(ix, "_plan", failing_plan)
        with pytest.raises(RuntimeError, match="the plan failed"):
            ix.add(docs[50 : 50 + BACKGROUND_MIN + 10])
        monkeypatch.undo()
        assert ix._last_text_file(ix._conn())[2] == committed
        assert os.path.getsize(d / "texts-000001.dat") > committed  # the garbage was written
        ix.add(docs[50:])
        ix.check()
        assert ix.get_document(docs[-1]["id"])["text"] == docs[-1]["text"]
    _consistent(d)
