"""The signature stage shared by every engine: the exact-pass key and the signer.

One definition, used by the batch job (``engines.local.run``), the persistent index and the Spark
kernels, so that they all sign and group texts the same way.
"""

from __future__ import annotations

import numpy as np

from neardup import _core
from neardup.stages.options import DedupOptions

__all__ = ["Signer", "exact_keys"]


def exact_keys(texts: list[str], threads: int | None, unit: str = "word") -> tuple[np.ndarray, np.ndarray]:
    """The exact-pass key (xxh3 of the normalised text, in the tokens of `unit`: the same key,
    the same shingles) and the token count of each text."""
    keys, ntok = _core._exact_keys(texts, threads, unit)
    return np.asarray(keys, dtype=np.uint64), np.asarray(ntok, dtype=np.uint64)


class Signer:
    """MinHash signatures (n x num_perm uint32) or SimHash fingerprints (n uint64) for texts,
    and their shingle hash sets (for exact verification), as ``opts`` defines them."""

    def __init__(self, opts: DedupOptions) -> None:
        self.opts = opts
        settings = opts.settings
        self.shingler = settings.shingler()
        if settings.method == "minhash":
            self.mh = settings.minhash()
        else:
            self.sh = settings.simhash()

    def batch(self, texts: list[str]) -> np.ndarray:
        if self.opts.settings.method == "minhash":
            return self.mh.signatures(texts, threads=self.opts.threads)
        return np.asarray(self.sh.fingerprints(texts, threads=self.opts.threads), dtype=np.uint64)

    def keyed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(signatures, exact keys, token counts) of every text, each tokenised once
        (``exact_keys`` and :meth:`batch` in one pass); None for SimHash (call both)."""
        if self.opts.settings.method != "minhash":
            return None
        sigs, keys, ntok = self.mh._signatures_keyed(texts, threads=self.opts.threads)
        return sigs, np.asarray(keys, dtype=np.uint64), np.asarray(ntok, dtype=np.uint64)

    def hashes(self, texts: list[str]) -> list[np.ndarray]:
        return self.shingler.hashes_batch(texts, threads=self.opts.threads)
