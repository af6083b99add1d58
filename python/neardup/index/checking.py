"""The full check of an index (SQLite's integrity, every segment's and every text's
checksum, the counts kept in ``meta`` against a recount) and the counts' repair. A mixin of
:class:`~neardup.index.core.Index`.
"""
from __future__ import annotations


from neardup.index.errors import (
    IndexCorruptError,
)
from neardup.index import counters
from neardup.index.store import immediate

__all__ = ["Checking"]


class Checking:
    def check(self) -> dict:
        """Full check: SQLite integrity, every segment's checksum, every stored text's checksum,
        the counts kept in ``meta`` against a recount. Raises :class:`IndexCorruptError` naming
        the first problem; returns counts when sound."""
        conn = self._conn()
        res = conn.execute("PRAGMA integrity_check").fetchall()
        if res != [("ok",)]:
            raise IndexCorruptError(f"SQLite integrity check failed: {res[:5]}")
        self._fresh_read(conn, lambda: self._check_counts(conn))
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
            raise IndexCorruptError(f"{self.directory}: the counts kept in meta are wrong: " + "; ".join(wrong)
                                    + " (neardup index check --recount rewrites them)")

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
            for d, f, o, ln, crc, ident in conn.execute("SELECT doc, text_file, text_offset, text_length, text_crc, "
                                                        "id FROM documents WHERE text_file IS NOT NULL"):
                self._read_text(conn, d, names[f], o, ln, crc, repr(ident))
                k += 1
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        return {"sqlite": "ok", "segments": len(st.segments), "texts": k}
