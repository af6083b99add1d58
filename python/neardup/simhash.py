"""64-bit SimHash (Charikar 2002): one fingerprint per document; near-duplicates differ in
few bits. Features are shingles weighted by their count; optional stop-word removal.

SimHash tracks the angle between feature-count vectors (cosine), not Jaccard, and it is
strict on short texts: one changed word in a 15-word sentence moves ~11 bits, in a
300-word article ~2. Use it when storage must be 8 bytes per document and only very close
copies matter; see the block-permuted tables in the pipeline for search.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, overload

import numpy as np

from neardup import _core
from neardup._arrow import is_arrow_strings, string_buffers
from neardup._ints import u64_array
from neardup.errors import InvalidParameterError
from neardup.shingle import Shingler

__all__ = ["SimHash", "hamming", "block_masks", "block_keys"]


class SimHash:
    """64-bit SimHash fingerprints.

    Args:
        bits: fingerprint width; 64 (the only width supported).
        shingler: features; default ``Shingler(k=3)`` (word 3-shingles: single words let
            common words swamp the fingerprint, as the guide measured).
        stopwords: ``None`` (keep the shingler's), ``"english"`` or an iterable of words to
            drop before shingling.
    """

    __slots__ = ("_shingler",)

    def __init__(
        self,
        bits: int = 64,
        shingler: Shingler | None = None,
        stopwords: str | Iterable[str] | None = None,
    ) -> None:
        if bits != 64:
            raise InvalidParameterError(f"bits must be 64 (the only supported width), got {bits!r}")
        if shingler is None:
            shingler = Shingler(k=3)
        elif not isinstance(shingler, Shingler):
            raise InvalidParameterError(f"shingler must be a neardup.Shingler, got {type(shingler).__name__}")
        if stopwords is not None:
            shingler = Shingler(shingler.k, shingler.unit, shingler.hash, shingler.seed, stopwords)
        self._shingler = shingler

    @property
    def bits(self) -> int:
        return 64

    @property
    def shingler(self) -> Shingler:
        return self._shingler

    def __repr__(self) -> str:
        return f"SimHash(bits=64, shingler={self._shingler!r})"

    def __reduce__(self):
        return (SimHash, (64, self._shingler))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SimHash):
            return NotImplemented
        return self._shingler == other._shingler

    def __hash__(self) -> int:
        return hash(("SimHash", self._shingler))

    def fingerprint(self, text: str) -> int:
        """Fingerprint of one text as a Python int (0 for a text with no tokens)."""
        return _core.simhash_fingerprint(self._shingler._inner, text)

    def fingerprints(self, texts: Sequence[str] | Any, threads: int | None = None) -> np.ndarray:
        """Fingerprints of many texts (``uint64``), with the GIL released; ``texts`` is a
        list of str or a pyarrow string array (read without copying)."""
        if is_arrow_strings(texts):
            parts = [
                _core.simhash_fingerprints_arrow(self._shingler._inner, off, data, threads)
                for off, data in string_buffers(texts)
            ]
            return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        return _core.simhash_fingerprints(self._shingler._inner, texts, threads)

    @staticmethod
    def from_weighted(ids: Any, weights: Any) -> int:
        """Fingerprint of explicit feature ids (``uint64``) with integer weights."""
        w = u64_array("weights", weights)
        if w.size and w.max() > np.iinfo(np.uint32).max:
            raise InvalidParameterError("weights must be integers in [0, 2**32)")
        return _core.simhash_from_weighted(u64_array("ids", ids), np.ascontiguousarray(w, dtype=np.uint32))


_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@overload
def hamming(x: int | np.integer, y: int | np.integer) -> int: ...
@overload
def hamming(x: np.ndarray, y: Any) -> np.ndarray: ...
@overload
def hamming(x: Any, y: np.ndarray) -> np.ndarray: ...
@overload
def hamming(x: Any, y: Any) -> int | np.ndarray: ...
def hamming(x: Any, y: Any) -> int | np.ndarray:
    """Number of differing bits. Ints give an int; uint64 arrays broadcast to an array."""
    scalar = (int, np.integer)
    if isinstance(x, scalar) and isinstance(y, scalar) and not isinstance(x, bool) and not isinstance(y, bool):
        if not (0 <= int(x) < 2**64 and 0 <= int(y) < 2**64):
            raise InvalidParameterError("fingerprints must be in [0, 2**64)")
        return (int(x) ^ int(y)).bit_count()
    # (a float was truncated, -1 in an array wrapped to 2^64 - 1)
    xa = u64_array("x", [x] if isinstance(x, scalar) else x, ndim=None)
    ya = u64_array("y", [y] if isinstance(y, scalar) else y, ndim=None)
    if isinstance(x, scalar) and not isinstance(x, bool):
        xa = xa.reshape(())
    if isinstance(y, scalar) and not isinstance(y, bool):
        ya = ya.reshape(())
    z = np.bitwise_xor(xa, ya)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(z).astype(np.int64)
    return _POPCOUNT8[z[..., None].view(np.uint8)].sum(axis=-1).astype(np.int64)


def block_masks(max_distance: int) -> np.ndarray:
    """The Rust core's blocks: ``max_distance + 1`` runs of bits, as even as possible
    (block b covers bits [64 b / n, 64 (b + 1) / n))."""
    n = int(max_distance) + 1
    out = []
    for b in range(n):
        lo, hi = 64 * b // n, 64 * (b + 1) // n
        w = hi - lo
        out.append(0xFFFFFFFFFFFFFFFF if w >= 64 else ((1 << w) - 1) << lo)
    return np.array(out, dtype=np.uint64)


def block_keys(fps: np.ndarray, max_distance: int) -> np.ndarray:
    """(n, max_distance + 1) uint64: each fingerprint's value in each block (its bits in
    place, the others zero, as the Rust core keys its tables)."""
    fps = np.asarray(fps, dtype=np.uint64)
    return fps[:, None] & block_masks(max_distance)[None, :]
