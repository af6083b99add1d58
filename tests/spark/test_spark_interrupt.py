"""The Spark engine's outputs as one set, as the local engine's (writers.staged): written into a
hidden staging directory in OUT and moved into place together at the end, so that a run that
fails or is interrupted (Ctrl-C; SIGTERM/SIGHUP in the CLI) leaves the previous run's outputs as
they were and none of its own; the rerun rule (the other format's kept output of the previous
run removed); `neardup dedup --engine spark` stopped by SIGTERM cleans up as after Ctrl-C."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from spark_corpus import make_corpus, tree, write_jsonl

from neardup.engines.spark.outputs import STAGE_PREFIX, OutputStage, stale_kept
from neardup.errors import OutputError


def without_stage(t: dict) -> dict:
    return {k: v for k, v in t.items() if not k.startswith(STAGE_PREFIX)}


def stages(out) -> list[str]:
    return [n for n in os.listdir(out) if n.startswith(STAGE_PREFIX)]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpora")
    a = write_jsonl(d / "a.jsonl", make_corpus(originals=60, copies=30, words=40, seed=21))
    b = write_jsonl(d / "b.jsonl", make_corpus(originals=50, copies=25, words=40, seed=22))
    return a, b


# ---- in process (the session fixture) -----------------------------------------------------


def test_a_failure_while_writing_leaves_the_previous_outputs(spark, corpora, tmp_path, monkeypatch):
    """kept.parquet's writer fails once Spark has written clusters.parquet and pairs.parquet:
    the previous run's outputs are byte for byte as they were, and no staging directory is left
    (clusters.parquet and pairs.parquet were replaced in place, beside the previous kept file
    and report.json)."""
    import neardup.engines.spark.outputs as outputs
    from neardup.engines.spark import dedup_spark

    a, b = corpora
    out = tmp_path / "out"
    dedup_spark(spark, [a], out, output_format="parquet")
    before = tree(out)
    seen = {}

    def fail(path, *args, **kwargs):
        d = os.path.dirname(path)
        seen["written"] = sorted(n for n in os.listdir(d) if n.endswith(".parquet"))
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(outputs, "_write_kept_parquet", fail)
    with pytest.raises(RuntimeError, match="the disk is full"):
        dedup_spark(spark, [b], out, output_format="parquet")
    assert tree(out) == before
    assert stages(out) == []
    assert seen["written"] == ["clusters.parquet", "pairs.parquet"]  # (the failure came after Spark wrote them)


def test_a_rerun_replaces_the_set_only_once_it_is_complete(spark, corpora, tmp_path, monkeypatch):
    """While the new outputs are written the previous ones stay in place untouched; then all of
    them are replaced, report.json too, and no staging directory is left."""
    import neardup.engines.spark.run as run
    from neardup.engines.spark import dedup_spark, read_outputs

    a, b = corpora
    out = tmp_path / "out"
    first = dedup_spark(spark, [a], out, collect=True)
    before = tree(out)
    real = run.write_outputs
    checked = []

    def write_then_look(outdir, *args, **kwargs):
        files = real(outdir, *args, **kwargs)
        assert without_stage(tree(out)) == before  # every new output written; the previous set untouched
        checked.append(files)
        return files

    monkeypatch.setattr(run, "write_outputs", write_then_look)
    second = dedup_spark(spark, [b], out, collect=True)
    assert checked == [["clusters.parquet", "pairs.parquet", "kept.jsonl"]]
    assert sorted(os.listdir(out)) == ["clusters.parquet", "kept.jsonl", "pairs.parquet", "report.json"]
    after = tree(out)
    assert not {(k, v) for k, v in before.items() if v is not None} & set(after.items())  # no previous file left
    back = read_outputs(str(out))
    assert back.kept == second.kept != first.kept
    assert back.report["documents"] == second.report["documents"] and back.report["files"][-1] == "report.json"


def test_a_rerun_in_the_other_format_removes_the_previous_kept_output_only(spark, corpora, tmp_path):
    """--format parquet, then a run without it: the previous kept.parquet (report.json lists it)
    goes with the previous set; a file neardup did not write stays."""
    from neardup.engines.spark import dedup_spark

    a, b = corpora
    out = tmp_path / "out"
    dedup_spark(spark, [a], out, output_format="parquet")
    (out / "notes.txt").write_text("mine\n")
    assert (out / "kept.parquet").is_dir()
    dedup_spark(spark, [b], out)
    assert sorted(os.listdir(out)) == ["clusters.parquet", "kept.jsonl", "notes.txt", "pairs.parquet", "report.json"]
    assert (out / "notes.txt").read_text() == "mine\n"
    # and back: kept.jsonl goes the same way
    dedup_spark(spark, [a], out, output_format="parquet")
    assert sorted(os.listdir(out)) == ["clusters.parquet", "kept.parquet", "notes.txt", "pairs.parquet", "report.json"]


# ---- the rerun rule and the swap, without a job -------------------------------------------


def _previous_run(out, files, kept_dir=True):
    out.mkdir(exist_ok=True)
    for name in files:
        if name == "report.json":
            continue
        if kept_dir:
            (out / name).mkdir()
            (out / name / "part-00000").write_text(name)
        else:
            (out / name).write_text(name)
    past = time.time() - 60
    for name in files:
        if name != "report.json":
            os.utime(out / name, (past, past))
    (out / "report.json").write_text(json.dumps({"files": files}))


def test_stale_kept_follows_the_local_rule(tmp_path):
    """The previous run's other kept output: removed when report.json lists it, it is not newer
    than that report and it holds no input of this run; a local engine's kept file too."""
    out = tmp_path / "out"
    _previous_run(out, ["clusters.parquet", "pairs.parquet", "kept.parquet", "report.json"])
    stale = [str(out / "kept.parquet")]
    assert stale_kept(str(out), "jsonl", []) == stale
    assert stale_kept(str(out), "parquet", []) == []  # this run's own format: replaced, not removed
    assert stale_kept(str(out), "jsonl", [str(out / "kept.parquet" / "part-00000")]) == []  # an input inside
    later = os.stat(out / "report.json").st_mtime + 5
    os.utime(out / "kept.parquet", (later, later))  # changed after the report
    assert stale_kept(str(out), "jsonl", []) == []
    other = tmp_path / "other"
    _previous_run(other, ["clusters.parquet", "pairs.parquet", "report.json"])
    (other / "kept.parquet").mkdir()  # not listed: not neardup's
    assert stale_kept(str(other), "jsonl", []) == []
    local = tmp_path / "local"
    _previous_run(local, ["clusters.jsonl", "pairs.jsonl", "kept.parquet", "report.json"], kept_dir=False)
    assert stale_kept(str(local), "jsonl", []) == [str(local / "kept.parquet")]  # the local engine's file


