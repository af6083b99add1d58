"""The full check of an index (SQLite's integrity, every segment's and every text's
checksum, the counts kept in ``meta`` against a recount) and the counts' repair. A mixin of
:class:`~neardup.index.core.Index`.
"""

from __future__ import annotations

import sqlite3

from neardup.errors import IndexCorruptError, TextRemovedError
from neardup.index import counters
from neardup.index.attrs import IndexAttrs
from neardup.index.store import immediate

__all__ = ["Checking", "check_numbering", "check_text_ends"]


def check_numbering(conn, directory: str) -> None:
    """The next numbers kept in ``meta`` lie past every number in use: a lowered ``next_doc``
    gave a new document a removed one's number (its tombstone then hid it: a copy missed, and
    check passed) or a live one's (an add failed on SQLite's constraint). Four look-ups of a
    table's largest key: every writer's open does it."""
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('next_doc', 'next_cluster', 'next_batch')"))
    used = {
        "next_doc": conn.execute(
            "SELECT MAX(m) FROM (SELECT MAX(doc) AS m FROM documents UNION ALL "
            "SELECT MAX(doc) FROM tombstones UNION ALL SELECT MAX(doc) FROM level0)"
        ).fetchone()[0],
        "next_cluster": conn.execute("SELECT MAX(cluster) FROM clusters").fetchone()[0],
        "next_batch": conn.execute("SELECT MAX(batch) FROM batches").fetchone()[0],
    }
    for key, top in used.items():
        try:
            nxt = int(meta[key])
        except (KeyError, ValueError):
            raise IndexCorruptError(
                f"{directory}: meta.{key} is missing or not a number ({meta.get(key)!r}): the database is damaged"
            ) from None
        if top is not None and nxt <= top:
            raise IndexCorruptError(
                f"{directory}: meta.{key} is {nxt:,} but {top:,} is already in use: "
                "the database is damaged (numbers would be given twice)"
            )


def check_text_ends(conn, directory: str, file: int | None = None) -> None:
    """No stored text reaches past its log's committed length (``text_files.committed``): a
    writer's recovery cuts a log back to that length and the next add writes from there, so a
    damaged, lowered length destroyed the texts past it. Reads every document row (``check``;
    a writer's recovery only for a log it is about to cut)."""
    files = conn.execute(
        "SELECT file, name, committed FROM text_files" + (" WHERE file = ?" if file is not None else ""),
        () if file is None else (file,),
    ).fetchall()
    for f, name, committed in files:
        end = conn.execute("SELECT MAX(text_offset + text_length) FROM documents WHERE text_file = ?", (f,)).fetchone()[
            0
        ]
        if end is not None and end > committed:
            raise IndexCorruptError(
                f"{directory}: the texts of {name} reach byte {end:,} but its committed length "
                f"is {committed:,} (text_files): the database is damaged; the log is left as it is"
            )


class Checking(IndexAttrs):
    def backup(self, dest) -> dict:
        """Copy this index to `dest` (a new directory), consistent and checked, without a lock
        (index/copying.py): ``neardup index backup``."""
        from neardup.index.copying import ATTEMPTS, copy_index

        return copy_index(self.directory, dest, ATTEMPTS, type(self).checked_copy)

    @classmethod
    def checked_copy(cls, directory: str) -> tuple[dict, int]:
        """A copy of an index checked as ``neardup index check`` does: (the check's result, its
        documents). Raises :class:`~neardup.errors.IndexCorruptError` if it fails."""
        with cls.open(directory) as ix:  # type: ignore[attr-defined]
            return ix.check(), ix.stats()["documents"]

    def check(self) -> dict:
        """Full check: SQLite integrity, every segment's checksum, every stored text's checksum,
        the counts kept in ``meta`` against a recount. Raises :class:`IndexCorruptError` naming
        the first problem; returns counts when sound."""
        conn = self._conn()
        try:
            res = conn.execute("PRAGMA integrity_check").fetchall()
        except sqlite3.DatabaseError as exc:  # a page so damaged that the check itself stops
            raise IndexCorruptError(f"{self.directory}: SQLite integrity check failed: {exc}") from exc
        if res != [("ok",)]:
            raise IndexCorruptError(f"SQLite integrity check failed: {res[:5]}")
        self._fresh_read(conn, lambda: self._check_counts(conn))
        self._fresh_read(conn, lambda: self._check_numbers(conn))
        return self._fresh_read(conn, lambda: self._check_files_and_texts(conn))

    def _check_counts(self, conn) -> None:
        conn.execute("BEGIN")  # the counts and the rows of one snapshot
        try:
            kept, real = counters.read(conn), counters.recount(conn)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        wrong = [f"{k} {kept[k]:,} (the tables hold {real[k]:,})" for k in counters.NAMES if kept[k] != real[k]]
        if wrong:
            raise IndexCorruptError(
                f"{self.directory}: the counts kept in meta are wrong: "
                + "; ".join(wrong)
                + " (neardup index check --recount rewrites them)"
            )

    def _check_numbers(self, conn) -> None:
        conn.execute("BEGIN")  # one snapshot
        try:
            check_numbering(conn, self.directory)
            check_text_ends(conn, self.directory)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def recount(self) -> dict[str, int]:
        """Count documents, stories, clusters and text bytes from the tables and store the counts
        (the repair for what :meth:`check` reports about them); returns them. Takes the writer
        lock."""
        with self._wlock:
            conn = self._writer()
            with immediate(conn):
                real = counters.recount(conn)
                counters.store(conn, real)
        return real

    def _check_files_and_texts(self, conn) -> dict:
        conn.execute("BEGIN")  # one snapshot for the manifest and the documents
        try:
            st = self._state_for(conn)
            for n_, s, c in st.segments:
                self._segcache.get(n_, s, c)
            names = dict(conn.execute("SELECT file, name FROM text_files").fetchall())
            k = 0
            for d, f, o, ln, crc, ident in conn.execute(
                "SELECT doc, text_file, text_offset, text_length, text_crc, "
                "id FROM documents WHERE text_file IS NOT NULL"
            ):
                try:
                    self._read_text(conn, d, names[f], o, ln, crc, repr(ident))
                except TextRemovedError:
                    continue  # removed since this snapshot listed it (a remove beside the check)
                k += 1
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        return {"sqlite": "ok", "segments": len(st.segments), "texts": k}
