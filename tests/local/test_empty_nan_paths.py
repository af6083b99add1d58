"""The dedup job: kept.parquet of a run that keeps nothing has the input's columns; NaN and
infinities in a JSON line (not JSON) are bad records whatever the output format, typed ones
(Parquet, Python, pandas) values (null in kept.jsonl, NaN in kept.parquet); integers past
Python's digits limit are bad records naming their field; bytes and os.PathLike paths for
inputs, out and tmp_dir."""

import json
import math
import os
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.errors import InputTypeError, InvalidParameterError
from neardup.io import RecordError

A = "the council approved the new library budget after a long debate on tuesday night"
B = "heavy rain flooded the coastal road and the ferry service was cancelled for the day"


def _schema(out) -> pa.Schema:
    return pq.read_schema(os.path.join(out, "kept.parquet"))


# ---- kept.parquet of an empty run ---------------------------------------------------------


def test_an_empty_jsonl_input_gives_id_and_text_columns(tmp_path):
    """It had the alternates column only: a reader selecting id and text broke on an empty day."""
    p = tmp_path / "day.jsonl"
    p.write_text("")
    neardup.dedup([str(p)], tmp_path / "out", output_format="parquet", title_field="title")
    s = _schema(tmp_path / "out")
    assert s.names == ["id", "text", "title", "alternates"]
    assert s.field("id").type == pa.string() and s.field("text").type == pa.string()
    assert s.field("alternates").type == pa.list_(pa.string())
    assert pq.read_table(tmp_path / "out" / "kept.parquet").num_rows == 0


def test_an_empty_parquet_input_keeps_its_columns_as_a_run_with_records_types_them(tmp_path):
    t = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "text": pa.array([A, B], pa.large_string()),
            "score": pa.array([1.5, 2.5], pa.float32()),
            "tags": pa.array([["a"], ["b"]]),
            "when": pa.array([1, 2], pa.timestamp("ns", tz="Europe/Paris")),
            "kind": pa.array(["x", "y"]).dictionary_encode(),
        }
    )
    pq.write_table(t, tmp_path / "full.parquet")
    pq.write_table(t.slice(0, 0), tmp_path / "empty.parquet")
    neardup.dedup([str(tmp_path / "full.parquet")], tmp_path / "full", output_format="parquet")
    neardup.dedup([str(tmp_path / "empty.parquet")], tmp_path / "empty", output_format="parquet")
    assert _schema(tmp_path / "empty") == _schema(tmp_path / "full")
    assert _schema(tmp_path / "empty").field("alternates").type == pa.list_(pa.int64())  # integer ids


def test_a_csv_header_alone_gives_its_columns(tmp_path):
    p = tmp_path / "day.csv"
    p.write_text("id,text,source\n")
    neardup.dedup([str(p)], tmp_path / "out", output_format="parquet")
    s = _schema(tmp_path / "out")
    assert s.names == ["id", "text", "source", "alternates"]
    assert all(f.type == pa.string() for f in s if f.name != "alternates")


def test_every_record_skipped_still_gives_the_columns(tmp_path):
    t = pa.table({"id": pa.array([1, 2], pa.int64()), "text": ["", " "], "alternates": [[9], [8]], "n": [1, 2]})
    pq.write_table(t, tmp_path / "in.parquet")
    res = neardup.dedup([str(tmp_path / "in.parquet")], tmp_path / "out", output_format="parquet", on_error="skip")
    assert res.report["skipped"] == 2 and res.report["kept"] == 0
    s = _schema(tmp_path / "out")
    assert s.names == ["id", "text", "alternates", "n"]  # a field named alternates keeps its place
    assert s.field("alternates").type == pa.list_(pa.int64())


def test_no_input_at_all(tmp_path):
    neardup.dedup([], tmp_path / "out", output_format="parquet", id_field="doc", text_field="body")
    assert _schema(tmp_path / "out").names == ["doc", "body", "alternates"]


# ---- NaN and infinities ---------------------------------------------------------------------

