"""`Index.add(on_error="skip")` / `neardup index add --on-error skip`: a daily feed with a bad
record or a re-delivered article adds the rest, and says what it left out (file, line, field,
reason) in input order, as `neardup dedup --on-error skip` does; without it the batch stops
and nothing is added."""

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup import InvalidParameterError
from neardup.errors import RecordError
from neardup.index import Index

A = "heavy rain is likely across the northern districts tonight with flooding expected near the river"
B = "the council voted on tuesday to reopen the old market hall after three years of repairs"


def _lines(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("".join(x + "\n" for x in lines))
    return str(p)


def _verdicts(vs):
    return [(v.id, v.status, v.keeper, v.similarity) for v in vs]


def test_bad_records_and_taken_ids_are_skipped_and_listed_in_input_order(tmp_path):
    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add([{"id": "old", "text": B + " old"}])
    day = _lines(
        tmp_path,
        "day.jsonl",
        [
            json.dumps({"id": "a", "text": A}),
            '{"id": "broken", "text": ',  # 2: malformed JSON
            json.dumps({"id": "b", "text": A + " today"}),
            json.dumps({"id": "e", "text": ""}),  # 4: empty text
            json.dumps({"id": "old", "text": B + " again"}),  # 5: id already in the index
            json.dumps({"id": "a", "text": B}),  # 6: id earlier in the batch
            json.dumps({"text": B + " no id"}),  # 7: no id
        ],
    )
    more = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": ["c", "b"], "text": [A + " more", B]}), more)  # row 2: id earlier in the batch
    with Index.open(d) as ix:
        with pytest.raises(RecordError, match="day.jsonl:2"):
            ix.add([day, str(more)])
        assert ix.stats()["documents"] == 1  # stopped: nothing added
        got = ix.add([day, str(more)], on_error="skip")
        assert [v.id for v in got] == ["a", "b", "c"]
        where = [(e.path.rsplit("/", 1)[-1], e.line, e.field) for e in got.skipped]
        assert where == [
            ("day.jsonl", 2, None),
            ("day.jsonl", 4, "text"),
            ("day.jsonl", 5, "id"),
            ("day.jsonl", 6, "id"),
            ("day.jsonl", 7, "id"),
            ("more.parquet", 2, "id"),
        ], where
        assert "id already in the index: 'old'" in str(got.skipped[2])
        assert "id appears earlier in the batch: 'a'" in str(got.skipped[3])
        assert ix.stats()["documents"] == 4
        assert ix.get_document("a")["text"] == A and ix.get_document("old")["text"] == B + " old"
    # the same verdicts as an add of the good records alone
    d2 = str(tmp_path / "ix2")
    with Index.create(d2) as ix:
        ix.add([{"id": "old", "text": B + " old"}])
        clean = ix.add([{"id": "a", "text": A}, {"id": "b", "text": A + " today"}, {"id": "c", "text": A + " more"}])
    assert _verdicts(got) == _verdicts(clean)
    assert got[1].status == "duplicate" and got.skipped and clean.skipped == []


def test_dry_run_skips_the_same_and_inserts_nothing(tmp_path):
    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add([{"id": "old", "text": B}])
        got = ix.add(
            [
                {"id": "old", "text": A},
                {"id": "n", "text": A + " x"},
                {"id": "z", "text": None},
                {"id": "n", "text": B},
            ],
            dry_run=True,
            on_error="skip",
        )
        assert [v.id for v in got] == ["n"] and not got.inserted
        assert [(e.line, e.field) for e in got.skipped] == [(1, "id"), (3, "text"), (4, "id")]
        assert ix.stats()["documents"] == 1


def test_a_batch_wholly_skipped_adds_nothing_and_says_so(tmp_path):
    d = str(tmp_path / "ix")
    with Index.create(d) as ix:
        ix.add([{"id": "a", "text": A}])
        got = ix.add([{"id": "a", "text": B}, {"id": "", "text": B}], on_error="skip")
        assert len(got) == 0 and len(got.skipped) == 2
        assert ix.stats()["documents"] == 1 and ix.get_document("a")["text"] == A


def test_on_error_must_be_stop_or_skip(tmp_path):
    with Index.create(str(tmp_path / "ix")) as ix:
        with pytest.raises(InvalidParameterError, match="on_error must be 'stop' or 'skip'"):
            ix.add([{"id": "a", "text": A}], on_error="ignore")


def test_cli_on_error_skip(tmp_path):
    d = str(tmp_path / "ix")
    day = _lines(
        tmp_path,
        "day.jsonl",
        [
            json.dumps({"id": "a", "text": A}),
            json.dumps({"id": "e", "text": "  "}),
            json.dumps({"id": "b", "text": A + " today"}),
        ],
    )
    run = lambda *a: subprocess.run([sys.executable, "-m", "neardup", "index", *a], capture_output=True, text=True)  # noqa: E731
    assert run("init", d).returncode == 0
    r = run("add", d, day)
    assert r.returncode == 3 and "day.jsonl:2: field 'text'" in r.stderr and "nothing was added" in r.stderr
    r = run("add", d, day, "--on-error", "skip", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["added"] == 2 and out["skipped"] == 1
    assert out["skipped_records"] == [
        {"file": day, "line": 2, "field": "text", "reason": out["skipped_records"][0]["reason"]}
    ]
    assert f"neardup index add: skipped {day}:2: field 'text'" in r.stderr
    r = run("add", d, day, "--on-error", "skip")  # again: every id is taken now
    assert r.returncode == 0 and "added 0 documents" in r.stdout and "3 records skipped" in r.stdout
    assert r.stderr.count("id already in the index") == 2
