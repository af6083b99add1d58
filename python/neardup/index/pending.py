"""One fsync per small add: the texts of a small add made with ``sync="full"`` are made durable
by SQLite's WAL fsync (rows of ``pending_texts``, in the add's own transaction) instead of a
second fsync of the text log before it.

The add still writes its texts into the text log (readers read them there, and the log stays
the one place texts live); only the log's fsync is deferred. Until the log has been fsynced,
the bytes a power cut could take from it are also in ``pending_texts``:

* the service's checkpoint thread fsyncs the log every round (:meth:`PendingLog.sync`), off the
  request path, and the next commit deletes the rows that fsync covered; an add that fsyncs the
  log itself (a large one) deletes them all; ``remove`` deletes those of the removed documents
  (a scrubbed text must not come back), ``compact`` all of them (it writes and fsyncs new logs);
* a writer opening the index (:func:`recover`) writes every row's bytes back into the log where
  they differ, fsyncs it and deletes the rows;
* a reader that meets a text the log lost (truncated or failing its checksum) before any writer
  has recovered reads it from its row instead (:func:`read_fallback`), and opening such an index
  accepts a log shorter than its committed length when the rows cover the missing end
  (:func:`covers`).

Why not keep small adds' texts in SQLite for good: the log keeps the database small (texts are
most of an index's bytes) and every reader, compaction and the Rust bulk reader on one path.
"""

from __future__ import annotations

import os
import threading
import zlib

from neardup.errors import IndexCorruptError

__all__ = ["PENDING_MAX_DOCS", "PENDING_MAX_CHARS", "PendingLog", "recover", "covers", "read_fallback", "delete_rows"]

#: adds of at most this many documents and characters of text keep their texts in
#: ``pending_texts`` instead of fsyncing the log (the service's groups; a large add's texts
#: would double its writes, and its one log fsync is a small part of it)
PENDING_MAX_DOCS = 512
PENDING_MAX_CHARS = 1 << 20
#: what :class:`~neardup.index.append.PendingTexts` takes as ``defer``
DEFER = (PENDING_MAX_DOCS, PENDING_MAX_CHARS)


class PendingLog:
    """What this process knows of the text log's durability: the last commit's end of the log
    and the last document whose text it holds (the mark), and the last document whose text an
    fsync of the log has covered (``synced_doc``; rows up to it may go)."""

    def __init__(self, has_rows: bool) -> None:
        self.has_rows = has_rows
        self.mark: tuple[str, int] | None = None  # (path of the log, last document written into it)
        self.synced_doc = -1
        self.pruned_doc = -1
        self._lock = threading.Lock()

    def committed(self, path: str, last_doc: int) -> None:
        self.mark = (path, last_doc)

    def sync(self) -> bool:
        """fsync the text log if rows are waiting for it (the checkpoint thread); True if it did."""
        mark = self.mark
        if mark is None or not self.has_rows or mark[1] <= self.synced_doc:
            return False
        with self._lock:
            try:
                fd = os.open(mark[0], os.O_RDONLY)
            except FileNotFoundError:  # replaced by a compact, which dropped every row
                return False
            try:
                os.fsync(fd)  # the bytes of every add committed before `mark` was read
            finally:
                os.close(fd)
            self.synced_doc = max(self.synced_doc, mark[1])
        return True

    def prune(self, conn) -> None:
        """Inside a commit's transaction: delete the rows an fsync has covered since the last prune."""
        s = self.synced_doc
        if s > self.pruned_doc:
            delete_rows(conn, "DELETE FROM pending_texts WHERE doc <= ?", (s,))
            self.pruned_doc = s

    def all_synced(self, conn) -> None:
        """Inside the transaction of an add that fsynced the log itself: every row is covered."""
        if self.has_rows:
            delete_rows(conn, "DELETE FROM pending_texts")
            self.has_rows = False


def delete_rows(conn, sql: str, args: tuple = ()) -> None:
    """Delete rows of ``pending_texts`` with SQLite's ``secure_delete`` ON: the pages the rows
    free are zeroed. The writer's connection runs with FAST (store.connect), which leaves the
    bytes of freed pages as they were: the texts stayed in index.sqlite's free pages, and a
    scrubbing remove, which zeroes the log and the rows it deletes itself, could not reach them
    (the rows were gone): a removed article's text stayed readable in the database file, and in
    every copy of it. Costs the zeroed pages' writes (about the texts' own bytes, once)."""
    conn.execute("PRAGMA secure_delete = ON")
    try:
        conn.execute(sql, args)
    finally:
        conn.execute("PRAGMA secure_delete = FAST")


def recover(conn, directory: str) -> int:
    """A writer's open: write each row's bytes back into its log where they differ (a power cut
    took them), fsync the logs, delete the rows. Returns how many texts were rewritten."""
    rows = conn.execute(
        "SELECT p.offset, p.body, t.name FROM pending_texts p JOIN text_files t ON t.file = p.file ORDER BY p.doc"
    ).fetchall()
    if not rows and conn.execute("SELECT NOT EXISTS (SELECT 1 FROM pending_texts)").fetchone()[0]:
        return 0
    fds: dict[str, int] = {}
    rewritten = 0
    try:
        for offset, body, name in rows:
            fd = fds.get(name)
            if fd is None:
                fd = fds[name] = os.open(os.path.join(directory, name), os.O_RDWR)
            if os.pread(fd, len(body), offset) != body:
                os.pwrite(fd, body, offset)
                rewritten += 1
        for fd in fds.values():
            os.fsync(fd)
    finally:
        for fd in fds.values():
            os.close(fd)
    delete_rows(conn, "DELETE FROM pending_texts")  # its own transaction (autocommit): after the fsyncs
    return rewritten


def covers(conn, file_id: int, size: int, committed: int) -> bool:
    """Whether the rows hold every byte of log `file_id` from `size` (its length on disk) up to
    `committed`: a log cut short by a power cut that the next writer will mend."""
    end = size
    for offset, length in conn.execute(
        "SELECT offset, length(body) FROM pending_texts WHERE file = ? ORDER BY offset", (file_id,)
    ):
        if offset > end:
            return False
        end = max(end, offset + length)
    return end >= committed


def read_fallback(conn, docs: list[int], crcs: list[int]) -> dict[int, str]:
    """The texts of `docs` that have rows matching their checksums (a reader's way past a log a
    power cut shortened, before a writer has recovered it)."""
    out: dict[int, str] = {}
    want = dict(zip(docs, crcs))
    for s in range(0, len(docs), 30000):
        chunk = docs[s : s + 30000]
        for d, body in conn.execute(
            f"SELECT doc, body FROM pending_texts WHERE doc IN ({','.join('?' * len(chunk))})", chunk
        ):
            if zlib.crc32(body) == (want[d] & 0xFFFFFFFF):
                try:
                    out[d] = body.decode("utf-8")
                except UnicodeDecodeError:  # pragma: no cover - the CRC matched what was written
                    raise IndexCorruptError(f"the pending text of document number {d} is not valid UTF-8") from None
    return out
