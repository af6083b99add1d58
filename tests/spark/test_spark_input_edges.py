"""Inputs the Spark engine named wrongly or refused with a JVM stack trace (found by trying it
as a user): several Parquet files in one input, DataFrames of many partitions, record columns
named as the engine's own, file names with glob characters, unreadable files, bad options."""

import gzip
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from parity import assert_same

import neardup
from neardup.errors import InputFileError, OutputError

T = "the quick brown fox jumps over the lazy dog and then runs far away into the dark forest"


def _unrelated(i: int) -> str:
    return f"story number {i} about the council budget vote and the new library hours in town {i * 7}"


def test_several_parquet_files_in_one_input_are_numbered_apart(spark, tmp_path):
    """A directory or glob of Parquet files: each file's row indexes start at 0, and rows of
    different files took the same name (clusters of unrelated records, kept records lost)."""
    from neardup.engines.spark import dedup_spark

    d = tmp_path / "in.parquet"  # a directory of parts, as Spark writes one
    d.mkdir()
    pq.write_table(pa.table({"id": ["a1", "a2", "a3"], "text": [T, T + " today", _unrelated(1)]}), d / "a.parquet")
    pq.write_table(pa.table({"id": ["b1", "b2"], "text": [_unrelated(2), _unrelated(3)]}), d / "b.parquet")
    local = neardup.dedup([str(d / "a.parquet"), str(d / "b.parquet")], tmp_path / "local")
    for name, given in (("glob", f"file://{d}/*.parquet"), ("dir", f"file://{d}")):
        sp = dedup_spark(spark, [given], tmp_path / name, collect=True)
        assert sp.report["inputs"][0]["records"] == 5
        assert_same(local, sp)
        kept = [
            json.loads(x)["id"]
            for p in sorted((tmp_path / name / "kept.jsonl").glob("part-*"))
            for x in p.read_text().splitlines()
        ]
        assert kept == ["a1", "a3", "b1", "b2"]  # in file order


def test_dataframes_of_many_partitions_keep_their_records_apart(spark, tmp_path):
    """monotonically_increasing_id gaps of 2^33 per partition ran into the input bits of the
    record names from partition 128 on: a record of the second DataFrame joined a cluster of
    the first, counts per input were wrong, and a bad record's line was 17179869186."""
    from pyspark.sql import functions as F

    from neardup.engines.spark import dedup_spark

    df0 = spark.range(0, 256, 1, 256).select(
        F.concat(F.lit("x"), F.col("id").cast("string")).alias("id"),
        F.when(F.col("id").isin(0, 128), F.lit(T))
        .otherwise(
            F.concat(F.lit("unique story number "), F.col("id").cast("string"), F.lit(" about nothing in particular"))
        )
        .alias("text"),
    )
    df1 = spark.createDataFrame([("y0", T + " elsewhere entirely"), ("y1", "")], "id string, text string").coalesce(1)
    sp = dedup_spark(spark, [df0, df1], tmp_path / "out", collect=True, on_error="skip")
    assert [i["records"] for i in sp.report["inputs"]] == [256, 1]
    assert sp.report["skipped_records"][0]["line"] == 2 and sp.report["skipped_records"][0]["file"] == "<dataframe 1>"
    members = {frozenset([c["keeper"]] + [m["id"] for m in c["members"]]) for c in sp.clusters}
    assert members == {frozenset({"x0", "x128", "y0"})}
    assert all(m["similarity"] is not None for c in sp.clusters for m in c["members"])
    assert sp.report["kept"] == 256 + 1 - 2


