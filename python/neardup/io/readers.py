"""Input readers: JSONL (plain, .gz, .zst), Parquet, CSV, stdin and in-memory records.

Every reader yields ``(recno, record)`` in file order, where ``recno`` is the 1-based line
(JSONL, CSV: the line the record starts on) or row (Parquet, in-memory records), and
``record`` is a dict or a :class:`RecordError` for a record that cannot be parsed at all.
Readers can be iterated again (the pipeline re-reads candidate documents only, and the kept
records at the end), and take a ``wanted`` mask so that unwanted records are skipped cheaply
(for JSONL without parsing them). Stdin is spooled to a temporary file on first use so that
it can be read again; that file is removed by :meth:`Source.close`.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import IO, Any

import numpy as np

from neardup.errors import InputFileError, InputTypeError, RecordError
from neardup.io.records import (
    JSON_INF,
    JSON_NAN,
    JSON_NINF,
    int_too_long_reason,
    is_valid_unicode,
    non_finite_reason,
)

_orjson: ModuleType | None
try:  # orjson parses JSON lines several times faster; the standard library is the fallback.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    _orjson = None

__all__ = [
    "Source",
    "JsonlSource",
    "CsvSource",
    "ParquetSource",
    "RecordsSource",
    "open_sources",
    "read_buffer_bytes",
    "format_of",
    "parse_json_line",
    "irregular_line",
    "lossy",
]


#: JSONL is read in blocks of this many bytes (decompressed) by default: the lines of a block are
#: handled with list operations instead of a generator step each. 1 MiB reads as fast as 4 MiB
#: and leaves less behind: freed 4 MiB blocks, taken from the heap once glibc has raised its
#: mmap threshold past them, stay resident in pieces (10-30 MB more at the peak of a 40,000-
#: article run under --memory-limit; docs/scale.md). A batch run's own: BatchSteps.read_block_bytes.
BLOCK_BYTES = 1 << 20
#: Parquet records are read this many rows at a time.
PARQUET_BATCH_ROWS = 8192


def _uncompressed_name(path: str) -> str:
    """`path` in lower case without a compression suffix (.gz, .zst, .zstd)."""
    name = path.lower()
    for suffix in (".gz", ".zst", ".zstd"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def format_of(path: str) -> str:
    """'jsonl', 'csv' or 'parquet', from the file name (compression suffixes ignored)."""
    name = _uncompressed_name(path)
    if name.endswith(".parquet") or name.endswith(".pq"):
        return "parquet"
    if name.endswith(".csv") or name.endswith(".tsv"):
        return "csv"
    return "jsonl"


def _open_binary(path: str) -> IO[bytes]:
    """Open `path` for reading bytes, decompressing .gz and .zst transparently."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise InputFileError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    lower = path.lower()
    if lower.endswith((".gz", ".zst", ".zstd")):
        try:
            st = os.fstat(raw.fileno())
        except OSError:  # pragma: no cover
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0:
            # (gzip reads an empty file as no data, and so did the .zst reader: a failed
            # download read as an empty input; gzip -t and zstd -t refuse it)
            raw.close()
            kind = "gzip" if lower.endswith(".gz") else "zstd"
            raise InputFileError(f"{path}: the file is empty: not a {kind} stream (truncated?)")
    if lower.endswith(".gz"):
        raw.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if lower.endswith(".zst") or lower.endswith(".zstd"):
        try:
            import zstandard
        except ImportError as exc:  # pragma: no cover
            raw.close()
            raise InputFileError(f"{path}: reading .zst needs the 'zstandard' package") from exc
        return io.BufferedReader(_ZstdFrames(raw, zstandard))
    return raw


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a .zst file: every frame in turn, and an error (EOFError, as
    gzip's) when the file ends inside a frame. zstandard's stream_reader ended quietly there:
    a truncated file read as fewer records, or none, with exit code 0."""

    def __init__(self, raw: IO[bytes], zstandard) -> None:
        self._raw = raw
        self._new = lambda: zstandard.ZstdDecompressor().decompressobj()
        self._d = self._new()
        self._out = bytearray()
        self._in_frame = False  # input has been given to a frame that has not ended
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._out and not self._done:
            chunk = self._raw.read(1 << 20)
            if not chunk:
                self._done = True
                if self._in_frame:
                    raise EOFError("the .zst data ends inside a frame (the file is truncated)")
                break
            while chunk:
                self._out += self._d.decompress(chunk)
                self._in_frame = True
                if not self._d.eof:
                    break
                chunk = self._d.unused_data  # the next frame, if any
                self._d = self._new()
                self._in_frame = False
        n = min(len(b), len(self._out))
        b[:n] = self._out[:n]
        del self._out[:n]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


#: orjson reads an integer past 64 bits as a float (json reads the integer): a top-level float
#: this large in a record may have been one, and the line is read again by json.
_BIG_FLOAT = 2.0**63


def lossy(obj: dict) -> bool:
    """Whether orjson may have read an integer field of `obj` as a float (see _BIG_FLOAT): an
    id of 30 digits was refused as "an id must be a string or an integer, got float"."""
    for v in obj.values():
        if type(v) is float and not -_BIG_FLOAT < v < _BIG_FLOAT:
            return True
    return False


def parse_json_line(path: str, recno: int, line: bytes) -> dict | RecordError:
    """Parse one JSONL line into a dict, or describe why it cannot be."""
    if _orjson is not None:
        try:
            obj = _orjson.loads(line)
        except ValueError:
            obj = _slow_parse(path, recno, line)  # a clear message, or what json accepts
        else:
            if type(obj) is dict and lossy(obj):
                obj = _slow_parse(path, recno, line)
    else:
        obj = _slow_parse(path, recno, line)
    if isinstance(obj, RecordError) or isinstance(obj, dict):
        return obj
    return RecordError(path, recno, f"expected a JSON object, got {type(obj).__name__}")


def irregular_line(path: str, recno: int, line: bytes) -> dict | RecordError | None:
    """What a JSONL line that orjson did not parse into a dict is: None for a blank line (not
    a record), else :func:`parse_json_line`'s answer (the json module may accept what orjson
    refuses)."""
    if not line.strip():
        return None
    return parse_json_line(path, recno, line)


def _slow_parse(path: str, recno: int, line: bytes):
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = line[exc.start : exc.start + 1]
        return RecordError(path, recno, f"not valid UTF-8 (byte 0x{bad.hex()} at column {exc.start + 1})")
    # NaN, Infinity, -Infinity (not JSON, RFC 8259; orjson refuses them) and a number past a
    # float's range (1e400) read as the objects records.JSON_NAN, ... : check_record tells them
    # from a typed NaN (a Parquet column's), and the dedup job refuses the line (its kept.jsonl
    # copies the line, which would not be JSON); the index stores them as null.
    seen: list[str] = []
    try:
        obj = json.loads(text, parse_constant=_json_constant(seen), parse_float=_json_float(seen))
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # (CPython's words for sys.get_int_max_str_digits)
            return _long_int_error(path, recno, text)
        return RecordError(path, recno, f"malformed JSON: {exc}")
    except RecursionError:  # (orjson refuses past 1,024 levels, json near Python's recursion limit)
        return RecordError(path, recno, "malformed JSON: nested too deeply to read")
    if seen and type(obj) is dict and not _holds_json_literal(obj):
        # {"a": NaN, "a": 1}: the NaN did not last, and the line is still not JSON
        return RecordError(path, recno, non_finite_reason(seen[0], nested=True, what="the line"))
    return obj


_LITERALS = {"NaN": JSON_NAN, "Infinity": JSON_INF, "-Infinity": JSON_NINF}


def _json_constant(seen: list):
    def parse_constant(c: str) -> float:
        seen.append(c)
        return _LITERALS[c]

    return parse_constant


def _json_float(seen: list):
    def parse_float(s: str) -> float:
        f = float(s)
        if f - f != 0.0:  # (1e400: an infinity)
            f = JSON_INF if f > 0 else JSON_NINF
            seen.append("Infinity" if f > 0 else "-Infinity")
        return f

    return parse_float


def _holds_json_literal(obj) -> bool:
    """Whether `obj` (parsed by :func:`_slow_parse`) holds a records.JSON_NAN, ... at any depth."""
    stack = [obj]  # (not recursive: JSON may nest 1,000 levels)
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif x is JSON_NAN or x is JSON_INF or x is JSON_NINF:
            return True
    return False


class _LongInt:
    """Stands for a JSON integer past Python's digits limit in a line read again to find it."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _long_int_error(path: str, recno: int, text: str) -> RecordError:
    """The error of a line holding an integer of more digits than Python reads (4,300 by
    default, sys.get_int_max_str_digits): the line is valid JSON, and was reported as
    "malformed JSON: Exceeds the limit (4300 digits) for integer string conversion ... use
    sys.set_int_max_str_digits() to increase the limit" (the json module's words, advice for
    a Python program), naming no field. The line is read again with such integers as
    stand-ins, to name the field that holds one."""

    def parse_int(s: str):
        try:
            return int(s)
        except ValueError:
            return _LongInt(len(s.lstrip("-")))

    try:
        obj = json.loads(text, parse_int=parse_int)
    except ValueError as exc:  # malformed after the integer, too: that is the line's error
        return RecordError(path, recno, f"malformed JSON: {exc}")
    except RecursionError:
        return RecordError(path, recno, "malformed JSON: nested too deeply to read")
    field, digits = None, None
    if isinstance(obj, dict):
        for k, v in obj.items():
            stack = [v]
            while stack and digits is None:
                x = stack.pop()
                if isinstance(x, _LongInt):
                    field, digits = k, x.digits
                elif isinstance(x, dict):
                    stack.extend(x.values())
                elif isinstance(x, list):
                    stack.extend(x)
            if digits is not None:
                break
    if digits is None:  # (not in an object's field: the line itself is a number, or a list)
        m = re.search(f"[0-9]{{{sys.get_int_max_str_digits() + 1},}}", text)
        digits = len(m.group(0)) if m else sys.get_int_max_str_digits() + 1
    return RecordError(path, recno, int_too_long_reason(digits), field=field)


