"""The service's WAL checkpoints run in a thread of their own, not in a request's commit."""
import hashlib
import os
import time

from neardup.index import Index
from neardup.service.app import FIELDS
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
