"""``neardup dedup --engine spark [--master URL] [--partitions N]``: the command's Spark part.

``neardup.cli.dedup`` calls :func:`add_options` on the dedup parser (when dedup runs or its
help is shown) and hands the parsed arguments to :func:`run` when ``--engine spark`` is given;
everything Spark-specific of the command lives here. This module imports nothing of Spark (nor
``neardup.engines.spark``, whose package imports pyarrow) until :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys

from neardup.cli.exits import EXIT_OK, EXIT_USAGE

__all__ = ["add_options", "run"]


def add_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine")
    g.add_argument(
        "--engine",
        choices=["local", "spark"],
        default="local",
        help="local (default): this process; spark: Apache Spark (pip install 'neardup[spark]')",
    )
    g.add_argument(
        "--master", default=None, help="Spark master URL (default: the session's, or local[*] when none is running)"
    )
    g.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="Spark: partitions of every shuffle (default: spark.sql.shuffle.partitions if the "
        "session sets it, else the input's read splits, at least two per core)",
    )
    g.add_argument(
        "--checkpoint-dir",
        default=None,
        help="Spark: reliable checkpoints of the connected-components rounds here (default: local checkpoints)",
    )


def run(a: argparse.Namespace) -> int:
    """Run ``neardup dedup`` on Spark with the parsed arguments; returns the exit code."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("neardup dedup --engine spark: pyspark is not installed (pip install 'neardup[spark]')", file=sys.stderr)
        return EXIT_USAGE
    from neardup.engines.spark.run import run_spark, session
    from neardup.io.writers import writable_tree
    from neardup.stages.report import summary_text

    if not a.out:
        print("neardup dedup: -o/--out OUTDIR is required with --engine spark", file=sys.stderr)
        return EXIT_USAGE
    if a.demo or not a.inputs:
        print("neardup dedup --engine spark: give INPUT files (JSONL, CSV or Parquet)", file=sys.stderr)
        return EXIT_USAGE
    if a.partitions is not None and a.partitions < 1:  # (before a session starts: ~15 s)
        print(f"neardup dedup: partitions must be a positive integer, got {a.partitions}", file=sys.stderr)
        return EXIT_USAGE
    from neardup.cli.settings_args import options

    opts = options(a)  # (the settings checked before a session starts; no threads or progress bars)
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None or (a.master and spark.sparkContext.master != a.master):
        spark = session(a.master or "local[*]")
        # the command prints its own summary and errors: Spark's WARN lines (a window's
        # "No Partition Defined", a glob's FileNotFoundException it then recovers from) are noise
        spark.sparkContext.setLogLevel("ERROR")
    _quiet_when_stopped()
    res = run_spark(spark, a.inputs, a.out, opts, partitions=a.partitions, checkpoint_dir=a.checkpoint_dir)
    if a.json:
        print(json.dumps(writable_tree(res.report), indent=2))  # (as report.json writes a name not UTF-8)
    elif not a.quiet:
        print(summary_text(res.report))
    return EXIT_OK


def _quiet_when_stopped() -> None:
    """A run stopped by Ctrl-C, SIGTERM or SIGHUP ends with the command's one line
    (``neardup: terminated (SIGTERM)``): py4j's log records of the call the interrupt cut short
    (tracebacks of it, on the root logger and py4j's) and the JVM's log once the run's jobs are
    being cancelled (``run.QUIET_STOP``) are not printed. This process's session only."""
    import logging

    from neardup.engines.spark import run as spark_run

    class _CutCall(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return not str(record.msg).startswith("KeyboardInterrupt while sending command")

    logging.getLogger().addFilter(_CutCall())
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    spark_run.QUIET_STOP = True
