"""Zero-copy views of Arrow string arrays, for the batch kernels.

pyarrow is optional: these helpers only run when the caller passes a pyarrow array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup.errors import InputTypeError, InvalidInputError


def is_arrow_strings(obj: Any) -> bool:
    """True for a pyarrow (Chunked)Array of string/large_string type."""
    mod = type(obj).__module__
    if not mod.startswith("pyarrow"):
        return False
    import pyarrow as pa

    if isinstance(obj, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_string(obj.type) or pa.types.is_large_string(obj.type):
            return True
        raise InputTypeError(f"expected an Arrow string array, got Arrow type {obj.type}")
    return False


def string_buffers(arr: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """(int64 offsets, uint8 data) per chunk; the data buffer is a view, not a copy."""
    import pyarrow as pa

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    out = []
    base = 0
    for chunk in chunks:
        if chunk.null_count:
            first = chunk.is_null().to_numpy(zero_copy_only=False).argmax()
            raise InvalidInputError(f"item {base + int(first)}: text is null", index=base + int(first))
        _, off_buf, data_buf = chunk.buffers()
        off_dtype = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(off_buf, dtype=off_dtype)[chunk.offset : chunk.offset + len(chunk) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
        out.append((offsets.astype(np.int64), data))
        base += len(chunk)
    return out
