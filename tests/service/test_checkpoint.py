"""The service's WAL checkpoints run in a thread of their own, not in a request's commit."""
import hashlib
import os
import time

from neardup.index import Index
from neardup.service.writer import FIELDS
from neardup.service.writer import GroupWriter


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
                r[0] for r in con.execute("SELECT id FROM documents WHERE doc IN (SELECT doc FROM pending_texts)")]
        finally:
            w.close()
