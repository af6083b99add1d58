"""What the kernels of ``neardup.kernels`` and ``neardup.kernels.simhash`` share: the signer
objects cached per process (a Spark worker signs many batches with the same settings), the
shingle sets of texts, and similarities rounded as the local engine writes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from neardup.kernels import KernelParams

__all__ = ["_cached", "_sets_of", "round6"]


_CACHE: dict = {}


def _cached(params: KernelParams, what: str):
    key = (params, what)
    obj = _CACHE.get(key)
    if obj is None:
        obj = getattr(params, what)()
        _CACHE[key] = obj
    return obj


def _sets_of(texts: list[str], params: KernelParams):
    from neardup.stages.verify import HashSets

    return HashSets(_cached(params, "shingler").hashes_batch(texts, threads=params.threads))


def round6(x) -> list[float]:
    """Similarities as the local engine writes them: Python's ``round(s, 6)`` (correctly
    rounded from the binary value, ties to even — not Spark's HALF_UP ``round``)."""
    return [round(v, 6) for v in np.asarray(x, dtype=np.float64).tolist()]
