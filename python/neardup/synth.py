"""The guide's synthetic test corpus: originals of real English words and planted copies.

By default: 100,000 originals of 300 words each, drawn independently from the 30,000 most
frequent purely alphabetic English words of ``wordfreq`` with their real frequencies, and
20,000 copies of randomly chosen originals, in thirds:

* ``"spacing"``: the same words, only the spacing (double spaces, tabs, line breaks, leading
  and trailing whitespace) and the letter case differ, so lower-casing and folding runs of
  whitespace gives the original back exactly;
* ``"light"``: 1-8 words replaced by other words;
* ``"heavy"``: 30-60 words replaced.

Every record says which original it copies (``original_id``), how (``copy_kind``) and how
many word positions differ (``edits``), so the truth is known.

Generation is vectorised with NumPy and runs in fixed-size chunks of originals (each chunk
followed by the copies of its originals), so memory stays bounded whatever the corpus size, and
the output depends only on ``(originals, copies, words, seed)``.

Public API::

    generate(originals=100_000, copies=20_000, words=300, seed=0) -> Iterator[dict]
    write_corpus(path, originals=100_000, copies=20_000, words=300, seed=0) -> dict

See ``docs/synth.md``.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import queue
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup.errors import InvalidParameterError
from neardup.io.writers import atomic_path

__all__ = ["generate", "write_corpus", "vocabulary", "FIELDS", "COPY_KINDS"]

#: Record fields, in the order they are written.
FIELDS = ("id", "text", "published_at", "source", "original_id", "copy_kind", "edits")
#: Values of ``copy_kind`` for copies (originals have ``None``).
COPY_KINDS = ("spacing", "light", "heavy")

#: How many words the vocabulary keeps (the most frequent purely alphabetic English words).
VOCABULARY_SIZE = 30_000
#: Light copies change between these many words (inclusive), heavy copies between the second pair.
LIGHT_EDITS = (1, 8)
HEAVY_EDITS = (30, 60)
#: Number of sources the copies come from ("site-1" ... "site-300"); originals come from
#: "agency" with probability AGENCY_SHARE, otherwise from a site.
N_SITES = 300
AGENCY_SHARE = 0.3
#: Originals are published at a steady 200,000 a day (the guide's news app) from EPOCH on;
#: a copy is published between one minute and three days after its original.
EPOCH = np.datetime64("2026-01-01T00:00:00", "s")
SECONDS_PER_ORIGINAL = 86_400 / 200_000
COPY_DELAY_SECONDS = (60, 3 * 86_400)

# Fixed (never depends on the arguments) so that the output is a function of the arguments only.
_CHUNK = 4096
# Sampling table: word probabilities quantised to 1 / 2**22 (the rarest kept word still has
# about four cells), so one uint32 draw and one table look-up sample a word.
_TABLE_BITS = 22

_WORD_RE = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class _Vocab:
    words: tuple[str, ...]
    probabilities: np.ndarray  # float64, sums to 1
    table: np.ndarray  # uint16 (2**_TABLE_BITS,), cell -> word index
    spaced: np.ndarray  # object array of "word " strings
    lengths: np.ndarray  # int64 len(word) + 1
    plain: np.ndarray  # object arrays of "word", "Word", "WORD"
    capitalized: np.ndarray
    upper: np.ndarray


@functools.lru_cache(maxsize=1)
def _vocab() -> _Vocab:
    try:
        import wordfreq
    except ImportError as exc:  # pragma: no cover - wordfreq is a dependency
        raise ImportError("neardup.synth needs the 'wordfreq' package: pip install wordfreq") from exc
    freq = wordfreq.get_frequency_dict("en", wordlist="best")
    words: list[str] = []
    for w in wordfreq.top_n_list("en", 3 * VOCABULARY_SIZE, wordlist="best"):
        if _WORD_RE.fullmatch(w):
            words.append(w)
            if len(words) == VOCABULARY_SIZE:
                break
    p = np.array([freq[w] for w in words], dtype=np.float64)
    p /= p.sum()
    cdf = np.cumsum(p)
    cdf[-1] = 1.0
    m = 1 << _TABLE_BITS
    table = np.searchsorted(cdf, (np.arange(m, dtype=np.float64) + 0.5) / m, side="right")
    table = np.minimum(table, len(words) - 1).astype(np.uint16)
    spaced = np.array([w + " " for w in words], dtype=object)
    lengths = np.array([len(w) + 1 for w in words], dtype=np.int64)
    plain = np.array(words, dtype=object)
    capitalized = np.array([w.capitalize() for w in words], dtype=object)
    upper = np.array([w.upper() for w in words], dtype=object)
    return _Vocab(tuple(words), p, table, spaced, lengths, plain, capitalized, upper)


def vocabulary() -> tuple[tuple[str, ...], np.ndarray]:
    """The word list and the probabilities the generator samples them with (most frequent first)."""
    v = _vocab()
    return v.words, v.probabilities.copy()


#: The most words a document may have (neardup's default --max-chars, 5,000,000 characters,
#: holds about 700,000 of them).
MAX_WORDS = 1_000_000
#: Compression levels each format takes.
LEVELS = {"jsonl.gz": range(0, 10), "jsonl.zst": range(1, 23), "parquet": range(1, 23)}


def _check(originals: int, copies: int, words: int, seed: int) -> None:
    for name, value in (("originals", originals), ("copies", copies), ("words", words), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InvalidParameterError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise InvalidParameterError(f"{name} must be >= 0, got {value}")
    if words < 1:
        raise InvalidParameterError(f"words must be >= 1, got {words}")
    if words > MAX_WORDS:  # (10**9 words per document tried to allocate gigabytes at once)
        raise InvalidParameterError(
            f"words must be <= {MAX_WORDS:,} (a document of that many words is "
            f"about {MAX_WORDS * 8 // 10**6} MB), got {words:,}"
        )
    if copies > 0 and originals == 0:
        raise InvalidParameterError("copies need at least one original")


def _sample(rng: np.random.Generator, v: _Vocab, shape) -> np.ndarray:
    cells = rng.integers(0, 1 << _TABLE_BITS, size=shape, dtype=np.uint32)
    return v.table[cells]


def _join_rows(v: _Vocab, idx: np.ndarray) -> list[str]:
    """Rows of word indices -> texts (words joined by one space), with one big join."""
    if idx.shape[0] == 0:
        return []
    big = "".join(v.spaced[idx.ravel()].tolist())
    lens = v.lengths[idx].sum(axis=1)
    ends = np.cumsum(lens)
    starts = (ends - lens).tolist()
    return [big[s : e - 1] for s, e in zip(starts, ends.tolist())]


_SEPARATORS = ("  ", "   ", "\n", "\n\n", "\t", " \n", "\r\n")
_EDGES = ("", " ", "\n", "  ")


def _respace_rows(v: _Vocab, idx: np.ndarray, rng: np.random.Generator) -> list[str]:
    """Same words, other spacing and case: ``lower()`` + folding whitespace gives the original.

    Each row's first word is capitalised (so the copy always differs from its original), about
    12% of the others are capitalised and 3% upper-cased; about 8% of the gaps become a double
    or triple space, a tab or a line break, and a row may start or end with whitespace.
    """
    k, n = idx.shape
    if k == 0:
        return []
    case = rng.random((k, n))
    case[:, 0] = 0.0
    toks = np.where(case < 0.12, v.capitalized[idx], np.where(case < 0.15, v.upper[idx], v.plain[idx]))
    odd = rng.random((k, n)) < 0.08
    seps = np.full((k, n), " ", dtype=object)
    sep_pick = rng.integers(0, len(_SEPARATORS), size=(k, n))
    seps[odd] = np.array(_SEPARATORS, dtype=object)[sep_pick[odd]]
    edge = rng.integers(0, len(_EDGES), size=k)
    edges = np.array(_EDGES, dtype=object)
    trail = (edge + 1) % len(_EDGES)
    seps[:, -1] = edges[trail]  # trailing whitespace
    sep_len = np.where(odd, np.array([len(x) for x in _SEPARATORS])[sep_pick], 1)
    edge_len = np.array([len(x) for x in _EDGES])
    sep_len[:, -1] = edge_len[trail]
    grid = np.empty((k, 2 * n + 1), dtype=object)
    grid[:, 0] = edges[edge]  # leading whitespace
    grid[:, 1::2] = toks
    grid[:, 2::2] = seps
    lens = (v.lengths[idx] - 1).sum(axis=1) + sep_len.sum(axis=1) + edge_len[edge]
    big = "".join(grid.ravel().tolist())
    ends = np.cumsum(lens)
    return [big[a:b] for a, b in zip((ends - lens).tolist(), ends.tolist())]


def _copy_plan(originals: int, copies: int, seed: int):
    """Which original each copy copies (sorted) and its kind (exact thirds)."""
    rng = np.random.default_rng((seed, 2))
    orig = np.sort(rng.integers(0, originals, size=copies, dtype=np.int64)) if copies else np.zeros(0, np.int64)
    kinds = rng.permutation(np.arange(copies, dtype=np.int64) % 3).astype(np.int8)
    return orig, kinds


def _iso(seconds: np.ndarray) -> list[str]:
    t = EPOCH + seconds.astype("timedelta64[s]")
    return [s + "Z" for s in np.datetime_as_string(t, unit="s").tolist()]


def _chunks(originals: int, copies: int, words: int, seed: int) -> Iterator[dict[str, list]]:
    """Column chunks: dict of field -> list, in output order."""
    _check(originals, copies, words, seed)
    v = _vocab()
    total = originals + copies
    width = max(8, len(str(max(total - 1, 0))))
    plan_orig, plan_kind = _copy_plan(originals, copies, seed)
    lo_e = (min(LIGHT_EDITS[0], words), min(LIGHT_EDITS[1], words))
    hi_e = (min(HEAVY_EDITS[0], words), min(HEAVY_EDITS[1], words))
    seq = 0
    for c, first in enumerate(range(0, originals, _CHUNK)):
        n = min(_CHUNK, originals - first)
        rng = np.random.default_rng((seed, 0, c))
        idx = _sample(rng, v, (n, words))
        o_index = np.arange(first, first + n, dtype=np.int64)
        o_secs = np.floor(o_index * SECONDS_PER_ORIGINAL).astype(np.int64)
        o_site = rng.integers(1, N_SITES + 1, size=n)
        o_agency = rng.random(n) < AGENCY_SHARE
        o_sources = ["agency" if a else f"site-{s}" for a, s in zip(o_agency.tolist(), o_site.tolist())]
        o_ids = [f"doc{i:0{width}d}" for i in range(seq, seq + n)]
        seq += n

        a, b = np.searchsorted(plan_orig, [first, first + n])
        m = int(b - a)
        crng = np.random.default_rng((seed, 1, c))
        c_orig = plan_orig[a:b] - first  # row in this chunk
        c_kind = plan_kind[a:b]
        c_idx = idx[c_orig].copy()
        edits = np.zeros(m, dtype=np.int64)
        edited = np.nonzero(c_kind > 0)[0]
        if edited.size:
            lo = np.where(c_kind[edited] == 1, lo_e[0], hi_e[0])
            hi = np.where(c_kind[edited] == 1, lo_e[1], hi_e[1])
            e = crng.integers(lo, hi + 1)
            edits[edited] = e
            order = np.argsort(crng.random((edited.size, words)), axis=1)[:, : int(e.max())]
            take = np.arange(order.shape[1])[None, :] < e[:, None]
            rows = np.broadcast_to(edited[:, None], order.shape)[take]
            cols = order[take]
            old = c_idx[rows, cols]
            new = _sample(crng, v, old.shape)
            same = new == old
            while same.any():  # redraw until every replaced word really differs
                new[same] = _sample(crng, v, int(same.sum()))
                same = new == old
            c_idx[rows, cols] = new
        c_secs = o_secs[c_orig] + crng.integers(COPY_DELAY_SECONDS[0], COPY_DELAY_SECONDS[1] + 1, size=m)
        c_site = crng.integers(1, N_SITES + 1, size=m)
        # a copy comes from another site than its original
        clash = (~o_agency[c_orig]) & (c_site == o_site[c_orig])
        c_site = np.where(clash, c_site % N_SITES + 1, c_site)

        texts = _join_rows(v, np.concatenate([idx, c_idx[c_kind > 0]]))
        o_texts = texts[:n]
        e_texts = iter(texts[n:])
        s_texts = iter(_respace_rows(v, c_idx[c_kind == 0], crng))
        kinds_l = c_kind.tolist()
        c_texts = [next(s_texts) if kind == 0 else next(e_texts) for kind in kinds_l]
        c_ids = [f"doc{i:0{width}d}" for i in range(seq, seq + m)]
        seq += m
        yield {
            "id": o_ids + c_ids,
            "text": o_texts + c_texts,
            "published_at": _iso(np.concatenate([o_secs, c_secs])),
            "source": o_sources + [f"site-{s}" for s in c_site.tolist()],
            "original_id": [None] * n + [o_ids[r] for r in c_orig.tolist()],
            "copy_kind": [None] * n + [COPY_KINDS[k] for k in kinds_l],
            "edits": [0] * n + edits.tolist(),
        }


def generate(originals: int = 100_000, copies: int = 20_000, words: int = 300, seed: int = 0) -> Iterator[dict]:
    """Yield the corpus records (dicts with the fields in :data:`FIELDS`), deterministically.

    Each chunk of 4,096 originals is followed by the copies of those originals. Ids are
    ``doc00000000``, ``doc00000001``, ... in output order.
    """
    _check(originals, copies, words, seed)  # eagerly, not on the first next()
    return _records(originals, copies, words, seed)


def _records(originals: int, copies: int, words: int, seed: int) -> Iterator[dict]:
    for chunk in _chunks(originals, copies, words, seed):
        for row in zip(*(chunk[f] for f in FIELDS)):
            yield dict(zip(FIELDS, row))


# --------------------------------------------------------------------------------- writing

_FORMATS = (
    (".jsonl.gz", "jsonl.gz"),
    (".ndjson.gz", "jsonl.gz"),
    (".jsonl.zst", "jsonl.zst"),
    (".jsonl.zstd", "jsonl.zst"),
    (".ndjson.zst", "jsonl.zst"),
    (".jsonl", "jsonl"),
    (".ndjson", "jsonl"),
    (".parquet", "parquet"),
    (".pq", "parquet"),
)


def format_for(path: str | os.PathLike) -> str:
    """The output format chosen by ``path``'s extension: jsonl, jsonl.gz, jsonl.zst or parquet."""
    name = os.fspath(path).lower()
    for ext, fmt in _FORMATS:
        if name.endswith(ext):
            return fmt
    raise InvalidParameterError(
        f"cannot tell the output format of {os.fspath(path)!r}: use .jsonl, .jsonl.gz, .jsonl.zst or .parquet"
    )


