"""The inputs of a Spark run as *sources*: raw rows that can be read again at will.

A source is one input (a JSONL file, a Parquet file or a DataFrame) as a DataFrame of raw
rows with a ``pos`` column (``input << 40 | record number``, the kernels' document name) and
the kernel that checks its rows as the local engine does. The pipeline reads every source
once to compute the documents' keys (no texts kept), then reads it *again* for the texts of
the few documents that reach verification (a broadcast semi-join on ``pos`` in the JVM, so
only those rows go to Python) and for the kept records. Re-reading a file costs a JVM scan;
carrying the texts through the shuffles cost serialising and writing the whole corpus twice.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from neardup import kernels as K
from neardup.io.errors import InputFileError
from neardup.io.readers import format_of
from neardup.io.records import Fields, Limits

__all__ = ["Source", "read_sources"]


@dataclass
class Source:
    index: int
    path: str
    format: str           # "jsonl", "parquet" or "dataframe"
    raw: Any              # DataFrame: pos, src, recno, value (JSONL) | pos, src, recno, <record columns>
    cols: list[str] | None = None  # the record columns (Parquet, DataFrame)

    def checker(self, fields: Fields, limits: Limits, names: list[str]) -> Callable[[pa.Table], pa.Table]:
        """Kernel: raw rows (as :meth:`check_input` selects them) → ``CHECKED`` rows."""
        if self.format == "jsonl":
            return lambda t: K.check_jsonl(t, fields=fields, limits=limits, names=names)
        return lambda t: K.check_rows(t, fields=fields, limits=limits, names=names)

    def check_input(self, df):
        """The columns of ``df`` (rows of ``raw``) the checker reads (``pos`` is recomputed)."""
        return df.select("src", "recno", "value") if self.format == "jsonl" else df.select("src", "recno", *self.cols)


def read_sources(spark, inputs) -> list[Source]:
    from pyspark.sql import functions as F

    if isinstance(inputs, (str, os.PathLike)) or _is_df(inputs):
        inputs = [inputs]
    out = []
    for i, item in enumerate(inputs):
        if _is_df(item):
            cols = item.columns
            raw = item.select(F.lit(i).alias("src"), (F.monotonically_increasing_id() + 1).alias("recno"), *cols)
            raw = raw.localCheckpoint(eager=True)  # the record numbers must not change between reads
            out.append(Source(i, f"<dataframe {i}>", "dataframe", _with_pos(raw), cols))
            continue
        path = os.fspath(item)
        if path == "-":
            raise InputFileError("-: the Spark engine cannot read stdin; write it to a file first")
        if not os.path.exists(path) and "://" not in path:
            raise InputFileError(f"{path}: no such file")
        if os.path.isdir(path):
            raise InputFileError(f"{path}: is a directory, not a file")
        fmt = format_of(path)
        if fmt == "jsonl":
            out.append(Source(i, path, "jsonl", _with_pos(_read_jsonl(spark, path, i))))
        elif fmt == "parquet":
            df = spark.read.parquet(path)
            cols = df.columns
            raw = df.select(F.lit(i).alias("src"), (F.col("_metadata.row_index") + 1).alias("recno"), *cols)
            out.append(Source(i, path, "parquet", _with_pos(raw), cols))
        else:
            raise InputFileError(f"{path}: the Spark engine reads JSONL (.jsonl, .jsonl.gz) and Parquet, not {fmt}")
    return out


def _with_pos(raw):
    from pyspark.sql import functions as F

    return raw.withColumn("pos", F.shiftleft(F.col("src").cast("bigint"), K.POS_SHIFT) + F.col("recno"))


def _read_jsonl(spark, path: str, src: int):
    """(src, recno, value): every line of one JSONL file with its 1-based line number. The
    line numbers come from per-partition line counts (one JVM-only job); a file's splits are
    read in file order, and reading the file again gives the same splits and numbers."""
    from pyspark.sql import functions as F

    if path.lower().endswith((".zst", ".zstd")):
        raise InputFileError(f"{path}: the Spark engine reads plain and .gz JSONL (decompress .zst first)")
    df = spark.read.text(path).select(
        F.spark_partition_id().alias("_pid"), F.monotonically_increasing_id().alias("_mid"), "value")
    counts = dict(df.groupBy("_pid").count().collect())
    offs, run = [], 0
    for p in range(max(counts) + 1 if counts else 0):
        offs.append(run)
        run += counts.get(p, 0)
    off_col = F.element_at(F.array(*[F.lit(o) for o in offs] or [F.lit(0)]), F.col("_pid") + 1)
    recno = off_col + (F.col("_mid") - F.shiftleft(F.col("_pid").cast("bigint"), 33)) + 1
    return df.select(F.lit(src).alias("src"), recno.cast("bigint").alias("recno"), "value")


def _is_df(obj) -> bool:
    return type(obj).__name__ == "DataFrame" and type(obj).__module__.startswith("pyspark")
