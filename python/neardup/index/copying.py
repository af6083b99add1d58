"""How ``neardup index backup DIR DEST`` copies an index while it is in use (the check of the copy
is given by the caller: :func:`neardup.index.backup.backup`, ``Index.backup``).

Why: the news app's index is the archive of record, served day and night by ``neardup serve``,
whose writer process holds the writer lock for its whole life. Copying the directory with
``cp`` while it writes gives a database, segments and text logs of different moments (a
segment the copy's manifest does not list, texts past a log's committed length, a WAL copied
half-way): an index that may not open, or opens wrong. The backup takes no lock and never
stops the writer:

1. SQLite's online backup copies the database in one step, so from one read snapshot: the
   manifest (segments, text logs and their committed lengths), every row and level 0 as they
   were at one commit;
2. the files that snapshot lists are copied: each segment whole (segments never change), each
   text log up to its committed length (a log only grows past it, or has bytes of removed
   texts zeroed: step 4);
3. texts a remove had yet to zero in the log (the ``scrubs`` rows of the snapshot) are zeroed
   in the copy, so that a removed article does not live on in a backup;
4. the copy is checked as ``neardup index check`` does (SQLite's integrity, every segment's and
   every text's checksum, the counts): a writer that removed a document after the snapshot may
   have zeroed its text before step 2 read it, and a compact or fold may have deleted a listed
   file. If the check fails and the index has changed since the snapshot, the backup starts
   again (up to `attempts` times); if the index has not changed, the index itself is damaged
   and the check's error is raised.

The copy is built in a hidden directory beside DEST and renamed to DEST once checked and
fsynced: DEST is a whole, checked index or does not exist.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Callable

from neardup.errors import (
    BackupBusyError,
    IndexCorruptError,
    IndexExistsError,
    IndexNotFoundError,
    InvalidParameterError,
    OutputError,
)
from neardup.index import store

__all__ = ["ATTEMPTS", "CheckCopy", "copy_index"]

#: times a backup starts again because the index changed under it (each attempt is one snapshot)
ATTEMPTS = 5
_COPY_CHUNK = 1 << 24


#: checks a staged copy as ``neardup index check`` does: (the check's result, documents)
CheckCopy = Callable[[str], tuple[dict, int]]


def copy_index(directory: str | os.PathLike, dest: str | os.PathLike, attempts: int, check: CheckCopy) -> dict:
    """Copy the index in `directory` to `dest` (which must not exist; its missing parents are
    made), consistent and checked,
    without a lock: adds, removes and the service go on meanwhile. Returns what was copied:
    ``{"documents", "segments", "text_files", "bytes", "generation", "attempts", "seconds"}``."""
    directory, dest = os.fspath(directory), os.fspath(dest)
    dest = dest.rstrip(os.sep) or dest  # ("backups/day/": the directory "day")
    if type(attempts) is not int or attempts < 1:
        raise InvalidParameterError(f"attempts must be a whole number of at least 1, got {attempts!r}")
    db = os.path.join(directory, store.DB_NAME)
    if not os.path.isfile(db):
        raise IndexNotFoundError(f"{directory}: no index here (create one with: neardup index init {directory})")
    if os.path.lexists(dest):
        raise IndexExistsError(f"{dest}: already exists; a backup is written to a new directory")
    parent = os.path.dirname(os.path.abspath(dest))
    real, inside = os.path.realpath(parent), os.path.realpath(directory)
    if real == inside or real.startswith(inside + os.sep):
        raise InvalidParameterError(f"{dest}: inside the index's own directory; back it up elsewhere")
    try:
        os.makedirs(parent, exist_ok=True)  # (backups/2026-12-01: backups/ made if missing)
    except OSError as exc:
        raise OutputError(f"{parent}: cannot create the backup's parent directory: {exc.strerror or exc}") from None
    _remove_stale(parent, os.path.basename(dest))
    t0 = time.monotonic()
    last: BaseException | None = None
    for attempt in range(1, attempts + 1):
        stage = os.path.join(parent, f".{os.path.basename(dest)}.backup-{os.getpid()}-{attempt}")
        try:
            got = _attempt(directory, db, stage, check)
        except (IndexCorruptError, FileNotFoundError) as exc:
            shutil.rmtree(stage, ignore_errors=True)
            if _generation(db) == getattr(exc, "_backup_generation", None):
                # nothing changed since the snapshot: the index itself fails its check
                if isinstance(exc, FileNotFoundError):
                    raise IndexCorruptError(f"{exc.filename}: listed by the index but missing") from exc
                raise
            last = exc
            continue
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        try:
            os.rename(stage, dest)  # (a non-empty DEST made since fails here; an empty one is replaced)
        except OSError:
            shutil.rmtree(stage, ignore_errors=True)
            if os.path.lexists(dest):
                raise IndexExistsError(f"{dest}: created by someone else during the backup; nothing written") from None
            raise
        _fsync_dir(parent)
        got.update(attempts=attempt, seconds=round(time.monotonic() - t0, 3))
        return got
    raise BackupBusyError(
        f"{directory}: the index changed under each of {attempts} backup attempts "
        f"(last: {last}); nothing written to {dest}; run it again"
    ) from last


def _attempt(directory: str, db: str, stage: str, check: CheckCopy) -> dict:
    os.mkdir(stage)
    # 1. the database, from one snapshot (pages=-1: a single step, one read transaction)
    src = store.connect(db, readonly=True)
    try:
        dst = sqlite3.connect(os.path.join(stage, store.DB_NAME), isolation_level=None)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    conn = sqlite3.connect(os.path.join(stage, store.DB_NAME), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        gen = store.generation(conn)
        segments = conn.execute("SELECT file, bytes FROM segments").fetchall()
        texts = conn.execute("SELECT file, name, committed FROM text_files").fetchall()
        scrubs = conn.execute("SELECT file, offset, length FROM scrubs").fetchall() if _has(conn, "scrubs") else []
        try:
            # 2. the files the snapshot lists
            total = os.path.getsize(os.path.join(stage, store.DB_NAME))
            for name, size in segments:
                total += _copy(os.path.join(directory, name), os.path.join(stage, name), size)
            names = {}
            for f, name, committed in texts:
                names[f] = name
                total += _copy(os.path.join(directory, name), os.path.join(stage, name), committed)
            # 3. removed texts not yet zeroed in the log: zeroed in the copy
            for f, off, ln in scrubs:
                if f in names:
                    with open(os.path.join(stage, names[f]), "r+b") as out:
                        out.seek(off)
                        out.write(bytes(ln))
            if scrubs:
                conn.execute("DELETE FROM scrubs")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except (IndexCorruptError, FileNotFoundError) as exc:
            exc._backup_generation = gen  # type: ignore[union-attr]  # a note for the retry above (read by getattr)
            raise
    finally:
        conn.close()
    # 4. checked as `neardup index check` does
    try:
        checked, docs = check(stage)
    except IndexCorruptError as exc:
        exc._backup_generation = gen  # type: ignore[attr-defined]  # a note for the retry above (read by getattr)
        raise
    for name in os.listdir(stage):
        with open(os.path.join(stage, name), "rb") as f:
            os.fsync(f.fileno())
    _fsync_dir(stage)
    return {
        "documents": docs,
        "segments": checked["segments"],
        "text_files": len(texts),
        "bytes": total,
        "generation": gen,
    }


def _copy(src: str, dst: str, length: int | None) -> int:
    """`src` (its first `length` bytes) into the new file `dst`; FileNotFoundError if `src`
    has gone (a compact replaced it: the caller starts again), IndexCorruptError if it is
    shorter than the snapshot says."""
    with open(src, "rb") as fi, open(dst, "xb") as fo:
        want = os.fstat(fi.fileno()).st_size if length is None else length
        left = want
        fast = hasattr(os, "copy_file_range")
        while left > 0:
            n = None
            if fast:
                try:  # in the kernel, no copy through Python (reflinks where the file system has them)
                    n = os.copy_file_range(fi.fileno(), fo.fileno(), min(left, _COPY_CHUNK))
                except OSError:  # not across these file systems: read and write
                    fast = False
            if n is None:
                n = fo.write(fi.read(min(left, _COPY_CHUNK)))
            if n == 0:
                raise IndexCorruptError(f"{src}: {want - left:,} bytes, the index lists {want:,}: truncated")
            left -= n
    return want


def _remove_stale(parent: str, name: str) -> None:
    """Remove what a killed backup to the same DEST left (its hidden staging directory: a
    process that is gone cannot finish it)."""
    prefix = f".{name}.backup-"
    for entry in os.listdir(parent):
        if not entry.startswith(prefix):
            continue
        try:
            pid = int(entry[len(prefix) :].split("-")[0])
        except ValueError:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)
        except PermissionError:  # another user's live process
            pass


def _generation(db: str) -> int | None:
    try:
        conn = store.connect(db, readonly=True)
        try:
            return store.generation(conn)
        finally:
            conn.close()
    except Exception:
        return None


def _has(conn, table: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None
    )


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