class Source:
    """One input: a file (or stdin, or a list of records) that can be read more than once."""

    name: str
    format: str

    def records(self, wanted: np.ndarray | None = None) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError

    def size_bytes(self) -> int | None:
        """Bytes to read, when known in advance (plain files): lets progress show an ETA."""
        return None

    bytes_read = 0

    #: A temporary copy this source reads (of stdin or a pipe), removed by :meth:`close`.
    spool: str | None = None

    def read_buffer_bytes(self) -> int:
        """Memory the reader holds while it hands out records, besides the record in hand (a
        block of lines, a batch of rows): ``--memory-limit`` counts it in a re-read's working
        memory."""
        return 0

    def close(self) -> None:
        if self.spool is not None:
            try:
                os.unlink(self.spool)
            except OSError:
                pass
            self.spool = None


class JsonlSource(Source):
    format = "jsonl"

    def __init__(self, path: str, display: str | None = None, block_bytes: int = BLOCK_BYTES) -> None:
        self.path = path
        self.name = display or path
        self.block_bytes = block_bytes  # read this many (decompressed) bytes at a time
        self.bytes_read = 0  # (decompressed) bytes handed out by blocks() so far: progress

    def size_bytes(self) -> int | None:
        """The file's size when it is a plain (uncompressed) file, for progress and ETA."""
        if self.path.lower().endswith((".gz", ".zst", ".zstd")) or not os.path.isfile(self.path):
            return None
        return os.path.getsize(self.path)

    def read_buffer_bytes(self) -> int:
        # when a block is split: the block, its lines as bytes objects, and the previous
        # block's lines, which the consumer holds until it is handed the new ones (a plain
        # file smaller than a block is one block of its size)
        size = self.size_bytes()
        return 3 * (self.block_bytes if size is None else min(self.block_bytes, size))

    def blocks(self) -> Iterator[tuple[int, list[bytes]]]:
        """(number of the first line, lines) for blocks of about ``block_bytes``."""
        f = _open_binary(self.path)
        recno = 1
        try:
            rest = b""
            first = True
            while True:
                block = f.read(self.block_bytes)
                if not block:
                    break
                self.bytes_read += len(block)
                if first:  # a UTF-8 byte-order mark (Windows tools, PowerShell) is not part of line 1
                    first = False
                    if block.startswith(b"\xef\xbb\xbf"):
                        block = block[3:]
                lines = block.split(b"\n")
                del block  # (not joined to `rest` first: that copy was a fourth block in memory)
                if rest:
                    lines[0] = rest + lines[0]
                rest = lines.pop()
                if lines:
                    yield recno, lines
                    recno += len(lines)
            if rest:
                yield recno, [rest]
        except Exception as exc:  # OSError, EOFError, BadGzipFile, zstandard.ZstdError, ...
            raise InputFileError(f"{self.name}: read error after line {recno - 1}: {exc}") from exc
        finally:
            f.close()

    def records(self, wanted: np.ndarray | None = None) -> Iterator[tuple[int, Any]]:
        name = self.name
        loads = _orjson.loads if _orjson is not None else None
        for start, lines in self.blocks():
            if wanted is None:
                idx: Any = range(len(lines))
            else:
                sel = wanted[start : start + len(lines)]
                if not sel.any():
                    continue
                idx = np.flatnonzero(sel).tolist()
            for i in idx:
                line = lines[i]
                if loads is not None:
                    try:
                        obj = loads(line)
                    except ValueError:
                        pass
                    else:
                        if type(obj) is dict and not lossy(obj):
                            yield start + i, obj
                            continue
                obj = irregular_line(name, start + i, line)
                if obj is not None:
                    yield start + i, obj

    def raw_lines(self, wanted: np.ndarray) -> Iterator[tuple[int, bytes]]:
        """The raw bytes of the wanted lines (for writing kept records untouched)."""
        for start, lines in self.blocks():
            sel = wanted[start : start + len(lines)]
            for i in np.flatnonzero(sel).tolist():
                yield start + i, lines[i]


