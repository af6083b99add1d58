"""The group writer checks each request's ids once: per request, under its lock (a used id
refuses that request only), and the add it then makes does not look them up again."""

from __future__ import annotations

import sqlite3
from concurrent.futures import Future

import pytest

from neardup.errors import DuplicateIdError
from neardup.index import Index, counters
from neardup.service.writer import FIELDS, GroupWriter


def _group(gw: GroupWriter, reqs: list[list[dict]]) -> list[Future]:
    futs = [Future() for _ in reqs]
    gw.write_group(list(zip(reqs, futs)))
    return futs


def test_a_group_looks_its_ids_up_once(tmp_path, rain):
    with Index.create(tmp_path / "ix") as ix:
        gw = GroupWriter(ix, FIELDS)
        try:
            _group(gw, [[rain[0]]])[0].result()
            seen: list[str] = []
            ix._writer().set_trace_callback(seen.append)
            futs = _group(gw, [[rain[1]], [rain[2], rain[3]], [rain[0]]])
            ix._writer().set_trace_callback(None)
            assert [f.exception() is None for f in futs] == [True, True, False]
            assert isinstance(futs[2].exception(), DuplicateIdError)
            lookups = [q for q in seen if q.startswith("SELECT id FROM documents")]
            assert len(lookups) == 1, lookups
        finally:
            gw.close()


def test_an_id_that_slips_past_the_check_refuses_the_whole_add(tmp_path, rain):
    """Were an id present despite the caller's check (a bug: the lock that keeps other adds out
    not held), the UNIQUE constraint refuses the add: nothing of it is written."""
    with Index.create(tmp_path / "ix") as ix:
        ix.add(rain[:2])
        before = counters.read(ix._conn())
        docs, extras = ix._checked([rain[2], rain[1]], FIELDS, 5_000_000)
        with pytest.raises(sqlite3.IntegrityError):
            ix.add_checked(docs, extras, ids_checked=True)
        assert counters.read(ix._conn()) == before == counters.recount(ix._conn())
        assert ix.stats()["documents"] == 2
        ix.add([rain[2]])  # the index goes on
        ix.check()


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "s", "text": "words", "source": "s\ud800"},
        {"id": "s", "text": "words", "note": {"k": "\udfff"}},
        {"id": "s\ud800", "text": "words"},
    ],
)
def test_a_lone_surrogate_refuses_its_request_only(tmp_path, rain, bad):
    """A lone surrogate outside the text (a source, another field, the id) failed the group's
    transaction when SQLite encoded it: every request of the group answered 500. It is the
    request's record error now, found before the group's add."""
    from neardup.errors import RecordError

    with Index.create(tmp_path / "ix") as ix:
        gw = GroupWriter(ix, FIELDS)
        try:
            futs = _group(gw, [[rain[0]], [rain[1], bad], [rain[2]]])
            assert futs[0].exception() is None and futs[2].exception() is None
            assert isinstance(futs[1].exception(), RecordError) and "lone surrogate" in str(futs[1].exception())
            assert ix.stats()["documents"] == 2
            ix.check()
        finally:
            gw.close()
