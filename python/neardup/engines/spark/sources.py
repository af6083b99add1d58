"""The inputs of a Spark run as *sources*: raw rows that can be read again at will.

A source is one input (a JSONL, CSV or Parquet file, or a DataFrame) as a DataFrame of raw
rows with a ``pos`` column (``input << 40 | record number``, the kernels' document name) and
the kernel that checks its rows as the local engine does. The pipeline reads every source
once to compute the documents' keys (no texts kept), then reads it *again* for the texts of
the few documents that reach verification (a broadcast semi-join on ``pos`` in the JVM, so
only those rows go to Python) and for the kept records. Re-reading a file costs a JVM scan;
carrying the texts through the shuffles cost serialising and writing the whole corpus twice.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from neardup import kernels as K
from neardup.errors import InputFileError, InputTypeError, RecordError
from neardup.io.readers import format_of
from neardup.io.records import Fields, Limits

__all__ = ["Source", "read_sources"]


@dataclass
class Source:
    index: int
    path: str
    format: str  # "jsonl", "csv", "parquet" or "dataframe"
    raw: Any  # DataFrame: pos, src, recno, value (JSONL) | pos, src, recno, value, error (CSV)
    # | pos, src, recno, <record columns>
    cols: list[str] | None = None  # the record columns (Parquet, DataFrame), as ``raw`` names them
    cached: Any = None  # a DataFrame this source cached (unpersist after the run)
    renames: dict[str, str] | None = None  # raw's name -> the record's, for a record column named
    # as one of raw's own (``pos``, ``src``, ``recno``)
    tzs: dict[str, str] | None = None  # raw's name -> the time zone of a zoned timestamp column
    # of a local Parquet file (outputs._record_rows)
    files: list[tuple[int, str]] | None = None  # an input of several files (a URL glob, a directory):
    # (first record number, file) of each, in order

    def where(self, recno: int) -> tuple[str, int]:
        """(file, line or row in that file) of record `recno`. The record numbers of an input
        of several files run on from file to file (they name the records apart); a message
        names the file that holds the record and its own line, as the local engine would
        for that file (a glob's third line of its second file was "glob:6")."""
        if not self.files:
            return self.path, recno
        i = bisect.bisect_right(self.files, recno, key=lambda f: f[0]) - 1
        if i < 0:  # pragma: no cover - numbers start at the first file's
            return self.path, recno
        first, name = self.files[i]
        return name, recno - first + 1

    def located(self, err: RecordError) -> RecordError:
        """`err` (a kernel's, naming this input and a record number) naming the file and line."""
        if not self.files:
            return err
        name, line = self.where(err.line)
        return RecordError(name, line, err.reason, field=err.field)

    def checker(self, fields: Fields, limits: Limits, names: list[str]) -> Callable[[pa.Table], pa.Table]:
        """Kernel: raw rows (as :meth:`check_input` selects them) → ``CHECKED`` rows."""
        if self.format == "jsonl":
            return lambda t: K.check_jsonl(t, fields=fields, limits=limits, names=names)
        if self.format == "csv":
            return lambda t: K.check_csv(t, fields=fields, limits=limits, names=names)
        renames = self.renames
        return lambda t: K.check_rows(t, fields=fields, limits=limits, names=names, renames=renames)

    def check_input(self, df):
        """The columns of ``df`` (rows of ``raw``) the checker reads (``pos`` is recomputed)."""
        if self.format == "jsonl":
            return df.select("src", "recno", "value")
        if self.format == "csv":
            return df.select("src", "recno", "value", "error")
        return df.select("src", "recno", *self.cols)


def read_sources(spark, inputs) -> list[Source]:
    from pyspark.sql import functions as F

    if isinstance(inputs, (str, bytes, os.PathLike)) or _is_df(inputs):  # (bytes iterated are numbers)
        inputs = [inputs]
    out = []
    for i, item in enumerate(inputs):
        if _is_df(item):
            cols, renames, sel = _record_columns(item)
            # materialised first: the partition counts and the numbers must be of the same rows
            # (a DataFrame may be computed anew, differently, by each job that reads it)
            numbered = item.select(
                F.spark_partition_id().alias("_pid"), F.monotonically_increasing_id().alias("_mid"), *sel
            ).localCheckpoint(eager=True)
            joined, recno = _dense_recno(spark, numbered, cols)
            raw = joined.select(F.lit(i).alias("src"), recno.alias("recno"), *[numbered[c] for c in cols])
            out.append(Source(i, f"<dataframe {i}>", "dataframe", _with_pos(raw), cols, renames=renames))
            continue
        if not isinstance(item, (str, bytes, os.PathLike)):
            raise InputTypeError(f"inputs[{i}]: expected a path or a Spark DataFrame, got {type(item).__name__}")
        path = os.fsdecode(item)  # a path as the standard library takes one: str, bytes, os.PathLike
        if path == "-":
            raise InputFileError("-: the Spark engine cannot read stdin; write it to a file first")
        if not os.path.exists(path) and "://" not in path:
            raise InputFileError(f"{path}: no such file")
        if os.path.isdir(path):
            raise InputFileError(f"{path}: is a directory, not a file")
        fmt = format_of(path)
        if fmt == "jsonl" and path.lower().endswith((".zst", ".zstd")):
            lines = _read_zst_jsonl(spark, path, i)
            out.append(Source(i, path, "jsonl", _with_pos(lines), cached=lines))
        elif fmt == "jsonl":
            lines, files = _read_jsonl(spark, _hadoop_path(path), i)
            out.append(Source(i, path, "jsonl", _with_pos(lines), files=_files_named(path, files)))
        elif fmt == "csv":
            rows = _read_csv(spark, path, i)
            out.append(Source(i, path, "csv", _with_pos(rows), cached=rows))
        elif fmt == "parquet":
            df = spark.read.parquet(_hadoop_path(path))
            cols, renames, sel = _record_columns(df)
            numbered, recno, files = _parquet_recno(spark, df)
            raw = numbered.select(F.lit(i).alias("src"), recno.alias("recno"), *sel)
            out.append(
                Source(
                    i,
                    path,
                    "parquet",
                    _with_pos(raw),
                    cols,
                    renames=renames,
                    tzs=_parquet_zones(path, dict(zip(df.columns, cols))),
                    files=_files_named(path, files),
                )
            )
        else:
            raise InputFileError(
                f"{path}: the Spark engine reads JSONL, CSV and Parquet, not {fmt}"
            )  # pragma: no cover
    return out


def _parquet_zones(path: str, raw_name: dict[str, str]) -> dict[str, str] | None:
    """The time zone of each zoned top-level timestamp column of the local Parquet file `path`,
    under raw's names (None for a URL: its files are not read here)."""
    if "://" in path or not os.path.isfile(path):
        return None
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception:  # noqa: BLE001 - an unreadable file: Spark's read says so (exit 4)
        return None
    out = {
        raw_name[f.name]: f.type.tz
        for f in schema
        if pa.types.is_timestamp(f.type) and f.type.tz and f.name in raw_name
    }
    return out or None


def _hadoop_path(path: str) -> str:
    """A local file's path as Spark's reader (Hadoop's file system) must be given it: absolute,
    and its glob characters escaped — a file named ``st*ar.jsonl`` was read as a pattern that
    also matched ``stXar.jsonl``, and ``we[ird].jsonl`` as one that matched nothing. A URL
    (``hdfs://``, ``file://``) is the user's pattern, as given. Hadoop cannot name a local
    file with a ``:`` in its name (a relative URI): that is said, not a Java stack trace."""
    if "://" in path:
        return path
    absolute = os.path.abspath(path)
    if ":" in os.path.basename(absolute) or ":" in absolute:
        raise InputFileError(
            f"{path}: Spark (Hadoop's file system) cannot read a file whose path has a ':'; "
            "rename it, or use the local engine"
        )
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", absolute)


#: the columns ``raw`` adds to a record's: a record column of one of these names is renamed
#: in ``raw`` (and named back for the checks and the kept records), not overwritten
_RAW_COLUMNS = ("pos", "src", "recno", "_pid", "_mid")


def _record_columns(df) -> tuple[list[str], dict[str, str] | None, list]:
    """(the record columns as ``raw`` names them, raw name -> record name for the renamed, the
    select expressions): a column named as one of raw's own gets ``__neardup_col_<name>``."""
    names = df.columns
    cols = [f"__neardup_col_{c}" if c in _RAW_COLUMNS else c for c in names]
    renames = {r: c for r, c in zip(cols, names) if r != c} or None
    return cols, renames, [df[c].alias(r) for c, r in zip(names, cols)]


def _dense_recno(spark, numbered, cols: list[str]):
    """(`numbered` joined with each partition's offset, the column 1, 2, 3, ... over its rows)
    for `numbered` (columns ``_pid``, the partition, and ``_mid``,
    ``monotonically_increasing_id``: partition << 33 | row), in partition order, from each
    partition's row count (one JVM-only job). ``monotonically_increasing_id`` alone left gaps
    of 2^33 between partitions, which from partition 128 on ran into the input's bits of
    ``pos`` (two inputs' records took the same name). Each partition's offset comes from a
    broadcast join with a small DataFrame (partition, offset), as Parquet files' do
    (_parquet_recno): it was an array literal of every partition's offset in the plan (until
    2026-12-02)."""
    from pyspark.sql import functions as F

    counts = sorted(numbered.groupBy("_pid").count().collect())
    offs, run = [], 0
    for p, c in counts:
        offs.append((p, run))
        run += c
    (ocol,) = _free_names(cols, "_off")
    offsets = spark.createDataFrame(offs, f"_pid INT, `{ocol}` BIGINT")
    joined = numbered.join(F.broadcast(offsets), "_pid")
    return joined, (F.col(ocol) + (F.col("_mid") - F.shiftleft(F.col("_pid").cast("bigint"), 33)) + 1).cast("bigint")


def _parquet_recno(spark, df):
    """(`df` with what its record numbers need, the record number column, the files for
    :meth:`Source.where`). The record number in a Parquet input: its row's index in its file
    plus the rows of the files before it, in path order (a glob or a directory is several
    files: their row indexes each start at 0, so records of different files took the same
    number and name). Each file's offset comes from a broadcast join with a small DataFrame
    (file, offset): it was a ``create_map`` literal of every file in the plan, a huge
    expression for thousands of files (until 2026-12-01)."""
    from pyspark.sql import functions as F

    path = F.col("_metadata.file_path")
    counts = sorted(df.select(path.alias("f")).groupBy("f").count().collect())
    if len(counts) <= 1:
        return df, (F.col("_metadata.row_index") + 1).cast("bigint"), [(1, _file_name(f)) for f, _ in counts]
    offs, run, files = [], 0, []
    for f, c in counts:
        offs.append((f, run))
        files.append((run + 1, _file_name(f)))
        run += c
    fcol, rcol, ocol = _free_names(df.columns, _FILE_COL, _ROW_COL, _OFF_COL)
    offsets = spark.createDataFrame(offs, f"`{fcol}` STRING, `{ocol}` BIGINT")
    numbered = df.withColumn(fcol, path).withColumn(rcol, F.col("_metadata.row_index")).join(F.broadcast(offsets), fcol)
    return numbered, (F.col(ocol) + F.col(rcol) + 1).cast("bigint"), files


#: the columns _parquet_recno adds (dropped by ``raw``'s select, which takes the record columns
#: by reference); a record column of one of these names makes them longer (_free_names): it
#: was overwritten by the file's name, and the run failed on Spark's missing attribute
_FILE_COL, _ROW_COL, _OFF_COL = "__neardup_file", "__neardup_row", "__neardup_off"


def _free_names(taken, *names: str) -> list[str]:
    """Each of `names`, with underscores added until it is none of `taken` (nor of the others)."""
    used = {c.lower() for c in taken}  # (Spark resolves column names case-insensitively)
    out = []
    for n in names:
        while n.lower() in used:
            n += "_"
        used.add(n.lower())
        out.append(n)
    return out


def _file_name(hadoop_path: str) -> str:
    """A file as Spark's ``_metadata.file_path`` names it, as a message names it: decoded
    (Spark gives it URL-encoded: ``c%20d.jsonl`` for ``c d.jsonl``), a local file's URL with its
    three slashes (``file:///data/a.jsonl``, not Hadoop's ``file:/data/a.jsonl``)."""
    from urllib.parse import unquote

    name = unquote(hadoop_path)
    if name.startswith("file:/") and not name.startswith("file://"):
        return "file://" + name[len("file:") :]
    return name


def _with_pos(raw):
    from pyspark.sql import functions as F

    return raw.withColumn("pos", F.shiftleft(F.col("src").cast("bigint"), K.POS_SHIFT) + F.col("recno"))


def _read_jsonl(spark, path: str, src: int):
    """((src, recno, value): every line of a JSONL input with its 1-based number; its files,
    for :meth:`Source.where`). A URL may name several files (a glob, a directory): the lines
    of each file are numbered from where the previous file's, in path order, end, so that a
    line's file and its line in that file can be told (:func:`_line_numbers`). They were
    numbered by partition, across files: an error named the glob and a line counted over
    every file before it in the partitions' order, which Spark sorts by split size."""
    from pyspark.sql import functions as F

    df = spark.read.text(path).select(
        F.monotonically_increasing_id().alias("_mid"),
        F.col("_metadata.file_path").alias("_file"),
        F.col("_metadata.file_block_start").alias("_block"),
        "value",
    )
    numbered, files = _line_numbers(spark, df)
    return numbered.select(F.lit(src).alias("src"), "recno", "value"), files


def _line_numbers(spark, df):
    """(`df` with ``recno``, the number of each line, and the (first record number, file) of
    each file, in path order). `df` has ``_mid`` (``monotonically_increasing_id``), ``_file``
    and ``_block`` (the file and the start of the split the line was read from). A split is
    read whole, in file order, by one task, so its lines have consecutive ``_mid``: a line's
    number is its ``_mid`` less its split's first, plus the lines of the file's earlier splits
    and of the earlier files — from each split's line count and first ``_mid`` (one JVM-only
    job), joined back by a broadcast hash join (a literal map of thousands of splits is
    searched key by key for every line). Reading the input again gives the same splits and
    numbers."""
    from pyspark.sql import functions as F

    splits = sorted(
        (r._file, r._block, r.n, r.m)
        for r in df.groupBy("_file", "_block").agg(F.count("*").alias("n"), F.min("_mid").alias("m")).collect()
    )
    deltas, files, run = [], [], 0
    for f, block, n, m in splits:
        if not files or files[-1][1] != f:
            files.append((run + 1, f))
        deltas.append((f, block, run + 1 - m))
        run += n
    if not deltas:  # an input with no line
        return df.withColumn("recno", F.lit(0).cast("bigint")), []
    table = spark.createDataFrame(deltas, "_file STRING, _block BIGINT, _delta BIGINT")
    numbered = df.join(F.broadcast(table), ["_file", "_block"]).withColumn(
        "recno", (F.col("_mid") + F.col("_delta")).cast("bigint")
    )
    return numbered, [(first, _file_name(f)) for first, f in files]


def _files_named(path: str, files: list[tuple[int, str]]) -> list[tuple[int, str]] | None:
    """The files an input's messages name its records by (:meth:`Source.where`): those of a
    URL that named several, or one other than itself (a glob, a directory); None when the
    input is its one file (a local path is the user's name for it: kept)."""
    if len(files) > 1 or ("://" in path and files and files[0][1] != path):
        return files
    return None


def _read_zst_jsonl(spark, path: str, src: int):
    """(src, recno, value as bytes) of a .jsonl.zst file. Hadoop has no zstd codec without
    its native library, so one Python task decompresses the file with the local engine's
    reader (the same line splitting and numbering, the raw bytes: invalid UTF-8 is reported
    as the local engine reports it); the lines are cached, not decompressed at every read.
    Like a .gz file, a .zst file is one task: neither format can be split."""
    from neardup.io.readers import JsonlSource

    local = _local_path(path, ".jsonl.zst")

    def batches():
        for start, block in JsonlSource(local).blocks():
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([src] * len(block), pa.int32()),
                    pa.array(range(start, start + len(block)), pa.int64()),
                    pa.array(block, pa.binary()),
                ],
                names=["src", "recno", "value"],
            )

    return _one_task(spark, batches, "src INT, recno BIGINT, value BINARY")