def _json_str(s: str) -> str:
    # Vocabulary words are [a-z]+ and ids/sources/dates are plain ASCII, so only the whitespace of
    # spacing copies can need escaping; json.dumps handles any string correctly anyway.
    if "\n" in s or "\t" in s or "\r" in s or '"' in s or "\\" in s:
        return json.dumps(s)
    return '"' + s + '"'


def _jsonl_bytes(chunk: dict[str, list]) -> bytes:
    lines: list[str] = []
    app = lines.append
    for rid, text, pub, src, orig, kind, ed in zip(*(chunk[f] for f in FIELDS)):
        app(
            '{"id": "%s", "text": %s, "published_at": "%s", "source": "%s", "original_id": %s, '
            '"copy_kind": %s, "edits": %d}\n'
            % (
                rid,
                _json_str(text),
                pub,
                src,
                "null" if orig is None else '"' + orig + '"',
                "null" if kind is None else '"' + kind + '"',
                ed,
            )
        )
    return "".join(lines).encode("utf-8")


class _Writer:
    """Compresses and writes on a background thread (zlib, zstd, Arrow and file writes release
    the GIL), so generation and compression use both cores. At most two chunks wait in the queue."""

    def __init__(self, write) -> None:
        self._write = write
        self._q: queue.Queue = queue.Queue(maxsize=2)
        self._err: BaseException | None = None
        self._t = threading.Thread(target=self._run, name="neardup-synth-writer", daemon=True)
        self._t.start()

    def _run(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            if self._err is None:
                try:
                    self._write(item)
                except BaseException as exc:  # noqa: BLE001 - reported in put/close
                    self._err = exc

    def put(self, data: bytes) -> None:
        if self._err is not None:
            raise self._err
        self._q.put(data)

    def close(self) -> None:
        self._q.put(None)
        self._t.join()
        if self._err is not None:
            raise self._err


def _arrow_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("published_at", pa.string()),
            ("source", pa.string()),
            ("original_id", pa.string()),
            ("copy_kind", pa.string()),
            ("edits", pa.int32()),
        ]
    )


