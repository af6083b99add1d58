"""The settings fixed when an index is created, stored in it and checked on every open."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from neardup.errors import InvalidParameterError
from neardup.settings import Settings
from neardup.stages.options import DedupOptions

__all__ = ["CONFIG_KEYS", "IndexConfig"]

#: The stored configuration's keys, in their stored order: the :class:`Settings` that decide
#: signatures, candidates, verification and keepers (``max_chars`` is a limit of each add, not
#: stored), and the index's own two.
CONFIG_KEYS = (
    "method",
    "k",
    "unit",
    "num_perm",
    "scheme",
    "seed",
    "threshold",
    "recall",
    "bands",
    "rows",
    "verify",
    "measure",
    "prefer_source",
    "store_text",
    "signature_bits",
    "max_distance",
)


@dataclass(frozen=True)
class IndexConfig:
    """An index's :class:`Settings` (MinHash bands resolved when it is made, so that a later
    change of the band choice never changes an index) and what only an index has."""

    settings: Settings = field(default_factory=Settings)
    store_text: bool = True
    #: bits of each MinHash value kept for ``verify="estimate"``: 32 (dedup's estimate exactly) or
    #: 16 (b-bit MinHash: half the bytes; two different values agree on their low 16 bits with
    #: probability 2^-16, so an estimate can exceed the 32-bit one by 1/num_perm, for about
    #: num_perm * 2^-16 (0.2% at 128) of pairs)
    signature_bits: int = 32

    def __post_init__(self) -> None:
        s = self.settings
        if not isinstance(self.store_text, bool):
            raise InvalidParameterError(f"store_text must be True or False, got {self.store_text!r}")
        if s.method == "simhash" and self.signature_bits != 32:
            raise InvalidParameterError("signature_bits applies to MinHash (a SimHash index keeps 64-bit fingerprints)")
        if s.verify == "exact" and not self.store_text:
            raise InvalidParameterError("verify 'exact' needs the texts: use store_text=True or verify='estimate'")
        if self.signature_bits not in (16, 32):
            raise InvalidParameterError(f"signature_bits must be 16 or 32, got {self.signature_bits!r}")
        if self.signature_bits != 32 and s.verify != "estimate":
            raise InvalidParameterError(
                "signature_bits applies to verify='estimate' (exact verification stores no signatures)"
            )
        if s.method == "minhash" and s.bands is None:
            b, r = s.band_shape()
            object.__setattr__(self, "settings", s.replace(bands=b, rows=r))

    @classmethod
    def from_keywords(cls, **given: Any) -> IndexConfig:
        """From ``Index.create``'s keyword settings (an unknown one is an error)."""
        unknown = sorted(set(given) - set(CONFIG_KEYS))
        if unknown:
            raise InvalidParameterError(f"unknown index setting {unknown[0]!r} (settings: {', '.join(CONFIG_KEYS)})")
        own = {k: given.pop(k) for k in ("store_text", "signature_bits") if k in given}
        return cls(Settings(**given), **own)

    @property
    def bands(self) -> int:
        """LSH bands (MinHash) or fingerprint block tables (SimHash)."""
        return self.settings.band_shape()[0]

    @property
    def rows(self) -> int:
        return self.settings.band_shape()[1]

    @property
    def pass_bar(self) -> float:
        return self.settings.pass_bar

    def options(self, threads: int | None = None) -> DedupOptions:
        return DedupOptions(settings=self.settings, threads=threads)

    def as_dict(self) -> dict[str, Any]:
        """The stored form (CONFIG_KEYS, in order; SimHash's block tables as bands and rows)."""
        s = self.settings.as_dict()
        s["bands"], s["rows"] = self.bands, self.rows
        own = {"store_text": self.store_text, "signature_bits": self.signature_bits}
        return {k: own[k] if k in own else s[k] for k in CONFIG_KEYS}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> IndexConfig:
        d = {k: d[k] for k in CONFIG_KEYS if k in d}
        own = {k: d.pop(k) for k in ("store_text", "signature_bits") if k in d}
        if d.get("method") == "simhash":  # (stored as its block tables: not settings)
            d.pop("bands", None)
            d.pop("rows", None)
        d["prefer_source"] = tuple(d.get("prefer_source") or ())
        return IndexConfig(Settings(**d), **own)
