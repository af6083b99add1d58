"""The service's settings (config.py, ServiceConfig: one object, checked where it is made),
``serve --max-chars`` end to end (the writer thread's and the writer process's checks, adds
and dry runs), and the public writer API of Index that the service writes through
(index/core.py: take_writer, write_lock, writing, wal_autocheckpoint, check_records)."""

import dataclasses
import threading

import pytest
from fastapi.testclient import TestClient

from neardup.errors import IndexClosedError, IndexLockedError, InvalidParameterError, RecordError
from neardup.index import Index
from neardup.service.app import create_app
from neardup.service.config import DEFAULT_MAX_CHARS, ServiceConfig
from neardup.service.server import serve
from neardup.service.worker import WriterProcess
from neardup.service.writer import FIELDS, GroupWriter


def test_the_config_has_the_command_line_defaults_and_is_frozen():
    c = ServiceConfig()
    assert (c.host, c.port, c.max_body, c.max_batch, c.max_chars) == (
        "127.0.0.1",
        8000,
        10_000_000,
        10_000,
        DEFAULT_MAX_CHARS,
    )
    assert DEFAULT_MAX_CHARS == 5_000_000
    assert (c.write_timeout, c.health_timeout, c.shutdown_timeout, c.max_open_files) == (60.0, 2.0, 10.0, 65536)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.port = 1
    assert c.open_kw() == {
        "threads": None,
        "sync": "group",
        "background_fold": True,
        "l0_max": None,
        "l0_fold_at": None,
        "merge_max": None,
    }
    assert ServiceConfig(sync="normal", fold="inline").open_kw()["sync"] == "normal"


@pytest.mark.parametrize("v", [0, None, "none", "off"])
def test_no_write_timeout_is_none(v):
    assert ServiceConfig(write_timeout=v).write_timeout is None


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"fold": "later"}, "fold must be"),
        ({"writer": "fork"}, "writer must be"),
        ({"max_chars": 0}, "--max-chars"),
        ({"max_chars": 1.5}, "--max-chars"),
    ],
)
def test_a_bad_field_is_refused_where_the_config_is_made(kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        ServiceConfig(**kw)


def test_serve_takes_a_config_or_its_fields_not_both(tmp_path):
    with pytest.raises(InvalidParameterError, match="not both"):
        serve(str(tmp_path), ServiceConfig(), port=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_bodies'"):
        serve(str(tmp_path), max_bodies=1)


def test_max_chars_in_the_writer_thread(index_dir):
    with Index.open(index_dir) as ix:
        with TestClient(create_app(ix, max_chars=20)) as c:
            for q in ("", "?dry_run=true"):
                r = c.post("/v1/documents" + q, json={"id": "long", "text": "x" * 21})
                assert r.status_code == 422, r.text
                assert r.json()["error"]["code"] == "bad_document" and r.json()["error"]["details"]["field"] == "text"
                assert c.post("/v1/documents" + q, json={"id": f"short{q}", "text": "x" * 20}).status_code == 200


def test_max_chars_in_the_writer_process(index_dir):
    w = WriterProcess(str(index_dir), {"sync": "group"}, max_chars=20)
    try:
        with Index.open(index_dir) as ix:
            with TestClient(create_app(ix, writer=w)) as c:
                for q in ("", "?dry_run=true"):
                    r = c.post("/v1/documents" + q, json={"id": "long", "text": "x" * 21})
                    assert r.status_code == 422 and r.json()["error"]["code"] == "bad_document", r.text
                assert c.post("/v1/documents", json={"id": "short", "text": "x" * 20}).status_code == 200
    finally:
        w.close()


def test_the_default_max_chars_is_the_index_add_one(index_dir):
    with Index.open(index_dir) as ix:
        assert GroupWriter(ix, FIELDS).max_chars == DEFAULT_MAX_CHARS


def test_check_records_checks_as_add_does(index_dir):
    with Index.open(index_dir) as ix:
        docs, extras = ix.check_records(
            [{"id": "a", "text": "some text", "published_at": 5}], FIELDS, DEFAULT_MAX_CHARS
        )
        assert [d.key for d in docs] == ["a"] and len(extras) == 1
        with pytest.raises(RecordError) as e:
            ix.check_records([{"id": "a", "text": "fine"}, {"id": "b", "text": "x" * 11}], FIELDS, 10)
        assert e.value.line == 2 and e.value.field == "text"
        with pytest.raises(InvalidParameterError):
            ix.check_records([{"id": "a", "text": "x"}], FIELDS, 0)
        assert ix.add_checked(docs, extras)[0].status == "new"


def test_take_writer_and_writing(index_dir):
    with Index.open(index_dir) as ix, Index.open(index_dir) as other:
        ix.take_writer()
        with pytest.raises(IndexLockedError):
            other.take_writer()
        with ix.writing() as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        ix.wal_autocheckpoint(0)
        with ix.writing() as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        assert not ix.closed
    assert ix.closed
    with pytest.raises(IndexClosedError):
        with ix.writing():
            pass


def test_write_lock_holds_off_commits(index_dir):
    with Index.open(index_dir) as ix:
        done = threading.Event()
        with ix.write_lock():
            with ix.write_lock():  # re-entrant in its thread
                pass
            t = threading.Thread(target=lambda: (ix.add([{"id": "a", "text": "held off"}], fields=FIELDS), done.set()))
            t.start()
            assert not done.wait(0.5)
        t.join(30)
        assert done.is_set() and ix.existing_ids(["a"]) == {"a"}
