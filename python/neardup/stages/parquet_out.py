"""Writing records of varying shape to one Parquet file, a block at a time.

Parquet has one schema per file, but input records need not agree: a field may first appear
after a million records, be missing or null in some, or hold an integer in a JSONL file and a
string in a CSV file. Inferring the schema from the first block (what ``pyarrow`` does by
default) then fails on a later block, or silently drops the fields the first block did not have.

The rule here, for any input: every field of any record is a column (in order of first
appearance; missing values are null); a field's type is the common type of its values where
Arrow has one (``int64`` and ``double`` give ``double``, null gives way to anything), and a
string otherwise: strings stay as they are, a list of values that disagree is a list of their
texts ([1, "x"] -> ["1", "x"]), other lists and objects become their JSON text, and a
column already written with another type is cast to text by Arrow (a double 3.0 reads "3").
A bool among numbers is a clash (pyarrow alone would make [1.5, True] doubles), and so is an
empty object where no object of the block has a field (Parquet has no struct of no fields).

Blocks are written as they come. While the schema stays the same there is one file and no
copy; when a block widens it, the file so far is closed as a part and a new part starts, and
at the end the parts are read back block by block and written once more under the final
schema. A schema only widens (fields added, types moved towards string), so there are at most
about two parts per field.

Both engines write kept.parquet with :func:`write_kept`, so its columns, their order, their
types and the text of a clashing value are the same for the same input: the types are inferred
a block of ``BLOCK`` records at a time, and a value that clashes within its block is written
as its JSON text (3.0 -> "3.0") while one written before the column became a string is cast by
Arrow (3.0 -> "3"), so the blocks must be the same records in both engines — one writer over
the kept records in input order, not a writer per Spark partition.
"""

from __future__ import annotations

import json
import os
from datetime import date, time

import pyarrow as pa
import pyarrow.parquet as pq

from neardup.io.writers import json_default
from neardup.stages.options import BatchSteps

__all__ = [
    "BLOCK",
    "ParquetRecords",
    "block_bytes",
    "warm_up",
    "empty_kept_schema",
    "table_of",
    "write_kept",
    "written_type",
]

#: Records per block handed to :class:`ParquetRecords` by :func:`write_kept` (by default).
BLOCK = BatchSteps().parquet_block


def block_bytes(mean_record_bytes: float, block: int = BLOCK) -> int:
    """An estimate of the memory of writing one block of `block` kept records to Parquet:
    the records as Python dicts, their Arrow table and its encoded row group. Measured
    (peak over the baseline, after :func:`warm_up`) on synthetic JSONL records of 8 fields:
    40 MiB a block at 311 bytes a record, 78 MiB at 1,769, i.e. about 4 KiB a record plus 3.3
    times its bytes; rounded up. A block cannot be made smaller under a limit: the column
    types are inferred a block at a time, the same blocks in both engines (module docstring)."""
    return int(block * (4096 + 3.5 * max(0.0, mean_record_bytes)))


def warm_up() -> None:
    """Do once now what pyarrow does on its first conversion from Python and first Parquet
    write: it initialises its function registry and pages in much of libarrow, about 50 MiB
    resident (32 anonymous, 19 of the library) that stays. A run under --memory-limit calls
    this before it measures its baseline, so that the cost is counted from the start (each
    stage's share is sized from what is resident) instead of landing, uncounted, in the write
    stage: `--format parquet --memory-limit 150M` on 200k short articles peaked at 198 MiB."""
    table = pa.table({"x": pa.array(["x"]), "n": pa.array([1])})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)


def _json_text(v) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (date, time)):  # its ISO 8601 text, as in kept.jsonl (not '"2026-01-01 00:00:00"', quoted)
        return v.isoformat()
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=json_default)


