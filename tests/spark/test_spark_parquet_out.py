"""kept.parquet on Spark is the local engine's file: the same columns in the same order, the
same types and the same rows in the same (input) order, for records that do not agree on
their fields (pipeline/parquet_out.py's rule; both engines write through ``write_kept``)."""

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from parity import assert_same
from spark_corpus import make_corpus

import neardup


def _shaped(docs: list[dict]) -> list[dict]:
    """The corpus with fields that come and go and a field whose type clashes: ``views`` is an
    integer, a float and a string in different records; ``meta`` an object in some, absent in
    others; ``tags`` a list; ``note`` null wherever it appears; one record has its own
    ``alternates`` (replaced by the run's, in its place); ``extra`` an empty object; ``flag`` a
    float or a bool."""
    out = []
    for i, d in enumerate(docs):
        d = dict(d)
        if i % 5 == 0:
            d["views"] = i
        elif i % 5 == 1:
            d["views"] = i + 0.5
        elif i % 5 == 2:
            d["views"] = 12345.0  # a float with an integral value: its text must not depend on the engine
        elif i % 11 == 3:
            d["views"] = f"{i} views"
        if i % 7 == 0:
            d["meta"] = {"lang": "en", "score": i} if i % 2 else {"lang": "fr"}
        if i % 4 == 0:
            d["tags"] = ["a", str(i)]
        if i % 9 == 0:
            d["note"] = None
        if i % 13 == 0:
            d["extra"] = {}  # an empty object: no struct of no fields in Parquet, so its JSON text
        if i % 6 == 0:
            d["flag"] = 0.5 if i % 12 else True  # a bool among numbers: a clash, not 1.0
        if i == 13:
            d["alternates"] = ["its own"]
        out.append(d)
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Three inputs that disagree: JSONL (the shaped records), CSV (every field a string, a
    column the others lack) and Parquet (``views`` as int32, a column of its own)."""
    d = tmp_path_factory.mktemp("shapes")
    docs = _shaped(make_corpus(originals=240, copies=80, words=50, seed=11))
    jl, cs, pa_rows = docs[:200], docs[200:260], docs[260:]
    jl_path = d / "a.jsonl"
    jl_path.write_text("".join(json.dumps(r) + "\n" for r in jl) + "\n")  # a blank last line: no record
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "text", "source", "views", "region"])
    for r in cs:
        w.writerow([r["id"], r["text"], r["source"], str(r.get("views", "")), "eu"])
    cs_path = d / "b.csv"
    cs_path.write_text(buf.getvalue())
    pq_path = d / "c.parquet"
    pq.write_table(
        pa.table(
            {
                "id": [r["id"] for r in pa_rows],
                "text": [r["text"] for r in pa_rows],
                "views": pa.array([i for i in range(len(pa_rows))], pa.int32()),
                "rank": pa.array([float(i) / 3 for i in range(len(pa_rows))]),
            }
        ),
        pq_path,
        row_group_size=16,
    )
    return [str(jl_path), str(cs_path), str(pq_path)]


def _read(path) -> pa.Table:
    import pyarrow.dataset as ds

    return ds.dataset(str(path), format="parquet").to_table()


@pytest.mark.parametrize("method,block", [("minhash", 8192), ("simhash", 8192), ("minhash", 7)])
def test_kept_parquet_is_the_local_engines(spark, inputs, tmp_path, monkeypatch, method, block):
    """With blocks of 7 records the schema widens many times (parts rewritten), and a value
    written before its column became a string is cast by Arrow (12345.0 -> "12345"): Spark
    must hand the writer the same blocks. The writer runs in this process for both engines."""
    from neardup.engines.spark import dedup_spark
    from neardup.stages.options import BatchSteps

    kw = dict(output_format="parquet", prefer_source=["agency"], method=method, steps=BatchSteps(parquet_block=block))
    if method == "simhash":
        kw.update(k=3, max_distance=8)
    local = neardup.dedup(inputs, tmp_path / "local", **kw)
    sp = dedup_spark(spark, inputs, tmp_path / "spark", collect=True, **kw)
    assert_same(local, sp)
    assert local.report["copies_removed"] >= 10  # some records are not kept, some have alternates
    lt, st = _read(tmp_path / "local" / "kept.parquet"), _read(tmp_path / "spark" / "kept.parquet")
    # the inputs really disagree: a late field, a clash made a string, a nested object and list
    # (in order of first appearance: the JSONL fields, then the CSV's region, the Parquet's rank)
    assert lt.column_names == [
        "id",
        "text",
        "published_at",
        "source",
        "original_id",
        "copy_kind",
        "views",
        "meta",
        "tags",
        "note",
        "extra",
        "flag",
        "alternates",
        "region",
        "rank",
    ]
    assert lt.schema.field("views").type == lt.schema.field("flag").type == lt.schema.field("extra").type == pa.string()
    assert lt.schema.field("note").type == pa.null()
    assert pa.types.is_struct(lt.schema.field("meta").type)
    assert st.schema == lt.schema  # names, order, types (and Arrow's schema metadata)
    assert st.num_rows == lt.num_rows == local.report["kept"]
    # rows in input order, as the docs promise for both engines (no sorting here)
    assert st.to_pylist() == lt.to_pylist()
    rows = lt.to_pylist()
    assert any(r["alternates"] for r in rows)
    assert not any(r["alternates"] == ["its own"] for r in rows)  # the record's own field is replaced
    # the clashing field's text: an integer, a float, an integral float and a string in one column
    assert {r["flag"] for r in rows} == {None, "0.5", "true"} and {r["extra"] for r in rows} == {None, "{}"}
    views = {r["views"] for r in rows if r["views"] is not None}
    assert any(v.endswith(".5") for v in views) and any(v.endswith(" views") for v in views)
    # one block: every float is its JSON text; small blocks: the early ones were cast by Arrow
    assert ("12345.0" in views, "12345" in views) == ((True, False) if block == 8192 else (True, True))


def test_no_kept_records_is_the_local_engines_empty_file(spark, tmp_path):
    """Every record skipped: both engines write the same empty file, with the id and text
    columns a JSONL input's records would have had (it had the ``alternates`` column alone,
    which broke a reader of an empty day's file: docs/dedup.md)."""
    from neardup.engines.spark import dedup_spark

    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "text": "   "}\n{"id": "b"}\n')
    kw = dict(output_format="parquet", on_error="skip")
    neardup.dedup(str(path), tmp_path / "local", **kw)
    dedup_spark(spark, str(path), tmp_path / "spark", **kw)
    lt, st = _read(tmp_path / "local" / "kept.parquet"), _read(tmp_path / "spark" / "kept.parquet")
    assert (
        lt.schema
        == st.schema
        == pa.schema([("id", pa.string()), ("text", pa.string()), ("alternates", pa.list_(pa.string()))])
    )
    assert lt.num_rows == st.num_rows == 0


