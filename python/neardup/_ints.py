"""Strict conversion of the integer arguments of the Python API: shingle ids and fingerprints
(``uint64``), counts and node numbers.

NumPy converts what it is given: ``np.asarray([1.7], dtype=np.uint64)`` is ``[1]``, a list of
ids on both sides of 2^63 becomes float64, ``-1`` becomes 2^64 - 1 or an ``OverflowError``, and
``True`` is 1. Each entry point that takes ids or counts goes through here, so a float, a
bool, a string, a negative number or a value past 64 bits is an
:class:`~neardup.InvalidParameterError` that names the argument, and a ``uint64`` array (the
common case, as ``Shingler.hashes`` returns) passes without a copy or a check.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup.errors import InvalidParameterError

__all__ = ["u64_array", "count"]

_U64_MAX = (1 << 64) - 1


def _python_ints(x: Any) -> np.ndarray | None:
    """A flat list or tuple of Python ints as uint64 (exactly; NumPy would make a mix of
    values on both sides of 2^63 float64), else None (not such a list)."""
    if not isinstance(x, (list, tuple)) or not all(type(v) is int or isinstance(v, np.integer) for v in x):
        return None
    return np.array([int(v) for v in x], dtype=object) if x else np.zeros(0, np.uint64)


def u64_array(name: str, x: Any, ndim: int | None = 1) -> np.ndarray:
    """`x` as a C-contiguous uint64 array of `ndim` dimensions (None: any)."""
    if isinstance(x, np.ndarray) and x.dtype == np.uint64:
        arr = x
    else:
        if x is None or isinstance(x, (str, bytes, bool, np.bool_)):
            raise InvalidParameterError(f"{name} must be integers in [0, 2**64), got {type(x).__name__}")
        ints = _python_ints(x)
        arr = np.asarray(x) if ints is None else ints
        if arr.dtype.kind == "O":  # Python ints of any size: check each
            try:
                vals = [int(v) for v in arr.ravel().tolist()]
            except (TypeError, ValueError):
                raise InvalidParameterError(f"{name} must be integers in [0, 2**64)") from None
            if any(v < 0 or v > _U64_MAX for v in vals) or any(isinstance(v, bool) for v in arr.ravel().tolist()):
                raise InvalidParameterError(f"{name} must be integers in [0, 2**64)")
            arr = np.array(vals, dtype=np.uint64).reshape(arr.shape)
        elif arr.dtype.kind == "i":
            if arr.size and arr.min() < 0:
                raise InvalidParameterError(f"{name} must be integers in [0, 2**64), got a negative one")
            arr = arr.astype(np.uint64)
        elif arr.dtype.kind != "u":
            raise InvalidParameterError(f"{name} must be integers in [0, 2**64), got {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise InvalidParameterError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def count(name: str, v: Any, lo: int = 0, hi: int = _U64_MAX) -> int:
    """An int in [lo, hi] (not a bool, a float or a string): a count, a seed, a node number."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise InvalidParameterError(f"{name} must be an int, got {type(v).__name__}")
    if not lo <= int(v) <= hi:
        raise InvalidParameterError(f"{name} must be between {lo} and {hi}, got {v}")
    return int(v)
