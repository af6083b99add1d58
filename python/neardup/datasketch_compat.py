"""Reading and writing datasketch ``LeanMinHash`` bytes, so a datasketch index migrates.

datasketch 2.0.0 serialises an affine32 ``LeanMinHash`` as ``struct`` format
``"{byteorder}qiB{n}I"``: seed (int64), ``-num_perm`` (int32, negative marks the scheme
field), scheme code (1 = affine32), then the ``num_perm`` uint32 values. Signatures of
``MinHash(scheme="datasketch-affine32", seed=s)`` are bit-identical to datasketch's, so the
bytes round-trip in both directions.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from neardup._ints import count
from neardup.errors import InvalidInputError, InvalidParameterError

__all__ = ["to_lean_bytes", "from_lean_bytes"]

_AFFINE32 = 1
_BYTEORDERS = ("@", "=", "<", ">", "!")


def _check_order(byteorder: str) -> None:
    if byteorder not in _BYTEORDERS:
        raise InvalidParameterError(f"byteorder must be one of {_BYTEORDERS}, got {byteorder!r}")


def to_lean_bytes(signature: Any, seed: int, byteorder: str = "@") -> bytes:
    """datasketch ``LeanMinHash.serialize`` bytes for an affine32 signature."""
    _check_order(byteorder)
    sig = np.asarray(signature)
    if sig.ndim != 1 or sig.dtype != np.uint32 or sig.size == 0:
        raise InvalidParameterError("signature must be a non-empty 1-D uint32 array")
    # datasketch draws its parameters with numpy's RandomState(seed): [0, 2**32) (1.5 was
    # written as 1, -1 as a seed datasketch cannot build, 2**63 a struct.error)
    seed = count("seed", seed, 0, 2**32 - 1)
    fmt = f"{byteorder}qiB{sig.size}I"
    return struct.pack(fmt, seed, -sig.size, _AFFINE32, *sig.tolist())


def from_lean_bytes(buf: bytes | bytearray | memoryview, byteorder: str = "@") -> tuple[int, np.ndarray]:
    """(seed, uint32 signature) from datasketch ``LeanMinHash.serialize`` bytes (affine32).

    Legacy (pre-2.0) and affine64 payloads are refused: their values are not comparable
    with datasketch-affine32 signatures.
    """
    _check_order(byteorder)
    head = struct.calcsize(f"{byteorder}qi")
    if len(buf) < head:
        raise InvalidInputError(f"LeanMinHash bytes too short: {len(buf)} bytes")
    seed, n = struct.unpack_from(f"{byteorder}qi", buf, 0)
    if n >= 0:
        raise InvalidInputError("legacy (pre-2.0 datasketch) LeanMinHash: only affine32 sketches can be read")
    n = -n
    fmt = f"{byteorder}qiB{n}I"
    if len(buf) < struct.calcsize(fmt):
        raise InvalidInputError(f"LeanMinHash bytes truncated: {len(buf)} < {struct.calcsize(fmt)}")
    vals = struct.unpack_from(fmt, buf, 0)
    if vals[2] != _AFFINE32:
        raise InvalidInputError(f"LeanMinHash scheme code {vals[2]} is not affine32 (1)")
    return int(seed), np.array(vals[3:], dtype=np.uint32)