def write_corpus(
    path: str | os.PathLike,
    originals: int = 100_000,
    copies: int = 20_000,
    words: int = 300,
    seed: int = 0,
    *,
    level: int | None = None,
    progress=None,
) -> dict:
    """Write the corpus :func:`generate` yields to ``path``, atomically; return the counts.

    The format follows the extension: ``.jsonl`` (or ``.ndjson``), ``.jsonl.gz``, ``.jsonl.zst``
    or ``.parquet``. The file is written under a temporary name in the same folder and renamed
    into place only when complete, so a crash never leaves a half-written ``path``.

    ``level`` is the compression level (gzip default 1, zstd default 3; Parquet uses zstd, default
    3). ``progress``, if given, is called after each chunk with the number of records written
    so far (a CLI can drive a progress bar with it).

    Returns ``{"path", "format", "records", "originals", "copies", "spacing", "light", "heavy",
    "bytes", "seconds"}``.
    """
    _check(originals, copies, words, seed)
    fmt = format_for(path)
    if level is not None:
        ok = LEVELS.get(fmt)
        if ok is None:
            raise InvalidParameterError(f"level applies to .jsonl.gz, .jsonl.zst and .parquet, not {fmt}")
        if isinstance(level, bool) or not isinstance(level, int) or level not in ok:
            raise InvalidParameterError(f"level for {fmt} must be {ok.start}..{ok.stop - 1}, got {level!r}")
    path = os.fspath(path)
    counts = {"records": 0, "originals": 0, "copies": 0, "spacing": 0, "light": 0, "heavy": 0}
    t0 = time.perf_counter()

    def tally(chunk: dict[str, list]) -> None:
        k = chunk["copy_kind"]
        counts["records"] += len(k)
        for kind in k:
            if kind is None:
                counts["originals"] += 1
            else:
                counts["copies"] += 1
                counts[kind] += 1
        if progress is not None:
            progress(counts["records"])

    # Written under a temporary name and renamed when complete (io.writers.atomic_path).
    with atomic_path(path) as tmp:
        if fmt == "parquet":
            _write_parquet(tmp, originals, copies, words, seed, level, tally)
        else:
            with open(tmp, "wb") as raw:
                inner: Any  # a GzipFile, a zstandard stream writer or a BufferedWriter: each has write, flush, close
                if fmt == "jsonl.gz":
                    inner = gzip.GzipFile(
                        filename="", mode="wb", fileobj=raw, compresslevel=1 if level is None else level, mtime=0
                    )
                elif fmt == "jsonl.zst":
                    try:
                        import zstandard
                    except ImportError as exc:
                        raise ImportError("writing .zst needs the 'zstandard' package: pip install zstandard") from exc
                    inner = zstandard.ZstdCompressor(level=3 if level is None else level).stream_writer(
                        raw, closefd=False
                    )
                else:
                    inner = io.BufferedWriter(raw, buffer_size=1 << 20)
                writer = _Writer(inner.write)
                try:
                    for chunk in _chunks(originals, copies, words, seed):
                        writer.put(_jsonl_bytes(chunk))
                        tally(chunk)
                finally:
                    writer.close()
                if fmt == "jsonl":
                    inner.flush()
                    inner.detach()
                else:
                    inner.close()
                raw.flush()
                os.fsync(raw.fileno())
    counts_out = {"path": path, "format": fmt, **counts}
    counts_out["bytes"] = os.path.getsize(path)
    counts_out["seconds"] = round(time.perf_counter() - t0, 3)
    return counts_out


def _write_parquet(tmp, originals, copies, words, seed, level, tally) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("writing Parquet needs pyarrow: pip install 'neardup[parquet]'") from exc
    schema = _arrow_schema()
    with pq.ParquetWriter(tmp, schema, compression="zstd", compression_level=3 if level is None else level) as pw:
        writer = _Writer(pw.write_table)
        try:
            for chunk in _chunks(originals, copies, words, seed):
                writer.put(pa.Table.from_pydict({f: chunk[f] for f in FIELDS}, schema=schema))
                tally(chunk)
        finally:
            writer.close()
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