def _read_csv(spark, path: str, src: int):
    """(src, recno, value, error) of a CSV/TSV file, read by the local engine's reader
    (``CsvSource``) so that fields, record numbers (the line a record starts on) and the
    reader's errors are the local engine's: ``value`` is the record (a dict of strings) as
    JSON, ``error`` the reader's :class:`RecordError` (malformed CSV, wrong number of
    columns, invalid UTF-8) as JSON. A quoted field may span lines, so a CSV file cannot be
    split at line ends: like .jsonl.zst, it is one task, and its records are cached."""
    import json

    from neardup.errors import RecordError
    from neardup.io.readers import CsvSource
    from neardup.io.writers import dumps

    local = _local_path(path, "CSV")
    first = CsvSource(local)  # what the reader refuses at its header is said here, on the driver
    first.name = path
    for _ in first.records():
        break

    def batches():
        reader = CsvSource(local)
        reader.name = path  # errors name the file as the user gave it, as the local engine does
        recs, vals, errs = [], [], []
        for recno, rec in reader.records():
            recs.append(recno)
            bad = isinstance(rec, RecordError)
            vals.append(None if bad else dumps(rec))
            errs.append(json.dumps(rec.as_dict()) if bad else None)
            if len(recs) >= 8192:
                yield _csv_batch(src, recs, vals, errs)
                recs, vals, errs = [], [], []
        if recs:
            yield _csv_batch(src, recs, vals, errs)

    return _one_task(spark, batches, "src INT, recno BIGINT, value STRING, error STRING")


def _csv_batch(src: int, recs: list, vals: list, errs: list) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([src] * len(recs), pa.int32()),
            pa.array(recs, pa.int64()),
            pa.array(vals, pa.string()),
            pa.array(errs, pa.string()),
        ],
        names=["src", "recno", "value", "error"],
    )


def _local_path(path: str, what: str) -> str:
    if "://" in path and not path.startswith("file://"):
        raise InputFileError(f"{path}: the Spark engine reads {what} from the local file system only")
    return path[len("file://") :] if path.startswith("file://") else os.path.abspath(path)


def _one_task(spark, batches, ddl: str):
    """The batches ``batches()`` yields, made by one Python task and cached for the run (read
    once, however often the pipeline reads the source again)."""
    from pyspark import StorageLevel

    def run(it):
        for _ in it:
            yield from batches()

    df = spark.range(0, 1, 1, 1).mapInArrow(run, ddl)
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    df.count()
    return df


def _is_df(obj) -> bool:
    return type(obj).__name__ == "DataFrame" and type(obj).__module__.startswith("pyspark")