GOOD = json.dumps({"id": "g", "text": B})


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize(
    "value,name,field",
    [
        ("NaN", "NaN", "score"),
        ("Infinity", "Infinity", "score"),
        ("-Infinity", "-Infinity", "score"),
        ("1e400", "Infinity", "score"),
        ('[1, {"k": NaN}]', "NaN", "score"),
        ("NaN", "NaN", "published_at"),
    ],
)
def test_json_lines_with_nan_or_infinity_are_bad_records(tmp_path, fmt, value, name, field):
    """Read by the json module (orjson refuses them), they went to kept.jsonl as they were
    (NaN: not JSON) and to kept.parquet as a NaN double; a NaN time was an unreadable time
    whose NaN went out the same way."""
    p = tmp_path / "in.jsonl"
    p.write_text(GOOD + "\n" + '{"id": "a", "text": "%s", "%s": %s}\n' % (A, field, value))
    with pytest.raises(RecordError) as got:
        neardup.dedup([str(p)], tmp_path / "out", output_format=fmt)
    assert got.value.line == 2 and got.value.field == field and f" {name}, which JSON cannot hold" in got.value.reason
    res = neardup.dedup([str(p)], tmp_path / "out", output_format=fmt, on_error="skip")
    assert res.report["skipped"] == 1 and res.report["unreadable_times"] == 0
    [sk] = res.report["skipped_records"]
    assert (sk["file"], sk["line"], sk["field"]) == (str(p), 2, field)
    assert list(res.kept) == ["g"]
    if fmt == "jsonl":
        lines = (tmp_path / "out" / "kept.jsonl").read_text().splitlines()
        assert [json.loads(x, parse_constant=lambda c: pytest.fail(c))["id"] for x in lines] == ["g"]
    else:
        assert pq.read_table(tmp_path / "out" / "kept.parquet").column("id").to_pylist() == ["g"]


def _kept_jsonl(out) -> list[dict]:
    """kept.jsonl's records, read strictly (a NaN or Infinity in it fails the test)."""
    lines = (out / "kept.jsonl").read_text().splitlines()
    return [json.loads(x, parse_constant=lambda c: pytest.fail(f"not JSON: {c}")) for x in lines]


def test_python_records_with_nan_are_kept(tmp_path):
    """A typed NaN or infinity is a value (pandas' missing number): the last release refused
    the record. kept.jsonl writes null (JSON's missing value; orjson wrote a Python float's so,
    NumPy's went to "nan"), kept.parquet keeps the NaN; a NaN time is an unreadable time."""
    np = pytest.importorskip("numpy")
    recs = [
        {"id": "a", "text": A, "score": float("nan")},
        {"id": "b", "text": B, "v": [np.float64("inf"), 1.5]},
        {
            "id": "c",
            "text": "a third story about nothing that matches the others",
            "score": 0.5,
            "published_at": float("nan"),
            "w": np.float32("nan"),
        },
    ]
    res = neardup.dedup(recs, tmp_path / "j", output_format="jsonl")
    assert res.report["skipped"] == 0 and list(res.kept) == ["a", "b", "c"]
    assert res.report["unreadable_times"] == 1
    assert [(r["line"], r["field"], r["reason"]) for r in res.report["unreadable_time_records"]] == [
        (3, "published_at", "nan is not a time")
    ]
    got = _kept_jsonl(tmp_path / "j")
    assert [r["id"] for r in got] == ["a", "b", "c"]
    assert got[0]["score"] is None and got[1]["v"] == [None, 1.5]
    assert got[2]["score"] == 0.5 and got[2]["published_at"] is None and got[2]["w"] is None
    res = neardup.dedup(recs, tmp_path / "p", output_format="parquet")
    assert res.report["skipped"] == 0 and list(res.kept) == ["a", "b", "c"]
    t = pq.read_table(tmp_path / "p" / "kept.parquet")
    assert t.schema.field("score").type == pa.float64()
    score = t.column("score").to_pylist()
    assert math.isnan(score[0]) and score[1] is None and score[2] == 0.5  # (b has no score: null)
    assert t.column("v").to_pylist()[1] == [math.inf, 1.5] and math.isnan(t.column("published_at").to_pylist()[2])


def test_a_nan_with_an_integer_past_64_bits_is_null_in_kept_jsonl(tmp_path):
    """The json module, the fallback for what orjson cannot write, wrote NaN (not JSON)."""
    recs = [{"id": 10**30, "text": A, "score": float("nan"), "m": {"x": float("-inf")}}]
    neardup.dedup(recs, tmp_path / "out")
    [got] = _kept_jsonl(tmp_path / "out")
    assert got["id"] == 10**30 and got["score"] is None and got["m"] == {"x": None}


