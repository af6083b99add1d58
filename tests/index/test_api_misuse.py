"""The Python API of the index used as a demanding Python user does (found by a tester): remove
with a datetime, a date or text (it removed every document), one id given alone, an Index across
multiprocessing's fork (a child's close() let a second writer in; every parallel call of the
child hung), a clusters() generator paused while the thread reads on, close() during another
thread's add, and a thread per request."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import threading
import time
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest

import neardup
from neardup.errors import ForkedIndexError, IndexLockedError, InvalidParameterError
from neardup.index import Index

DAY = 86400.0


def _docs(n: int, tag: str = "d", t0: float | None = None) -> list[dict]:
    t0 = time.time() if t0 is None else t0
    return [
        {
            "id": f"{tag}{i}",
            "text": f"story {tag} {i} " + " ".join(f"w{i}x{j}" for j in range(30)),
            "published_at": t0 - i * DAY,
        }
        for i in range(n)
    ]


@pytest.fixture
def recent(make_index):
    """An index of 5 articles published over the last 5 days."""
    return make_index(_docs(5))


@pytest.mark.parametrize(
    "older_than, removed",
    [
        (datetime(2000, 1, 1), 0),
        (datetime(2000, 1, 1, tzinfo=UTC), 0),
        (date(2000, 1, 1), 0),
        ("2000-01-01", 0),
        ("30d", 0),
        (946684800, 0),
        (946684800.0, 0),
        (np.float64(946684800), 0),
        ("2d", 3),
        (datetime.now(UTC) - timedelta(days=2, hours=1), 2),
    ],
)
def test_remove_older_than_reads_times(recent, older_than, removed):
    """A datetime or text was compared with the stored numbers as text, which SQLite orders
    after every number: each of these removed every document."""
    with Index.open(recent) as ix:
        assert ix.remove(older_than=older_than) == removed
        assert ix.stats()["documents"] == 5 - removed


@pytest.mark.parametrize("older_than", [True, float("nan"), float("inf"), "yesterday", [1], object()])
def test_remove_older_than_refuses_what_is_not_a_time(recent, older_than):
    with Index.open(recent) as ix:
        with pytest.raises(InvalidParameterError, match="older_than"):
            ix.remove(older_than=older_than)
        assert ix.stats()["documents"] == 5


@pytest.mark.parametrize("ids", ["d1", b"d1", 12, 1.5])
def test_remove_refuses_one_id_alone(recent, ids):
    """remove("12") removed the documents "1" and "2" (the string read as its characters)."""
    with Index.open(recent) as ix:
        with pytest.raises(InvalidParameterError, match="ids must be a list"):
            ix.remove(ids)
        assert ix.stats()["documents"] == 5
        assert ix.remove(i for i in ["d1", "d2"]) == 2  # any iterable of ids


def _signatures(texts):
    return neardup.MinHash().signatures(texts).shape


def test_parallel_kernels_run_in_a_forked_worker():
    """Once the parent had run a batch kernel, its rayon threads existed in it only: a worker
    forked from it (multiprocessing's default on Linux) waited for ever in the first one."""
    texts = [f"text number {i} with a few words in it {i * 3}" for i in range(3000)]
    assert _signatures(texts) == (3000, 128)
    with mp.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_signatures, (texts,)).get(timeout=120) == (3000, 128)


def _child_closes(ix: Index, q) -> None:
    try:
        ix.add(_docs(1, "child"))
    except ForkedIndexError as exc:
        q.put(f"refused: {exc}")
    ix.close()
    q.put("closed")


def _try_writer(d: str, q) -> None:
    try:
        with Index.open(d) as other:
            other.add(_docs(1, "other"))
        q.put("wrote")
    except IndexLockedError:
        q.put("locked")


def test_an_index_across_a_fork(recent):
    """A forked child may not use its parent's Index (its connections and lock are the
    parent's), and its close() leaves the parent's writer lock held: a second writer was let
    in beside the parent, and texts were destroyed."""
    ctx = mp.get_context("fork")
    with Index.open(recent) as ix:
        ix.add(_docs(1, "parent"))  # the parent holds the writer lock
        q = ctx.Queue()
        p = ctx.Process(target=_child_closes, args=(ix, q))
        p.start()
        p.join(60)
        said = q.get(timeout=5)
        assert said.startswith("refused: ") and "forked from it" in said and q.get(timeout=5) == "closed"
        sp = mp.get_context("spawn")
        q2 = sp.Queue()
        p2 = sp.Process(target=_try_writer, args=(str(recent), q2))
        p2.start()
        p2.join(120)
        assert q2.get(timeout=5) == "locked"
        ix.add(_docs(1, "parent2"))
        assert ix.check()["texts"] == 7


def test_a_paused_clusters_generator_leaves_the_thread_free(tmp_path):
    with Index.create(tmp_path / "ix") as ix:
        docs = _docs(6)
        ix.add(docs + [{**d, "id": d["id"] + "-copy", "text": d["text"] + " again"} for d in docs])
        it = ix.clusters()
        first = next(it)
        assert first["size"] == 2
        ix.add([{"id": "late", "text": docs[0]["text"] + " later"}])  # the thread goes on reading and writing
        assert ix.get_document("late")["id"] == "late"
        assert ix.stats()["documents"] == 13 and ix.query(docs[1]["text"])[0].status == "duplicate"
        rest = list(it)  # the generator's snapshot: as when it started
        assert len(rest) == 5 and sum(c["size"] for c in [first] + rest) == 12
        assert len(list(ix.clusters())) == 6


