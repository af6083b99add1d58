"""Field options and the checks every input record passes before it enters the pipeline."""
from __future__ import annotations

import math
import numbers
import re
import sys
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import NamedTuple

from neardup.io.errors import RecordError

__all__ = ["Fields", "Limits", "Checked", "JSON_NAN", "JSON_INF", "JSON_NINF", "check_record", "decode_utf8", "is_valid_unicode",
           "parse_time", "int_too_long_reason", "non_finite_reason"]


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

    max_chars: int = 5_000_000
    strict_json: bool = False


#: What JSON text's ``NaN``, ``Infinity`` and ``-Infinity`` (and a number past a float's range,
#: ``1e400``) are read as by io/readers.py's lenient fallback (the json module, which reads what
#: orjson refuses): these very objects, so that :func:`check_record` tells a NaN of JSON text,
#: which is not JSON, from a typed one (a Parquet column's, a Python record's), which is a value
#: (Limits.strict_json). No other code makes them (a float is never shared otherwise).
JSON_NAN = float("nan")
JSON_INF = float("inf")
JSON_NINF = float("-inf")


def _json_literal(v) -> str | None:
    """'NaN', 'Infinity' or '-Infinity' for a number read from such JSON text, else None."""
    if v is JSON_NAN:
        return "NaN"
    if v is JSON_INF:
        return "Infinity"
    if v is JSON_NINF:
        return "-Infinity"
    return None


class Checked(NamedTuple):
    """A record that passed the checks (a tuple: cheap to make once per document)."""

    id: str | int
    key: str  # the id as a string, for ordering and duplicate checks
    text: str  # what is fingerprinted: the title (if any), a newline, then the text
    time: float  # seconds since the epoch (UTC); NaN when missing
    source: str | None
    time_error: str | None = None  # why the time field could not be read (it counts as missing)


_FORMATS = (
    "%d-%b-%Y %H:%M:%S.%f",  # Reuters-21578: 26-FEB-1987 15:10:44.60
    "%d-%b-%Y %H:%M:%S",
    "%Y/%m/%d %H:%M:%S",
    "%d/%m/%Y %H:%M:%S",
    "%Y/%m/%d",
)


_EPOCH = datetime(1970, 1, 1)
#: The times a record may have, in seconds since the epoch: 0001-01-01T00:00:00Z to
#: 9999-12-31T23:59:59Z, what a date can be written as (the service's page, JSON readers).
TIME_MIN = (datetime(1, 1, 1) - _EPOCH).total_seconds()
TIME_MAX = (datetime(9999, 12, 31, 23, 59, 59) - _EPOCH).total_seconds()
#: Epoch seconds written as text: digits with an optional sign and fraction (not "1e9").
_EPOCH_TEXT = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?")
#: ISO 8601's expanded years: a sign, then four digits or more (+33658-09-27T01:46:40).
_SIGNED_YEAR = re.compile(r"([+-])([0-9]{4,})-[0-9]{2}-[0-9]{2}")
_cache: dict[str, float] = {}


def parse_time(value) -> float:
    """Like :func:`_parse_time`, with a small cache for repeated strings (many records share
    a publish time)."""
    if isinstance(value, str):
        t = _cache.get(value)
        if t is None:
            t = _parse_time(value)
            if len(_cache) > 65536:
                _cache.clear()
            _cache[value] = t
        return t
    return _parse_time(value)


