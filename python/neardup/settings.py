"""The one settings object: what decides which documents are near-duplicates.

:class:`Settings` is frozen, validated when it is made, and serialisable (:meth:`Settings.as_dict`,
:meth:`Settings.from_dict`). The batch job's options (``DedupOptions.settings``), the index's
stored configuration (``IndexConfig.settings``), the Spark kernels' parameters
(``KernelParams.settings``) and the service all hold this one object, so a default is written
once, here, and the resolution of LSH bands and rows (:meth:`Settings.band_shape`) and the
construction of the signer's shingler, MinHash and SimHash happen in one place.

Each field carries its command-line flag's help text in its metadata (``Settings.help(name)``):
the CLI derives ``--k``, ``--threshold``, ... from these fields, so a flag's default and help
are the field's.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Iterable
from dataclasses import Field, asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from neardup.errors import InvalidParameterError

if TYPE_CHECKING:
    from neardup.minhash import MinHash
    from neardup.shingle import Shingler
    from neardup.simhash import SimHash

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_SCHEME",
    "MEASURES",
    "METHODS",
    "UNITS",
    "VERIFY",
    "Settings",
    "choose_bands",
    "source_names",
]

METHODS = ("minhash", "simhash")
UNITS = ("word", "whitespace", "char")
VERIFY = ("exact", "estimate")
MEASURES = ("jaccard", "containment")
#: Longest text accepted, in characters: a longer one is a bad record.
DEFAULT_MAX_CHARS = 5_000_000
# The MinHash scheme by default. One-permutation hashing with optimal densification is about
# 3x faster than classic multiply-shift MinHash (one hash per shingle instead of 128) and,
# since every candidate is verified exactly, only candidate recall depends on it: measured
# recall of true pairs at J >= 0.8 was 99.78 % (oph) vs 99.71 % (multiply-shift) on the
# guide-size synthetic corpus and 100 % vs 99.4 % on Reuters-21578 (docs/dedup.md).
DEFAULT_SCHEME = "oph"


def _setting(default: Any, help: str, **cli: Any) -> Any:
    """A field of :class:`Settings` with its command-line help (and choices, metavar)."""
    return field(default=default, metadata={"help": help, **cli})


def source_names(value: object) -> tuple[str, ...]:
    """``prefer_source`` as given: names, or one string of comma-separated names ("agency" is
    one name, not six letters)."""
    if isinstance(value, str):
        return tuple(x for x in value.split(",") if x)
    if not isinstance(value, Iterable):
        raise InvalidParameterError(
            f"prefer_source must be source names (a list of strings, or one string "
            f"of comma-separated names), got {value!r}"
        )
    return tuple(value)


def _is_int(v: object) -> bool:
    """An integer (a NumPy one too), not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def choose_bands(
    threshold: float, num_perm: int, recall: float = 0.95, bands: int | None = None, rows: int | None = None
) -> tuple[int, int]:
    """(b, r): pinned, or the recall-targeted choice (fewest expected candidates such that a pair
    at the threshold is found with probability >= `recall`)."""
    from neardup import lsh

    if bands is not None and rows is not None:
        if bands * rows > num_perm:
            raise InvalidParameterError(f"bands x rows = {bands * rows} exceeds num_perm = {num_perm}")
        return int(bands), int(rows)
    b, r = lsh.params_for_recall(threshold, num_perm, recall=recall)
    return int(b), int(r)


