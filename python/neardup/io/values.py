"""Values told apart before they reach the outputs: JSON text's NaN and infinities (which
JSON cannot hold), integers past Python's digits limit for text, lone surrogates, bytes that
are not UTF-8; and a value shown short in an error message. Used by the record checks
(records.py), the readers and the times (times.py)."""

from __future__ import annotations

import sys
from typing import Any

__all__ = [
    "JSON_NAN",
    "SAFE_INT_BITS",
    "JSON_INF",
    "JSON_NINF",
    "decode_utf8",
    "int_digits",
    "int_too_long",
    "int_too_long_reason",
    "is_valid_unicode",
    "json_literal",
    "non_finite_reason",
    "short",
    "unwritable",
]


#: What JSON text's ``NaN``, ``Infinity`` and ``-Infinity`` (and a number past a float's range,
#: ``1e400``) are read as by io/readers.py's lenient fallback (the json module, which reads what
#: orjson refuses): these very objects, so that :func:`records.check_record` tells a NaN of JSON text,
#: which is not JSON, from a typed one (a Parquet column's, a Python record's), which is a value
#: (Limits.strict_json). No other code makes them (a float is never shared otherwise).
JSON_NAN = float("nan")
JSON_INF = float("inf")
JSON_NINF = float("-inf")


def json_literal(v) -> str | None:
    """'NaN', 'Infinity' or '-Infinity' for a number read from such JSON text, else None."""
    if v is JSON_NAN:
        return "NaN"
    if v is JSON_INF:
        return "Infinity"
    if v is JSON_NINF:
        return "-Infinity"
    return None


def short(value, limit: int = 60) -> str:
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
SAFE_INT_BITS = 3 * 640


def int_too_long(v: int) -> bool:
    """`v` cannot be written as text (str() raises ValueError: more digits than
    sys.get_int_max_str_digits allows, 4,300 by default)."""
    if v.bit_length() <= SAFE_INT_BITS:
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
    p = 10**d
    while v >= p:
        d, p = d + 1, p * 10
    while d > 1 and v < p // 10:
        d, p = d - 1, p // 10
    return d


def int_too_long_reason(digits: int) -> str:
    """The bad record's reason for an integer of `digits` digits past Python's limit."""
    return (
        f"integer too long: {digits:,} digits, over the limit of {sys.get_int_max_str_digits():,} "
        "digits Python reads or writes (give it as a string)"
    )


def decode_utf8(data: bytes | bytearray) -> str:
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


def unwritable(v, strict: bool = False) -> tuple[str, Any] | None:
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
        elif strict and (name := json_literal(v)) is not None:
            return ("number", name)
    return None


def non_finite_reason(name: str, nested: bool = False, what: str = "the value") -> str:
    """The bad record's reason for a NaN or an infinity read from JSON text (`name`: "NaN",
    "Infinity", "-Infinity"; `nested`: inside a list or an object, or `what` holds it)."""
    hint = (
        "null is JSON's missing value"
        if name == "NaN"
        else "a number past a float's range, such as 1e400, is read as one"
    )
    return f"{what} {'holds' if nested else 'is'} {name}, which JSON cannot hold ({hint})"