def test_a_parquet_nan_is_kept_in_both_output_formats(tmp_path):
    """pandas writes NaN for a missing number: every such record was refused (exit 3)."""
    pq.write_table(
        pa.table(
            {"id": ["a", "b"], "text": [A, B], "score": [float("nan"), 1.0], "published_at": [1.79e9, float("nan")]}
        ),
        tmp_path / "in.parquet",
    )
    for fmt in ("jsonl", "parquet"):
        res = neardup.dedup([str(tmp_path / "in.parquet")], tmp_path / fmt, output_format=fmt)
        assert res.report["skipped"] == 0 and list(res.kept) == ["a", "b"]
        assert [(r["line"], r["field"]) for r in res.report["unreadable_time_records"]] == [(2, "published_at")]
    got = _kept_jsonl(tmp_path / "jsonl")
    assert [(r["score"], r["published_at"]) for r in got] == [(None, 1.79e9), (1.0, None)]
    t = pq.read_table(tmp_path / "parquet" / "kept.parquet")
    assert t.schema.field("score").type == pa.float64()
    score, when = t.column("score").to_pylist(), t.column("published_at").to_pylist()
    assert math.isnan(score[0]) and score[1] == 1.0 and when[0] == 1.79e9 and math.isnan(when[1])


def test_a_pandas_frame_with_missing_numbers(tmp_path):
    """``neardup.dedup(df.to_dict("records"))`` and ``df.to_parquet``: NaN where a number is
    missing, the common case."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"id": ["a", "b", "c"], "text": [A, B, A], "score": [0.5, None, None]})
    res = neardup.dedup(df.to_dict("records"), tmp_path / "recs")
    assert (
        res.report["skipped"] == 0
        and list(res.kept) == ["a", "b"]
        and [m["id"] for m in res.clusters[0]["members"]] == ["c"]
    )
    assert [r["score"] for r in _kept_jsonl(tmp_path / "recs")] == [0.5, None]
    df.to_parquet(tmp_path / "in.parquet")
    res = neardup.dedup([str(tmp_path / "in.parquet")], tmp_path / "pq", on_error="stop")
    assert res.report["skipped"] == 0 and list(res.kept) == ["a", "b"]


def test_a_long_integer_in_a_python_record_is_a_bad_record(tmp_path):
    """It was a bare ValueError (the id) or a crash of the writer after the run (another field)."""
    big = 10**5000
    for rec, field in (({"id": big, "text": A}, "id"), ({"id": 1, "text": A, "n": big}, "n")):
        with pytest.raises(RecordError, match="integer too long: 5,001 digits") as got:
            neardup.dedup([{"id": 0, "text": B}, rec], tmp_path / "out")
        assert got.value.line == 2 and got.value.field == field


# ---- bytes and os.PathLike paths --------------------------------------------------------------


def test_bytes_paths_for_inputs_out_and_tmp_dir(tmp_path):
    """inputs=[b"..."] was refused ("got bytes"), inputs=b"..." read as numbers ("got int"),
    out=b"..." failed after the run (os.path.join of str and bytes), a bytes tmp_dir in the
    report's JSON."""
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"id": 1, "text": A}) + "\n" + json.dumps({"id": 2, "text": A}) + "\n")
    want = neardup.dedup([str(p)], str(tmp_path / "ref"))
    for i, (inputs, out) in enumerate(
        [([os.fsencode(p)], os.fsencode(tmp_path / "o0")), (os.fsencode(p), pathlib.Path(tmp_path / "o1"))]
    ):
        res = neardup.dedup(inputs, out, tmp_dir=os.fsencode(tmp_path))
        assert res.clusters == want.clusters and list(res.kept) == [1]
        assert res.report["outdir"] == str(tmp_path / f"o{i}") and res.report["inputs"][0]["path"] == str(p)
        assert res.report["options"]["tmp_dir"] == str(tmp_path)
        assert (tmp_path / f"o{i}" / "kept.jsonl").read_text() == (tmp_path / "ref" / "kept.jsonl").read_text()


def test_a_file_name_that_is_not_utf8(tmp_path):
    """report.json could not be written (UnicodeEncodeError after the whole run): the name is
    written with its undecodable byte as an escape, as a skipped record's field is."""
    d = os.fsencode(tmp_path)
    name = d + b"/caf\xe9.jsonl"
    with open(name, "wb") as f:
        f.write(json.dumps({"id": 1, "text": A}).encode() + b"\n")
    res = neardup.dedup([name], d + b"/out\xff")
    assert os.fsencode(res.report["inputs"][0]["path"]) == name
    with open(d + b"/out\xff/report.json", encoding="utf-8") as f:
        assert json.load(f)["inputs"][0]["path"].endswith("caf\\udce9.jsonl")


def test_paths_of_another_type_are_refused_before_the_run(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"id": 1, "text": A}) + "\n")
    with pytest.raises(InputTypeError, match="out: expected a directory path"):
        neardup.dedup([str(p)], 5)
    with pytest.raises(InvalidParameterError, match="tmp_dir must be a path"):
        neardup.dedup([str(p)], None, tmp_dir=5)
    assert not (tmp_path / "5").exists()
