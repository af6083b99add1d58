"""The service's writer in a process of its own (service/worker.py): answers, errors as their
own classes, the lock, and a writer process that dies."""

import os
import pickle
import signal
import time

import pytest

from neardup.errors import (
    DocumentNotFoundError,
    DuplicateIdError,
    FileGoneError,
    IndexLockedError,
    InputTypeError,
    InvalidInputError,
    RecordError,
    WriterGoneError,
)
from neardup.index import Index
from neardup.service.worker import WriterProcess


@pytest.fixture
def writer(index_dir):
    w = WriterProcess(str(index_dir), {"sync": "group"})
    yield w
    w.close()


def test_add_dry_run_remove_answered_by_the_writer_process(writer, rain, index_dir):
    assert writer.pid != os.getpid()
    vs = writer.submit(rain).result(60)
    assert [v["id"] for v in vs] == [r["id"] for r in rain]
    dup = {v["id"]: v for v in vs}["site-b-092"]
    assert dup["status"] == "duplicate" and dup["keeper"] == "agency-001" and dup["inserted"] is True
    probe = writer.dry_run([{**rain[1], "id": "probe"}]).result(60)
    assert probe[0]["status"] == "duplicate" and probe[0]["inserted"] is False
    assert writer.remove("site-b-092").result(60) == 1
    # what the writer process committed is what a reader in this process sees
    with Index.open(index_dir) as ix:
        assert ix.stats()["documents"] == len(rain) - 1
        with pytest.raises(DocumentNotFoundError):
            ix.get_document("site-b-092")


def test_errors_come_back_as_their_own_classes(writer, rain):
    writer.submit(rain[:2]).result(60)
    with pytest.raises(DuplicateIdError) as e:
        writer.submit([rain[0]]).result(60)
    assert e.value.ids == [rain[0]["id"]]
    with pytest.raises(RecordError) as e:
        writer.submit([{"id": "x1", "text": "fine text"}, {"id": "x2", "text": 5}]).result(60)
    assert (e.value.line, e.value.field) == (2, "text")
    with pytest.raises(DocumentNotFoundError):
        writer.remove("no-such-id").result(60)
    # the failed request left nothing behind: x1 is new
    assert writer.submit([{"id": "x1", "text": "fine text"}]).result(60)[0]["inserted"] is True


def test_the_writer_process_holds_the_lock(writer, index_dir):
    with Index.open(index_dir) as ix:
        with pytest.raises(IndexLockedError):
            ix._writer()
    with pytest.raises(IndexLockedError):
        WriterProcess(str(index_dir))  # a second one: the same clear error, from its process


def test_a_killed_writer_process_is_replaced_and_the_index_is_whole(writer, rain, index_dir):
    writer.submit(rain[:3]).result(60)
    first = writer.pid
    os.kill(first, signal.SIGKILL)
    deadline = time.time() + 30
    while writer._conn is not None and time.time() < deadline:  # the answers thread saw it go
        time.sleep(0.05)
    vs = writer.submit(rain[3:]).result(120)  # a new writer process: opens and recovers the index
    assert writer.pid != first
    assert {v["id"] for v in vs} == {r["id"] for r in rain[3:]}
    with Index.open(index_dir) as ix:
        assert ix.stats()["documents"] == len(rain)
        assert ix.check()["texts"] == len(rain)


def test_a_restart_does_not_hold_up_the_caller(writer, rain, index_dir, monkeypatch):
    """The new writer process starts in a thread of its own: submit() returns at once (on the
    server it runs on the event loop, which answers GETs meanwhile), the requests made while
    it starts wait for it and then go in, in order."""
    import threading

    writer.submit(rain[:2]).result(60)
    first = writer.pid
    may_start = threading.Event()
    real = WriterProcess._launch

    def slow_launch(self):
        assert may_start.wait(60)
        return real(self)

    monkeypatch.setattr(WriterProcess, "_launch", slow_launch)
    os.kill(first, signal.SIGKILL)
    deadline = time.time() + 30
    while writer._conn is not None and time.time() < deadline:
        time.sleep(0.05)
    got = []
    caller = threading.Thread(target=lambda: got.extend([writer.submit(rain[2:4]), writer.dry_run(rain[4:5])]))
    caller.start()
    caller.join(10)
    assert not caller.is_alive()  # returned while the new process has not even been started
    assert not any(f.done() for f in got)
    may_start.set()
    assert {v["id"] for v in got[0].result(120)} == {r["id"] for r in rain[2:4]}
    assert [v["id"] for v in got[1].result(60)] == [rain[4]["id"]]
    assert writer.pid != first
    with Index.open(index_dir) as ix:
        assert ix.stats()["documents"] == 4


def test_a_restart_that_fails_fails_the_requests_that_waited(writer, rain, monkeypatch):
    def broken(self):
        raise IndexLockedError("index is locked by another process")

    writer.submit(rain[:1]).result(60)
    monkeypatch.setattr(WriterProcess, "_launch", broken)
    os.kill(writer.pid, signal.SIGKILL)
    deadline = time.time() + 30
    while writer._conn is not None and time.time() < deadline:
        time.sleep(0.05)
    with pytest.raises(IndexLockedError, match="locked"):
        writer.submit(rain[1:2]).result(60)
    monkeypatch.undo()  # the next request tries again, and succeeds
    assert [v["id"] for v in writer.submit(rain[1:2]).result(120)] == [rain[1]["id"]]


def test_a_request_waiting_when_the_writer_dies_is_told_so(index_dir, rain):
    w = WriterProcess(str(index_dir))
    try:
        os.kill(w.pid, signal.SIGSTOP)  # it cannot answer...
        fut = w.submit(rain[:1])
        time.sleep(0.2)
        os.kill(w.pid, signal.SIGKILL)  # ...and dies with the request in its pipe
        with pytest.raises(WriterGoneError, match="unknown"):
            fut.result(60)
    finally:
        w.close()


@pytest.mark.parametrize(
    "exc",
    [
        DuplicateIdError("2 id(s) already in the index", ["a", "b"]),
        RecordError("<request>", 3, "not a string", "text"),
        FileGoneError("segment seg-1 is missing", "seg-1"),
        InvalidInputError("lone surrogate", 4),
        InputTypeError("None where a str was expected", 2),
        DocumentNotFoundError("no document with id 'x'"),
    ],
)
def test_errors_pickle_whole(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc) and vars(back) == vars(exc)
