"""service.host_cpu in GET /v1/stats: the machine's CPU time by kind from /proc/stat, seconds
since boot (two reads subtract into a window's share of steal)."""

from __future__ import annotations

import os

import pytest

from neardup.service.hostcpu import KINDS, host_cpu

TICKS = os.sysconf("SC_CLK_TCK")


def test_reads_the_cpu_line_in_seconds(tmp_path):
    p = tmp_path / "stat"
    p.write_text(
        f"cpu  {TICKS * 10} 0 {TICKS * 4} {TICKS * 80} {TICKS} 0 0 {TICKS * 5} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
    )
    got = host_cpu(str(p))
    assert got["cores"] == os.cpu_count()
    assert got["seconds"] == {
        "user": 10.0,
        "nice": 0.0,
        "system": 4.0,
        "idle": 80.0,
        "iowait": 1.0,
        "irq": 0.0,
        "softirq": 0.0,
        "steal": 5.0,
    }


@pytest.mark.parametrize("text", ["", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu a b c d e f g h\n"])
def test_an_unreadable_file_gives_none(tmp_path, text):
    p = tmp_path / "stat"
    p.write_text(text)
    assert host_cpu(str(p)) is None
    assert host_cpu(str(tmp_path / "missing")) is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="/proc/stat is Linux's; elsewhere host_cpu is None")
def test_stats_report_it_and_it_only_grows(client):
    a = client.get("/v1/stats").json()["service"]["host_cpu"]
    sum(i * i for i in range(300_000))  # some CPU time between the reads
    b = client.get("/v1/stats").json()["service"]["host_cpu"]
    assert set(a["seconds"]) == set(KINDS) and a["cores"] >= 1
    assert all(b["seconds"][k] >= a["seconds"][k] for k in KINDS)
    assert sum(b["seconds"].values()) > sum(a["seconds"].values())


def test_a_threads_cpu_time_is_its_own():
    """process_cpu(pid, tid): the writer thread's CPU time (health with --writer thread), not
    the process's: a thread that spins grows its own, one that waits does not."""
    import threading
    import time

    from neardup.service.hostcpu import process_cpu

    ids: dict[str, int] = {}
    stop = threading.Event()

    def spin():
        ids["spin"] = threading.get_native_id()
        while not stop.is_set():
            sum(range(1000))

    def wait():
        ids["wait"] = threading.get_native_id()
        stop.wait()

    threads = [threading.Thread(target=spin), threading.Thread(target=wait)]
    for t in threads:
        t.start()
    try:
        while len(ids) < 2:
            time.sleep(0.01)
        before = {k: process_cpu(os.getpid(), tid) for k, tid in ids.items()}
        deadline = time.monotonic() + 30
        while process_cpu(os.getpid(), ids["spin"]) - before["spin"] < 0.1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_cpu(os.getpid(), ids["spin"]) - before["spin"] >= 0.1
        assert process_cpu(os.getpid(), ids["wait"]) - before["wait"] < 0.02
        assert process_cpu(os.getpid()) >= process_cpu(os.getpid(), ids["spin"])
    finally:
        stop.set()
        for t in threads:
            t.join()
    # the thread has gone (its /proc entry goes a moment after join(): the OS thread ends
    # after Python's)
    deadline = time.monotonic() + 10
    while process_cpu(os.getpid(), ids["spin"]) is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_cpu(os.getpid(), ids["spin"]) is None
