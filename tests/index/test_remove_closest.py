"""A removed document's id does not stay behind as another document's ``closest`` match: it
was shown by GET /v1/documents/{id} (a closest match that no longer exists, whose id a
takedown was meant to erase) and stayed in the database file. store.CLOSEST_INDEX."""

import os
import sqlite3

from neardup.index import Index

BASE = "the quick brown fox jumps over the lazy dog near the river bank in the early morning light " * 3


def test_a_remove_clears_the_closest_references_to_what_it_removed(tmp_path):
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add([{"id": "takedown-url-0001", "text": BASE}])
        ix.add([{"id": "b", "text": BASE + " extra words here"}, {"id": "c", "text": BASE + " other words there"}])
        ix.add([{"id": "other", "text": "an unrelated story about the harvest in the northern valleys " * 3}])
        assert [ix.get_document(i, text=False)["closest"] for i in "bc"] == ["takedown-url-0001"] * 2
        assert ix.remove(["takedown-url-0001"]) == 1
        for i in ("b", "c"):
            got = ix.get_document(i, text=False)
            assert got["closest"] is None and got["closest_similarity"] is None, got
        ix._writer().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for name in os.listdir(d):
        with open(d / name, "rb") as f:
            assert b"takedown-url-0001" not in f.read(), name
    # the same id added again is a new document: nothing points at it from before
    with Index.open(d) as ix:
        ix.add([{"id": "takedown-url-0001", "text": "a new text under the old id, about something else " * 4}])
        assert ix.get_document("b", text=False)["closest"] is None


def test_a_writer_open_clears_references_an_earlier_remove_left(tmp_path):
    """An index made before the fix: dangling references, and no documents_closest index. The
    first writer's open makes the index and clears them; references to live documents stay."""
    d = tmp_path / "ix"
    with Index.create(d) as ix:
        ix.add([{"id": "a", "text": BASE}])
        ix.add([{"id": "b", "text": BASE + " extra words here"}, {"id": "c", "text": BASE + " more words"}])
    db = sqlite3.connect(d / "index.sqlite", isolation_level=None)
    db.execute("DROP INDEX documents_closest")
    db.execute("UPDATE documents SET closest = 'gone-long-ago' WHERE id = 'c'")
    db.close()
    with Index.open(d) as ix:
        assert ix.get_document("c", text=False)["closest"] == "gone-long-ago"  # a reader changes nothing
        ix._writer()
        assert ix.get_document("c", text=False)["closest"] is None
        assert ix.get_document("b", text=False)["closest"] == "a"
        assert ix._conn().execute("SELECT 1 FROM sqlite_master WHERE name = 'documents_closest'").fetchone()
        assert ix.check()["texts"] == 3
