"""LSH banding arithmetic: the S-curve, parameter choice, band keys and candidate pairs.

A signature of ``num_perm`` values is cut into ``b`` bands of ``r`` rows. A pair with
Jaccard ``s`` becomes a candidate with probability ``1 - (1 - s**r)**b``.

The threshold is soft. datasketch's optimiser (:func:`optimal_params`) balances the areas
of false positives and false negatives; at threshold 0.8 with 128 values it picks 9 bands
of 13 rows, which finds a pair at exactly 0.8 only 40% of the time. :func:`params_for_recall`
instead guarantees a chosen probability at the threshold and then takes the cheapest
curve; every candidate is verified exactly afterwards, so extra candidates cost only a
check each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup import _core
from neardup.errors import InvalidParameterError

__all__ = [
    "candidate_probability",
    "optimal_params",
    "params_for_recall",
    "false_positive_area",
    "false_negative_area",
    "band_keys",
    "candidate_pairs",
]


#: b and r are exponents in the core (a 32-bit int): past it they wrapped to negative powers
#: ("probabilities" of inf and -1), and the areas' integrator never returned
_BR_MAX = (1 << 31) - 1


def _check_br(b: Any, r: Any) -> tuple[int, int]:
    for name, v in (("b", b), ("r", r)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= _BR_MAX:
            raise InvalidParameterError(f"{name} must be an int in [1, 2^31 - 1], got {v!r}")
    return int(b), int(r)


def _check_unit(name: str, v: Any) -> float:
    """A number in [0, 1] (a threshold, a similarity, a recall): not a bool, a string or NaN,
    which ran (a string read as a number; NaN or 2.0 left the areas' integrator looping)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"{name} must be a number in [0, 1], got {v!r}")
    f = float(v)
    if not 0.0 <= f <= 1.0:  # (NaN fails this too)
        raise InvalidParameterError(f"{name} must be in [0, 1], got {v!r}")
    return f


def candidate_probability(s: float | Any, b: int, r: int) -> float | np.ndarray:
    """Chance that a pair with Jaccard ``s`` matches in at least one of ``b`` bands of ``r``
    rows. ``s`` may be a float or an array."""
    b, r = _check_br(b, r)
    given = np.asarray(s)
    if given.dtype.kind not in "iuf":  # strings, bools, objects: not read as numbers
        raise InvalidParameterError(f"s must be a number or an array of numbers in [0, 1], got {given.dtype}")
    arr = given.astype(np.float64)
    if np.any((arr < 0) | (arr > 1)) or np.any(np.isnan(arr)):
        raise InvalidParameterError("s must be in [0, 1]")
    if arr.ndim == 0:
        return _core.candidate_probability(float(arr), b, r)
    return 1.0 - (1.0 - arr**r) ** b


def _check_num_perm(num_perm: Any) -> int:
    if isinstance(num_perm, bool) or not isinstance(num_perm, (int, np.integer)) or not 1 <= num_perm <= 1 << 16:
        raise InvalidParameterError(f"num_perm must be an int in [1, 65536], got {num_perm!r}")
    return int(num_perm)


def optimal_params(threshold: float, num_perm: int, weights: tuple[float, float] = (0.5, 0.5)) -> tuple[int, int]:
    """datasketch's choice of (b, r): minimise ``w_fp * FP area + w_fn * FN area``.

    Agrees with datasketch 2.0.0 ``MinHashLSH`` (9x13 for 0.8/128; 11x11 with weights
    (0.3, 0.7)); unlike datasketch it also answers threshold 1.0 (one band of all rows).
    """
    num_perm = _check_num_perm(num_perm)
    threshold = _check_unit("threshold", threshold)
    if isinstance(weights, (str, bytes)):  # ("12" was read as the weights 1 and 2)
        raise InvalidParameterError(f"weights must be two numbers, got {weights!r}")
    try:
        fp_w, fn_w = (float(w) for w in weights)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"weights must be two numbers, got {weights!r}") from None
    return _core.optimal_params(threshold, num_perm, fp_w, fn_w)


def params_for_recall(threshold: float, num_perm: int, recall: float = 0.95) -> tuple[int, int]:
    """The (b, r) with the fewest expected candidates such that a pair exactly at
    ``threshold`` becomes a candidate with probability >= ``recall``.

    "Fewest expected candidates" is the smallest area under the S-curve below the
    threshold (expected false candidates per pair, for similarities spread evenly below
    it); ties go to fewer slots. Raises :class:`InvalidParameterError` when no (b, r) with
    ``b*r <= num_perm`` reaches the recall, naming the best reachable one.
    """
    return _core.params_for_recall(
        _check_unit("threshold", threshold), _check_num_perm(num_perm), _check_unit("recall", recall)
    )


def false_positive_area(threshold: float, b: int, r: int) -> float:
    """∫₀^threshold P(s) ds: datasketch's false-positive measure."""
    b, r = _check_br(b, r)
    return _core.false_positive_area(_check_unit("threshold", threshold), b, r)


def false_negative_area(threshold: float, b: int, r: int) -> float:
    """∫_threshold^1 (1 - P(s)) ds: datasketch's false-negative measure."""
    b, r = _check_br(b, r)
    return _core.false_negative_area(_check_unit("threshold", threshold), b, r)


def band_keys(signatures: Any, b: int, r: int, threads: int | None = None) -> np.ndarray:
    """One 64-bit key per band: ``uint64`` array ``(n, b)`` from ``uint32`` signatures
    ``(n, num_perm)``. Band j hashes values ``j*r .. j*r+r-1``; ``b*r`` may be below
    ``num_perm`` (the rest are unused)."""
    b, r = _check_br(b, r)
    sigs = np.asarray(signatures)
    if sigs.ndim == 1:
        sigs = sigs[None, :]
    if sigs.ndim != 2 or sigs.dtype != np.uint32:
        raise InvalidParameterError(f"signatures must be a uint32 array (n, num_perm), got {sigs.dtype} {sigs.shape}")
    return _core.band_keys(np.ascontiguousarray(sigs), b, r, threads)


def candidate_pairs(keys: Any) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j``, of rows sharing a key in at least one band column:
    ``uint32`` array ``(m, 2)``, each pair once, sorted."""
    k = np.asarray(keys)
    if k.ndim != 2 or k.dtype != np.uint64:
        raise InvalidParameterError(f"keys must be a uint64 array (n, b), got {k.dtype} {k.shape}")
    return _core.candidate_pairs(np.ascontiguousarray(k))
