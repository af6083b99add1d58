"""Field options and the checks every input record passes before it enters the pipeline."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from neardup.errors import RecordError
from neardup.io.times import TIME_MAX, TIME_MIN, parse_time
from neardup.io.values import (
    JSON_INF,
    JSON_NAN,
    JSON_NINF,
    SAFE_INT_BITS,
    decode_utf8,
    int_digits,
    int_too_long,
    int_too_long_reason,
    is_valid_unicode,
    json_literal,
    non_finite_reason,
    unwritable,
)
from neardup.settings import DEFAULT_MAX_CHARS

# (the names of values.py and times.py imported here were this module's: still importable from it)
__all__ = [
    "Fields",
    "Limits",
    "Checked",
    "JSON_NAN",
    "JSON_INF",
    "JSON_NINF",
    "TIME_MAX",
    "TIME_MIN",
    "check_record",
    "decode_utf8",
    "is_valid_unicode",
    "parse_time",
    "int_too_long_reason",
    "non_finite_reason",
]


@dataclass(frozen=True)
class Fields:
    """Which input fields hold what. Every other field is carried through untouched."""

    id: str = "id"
    text: str = "text"
    title: str | None = None
    time: str | None = "published_at"
    source: str | None = "source"


@dataclass(frozen=True)
class Limits:
    """Size limits: a text over ``max_chars`` characters is a bad record, not a slow run.

    ``strict_json``: a record read from JSON text that holds ``NaN``, ``Infinity`` or
    ``-Infinity`` (not JSON, RFC 8259: the json module's lenient fallback reads them after
    orjson refuses the line, io/readers.py), or a number past a float's range (``1e400``, read
    as an infinity), is a bad record naming its field (at any depth, the time field too:
    :data:`JSON_NAN`). The dedup job
    (both engines) sets it, so that kept.jsonl, a copy of the kept lines, stays JSON. A float
    NaN or infinity given typed (a Parquet or Arrow column, a Python record) is a value like
    any other: kept.parquet keeps it, kept.jsonl writes null (docs/dedup.md). The persistent
    index does not set it: it stores such values as null, as docs/index.md says."""

    max_chars: int = DEFAULT_MAX_CHARS
    strict_json: bool = False


class Checked(NamedTuple):
    """A record that passed the checks (a tuple: cheap to make once per document)."""

    id: str | int
    key: str  # the id as a string, for ordering and duplicate checks
    text: str  # what is fingerprinted: the title (if any), a newline, then the text
    time: float  # seconds since the epoch (UTC); NaN when missing
    source: str | None
    time_error: str | None = None  # why the time field could not be read (it counts as missing)


_MISSING = object()


def _text_of_bytes(data: bytes | bytearray, what: str, field: str | None, path: str, recno: int) -> str:
    """A field given as bytes (a Parquet or Arrow binary column; text written by tools that
    do not mark their strings as UTF-8) is its UTF-8 text; bytes that are not UTF-8 are the
    record's error, naming the first bad byte."""
    try:
        return decode_utf8(data)
    except ValueError as exc:
        raise RecordError(path, recno, f"{what} is {exc}", field=field) from None


