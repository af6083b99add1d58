"""The Spark runner: reading, the stages as ``mapInArrow`` kernels, outputs and the report.
The stages are short steps over one run object (:mod:`.stages`); this module runs them in
order and owns what is around them: the job group, the interrupt, the outputs' staging
directory, the cleanup.

Data flow (N = ``partitions``; every arrow is a kernel from :mod:`neardup.kernels`):

1. read: each input as a *source* (:mod:`.sources`: JSONL lines with their line numbers,
   CSV records as the local reader makes them, Parquet rows, DataFrame rows) → the local engine's record checks fused with ``doc_keys``
   (exact key, token count, band keys) in one Python pass; the texts are dropped there.
   Bad records and duplicate ids are listed (or raised with ``on_error="stop"``).
2. exact pass: the records (no texts) → ``repartition(N, xkey)`` → ``exact_groups``
   (representative = earliest document with the key).
3. band rows of the representatives (``posexplode`` of the band keys; exact copies dropped by
   a broadcast anti-join) → ``repartition(N, band, key)`` → ``bucket_members`` (buckets of two
   or more; identical member lists once) → the members' texts read again from the sources
   (broadcast semi-join) → ``repartition(N, bid)`` → ``verify_buckets`` (per-bucket
   union-find, spanning edges only).
   With ``method="simhash"`` the band rows are the fingerprint's ``max_distance + 1`` blocks
   and ``simhash_candidates`` / ``simhash_verify`` (:mod:`neardup.kernels.simhash`) take the
   place of ``bucket_members`` / ``verify_buckets``: the local engine's candidates (every
   pair within ``max_distance`` bits), each owned by one bucket.
4. components of exact + verified edges: ``large_star`` / ``small_star`` rounds, each
   repartitioned by node; convergence when the per-partition ``edge_checksum`` sums do not
   change; a bound on rounds; each round checkpointed. No pair ever reaches the driver.
5. keepers: ``repartition(N, label)`` → ``keeper_rows`` (the local keeper rule) → similarity
   of each member to its keeper (``pair_similarity``) → clusters, pairs; the kept records
   are the sources read once more, filtered in the JVM (:mod:`.outputs`).

So the corpus crosses the JVM/Python boundary once in full (step 1) and is never shuffled;
only the bucket members' texts (a few percent) are read a second time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from neardup import kernels as K
from neardup.engines.spark.mapping import _map as _map
from neardup.engines.spark.outputs import OutputStage, stale_kept, write_outputs
from neardup.engines.spark.stages import _CHECKED_DDL as _CHECKED_DDL
from neardup.engines.spark.stages import (
    MAX_SKIPPED_LISTED,
    OutputFrames,
    SparkRun,
    _local_files,
    build_report,
    clusters,
    collect_rows,
    exact_pass,
    find_candidates,
    output_frames,
    read_inputs,
    verify_candidates,
)
from neardup.engines.spark.stages import _append as _append
from neardup.engines.spark.stages import _checked_inputs as _checked_inputs
from neardup.engines.spark.stages import _rec_error as _rec_error
from neardup.errors import InputFileError, InvalidParameterError
from neardup.io.writers import ensure_output_dir, writable_tree
from neardup.stages.options import DedupOptions
from neardup.stages.outputs import DedupResult, out_path
from neardup.stages.report import peak_rss_mb

__all__ = ["session", "dedup_spark", "run_spark", "read_outputs", "SparkDedupResult", "MAX_SKIPPED_LISTED"]

DEFAULT_MAX_ROUNDS = 64

# (``_map``, ``_CHECKED_DDL``, ``_append``, ``_checked_inputs``, ``_rec_error``: imported from
# here by .incremental; the stages' pieces live in .stages)


# ---- session ----------------------------------------------------------------------------


def session(
    master: str = "local[2]", app_name: str = "neardup", conf: dict | None = None, shuffle_partitions: int | None = None
):
    """A SparkSession for neardup. With a ``local[...]`` master everything is bound to
    127.0.0.1 and the UI is off; executors run this interpreter (``PYSPARK_PYTHON``)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = SparkSession.builder.master(master).appName(app_name)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf or {})
    for k, v in settings.items():
        b = b.config(k, v)
    return b.getOrCreate()


