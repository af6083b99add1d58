"""The service's stage timings (service/timings.py) and where GET /v1/stats shows them."""

import threading

import pytest

from neardup.service.timings import OVER_MS, Histogram, Timings


def test_histogram_counts_over_each_threshold():
    h = Histogram()
    for ms in (0.2, 1.0, 1.5, 10.0, 10.5, 250.0, 5000.0):
        h.observe(ms)
    d = h.as_dict()
    assert d["count"] == 7 and d["max_ms"] == 5000.0
    assert d["mean_ms"] == pytest.approx(sum((0.2, 1.0, 1.5, 10.0, 10.5, 250.0, 5000.0)) / 7, abs=1e-3)
    # a duration equal to a threshold is not over it
    assert d["over_ms"] == {"1": 5, "2": 4, "5": 4, "10": 3, "20": 2, "50": 2, "100": 2, "200": 2, "500": 1, "1000": 1}
    assert list(d["over_ms"]) == [str(b) for b in OVER_MS]


def test_empty_histogram_has_no_mean():
    d = Histogram().as_dict()
    assert d["count"] == 0 and d["mean_ms"] is None and set(d["over_ms"].values()) == {0}


def test_timed_counts_a_block_that_raises():
    t = Timings()
    with pytest.raises(ValueError):
        with t.timed("x"):
            raise ValueError("boom")
    with t.timed("x"):
        pass
    assert t.as_dict()["x"]["count"] == 2


def test_observations_from_many_threads_are_all_counted():
    t = Timings()

    def work():
        for _ in range(2000):
            t.observe("group", 12.0)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    d = t.as_dict()["group"]
    assert d["count"] == 8000 and d["over_ms"]["10"] == 8000 and d["over_ms"]["20"] == 0


def test_stats_show_the_posts_and_the_writers_groups(client, rain):
    for d in rain[:3]:
        assert client.post("/v1/documents", json=d).status_code == 200
    assert client.post("/v1/documents?dry_run=true", json={**rain[3], "id": "probe"}).status_code == 200
    assert client.post("/v1/documents", json=rain[0]).status_code == 409  # timed too: it took that long
    s = client.get("/v1/stats").json()["service"]
    assert s["writer"] == "thread" and s["uptime_seconds"] >= 0
    tm = s["timings"]
    assert tm["post"]["count"] == 4 and tm["post_dry_run"]["count"] == 1
    assert tm["group"]["count"] >= 1 and tm["group"]["max_ms"] > 0
