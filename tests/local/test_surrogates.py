"""A lone surrogate (JSON's "\\udc80") in a field other than the id, text and title: a bad
record naming record and field (exit 3, or skipped and listed), not a writer's crash at the
end of the run."""

import json

import pyarrow.parquet as pq
import pytest

import neardup
from neardup.cli import main
from neardup.io import Fields, Limits, RecordError, check_record

TEXT = "alpha beta gamma delta epsilon"
GOOD = '{"id": "g", "text": "zeta eta theta iota kappa"}'


@pytest.mark.parametrize(
    "line,field,fmt",
    [
        ('{"id": "a", "text": "%s", "source": "\\udc80"}' % TEXT, "source", "parquet"),
        ('{"id": "a", "text": "%s", "extra": "\\udc80", "alternates": 5}' % TEXT, "extra", "jsonl"),
        ('{"id": "a", "text": "%s", "tags": [1, {"k": "x\\ud800"}]}' % TEXT, "tags", "parquet"),
        ('{"id": "a", "text": "%s", "k\\udc80": 1}' % TEXT, "k\udc80", "jsonl"),
        ('{"id": "a", "text": "%s", "published_at": "2026-01-01\\udc80"}' % TEXT, "published_at", "jsonl"),
    ],
)
def test_lone_surrogate_in_another_field_is_a_bad_record(tmp_path, capsys, line, field, fmt):
    p = tmp_path / "in.jsonl"
    p.write_text(GOOD + "\n" + line + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["dedup", str(p), "-o", str(out), "-q", "--format", fmt]) == 3
    err = capsys.readouterr().err
    assert "in.jsonl:2" in err and "lone surrogate" in err
    assert main(["dedup", str(p), "-o", str(out), "-q", "--format", fmt, "--on-error", "skip"]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    [skipped] = report["skipped_records"]
    assert skipped["line"] == 2 and "lone surrogate" in skipped["reason"]
    assert skipped["field"] == field.encode("utf-8", "backslashreplace").decode()
    kept = (
        pq.read_table(out / "kept.parquet").to_pylist()
        if fmt == "parquet"
        else [json.loads(x) for x in (out / "kept.jsonl").read_text().splitlines()]
    )
    assert [k["id"] for k in kept] == ["g"]


def test_python_records_with_a_lone_surrogate(tmp_path):
    recs = [{"id": "a", "text": TEXT, "source": "\udc80"}, {"id": "b", "text": "zeta eta theta"}]
    with pytest.raises(RecordError, match="source is not valid Unicode") as got:
        neardup.dedup(recs, str(tmp_path / "out"))
    assert got.value.field == "source" and got.value.line == 1
    res = neardup.dedup(recs, str(tmp_path / "out"), on_error="skip")
    assert res.report["skipped"] == 1 and list(res.kept) == ["b"]


def test_check_record_looks_at_every_field_at_any_depth():
    f, lim = Fields(), Limits()
    ok = {
        "id": "a",
        "text": "über",
        "source": "Zeitung Süd",
        "n": 1,
        "x": None,
        "tags": ["ä", "b"],
        "m": {"k": ["v", {"é": 2.5}]},
        3: "number as a name",
    }
    assert check_record(ok, f, lim, "p", 1).source == "Zeitung Süd"
    for bad, field in [
        ({"extra": "a\udc80"}, "extra"),
        ({"tags": ["a", "\ud800"]}, "tags"),
        ({"m": {"k": [{"\udfff": 1}]}}, "m"),
        ({"\udc80": 1}, "\udc80"),
        ({"t": ("\ud800",)}, "t"),
    ]:
        with pytest.raises(RecordError, match="not valid Unicode") as got:
            check_record({"id": "a", "text": "words", **bad}, f, lim, "p", 7)
        assert got.value.field == field and got.value.line == 7
    deep = {"id": "a", "text": "words", "d": None}
    v = "\udc80"
    for _ in range(3000):  # deeper than Python's recursion limit
        v = [v]
    deep["d"] = v
    with pytest.raises(RecordError, match="not valid Unicode"):
        check_record(deep, f, lim, "p", 1)
