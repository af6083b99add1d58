"""Publish times read from records: numbers, ISO 8601, RFC 2822, a few common layouts and
epoch seconds as text, to seconds since the epoch (UTC), within the years a date can have."""

from __future__ import annotations

import math
import numbers
import re
from datetime import UTC, date, datetime

from neardup.io.values import short

__all__ = ["TIME_MAX", "TIME_MIN", "parse_time"]

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
            raise ValueError(f"{short(value)} is out of the range of times") from None
        if not math.isfinite(t):
            raise ValueError(f"{value!r} is not a time")
        if not TIME_MIN <= t <= TIME_MAX:  # as a string of such a time is (years 1 to 9999)
            raise ValueError(f"{short(value)} is out of the range of times (years 1 to 9999)")
        return t
    if isinstance(value, numbers.Real):  # a NumPy integer (np.float64 is a float, above)
        return _parse_time(float(value))
    if type(value).__name__ == "datetime64":  # NumPy's: its instant as ISO text (naive: UTC)
        return _parse_time(str(value.astype("datetime64[us]")))
    dt: datetime | None
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
                    raise ValueError(f"{short(value)} is out of the range of times (years 1 to 9999)")  # noqa: B904
            if dt is None:
                try:
                    # imported here: email.utils costs every command's start-up ~15 ms, and
                    # few inputs have RFC 2822 dates
                    from email.utils import parsedate_to_datetime

                    dt = parsedate_to_datetime(s)
                except (TypeError, ValueError, IndexError, OverflowError):
                    dt = None
        if dt is None:
            raise ValueError(f"cannot parse {short(value)} as a time (use ISO 8601, RFC 2822 or epoch seconds)")
    else:
        raise ValueError(f"expected a string or a number, got {type(value).__name__}")
    if dt.tzinfo is None:  # naive: taken as UTC
        return (dt - _EPOCH).total_seconds()
    try:
        t = dt.astimezone(UTC).timestamp()
    except OverflowError:  # year 1 or 9999 with an offset that moves it out of datetime's years
        raise ValueError(f"{short(value)} is out of the range of times (years 1 to 9999)") from None
    if not TIME_MIN <= t <= TIME_MAX:  # (an offset can move year 1 or 9999 past the ends without an error)
        raise ValueError(f"{short(value)} is out of the range of times (years 1 to 9999)")
    return t
