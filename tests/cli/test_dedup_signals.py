"""SIGTERM and SIGHUP during `neardup dedup` clean up as Ctrl-C does: no spill directory in
--tmp-dir, no partial output, the previous run's outputs as they were; exit 128 + signal."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from neardup.cli.signals import Terminated, terminate_as_interrupt


@pytest.fixture(scope="module")
def corpus(synth_200k):
    # large enough that a run under --memory-limit spills its band keys, sorts them externally
    # and takes a moment to write its outputs (a few seconds in all): `neardup synth` of 160,000
    # originals and 40,000 copies of 30 words, written once per session (tests/conftest.py,
    # shared with test_outputs_safety's runs; every run only reads it)
    return synth_200k


@pytest.fixture(scope="module")
def limit(corpus, tmp_path_factory) -> str:
    """5% over the smallest --memory-limit (within ~6%) that this run here completes under, with
    its rows spilled: so that it spills and sorts externally whatever the interpreter's own size
    (70-105 MiB by the install). A fixed 150M was too small in a fresh virtual environment (the
    moments were never reached), and 1.35x the least the run says it needs was so large there
    that nothing spilled. A refused run says what it needs; that figure grows with the limit
    (the projection counts what is resident), so the search steps up from it."""
    out = tmp_path_factory.mktemp("probe")
    mib = 80.0
    for _ in range(12):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "dedup",
                str(corpus),
                "-o",
                str(out / "o"),
                "-q",
                "--json",
                "--tmp-dir",
                str(out),
                "--memory-limit",
                f"{math.ceil(mib)}M",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if p.returncode == 0:
            assert json.loads(p.stdout)["memory"]["rows_spilled_to_disk"], "the smallest limit that ran spilled nothing"
            return f"{math.ceil(mib * 1.05)}M"  # (5% over: at the edge, a run like it was refused)
        m = re.search(r"needs at least about ([\d.]+) MiB", p.stderr)
        assert p.returncode == 2 and m, p.stderr
        mib = max(mib * 1.06, float(m.group(1)) + 1)
    raise AssertionError(f"no --memory-limit up to {mib:.0f} MiB ran")


def _signal_when(corpus, tmp_path, sig, appears, limit) -> tuple[int, str, bool]:
    """Run dedup, send `sig` once `appears(tmp_dir, out)` (polled) is true; the exit code, the
    stderr and whether the moment was reached before the run ended."""
    spill, out = tmp_path / "spill", tmp_path / "out"
    spill.mkdir(exist_ok=True)
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "dedup",
            str(corpus),
            "-o",
            str(out),
            "-q",
            "--tmp-dir",
            str(spill),
            "--memory-limit",
            limit,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    caught = False
    try:
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            if appears(spill, out):
                p.send_signal(sig)
                caught = True
                break
            time.sleep(0.005)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err, caught


def _names(d) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


def spill_dir(spill, out):
    return any(n.startswith("neardup-") and not n.startswith("neardup-bands-") for n in _names(spill))


def band_sort(spill, out):
    return any(n.startswith("neardup-bands-") for n in _names(spill))


def partial_output(spill, out):
    return any(n.endswith(".tmp") for n in _names(out))


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
@pytest.mark.parametrize("moment", [spill_dir, band_sort, partial_output])
def test_signal_mid_run_cleans_up(corpus, limit, tmp_path, sig, code, moment):
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.jsonl").write_text("previous run\n")  # (as a previous run's output would be)
    rc, err, caught = _signal_when(corpus, tmp_path, sig, moment, limit)
    if not caught:
        pytest.skip(f"the run ended before {moment.__name__} was seen (rc {rc})")
    assert rc == code, err
    assert err.strip() == f"neardup: terminated ({signal.Signals(sig).name})"
    assert _names(tmp_path / "spill") == []  # no spill file or directory left
    assert sorted(_names(out)) == ["kept.jsonl"]  # no partial output
    assert (out / "kept.jsonl").read_text() == "previous run\n"  # the previous set as it was


def test_the_spill_moment_is_reached(corpus, limit, tmp_path):
    # the polling above must see at least the first moment, or the tests prove nothing
    rc, err, caught = _signal_when(corpus, tmp_path, signal.SIGTERM, spill_dir, limit)
    assert caught and rc == 143, err


def test_previous_handlers_are_restored():
    before_term, before_hup = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)
    with pytest.raises(Terminated) as ei:
        with terminate_as_interrupt():
            assert signal.getsignal(signal.SIGTERM) is not before_term
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # (interrupted by the handler)
    assert ei.value.code == 143 and isinstance(ei.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is before_term
    assert signal.getsignal(signal.SIGHUP) is before_hup


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_stdin_is_spooled_leaves_no_spool_file(tmp_path, sig, code):
    """`neardup dedup -` copies stdin to a temporary file first; a signal while it waited for
    stdin left that file in the temporary directory (only an OSError removed it)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # (SIGINT as a terminal's foreground job has it: a test run started in the background of a
    # non-interactive shell inherits it ignored, and the child then never sees it)
    p = subprocess.Popen(
        [sys.executable, "-m", "neardup.cli", "dedup", "-", "-o", str(tmp_path / "out"), "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        p.stdin.write(b'{"id": 1, "text": "the first line of a feed that does not end"}\n')
        p.stdin.flush()  # (and stdin stays open: the copy waits for more)
        deadline = time.monotonic() + 60
        while not any(n.startswith("neardup-spool-") for n in os.listdir(tmp)):
            assert time.monotonic() < deadline and p.poll() is None, "the spool file never appeared"
            time.sleep(0.01)
        time.sleep(0.2)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == code, err
    assert os.listdir(tmp) == []
