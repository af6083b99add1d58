"""The dedup job: kept.parquet of a run that keeps nothing has the input's columns; NaN and
infinities are bad records whatever the output format; integers past Python's digits limit
are bad records naming their field; bytes and os.PathLike paths for inputs, out and tmp_dir."""
import json
import os
import pathlib

import neardup
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
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
    t = pa.table({"id": pa.array([1, 2], pa.int32()), "text": pa.array([A, B], pa.large_string()),
                  "score": pa.array([1.5, 2.5], pa.float32()), "tags": pa.array([["a"], ["b"]]),
                  "when": pa.array([1, 2], pa.timestamp("ns", tz="Europe/Paris")),
                  "kind": pa.array(["x", "y"]).dictionary_encode()})
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
    res = neardup.dedup([str(tmp_path / "in.parquet")], tmp_path / "out", output_format="parquet",
                        on_error="skip")
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
@pytest.mark.parametrize("value,name,field", [
    ("NaN", "NaN", "score"), ("Infinity", "Infinity", "score"), ("-Infinity", "-Infinity", "score"),
    ("1e400", "Infinity", "score"), ('[1, {"k": NaN}]', "NaN", "score"), ("NaN", "NaN", "published_at")])
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


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_python_records_with_nan_are_bad_records(tmp_path, fmt):
    """float('nan') went to kept.jsonl as null, silently, and to kept.parquet as NaN."""
    np = pytest.importorskip("numpy")
    recs = [{"id": "a", "text": A, "score": float("nan")}, {"id": "b", "text": B, "v": [np.float64("inf")]},
            {"id": "c", "text": "a third story about nothing that matches the others", "score": 0.5}]
    with pytest.raises(RecordError, match="field 'score': the value is NaN") as got:
        neardup.dedup(recs, tmp_path / "out", output_format=fmt)
    assert got.value.line == 1
    res = neardup.dedup(recs, tmp_path / "out", output_format=fmt, on_error="skip")
    assert [(s["line"], s["field"]) for s in res.report["skipped_records"]] == [(1, "score"), (2, "v")]
    assert list(res.kept) == ["c"]


def test_a_parquet_nan_is_a_bad_record_in_both_output_formats(tmp_path):
    pq.write_table(pa.table({"id": ["a", "b"], "text": [A, B], "score": [float("nan"), 1.0]}), tmp_path / "in.parquet")
    kept = {}
    for fmt in ("jsonl", "parquet"):
        res = neardup.dedup([str(tmp_path / "in.parquet")], tmp_path / fmt, output_format=fmt, on_error="skip")
        assert [(s["line"], s["field"]) for s in res.report["skipped_records"]] == [(1, "score")]
        kept[fmt] = list(res.kept)
    assert kept["jsonl"] == kept["parquet"] == ["b"]


def test_a_long_integer_in_a_python_record_is_a_bad_record(tmp_path):
    """It was a bare ValueError (the id) or a crash of the writer after the run (another field)."""
    big = 10 ** 5000
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
    for i, (inputs, out) in enumerate([([os.fsencode(p)], os.fsencode(tmp_path / "o0")),
                                       (os.fsencode(p), pathlib.Path(tmp_path / "o1"))]):
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