class CsvSource(Source):
    format = "csv"

    def __init__(self, path: str) -> None:
        self.path = self.name = path
        # the file's own name says TSV (a ".tsv" in a directory's name does not)
        self.delimiter = "\t" if _uncompressed_name(path).endswith(".tsv") else ","

    def header(self) -> list[str]:
        """The column names of the file's header ([] for an empty file), read as
        :meth:`records` reads them."""
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        f = _open_binary(self.path)
        text = io.TextIOWrapper(f, encoding="utf-8-sig", errors="surrogateescape", newline="")
        try:
            return next(csv.reader(text, delimiter=self.delimiter, strict=True), [])
        except (csv.Error, OSError, EOFError, UnicodeError) as exc:
            raise InputFileError(f"{self.name}: read error: {exc}") from exc
        finally:
            text.close()

    def records(self, wanted: np.ndarray | None = None) -> Iterator[tuple[int, Any]]:
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        f = _open_binary(self.path)
        # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the first column's
        # name. strict: a quote left open is an error, not the rest of the file in one field
        text = io.TextIOWrapper(f, encoding="utf-8-sig", errors="surrogateescape", newline="")
        try:
            reader = csv.reader(text, delimiter=self.delimiter, strict=True)
            try:
                header = next(reader)
            except StopIteration:
                return
            twice = sorted({h for h in header if header.count(h) > 1})
            if twice:  # (a record would silently keep the last column of the name)
                raise InputFileError(f"{self.name}: the header names column {twice[0]!r} more than once")
            start = reader.line_num + 1
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    break
                except csv.Error as exc:
                    recno, start = start, reader.line_num + 1
                    # (only when asked for, as every other record: a re-read that passes
                    # `wanted` took it for the record it wanted next)
                    if wanted is None or (recno < len(wanted) and wanted[recno]):
                        yield recno, RecordError(self.name, recno, f"malformed CSV: {exc}")
                    continue
                recno, start = start, reader.line_num + 1
                if wanted is not None and (recno >= len(wanted) or not wanted[recno]):
                    continue
                if not row:
                    continue
                if len(row) != len(header):
                    yield recno, RecordError(self.name, recno, f"expected {len(header)} columns, got {len(row)}")
                    continue
                rec = dict(zip(header, row))
                bad = next((k for k, v in rec.items() if not is_valid_unicode(v)), None)
                if bad is not None:
                    yield recno, RecordError(self.name, recno, "not valid UTF-8", field=bad)
                    continue
                yield recno, rec
        except InputFileError:
            raise
        except (OSError, EOFError, UnicodeError) as exc:
            raise InputFileError(f"{self.name}: read error: {exc}") from exc
        finally:
            text.close()