def test_kept_line_kernel_parses_lines_as_the_local_engine():
    """The executor side: str (text files) and bytes (.jsonl.zst) lines parse to the local
    engine's dicts, blank lines (not records) are dropped, missing alternates are empty, and
    alternates that were integer ids are integers again."""
    import pickle

    from neardup.engines.spark.outputs import _ALT_INT, _ALTS, _kept_lines_records

    t = pa.table(
        {
            "value": pa.array(['{"id": "a", "n": 1.0}', "  ", None, '{"id": "b", "alternates": 3}']),
            _ALTS: pa.array([["x", "7"], None, None, None], pa.list_(pa.string())),
            _ALT_INT: pa.array([[False, True], None, None, None], pa.list_(pa.bool_())),
        }
    )
    got = [pickle.loads(x) for x in _kept_lines_records(t).column("rec").to_pylist()]
    assert got == [({"id": "a", "n": 1.0}, ["x", 7]), ({"id": "b", "alternates": 3}, [])]
    tb = pa.table(
        {
            "value": pa.array([b'{"id": "c", "t": "caf\xc3\xa9"}', b"\t"], pa.binary()),
            _ALTS: pa.array([None, None], pa.list_(pa.string())),
            _ALT_INT: pa.array([None, None], pa.list_(pa.bool_())),
        }
    )
    assert [pickle.loads(x) for x in _kept_lines_records(tb).column("rec").to_pylist()] == [
        ({"id": "c", "t": "café"}, [])
    ]


def test_integer_ids_alternates_are_integers_in_both_engines(spark, tmp_path):
    """kept.parquet's alternates are the ids as given (int64 for integer ids; they were strings
    beside an int64 id column), from both engines, JSONL and Parquet inputs, kept.jsonl too."""
    from neardup.engines.spark import dedup_spark

    docs = make_corpus(originals=60, copies=30, words=40, seed=5)
    for n, d in enumerate(docs):
        d["id"] = 1000 + n
    jl = tmp_path / "a.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in docs[:60]))
    pqp = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in docs[60:]], "text": [r["text"] for r in docs[60:]]}), pqp)
    inputs = [str(jl), str(pqp)]
    for fmt in ("parquet", "jsonl"):
        local = neardup.dedup(inputs, tmp_path / f"local-{fmt}", output_format=fmt)
        sp = dedup_spark(spark, inputs, tmp_path / f"spark-{fmt}", collect=True, output_format=fmt)
        assert_same(local, sp)
    lt, st = _read(tmp_path / "local-parquet" / "kept.parquet"), _read(tmp_path / "spark-parquet" / "kept.parquet")
    assert lt.schema.field("id").type == pa.int64()
    assert lt.schema.field("alternates").type == pa.list_(pa.int64())
    assert st.schema == lt.schema and st.to_pylist() == lt.to_pylist()
    alts = [a for r in lt.to_pylist() for a in r["alternates"]]
    assert alts and all(type(a) is int for a in alts)
    lj = [json.loads(x) for x in (tmp_path / "local-jsonl" / "kept.jsonl").read_text().splitlines()]
    sj = [
        json.loads(x)
        for p in sorted((tmp_path / "spark-jsonl" / "kept.jsonl").glob("part-*"))
        for x in p.read_text().splitlines()
    ]
    assert [r["alternates"] for r in lj] == [r["alternates"] for r in sj] == [r["alternates"] for r in lt.to_pylist()]


def test_kept_jsonl_in_input_order_parquet_before_jsonl(spark, tmp_path):
    """A Parquet input given before a JSONL one: kept.jsonl holds the Parquet file's kept
    records first, as the local engine writes them (the JSONL and CSV sources' records were
    written before every Parquet source's, whatever the order given)."""
    from neardup.engines.spark import dedup_spark

    docs = make_corpus(originals=40, copies=20, words=40, seed=9)
    pqp = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in docs[:30]], "text": [r["text"] for r in docs[:30]]}), pqp)
    jl = tmp_path / "b.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in docs[30:]))
    inputs = [str(pqp), str(jl)]
    local = neardup.dedup(inputs, tmp_path / "local")
    sp = dedup_spark(spark, inputs, tmp_path / "spark", collect=True)
    assert_same(local, sp)
    want = (tmp_path / "local" / "kept.jsonl").read_text().splitlines()
    got = [x for p in sorted((tmp_path / "spark" / "kept.jsonl").glob("part-*")) for x in p.read_text().splitlines()]
    assert got == want
    first = json.loads(want[0])["id"]
    assert first in {r["id"] for r in docs[:30]}  # the Parquet file's records lead
