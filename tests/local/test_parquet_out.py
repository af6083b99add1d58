"""Kept records of varying shape in one Parquet file (pipeline/parquet_out.py): every field of
any record is a column, types that disagree become strings, and nothing is dropped."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.stages.parquet_out import ParquetRecords


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
        [{"id": "b", "n": 2.5, "x": 7}],  # int64 + double -> double; null -> int64
        [{"id": "c", "n": 3, "tags": ["p", "q"]}],  # a new field, after two blocks
        [{"id": "d", "n": "many", "x": 8}],  # a string: n becomes a string column
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
    t = _write(
        tmp_path,
        [[{"id": "a", "v": 1}, {"id": "b", "v": "x"}, {"id": "c", "v": {"k": [1, 2]}}], [{"id": "d", "v": [1, 2]}]],
    )
    assert t.schema.field("v").type == pa.string()
    assert [r["v"] for r in t.to_pylist()] == ["1", "x", json.dumps({"k": [1, 2]}, separators=(",", ":")), "[1,2]"]


def test_dedup_writes_csv_and_jsonl_records_with_disagreeing_types(tmp_path):
    jl = tmp_path / "c.jsonl"
    jl.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {"id": "c", "text": "the rain in spain falls mainly on the plain today", "views": 12},
                {"id": "e", "text": "a different thing altogether", "views": 5},
            ]
        )
    )
    csv = tmp_path / "a.csv"
    csv.write_text('id,text,views,lang\na,"another story entirely about cats and dogs",10,en\n')
    res = neardup.dedup([str(jl), str(csv)], tmp_path / "out", output_format="parquet", batch_size=1)
    t = pq.read_table(tmp_path / "out" / "kept.parquet")
    assert res.report["kept"] == 3
    assert t.column_names == ["id", "text", "views", "alternates", "lang"]
    assert [(r["id"], r["views"], r["lang"]) for r in t.to_pylist()] == [
        ("c", "12", None),
        ("e", "5", None),
        ("a", "10", "en"),
    ]


def test_an_empty_object_is_its_json_text(tmp_path):
    """Parquet cannot store a struct with no fields: a block whose only objects for a field are
    ``{}`` stopped the run ("Cannot write struct type ... with no child field")."""
    t = _write(tmp_path, [[{"id": "a", "m": {}}], [{"id": "b", "m": {"k": 1}}]])
    assert t.schema.field("m").type == pa.string()
    assert [r["m"] for r in t.to_pylist()] == ["{}", '{"k":1}']
    (tmp_path / "out.parquet").unlink()
    t = _write(tmp_path, [[{"id": "a", "m": {}, "l": [{}]}, {"id": "b", "m": {"k": 1}}]])  # {} with a key: a struct
    assert t.schema.field("m").type == pa.struct([("k", pa.int64())])
    assert t.schema.field("l").type == pa.list_(pa.string())  # a list stays one: of its items' texts
    assert [(r["m"], r["l"]) for r in t.to_pylist()] == [({"k": None}, ["{}"]), ({"k": 1}, None)]


def test_dedup_parquet_with_empty_objects(tmp_path):
    jl = tmp_path / "in.jsonl"
    jl.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": f"story number {i} about things", "extra": {}}) + "\n" for i in range(3)
        )
    )
    res = neardup.dedup(str(jl), tmp_path / "out", output_format="parquet")
    t = pq.read_table(tmp_path / "out" / "kept.parquet")
    assert res.report["kept"] == 3 and t.column("extra").to_pylist() == ["{}"] * 3


def test_a_bool_among_numbers_is_a_clash_in_any_order(tmp_path):
    """pyarrow reads [1.5, True] as doubles (True -> 1.0) but [True, 1.5] as a clash: both are
    a clash (a string column), nested too, as they are across blocks."""
    for rows in ([{"v": 1.5}, {"v": True}], [{"v": True}, {"v": 1.5}]):
        t = _write(tmp_path, [rows])
        assert t.schema.field("v").type == pa.string()
        assert sorted(t.column("v").to_pylist()) == ["1.5", "true"]
        (tmp_path / "out.parquet").unlink()
    t = _write(tmp_path, [[{"v": [1.5]}, {"v": [True]}, {"v": {"x": 2.5}}]])
    assert t.column("v").to_pylist() == ["[1.5]", "[true]", '{"x":2.5}']
    (tmp_path / "out.parquet").unlink()
    t = _write(tmp_path, [[{"v": {"x": 2.5}}, {"v": {"x": False}}]])
    assert t.column("v").to_pylist() == ['{"x":2.5}', '{"x":false}']


def test_a_large_integer_then_floats_in_a_later_block(tmp_path):
    """An integer past 2**53 written as int64, then floats: the double column holds it rounded
    (as float() rounds it); the cast stopped the run ("outside of the range exactly
    representable")."""
    big = 2**62 + 1
    t = _write(tmp_path, [[{"v": big}], [{"v": 1.5}]])
    assert t.schema.field("v").type == pa.float64()
    assert t.column("v").to_pylist() == [float(big), 1.5]


def test_lists_whose_items_disagree_stay_lists_of_their_texts(tmp_path):
    """[1, "x"] in one block, [2] in the next: a list<string> column (it was the JSON text of
    each whole list, a string column), the items as text; nested items as their JSON text."""
    t = _write(
        tmp_path,
        [
            [{"id": "a", "l": [1, "x"]}, {"id": "b", "l": [[1], {"k": 2}]}],
            [{"id": "c", "l": [2]}],
            [{"id": "d", "l": None}],
        ],
    )
    assert t.schema.field("l").type == pa.list_(pa.string())
    assert [r["l"] for r in t.to_pylist()] == [["1", "x"], ["[1]", '{"k":2}'], ["2"], None]


def test_kept_parquet_alternates_are_the_ids_as_given(tmp_path):
    """The alternates were strings beside an int64 id column ('2' for id 2); they are the ids
    as the input gave them, as in kept.jsonl: int64 when the ids are integers, text otherwise."""
    base = "the quick brown fox jumps over the lazy dog and runs far away into the deep dark forest"
    other = "completely different words here nothing shared with the first story at all none"
    cases = {
        "ints": ([1, 2, 3], pa.int64(), [[2], []]),
        "mixed": ([1, "b", 3], pa.string(), [["b"], []]),
        "big": ([1, 10**20, 3], pa.string(), [["100000000000000000000"], []]),
    }  # past int64: text
    for name, (ids, alt_type, alts) in cases.items():
        jl = tmp_path / f"{name}.jsonl"
        jl.write_text(
            "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, [base, base + " today", other]))
        )
        neardup.dedup([str(jl)], tmp_path / name, output_format="parquet")
        t = pq.read_table(tmp_path / name / "kept.parquet")
        assert t.schema.field("alternates").type == pa.list_(alt_type), name
        assert t.column("alternates").to_pylist() == alts, name
        neardup.dedup([str(jl)], tmp_path / f"{name}-jsonl")
        kept = [json.loads(x) for x in (tmp_path / f"{name}-jsonl" / "kept.jsonl").read_text().splitlines()]
        assert [r["alternates"] for r in kept] == [[ids[1]], []], name


@pytest.mark.parametrize("ids, elem", [([1, 2, 3], pa.int64()), (["a", "b", "c"], pa.string())])
def test_alternates_typed_by_the_ids_when_no_record_has_any(tmp_path, ids, elem):
    """A run without duplicates (a quiet day) typed the alternates list<null>: day-by-day files
    did not share a schema. They follow the id column: list<int64> for integer ids."""
    recs = [
        {"id": i, "text": f"a story of its own number {n} with words {n * 7} and {n * 11}"} for n, i in enumerate(ids)
    ]
    neardup.dedup(recs, str(tmp_path / "out"), output_format="parquet")
    assert pq.read_schema(tmp_path / "out" / "kept.parquet").field("alternates").type == pa.list_(elem)
