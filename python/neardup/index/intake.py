"""Reading a batch for the index: records checked like ``neardup dedup`` checks them, and, for
an add from files, the reading overlapped with the signing.

A day's add reads 200,000 JSONL records (orjson, the record checks: single-threaded Python,
3-5 s) and signs them (the Rust kernels, GIL released: 3.4-3.7 CPU seconds, each text tokenised
once for both its exact key and its MinHash signature, ``Signer.keyed``; the two separate
passes took 4.9). As in the batch job
(``engines.local.run``), a reader thread parses and checks chunks while this thread computes each
chunk's exact keys, signatures and band keys, and checks its ids against the index, so the two
run on both cores instead of one after the other.

Both cores are then busy (8.8 CPU seconds in 5 s), while most of the add after it (the plan,
the inserts) runs on one: so the batch's texts go to the text log's writer (``on_chunk``) once
the reading and signing are done, and its write (0.5 CPU seconds) overlaps the plan instead of
competing with the signing.
"""

from __future__ import annotations

import json
import math
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from neardup import _core
from neardup.errors import RecordError
from neardup.io.readers import JsonlSource, irregular_line, lossy, open_sources
from neardup.io.records import TIME_MAX, TIME_MIN, Checked, Fields, Limits, check_record, decode_utf8, is_valid_unicode
from neardup.io.writers import json_default
from neardup.simhash import block_keys
from neardup.stages.handoff import put_until_stopped, received
from neardup.stages.signer import Signer, exact_keys

__all__ = ["Signed", "Skips", "without_taken_ids", "records", "checked_blocks", "read_checked", "read_and_sign", "sign"]


@dataclass
class Signed:
    """What the plan needs of each document before it looks anything up."""

    exact_keys: np.ndarray  # uint64 per document; 0 for a text without tokens
    has_tok: np.ndarray  # bool per document
    sigs: np.ndarray  # signatures of the documents with tokens, in order
    band_keys: np.ndarray  # (rows of sigs, bands) uint64


class Skips:
    """What an add with ``on_error="skip"`` leaves out: each bad record's error (file, line,
    field, reason, as ``neardup dedup --on-error skip`` lists them), and, for the ids the batch
    holds twice or the index already holds, the same with the id's file and line (``where``:
    the (file, line) of every record read, in order, kept while skipping)."""

    def __init__(self) -> None:
        self.errors: list[RecordError] = []
        self.where: list[tuple[str, int]] = []
        self.files: list[str] = []  # the inputs, in order

    def bad(self, exc: RecordError) -> None:
        self.errors.append(exc)

    def in_order(self) -> list[RecordError]:
        """The errors in input order (bad records are found by the reader thread, taken ids
        by the signing one)."""
        rank = {f: i for i, f in reversed(list(enumerate(self.files)))}
        return sorted(self.errors, key=lambda e: (rank.get(e.path, len(rank)), e.line))


def records(inputs: Any, fields: Fields, max_chars: int) -> Iterator[tuple[Checked, tuple]]:
    """(checked record, (extra fields as JSON or None, title length or None)) for every record
    of `inputs` (paths, records, or a stream); the first bad record raises its RecordError."""
    for docs, extras in checked_blocks(inputs, fields, max_chars):
        yield from zip(docs, extras)


def checked_blocks(
    inputs: Any, fields: Fields, max_chars: int, skips: Skips | None = None
) -> Iterator[tuple[list[Checked], list[tuple]]]:
    """What :func:`records` gives, as lists a block of input at a time (the lines of a 4 MiB
    block of JSONL; 8192 records of other formats). With `skips`, a bad record is listed there
    and left out instead of raised (a file that cannot be read at all still raises)."""
    limits = Limits(max_chars=max_chars)
    skip = {fields.id, fields.text, fields.title, fields.time, fields.source}
    sources = open_sources(inputs)
    try:
        for src in sources:
            if skips is not None:
                skips.files.append(src.name)
            if isinstance(src, JsonlSource):
                yield from _jsonl_blocks(src, fields, limits, skip, skips)
                continue
            docs: list[Checked] = []
            extras: list[tuple] = []
            for recno, rec in src.records():
                try:
                    if isinstance(rec, RecordError):
                        raise rec
                    doc = check_record(rec, fields, limits, src.name, recno)
                    ex = _extras(rec, fields, skip, doc, src.name, recno)
                except RecordError as exc:
                    _skip_or_raise(skips, exc)
                    continue
                _keep(docs, extras, doc, ex, skips, (src.name, recno))
                if len(docs) == 8192:
                    yield docs, extras
                    docs, extras = [], []
            if docs:
                yield docs, extras
    finally:
        for s in sources:
            s.close()


