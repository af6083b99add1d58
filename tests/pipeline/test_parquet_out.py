"""Kept records of varying shape in one Parquet file (pipeline/parquet_out.py): every field of
any record is a column, types that disagree become strings, and nothing is dropped."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

import neardup
from neardup.pipeline.parquet_out import ParquetRecords


def _write(tmp_path, blocks) -> pa.Table:
    path = str(tmp_path / "out.parquet")
    w = ParquetRecords(path)
    for b in blocks:
        w.write(b)
    w.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]  # no parts left behind
    return pq.read_table(path)


def test_one_schema_is_one_pass(tmp_path):
    t = _write(tmp_path, [[{"id": "a", "n": 1}], [{"id": "b", "n": 2}]])
    assert t.schema == pa.schema([("id", pa.string()), ("n", pa.int64())])
    assert t.to_pylist() == [{"id": "a", "n": 1}, {"id": "b", "n": 2}]


def test_fields_that_come_late_are_kept_and_types_widen(tmp_path):
    blocks = [
        [{"id": "a", "n": 1, "x": None}],
        [{"id": "b", "n": 2.5, "x": 7}],                 # int64 + double -> double; null -> int64
        [{"id": "c", "n": 3, "tags": ["p", "q"]}],       # a new field, after two blocks
        [{"id": "d", "n": "many", "x": 8}],              # a string: n becomes a string column
    ]
    t = _write(tmp_path, blocks)
    assert t.column_names == ["id", "n", "x", "tags"]
    assert t.schema.field("x").type == pa.int64()
    assert t.schema.field("n").type == pa.string()
    rows = t.to_pylist()
    assert [r["n"] for r in rows] == ["1", "2.5", "3", "many"]  # the double column cast to text
    assert [r["x"] for r in rows] == [None, 7, None, 8]
    assert [r["tags"] for r in rows] == [None, None, ["p", "q"], None]


def test_mixed_types_within_a_block_and_nested_values(tmp_path):
    t = _write(tmp_path, [[{"id": "a", "v": 1}, {"id": "b", "v": "x"}, {"id": "c", "v": {"k": [1, 2]}}],
                          [{"id": "d", "v": [1, 2]}]])
    assert t.schema.field("v").type == pa.string()
    assert [r["v"] for r in t.to_pylist()] == ["1", "x", json.dumps({"k": [1, 2]}, separators=(",", ":")), "[1,2]"]


def test_dedup_writes_csv_and_jsonl_records_with_disagreeing_types(tmp_path):
    jl = tmp_path / "c.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "c", "text": "the rain in spain falls mainly on the plain today", "views": 12},
        {"id": "e", "text": "a different thing altogether", "views": 5}]))
    csv = tmp_path / "a.csv"
    csv.write_text('id,text,views,lang\na,"another story entirely about cats and dogs",10,en\n')
    res = neardup.dedup([str(jl), str(csv)], tmp_path / "out", output_format="parquet", batch_size=1)
    t = pq.read_table(tmp_path / "out" / "kept.parquet")
    assert res.report["kept"] == 3
    assert t.column_names == ["id", "text", "views", "alternates", "lang"]
    assert [(r["id"], r["views"], r["lang"]) for r in t.to_pylist()] == [("c", "12", None), ("e", "5", None),
                                                                        ("a", "10", "en")]