@dataclass(frozen=True)
class Settings:
    """What decides which documents are near-duplicates, and which one of them is kept.

    Made once and never changed (``replace`` makes a new one); invalid values raise
    :class:`~neardup.errors.InvalidParameterError` when it is made."""

    method: str = _setting("minhash", "minhash (default) or simhash", choices=METHODS)
    k: int = _setting(5, "shingle size in tokens (default: 5)")
    unit: str = _setting("word", "tokens: Unicode words (default), whitespace-split, or characters", choices=UNITS)
    num_perm: int = _setting(128, "MinHash values per signature (default: 128)")
    scheme: str = _setting(
        DEFAULT_SCHEME,
        "MinHash scheme: oph (default: one-permutation hashing, fastest), multiply-shift "
        "(the guide's classic MinHash), datasketch-affine32",
    )
    seed: int = _setting(1, "MinHash seed (default: 1)")
    threshold: float = _setting(0.8, "similarity threshold (default: 0.8)")
    recall: float = _setting(0.95, "P(candidate) required at the threshold when choosing bands (default: 0.95)")
    bands: int | None = _setting(None, "pin the number of LSH bands (with --rows)")
    rows: int | None = _setting(None, "pin the rows per band (with --bands)")
    max_distance: int = _setting(3, "SimHash: max Hamming distance (default: 3)")
    verify: str = _setting("exact", "exact Jaccard on shingles (default) or the signature estimate", choices=VERIFY)
    measure: str = _setting(
        "jaccard", "jaccard (default) or containment: shared shingles over the smaller document's", choices=MEASURES
    )
    prefer_source: tuple[str, ...] = _setting(
        (), "comma-separated sources preferred as keepers after the earliest time, e.g. agency,site-a"
    )
    max_chars: int = _setting(
        DEFAULT_MAX_CHARS, "texts longer than this many characters are bad records (default: 5,000,000)"
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefer_source", source_names(self.prefer_source))
        self._check_types()
        self._check_values()

    def _check_types(self) -> None:
        # k="5" or threshold=True were read as something else: said instead
        for name in ("k", "num_perm", "seed", "max_distance", "max_chars"):
            if not _is_int(getattr(self, name)):
                _bad(f"{name} must be an integer, got {getattr(self, name)!r}")
        for name in ("bands", "rows"):
            if getattr(self, name) is not None and not _is_int(getattr(self, name)):
                _bad(f"{name} must be an integer or None, got {getattr(self, name)!r}")
        for name in ("threshold", "recall"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                _bad(f"{name} must be a number, got {v!r}")
        if not all(isinstance(x, str) for x in self.prefer_source):
            _bad(f"prefer_source must be source names (strings), got {list(self.prefer_source)!r}")

    def _check_values(self) -> None:
        for name, allowed in (("method", METHODS), ("verify", VERIFY), ("measure", MEASURES)):
            if getattr(self, name) not in allowed:
                _bad(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.measure == "containment" and self.verify != "exact":
            _bad("measure 'containment' needs exact verification (signatures estimate Jaccard only)")
        if not (0 < self.threshold <= 1 and not math.isnan(self.threshold)):
            _bad(f"threshold must be in (0, 1], got {self.threshold!r}")
        if not 0 < self.recall < 1:
            _bad(f"recall must be in (0, 1), got {self.recall!r}")
        if self.k <= 0:
            _bad(f"k must be >= 1, got {self.k}")
        if self.num_perm <= 0:
            _bad(f"num_perm must be >= 1, got {self.num_perm}")
        self._check_bands()
        if not 0 <= self.max_distance <= 31:
            _bad(f"max_distance must be in 0..31, got {self.max_distance}")
        if self.max_chars <= 0:
            _bad("max_chars must be >= 1")

    def _check_bands(self) -> None:
        if (self.bands is None) != (self.rows is None):
            _bad("give both bands and rows, or neither")
        if self.bands is None or self.rows is None:
            return
        if self.method == "simhash":
            _bad(
                "bands and rows apply to MinHash's LSH: SimHash finds candidates through max_distance + 1 "
                "tables of fingerprint blocks (set max_distance)"
            )
        if self.bands <= 0 or self.rows <= 0:
            _bad("bands and rows must be >= 1")
        if self.bands * self.rows > self.num_perm:
            _bad(f"bands x rows = {self.bands * self.rows} is more than num_perm = {self.num_perm}")

    # ---- derived ---------------------------------------------------------------------

    def band_shape(self) -> tuple[int, int]:
        """(bands, rows) of the candidate stage: MinHash's pinned or recall-targeted LSH bands;
        SimHash's ``max_distance + 1`` tables of fingerprint blocks (a pair within
        max_distance bits agrees on at least one block: pigeonhole) and the widest block's bits."""
        return _band_shape(self)

    @property
    def pass_bar(self) -> float:
        """The similarity a verified pair must reach: the threshold, except SimHash's estimate,
        whose distance check is the verification (every candidate within max_distance is a pair)."""
        return -1.0 if self.method == "simhash" and self.verify == "estimate" else self.threshold

    def shingler(self) -> Shingler:
        from neardup.shingle import Shingler

        return Shingler(k=self.k, unit=self.unit, seed=0)

    def minhash(self) -> MinHash:
        from neardup.minhash import MinHash

        return MinHash(num_perm=self.num_perm, seed=self.seed, scheme=self.scheme, shingler=self.shingler())

    def simhash(self) -> SimHash:
        from neardup.simhash import SimHash

        return SimHash(bits=64, shingler=self.shingler())

    # ---- serialising -----------------------------------------------------------------

    def replace(self, **changes: Any) -> Settings:
        """A new Settings with `changes` (validated)."""
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["prefer_source"] = list(self.prefer_source)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Settings:
        """From :meth:`as_dict`'s form; an unknown key is an error, a missing one its default."""
        unknown = sorted(set(d) - set(cls.names()))
        if unknown:
            _bad(f"unknown setting {unknown[0]!r} (settings: {', '.join(cls.names())})")
        return cls(**d)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def field_of(cls, name: str) -> Field[Any]:
        """The dataclass field of setting `name` (its default, type and command-line metadata)."""
        for f in fields(cls):
            if f.name == name:
                return f
        raise KeyError(f"no setting {name!r}")

    @classmethod
    def help(cls, name: str) -> dict[str, Any]:
        """The command-line help of setting `name`: ``{"help": ..., "choices": ...}``."""
        return dict(cls.field_of(name).metadata)


@functools.cache
def _band_shape(s: Settings) -> tuple[int, int]:
    """:meth:`Settings.band_shape`, worked out once per distinct settings (the recall-targeted
    choice searches every (b, r): each holder asks for it often)."""
    if s.method == "simhash":
        return s.max_distance + 1, -(-64 // (s.max_distance + 1))
    return choose_bands(s.threshold, s.num_perm, s.recall, s.bands, s.rows)


def _bad(msg: str) -> None:
    raise InvalidParameterError(msg)