def test_record_columns_named_as_the_engines_own(spark, tmp_path):
    """A Parquet column named pos was written as the engine's document number; src or recno
    failed the run (AMBIGUOUS_REFERENCE)."""
    from neardup.engines.spark import dedup_spark

    p = tmp_path / "in.parquet"
    pq.write_table(
        pa.table(
            {
                "id": ["a1", "a2", "a3"],
                "text": [T, T, _unrelated(1)],
                "pos": [100, 200, 300],
                "src": ["x", "y", "z"],
                "recno": [7, 8, 9],
            }
        ),
        p,
    )
    local = neardup.dedup([str(p)], tmp_path / "local")
    for fmt in ("jsonl", "parquet"):
        sp = dedup_spark(spark, [str(p)], tmp_path / fmt, collect=True, output_format=fmt)
        assert_same(local, sp)
    lines = [
        json.loads(x)
        for q in sorted((tmp_path / "jsonl" / "kept.jsonl").glob("part-*"))
        for x in q.read_text().splitlines()
    ]
    assert [(r["pos"], r["src"], r["recno"]) for r in lines] == [(100, "x", 7), (300, "z", 9)]
    assert lines == [json.loads(x) for x in (tmp_path / "local" / "kept.jsonl").read_text().splitlines()]
    t = pq.read_table(tmp_path / "parquet" / "kept.parquet")
    assert t.column("pos").to_pylist() == [100, 300]


def test_file_names_with_glob_characters_are_the_files_themselves(spark, tmp_path):
    """A file named st*ar.jsonl was read as a pattern (its sibling stXar.jsonl too); we[ird]
    was not found; a ':' in a name was a Java URISyntaxException."""
    from neardup.engines.spark import dedup_spark

    two = "".join(json.dumps({"id": f"s{i}", "text": T}) + "\n" for i in range(2))
    (tmp_path / "st*ar.jsonl").write_text(two)
    (tmp_path / "stXar.jsonl").write_text(
        "".join(json.dumps({"id": f"o{i}", "text": _unrelated(i)}) + "\n" for i in range(10))
    )
    (tmp_path / "we[ird]{a,b}.jsonl").write_text(two)
    for name in ("st*ar.jsonl", "we[ird]{a,b}.jsonl"):
        sp = dedup_spark(spark, [str(tmp_path / name)], tmp_path / "out", collect=True)
        assert sp.report["documents"] == 2 and sp.kept == ["s0"], name
    (tmp_path / "co:lon.jsonl").write_text(two)
    with pytest.raises(InputFileError, match="cannot read a file whose path has a ':'"):
        dedup_spark(spark, [str(tmp_path / "co:lon.jsonl")], tmp_path / "out")


def test_unreadable_inputs_are_input_errors_not_stack_traces(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    data = gzip.compress(b"".join(b'{"id":"%d","text":"some words here"}\n' % i for i in range(20000)))
    (tmp_path / "trunc.jsonl.gz").write_bytes(data[:5000])
    (tmp_path / "bad.parquet").write_bytes(b"PAR1garbagePAR1")
    with pytest.raises(InputFileError, match=r"trunc.jsonl.gz.*EOFException.*\[FAILED_READ_FILE"):
        dedup_spark(spark, [str(tmp_path / "trunc.jsonl.gz")], tmp_path / "out")
    with pytest.raises(InputFileError, match=r"bad.parquet.*FOOTER"):
        dedup_spark(spark, [str(tmp_path / "bad.parquet")], tmp_path / "out")


def test_bad_partitions_and_an_output_that_is_a_file_are_refused_before_the_job(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": T}) + "\n")
    for bad in (-3, 0, 2.5, True):
        with pytest.raises(neardup.InvalidParameterError, match="partitions must be a positive integer"):
            dedup_spark(spark, [str(src)], tmp_path / "out", partitions=bad)
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError):
        dedup_spark(spark, [str(src)], tmp_path / "file")
    # the CLI: a usage error, exit 2, one line
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "dedup",
            "--engine",
            "spark",
            "--master",
            "local[1]",
            str(src),
            "-o",
            str(tmp_path / "o"),
            "--partitions",
            "-3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert r.returncode == 2 and "partitions must be a positive integer" in r.stderr and "Traceback" not in r.stderr


def test_read_outputs_reads_the_kept_file_the_run_wrote(spark, tmp_path):
    """An earlier run's kept.parquet in the same directory was read as this run's kept ids."""
    from neardup.engines.spark import dedup_spark, read_outputs

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"id": f"g{i}", "text": T}) + "\n" for i in range(3)))
    b.write_text("".join(json.dumps({"id": f"u{i}", "text": _unrelated(i)}) + "\n" for i in range(3)))
    dedup_spark(spark, [str(a)], tmp_path / "out", output_format="parquet")
    assert read_outputs(str(tmp_path / "out")).kept == ["g0"]
    dedup_spark(spark, [str(b)], tmp_path / "out")
    r = read_outputs(str(tmp_path / "out"))
    assert r.kept == ["u0", "u1", "u2"] and r.report["kept"] == 3