def test_a_swap_that_fails_midway_puts_the_previous_set_back(tmp_path, monkeypatch):
    """A rename failing after some outputs were moved in: those go back to the staging
    directory, the previous ones back in place, and the staging directory is removed."""
    out = tmp_path / "out"
    names = ["clusters.parquet", "pairs.parquet", "kept.jsonl", "report.json"]
    _previous_run(out, names[:2] + ["kept.jsonl", "report.json"], kept_dir=False)  # (files where dirs go)
    before = tree(out)
    st = OutputStage(str(out))
    st.create()
    for name in names[:3]:
        os.mkdir(os.path.join(st.path, name))
        open(os.path.join(st.path, name, "part-00000"), "w").close()
    with open(os.path.join(st.path, "report.json"), "w") as f:
        f.write("{}")
    real = os.rename

    def rename(src, dst):
        if src == os.path.join(st.path, "kept.jsonl"):
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OutputError, match="kept.jsonl: cannot write"):
        st.commit(names)
    monkeypatch.setattr(os, "rename", real)
    st.discard()
    assert tree(out) == before
    # and one that succeeds: the files where the directories go are replaced too
    st = OutputStage(str(out))
    st.create()
    for name in names[:3]:
        os.mkdir(os.path.join(st.path, name))
    with open(os.path.join(st.path, "report.json"), "w") as f:
        f.write("{}")
    st.commit(names)
    assert sorted(os.listdir(out)) == sorted(names)
    assert all((out / n).is_dir() for n in names[:3]) and (out / "report.json").read_text() == "{}"


# ---- the CLI: SIGTERM ------------------------------------------------------------------------


def test_sigterm_mid_write_cleans_up_as_ctrl_c(tmp_path):
    """`neardup dedup --engine spark` sent SIGTERM while Spark writes the outputs into the
    staging directory: exit 143, one line saying so, the running jobs cancelled, no staging
    directory, the previous run's outputs as they were."""
    pytest.importorskip("pyspark")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Java is not installed")
    corpus = write_jsonl(tmp_path / "c.jsonl", make_corpus(originals=1500, copies=500, words=60, seed=5))
    p, out, before, ev = _spark_dedup(corpus, tmp_path)

    def writing():  # Spark's first write under way: the staging directory it writes into
        st = stages(out)
        return st[0] if st and os.path.isdir(out / st[0] / "clusters.parquet") else None

    caught, err = _signal_when(p, writing, lambda: p.send_signal(signal.SIGTERM))
    assert caught, f"the run ended (rc {p.returncode}) before its staging directory was seen: {err}"
    assert p.returncode == 143, err
    lines = err.strip().splitlines()
    assert lines[-1] == "neardup: terminated (SIGTERM)", err
    # (the JVM's start-up lines come before it; not py4j's tracebacks of the call the signal cut
    # short, nor the JVM's log of the cancelled write)
    assert sum("terminated" in x for x in lines) == 1 and "Traceback" not in err and "ERROR" not in err, err
    _group_gone(p.pid)  # (its JVM too: nothing written after the process ended either; the event log complete)
    assert stages(out) == []
    assert tree(out) == before
    # no job of the run's group was left running when the process ended (none ended only as the
    # JVM went down): each succeeded, or was cancelled with the group
    log = EventLog(ev)
    log.poll()
    groups = {x["group"] for x in log.jobs().values()}
    assert len(groups) == 1 and next(iter(groups)).startswith("neardup-"), groups
    _all_ended_or_cancelled(log.jobs(), next(iter(groups)))


