"""The settings fixed when an index is created, stored in it and checked on every open."""
from __future__ import annotations

from dataclasses import dataclass


from neardup.errors import InvalidParameterError
from neardup.stages.candidates import choose_bands
from neardup.stages.options import DedupOptions, source_names

__all__ = ["CONFIG_KEYS", "IndexConfig"]


CONFIG_KEYS = ("method", "k", "unit", "num_perm", "scheme", "seed", "threshold", "recall", "bands", "rows",
               "verify", "measure", "prefer_source", "store_text", "signature_bits", "max_distance")


_D = DedupOptions()  # the index's defaults are dedup's, so that they stay the same


@dataclass
class IndexConfig:
    """Settings fixed when the index is created, stored in it and checked on every open."""

    method: str = _D.method
    k: int = _D.k
    unit: str = _D.unit
    num_perm: int = _D.num_perm
    scheme: str = _D.scheme
    seed: int = _D.seed
    threshold: float = _D.threshold
    recall: float = _D.recall
    bands: int | None = None
    rows: int | None = None
    verify: str = _D.verify
    measure: str = _D.measure
    prefer_source: tuple[str, ...] = ()
    store_text: bool = True
    #: bits of each MinHash value kept for ``verify="estimate"``: 32 (dedup's estimate exactly) or
    #: 16 (b-bit MinHash: half the bytes; two different values agree on their low 16 bits with
    #: probability 2^-16, so an estimate can exceed the 32-bit one by 1/num_perm, for about
    #: num_perm * 2^-16 (0.2% at 128) of pairs)
    signature_bits: int = 32
    #: SimHash: candidates are fingerprints within this many bits (found through max_distance + 1
    #: tables of fingerprint blocks, as ``neardup dedup --method simhash``)
    max_distance: int = _D.max_distance

    @property
    def pass_bar(self) -> float:
        """The similarity a verified pair must reach: the threshold, except SimHash's estimate,
        whose distance check is the verification (every candidate within max_distance is a
        pair, as neardup dedup)."""
        return -1.0 if self.method == "simhash" and self.verify == "estimate" else self.threshold

    def options(self, threads: int | None = None) -> DedupOptions:
        return DedupOptions(method=self.method, k=self.k, unit=self.unit, num_perm=self.num_perm,
                            scheme=self.scheme, seed=self.seed, threshold=self.threshold, recall=self.recall,
                            bands=self.bands if self.method == "minhash" else None,
                            rows=self.rows if self.method == "minhash" else None, verify=self.verify,
                            measure=self.measure, max_distance=self.max_distance,
                            prefer_source=tuple(self.prefer_source), threads=threads)

    def check(self) -> None:
        # prefer_source="agency" was stored as ('a', 'g', 'e', 'n', 'c', 'y'); store_text="no" as
        # "store texts"
        self.prefer_source = source_names(self.prefer_source)
        if not isinstance(self.store_text, bool):
            raise InvalidParameterError(f"store_text must be True or False, got {self.store_text!r}")
        if self.method not in ("minhash", "simhash"):
            raise InvalidParameterError(f"method must be 'minhash' or 'simhash', got {self.method!r}")
        if self.method == "simhash" and self.signature_bits != 32:
            raise InvalidParameterError("signature_bits applies to MinHash (a SimHash index keeps 64-bit fingerprints)")
        if self.verify == "exact" and not self.store_text:
            raise InvalidParameterError("verify 'exact' needs the texts: use store_text=True or verify='estimate'")
        if self.signature_bits not in (16, 32):
            raise InvalidParameterError(f"signature_bits must be 16 or 32, got {self.signature_bits!r}")
        if self.signature_bits != 32 and self.verify != "estimate":
            raise InvalidParameterError("signature_bits applies to verify='estimate' (exact verification stores "
                                        "no signatures)")
        self.options().check()
        if self.method == "simhash":
            # one table per block of the fingerprint: a pair within max_distance bits agrees on
            # at least one of max_distance + 1 blocks (pigeonhole); rows: the widest block's bits
            self.bands, self.rows = self.max_distance + 1, -(-64 // (self.max_distance + 1))
            return
        b, r = choose_bands(self.threshold, self.num_perm, self.recall, self.bands, self.rows)
        self.bands, self.rows = b, r

    def as_dict(self) -> dict:
        return {k: (list(getattr(self, k)) if k == "prefer_source" else getattr(self, k)) for k in CONFIG_KEYS}

    @staticmethod
    def from_dict(d: dict) -> "IndexConfig":
        d = dict(d)
        d["prefer_source"] = tuple(d.get("prefer_source") or ())
        return IndexConfig(**{k: d[k] for k in CONFIG_KEYS if k in d})
