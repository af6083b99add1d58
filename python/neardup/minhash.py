"""MinHash signatures (Broder 1997): 32-bit values, one per slot, under three schemes.

``"multiply-shift"`` (default)
    h_i(x) = top 32 bits of (a_i·x + b_i) mod 2^64 with a_i odd: the guide's fixed version.
    Parameters come from SplitMix64(seed); :meth:`MinHash.from_params` takes explicit ones
    (e.g. the guide's NumPy draws), and then equals the guide's NumPy code exactly.
``"datasketch-affine32"``
    Bit-identical to datasketch 2.0.0 ``MinHash(num_perm, seed)`` (its default scheme): the
    input hash is ``sha1_hash32`` of each token's bytes, pre-mixed by the 32-bit MurmurHash3
    finaliser, then (a_i·h + b_i) mod 2^32 with datasketch's ``RandomState(seed)`` draws.
    For migrating a datasketch index (see :mod:`neardup.datasketch_compat`).
``"oph"``
    One-permutation hashing with optimal densification (Shrivastava 2017): each shingle is
    hashed once instead of ``num_perm`` times, O(n + k) per document. Unbiased; its spread
    is within a few percent of classic MinHash on sets of >= 100 shingles, a little wider on
    very short texts (many empty bins are filled by borrowing). Choose it when signature
    time dominates; keep multiply-shift when you need the guide's exact numbers.

The signature of the empty set (a text with no tokens) is all ``0xFFFFFFFF``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup import _core
from neardup._arrow import is_arrow_strings, string_buffers
from neardup._ints import count, u64_array
from neardup.errors import InvalidParameterError
from neardup.shingle import Shingler

__all__ = ["MinHash", "estimate_jaccard", "SCHEMES"]

SCHEMES = ("multiply-shift", "datasketch-affine32", "oph")


def datasketch_affine32_params(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) that datasketch 2.0.0 draws for ``MinHash(num_perm, seed)`` (affine32)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


class MinHash:
    """A MinHash scheme with fixed parameters, applied to texts, ids or byte tokens.

    Args:
        num_perm: signature length (slots). Default 128.
        seed: parameter seed. Signatures are comparable only under the same
            (num_perm, seed, scheme, shingler).
        scheme: ``"multiply-shift"`` (default), ``"datasketch-affine32"`` or ``"oph"``.
        shingler: how text becomes shingles; default ``Shingler()`` (word 5-shingles).
    """

    __slots__ = ("_inner", "_shingler", "_seed")

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        scheme: str = "multiply-shift",
        shingler: Shingler | None = None,
    ) -> None:
        num_perm = count("num_perm", num_perm, 1, 1 << 16)
        if scheme not in SCHEMES:
            raise InvalidParameterError(f"unknown scheme {scheme!r}: expected one of {SCHEMES}")
        self._shingler = _check_shingler(shingler)
        if scheme == "multiply-shift":
            seed = count("seed", seed, 0, 2**64 - 1)
            self._inner = _core.MinHasher.multiply_shift(num_perm, seed)
        elif scheme == "oph":
            seed = count("seed", seed, 0, 2**64 - 1)
            self._inner = _core.MinHasher.oph(num_perm, seed)
        else:
            # numpy's RandomState accepts seeds in [0, 2**32).
            seed = count("seed", seed, 0, 2**32 - 1)
            a, b = datasketch_affine32_params(num_perm, seed)
            self._inner = _core.MinHasher.affine32(a, b)
        self._seed: int | None = seed

    @classmethod
    def from_params(cls, a: Any, b: Any, shingler: Shingler | None = None) -> MinHash:
        """Multiply-shift with explicit parameters: ``a`` (odd) and ``b``, uint64 arrays."""
        a, b = u64_array("a", a), u64_array("b", b)  # (1.5 was taken as 1, -1 an OverflowError)
        if len(a) == 0:  # (the core said "num_perm ... got 0", a name the caller never gave)
            raise InvalidParameterError("a and b must hold at least one parameter each (one per permutation), got none")
        self = cls.__new__(cls)
        self._shingler = _check_shingler(shingler)
        self._inner = _core.MinHasher.multiply_shift_from_params(a, b)
        self._seed = None
        return self

    @property
    def num_perm(self) -> int:
        return self._inner.num_perm

    @property
    def seed(self) -> int | None:
        return self._seed

    @property
    def scheme(self) -> str:
        return self._inner.scheme

    @property
    def shingler(self) -> Shingler:
        return self._shingler

    @property
    def a(self) -> np.ndarray | None:
        """Multipliers (uint64 for multiply-shift, uint32 for datasketch-affine32); None for oph."""
        p = self._inner.params()
        return None if p is None else p[0]

    @property
    def b(self) -> np.ndarray | None:
        """Offsets, as :attr:`a`."""
        p = self._inner.params()
        return None if p is None else p[1]

    def __repr__(self) -> str:
        return (
            f"MinHash(num_perm={self.num_perm}, seed={self.seed}, scheme={self.scheme!r}, shingler={self.shingler!r})"
        )

    def __reduce__(self):
        # pickled and copied by its settings (multiprocessing sends it to workers)
        if self._seed is None:
            return (MinHash.from_params, (self.a, self.b, self._shingler))
        return (MinHash, (self.num_perm, self._seed, self.scheme, self._shingler))

    def _key(self) -> tuple:
        a, b = self.a, self.b
        return (
            self.scheme,
            self.num_perm,
            self._seed,
            None if a is None else a.tobytes(),
            None if b is None else b.tobytes(),
            self._shingler,
        )

    def __eq__(self, other: object) -> bool:
        """Same scheme, parameters and shingler: the same signatures."""
        if not isinstance(other, MinHash):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def signature(self, text: str) -> np.ndarray:
        """Signature of one text: ``uint32`` array of shape ``(num_perm,)``."""
        return self._inner.signature(self._shingler._inner, text)

    def signatures(self, texts: Sequence[str] | Any, threads: int | None = None) -> np.ndarray:
        """Signatures of many texts: ``uint32`` array of shape ``(n, num_perm)``.

        ``texts`` is a list of str or a pyarrow string array (read without copying). The work
        runs with the GIL released on ``threads`` threads (None: all cores); the result does
        not depend on ``threads``.
        """
        if is_arrow_strings(texts):
            parts = [
                self._inner.signatures_arrow(self._shingler._inner, off, data, threads)
                for off, data in string_buffers(texts)
            ]
            if not parts:
                return np.zeros((0, self.num_perm), dtype=np.uint32)
            return parts[0] if len(parts) == 1 else np.vstack(parts)
        return self._inner.signatures(self._shingler._inner, texts, threads)

    def _signatures_keyed(
        self, texts: Sequence[str] | Any, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`signatures` of a list of str or a pyarrow string array (read in place), plus
        each text's exact-pass key and token count (``_core._exact_keys``), each text tokenised
        once (the index's intake and the Spark kernel ``doc_keys`` need both)."""
        if is_arrow_strings(texts):
            parts = [
                self._inner.signatures_keyed_arrow(self._shingler._inner, off, data, threads)
                for off, data in string_buffers(texts)
            ]
            if not parts:
                return (np.zeros((0, self.num_perm), dtype=np.uint32), np.zeros(0, np.uint64), np.zeros(0, np.uint64))
            if len(parts) == 1:
                return parts[0]
            return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]
        return self._inner.signatures_keyed(self._shingler._inner, texts, threads)

    def signature_from_hashes(self, hashes: Any) -> np.ndarray:
        """Signature of a set of ids (``uint64``; for datasketch-affine32, 32-bit input hashes).

        Order and repeats do not matter.
        """
        arr = np.asarray(hashes)
        if (
            arr.dtype.kind in "fO"
            and not isinstance(hashes, np.ndarray)
            and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in hashes)
        ):
            # a list of ids on both sides of 2^63 (as Shingler.hashes(...).tolist() gives) is read
            # by NumPy as float64: read it as the integers it holds
            try:
                arr = np.array(hashes, dtype=np.uint64)
            except (OverflowError, TypeError, ValueError):
                pass  # (negative or past 64 bits: refused below)
        if arr.ndim != 1:
            raise InvalidParameterError(f"hashes must be 1-D, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise InvalidParameterError(f"hashes must be integers, got dtype {arr.dtype}")
        if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
            raise InvalidParameterError("hashes must be non-negative")
        return self._inner.from_ids(np.ascontiguousarray(arr, dtype=np.uint64))

    def signature_from_tokens(self, tokens: Sequence[bytes]) -> np.ndarray:
        """Signature of byte tokens hashed by the scheme's input hash.

        datasketch-affine32 uses ``sha1_hash32`` (datasketch's default ``hashfunc``), so
        ``signature_from_tokens(toks)`` equals datasketch's ``update_batch(toks)``; the other
        schemes use the shingler's hash.
        """
        return self._inner.from_tokens(self._shingler._inner, tokens)


def _check_shingler(shingler: Shingler | None) -> Shingler:
    if shingler is None:
        return Shingler()
    if not isinstance(shingler, Shingler):
        raise InvalidParameterError(f"shingler must be a neardup.Shingler, got {type(shingler).__name__}")
    return shingler


def estimate_jaccard(sig1: Any, sig2: Any) -> float | np.ndarray:
    """Share of slots where two signatures agree: the MinHash estimate of Jaccard.

    1-D signatures give a float; 2-D arrays of the same shape give one value per row.
    """
    a, b = np.asarray(sig1), np.asarray(sig2)
    if a.shape != b.shape:
        raise InvalidParameterError(f"signature shapes differ: {a.shape} vs {b.shape}")
    if a.ndim in (1, 2):
        # as signatures: 32-bit slots (a wider or float array was cast, and agreed where it did
        # not; 1-D, floats and strings were compared as they were)
        for x in (a, b):
            if x.size and (x.dtype.kind not in "iu" or x.min() < 0 or x.max() > np.iinfo(np.uint32).max):
                raise InvalidParameterError(f"signatures must hold uint32 values, got {x.dtype}")
    if a.ndim == 1:
        if a.size == 0:
            raise InvalidParameterError("signatures are empty")
        return float(np.count_nonzero(a == b)) / a.size
    if a.ndim == 2:
        if a.shape[1] == 0:
            raise InvalidParameterError("signatures are empty")
        return _core.estimate_jaccard_rows(
            np.ascontiguousarray(a, dtype=np.uint32), np.ascontiguousarray(b, dtype=np.uint32)
        )
    raise InvalidParameterError(f"signatures must be 1-D or 2-D, got {a.ndim}-D")
