"""--sync full in the service: an index opened sync="group" commits without waiting for the WAL's
fsync, and each answer waits for Index.make_durable (writer.Acks), done in a thread of its own
for every group committed since the last one."""

import os
import sqlite3
import threading

from neardup.index import Index
from neardup.service.writer import FIELDS, GroupWriter


def test_answers_wait_for_the_wal_fsync_and_the_writer_goes_on(index_dir, rain):
    with Index.open(index_dir, sync="group") as ix:
        gate = threading.Event()
        synced = []
        real = ix.make_durable

        def slow_durable():
            gate.wait(10)  # a slow disk: the fsync takes as long as the test says
            real()
            synced.append(True)

        ix.make_durable = slow_durable
        w = GroupWriter(ix, FIELDS)
        try:
            first = w.submit([rain[0]])
            second = w.submit([rain[1]])
            # both groups are committed (visible to a reader) while no answer has been given
            db = os.path.join(index_dir, "index.sqlite")
            for _ in range(200):
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                n = con.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
                con.close()
                if n == 2:
                    break
                threading.Event().wait(0.05)
            assert n == 2
            assert not first.done() and not second.done()
            gate.set()
            assert first.result(10)[0].as_dict()["id"] == rain[0]["id"]
            assert second.result(10)[0].as_dict()["inserted"] is True
            assert synced  # answered after an fsync of the WAL
        finally:
            gate.set()
            w.close()
        # the writer connection commits without its own fsync; make_durable fsyncs the WAL file
        assert ix._writer().execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_a_failed_fsync_is_reported_to_the_requests_it_covered(index_dir, rain):
    with Index.open(index_dir, sync="group") as ix:

        def broken():
            raise OSError(5, "Input/output error")

        ix.make_durable = broken
        w = GroupWriter(ix, FIELDS)
        try:
            fut = w.submit([rain[0]])
            try:
                fut.result(10)
                raise AssertionError("no error")
            except OSError as exc:
                assert exc.errno == 5
        finally:
            w.close()


def test_make_durable_is_a_no_op_in_the_other_modes(index_dir):
    for mode in ("full", "normal"):
        with Index.open(index_dir, sync=mode) as ix:
            ix.make_durable()


def test_a_writer_served_again_after_close_still_answers(index_dir, rain):
    # an app whose lifespan ended may be served again: its writer and acks threads restart
    with Index.open(index_dir, sync="group") as ix:
        w = GroupWriter(ix, FIELDS)
        try:
            assert w.add([rain[0]], timeout=10)[0].as_dict()["inserted"] is True
            w.close()
            assert w.add([rain[1]], timeout=10)[0].as_dict()["inserted"] is True
        finally:
            w.close()
