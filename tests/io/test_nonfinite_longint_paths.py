"""Reader and record checks: an integer past Python's digits limit (named as such, with its
field), NaN and infinities in JSON text refused only where the caller asks (the dedup job),
typed ones (Parquet, Python) accepted, bytes and os.PathLike paths, a CSV file's header."""

import math
import os
import pathlib
import sys

import pytest

from neardup.errors import InputTypeError
from neardup.io import Fields, Limits, RecordError, check_record, open_sources
from neardup.io.readers import CsvSource, JsonlSource, parse_json_line

LIMIT = sys.get_int_max_str_digits()
BIG = "9" * (LIMIT + 700)


@pytest.mark.parametrize(
    "line,field",
    [
        (b'{"id": 1, "text": "words here", "big": ' + BIG.encode() + b"}", "big"),
        (b'{"id": 1, "text": "words here", "big": -' + BIG.encode() + b"}", "big"),
        (b'{"id": ' + BIG.encode() + b', "text": "words here"}', "id"),
        (b'{"id": 1, "text": "words here", "m": {"k": [1, ' + BIG.encode() + b"]}}", "m"),
    ],
)
def test_a_long_integer_in_a_json_line_is_named_as_such(line, field):
    """It was "malformed JSON: Exceeds the limit (4300 digits) for integer string conversion
    ...; use sys.set_int_max_str_digits()": the line is valid JSON, and no field was named."""
    err = parse_json_line("in.jsonl", 7, line)
    assert isinstance(err, RecordError)
    assert err.line == 7 and err.field == field
    assert err.reason.startswith(f"integer too long: {len(BIG):,} digits")
    assert "malformed" not in str(err) and "set_int_max_str_digits" not in str(err)


def test_a_long_integer_before_a_malformed_part_is_the_malformed_line():
    err = parse_json_line("in.jsonl", 2, b'{"id": 1, "big": ' + BIG.encode() + b', "text": }')
    assert isinstance(err, RecordError) and err.reason.startswith("malformed JSON")