class ParquetSource(Source):
    format = "parquet"

    def __init__(self, path: str) -> None:
        self.path = self.name = path
        try:
            import pyarrow.parquet as pq

            self._file = pq.ParquetFile(path)
        except ImportError as exc:  # pragma: no cover
            raise InputFileError(f"{path}: reading Parquet needs the 'pyarrow' package") from exc
        except OSError as exc:
            raise InputFileError(f"{path}: cannot open: {exc}") from exc
        except Exception as exc:  # pyarrow raises ArrowInvalid (a ValueError) for bad files
            raise InputFileError(f"{path}: not a readable Parquet file: {exc}") from exc
        self.columns = list(self._file.schema_arrow.names)
        twice = sorted({c for c in self.columns if self.columns.count(c) > 1})
        if twice:  # (a record kept the last column of the name: the other's data was lost)
            raise InputFileError(f"{path}: the file names column {twice[0]!r} more than once")

    def read_buffer_bytes(self) -> int:
        # a batch of rows decoded by Arrow, and the same rows as Python objects (about twice
        # their bytes), from the widest row group's uncompressed bytes per row
        md = self._file.metadata
        per_row = max(
            (md.row_group(i).total_byte_size / max(md.row_group(i).num_rows, 1) for i in range(md.num_row_groups)),
            default=0.0,
        )
        return int(3 * per_row * PARQUET_BATCH_ROWS)

    def records(self, wanted: np.ndarray | None = None, columns: list[str] | None = None) -> Iterator[tuple[int, Any]]:
        cols = None if columns is None else [c for c in columns if c in self.columns]
        recno = 0
        try:
            for batch in self._file.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols):
                n = batch.num_rows
                if wanted is not None:
                    sl = wanted[recno + 1 : recno + 1 + n]
                    if not sl.any():
                        recno += n
                        continue
                try:
                    rows = batch.to_pylist()
                except (OverflowError, ValueError):  # a timestamp or date past year 9999 (or before 1)
                    rows = _rows_by_value(batch)
                for i, rec in enumerate(rows):
                    r = recno + 1 + i
                    if wanted is None or (r < len(wanted) and wanted[r]):
                        yield r, rec
                recno += n
        except OSError as exc:
            raise InputFileError(f"{self.name}: read error: {exc}") from exc

    def table(self):
        return self._file.read()

    def schema(self):
        """The file's Arrow schema (its columns, with no row read)."""
        return self._file.schema_arrow


