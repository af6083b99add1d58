"""Immutable segment files: sorted band postings (and exact-text keys) of a set of documents.

Layout of ``seg-*.ndx`` (little-endian)::

    b"NDXSEG01"                      8 bytes, magic
    u64 header length H
    header                           H bytes of UTF-8 JSON: {"docs": n, "arrays": [{"name",
                                     "dtype", "offset", "count"}, ...]}
    arrays                           each 8-byte aligned, at its offset from the file start
    u32 CRC-32 of every byte before it
    b"NDXEND01"                      8 bytes, magic

Arrays: ``exact_keys`` (u64, sorted) with ``exact_docs`` (u32), then for each band ``j``
``b{j}_keys`` (u64, sorted) with ``b{j}_docs`` (u32). A posting is (key, document number).
The file is written under a temporary name, fsynced and renamed; the index's SQLite manifest
(table ``segments``) records its name, size and CRC in the same transaction that makes its
documents visible, so a file that is not in the manifest is garbage from an interrupted write.
Every load checks size, both magics and the CRC: a corrupt or truncated file is reported
(:class:`IndexCorruptError`), never used.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup import _sets
from neardup.errors import FileGoneError, IndexCorruptError

__all__ = ["Postings", "write_segment", "read_segment", "MAGIC", "END"]

MAGIC = b"NDXSEG01"
END = b"NDXEND01"


@dataclass
class Postings:
    """Sorted postings: ``exact`` and one entry per band, each (keys u64 sorted, docs u32)."""

    exact: tuple[np.ndarray, np.ndarray]
    bands: list[tuple[np.ndarray, np.ndarray]]
    docs: int

    @staticmethod
    def build(doc_nums: np.ndarray, exact_keys: np.ndarray, band_keys: np.ndarray, bands: int) -> Postings:
        """From per-document arrays (document numbers, exact keys with 0 = none, (n, b) band
        keys; rows without tokens are dropped by the caller)."""
        doc_nums = np.asarray(doc_nums, dtype=np.uint32)
        ex = np.asarray(exact_keys, dtype=np.uint64)
        keep = ex != 0
        exact = _sorted(ex[keep], doc_nums[keep])
        bl = []
        for j in range(bands):
            col = band_keys[:, j] if len(band_keys) else np.zeros(0, np.uint64)
            bl.append(_sorted(np.asarray(col, dtype=np.uint64), doc_nums[: len(col)]))
        return Postings(exact, bl, int(len(doc_nums)))

    @staticmethod
    def build_sorted(exact, bands, docs: int) -> Postings:
        return Postings(_sorted(*exact), [_sorted(*b) for b in bands], int(docs))

    @staticmethod
    def merge(parts: list[Postings], bands: int, drop: np.ndarray | None = None) -> Postings:
        """One sorted Postings from several, without the document numbers in `drop`."""

        def cat(pairs):
            k = np.concatenate([p[0] for p in pairs]) if pairs else np.zeros(0, np.uint64)
            d = np.concatenate([p[1] for p in pairs]) if pairs else np.zeros(0, np.uint32)
            if drop is not None and len(drop) and len(d):
                m = ~_sets.isin(d, drop)
                k, d = k[m], d[m]
            return _sorted(k, d)

        exact = cat([p.exact for p in parts])
        bl = [cat([p.bands[j] for p in parts]) for j in range(bands)]
        return Postings(exact, bl, int(sum(p.docs for p in parts)))

    def nbytes(self) -> int:
        return int(sum(k.nbytes + d.nbytes for k, d in [self.exact, *self.bands]))


def _sorted(keys: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.asarray(keys, dtype=np.uint64)
    docs = np.asarray(docs, dtype=np.uint32)
    order = np.argsort(keys, kind="stable")  # documents within a key: any order will do
    return np.ascontiguousarray(keys[order]), np.ascontiguousarray(docs[order])


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_segment(path: str, p: Postings, pace: int | None = None) -> tuple[int, int]:
    """Write `p` to `path` atomically (temporary name, fsync, rename, fsync of the directory).
    `pace`: in pieces of this many bytes, each synced (background folds, off the requests' path:
    slower, no burst; ``Steps.pace_bytes``); None: at once.
    Returns (size in bytes, CRC-32)."""
    arrays: list[tuple[str, np.ndarray]] = [("exact_keys", p.exact[0]), ("exact_docs", p.exact[1])]
    for j, (k, d) in enumerate(p.bands):
        arrays += [(f"b{j}_keys", k), (f"b{j}_docs", d)]
    # Offsets depend on the header length, which depends on the offsets: lay out twice.
    meta: list[dict[str, Any]] = []
    hlen = 0
    for _ in range(3):
        off = _align(16 + hlen)
        meta = []
        for name, a in arrays:
            meta.append({"name": name, "dtype": a.dtype.str, "offset": off, "count": int(len(a))})
            off = _align(off + a.nbytes)
        header = json.dumps({"docs": p.docs, "arrays": meta}, separators=(",", ":")).encode()
        if len(header) == hlen:
            break
        hlen = len(header)
    tmp = f"{path}.tmp-{os.getpid()}"
    crc = 0
    pos = 0
    synced = 0

    with open(tmp, "wb") as f:

        def put(b) -> None:
            nonlocal crc, pos, synced
            mv = memoryview(b).cast("B")
            step = pace if pace else max(1, len(mv))
            for i in range(0, len(mv), step):
                piece = mv[i : i + step]
                f.write(piece)
                crc = zlib.crc32(piece, crc)
                pos += len(piece)
                if pace and pos - synced >= pace:
                    f.flush()
                    os.fdatasync(f.fileno())
                    synced = pos

        put(MAGIC)
        put(struct.pack("<Q", len(header)))
        put(header)
        for m, (_, a) in zip(meta, arrays):
            put(b"\0" * (m["offset"] - pos))
            put(np.ascontiguousarray(a))
        put(b"\0" * (_align(pos) - pos))
        f.write(struct.pack("<I", crc))
        f.write(END)
        f.flush()
        os.fsync(f.fileno())
        size = f.tell()
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))
    return size, crc


def _align(x: int) -> int:
    return (x + 7) // 8 * 8


def _damaged(path: str, message: str) -> IndexCorruptError:
    """The error for a segment that does not read back whole: damage, unless the file is no
    longer at `path`. A segment merged away is renamed before it is shrunk and deleted
    (fold._retire): a reader that opened it just before the rename may read it short, and must
    retry on the newer manifest (FileGoneError), not report the index as damaged."""
    name = os.path.basename(path)
    if not os.path.exists(path):
        return FileGoneError(f"segment {name} was removed (merged into another) while it was read", name)
    return IndexCorruptError(message)


def read_segment(path: str, size: int | None = None, crc: int | None = None) -> Postings:
    """Load and check a segment file (size and CRC from the manifest when given)."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise FileGoneError(f"segment {name} is listed in the manifest but missing", name) from None
    if size is not None and len(data) != size:
        raise _damaged(path, f"segment {name} is truncated or altered: {len(data)} bytes, the manifest says {size}")
    if len(data) < 28 or data[:8] != MAGIC or data[-8:] != END:
        raise _damaged(path, f"segment {name} is not a complete segment file (bad magic; truncated?)")
    body = memoryview(data)[:-12]
    got = zlib.crc32(body)
    (stored,) = struct.unpack("<I", data[-12:-8])
    if got != stored or (crc is not None and got != crc):
        raise _damaged(path, f"segment {name} fails its checksum (CRC-32 {got:08x}, expected {stored:08x})")
    (hlen,) = struct.unpack("<Q", data[8:16])
    try:
        header = json.loads(bytes(data[16 : 16 + hlen]))
    except ValueError:
        raise _damaged(path, f"segment {name} has an unreadable header") from None
    arrs = {}
    buf = np.frombuffer(data, dtype=np.uint8)
    for m in header["arrays"]:
        dt = np.dtype(m["dtype"])
        arrs[m["name"]] = buf[m["offset"] : m["offset"] + dt.itemsize * m["count"]].view(dt)
    bands = []
    j = 0
    while f"b{j}_keys" in arrs:
        bands.append((arrs[f"b{j}_keys"], arrs[f"b{j}_docs"]))
        j += 1
    return Postings((arrs["exact_keys"], arrs["exact_docs"]), bands, int(header["docs"]))