def test_the_jsonl_reader_gives_the_long_integer_error(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(b'{"id": 1, "text": "fine"}\n{"id": 2, "text": "x", "n": ' + BIG.encode() + b"}\n")
    got = list(JsonlSource(str(p)).records())
    assert got[0] == (1, {"id": 1, "text": "fine"})
    assert got[1][0] == 2 and isinstance(got[1][1], RecordError) and got[1][1].field == "n"


@pytest.mark.parametrize(
    "rec,field",
    [
        ({"id": 10 ** (LIMIT + 5), "text": "words"}, "id"),
        ({"id": 1, "text": "words", "big": -(10 ** (LIMIT + 5))}, "big"),
        ({"id": 1, "text": "words", "big": [1, {"k": 10 ** (LIMIT + 5)}]}, "big"),
        ({"id": 1, "text": "words", "published_at": 10 ** (LIMIT + 5)}, "published_at"),
    ],
)
def test_a_long_integer_in_a_python_record_is_a_bad_record(rec, field):
    """A Python int past the limit raised a bare ValueError (the id, with no record named) or
    failed the writers after the run (any other field)."""
    with pytest.raises(RecordError) as got:
        check_record(rec, Fields(), Limits(), "<records>", 3)
    assert got.value.field == field and got.value.line == 3
    assert (
        got.value.reason == f"integer too long: {LIMIT + 6:,} digits, over the limit of {LIMIT:,} "
        "digits Python reads or writes (give it as a string)"
    )


def test_an_integer_just_inside_the_limit_passes():
    n = 10 ** (LIMIT - 1)  # LIMIT digits
    c = check_record({"id": n, "text": "words", "x": [n, {"y": -n}]}, Fields(), Limits(), "p", 1)
    assert c.key == str(n)


NON_FINITE = [(float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity")]


@pytest.mark.parametrize(
    "literal,name",
    [
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("1e400", "Infinity"),
        ("-1e400", "-Infinity"),
    ],
)
def test_json_text_with_nan_or_infinity_is_refused_when_the_limits_say_so(literal, name):
    """JSON text holding NaN, Infinity or -Infinity is not JSON (RFC 8259: orjson refuses it,
    the json module reads it); the dedup job (Limits(strict_json=True)) refuses the line, naming
    the field, at any depth, the time field too: its kept.jsonl copies the line, which would not
    be JSON. Without it (the persistent index, which stores them as null) the record passes."""
    lim = Limits(strict_json=True)
    for body, field, how in [
        (f'"score": {literal}', "score", "is"),
        (f'"m": {{"k": [1.0, {literal}]}}', "m", "holds"),
        (f'"published_at": {literal}', "published_at", "is"),
    ]:
        rec = parse_json_line("in.jsonl", 4, f'{{"id": "a", "text": "words", {body}, "n": 1}}'.encode())
        assert isinstance(rec, dict) and not isinstance(rec, RecordError)
        with pytest.raises(RecordError) as got:
            check_record(rec, Fields(), lim, "in.jsonl", 4)
        assert got.value.field == field and got.value.line == 4
        assert got.value.reason.startswith(f"the value {how} {name}, which JSON cannot hold")
        check_record(rec, Fields(), Limits(), "in.jsonl", 4)  # the default: as before


def test_a_json_literal_in_a_key_given_twice_is_still_refused():
    """{"a": NaN, "a": 1}: the NaN does not last in the dict, but the line is not JSON (and
    nothing in the record tells it any more: refused when read, for every reader)."""
    err = parse_json_line("in.jsonl", 2, b'{"id": "a", "text": "words", "a": NaN, "a": 1}')
    assert isinstance(err, RecordError) and err.line == 2
    assert err.reason.startswith("the line holds NaN, which JSON cannot hold")


def test_a_typed_nan_is_not_a_json_literal():
    """The same value from a Python record or a Parquet column is a value; only the objects
    the JSON reader made are refused."""
    lim = Limits(strict_json=True)
    rec = parse_json_line("in.jsonl", 1, b'{"id": "a", "text": "words", "x": NaN}')
    typed = {"id": "a", "text": "words", "x": float("nan")}
    check_record(typed, Fields(), lim, "<records>", 1)
    with pytest.raises(RecordError):
        check_record(rec, Fields(), lim, "in.jsonl", 1)


def test_nan_inside_a_string_or_valid_json_is_not_refused():
    lim = Limits(strict_json=True)
    for line in (
        b'{"id": "a", "text": "NaN and Infinity are words", "s": "-Infinity"}',
        b'{"id": "a", "text": "words", "x": 1e300, "y": -1e-400}',  # (-1e-400 is -0.0)
        b'{"id": 123456789012345678901234567890, "text": "words", "x": 1.5}',
    ):  # (the json module's too)
        rec = parse_json_line("in.jsonl", 1, line)
        assert type(rec) is dict
        check_record(rec, Fields(), lim, "in.jsonl", 1)


@pytest.mark.parametrize("value,name", NON_FINITE)
def test_typed_non_finite_numbers_are_values(value, name):
    """A float NaN or infinity given typed (a Parquet column, a Python record) is a value, with
    or without strict_json, at any depth; in the time field it is an unreadable time."""
    for lim in (Limits(strict_json=True), Limits()):
        for rec in ({"score": value}, {"m": {"k": [1.0, value]}}):
            c = check_record({"id": "a", "text": "words", **rec}, Fields(), lim, "<records>", 4)
            assert c.time_error is None and math.isnan(c.time)
        c = check_record({"id": "a", "text": "words", "published_at": value}, Fields(), lim, "<records>", 4)
        assert math.isnan(c.time) and c.time_error == f"{value} is not a time"


def test_numpy_floats_are_values_too():
    np = pytest.importorskip("numpy")
    for v in (np.float64("nan"), np.float32("inf"), np.float32(1.5)):
        c = check_record({"id": "a", "text": "words", "x": v}, Fields(), Limits(strict_json=True), "p", 1)
        assert math.isnan(c.time) and c.time_error is None


def _pathlike(value):
    class P:
        def __fspath__(self):
            return value

    return P()


def test_open_sources_takes_bytes_and_pathlike_paths(tmp_path):
    """bytes were iterated (b"/a.jsonl" as numbers: "got int") or refused ("got bytes")."""
    p = tmp_path / "in.jsonl"
    p.write_text('{"id": 1, "text": "words"}\n', encoding="utf-8")
    for given in (os.fsencode(p), [os.fsencode(p)], [pathlib.Path(p)], [_pathlike(os.fsencode(p))]):
        [src] = open_sources(given)
        assert src.name == str(p) and type(src.name) is str
        assert [r for _, r in src.records()] == [{"id": 1, "text": "words"}]
    with pytest.raises(InputTypeError, match=r"inputs\[0\]"):
        open_sources([bytearray(os.fsencode(p))])


def test_a_file_name_that_is_not_utf8_given_as_bytes(tmp_path):
    name = os.fsencode(tmp_path) + b"/caf\xe9.jsonl"
    with open(name, "wb") as f:
        f.write(b'{"id": 1, "text": "words"}\n')
    [src] = open_sources([name])
    assert os.fsencode(src.name) == name


def test_csv_header(tmp_path):
    p = tmp_path / "a.csv"
    p.write_bytes(b"\xef\xbb\xbfid,text,extra\n")
    assert CsvSource(str(p)).header() == ["id", "text", "extra"]
    (tmp_path / "e.tsv").write_bytes(b"")
    assert CsvSource(str(tmp_path / "e.tsv")).header() == []