def _rows_by_value(batch) -> list[dict]:
    """The rows of `batch` as dicts, a column at a time, for a batch that Arrow cannot hand out
    whole: a timestamp or date outside Python's years 1 to 9999 (Arrow's reach millions of
    years) raised OverflowError for the whole batch, a crash (exit 1). Such a value is read as
    its ISO 8601 text with a sign and the year in full (``+33658-09-27T01:46:40``): the record
    is kept, the value carried through as text, and in the time field it is a time that cannot
    be read (times.parse_time says it is out of the range of times)."""
    names = batch.schema.names
    cols = []
    for col in batch.columns:
        try:
            cols.append(col.to_pylist())
        except (OverflowError, ValueError):
            cols.append([_py_value(x) for x in col])
    return [dict(zip(names, vals)) for vals in zip(*cols)]


def _py_value(scalar):
    """One Arrow value as Python, with a time Python cannot hold as its text (_far_time)."""
    import pyarrow as pa

    try:
        return scalar.as_py()
    except (OverflowError, ValueError):
        t = scalar.type
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            return _far_time(scalar)
        if pa.types.is_struct(t):
            return {t.field(i).name: _py_value(scalar[i]) for i in range(t.num_fields)}
        if pa.types.is_map(t):
            return [(_py_value(k), _py_value(v)) for k, v in zip(scalar.values.field(0), scalar.values.field(1))]
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return [_py_value(x) for x in scalar.values]
        raise