def test_zoned_timestamps_of_a_parquet_input_keep_their_zone(spark, tmp_path):
    """Spark hands every zoned timestamp in its session's zone (Etc/UTC here): the kept records of
    a Parquet input had a New York time written as +00:00 in kept.jsonl and kept.parquet's
    columns zoned Etc/UTC, where the local engine keeps the file's zone. Both now the same."""
    import datetime as dt

    from neardup.engines.spark import dedup_spark

    n = 4
    when = [dt.datetime(2024, 1, 1 + i, tzinfo=dt.UTC) for i in range(n)]
    src = tmp_path / "in.parquet"
    pq.write_table(
        pa.table(
            {
                "id": [f"d{i}" for i in range(n)],
                "text": [T + f" v{i}" if i < 2 else _unrelated(i) for i in range(n)],
                "published_at": pa.array(when, pa.timestamp("us", tz="UTC")),
                "seen": pa.array(when, pa.timestamp("ms", tz="America/New_York")),
                "pos": pa.array(when, pa.timestamp("us", tz="Asia/Kolkata")),  # (renamed inside the run)
                "naive": pa.array([w.replace(tzinfo=None) for w in when], pa.timestamp("us")),
            }
        ),
        src,
    )
    for fmt in ("jsonl", "parquet"):
        neardup.dedup([str(src)], tmp_path / f"local-{fmt}", output_format=fmt)
        dedup_spark(spark, [str(src)], tmp_path / f"spark-{fmt}", output_format=fmt)
    local = (tmp_path / "local-jsonl" / "kept.jsonl").read_text()
    spark_lines = "".join(p.read_text() for p in sorted((tmp_path / "spark-jsonl" / "kept.jsonl").glob("part-*")))
    assert spark_lines == local and '"seen":"2023-12-31T19:00:00-05:00"' in local
    a = pq.read_table(tmp_path / "local-parquet" / "kept.parquet")
    b = pq.read_table(next((tmp_path / "spark-parquet" / "kept.parquet").glob("part-*.parquet")))
    assert a.schema == b.schema and a.to_pylist() == b.to_pylist()
    assert b.schema.field("seen").type.tz == "America/New_York" and b.schema.field("pos").type.tz == "Asia/Kolkata"


def test_a_dataframe_column_named_as_the_partition_offset(spark, tmp_path):
    """A DataFrame's records are numbered from each partition's offset, joined in as a column
    (`_off`, broadcast: it was an array literal of every partition's offset in the plan); a
    record column of that name keeps its values and the numbering is not disturbed."""
    from neardup.engines.spark import dedup_spark

    rows = [(f"r{i}", T if i in (1, 7) else _unrelated(i), -i) for i in range(9)] + [("r9", "", -9)]
    df = spark.createDataFrame(rows, "id string, text string, _off long").repartition(3, "id")
    sp = dedup_spark(spark, [df], tmp_path / "out", collect=True, on_error="skip")
    assert sp.report["inputs"][0]["records"] == 9 and len(sp.report["skipped_records"]) == 1
    bad = sp.report["skipped_records"][0]
    assert 1 <= bad["line"] <= 10 and "empty" in bad["reason"]
    assert {frozenset([c["keeper"]] + [m["id"] for m in c["members"]]) for c in sp.clusters} == {
        frozenset({"r1", "r7"})
    }
    kdir = tmp_path / "out" / "kept.jsonl"
    kept = [
        json.loads(x)
        for n in sorted(os.listdir(kdir))
        if n.startswith("part-")
        for x in (kdir / n).read_text().splitlines()
    ]
    assert len(kept) == 8 and all(k["_off"] == -int(k["id"][1:]) for k in kept)