def _parse_time(value) -> float:
    """Seconds since the epoch for a number, an ISO 8601 string, an RFC 2822 date or one of
    a few common layouts (naive times are taken as UTC). Raises ValueError otherwise."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        raise ValueError("a boolean is not a time")
    if isinstance(value, (int, float)):
        try:
            t = float(value)
        except OverflowError:  # an int past a float's range
            raise ValueError(f"{_short(value)} is out of the range of times") from None
        if not math.isfinite(t):
            raise ValueError(f"{value!r} is not a time")
        if not TIME_MIN <= t <= TIME_MAX:  # as a string of such a time is (years 1 to 9999)
            raise ValueError(f"{_short(value)} is out of the range of times (years 1 to 9999)")
        return t
    if isinstance(value, numbers.Real):  # a NumPy integer (np.float64 is a float, above)
        return _parse_time(float(value))
    if type(value).__name__ == "datetime64":  # NumPy's: its instant as ISO text (naive: UTC)
        return _parse_time(str(value.astype("datetime64[us]")))
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):  # a date (a Parquet date32/date64 column): midnight UTC of that day
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        s = value.strip()
        if not s:
            return math.nan
        dt = None
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            for fmt in _FORMATS:
                try:
                    dt = datetime.strptime(s, fmt)
                    break
                except ValueError:
                    continue
            if dt is None and _EPOCH_TEXT.fullmatch(s):
                # epoch seconds as text (a CSV field, a quoted JSON number); after ISO 8601,
                # which reads eight digits as a date (20261201)
                return _parse_time(float(s))
            if dt is None and (far := _SIGNED_YEAR.match(s)):
                year = int(far.group(2))
                if far.group(1) == "-" or not 1 <= year <= 9999:
                    # (a Parquet timestamp or date past year 9999 is read as this text)
                    raise ValueError(f"{_short(value)} is out of the range of times (years 1 to 9999)")
            if dt is None:
                try:
                    # imported here: email.utils costs every command's start-up ~15 ms, and
                    # few inputs have RFC 2822 dates
                    from email.utils import parsedate_to_datetime

                    dt = parsedate_to_datetime(s)
                except (TypeError, ValueError, IndexError, OverflowError):
                    dt = None
        if dt is None:
            raise ValueError(f"cannot parse {_short(value)} as a time (use ISO 8601, RFC 2822 or epoch seconds)")
    else:
        raise ValueError(f"expected a string or a number, got {type(value).__name__}")
    if dt.tzinfo is None:  # naive: taken as UTC
        return (dt - _EPOCH).total_seconds()
    try:
        t = dt.astimezone(timezone.utc).timestamp()
    except OverflowError:  # year 1 or 9999 with an offset that moves it out of datetime's years
        raise ValueError(f"{_short(value)} is out of the range of times (years 1 to 9999)") from None
    if not TIME_MIN <= t <= TIME_MAX:  # (an offset can move year 1 or 9999 past the ends without an error)
        raise ValueError(f"{_short(value)} is out of the range of times (years 1 to 9999)")
    return t


def _short(value, limit: int = 60) -> str:
    """repr(value), cut to `limit` characters for an error message."""
    try:
        r = repr(value)
    except ValueError:  # an int past Python's digits limit for text (sys.get_int_max_str_digits)
        if not isinstance(value, int):
            raise
        return f"an integer of {int_digits(value):,} digits"
    return r if len(r) <= limit else r[: limit - 3] + "..."


#: Below this many bits an int is never past Python's limit on the digits of an int written
#: as text (sys.get_int_max_str_digits: 640 digits at the least, 3 bits a digit and more).
_SAFE_INT_BITS = 3 * 640


def int_too_long(v: int) -> bool:
    """`v` cannot be written as text (str() raises ValueError: more digits than
    sys.get_int_max_str_digits allows, 4,300 by default)."""
    if v.bit_length() <= _SAFE_INT_BITS:
        return False
    try:
        str(v)
    except ValueError:
        return True
    return False


def int_digits(v: int) -> int:
    """The decimal digits of `v` (without its sign), counted without writing it as text."""
    v = abs(int(v))
    d = max(1, int(v.bit_length() * 0.30102999566398120))
    p = 10 ** d
    while v >= p:
        d, p = d + 1, p * 10
    while d > 1 and v < p // 10:
        d, p = d - 1, p // 10
    return d


def int_too_long_reason(digits: int) -> str:
    """The bad record's reason for an integer of `digits` digits past Python's limit."""
    return (f"integer too long: {digits:,} digits, over the limit of {sys.get_int_max_str_digits():,} "
            "digits Python reads or writes (give it as a string)")


def decode_utf8(data: bytes) -> str:
    """`data` as UTF-8 text; ValueError "not valid UTF-8 (byte 0x.. at offset N)" otherwise."""
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def is_valid_unicode(s: str) -> bool:
    """`s` can be written as UTF-8: no lone surrogate (which JSON's "\\ud800" and a CSV field
    decoded with surrogateescape can hold)."""
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_MISSING = object()


def _text_of_bytes(data: bytes, what: str, field: str | None, path: str, recno: int) -> str:
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
    rid = get(fields.id)
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
            if v - v == 0.0 or not strict or _json_literal(v) is None:  # (NaN and infinities give NaN)
                continue
        elif tv is int:
            if v.bit_length() <= _SAFE_INT_BITS or not int_too_long(v):
                continue
        elif v is None or tv is bool:
            continue
        elif tv is list:  # (a list of ASCII strings, say tags, without a call)
            for x in v:
                if type(x) is not str or not x.isascii():
                    break
            else:
                continue
            if _problem(v, strict) is None:
                continue
        elif _problem(v, strict) is None:
            continue
        _raise_unencodable(rec, fields, path, recno, strict)
    try:
        names_ascii = "".join(rec).isascii()
    except TypeError:  # (a Python record may have a number as a field name)
        names_ascii = False
    if not names_ascii and _problem(list(rec)) is not None:
        _raise_unencodable(rec, fields, path, recno, strict)
    return Checked(rid, key, text, t, source, time_error)


def _problem(v, strict: bool = False) -> tuple[str, object] | None:
    """Why `v` (a value, or a list, tuple or dict of values at any depth, dict keys included)
    cannot be written to the outputs, or None: ``("surrogate", None)`` for a string holding a
    lone surrogate, ``("int", digits)`` for an int past Python's digits limit for text, and
    with `strict` ``("number", "NaN")`` (or "Infinity", "-Infinity") for such a number read
    from JSON text (:data:`JSON_NAN`)."""
    stack = [v]  # (not recursive: JSON may nest 1,000 levels, past Python's recursion limit)
    pop, push = stack.pop, stack.extend
    while stack:
        v = pop()
        if isinstance(v, str):
            if not v.isascii() and not is_valid_unicode(v):
                return ("surrogate", None)
        elif isinstance(v, dict):
            push(v)
            push(v.values())
        elif isinstance(v, (list, tuple)):
            push(v)
        elif isinstance(v, int):
            if not isinstance(v, bool) and int_too_long(v):
                return ("int", int_digits(v))
        elif strict and (name := _json_literal(v)) is not None:
            return ("number", name)
    return None


def non_finite_reason(name: str, nested: bool = False, what: str = "the value") -> str:
    """The bad record's reason for a NaN or an infinity read from JSON text (`name`: "NaN",
    "Infinity", "-Infinity"; `nested`: inside a list or an object, or `what` holds it)."""
    hint = ("null is JSON's missing value" if name == "NaN"
            else "a number past a float's range, such as 1e400, is read as one")
    return f"{what} {'holds' if nested else 'is'} {name}, which JSON cannot hold ({hint})"


def _raise_unencodable(rec: dict, fields: Fields, path: str, recno: int, strict: bool = False):
    """Raise the record's error for the first field (or field name) holding a value the
    outputs cannot write (:func:`_problem`)."""
    for k, v in rec.items():
        # (a name that is a number is written as its text: NaN is "NaN", not a number)
        why = _problem(k)
        if why is not None:
            reason = ("the field's name is not valid Unicode (lone surrogate)" if why[0] == "surrogate"
                      else f"the field's name: {int_too_long_reason(why[1])}")
            raise RecordError(path, recno, reason, field=k if isinstance(k, str) else None)
        why = _problem(v, strict)
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