def _skip_or_raise(skips: Skips | None, exc: RecordError) -> None:
    """A bad record: raised (on_error "stop"), or listed and left out."""
    if skips is None:
        raise exc
    skips.bad(exc)


def _keep(docs: list, extras: list, doc: Checked, ex: tuple, skips: Skips | None, place: tuple[str, int]) -> None:
    docs.append(doc)
    extras.append(ex)
    if skips is not None:  # (where each kept record came from: a taken id is named by its place)
        skips.where.append(place)


def _extras(
    rec: dict, fields: Fields, skip: set, checked: Checked | None, path: str, recno: int
) -> tuple[str | None, int | None]:
    """(the record's other fields as JSON or None, the title's length or None). A time that
    could not be read (`checked.time_error`: the document's time counts as missing) is kept
    among the other fields, as it came, so that nothing of the record is lost. A field that
    holds a lone surrogate (JSON allows "\\ud800"; UTF-8, SQLite and every reader of the
    index do not) is the record's error, as in its text."""
    ex = {k: v for k, v in rec.items() if k not in skip}
    if checked is not None and checked.time_error is not None:
        ex[fields.time] = rec[fields.time]
    if checked is not None and checked.source is not None and not is_valid_unicode(checked.source):
        # (dedup only compares sources; the index stores them)
        raise RecordError(path, recno, "source is not valid Unicode (lone surrogate)", field=fields.source)
    title = rec.get(fields.title) if fields.title else None
    if isinstance(title, (bytes, bytearray)):  # (check_record has found it UTF-8)
        title = decode_utf8(title)
    try:
        return _extra_json(ex) if ex else None, len(title) if title else None
    except UnicodeEncodeError:
        bad = next((k for k, v in ex.items() if not _encodable(k) or not _encodable(v)), None)
        raise RecordError(path, recno, f"field {bad!r} is not valid Unicode (lone surrogate)", field=bad) from None


def _encodable(v) -> bool:
    """`v` (a field name or a JSON value) as UTF-8 JSON: no lone surrogate in it."""
    try:
        json.dumps(v, ensure_ascii=False, default=json_default).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_new = tuple.__new__  # makes a Checked without the Python-level __new__ of a NamedTuple
_NAN = math.nan


