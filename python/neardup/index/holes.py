"""Zeroing removed texts in a text log by punching holes in the file, so that a remove gives
back the disk space of what it removed, without a ``compact``.

Why: the news app removes by age every day (``remove --older-than``) from an index that
``neardup serve`` holds open day and night, and ``compact`` needs the writer lock the service
holds. A scrubbing remove wrote zeros over the removed texts: the bytes were gone but the
space was not, so the text log only ever grew (~460 MB a day at 200,000 articles of 2.3 KB,
whatever was evicted). ``fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`` (Linux: ext4,
xfs, btrfs, tmpfs) frees the whole blocks inside a range and zeroes the partial ones at its
edges; the range reads as zeros after it, as it did after writing them, and the file keeps its
length (every offset in the index stays valid). Where the call is missing or the file system
refuses it, zeros are written as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

__all__ = ["zero_range"]

_KEEP_SIZE, _PUNCH_HOLE = 0x01, 0x02


def _load():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        f = getattr(libc, "fallocate64", None) or libc.fallocate
    except (OSError, AttributeError):  # not Linux / no such call
        return None
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    f.restype = ctypes.c_int
    return f


_fallocate = _load()


def zero_range(fd: int, offset: int, length: int) -> bool:
    """Make bytes [offset, offset + length) of the open file `fd` read as zeros: a punched hole
    where the file system can (True: their whole blocks are freed), else zeros written (False).
    The caller fsyncs."""
    if length <= 0:
        return True
    if _fallocate is not None:
        if _fallocate(fd, _PUNCH_HOLE | _KEEP_SIZE, offset, length) == 0:
            return True
        err = ctypes.get_errno()
        if err not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, errno.EPERM):
            raise OSError(err, f"cannot overwrite a removed text: {os.strerror(err)}")
    os.pwrite(fd, bytes(length), offset)  # (a text is at most a few MB: --max-chars)
    return False