def _far_time(scalar) -> str:
    """A timestamp or date beyond Python's datetime as ISO 8601 text, its year signed and in
    full (proleptic Gregorian, UTC for a timestamp with a time zone: "Z")."""
    import pyarrow as pa

    t = scalar.type
    if pa.types.is_date(t):
        days = (
            scalar.cast(pa.int32()).as_py() if pa.types.is_date32(t) else scalar.cast(pa.int64()).as_py() // 86_400_000
        )
        return _civil(days)
    per_s = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
    v = scalar.cast(pa.int64()).as_py()
    secs, frac = divmod(v, per_s)
    days, sod = divmod(secs, 86400)
    text = f"{_civil(days)}T{sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}"
    if frac:
        text += "." + f"{frac:0{len(str(per_s)) - 1}d}".rstrip("0")
    return text + ("Z" if t.tz is not None else "")


def _civil(days: int) -> str:
    """Days since 1970-01-01 as a signed ISO 8601 date (Howard Hinnant's civil_from_days)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y += m <= 2
    return f"{'-' if y < 0 else '+'}{abs(y):04d}-{m:02d}-{d:02d}"


class RecordsSource(Source):
    """In-memory records (a list of dicts), for the Python API and tests."""

    format = "records"

    def __init__(self, records: Iterable[Mapping], name: str = "<records>") -> None:
        self._records = list(records)
        self.name = name

    def records(self, wanted: np.ndarray | None = None) -> Iterator[tuple[int, Any]]:
        for i, rec in enumerate(self._records):
            r = i + 1
            if wanted is not None and (r >= len(wanted) or not wanted[r]):
                continue
            if not isinstance(rec, Mapping):
                yield r, RecordError(self.name, r, f"expected a mapping, got {type(rec).__name__}")
                continue
            bad = _unwritable_key(rec)
            if bad is not None:  # (it failed at the outputs, after the run: "keys must be str, ...")
                where, key = bad
                yield (
                    r,
                    RecordError(
                        self.name,
                        r,
                        f"field name {key!r} is a {type(key).__name__}: JSON names "
                        "are strings (numbers, booleans and null are written as such)",
                        field=where,
                    ),
                )
            else:
                yield r, dict(rec)


def _unwritable_key(obj, where: str = "") -> tuple[str | None, Any] | None:
    """The first dict key, at any depth of `obj`, that JSON cannot name (not a str, number,
    bool or None: a tuple, say), as (the field it is in, None at the top; the key); None when
    there is none."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not (k is None or isinstance(k, (str, int, float))):
                return (where or None), k
            if isinstance(v, (Mapping, list, tuple)):
                found = _unwritable_key(v, f"{where}.{k}" if where else str(k))
                if found is not None:
                    return found
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            if isinstance(v, (Mapping, list, tuple)):
                found = _unwritable_key(v, f"{where}[{i}]")
                if found is not None:
                    return found
    return None


class _StdinSource(JsonlSource):
    """Stdin JSONL, spooled to a temporary file so it can be read more than once."""

    def __init__(self, stream: IO[bytes] | None = None, block_bytes: int = BLOCK_BYTES) -> None:
        tmp = _spool(stream or sys.stdin.buffer, ".jsonl", "-")
        super().__init__(tmp, display="-", block_bytes=block_bytes)
        self.spool = tmp


