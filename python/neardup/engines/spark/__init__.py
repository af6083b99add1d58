"""The dedup job on Apache Spark (PySpark): the local engine's answer, past one machine.

Every stage is an engine-neutral kernel from :mod:`neardup.kernels` (``pyarrow.Table ->
pyarrow.Table``) that Spark runs with ``mapInArrow`` on the executors; Spark only moves data
(hash-partitioning, joins, checkpoints). See docs/spark.md.

    from neardup.engines.spark import dedup_spark, session
    spark = session("local[2]")                      # or your own SparkSession
    result = dedup_spark(spark, ["day.jsonl.gz"], "out/", time_field="published_at")

``neardup dedup --engine spark [--master URL] INPUT... -o OUTDIR`` runs the same.
"""

from __future__ import annotations

from neardup.engines.spark.run import SparkDedupResult, dedup_spark, read_outputs, run_spark, session

__all__ = ["dedup_spark", "run_spark", "session", "read_outputs", "SparkDedupResult"]