# ---- the CLI: Ctrl-C (SIGINT) ----------------------------------------------------------------


class EventLog:
    """The JSON events of a Spark event log directory (uncompressed), read as they are written."""

    def __init__(self, d) -> None:
        self.d, self.offsets, self.events = str(d), {}, []

    def poll(self) -> list[dict]:
        for root, _, files in os.walk(self.d):
            for f in sorted(files):
                if not f.startswith(("events_", "local-")) or f.endswith(".crc"):
                    continue
                p = os.path.join(root, f)
                with open(p, "rb") as fh:
                    fh.seek(self.offsets.get(p, 0))
                    data = fh.read()
                done = data[: data.rfind(b"\n") + 1]  # (whole lines only: the rest is being written)
                self.offsets[p] = self.offsets.get(p, 0) + len(done)
                self.events += [json.loads(x) for x in done.splitlines() if x.strip()]
        return self.events

    def jobs(self) -> dict[int, dict]:
        """Job id -> {"group", "start", "end" (None while running), "result"}."""
        out = {}
        for e in self.events:
            if e["Event"] == "SparkListenerJobStart":
                out[e["Job ID"]] = {
                    "group": (e.get("Properties") or {}).get("spark.jobGroup.id"),
                    "start": e["Submission Time"],
                    "end": None,
                    "result": None,
                }
            elif e["Event"] == "SparkListenerJobEnd" and e["Job ID"] in out:
                out[e["Job ID"]].update(end=e["Completion Time"], result=e["Job Result"])
        return out


def test_ctrl_c_mid_write_cancels_the_runs_jobs_and_cleans_up(tmp_path):
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group: the driver, the JVM, the
    Python workers) while Spark writes kept.jsonl into the staging directory: the running write
    job is cancelled as part of the run's job group (Spark's event log says so), exit 130, one
    line (no py4j "reentrant call" tracebacks from PySpark's own SIGINT handler, no JVM stack
    trace), no staging directory, the previous run's outputs as they were."""
    pytest.importorskip("pyspark")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Java is not installed")
    docs = make_corpus(originals=600, copies=200, words=60, seed=6)
    for d in docs:  # (a field the run does not read but writes back: the kept.jsonl job lasts)
        d["body_html"] = "<p>" + "x" * 40_000 + "</p>"
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    p, out, before, ev = _spark_dedup(corpus, tmp_path)
    log = EventLog(ev)

    def writing_kept():  # the kept.jsonl write under way: its running job
        st = stages(out)
        if st and os.path.isdir(out / st[0] / "kept.jsonl"):
            log.poll()
            running = [j for j, x in log.jobs().items() if x["end"] is None]
            return max(running) if running else None
        return None

    hit, err = _signal_when(p, writing_kept, lambda: os.killpg(p.pid, signal.SIGINT))
    assert hit is not None, f"the run ended (rc {p.returncode}) before its kept.jsonl job was seen running: {err}"
    assert p.returncode == 130, err
    # Left (seen once in CI, 2026-12-02): PySpark's daemon workers run in a process group of
    # their own with the JVM's stderr; one whose task the cancel cut mid-write may print its
    # failed flush (a BrokenPipeError traceback from pyspark/daemon.py) after neardup's line.
    # Only that exact block is set aside; anything else still fails (docs/spark.md).
    err = _DAEMON_BROKEN_PIPE.sub("", err)
    lines = err.strip().splitlines()
    assert lines[-1] == "neardup: interrupted", err
    assert sum("interrupted" in x for x in lines) == 1, err
    assert "Traceback" not in err and "ERROR" not in err and "\tat " not in err and "reentrant" not in err, err
    _group_gone(p.pid)
    assert stages(out) == []
    assert tree(out) == before
    # the event log: the job that was running ended cancelled with the run's job group, and no
    # job of that group was left running (or failed otherwise, e.g. when the JVM went down)
    jobs = log.jobs() if log.poll() else {}
    group = jobs[hit]["group"]
    assert group and group.startswith("neardup-"), jobs[hit]
    _all_ended_or_cancelled(jobs, group)
    assert jobs[hit]["result"]["Result"] == "JobFailed", jobs[hit]
    assert f"cancelled part of cancelled job group {group}" in jobs[hit]["result"]["Exception"]["Message"], jobs[hit]