def _writable(t: pa.DataType) -> bool:
    """Parquet cannot store a struct with no fields (the type of ``{}``)."""
    if pa.types.is_struct(t):
        return t.num_fields > 0 and all(_writable(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _writable(t.value_type)
    return True


def _bool_as_number(values: list, t: pa.DataType) -> bool:
    """Whether a bool sits where `t` has a number: pyarrow infers [1.5, True] as doubles
    (True -> 1.0) but [True, 1.5] as a clash, and two blocks of them as a clash too."""
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return any(isinstance(v, bool) for v in values)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _bool_as_number([x for v in values if isinstance(v, list) for x in v], t.value_type)
    if pa.types.is_struct(t):
        return any(_bool_as_number([v.get(f.name) for v in values if isinstance(v, dict)], f.type) for f in t)
    return False


def _column(values: list) -> pa.Array:
    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed types: their JSON text
        arr = None
    if arr is None or not _writable(arr.type) or _bool_as_number(values, arr.type):
        if all(v is None or isinstance(v, list) for v in values):  # lists stay lists, of text
            return pa.array([None if v is None else [_json_text(x) for x in v] for v in values], pa.list_(pa.string()))
        return pa.array([_json_text(v) for v in values], pa.string())
    return arr


def table_of(rows: list[dict]) -> pa.Table:
    """A table of `rows`: a column per field of any row, nulls where a row lacks it."""
    names: dict[str, None] = {}
    for r in rows:
        for k in r:
            names.setdefault(k, None)
    return pa.table({k: _column([r.get(k) for r in rows]) for k in names})


def _merge_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if a == b:
        return a
    if pa.types.is_list(a) and pa.types.is_list(b):  # element by element: [1] and ["x"] -> [string]
        return pa.list_(_merge_type(a.value_type, b.value_type))
    try:
        return (
            pa.unify_schemas([pa.schema([("v", a)]), pa.schema([("v", b)])], promote_options="permissive")
            .field("v")
            .type
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError):
        return pa.string()


def _widen(schema: pa.Schema, other: pa.Schema) -> pa.Schema:
    types = {f.name: f.type for f in schema}
    for f in other:
        types[f.name] = _merge_type(types[f.name], f.type) if f.name in types else f.type
    return pa.schema([(n, t) for n, t in types.items()])


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    cols = []
    for f in schema:
        if f.name not in table.column_names:
            cols.append(pa.nulls(len(table), f.type))
            continue
        col = table.column(f.name)
        if col.type != f.type:
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                if f.type == pa.string():  # lists and objects: their JSON text
                    col = pa.array([_json_text(v) for v in col.to_pylist()], f.type)
                elif f.type == pa.list_(pa.string()):  # lists of values: each value's text
                    col = _column(
                        [None if v is None else [x if x is None else _json_text(x) for x in v] for v in col.to_pylist()]
                    ).cast(f.type)
                else:  # a widening cast Arrow calls unsafe: an int64 past 2**53 to double, rounded
                    col = col.cast(f.type, safe=False)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


class ParquetRecords:
    """``write(rows)`` a block at a time, then ``close()``; the file is `path` (the caller makes
    it atomic). Parts, when the schema widens, are `path`.part<N>, removed by ``close``."""

    def __init__(self, path: str, fix=None, empty=None) -> None:
        self.path = path
        self.fix = fix  # applied to each block's table before its schema is compared (write_kept)
        self.empty = empty  # the file's schema when no record comes (empty_kept_schema), or a
        # function that makes it (asked only then)
        self.parts: list[tuple[str, pa.Schema]] = []
        self.schema: pa.Schema | None = None
        self._writer: pq.ParquetWriter | None = None

    def _start(self, schema: pa.Schema) -> None:
        if self._writer is not None:  # the file so far becomes a part
            self._writer.close()
            part = f"{self.path}.part{len(self.parts)}"
            os.replace(self.path, part)
            self.parts.append((part, self.schema))
        self.schema = schema
        self._writer = pq.ParquetWriter(self.path, schema)

    def write(self, rows: list[dict]) -> None:
        if not rows:
            return
        table = table_of(rows)
        if self.fix is not None:
            table = self.fix(table)
        if self.schema is None:
            self._start(table.schema)
        elif table.schema != self.schema:
            wider = _widen(self.schema, table.schema)
            if wider != self.schema:
                self._start(wider)
        assert self._writer is not None  # (made by _start with the first schema)
        self._writer.write_table(_conform(table, self.schema))

    def abort(self) -> None:
        """After a failure: close what is open and remove the parts (the caller removes the file)."""
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:  # pragma: no cover
                pass
        for part, _ in self.parts:
            try:
                os.unlink(part)
            except OSError:  # pragma: no cover
                pass

    def close(self) -> None:
        """Finish the file: with parts, every part is read back and written under the final schema."""
        if self._writer is None:  # no records: the columns a run with records would have had
            schema = self.empty() if callable(self.empty) else self.empty
            if schema is None:
                schema = pa.schema([("alternates", pa.list_(pa.string()))])
            pq.write_table(schema.empty_table(), self.path)
            return
        self._writer.close()
        if not self.parts:
            return
        last = f"{self.path}.part{len(self.parts)}"
        os.replace(self.path, last)
        self.parts.append((last, self.schema))
        try:
            with pq.ParquetWriter(self.path, self.schema) as out:
                for part, _ in self.parts:
                    for batch in pq.ParquetFile(part).iter_batches(batch_size=8192):
                        out.write_table(_conform(pa.Table.from_batches([batch]), self.schema))
        finally:
            for part, _ in self.parts:
                try:
                    os.unlink(part)
                except OSError:  # pragma: no cover
                    pass


def _typed_alternates(id_field: str | None):
    """A block's ``alternates`` column typed after its id column when no row of the block has
    any (Arrow types a column of empty lists list<null>): list<int64> for integer ids, else
    list<string>, so that a run without duplicates (a quiet day) writes the same schema as the
    others."""

    def fix(table: pa.Table) -> pa.Table:
        if "alternates" not in table.column_names:
            return table
        i = table.column_names.index("alternates")
        t = table.schema.field(i).type
        if not (pa.types.is_list(t) and pa.types.is_null(t.value_type)):
            return table
        ids = table.schema.field(id_field).type if id_field in table.column_names else None
        elem = pa.int64() if ids is not None and pa.types.is_integer(ids) else pa.string()
        return table.set_column(i, "alternates", table.column(i).cast(pa.list_(elem)))

    return fix


def write_kept(path: str, records, id_field: str | None = None, empty=None, block: int = BLOCK) -> None:
    """The kept records as one Parquet file at `path`, atomically (a temporary file renamed
    over it, fsynced). `records` yields ``(record, alternates)`` in input order: each record
    (a dict, changed in place) gets ``"alternates"``, the ids as the input gave them (a list
    of int64 when they are integers, as the ``id`` column; of strings when any is not; a field
    of that name keeps its place) and goes to :class:`ParquetRecords` in blocks of `block` records (``BatchSteps.parquet_block``). The local and the
    Spark engine both write kept.parquet here. `id_field`: the records' id field, which types
    the alternates of a block that has none (:func:`_typed_alternates`). `empty`: the file's
    schema when there is no kept record at all (:func:`empty_kept_schema`), or a function
    that makes it, called only then."""
    from neardup.io.writers import atomic_path

    with atomic_path(path) as tmp:
        out = ParquetRecords(tmp, fix=_typed_alternates(id_field), empty=empty)
        try:
            rows: list[dict] = []
            for obj, alts in records:
                obj["alternates"] = list(alts)  # the ids as given: integers stay integers
                rows.append(obj)
                if len(rows) >= block:
                    out.write(rows)
                    rows.clear()
            out.write(rows)
            out.close()
        except BaseException:
            out.abort()
            raise
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())


def written_type(t: pa.DataType) -> pa.DataType:
    """The type of the kept.parquet column that a column of type `t` of an input (a Parquet
    file's, a DataFrame's) becomes: its values are read as Python values (to_pylist) and typed
    again by :func:`table_of`, so integers are int64, floats double, times microseconds,
    dictionaries their values, maps lists of their entries' JSON texts. A decimal keeps its
    type (a run with records infers precision and scale from its values)."""
    if pa.types.is_dictionary(t):
        return written_type(t.value_type)
    if pa.types.is_integer(t):
        return pa.int64()
    if pa.types.is_floating(t):
        return pa.float64()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return pa.string()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_date(t):
        return pa.date32()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_time(t):
        return pa.time64("us")
    if pa.types.is_duration(t):
        return pa.duration("us")
    if pa.types.is_map(t):
        return pa.list_(pa.string())
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return pa.list_(written_type(t.value_type))
    if pa.types.is_struct(t):
        st = pa.struct([pa.field(f.name, written_type(f.type)) for f in t])
        return st if _writable(st) else pa.string()
    return t


def empty_kept_schema(columns, fields) -> pa.Schema:
    """kept.parquet's schema for a run that keeps no record (an empty input, or every record
    bad and skipped), so that a reader of the day's files finds the columns a day with
    records has: `columns`, the inputs' own (name, type) pairs in input order (a Parquet
    file's, a CSV header's as strings; :func:`written_type` applied by the caller), the
    types of a name given twice merged as blocks' are; then the id, text and title fields
    as strings where no input typed them (a JSONL input has no schema: its ids may be
    integers or strings, and string is the one a reader can take either as); and
    ``alternates`` (in place if an input has a field of that name) typed after the id
    column, as in a run with records (:func:`_typed_alternates`)."""
    types: dict[str, pa.DataType] = {}
    for name, t in columns:
        types[name] = _merge_type(types[name], t) if name in types else t
    for name in (fields.id, fields.text, fields.title):
        if name and name not in types:
            types[name] = pa.string()
    ids = types.get(fields.id)
    elem = pa.int64() if ids is not None and pa.types.is_integer(ids) else pa.string()
    types["alternates"] = pa.list_(elem)
    return pa.schema([(n, t) for n, t in types.items()])
