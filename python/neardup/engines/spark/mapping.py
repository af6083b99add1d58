"""``mapInArrow`` with neardup's kernels: a kernel is a function of an Arrow table, run on every
partition (or on each whole partition, for grouping kernels), its output cast to the Spark schema."""

from __future__ import annotations

import threading

import pyarrow as pa

__all__ = ["_map", "_target_schema", "_workers_ignore_sigint"]


def _target_schema(spark_schema):
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(spark_schema, prefers_large_types=False)
    except TypeError:  # older signatures
        return to_arrow_schema(spark_schema)


def _map(df, fn, ddl: str, whole_partition: bool = False):
    """``df.mapInArrow`` with a kernel ``fn(pa.Table) -> pa.Table``. ``whole_partition``
    hands the kernel the whole partition at once (grouping kernels: a group never spans two
    calls)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(ddl) if isinstance(ddl, str) else ddl
    target = _target_schema(schema)

    def conform(t: pa.Table):
        t = t.select(target.names).cast(target)
        yield from t.to_batches(max_chunksize=8192)

    def run(batches):
        _workers_ignore_sigint()
        if whole_partition:
            bl = list(batches)
            if not bl:
                return
            t = pa.Table.from_batches(bl)
            yield from conform(fn(t))
        else:
            for b in batches:
                yield from conform(fn(pa.Table.from_batches([b])))

    return df.mapInArrow(run, schema)


def _workers_ignore_sigint() -> None:
    """In a Python worker (a kernel's task): SIGINT ignored from now on, in this worker process.
    A terminal's Ctrl-C reaches every process of its foreground group, local mode's workers too
    (PySpark's worker restores Python's handler that the JVM's ignoring would have passed on):
    a worker interrupted in a task wrote its error to a socket the cancelled task had closed,
    and PySpark's daemon printed that BrokenPipeError's traceback after the command's one line.
    Ctrl-C is the driver's: it cancels the run's jobs, which ends their tasks."""
    import signal

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
