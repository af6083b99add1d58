"""The kept records (keepers and documents in no cluster), streamed from the input to
kept.jsonl or kept.parquet, each with its ``alternates``.

The alternates are looked up from the clusters' order (:class:`Alternates`) a block of records
at a time: no dictionary of a million keepers' id lists is built (at 10M articles that was
about 300 MB of Python objects, more than any other stage of a run under ``--memory-limit``).
"""

from __future__ import annotations

import json
import os
from types import ModuleType

import numpy as np

from neardup.io.readers import JsonlSource
from neardup.io.writers import (
    atomic_open,
    dumps,
    ensure_output_dir,
    json_default,
    write_jsonl,
)

_orjson: ModuleType | None
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

__all__ = ["Alternates", "write_outputs"]

_ALT = b'"alternates"'


class Alternates:
    """Each keeper's alternates: the documents after it in the keeper-rule order of its
    cluster (``ordered[starts[c] + 1 : ends[c]]``)."""

    def __init__(self, docs, ordered: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self.docs = docs
        self.ordered = ordered
        keepers = ordered[starts] if len(starts) else np.zeros(0, np.int64)
        by_doc = np.argsort(keepers, kind="stable")
        self.keepers = keepers[by_doc]  # sorted document indices
        self.starts, self.ends = starts[by_doc], ends[by_doc]

    def in_range(self, lo: int, hi: int) -> dict[int, list]:
        """{keeper: its alternates' ids} for the keepers among documents lo..hi-1."""
        a, b = np.searchsorted(self.keepers, [lo, hi])
        if a == b:
            return {}
        s, e = self.starts[a:b], self.ends[a:b]
        ids = self.docs.ids_of(np.concatenate([self.ordered[x + 1 : y] for x, y in zip(s.tolist(), e.tolist())]))
        out, at = {}, 0
        for k, x, y in zip(self.keepers[a:b].tolist(), s.tolist(), e.tolist()):
            out[k] = ids[at : at + y - x - 1]
            at += y - x - 1
        return out


def _source_docs(docs, s_i: int) -> tuple[int, np.ndarray]:
    """(first document of input s_i, the record numbers of its documents): documents are
    numbered in reading order, so each input's are one ascending range."""
    src = docs.src_array()
    lo, hi = np.searchsorted(src, [s_i, s_i + 1])
    return int(lo), docs.recno_array()[lo:hi]


def _wanted_masks(docs, which: np.ndarray, n_sources: int) -> list[np.ndarray | None]:
    src = docs.src_array()[which]
    rec = docs.recno_array()[which]
    masks: list[np.ndarray | None] = []
    for s in range(n_sources):
        r = rec[src == s]
        if len(r) == 0:
            masks.append(None)
            continue
        m = np.zeros(int(r.max()) + 1, dtype=bool)
        m[r] = True
        masks.append(m)
    return masks


def write_outputs(outdir, sources, docs, kept_mask, alternates: Alternates, rows_out, opts, progress) -> list[str]:
    ensure_output_dir(outdir)
    write_jsonl(os.path.join(outdir, "clusters.jsonl"), rows_out[0])
    write_jsonl(os.path.join(outdir, "pairs.jsonl"), rows_out[1])
    kept_name = "kept.parquet" if opts.output_format == "parquet" else "kept.jsonl"
    path = os.path.join(outdir, kept_name)
    bar = progress(opts.progress, "write kept records", total=int(kept_mask.sum()))
    try:
        if opts.output_format == "parquet":
            # (with no kept record the file still has the inputs' columns: empty_kept_schema)
            empty = None if kept_mask.any() else _empty_schema(sources, opts.fields)
            _write_kept_parquet(
                path, sources, docs, kept_mask, alternates, bar, opts.fields.id, empty, opts.steps.parquet_block
            )
        else:
            with atomic_open(path, "wb") as f:
                if all(isinstance(s, JsonlSource) for s in sources):
                    _write_kept_jsonl_blocks(f, sources, docs, kept_mask, alternates, bar)
                else:
                    texts = text_fields(opts.fields)
                    for obj, alts in _kept_records(sources, docs, kept_mask, alternates, bar):
                        if isinstance(obj, bytes):
                            f.write(_with_alternates(obj, dumps(alts).encode("utf-8")) + b"\n")
                            continue
                        as_text(obj, texts)
                        obj["alternates"] = alts
                        f.write(kept_line(obj) + b"\n")
    finally:
        if bar is not None:
            bar.close()
    return ["clusters.jsonl", "pairs.jsonl", kept_name]


def text_fields(fields) -> tuple[str, ...]:
    """The fields neardup reads as text: the id, the text, the title and the source."""
    return tuple(f for f in (fields.id, fields.text, fields.title, fields.source) if f)


def as_text(rec: dict, names: tuple[str, ...]) -> None:
    """In kept.jsonl, a text field given as bytes (a Parquet binary column) is written as the
    UTF-8 text the run read (the record check refused it otherwise), so that its id is the one
    clusters.jsonl and the alternates name; other binary values are base64 (writers.dumps)."""
    for k in names:
        v = rec.get(k)
        if isinstance(v, (bytes, bytearray)):
            rec[k] = bytes(v).decode("utf-8")


def kept_line(obj: dict) -> bytes:
    """A kept record (a dict: a Parquet row, a CSV row, a Python record) as its kept.jsonl line:
    ``writers.dumps``, with every float NaN or infinity, at any depth, as null (JSON has no
    such numbers: null is its missing value, as pandas' ``to_json`` writes NaN). A typed NaN is
    a value, not a bad record (a JSON line's ``NaN`` literal is one: Limits.strict_json), and
    kept.parquet keeps it as NaN. orjson writes a float's so; the json module, the fallback
    for what orjson refuses (an int past 64 bits), wrote ``NaN``, not JSON, and a NumPy float
    went to ``str`` (``"nan"``, ``"1.5"``): now a number, or null."""
    if _orjson is not None:
        try:
            return _orjson.dumps(obj, default=_json_default)
        except TypeError:
            pass  # e.g. an int over 64 bits: the standard library copes
    return json.dumps(_nulled(obj), ensure_ascii=False, separators=(",", ":"), default=_json_default).encode("utf-8")


def _json_default(v):
    """writers.json_default, with a NumPy float (orjson writes float itself, not its
    subclasses) a number, or null for NaN and infinities."""
    if isinstance(v, np.floating):
        f = float(v)
        return f if f - f == 0.0 else None
    return json_default(v)


def _nulled(v):
    """`v` with every float NaN or infinity in it (dicts, lists, tuples) as None, for the
    json module (which writes them as NaN and Infinity)."""
    if isinstance(v, float):
        return v if v - v == 0.0 else None
    if isinstance(v, dict):
        return {k: _nulled(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_nulled(x) for x in v]
    return v


#: Records whose alternates are looked up at once (non-JSONL inputs).
LOOKUP_BLOCK = 65536


def _kept_records(sources, docs, kept_mask, alternates: Alternates, bar):
    """(record dict or raw JSON line, alternates) for each kept record, in input order."""
    masks = _wanted_masks(docs, np.flatnonzero(kept_mask), len(sources))
    for s_i, s in enumerate(sources):
        mask = masks[s_i]
        if mask is None:
            continue
        first, recs = _source_docs(docs, s_i)
        it = s.raw_lines(mask) if isinstance(s, JsonlSource) else s.records(mask)
        alt: dict[int, list] = {}
        upto = -1  # alternates are looked up for records up to this number
        for recno, obj in it:
            if recno > upto:
                at = int(np.searchsorted(recs, recno))
                stop = min(len(recs), at + LOOKUP_BLOCK)
                alt = {int(recs[d - first]): a for d, a in alternates.in_range(first + at, first + stop).items()}
                upto = int(recs[stop - 1])
            if bar is not None:
                bar.update(1)
            yield obj, alt.get(recno, [])


def _with_alternates(line: bytes, alts_json: bytes) -> bytes:
    """The JSON object `line` with an "alternates" field: the original bytes are kept and the
    field added before the closing brace; a line that already has the field is re-encoded."""
    line = line.rstrip()
    if line.endswith(b"}") and _ALT not in line:
        return line[:-1] + b',"alternates":' + alts_json + b"}"
    obj = json.loads(line)
    obj["alternates"] = json.loads(alts_json)
    return dumps(obj).encode("utf-8")


def _write_kept_jsonl_blocks(f, sources, docs, kept_mask, alternates: Alternates, bar) -> None:
    """JSONL to JSONL, a block of lines at a time: the kept lines are copied byte for byte."""
    masks = _wanted_masks(docs, np.flatnonzero(kept_mask), len(sources))
    empty = b"[]"
    for s_i, s in enumerate(sources):
        m = masks[s_i]
        if m is None:
            continue
        first, recs = _source_docs(docs, s_i)
        for start, lines in s.blocks():
            sel = m[start : start + len(lines)]
            idx = np.flatnonzero(sel).tolist()
            if not idx:
                continue
            lo, hi = np.searchsorted(recs, [start, start + len(lines)])
            alt = {
                int(recs[d - first]): dumps(a).encode("utf-8")
                for d, a in alternates.in_range(first + int(lo), first + int(hi)).items()
            }
            out = [_with_alternates(lines[i], alt.get(start + i, empty)) for i in idx]
            out.append(b"")
            f.write(b"\n".join(out))
            if bar is not None:
                bar.update(len(idx))


def _write_kept_parquet(
    path,
    sources,
    docs,
    kept_mask,
    alternates: Alternates,
    bar,
    id_field: str | None = None,
    empty=None,
    block: int | None = None,
) -> None:
    """The kept records as Parquet: a column per field of any record (types that disagree
    between records become strings), plus ``alternates`` — parquet_out.write_kept, which the
    Spark engine calls too. `empty`: the schema when no record is kept."""
    from neardup.stages.parquet_out import write_kept

    def records():
        for obj, alts in _kept_records(sources, docs, kept_mask, alternates, bar):
            yield (json.loads(obj) if isinstance(obj, bytes) else obj), alts

    write_kept(path, records(), id_field, empty, *([block] if block else []))


def _empty_schema(sources, fields):
    """kept.parquet's schema for a run that keeps no record (parquet_out.empty_kept_schema):
    the columns of the Parquet inputs (as a run with records types them) and the CSV headers'
    (strings); a JSONL input or a list of records has no columns to tell."""
    import pyarrow as pa

    from neardup.io.readers import CsvSource, ParquetSource
    from neardup.stages.parquet_out import empty_kept_schema, written_type

    columns = []
    for s in sources:
        if isinstance(s, ParquetSource):
            columns += [(f.name, written_type(f.type)) for f in s.schema()]
        elif isinstance(s, CsvSource):
            columns += [(h, pa.string()) for h in s.header()]
    return empty_kept_schema(columns, fields)