def _jsonl_blocks(
    src: JsonlSource, fields: Fields, limits: Limits, skip: set, skips: Skips | None = None
) -> Iterator[tuple[list[Checked], list[tuple]]]:
    """JSONL records parsed and checked a block of lines at a time, in one loop. A day's add
    reads 200,000 records on one core while the other signs them, and the reading was most of
    that core's time (a generator step per record in the reader and another here, a NamedTuple
    made in Python, every time field through parse_time). A record of the usual shape (a
    string id, not blank; an ASCII text, not blank nor over the limit; no title field; a
    numeric or missing time; a string or missing source) is checked here, with the outcome
    :func:`check_record` would give; every other record goes to check_record (which raises for
    the bad ones, with its messages), and the lines orjson does not make a dict of go the way
    ``JsonlSource.records`` takes them."""
    loads = orjson.loads
    name = src.name
    fid, ftext, ftime, fsrc = fields.id, fields.text, fields.time, fields.source
    plain = fields.title is None
    max_chars = limits.max_chars
    only_known = skip.issuperset  # no other fields: no extras to write
    for start, lines in src.blocks():
        docs: list[Checked] = []
        extras: list[tuple] = []
        for i, line in enumerate(lines):
            try:
                rec = loads(line)
            except ValueError:
                rec = None
            if type(rec) is not dict or lossy(rec):
                rec = irregular_line(name, start + i, line)
                if rec is None:
                    continue  # a blank line
                if isinstance(rec, RecordError):
                    _skip_or_raise(skips, rec)
                    continue
            get = rec.get
            rid = get(fid)
            text = get(ftext)
            v = get(ftime) if ftime is not None else None
            srcv = get(fsrc) if fsrc is not None else None
            tv = type(v)
            if v is None:
                t = _NAN
            elif tv is int and TIME_MIN <= v <= TIME_MAX:
                t = float(v)
            elif tv is float and TIME_MIN <= v <= TIME_MAX:  # (finite: NaN compares false)
                t = v
            else:
                t = None  # a string, or anything else: check_record parses or rejects it
            try:
                if (
                    t is not None
                    and plain
                    and type(rid) is str
                    and type(text) is str
                    and 0 < len(text) <= max_chars
                    and (srcv is None or type(srcv) is str and srcv.isascii())
                    and text.isascii()
                    and not text.isspace()
                    and rid
                    and rid.isascii()
                    and not rid.isspace()
                ):
                    doc = _new(Checked, (rid, rid, text, t, srcv, None))
                    ex = (None, None) if only_known(rec) else _extras(rec, fields, skip, None, name, start + i)
                else:
                    doc = check_record(rec, fields, limits, name, start + i)
                    ex = _extras(rec, fields, skip, doc, name, start + i)
            except RecordError as exc:
                _skip_or_raise(skips, exc)
                continue
            _keep(docs, extras, doc, ex, skips, (name, start + i))
        if docs:
            yield docs, extras


def without_taken_ids(
    docs: list[Checked],
    extras: list[tuple],
    keys: list[str],
    seen: set[str],
    present: set[str],
    skips: Skips,
    where: list[tuple[str, int]],
) -> tuple[list[Checked], list[tuple], list[str]]:
    """A chunk without the records whose id the index holds (`present`) or an earlier record
    of the batch took (`seen`, updated), each listed in `skips` with its file and line."""
    keep = []
    for j, k in enumerate(keys):
        if k in present:
            why = "id already in the index"
        elif k in seen:
            why = "id appears earlier in the batch"
        else:
            seen.add(k)
            keep.append(j)
            continue
        path, line = where[j]
        skips.bad(RecordError(path, line, f"{why}: {docs[j].id!r}", field="id"))
    if len(keep) == len(docs):
        return docs, extras, keys
    return [docs[j] for j in keep], [extras[j] for j in keep], [keys[j] for j in keep]


