"""Reads of a whole index: documents, clusters (one, the recent ones, all of them as dedup's
clusters.jsonl rows), the counts and sizes of ``stats``. A mixin of
:class:`~neardup.index.core.Index`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

import numpy as np

from neardup._ints import count
from neardup.errors import DocumentNotFoundError, InvalidParameterError
from neardup.index import counters, store
from neardup.index.attrs import IndexAttrs
from neardup.index.plan_steps import nan_if_none
from neardup.stages.keepers import pick_keepers, source_ranks

__all__ = ["Reading"]


class Reading(IndexAttrs):
    def disk_bytes(self) -> int:
        """The bytes of the index's own files in its directory: ``index.sqlite`` and its
        ``-wal`` / ``-shm``, the writer lock, the segment files (``seg-*.ndx``, and those being
        written or deleted) and the text logs (``texts-*.dat``). Other files in the directory (a
        user's notes, an export written there) and subdirectories are not counted; until
        2026-12-01 every file in the directory was. A file's bytes are its length, or the
        space it takes where that is less (the holes a remove punched in a text log)."""
        total = 0
        for f in os.listdir(self.directory):
            if not store.is_index_file(f):
                continue
            try:  # a concurrent compact may remove a file between the listing and the stat
                st = os.stat(os.path.join(self.directory, f))
            except FileNotFoundError:
                continue
            if not os.path.isdir(os.path.join(self.directory, f)):
                # a text log with removed texts' holes punched (holes.py) takes less than its
                # length; a whole file, its length (not the block it rounds up to)
                total += min(st.st_size, st.st_blocks * 512)
        return total

    def totals(self) -> dict:
        """Documents and clusters of two or more (what an add reports), from the counts."""
        c = counters.read(self._conn())
        return {"documents": c["documents"], "clusters": c["clusters"]}

    def stats(self) -> dict:
        """What the index holds. The counts are kept by each commit (counters.py), the small
        tables (segments, level 0, tombstones) counted: no scan of documents or clusters."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            c = counters.read(conn)
            segs = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(docs), 0), COALESCE(SUM(bytes), 0) FROM segments"
            ).fetchone()
            l0 = conn.execute("SELECT COUNT(*) FROM level0").fetchone()[0]
            tomb = conn.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0]
            # batches are numbered from 1 without gaps and never deleted (a look-up, not a count)
            batches = int(self._meta(conn, "next_batch")) - 1
            gen = int(self._meta(conn, "generation"))
            created = float(self._meta(conn, "created_at"))
        finally:
            conn.execute("COMMIT")
        disk = self.disk_bytes()
        n, text_bytes = c["documents"], c["text_bytes"]
        return {
            "directory": self.directory,
            "documents": n,
            "stories": c["stories"],
            "clusters": c["clusters"],
            "duplicates": n - c["stories"],
            "segments": segs[0],
            "segment_postings_docs": segs[1],
            "segment_bytes": segs[2],
            "level0_documents": l0,
            "tombstones": tomb,
            "text_bytes": text_bytes,
            "disk_bytes": disk,
            "bytes_per_document_beyond_text": round((disk - text_bytes) / n, 1) if n else None,
            "batches": batches,
            "generation": gen,
            "created_at": created,
            "config": self.config.as_dict(),
        }

    def get_document(self, id: Any, *, text: bool = True) -> dict:
        conn = self._conn()
        return self._fresh_read(conn, lambda: self._get_document(conn, id, text))

    def _get_document(self, conn, id: Any, text: bool) -> dict:
        r = conn.execute(
            "SELECT doc, id, id_int, published_at, source, added_at, cluster, similarity, match, closest, "
            "closest_similarity, title_len, extra FROM documents WHERE id = ?",
            (str(id),),
        ).fetchone()
        if r is None:
            raise DocumentNotFoundError(f"no document with id {id!r}")
        out = {
            "id": int(r[1]) if r[2] else r[1],
            "published_at": r[3],
            "source": r[4],
            "added_at": r[5],
            "cluster": r[6],
            "similarity_to_keeper": r[7],
            "match": r[8],
            "closest": r[9],
            "closest_similarity": r[10],
            "fields": json.loads(r[12]) if r[12] else {},
        }
        k = conn.execute(
            "SELECT d.id, d.id_int FROM clusters c JOIN documents d ON d.doc = c.keeper WHERE c.cluster = ?", (r[6],)
        ).fetchone()
        out["keeper"] = (int(k[0]) if k[1] else k[0]) if k else None
        out["is_keeper"] = out["keeper"] == out["id"]
        if text and self.config.store_text:
            t = self._texts_of(conn, [r[0]])[r[0]]
            if r[11]:
                out["title"], t = t[: r[11]], t[r[11] + 1 :]
            out["text"] = t
        return out

    def typed_ids(self, ids: list[str]) -> dict[str, Any]:
        """{id as a string: the id as it was given (an integer where it was one)} for the ids of
        `ids` the index holds."""
        conn = self._conn()
        out: dict[str, Any] = {}
        for s in range(0, len(ids), 30000):
            chunk = [str(i) for i in ids[s : s + 30000]]
            for i, ii in conn.execute(
                f"SELECT id, id_int FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk
            ):
                out[i] = int(i) if ii else i
        return out

    def get_cluster(self, cluster: int, *, texts: bool = False) -> dict:
        if isinstance(cluster, (bool, np.bool_)) or not isinstance(cluster, (int, np.integer)):
            raise InvalidParameterError(f"a cluster number is an integer, got {type(cluster).__name__} {cluster!r:.40}")
        conn = self._conn()
        if not -(2**63) <= cluster < 2**63:  # (SQLite's integers: no such cluster)
            raise DocumentNotFoundError(f"no cluster {cluster}")
        return self._fresh_read(conn, lambda: self._get_cluster(conn, cluster, texts))

    def _get_cluster(self, conn, cluster: int, texts: bool) -> dict:
        conn.execute("BEGIN")
        try:
            r = conn.execute(
                "SELECT cluster, keeper, size, created_at, updated_at, merged_into FROM clusters WHERE cluster = ?",
                (int(cluster),),
            ).fetchone()
            if r is None:
                raise DocumentNotFoundError(f"no cluster {cluster}")
            if r[5] is not None:
                return {"cluster": r[0], "merged_into": r[5], "size": 0, "keeper": None, "members": []}
            if r[2] == 0:  # every member removed (a cluster number is never reused)
                raise DocumentNotFoundError(f"cluster {cluster} has no members any more (all were removed)")
            rows = conn.execute(
                "SELECT doc, id, id_int, published_at, source, similarity, match, extra FROM documents "
                "WHERE cluster = ? ORDER BY doc",
                (r[0],),
            ).fetchall()
            tx = self._texts_of(conn, [x[0] for x in rows]) if texts and self.config.store_text else {}
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        members = []
        keeper = None
        for d, i, ii, t, s, sim, m, extra in rows:
            ident = int(i) if ii else i
            row = {
                "id": ident,
                "published_at": t,
                "source": s,
                "similarity": sim,
                "match": m,
                "is_keeper": d == r[1],
                "fields": json.loads(extra) if extra else {},
            }
            if texts and d in tx:
                row["text"] = tx[d]
            if d == r[1]:
                keeper = ident
            members.append(row)
        members.sort(key=lambda x: not x["is_keeper"])
        return {
            "cluster": r[0],
            "keeper": keeper,
            "size": r[2],
            "created_at": r[3],
            "updated_at": r[4],
            "merged_into": None,
            "members": members,
        }

    def recent_clusters(self, limit: int = 20, min_size: int = 2) -> list[dict]:
        limit, min_size = count("limit", limit, 0, 2**63 - 1), count("min_size", min_size, 0, 2**63 - 1)
        conn = self._conn()
        # (a merged cluster keeps its keeper as its documents' representative: not a story)
        rows = conn.execute(
            "SELECT c.cluster, c.size, c.updated_at, d.id, d.id_int, d.source, d.published_at "
            "FROM clusters c JOIN documents d ON d.doc = c.keeper WHERE c.size >= ? "
            "AND c.merged_into IS NULL ORDER BY c.updated_at DESC, c.cluster DESC LIMIT ?",
            (min_size, int(limit)),
        ).fetchall()
        return [
            {
                "cluster": c,
                "size": s,
                "updated_at": u,
                "keeper": int(i) if ii else i,
                "keeper_source": src,
                "keeper_published_at": t,
            }
            for c, s, u, i, ii, src, t in rows
        ]

    def clusters(self, min_size: int = 2):
        """Every cluster of at least `min_size` documents, as rows of dedup's clusters.jsonl:
        ``{"cluster", "keeper", "size", "members": [{"id", "similarity", "match"}]}``.

        The rows come from one snapshot, read through a connection of the generator's own: the
        thread's connection, held in a transaction while the caller paused between rows, made
        the caller's other reads in the loop fail ("cannot start a transaction within a
        transaction") and hid later commits from that thread."""
        self._conn()  # (closed? forked?)
        conn = store.connect(os.path.join(self.directory, store.DB_NAME))
        self._all_conns.add(conn)  # (closed with the index)
        conn.execute("BEGIN")
        try:
            cur = conn.execute(
                "SELECT c.cluster, c.keeper, c.size, d.doc, d.id, d.id_int, d.similarity, d.match, d.published_at, d.source "
                "FROM clusters c JOIN documents d ON d.cluster = c.cluster WHERE c.size >= ? ORDER BY c.cluster",
                (min_size,),
            )
            cur_c = None
            rows: list = []
            for row in cur:
                if row[0] != cur_c and rows:
                    yield _cluster_row(rows, self.config.settings.prefer_source)
                    rows = []
                cur_c = row[0]
                rows.append(row)
            if rows:
                yield _cluster_row(rows, self.config.settings.prefer_source)
        finally:
            try:
                conn.execute("COMMIT")
                conn.close()
            except sqlite3.ProgrammingError:  # the index was closed before this generator finished
                pass


def _cluster_row(rows, prefer) -> dict:
    keeper_doc = rows[0][1]
    keeper = next((int(r[4]) if r[5] else r[4]) for r in rows if r[3] == keeper_doc)
    others = [r for r in rows if r[3] != keeper_doc]
    # members in the keeper rule's order, as dedup lists them
    m = len(others)
    if m:
        ids = [r[4] for r in others]
        times = np.array([nan_if_none(r[8]) for r in others], dtype=np.float64)
        id_rank = np.empty(m, np.int64)
        id_rank[np.argsort(np.array(ids, dtype=str), kind="stable")] = np.arange(m)
        ordered, _ = pick_keepers(
            np.zeros(m, np.int64), np.arange(m), times, source_ranks([r[9] for r in others], prefer), id_rank
        )
        others = [others[int(i)] for i in ordered]
    return {
        "cluster": rows[0][0],
        "keeper": keeper,
        "size": len(rows),
        "members": [{"id": int(r[4]) if r[5] else r[4], "similarity": r[6], "match": r[7]} for r in others],
    }
