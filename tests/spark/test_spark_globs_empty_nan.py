"""The Spark engine: a URL glob of JSONL (or Parquet) files names the file and line of a bad
record, a duplicate id and an unreadable time; kept.parquet of a run that keeps nothing has the
local engine's columns; a JSON line's NaN is a bad record, a Parquet NaN a value (null in
kept.jsonl, NaN in kept.parquet), as locally; bytes paths."""

import json
import math
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.errors import RecordError

T = "the quick brown fox jumps over the lazy dog and then runs far away into the dark forest"


def _story(i: int) -> str:
    return f"story number {i} about the council budget vote and the new library hours in town {i * 7}"


def _write(path, lines):
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


@pytest.fixture
def packed(spark):
    """Small files packed into one read partition, ordered by size as Spark orders splits
    (largest first): the order of partitions is not the order of the files."""
    old = {k: spark.conf.get(k) for k in ("spark.sql.files.openCostInBytes", "spark.sql.files.maxPartitionBytes")}
    spark.conf.set("spark.sql.files.openCostInBytes", "1")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(64 << 20))
    yield spark
    for k, v in old.items():
        spark.conf.set(k, v)


def test_a_jsonl_glob_names_the_file_and_line(packed, tmp_path):
    """The lines of a glob's files were numbered on across files (in partition order): a bad
    line was "file:///d/*.jsonl:7" for the second line of b.jsonl (after c.jsonl's five)."""
    from neardup.engines.spark import dedup_spark

    d = tmp_path / "in"
    d.mkdir()
    _write(d / "a.jsonl", [json.dumps({"id": "a1", "text": T}), json.dumps({"id": "a2", "text": _story(1)})])
    _write(
        d / "b 2%.jsonl",
        [
            json.dumps({"id": "b1", "text": _story(2)}),  # (Spark URL-encodes the name)
            '{"id": "b2", "text": ',  # malformed
            json.dumps({"id": "b3", "text": _story(3), "published_at": "not a time"}),
            json.dumps({"id": "a1", "text": _story(4)}),  # a duplicate id
            json.dumps({"id": "b5", "text": _story(5), "score": float("nan")}),
        ],
    )
    _write(
        d / "c.jsonl",
        [json.dumps({"id": f"c{i}", "text": _story(10 + i) + " " + "padding " * 40}) for i in range(1, 6)],
    )  # the largest file: its split comes first
    files = [str(d / n) for n in ("a.jsonl", "b 2%.jsonl", "c.jsonl")]
    local = neardup.dedup(files, tmp_path / "local", on_error="skip")
    given = f"file://{d}/*.jsonl"
    sp = dedup_spark(packed, [given], tmp_path / "spark", collect=True, on_error="skip")
    url = f"file://{d}/b 2%.jsonl"
    got = [(r["file"], r["line"], r["field"], r["reason"]) for r in sp.report["skipped_records"]]
    want = [
        (url, r["line"], r["field"], r["reason"].replace(str(d), f"file://{d}"))
        for r in local.report["skipped_records"]
    ]
    assert got == want
    assert [(r["line"], r["field"]) for r in sp.report["skipped_records"]] == [(2, None), (4, "id"), (5, "score")]
    assert "first at file://%s/a.jsonl:1" % d in sp.report["skipped_records"][1]["reason"]
    assert [(r["file"], r["line"]) for r in sp.report["unreadable_time_records"]] == [(url, 3)]
    assert sp.report["inputs"] == [{"path": given, "format": "jsonl", "records": 9, "skipped": 3}]
    assert sp.kept == local.kept
    lines = [
        json.loads(x)["id"]
        for q in sorted((tmp_path / "spark" / "kept.jsonl").glob("part-*"))
        for x in q.read_text().splitlines()
    ]
    assert lines == local.kept  # in input order: the files in path order (Spark's splits are by size)
    with pytest.raises(RecordError) as err:
        dedup_spark(packed, [given], None)
    assert (err.value.path, err.value.line) == (url, 2) and str(err.value).startswith(f"{url}:2: malformed JSON")


def test_a_parquet_glob_names_the_file_and_row(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"id": ["a1", "a2"], "text": [T, _story(1)]}), d / "a.parquet")
    pq.write_table(pa.table({"id": ["b1", "b2"], "text": [_story(2), ""]}), d / "b.parquet")
    sp = dedup_spark(spark, [f"file://{d}/*.parquet"], tmp_path / "spark", collect=True, on_error="skip")
    [bad] = sp.report["skipped_records"]
    assert (bad["file"], bad["line"], bad["reason"]) == (f"file://{d}/b.parquet", 2, "text is empty")


