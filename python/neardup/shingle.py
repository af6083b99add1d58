"""Text to shingles: one definition, used by every signature in neardup.

``unit="word"`` (default) applies Unicode NFKC, lower-cases (``str.lower`` semantics) and
takes maximal runs of Unicode word characters (``\\w`` as Unicode TR18 defines it:
Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control), so Hindi or Kannada
words keep their vowel signs and viramas. ``unit="whitespace"`` is the guide's
``text.lower().split()``; ``unit="char"`` takes character k-grams of the normalised text with
whitespace runs folded to one space (for titles and scripts written without spaces).

A shingle is ``k`` consecutive tokens joined by one space. A text with fewer than ``k``
tokens (but at least one) gives one shingle of all its tokens; an empty one gives none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from neardup import _core
from neardup.errors import InvalidParameterError

__all__ = ["Shingler", "ENGLISH_STOPWORDS"]

#: The built-in English stop-word list (``stopwords="english"``).
ENGLISH_STOPWORDS: tuple[str, ...] = tuple(_core.ENGLISH_STOPWORDS)

_UNITS = ("word", "whitespace", "char")
_HASHES = ("xxh3", "blake2b")


def _resolve_stopwords(stopwords: str | Iterable[str] | None) -> list[str] | None:
    if stopwords is None:
        return None
    if isinstance(stopwords, str):
        if stopwords == "english":
            return list(ENGLISH_STOPWORDS)
        raise InvalidParameterError(f'stopwords must be None, "english" or an iterable of words, got {stopwords!r}')
    try:
        words = list(stopwords)
    except TypeError:
        raise InvalidParameterError(
            f'stopwords must be None, "english" or an iterable of words, got {type(stopwords).__name__}'
        ) from None
    for i, w in enumerate(words):
        if not isinstance(w, str):
            raise InvalidParameterError(f"stopwords[{i}] must be str, got {type(w).__name__}")
        try:
            w.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParameterError(f"stopwords[{i}] is not valid Unicode (lone surrogate)") from None
    return words


class Shingler:
    """Turns text into k-shingles and their 64-bit ids.

    Args:
        k: shingle size in tokens (words, or characters for ``unit="char"``). Default 5.
        unit: ``"word"``, ``"whitespace"`` or ``"char"``.
        hash: ``"xxh3"`` (64-bit XXH3 seeded with ``seed``; default) or ``"blake2b"``
            (8-byte BLAKE2b digest read little-endian, as in the guide; ignores ``seed``).
        seed: seed of the xxh3 shingle hash.
        stopwords: ``None``, ``"english"`` (built-in list) or an iterable of words to drop
            before shingling (normalised like the text).
    """

    __slots__ = ("_inner",)

    def __init__(
        self,
        k: int = 5,
        unit: str = "word",
        hash: str = "xxh3",
        seed: int = 0,
        stopwords: str | Iterable[str] | None = None,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise InvalidParameterError(f"k must be an int, got {type(k).__name__}")
        if not 1 <= k <= 65536:  # the core's limit (2**70 was an OverflowError)
            raise InvalidParameterError(f"k must be in [1, 65536], got {k}")
        if unit not in _UNITS:
            raise InvalidParameterError(f"unknown unit {unit!r}: expected one of {_UNITS}")
        if unit == "char" and stopwords is not None:  # (they became single letters, then ignored)
            raise InvalidParameterError("stopwords are words: they do not apply to unit='char'")
        if isinstance(seed, (bool, np.bool_)):
            raise InvalidParameterError(f"seed must be an int in [0, 2**64), got {seed!r}")
        if hash not in _HASHES:
            raise InvalidParameterError(f"unknown hash {hash!r}: expected one of {_HASHES}")
        if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
            raise InvalidParameterError(f"seed must be an int in [0, 2**64), got {seed!r}")
        self._inner = _core.Shingler(int(k), unit, hash, int(seed), _resolve_stopwords(stopwords))

    @property
    def k(self) -> int:
        return self._inner.k

    @property
    def unit(self) -> str:
        return self._inner.unit

    @property
    def hash(self) -> str:
        return self._inner.hash

    @property
    def seed(self) -> int:
        return self._inner.seed

    @property
    def stopwords(self) -> list[str] | None:
        """The normalised stop words in use, sorted, or None."""
        return self._inner.stopwords

    def __repr__(self) -> str:
        sw = "" if self.stopwords is None else f", stopwords=<{len(self.stopwords)} words>"
        return f"Shingler(k={self.k}, unit={self.unit!r}, hash={self.hash!r}, seed={self.seed}{sw})"

    def __reduce__(self):
        # pickled and copied by its settings (multiprocessing sends it to workers)
        return (Shingler, (self.k, self.unit, self.hash, self.seed, self.stopwords))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Shingler):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        sw = None if self.stopwords is None else tuple(self.stopwords)
        return (self.k, self.unit, self.hash, self.seed, sw)

    def shingles(self, text: str) -> list[str]:
        """Distinct shingles of ``text`` in first-seen order."""
        return self._inner.shingles(text)

    def hashes(self, text: str) -> np.ndarray:
        """Distinct shingle ids of ``text``, sorted (``uint64``)."""
        return self._inner.hashes(text)

    def weighted_hashes(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Distinct shingle ids (sorted ``uint64``) and how often each occurs (``uint32``)."""
        return self._inner.weighted_hashes(text)

    def hashes_batch(self, texts: Sequence[str], threads: int | None = None) -> list[np.ndarray]:
        """:meth:`hashes` of every text, computed in parallel with the GIL released."""
        return self._inner.hashes_batch(texts, threads)