def _extra_json(ex: dict) -> str:
    """A record's other fields as JSON (documents.extra): orjson (several times faster than the
    json module; NaN becomes null), the json module for what orjson refuses (integers past 64
    bits)."""
    try:
        return orjson.dumps(ex, default=json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # (a lone surrogate too: the encode below raises UnicodeEncodeError for it)
        out = json.dumps(ex, ensure_ascii=False, default=json_default)
        out.encode("utf-8")
        return out


def read_checked(
    inputs: Any, fields: Fields, max_chars: int, skips: Skips | None = None
) -> tuple[list[Checked], list[tuple]]:
    docs: list[Checked] = []
    extras: list[tuple] = []
    for d, ex in checked_blocks(inputs, fields, max_chars, skips):
        docs += d
        extras += ex
    return docs, extras


def sign(texts: list[str], signer: Signer, bands: int, rows: int, threads: int | None) -> Signed:
    """Exact keys, signatures and band keys of `texts` (one chunk or a whole batch). SimHash:
    the signature is the (n, 1) fingerprint and the band keys are its `bands` blocks (the
    tables of ``neardup dedup --method simhash``: ``neardup.simhash.block_keys``)."""
    n = len(texts)
    simhash = signer.opts.settings.method == "simhash"
    width, dtype = (1, np.uint64) if simhash else (signer.opts.settings.num_perm, np.uint32)
    if n == 0:
        return Signed(
            np.zeros(0, np.uint64), np.zeros(0, bool), np.zeros((0, width), dtype), np.zeros((0, bands), np.uint64)
        )
    keyed = signer.keyed(texts)  # MinHash: one tokenisation of each text for its key and signature
    if keyed is not None:
        sigs, ek, ntok = keyed
    else:
        ek, ntok = exact_keys(texts, threads, signer.opts.settings.unit)
    has_tok = ntok > 0
    ek = np.where(has_tok, ek, np.uint64(0))
    tok = np.flatnonzero(has_tok)
    if not len(tok):
        return Signed(ek, has_tok, np.zeros((0, width), dtype), np.zeros((0, bands), np.uint64))
    if keyed is not None:
        sigs = sigs if len(tok) == n else sigs[tok]
    else:
        sigs = signer.batch(texts if len(tok) == n else [texts[i] for i in tok.tolist()])
    if simhash:
        sigs = np.asarray(sigs, np.uint64).reshape(-1, 1)
        bk = block_keys(sigs[:, 0], bands - 1)
    else:
        bk = _core.band_keys(np.ascontiguousarray(sigs), bands, rows, threads)
    return Signed(ek, has_tok, sigs, bk)


def _concat(parts: list[Signed], signer: Signer, bands: int) -> Signed:
    if not parts:
        return sign([], signer, bands, 1, None)
    return Signed(
        np.concatenate([p.exact_keys for p in parts]),
        np.concatenate([p.has_tok for p in parts]),
        np.concatenate([p.sigs for p in parts]),
        np.concatenate([p.band_keys for p in parts]),
    )


_END = object()


def read_and_sign(
    inputs: Any,
    fields: Fields,
    max_chars: int,
    signer: Signer,
    bands: int,
    rows: int,
    threads: int | None,
    present: Callable[[list[str]], list[str]],
    on_chunk: Callable[[list[Checked]], None] | None = None,
    skips: Skips | None = None,
    *,
    chunk: int,
) -> tuple[list[Checked], list[tuple], Signed, list[str], list[str]]:
    """Read and check `inputs` in a thread while this one signs each chunk and asks
    `present(keys)` which of its ids the index already holds; then hand the chunks, in order,
    to `on_chunk` (the text log's writer: see the module's note); `chunk`: documents read before
    they go to the signer (``Steps.sign_chunk``).

    Returns (documents, extras, signed, ids twice in the batch, ids already present); the
    caller raises for the last two (after the whole batch, so the message lists them all).
    With `skips`, bad records are left out and listed there, and so are a record whose id the
    index holds and one whose id came earlier in the batch (the first is kept), as
    ``neardup dedup --on-error skip`` does with a duplicate id: the last two lists are empty."""
    q: queue.Queue = queue.Queue(maxsize=4)
    stop = threading.Event()

    def put(item) -> bool:
        return put_until_stopped(q, item, stop)

    def reader() -> None:
        try:
            docs: list[Checked] = []
            extras: list[tuple] = []
            for d, ex in checked_blocks(inputs, fields, max_chars, skips):
                docs += d
                extras += ex
                if len(docs) >= chunk:
                    if not put((docs, extras)):
                        return
                    docs, extras = [], []
            if docs and not put((docs, extras)):
                return
            put(_END)
        except BaseException as exc:  # raised again by the consuming thread
            put(exc)

    thread = threading.Thread(target=reader, name="neardup-index-reader", daemon=True)
    thread.start()
    all_docs: list[Checked] = []
    all_extras: list[tuple] = []
    parts: list[Signed] = []
    chunks: list[list[Checked]] = []
    seen: set[str] = set()
    twice: list[str] = []
    already: list[str] = []
    try:
        read = 0  # records received so far (their places: skips.where)
        for docs, extras in received(q, _END):
            keys = [c.key for c in docs]
            if skips is not None:
                n = len(docs)
                docs, extras, keys = without_taken_ids(
                    docs, extras, keys, seen, set(present(keys)), skips, skips.where[read : read + n]
                )
                read += n
            else:
                for k in keys:
                    if k in seen:
                        twice.append(k)
                    else:
                        seen.add(k)
                already += present(keys)
            chunks.append(docs)
            parts.append(sign([c.text for c in docs], signer, bands, rows, threads))
            all_docs += docs
            all_extras += extras
    finally:
        stop.set()
        thread.join()
    if on_chunk is not None:
        for docs in chunks:
            on_chunk(docs)
    return all_docs, all_extras, _concat(parts, signer, bands), twice, already