def test_an_empty_run_writes_the_local_engines_kept_parquet_columns(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    (tmp_path / "day.jsonl").write_text("")
    t = pa.table(
        {
            "id": pa.array([1], pa.int32()),
            "text": [""],
            "score": pa.array([1.5], pa.float32()),
            "when": pa.array([1], pa.timestamp("ms", tz="America/New_York")),
        }
    )
    pq.write_table(t, tmp_path / "day.parquet")  # its one record is bad: skipped
    for name in ("day.jsonl", "day.parquet"):
        src = str(tmp_path / name)
        local = neardup.dedup([src], tmp_path / f"local-{name}", output_format="parquet", on_error="skip")
        sp = dedup_spark(spark, [src], tmp_path / f"spark-{name}", output_format="parquet", on_error="skip")
        assert local.report["kept"] == sp.report["kept"] == 0
        a = pq.read_schema(tmp_path / f"local-{name}" / "kept.parquet")
        b = pq.read_schema(next((tmp_path / f"spark-{name}" / "kept.parquet").glob("part-*.parquet")))
        assert a == b and a.names[:2] == ["id", "text"] and a.names[-1] == "alternates", name


def test_nan_is_a_bad_record_and_bytes_paths(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    p = tmp_path / "in.jsonl"
    _write(p, [json.dumps({"id": "a", "text": T}), '{"id": "b", "text": "%s", "score": NaN}' % _story(1)])
    local = neardup.dedup([str(p)], tmp_path / "local", on_error="skip")
    sp = dedup_spark(spark, [os.fsencode(p)], os.fsencode(tmp_path / "spark"), on_error="skip", collect=True)
    assert sp.report["skipped_records"] == local.report["skipped_records"]
    assert sp.report["skipped_records"][0]["field"] == "score" and list(sp.kept) == ["a"]
    assert sp.report["inputs"][0]["path"] == str(p) and (tmp_path / "spark" / "report.json").exists()


def test_a_parquet_nan_is_a_value_as_locally(spark, tmp_path):
    """pandas writes NaN for a missing number: the record was refused (both engines)."""
    from neardup.engines.spark import dedup_spark

    src = str(tmp_path / "in.parquet")
    pq.write_table(
        pa.table(
            {"id": ["a", "b"], "text": [T, _story(1)], "score": [float("nan"), 1.0], "v": [[1.5, float("inf")], None]}
        ),
        src,
    )
    for fmt in ("jsonl", "parquet"):
        local = neardup.dedup([src], tmp_path / f"local-{fmt}", output_format=fmt)
        sp = dedup_spark(spark, [src], tmp_path / f"spark-{fmt}", output_format=fmt, collect=True)
        assert local.report["skipped"] == sp.report["skipped"] == 0 and list(sp.kept) == list(local.kept) == ["a", "b"]
    parts = sorted((tmp_path / "spark-jsonl" / "kept.jsonl").glob("part-*"))
    strict = {"parse_constant": lambda c: pytest.fail(f"not JSON: {c}")}
    sp_lines = [json.loads(x, **strict) for q in parts for x in q.read_text().splitlines()]
    local_lines = [json.loads(x, **strict) for x in (tmp_path / "local-jsonl" / "kept.jsonl").read_text().splitlines()]
    assert sp_lines == local_lines and [(r["score"], r["v"]) for r in sp_lines] == [(None, [1.5, None]), (1.0, None)]
    a = pq.read_table(tmp_path / "local-parquet" / "kept.parquet")
    b = pq.read_table(next((tmp_path / "spark-parquet" / "kept.parquet").glob("part-*.parquet")))
    for t in (a, b):
        score = t.column("score").to_pylist()
        assert math.isnan(score[0]) and score[1] == 1.0 and t.column("v").to_pylist()[0] == [1.5, math.inf]
    assert a.schema == b.schema


def test_an_output_that_would_overwrite_an_input_is_refused(spark, tmp_path):
    """Spark writes its outputs as directories in "overwrite" mode: an input inside
    OUT/clusters.parquet or OUT/kept.parquet (or at OUT/report.json) was deleted by the run that
    read it."""
    from neardup.engines.spark import dedup_spark
    from neardup.errors import OutputError

    out = tmp_path / "out"
    for d in ("clusters.parquet", "kept.parquet"):
        (out / d).mkdir(parents=True)
        pq.write_table(pa.table({"id": ["a", "b"], "text": [T, _story(1)]}), out / d / "part-0.parquet")
    inside = out / "clusters.parquet" / "part-0.parquet"
    before = inside.read_bytes()
    with pytest.raises(OutputError, match="would overwrite the input"):
        dedup_spark(spark, [str(inside)], out)
    with pytest.raises(OutputError, match="would overwrite the input"):
        dedup_spark(spark, [f"file://{out}/clusters.parquet/*.parquet"], out)
    assert inside.read_bytes() == before
    kept_input = out / "kept.parquet" / "part-0.parquet"
    with pytest.raises(OutputError, match="kept.parquet"):
        dedup_spark(spark, [str(kept_input)], out, output_format="parquet")
    jl = out / "report.json"
    _write(jl, [json.dumps({"id": "x", "text": T})])
    with pytest.raises(OutputError, match="report.json"):
        dedup_spark(spark, [str(jl)], out)
    # another output directory: the same input reads as usual
    res = dedup_spark(spark, [str(inside)], tmp_path / "elsewhere", collect=True)
    assert sorted(res.kept) == ["a", "b"]