def _group_gone(pgid: int, timeout: float = 60) -> None:
    """Wait until no process of the process group `pgid` is left (the command's JVM ends after
    it, once its shutdown has run: the event log is then complete)."""

    def alive() -> bool:
        if not os.path.isdir("/proc/self"):
            try:
                os.killpg(pgid, 0)
                return True
            except ProcessLookupError:
                return False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":  # (a zombie has ended; init may be slow to reap it)
                return True
        return False

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return
        time.sleep(0.05)
    raise AssertionError(f"processes of the command's group {pgid} still running {timeout} s after it ended")


_DAEMON_BROKEN_PIPE = re.compile(
    r"Traceback \(most recent call last\):\n(?:  File \"[^\"]*pyspark/daemon\.py\", line \d+, in \w+\n)+"
    r"BrokenPipeError: \[Errno 32\] Broken pipe\n"
)


def _signal_when(p: subprocess.Popen, ready, send) -> tuple:
    """Poll `ready()` every 5 ms while `p` runs (10 minutes at most); once it returns something,
    `send()` the signal; then wait for `p` to end (killed if it does not). Returns what `ready`
    returned (None: `p` ended first) and `p`'s stderr."""
    hit = None
    try:
        deadline = time.monotonic() + 600
        while p.poll() is None and time.monotonic() < deadline:
            hit = ready()
            if hit is not None:
                send()
                break
            time.sleep(0.005)
        _, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return hit, err


def _spark_dedup(corpus, tmp_path) -> tuple:
    """`neardup dedup --engine spark` started on `corpus` into tmp_path/out, which holds a
    previous run's outputs, Spark's event log in tmp_path/events, in a process group of its own
    (its JVM and Python workers with it, as a terminal's foreground job: a signal to the group
    reaches them all). Returns the process, out, out's tree before, the event log directory."""
    out = tmp_path / "out"
    _previous_run(out, ["clusters.parquet", "pairs.parquet", "kept.jsonl", "report.json"])
    before = tree(out)
    ev = tmp_path / "events"
    ev.mkdir()
    return (
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "dedup",
                "--engine",
                "spark",
                "--master",
                "local[2]",
                corpus,
                "-o",
                str(out),
                "-q",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_SUBMIT_ARGS": _event_log_args(ev)},
            start_new_session=True,
            # SIGINT as a terminal's foreground job has it (a test run in the
            # background of a non-interactive shell inherits it ignored)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        ),
        out,
        before,
        ev,
    )


def _event_log_args(d) -> str:
    """PYSPARK_SUBMIT_ARGS for an uncompressed event log in `d` (read as it is written)."""
    return (
        f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://{d} "
        "--conf spark.eventLog.compress=false pyspark-shell"
    )


def _all_ended_or_cancelled(jobs: dict, group: str) -> None:
    ours = {j: x for j, x in jobs.items() if x["group"] == group}
    assert ours and all(x["end"] is not None for x in ours.values()), ours
    assert all(
        x["result"]["Result"] == "JobSucceeded"
        or f"cancelled part of cancelled job group {group}" in x["result"]["Exception"]["Message"]
        for x in ours.values()
    ), ours


def test_plain_sigint_raises_once_and_leaves_a_handler_of_the_callers(monkeypatch):
    """Without a job: inside plain_sigint SIGINT raises KeyboardInterrupt, a second one (the
    cleanup's time) is ignored, and the handler before is put back; a handler of the caller's
    own is left in place (PySpark's: test_spark_incremental_staged)."""
    from neardup.engines.spark.run import plain_sigint

    def wait_for(cond):
        deadline = time.monotonic() + 10
        while not cond() and time.monotonic() < deadline:
            time.sleep(0.001)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with plain_sigint():
                assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                    wait_for(lambda: False)
                except KeyboardInterrupt:
                    os.kill(os.getpid(), signal.SIGINT)  # the second one: ignored
                    time.sleep(0.05)
                    raise
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        seen = []
        mine = lambda signum, frame: seen.append(signum)  # noqa: E731
        signal.signal(signal.SIGINT, mine)
        with plain_sigint():
            os.kill(os.getpid(), signal.SIGINT)
            wait_for(lambda: seen)
        assert seen == [signal.SIGINT] and signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)