def check_record(rec: dict, fields: Fields, limits: Limits, path: str, recno: int) -> Checked:
    """Validate one parsed record; raise :class:`RecordError` naming file, line and field."""
    get = rec.get
    rid: Any = get(fields.id)  # (str or int once checked; tid says which)
    if isinstance(rid, (bytes, bytearray)):  # a Parquet binary column: its UTF-8 text
        rid = _text_of_bytes(rid, "id", fields.id, path, recno)
    tid = type(rid)
    if tid is not str and isinstance(rid, str):  # a str subclass (numpy.str_): its text
        rid, tid = str(rid), str
    if tid is str:
        key = rid
        if not key or key.isspace():
            raise RecordError(path, recno, "id is empty", field=fields.id)
        if not key.isascii() and not is_valid_unicode(key):
            raise RecordError(path, recno, "id is not valid Unicode (lone surrogate)", field=fields.id)
    elif tid is int:
        try:
            key = str(rid)
        except ValueError:  # past sys.get_int_max_str_digits (a Python record: JSON's is refused when read)
            raise RecordError(path, recno, int_too_long_reason(int_digits(rid)), field=fields.id) from None
    elif rid is None:
        raise RecordError(path, recno, "missing id", field=fields.id)
    else:
        raise RecordError(path, recno, f"id must be a string or an integer, got {tid.__name__}", field=fields.id)
    text = raw = get(fields.text, _MISSING)
    if isinstance(text, (bytes, bytearray)):
        text = _text_of_bytes(text, "text", fields.text, path, recno)
    if type(text) is not str:
        if text is _MISSING:
            raise RecordError(path, recno, "missing text", field=fields.text)
        got = "null" if text is None else type(text).__name__
        raise RecordError(path, recno, f"text must be a string, got {got}", field=fields.text)
    if fields.title is not None:
        title = get(fields.title)
        if isinstance(title, (bytes, bytearray)):
            title = _text_of_bytes(title, "title", fields.title, path, recno)
        if title is not None and type(title) is not str:
            raise RecordError(path, recno, f"title must be a string, got {type(title).__name__}", field=fields.title)
        if title and not title.isascii() and not is_valid_unicode(title):
            raise RecordError(path, recno, "title is not valid Unicode (lone surrogate)", field=fields.title)
        if title:
            text = f"{title}\n{text}"
    if len(text) > limits.max_chars:
        raise RecordError(
            path,
            recno,
            f"text has {len(text):,} characters, over the limit of {limits.max_chars:,} (--max-chars)",
            field=fields.text,
        )
    if not text or text.isspace():
        raise RecordError(path, recno, "text is empty", field=fields.text)
    if not text.isascii() and not is_valid_unicode(text):
        raise RecordError(path, recno, "text is not valid Unicode (lone surrogate)", field=fields.text)
    t = math.nan
    time_error = None
    if fields.time is not None:
        v = get(fields.time)
        if v is not None:
            try:
                t = parse_time(v)
            except ValueError as exc:
                # A bad time does not make the text unusable: the record is kept, its time
                # counts as missing for the keeper rule, and the run report lists it.
                time_error = str(exc)
    source = None
    if fields.source is not None:
        src = get(fields.source)
        if src is not None:
            if type(src) is str:
                source = src
            elif isinstance(src, (bytes, bytearray)):  # its UTF-8 text, not the Python form "b'...'"
                source = _text_of_bytes(src, "source", fields.source, path, recno)
            else:
                source = str(src)
    # Every other field, at any depth, names included: a lone surrogate in one (JSON's
    # "\udc80" in the source, say) passed, and the writers failed on it after the whole run;
    # so did an int past Python's digits limit for text (a Python record's: JSON's is refused
    # when read); with limits.strict_json, a NaN or an infinity read from JSON text (not JSON:
    # kept.jsonl copies the line). A typed float NaN or infinity is a value.
    # Cheap for the usual record: str.isascii() is a flag read, and only non-ASCII strings are
    # encoded (the text, already checked, is skipped by identity).
    strict = limits.strict_json
    for v in rec.values():
        tv = type(v)
        if tv is str:
            if v.isascii() or v is raw or is_valid_unicode(v):
                continue
        elif tv is float:
            if v - v == 0.0 or not strict or json_literal(v) is None:  # (NaN and infinities give NaN)
                continue
        elif tv is int:
            if v.bit_length() <= SAFE_INT_BITS or not int_too_long(v):
                continue
        elif v is None or tv is bool:
            continue
        elif tv is list:  # (a list of ASCII strings, say tags, without a call)
            for x in v:
                if type(x) is not str or not x.isascii():
                    break
            else:
                continue
            if unwritable(v, strict) is None:
                continue
        elif unwritable(v, strict) is None:
            continue
        _raise_unencodable(rec, fields, path, recno, strict)
    try:
        names_ascii = "".join(rec).isascii()
    except TypeError:  # (a Python record may have a number as a field name)
        names_ascii = False
    if not names_ascii and unwritable(list(rec)) is not None:
        _raise_unencodable(rec, fields, path, recno, strict)
    return Checked(rid, key, text, t, source, time_error)


def _raise_unencodable(rec: dict, fields: Fields, path: str, recno: int, strict: bool = False):
    """Raise the record's error for the first field (or field name) holding a value the
    outputs cannot write (:func:`values.unwritable`)."""
    for k, v in rec.items():
        # (a name that is a number is written as its text: NaN is "NaN", not a number)
        why = unwritable(k)
        if why is not None:
            reason = (
                "the field's name is not valid Unicode (lone surrogate)"
                if why[0] == "surrogate"
                else f"the field's name: {int_too_long_reason(why[1])}"
            )
            raise RecordError(path, recno, reason, field=k if isinstance(k, str) else None)
        why = unwritable(v, strict)
        if why is None:
            continue
        kind, detail = why
        if kind == "surrogate":
            what = "source" if k == fields.source else "the value"
            reason = f"{what} is not valid Unicode (lone surrogate)"
        elif kind == "int":
            reason = int_too_long_reason(detail)
        else:
            reason = non_finite_reason(detail, nested=isinstance(v, (dict, list, tuple)))
        raise RecordError(path, recno, reason, field=str(k))
    raise AssertionError("no field holds a value the outputs cannot write")  # pragma: no cover
