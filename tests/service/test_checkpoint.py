"""The service's WAL checkpoints run in a thread of their own, not in a request's commit."""

import hashlib
import os
import time

from neardup.index import Index
from neardup.service.writer import FIELDS, GroupWriter


def _digest(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_commits_reach_the_database_file_from_the_checkpoint_thread(index_dir, rain):
    db = os.path.join(index_dir, "index.sqlite")
    with Index.open(index_dir) as ix:
        w = GroupWriter(ix, FIELDS)
        try:
            before = _digest(db)
            w.add([rain[0]], timeout=30)
            # the writer connection no longer checkpoints on commit ...
            assert ix._writer().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
            assert w.checkpointer is not None
            # ... yet the committed pages reach the database file, without another request
            deadline = time.monotonic() + 10
            while _digest(db) == before and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _digest(db) != before
            for r in rain[1:4]:
                w.add([r], timeout=30)
        finally:
            w.close()
        assert w.checkpointer is None
        assert ix.stats()["documents"] == 4
    with Index.open(index_dir) as ix:  # and everything is there after a reopen
        assert [ix.get_document(r["id"], text=False)["id"] for r in rain[:4]] == [r["id"] for r in rain[:4]]


def test_the_checkpoint_thread_fsyncs_the_text_log_for_pending_texts(index_dir, rain):
    # single-article adds keep their texts in pending_texts until the log is fsynced
    # (index/pending.py): the checkpoint thread does that, and the next commit drops the rows
    with Index.open(index_dir) as ix:
        w = GroupWriter(ix, FIELDS)
        try:
            w.add([rain[0]], timeout=30)
            con = ix._conn()
            assert con.execute("SELECT COUNT(*) FROM pending_texts").fetchone()[0] == 1
            deadline = time.monotonic() + 10
            while ix._pending.synced_doc < 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert ix._pending.synced_doc >= 0  # fsynced by the checkpoint thread, no request needed
            w.add([rain[1]], timeout=30)
            left = [r[0] for r in con.execute("SELECT doc FROM pending_texts")]
            assert len(left) <= 1 and rain[0]["id"] not in [
                r[0] for r in con.execute("SELECT id FROM documents WHERE doc IN (SELECT doc FROM pending_texts)")
            ]
        finally:
            w.close()


def test_the_wal_restarts_under_a_steady_stream_of_commits(index_dir, monkeypatch):
    """Commits back to back: a PASSIVE round alone never copies the whole WAL (commits land
    while it runs), so the WAL would grow without bound; once it passes wal_restart_bytes a
    round catches up under the writer's lock and the next commit starts the WAL over."""
    import random

    rng = random.Random(4)
    vocab = [f"w{i}" for i in range(3000)]
    with Index.open(index_dir) as ix:
        w = GroupWriter(ix, FIELDS, wal_restart_bytes=64 << 10)
        try:
            n, t_end = 0, time.monotonic() + 4
            while time.monotonic() < t_end or w.checkpointer.catch_ups < 2:
                w.add([{"id": f"s{n}", "text": " ".join(rng.choices(vocab, k=80))}], timeout=30)
                n += 1
                assert n < 20_000, "no catch-up round in 20,000 commits"
            frames = ix._writer().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
            written = int(ix._writer().execute("PRAGMA page_size").fetchone()[0]) * n  # >= a page a commit
        finally:
            w.close()
        # the WAL was started over: it holds far fewer frames than the commits wrote (its file
        # keeps its high-water size, about the limit plus one round's commits)
        assert frames * 4096 < written / 2, (frames, n)
        assert ix.stats()["documents"] == n
