"""`neardup dedup` on an empty day with --format parquet, on a JSON line's NaN and on integers
past Python's digits limit (exit 3 naming line and field), on a Parquet file's NaN (a value:
exit 0, null in kept.jsonl), and on an input file whose name is not UTF-8."""

import json
import math
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.cli import main

A = "the council approved the new library budget after a long debate on tuesday night"


def test_an_empty_day_as_parquet_has_id_and_text(tmp_path):
    p = tmp_path / "day.jsonl"
    p.write_text("")
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q", "--format", "parquet"]) == 0
    s = pq.read_schema(tmp_path / "out" / "kept.parquet")
    assert s.names == ["id", "text", "alternates"] and s.field("text").type == pa.string()


def test_nan_is_a_bad_record(tmp_path, capsys):
    p = tmp_path / "in.jsonl"
    p.write_text('{"id": 1, "text": "%s"}\n{"id": 2, "text": "%s", "score": NaN}\n' % (A, A + " again"))
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q"]) == 3
    err = capsys.readouterr().err
    assert "in.jsonl:2: field 'score': the value is NaN, which JSON cannot hold" in err
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q", "--on-error", "skip"]) == 0
    assert [json.loads(x)["id"] for x in (tmp_path / "out" / "kept.jsonl").read_text().splitlines()] == [1]


def test_a_parquet_nan_is_a_value(tmp_path, capsys):
    """pandas writes NaN for a missing number: every such record was refused (exit 3)."""
    p = tmp_path / "in.parquet"
    pq.write_table(
        pa.table({"id": [1, 2], "text": [A, "a second story about something else"], "score": [float("nan"), 0.5]}), p
    )
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q"]) == 0
    lines = (tmp_path / "out" / "kept.jsonl").read_text().splitlines()
    got = [json.loads(x, parse_constant=lambda c: pytest.fail(c)) for x in lines]
    assert [(r["id"], r["score"]) for r in got] == [(1, None), (2, 0.5)]
    assert main(["dedup", str(p), "-o", str(tmp_path / "pq"), "-q", "--format", "parquet"]) == 0
    score = pq.read_table(tmp_path / "pq" / "kept.parquet").column("score").to_pylist()
    assert math.isnan(score[0]) and score[1] == 0.5


def test_an_integer_too_long_says_so(tmp_path, capsys):
    """It said "malformed JSON: Exceeds the limit (4300 digits) for integer string conversion
    ...; use sys.set_int_max_str_digits() to increase the limit"."""
    p = tmp_path / "in.jsonl"
    p.write_text('{"id": 1, "text": "%s"}\n{"id": 2, "text": "x", "n": %s}\n' % (A, "7" * 5000))
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q"]) == 3
    err = capsys.readouterr().err
    assert "in.jsonl:2: field 'n': integer too long: 5,000 digits" in err
    assert "malformed" not in err and "set_int_max_str_digits" not in err


def test_an_input_file_name_that_is_not_utf8(tmp_path):
    """Exit 1 (a UnicodeEncodeError writing report.json) after the whole run."""
    d = os.fsencode(tmp_path)
    with open(d + b"/caf\xe9.jsonl", "wb") as f:
        f.write(json.dumps({"id": 1, "text": A}).encode() + b"\n")
    r = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", b"caf\xe9.jsonl", "-o", "out", "-q"], cwd=d, capture_output=True
    )
    assert r.returncode == 0, r.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["inputs"][0]["path"] == "caf\\udce9.jsonl" and report["kept"] == 1
    # --json says it as report.json does (it printed the lone surrogate's JSON escape, "\udce9",
    # which reads back as the surrogate, where report.json has the text "caf\udce9.jsonl")
    r = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", b"caf\xe9.jsonl", "-o", "out2", "--json"], cwd=d, capture_output=True
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["inputs"] == report["inputs"]