def _spool(stream: IO[bytes], suffix: str, name: str) -> str:
    """`stream` copied to a temporary file (named with `suffix`, which says its format)."""
    fd, tmp = tempfile.mkstemp(prefix="neardup-spool-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
    except BaseException as exc:  # (Ctrl-C or SIGTERM while stdin is read: the file was left behind)
        os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputFileError(f"{name}: cannot copy it to a temporary file: {exc.strerror or exc}") from exc
        raise
    return tmp


def _spooled(path: str, block_bytes: int = BLOCK_BYTES) -> Source:
    """An input that is not a regular file (a pipe: ``<(zcat day.gz)``, a FIFO, /dev/stdin)
    can be read only once, and the run reads its inputs again (the candidates' texts, the
    kept records): copied to a temporary file first, as "-" is. Read once, it had given an
    empty kept.jsonl beside a report counting the records kept, or failed at verification."""
    try:
        with open(path, "rb") as f:
            tmp = _spool(f, "".join(Path(path).suffixes[-2:]) or ".jsonl", path)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    src = _source_for(tmp, format_of(path), block_bytes)
    src.name = path
    src.spool = tmp
    return src


def _source_for(path: str, fmt: str, block_bytes: int = BLOCK_BYTES) -> Source:
    """The reader of a file of format `fmt` (:func:`format_of`)."""
    if fmt == "parquet":
        return ParquetSource(path)
    if fmt == "csv":
        return CsvSource(path)
    return JsonlSource(path, block_bytes=block_bytes)


def read_buffer_bytes(sources: list[Source]) -> int:
    """What reading any one of `sources` holds besides the record in hand
    (:meth:`Source.read_buffer_bytes`; a run reads one input at a time)."""
    return max((s.read_buffer_bytes() for s in sources), default=0)


def open_sources(inputs: Any, block_bytes: int = BLOCK_BYTES) -> list[Source]:
    """Turn what the user passed (paths, ``"-"``, a list of dicts) into sources. A path may
    be a str, bytes (a file name that is not UTF-8, as os.listdir(b".") gives it) or an
    os.PathLike, as the standard library takes them; bytes are decoded with os.fsdecode.
    `block_bytes`: JSONL is read this many (decompressed) bytes at a time."""
    if isinstance(inputs, (str, bytes, os.PathLike)):  # (bytes iterated were taken for numbers)
        inputs = [inputs]
    if isinstance(inputs, Mapping):  # (iterated, its keys were taken for file names)
        raise InputTypeError("inputs: one record (a dict) was given: give a list of records")
    try:
        inputs = list(inputs)
    except TypeError:
        raise InputTypeError(
            f"inputs: expected a path, a list of paths or a list of records, got {type(inputs).__name__}"
        ) from None
    if inputs and any(isinstance(x, Mapping) for x in inputs):
        # records; one that is not a mapping is that record's error ("expected a mapping")
        return [RecordsSource(inputs)]
    sources: list[Source] = []
    for i, item in enumerate(inputs):
        if isinstance(item, Source):
            sources.append(item)
            continue
        if not isinstance(item, (str, bytes, os.PathLike)):
            raise InputTypeError(f"inputs[{i}]: expected a path, '-' or a record (a dict), got {type(item).__name__}")
        try:
            path = os.fsdecode(item)  # (an os.PathLike may give bytes too)
        except TypeError as exc:  # an os.PathLike whose __fspath__ gives neither
            raise InputTypeError(f"inputs[{i}]: {exc}") from None
        if path == "-":
            sources.append(_StdinSource(block_bytes=block_bytes))
            continue
        p = Path(path)
        if not p.exists():
            raise InputFileError(f"{path}: no such file")
        if p.is_dir():
            raise InputFileError(f"{path}: is a directory, not a file")
        if not os.access(path, os.R_OK):
            raise InputFileError(f"{path}: permission denied")
        sources.append(_source_for(path, format_of(path), block_bytes) if p.is_file() else _spooled(path, block_bytes))
    return sources