def test_close_waits_for_an_add_in_another_thread(tmp_path):
    with Index.create(tmp_path / "ix") as ix:
        ix.add(_docs(1, "a"))
    ix = Index.open(tmp_path / "ix")
    ix.add(_docs(1, "warm"))
    errors: list[BaseException] = []
    started = threading.Event()

    def add():
        started.set()
        try:
            ix.add(_docs(3000, "big"))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=add)
    t.start()
    started.wait()
    time.sleep(0.05)
    ix.close()
    t.join(120)
    with Index.open(tmp_path / "ix") as again:
        n = again.stats()["documents"]
        assert again.check()["texts"] == n
    if errors:  # the add had not yet begun when close came: refused whole
        assert type(errors[0]).__name__ == "IndexClosedError" and n == 2
    else:
        assert n == 3002


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc (Linux)")
def test_a_thread_per_read_leaves_no_connections_behind(recent):
    """Each reader thread's connection stayed open until close() (2 descriptors a thread: 1,000
    threads, 2,015 descriptors). Now it goes with its thread; SQLite keeps a few of their file
    descriptors for reuse while another connection holds a lock on the file: bounded."""

    def churn(n: int) -> None:
        for _ in range(n):
            t = threading.Thread(target=lambda: ix.get_document("d1"))
            t.start()
            t.join()
        gc.collect()

    with Index.open(recent) as ix:
        ix.stats()
        before = _fds()
        churn(300)
        after = _fds()
        assert after - before < 100  # (600 before)
        churn(300)
        assert _fds() <= after + 5


@pytest.mark.parametrize("threads", [1.5, "2", 0, -1, 5000, True])
def test_threads_are_checked_at_open(recent, threads):
    """A float or a string was taken, and the first add failed with a TypeError; 0 and 5000
    were refused only then."""
    with pytest.raises(InvalidParameterError, match="threads must be"):
        Index.open(recent, threads=threads)


def test_numpy_settings_and_nothing_left_behind(tmp_path):
    with Index.create(tmp_path / "a", k=np.int64(4), threshold=np.float64(0.7), threads=np.int64(2)) as ix:
        assert ix.config.settings.k == 4 and type(ix.config.settings.k) is int
    with Index.open(tmp_path / "a", k=np.int64(4)):
        pass
    with pytest.raises(InvalidParameterError):
        Index.create(tmp_path / "b", k="5")
    assert not (tmp_path / "b" / "index.sqlite.init").exists()


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda ix: ix.get_cluster("abc"), InvalidParameterError),
        (lambda ix: ix.get_cluster(1.7), InvalidParameterError),
        (lambda ix: ix.get_cluster(True), InvalidParameterError),
        (lambda ix: ix.get_cluster(2**70), neardup.errors.DocumentNotFoundError),
        (lambda ix: ix.recent_clusters(limit="x"), InvalidParameterError),
        (lambda ix: ix.recent_clusters(limit=-1), InvalidParameterError),
        (lambda ix: ix.add([{"id": "x", "text": "t"}], fields="id"), InvalidParameterError),
        (lambda ix: ix.add([{"id": "x", "text": "t"}], fields={"bogus": "x"}), InvalidParameterError),
    ],
)
def test_reading_arguments_are_checked(recent, call, error):
    with Index.open(recent) as ix:
        with pytest.raises(error):
            call(ix)
        assert ix.get_cluster(np.int64(ix.get_document("d1")["cluster"]))["cluster"] >= 1


def test_fields_as_a_mapping(tmp_path):
    with Index.create(tmp_path / "ix") as ix:
        v = ix.add(
            [{"url": "u1", "body": "a story told in a few words for the test"}], fields={"id": "url", "text": "body"}
        )
        assert v[0].id == "u1"
        assert ix.get_document("u1")["text"].endswith("for the test")


def test_existing_ids_after_close_is_closed(recent):
    from neardup.errors import IndexClosedError

    ix = Index.open(recent)
    ix.close()
    with pytest.raises(IndexClosedError):
        ix.existing_ids(["d1"])


def test_numpy_values_in_records_and_a_tuple_of_texts(tmp_path):
    """numpy.str_ ids were refused ("got str_"), np.int64 and np.datetime64 times unreadable
    (np.float64 was read), a tuple of texts taken for file paths."""
    with Index.create(tmp_path / "ix") as ix:
        v = ix.add(
            [
                {
                    "id": np.str_("a"),
                    "text": "a story told for the numpy test today",
                    "published_at": np.int64(1_700_000_000),
                },
                {
                    "id": "b",
                    "text": "another story, of its own, for the same test",
                    "published_at": np.datetime64("2024-01-01T00:00"),
                },
            ]
        )
        assert not v.unreadable_times and ix.get_document("a")["published_at"] == 1_700_000_000.0
        assert ix.get_document("b")["published_at"] == datetime(2024, 1, 1, tzinfo=UTC).timestamp()
        got = ix.query(("a story told for the numpy test today", "nothing like it at all here"))
        assert [x.status for x in got] == ["duplicate", "new"]