# ---- result -----------------------------------------------------------------------------


@dataclass
class SparkDedupResult(DedupResult):
    """What a Spark run found: the report, and (``collect=True``) the rows of the outputs in
    the local engine's form (ids as strings). The local engine's result type, so the two
    engines' results are used the same way."""


def read_outputs(outdir: str) -> SparkDedupResult:
    """Read a Spark run's output directory (Parquet) back in the local engine's row form."""
    import pyarrow.dataset as ds

    def rows(name: str) -> list[dict]:
        p = os.path.join(outdir, name)
        return ds.dataset(p, format="parquet").to_table().to_pylist() if os.path.exists(p) else []

    with open(os.path.join(outdir, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    clusters = sorted(rows("clusters.parquet"), key=lambda c: c["cluster"])
    pairs = rows("pairs.parquet")
    # the kept file this run wrote (report.json lists it): an earlier run's other kept file
    # may still be there (read before 2026-12-01, when kept.parquet was read whatever the run wrote)
    id_field = report["options"]["fields"]["id"]
    kept: list[Any] = []
    files = report.get("files") or []
    if "kept.parquet" in files:
        t = ds.dataset(os.path.join(outdir, "kept.parquet"), format="parquet").to_table()
        kept = t.column(id_field).to_pylist() if id_field in t.column_names else []
    elif "kept.jsonl" in files:
        kdir = os.path.join(outdir, "kept.jsonl")
        for name in sorted(n for n in os.listdir(kdir) if n.startswith("part-")):
            with open(os.path.join(kdir, name), encoding="utf-8") as f:
                kept += [json.loads(line).get(id_field) for line in f if line.strip()]
    return SparkDedupResult(report=report, clusters=clusters, pairs=pairs, kept=kept)


# ---- the run ----------------------------------------------------------------------------


def dedup_spark(
    spark,
    inputs,
    out=None,
    *,
    partitions: int | None = None,
    checkpoint_dir: str | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    collect: bool = False,
    **kwargs,
) -> SparkDedupResult:
    """``neardup.dedup`` on Spark: the same keyword arguments (``id_field``, ``threshold``,
    ``prefer_source``, ``method``, ``max_distance``, ...). ``inputs``: JSONL/Parquet paths
    (local or any Hadoop file system URL), CSV/TSV and .jsonl.zst paths (local file system)
    or Spark DataFrames. ``out``: directory for clusters.parquet, pairs.parquet,
    kept.parquet (or kept.jsonl with ``output_format="jsonl"``) and report.json.
    ``collect=True`` also returns the output rows (small runs and tests only)."""
    kwargs.pop("progress", None)
    opts = DedupOptions.from_kwargs(**kwargs)
    return run_spark(
        spark,
        inputs,
        out,
        opts,
        partitions=partitions,
        checkpoint_dir=checkpoint_dir,
        max_rounds=max_rounds,
        collect=collect,
    )


def run_spark(
    spark,
    inputs,
    out,
    opts: DedupOptions,
    *,
    partitions: int | None = None,
    checkpoint_dir: str | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    collect: bool = False,
) -> SparkDedupResult:
    # Ctrl-C raises KeyboardInterrupt and nothing else while the run goes (plain_sigint): the
    # run's own cleanup cancels its job group, as after SIGTERM in the command
    with plain_sigint():
        return _run_spark(
            spark,
            inputs,
            out,
            opts,
            partitions=partitions,
            checkpoint_dir=checkpoint_dir,
            max_rounds=max_rounds,
            collect=collect,
        )


@contextmanager
def plain_sigint():
    """While the block runs (in the main thread), SIGINT (Ctrl-C) raises KeyboardInterrupt and
    does nothing else, once: a second one while the first one's cleanup runs is ignored, as
    the command's SIGTERM (``neardup.cli._terminate_as_interrupt``). The handler in place before
    is put back after.

    PySpark's SparkContext installs a SIGINT handler that calls ``cancelAllJobs`` through py4j
    from inside the handler, so in the main thread, most often while that thread is waiting in
    a py4j call for a job: the call goes out on the connection that is still waiting for the
    job's answer (py4j's "reentrant call" error and its tracebacks on stderr; or it waits
    behind the job, which is not cancelled), and it cancels every job of the session. The run's
    own cleanup (``_stop_jobs``: its job group only, from a thread with a connection of its
    own) does it right. Only PySpark's handler or Python's default one is replaced: a handler
    of the caller's own is left in place."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not (previous is signal.default_int_handler or _is_pyspark_sigint(previous)):
        yield
        return
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _is_pyspark_sigint(h) -> bool:
    """`h` is the SIGINT handler a SparkContext installs (``SparkContext.__init__``'s own)."""
    return getattr(h, "__qualname__", "").startswith("SparkContext.") and getattr(h, "__module__", "").startswith(
        "pyspark."
    )


def _run_spark(
    spark,
    inputs,
    out,
    opts: DedupOptions,
    *,
    partitions: int | None,
    checkpoint_dir: str | None,
    max_rounds: int,
    collect: bool,
) -> SparkDedupResult:
    """The run: its stages (:func:`_stages`) inside a job group of their own, and the
    lifecycle around them: an interrupt or a failure cancels the run's jobs and discards the
    outputs' staging directory; the session's settings are put back and the run's cache
    released after."""
    run = _new_run(spark, inputs, out, opts, partitions, checkpoint_dir, max_rounds)
    interrupted = False
    # the run's jobs in a job group of their own: an interrupt cancels them, and the jobs a JVM
    # call still under way would start after it (_stop_jobs); the caller's group is put back after
    group = f"neardup-{os.getpid()}x{os.urandom(4).hex()}"
    sc = spark.sparkContext
    saved_group = {k: sc.getLocalProperty(k) for k in _JOB_GROUP_KEYS}
    sc.setJobGroup(group, "neardup dedup")
    try:
        return _stages(run, collect)
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)  # Ctrl-C; SIGTERM/SIGHUP in the CLI (cli.Terminated)
        if interrupted or run.output_stage is not None:
            _stop_jobs(spark, group, exc)  # (before the staging directory goes: tasks may write into it)
        if run.output_stage is not None:
            run.output_stage.discard()
        err = _input_error(exc) if isinstance(exc, Exception) else None
        if err is None:
            raise
        raise err from None
    finally:
        _clean_up(run, sc, saved_group, interrupted)


def _new_run(
    spark, inputs, out, opts: DedupOptions, partitions: int | None, checkpoint_dir: str | None, max_rounds: int
) -> SparkRun:
    """The run's parameters checked (before any job), its output directory made."""
    opts.check()
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise InvalidParameterError(f"partitions must be a positive integer, got {partitions!r}")
    out = out_path(out)  # a str (bytes and os.PathLike as the local engine takes them)
    if checkpoint_dir is not None:
        checkpoint_dir = out_path(checkpoint_dir, "checkpoint_dir")
    if out is not None:  # before the job, not after it (a file there failed the run at the end)
        ensure_output_dir(out)
    t_start = time.perf_counter()
    # SimHash has no LSH bands: its band rows are the fingerprint's max_distance + 1 blocks
    b, r = (0, 0) if opts.settings.method == "simhash" else opts.settings.band_shape()
    params = K.KernelParams.from_options(opts, b, r, threads=1)
    if checkpoint_dir:
        spark.sparkContext.setCheckpointDir(checkpoint_dir)
    return SparkRun(
        spark=spark,
        inputs=inputs,
        out=out,
        opts=opts,
        limits=opts.limits(),
        params=params,
        bands=b,
        rows=r,
        partitions=partitions,
        reliable_checkpoints=bool(checkpoint_dir),
        max_rounds=max_rounds,
        t_start=t_start,
    )


def _stages(run: SparkRun, collect: bool) -> SparkDedupResult:
    """The stages in order (:mod:`.stages`), then the outputs and report.json."""
    read_inputs(run)  # 1. read and number the inputs: checks, keys, bad records, duplicate ids
    exact_pass(run)  # 2. the exact pass
    find_candidates(run)  # 3. signatures' band rows, buckets of two or more: the candidates
    verify_candidates(run)  # 3. their verification: edges
    clusters(run)  # 4. connected components, 5. keepers
    frames = output_frames(run)
    report = build_report(run)
    result = SparkDedupResult(report=report)
    if run.out is not None:
        _write_outputs(run, run.out, frames, report)
    if collect:
        collect_rows(run, frames, result)
    report["stages"] = run.log.as_list()
    report["seconds"] = round(time.perf_counter() - run.t_start, 4)
    report["peak_rss_mb"] = peak_rss_mb()
    report["peak_rss_note"] = "the driver process only; executors are separate processes"
    if run.output_stage is not None:
        _commit_outputs(run, report)
    return result


def _write_outputs(run: SparkRun, out: str, frames: OutputFrames, report: dict[str, Any]) -> None:
    """The outputs as one set (outputs.OutputStage): written into a staging directory in OUT
    and moved into place together at the end (:func:`_commit_outputs`); a failure or an
    interrupt on the way leaves the previous run's outputs as they were."""
    run.output_stage = OutputStage(out)
    run.output_stage.create()
    with run.log.stage("write") as st:
        files = write_outputs(
            run.output_stage.path,
            frames.clusters,
            frames.pairs,
            frames.dropped,
            frames.alts,
            run.sources,
            run.opts,
            run.spark,
        )
        st.count = len(files)
    report["outdir"] = os.fspath(out)
    report["files"] = files + ["report.json"]


def _commit_outputs(run: SparkRun, report: dict[str, Any]) -> None:
    """report.json into the staging directory, then the set moved into place."""
    from neardup.io.writers import atomic_open

    stage = run.output_stage
    with atomic_open(os.path.join(stage.path, "report.json")) as f:
        json.dump(writable_tree(report), f, indent=2, ensure_ascii=False)  # (a file name not UTF-8)
        f.write("\n")
    # the rerun rule (the previous report.json, read before it is replaced): the other
    # format's kept output of the previous run goes with the previous set
    stage.commit(report["files"], stale_kept(stage.out, run.opts.output_format, _local_files(run.sources)))


def _clean_up(run: SparkRun, sc, saved_group: dict, interrupted: bool) -> None:
    """The session's shuffle partitions and job group put back; the run's cache released."""
    # (after an interrupt, never in place of it: the JVM may be gone or slow to answer)
    try:
        if run.saved_conf is not None:
            run.spark.conf.set("spark.sql.shuffle.partitions", run.saved_conf)
        for k, v in saved_group.items():
            sc.setLocalProperty(k, v)
    except Exception:
        if not interrupted:
            raise
    run.cached += [s.cached for s in run.sources if s.cached is not None]
    for df in run.cached if not interrupted else ():  # (an interrupted run's cache goes with its process)
        try:
            df.unpersist()
        except Exception:  # pragma: no cover
            pass


#: The local properties SparkContext.setJobGroup sets (put back after the run).
_JOB_GROUP_KEYS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")

#: Set by the command (``neardup dedup --engine spark``, whose session it is): once a run is being
#: stopped, the JVM's log is turned off (a cancelled write's "ERROR FileFormatWriter: Aborting
#: job" and its stack trace before the command's one line). A session of the caller's is left as is.
QUIET_STOP = False

#: Seconds the cleanup after an interrupt gives the JVM at most (to cancel the run's jobs, to
#: answer the call the interrupt cut short, for the cancelled tasks to end): it never hangs.
STOP_WAIT = 30.0


def _stop_jobs(spark, group: str, exc: BaseException, wait: float = STOP_WAIT) -> None:
    """After an interrupt or a failure: cancel the run's Spark jobs (those running, and those a
    JVM call still under way would start: ``cancelJobGroupAndFutureJobs``), let the call an
    interrupt cut short (if it landed inside one) finish, and wait for the tasks of the run's
    unfinished jobs to end (a failed or cancelled job's other tasks are killed, not at once),
    so that nothing still writes into the staging directory when it is deleted. Bounded by
    `wait` seconds in all; never raises.

    An interrupt that lands inside a py4j call leaves this thread's connection waiting for that
    call's answer: a call on it would read that answer as its own, or wait behind the job for
    its turn. So the JVM is asked by a thread of its own (a connection of its own), and the
    cut connection is closed (the next call on this thread opens a new one), its answer read
    first if py4j left it waiting for one (the py4j Spark 4 ships closes it itself). The call
    itself may go on in the JVM: the jobs it would start are the ones cancelled in advance."""
    deadline = time.monotonic() + wait

    def cancel() -> None:
        sc = spark.sparkContext
        quiet = not QUIET_STOP
        while True:  # (a call may meet a connection py4j is shutting down: tried again until the deadline)
            try:
                if not quiet:  # (before the cancel, and tried again as it is: a log left on printed
                    sc.setLogLevel("OFF")  # a cancelled write's JVM stack trace)
                    quiet = True
                try:
                    sc._jsc.sc().cancelJobGroupAndFutureJobs(group)
                except Exception as e:
                    if "cancelJobGroupAndFutureJobs" not in str(e):
                        raise
                    sc.cancelAllJobs()  # (a Spark before 4.0)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def tasks_ended() -> None:
        tracker = spark.sparkContext.statusTracker()
        stages: set[int] = set()
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            if info is not None and info.status != "SUCCEEDED":
                stages.update(info.stageIds)
        while time.monotonic() < deadline:
            infos = [tracker.getStageInfo(s) for s in stages]
            if not any(i.numActiveTasks for i in infos if i is not None):
                return
            time.sleep(0.05)

    _bounded(cancel, deadline)
    if isinstance(exc, KeyboardInterrupt):
        _finish_cut_call(exc, deadline)
    _bounded(tasks_ended, deadline)


def _bounded(fn, deadline: float) -> None:
    """``fn()`` in a daemon thread (a py4j connection of its own), waited for until `deadline`;
    its errors are dropped."""

    def run() -> None:
        try:
            fn()
        except Exception:
            pass

    t = threading.Thread(target=run, name="neardup-spark-stop", daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))


def _finish_cut_call(exc: BaseException, deadline: float) -> None:
    """If `exc` landed inside a py4j call of this thread (its traceback ends in py4j's
    ``send_command``), close that connection, first reading the call's answer (until
    `deadline`) if it was waiting for it: the call is then over in the JVM too. Never raises."""
    import linecache
    import traceback

    cut = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if code.co_name == "send_command" and code.co_filename.endswith(os.path.join("py4j", "clientserver.py")):
            cut = frame, lineno
    if cut is None:
        return
    frame, lineno = cut
    conn: Any = frame.f_locals.get("self")  # py4j's connection (anything else: the errors are caught)
    try:
        if "readline" in linecache.getline(frame.f_code.co_filename, lineno):
            while conn.socket is not None and time.monotonic() < deadline:
                conn.socket.settimeout(max(0.01, deadline - time.monotonic()))
                line = conn.stream.readline()
                if not line or line.startswith(b"!"):  # (the answer: py4j's RETURN_MESSAGE)
                    break
    except Exception:
        pass
    try:
        conn.close()
    except Exception:
        pass


#: Spark's error classes for an input it cannot read (a truncated .gz, a damaged Parquet footer,
#: a path that is not there): the local engine's InputFileError (exit 4), not a JVM stack trace
_READ_ERRORS = re.compile(r"\[((?:FAILED_READ_FILE|PATH_NOT_FOUND|CANNOT_READ_FILE_FOOTER)[A-Z_.]*)\] ?([^\n]*)")


def _input_error(exc: BaseException) -> InputFileError | None:
    """The InputFileError a Spark read failure stands for, else None: Spark's own sentence (it
    names the file) and the first cause the JVM gives (``EOFException: Unexpected end of
    input stream``)."""
    msg = str(exc)
    m = _READ_ERRORS.search(msg)
    if m is None:
        return None
    what = m.group(2).split(" SQLSTATE")[0].strip()
    cause = next((line.split("Caused by:", 1)[1].strip() for line in msg.splitlines() if "Caused by:" in line), None)
    return InputFileError(f"{what}" + (f" ({cause})" if cause else "") + f" [{m.group(1)}]")
