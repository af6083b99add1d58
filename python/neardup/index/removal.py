"""Removing documents and compacting the index. A remove recomputes each affected cluster
from the stored pairs (a cluster may split) and re-decides its keepers; compact merges every
segment and level 0 into one segment without removed documents and rewrites the text log
without removed texts. A mixin of :class:`~neardup.index.core.Index`.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import numpy as np

from neardup import _sets
from neardup.errors import DocumentNotFoundError, InvalidParameterError, ScrubIncompleteError
from neardup.graph import connected_components
from neardup.index import counters
from neardup.index.attrs import IndexAttrs
from neardup.index.errors import few
from neardup.index.holes import zero_range
from neardup.index.intake import sign
from neardup.index.plan_steps import nan_if_none
from neardup.index.segment import Postings, write_segment
from neardup.index.store import State, immediate, truncate_wal
from neardup.io.records import parse_time
from neardup.simhash import hamming
from neardup.stages.keepers import pick_keepers, source_ranks
from neardup.stages.verify import HashSets, verify_exact

# A document's age: its publication time, or when it was added if it came without one
# (remove's selection and older_remain's question must agree on it).
_OLDER = "COALESCE(published_at, added_at) < ?"

__all__ = ["Removal", "older_than_seconds", "parse_age"]


def parse_age(s: str, now: float | None = None, what: str = "--older-than") -> float:
    """'30d', '12h', '90m', '3600s' before now, or an ISO date/time, as seconds since the epoch."""
    now = time.time() if now is None else now
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", s)
    if m:
        mult = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]
        return now - float(m.group(1)) * mult
    try:
        dt = datetime.fromisoformat(s.strip())
    except ValueError:
        raise ValueError(f"{what} {s!r}: use an age such as 30d, 12h, 90m, or an ISO date") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def older_than_seconds(v: Any) -> float | None:
    """``remove(older_than=v)`` as seconds since the epoch (module docstring of remove)."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        raise InvalidParameterError(f"older_than must be a time, got {v!r}")
    if isinstance(v, numbers.Real):
        try:
            t = float(v)
        except OverflowError:  # an integer past a float's range (JSON allows any)
            raise InvalidParameterError(f"older_than must be a finite number of seconds, got {v!r:.40}") from None
        if not math.isfinite(t):
            raise InvalidParameterError(f"older_than must be a finite number of seconds, got {v!r}")
        return t
    if isinstance(v, date):  # a datetime (naive: UTC) or a date (its midnight), as records' times are read
        return parse_time(v)
    if isinstance(v, str):
        try:
            return parse_age(v, what="older_than")
        except ValueError as exc:
            raise InvalidParameterError(str(exc)) from None
    raise InvalidParameterError(
        f"older_than must be seconds since the epoch, a datetime, a date or text such as '30d', got {type(v).__name__}"
    )


@dataclass
class _Removing:
    """A remove in the making (``Removal._remove_docs``): the documents removed, the affected
    clusters' members as they were, and the rows each step adds for the commit."""

    conn: sqlite3.Connection
    docs: list[int]  # the documents removed, sorted
    scrub: bool
    now: float
    rows: list[tuple]  # theirs: (doc, cluster, text_file, text_offset, text_length, id)
    gone: set[int]
    affected: list[int]  # their clusters, sorted
    old_keeper: dict[int, int | None]
    members: dict[int, list[dict]]  # every member of the affected clusters, removed or not
    keeper_successor: dict[int, int]  # removed keeper -> the surviving document that takes its place
    next_cluster: int
    cluster_updates: list[tuple] = field(default_factory=list)  # (keeper, size, updated, cluster)
    new_clusters: list[int] = field(default_factory=list)
    doc_updates: list[tuple[float, str | None, int, int]] = field(
        default_factory=list
    )  # (similarity, match, cluster, doc)
    inherited: list[tuple] = field(
        default_factory=list
    )  # (a, b, similarity): pairs of a removed document, passed to its exact copy
    merged_moves: list[tuple[int | None, int | None, float, int]] = field(default_factory=list)


class Removal(IndexAttrs):
    def remove(
        self, ids: Iterable[Any] = (), *, older_than: float | None = None, scrub: bool = True, limit: int | None = None
    ) -> int:
        """Remove documents by id, and/or every document published (or, without a time, added)
        before `older_than` (seconds since the epoch). Their clusters are recomputed from the
        stored pairs (a cluster may split: the part holding its keeper keeps its number, or,
        the keeper removed, the part holding its successor, else the part holding its oldest
        document); keepers re-decided. Returns how many were removed.
        With `scrub`, the removed texts are overwritten in the text log at once.

        `older_than`: seconds since the epoch, a datetime (naive: UTC), a date (its midnight,
        UTC), or text as ``neardup index remove --older-than`` takes it (``"30d"``, an ISO
        date). `ids`: a list (or any iterable) of ids; one id alone is refused, not read as
        its characters. Anything else is an InvalidParameterError before anything is removed
        (a datetime was compared with the stored numbers as text, which SQLite orders after
        every number: every document was removed).

        `limit`: at most this many of the documents older than `older_than`, the first added
        first (an eviction in bounded steps, each one transaction: the service's
        ``POST /v1/removals``); :meth:`older_remain` says whether more are left."""
        cutoff = older_than_seconds(older_than)
        if limit is not None and (type(limit) is not int or limit < 1):
            raise InvalidParameterError(f"limit must be a whole number of at least 1, got {limit!r}")
        if isinstance(ids, (str, bytes, int, float)) or not isinstance(ids, Iterable):
            raise InvalidParameterError(
                f"ids must be a list of ids, got {type(ids).__name__} {ids!r:.60} (one id: remove([id]))"
            )
        idl = [str(i) for i in ids]
        with self._wlock:
            conn = self._writer()
            docs: set[int] = set()
            missing = []
            for s in range(0, len(idl), 30000):
                chunk = idl[s : s + 30000]
                found = dict(
                    conn.execute(f"SELECT id, doc FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk)
                )
                missing += [i for i in chunk if i not in found]
                docs.update(found.values())
            if missing:
                raise DocumentNotFoundError(f"{len(missing)} id(s) not in the index: {few(missing)}")
            if cutoff is not None:
                # (in document order, which the scan follows: a limit stops it early)
                docs.update(
                    r[0]
                    for r in conn.execute(
                        f"SELECT doc FROM documents WHERE {_OLDER} ORDER BY doc"
                        + (" LIMIT ?" if limit is not None else ""),
                        (cutoff,) if limit is None else (cutoff, limit),
                    )
                )
            if not docs:
                return 0
            return self._remove_docs(conn, sorted(docs), scrub)

    def older_remain(self, older_than) -> bool:
        """Whether the index holds a document published (or, without a time, added) before
        `older_than` (as :meth:`remove` takes it)."""
        cutoff = older_than_seconds(older_than)
        if cutoff is None:
            return False
        return (
            self._conn().execute(f"SELECT EXISTS (SELECT 1 FROM documents WHERE {_OLDER})", (cutoff,)).fetchone()[0]
            == 1
        )

    def _remove_docs(self, conn, docs: list[int], scrub: bool) -> int:
        now = time.time()
        before = self._state  # advanced after the commit, not reloaded (_after_remove)
        r = self._removing(conn, docs, scrub, now)
        for c in r.affected:
            self._recompute_cluster(r, c)
        # the clusters merged into a touched one follow their documents to the part now holding
        # them, or are emptied with it (_merged_moves)
        r.merged_moves = self._merged_moves(conn, r.affected, r.members, r.gone, r.doc_updates, now)
        gen = self._commit_removal(r)
        self._after_remove(before, gen, docs)
        self._scrub_removed(r)
        return len(r.gone)

    def _removing(self, conn, dl: list[int], scrub: bool, now: float) -> _Removing:
        """The removed documents' rows, their clusters' members and keepers, and the successors
        of the keepers removed."""
        rows = []
        for s in range(0, len(dl), 30000):
            chunk = dl[s : s + 30000]
            rows += conn.execute(
                f"SELECT doc, cluster, text_file, text_offset, text_length, id FROM documents "
                f"WHERE doc IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        gone = {r[0] for r in rows}
        affected = sorted({r[1] for r in rows})
        old_keeper: dict[int, int | None] = {}
        members = self._cluster_members(conn, affected, old_keeper)
        # which part of a split keeps the number: the one holding the keeper (the story's card,
        # the number a client holds); with the keeper removed, the one holding its successor
        # (_successors, as for a merged cluster's representative); with neither, the one
        # holding the oldest document
        old = {m["doc"]: m for ms in members.values() for m in ms}
        survivors = {d for d in old if d not in gone}
        lost_keepers = sorted(
            {k for c, k in old_keeper.items() if k is not None and k in gone and k in old and old[k]["cluster"] == c}
        )
        keeper_successor = self._successors(conn, lost_keepers, old, survivors)
        next_cluster = int(self._meta(conn, "next_cluster"))
        return _Removing(
            conn, dl, scrub, now, rows, gone, affected, old_keeper, members, keeper_successor, next_cluster
        )

    def _recompute_cluster(self, r: _Removing, c: int) -> None:
        """Cluster `c` recomputed from the stored pairs of its surviving members: emptied, or
        split into its parts, each with its keeper re-decided."""
        rest = sorted((m for m in r.members.get(c, []) if m["doc"] not in r.gone), key=lambda m: m["doc"])
        if not rest:
            r.cluster_updates.append((None, 0, r.now, c))
            return
        pos = {m["doc"]: i for i, m in enumerate(rest)}
        edges = self._stored_edges(r.conn, pos)
        self._inherit_pairs(r, c, rest, pos, edges)
        by_key: dict[int, int] = {}
        for i, m in enumerate(rest):
            if m["exact_key"] != 0:
                j = by_key.setdefault(m["exact_key"], i)
                if j != i:
                    edges.append((j, i))
        lab = np.asarray(connected_components(len(rest), np.array(edges, np.uint32).reshape(-1, 2)), np.int64)
        if self.config.store_text and len(_sets.unique(lab)) > 1:
            # split on the stored pairs, which are a budget of the verified ones (budget.py):
            # the pairs across the parts that neardup dedup would verify, verified again
            for i, j, sim in self._bridges(r.conn, rest, lab):
                edges.append((i, j))
                r.inherited.append((rest[i]["doc"], rest[j]["doc"], sim))  # (i < j: doc order)
            lab = np.asarray(connected_components(len(rest), np.array(edges, np.uint32).reshape(-1, 2)), np.int64)
        self._renumber_parts(r, c, rest, pos, lab)

    @staticmethod
    def _stored_edges(conn, pos: dict[int, int]) -> list[tuple[int, int]]:
        """The stored pairs among the documents of `pos` ({doc: position}), as positions."""
        edges = []
        ds = list(pos)
        for s in range(0, len(ds), 15000):
            chunk = ds[s : s + 15000]
            ph = ",".join("?" * len(chunk))
            for a, b in conn.execute(f"SELECT a, b FROM pairs WHERE a IN ({ph}) OR b IN ({ph})", chunk + chunk):
                if a in pos and b in pos:
                    edges.append((pos[a], pos[b]))
        return edges

    @staticmethod
    def _inherit_pairs(
        r: _Removing, c: int, rest: list[dict], pos: dict[int, int], edges: list[tuple[int, int]]
    ) -> None:
        """An exact copy is joined to its original by the exact pass and verified against
        nothing: the original's pairs are its pairs too (the same normalised text, the same
        shingles). With the original removed they pass to the first surviving copy (edges, and
        r.inherited), as neardup dedup over the documents left would verify them; otherwise a
        near copy of the original and its exact copy fell apart."""
        first_of_key: dict[int, int] = {}
        for i, m in enumerate(rest):
            if m["exact_key"] != 0:
                first_of_key.setdefault(m["exact_key"], i)
        heir = {
            m["doc"]: first_of_key[m["exact_key"]]
            for m in r.members.get(c, [])
            if m["doc"] in r.gone and m["exact_key"] != 0 and m["exact_key"] in first_of_key
        }
        if heir:
            for a, b, sim in _pairs_touching(r.conn, list(heir)):
                ia = heir.get(a, pos.get(a))
                ib = heir.get(b, pos.get(b))
                if ia is None or ib is None or ia == ib:
                    continue
                edges.append((ia, ib))
                da, db = rest[ia]["doc"], rest[ib]["doc"]
                r.inherited.append((min(da, db), max(da, db), sim))

    def _renumber_parts(self, r: _Removing, c: int, rest: list[dict], pos: dict[int, int], lab: np.ndarray) -> None:
        """The parts `lab` of cluster `c`'s surviving members `rest`: the one holding its keeper
        (else the keeper's successor, else the oldest document) keeps the number, the others
        get new ones; each part's keeper picked and its members' similarities to it."""
        comps: dict[int, list[int]] = {}
        for i, l in enumerate(lab.tolist()):
            comps.setdefault(l, []).append(i)
        k = r.old_keeper.get(c)
        anchor = k if k in pos else r.keeper_successor.get(k) if k is not None else None
        order = sorted(comps.items(), key=lambda kv: min(rest[i]["doc"] for i in kv[1]))  # oldest first
        keeps = int(lab[pos[anchor]]) if anchor in pos else order[0][0]
        for l, idxs in order:
            part = [rest[i] for i in idxs]
            if l == keeps:
                cid = c
            else:
                cid = r.next_cluster
                r.next_cluster += 1
                r.new_clusters.append(cid)
            keeper = self._pick(part)
            r.cluster_updates.append((keeper["doc"], len(part), r.now, cid))
            self._similarities_to_keeper(r, cid, part, keeper)

    def _similarities_to_keeper(self, r: _Removing, cid: int, part: list[dict], keeper: dict) -> None:
        """Each member's similarity to its part's keeper (r.doc_updates): 1.0 for the keeper,
        1.0 'exact' for its exact copies, else measured as the index verifies."""
        jobs = []
        for m in part:
            if m["doc"] == keeper["doc"]:
                r.doc_updates.append((1.0, None, cid, m["doc"]))
            elif m["exact_key"] != 0 and m["exact_key"] == keeper["exact_key"]:
                r.doc_updates.append((1.0, "exact", cid, m["doc"]))
            else:
                jobs.append(m)
        if jobs:
            ds2 = [keeper["doc"]] + [m["doc"] for m in jobs]
            pr = np.array([[i + 1, 0] for i in range(len(jobs))], np.int64)
            sims = self._pair_measure(r.conn, ds2)(pr)
            for m, s in zip(jobs, sims.tolist()):
                r.doc_updates.append((round(float(s), 6), "near", cid, m["doc"]))

    def _commit_removal(self, r: _Removing) -> int:
        """The remove written in one transaction; returns the new generation."""
        conn, scrub = r.conn, r.scrub
        # a scrubbing remove also zeroes the database pages it frees whole (the writer's
        # setting, FAST, zeroes only the deleted cells in pages written anyway: store.connect)
        if scrub:
            conn.execute("PRAGMA secure_delete = ON")
        try:
            with immediate(conn):
                self._delete_removed(r)
                return self._write_removal(r)
        finally:
            if scrub:  # back to the connection's setting, even when BEGIN itself failed
                conn.execute("PRAGMA secure_delete = FAST")

    @staticmethod
    def _delete_removed(r: _Removing) -> None:
        """The removed documents' rows, pairs, level-0 postings and pending texts deleted, and
        their ids as others' closest match."""
        conn, dl, rows = r.conn, r.docs, r.rows
        for s in range(0, len(dl), 30000):
            chunk = dl[s : s + 30000]
            ph = ",".join("?" * len(chunk))
            conn.execute(f"DELETE FROM documents WHERE doc IN ({ph})", chunk)
            conn.execute(f"DELETE FROM pairs WHERE a IN ({ph})", chunk)
            conn.execute(f"DELETE FROM pairs WHERE b IN ({ph})", chunk)
            conn.execute(f"DELETE FROM level0 WHERE doc IN ({ph})", chunk)
            # a removed text must not be written back into the log by a recovery
            conn.execute(f"DELETE FROM pending_texts WHERE doc IN ({ph})", chunk)
        for s in range(0, len(rows), 30000):
            # no id of a removed document stays behind as another's closest match
            # (store.CLOSEST_INDEX: documents that have one)
            ids = [x[5] for x in rows[s : s + 30000]]
            conn.execute(
                "UPDATE documents SET closest = NULL, closest_similarity = NULL "
                f"WHERE closest IN ({','.join('?' * len(ids))})",
                ids,
            )

    def _write_removal(self, r: _Removing) -> int:
        """The inherited pairs, scrubs, tombstones, cluster and document updates, the batch row
        and the counts written; returns the new generation."""
        conn, dl, rows, now = r.conn, r.docs, r.rows, r.now
        conn.executemany("INSERT OR IGNORE INTO pairs VALUES (?, ?, ?)", r.inherited)
        if r.scrub and self.config.store_text:  # zeroed after the commit, or by the next writer's open
            conn.executemany(
                "INSERT INTO scrubs VALUES (?, ?, ?)",
                [(f, off, ln) for _, _, f, off, ln, _ in rows if f is not None and ln],
            )
        conn.executemany("INSERT OR IGNORE INTO tombstones VALUES (?)", [(d,) for d in dl])
        conn.executemany(
            "INSERT INTO clusters VALUES (?, NULL, 0, ?, ?, NULL)", [(c, now, now) for c in r.new_clusters]
        )
        conn.executemany(
            "UPDATE clusters SET keeper = ?, size = ?, updated_at = ? WHERE cluster = ?", r.cluster_updates
        )
        conn.executemany("UPDATE documents SET similarity = ?, match = ?, cluster = ? WHERE doc = ?", r.doc_updates)
        conn.executemany(
            "UPDATE clusters SET merged_into = ?, keeper = ?, updated_at = ? WHERE cluster = ?", r.merged_moves
        )
        conn.execute(
            "INSERT INTO batches VALUES (?, 'remove', ?, ?, ?, 0, 0, NULL)",
            (int(self._meta(conn, "next_batch")), now, time.time(), len(dl)),
        )
        # the counts (counters.py): each affected cluster was one story; what is left of it
        # is as many as it split into (none when emptied)
        after = [u[1] for u in r.cluster_updates]
        counts = counters.moved(
            counters.read(conn),
            documents=-len(rows),
            text_bytes=-sum(x[4] or 0 for x in rows),
            stories=sum(1 for z in after if z > 0) - len(r.affected),
            clusters=sum(1 for z in after if z >= 2) - sum(1 for c in r.affected if len(r.members.get(c, ())) >= 2),
        )
        return self._bump(
            conn, next_cluster=r.next_cluster, next_batch=int(self._meta(conn, "next_batch")) + 1, **counts
        )

    def _scrub_removed(self, r: _Removing) -> None:
        """After a scrubbing remove's commit: the removed texts overwritten in the text log and
        the WAL emptied of earlier commits' frames."""
        if r.scrub and self.config.store_text:
            try:
                self._scrub(r.conn)
            except (OSError, sqlite3.Error) as exc:
                # the removal is committed: said so, not "the index is as it was"
                raise ScrubIncompleteError(
                    f"removed {len(r.gone):,} document(s) (committed), but overwriting their texts failed: {exc}; "
                    "the next writer to open the index finishes it"
                ) from exc
        if r.scrub:
            # The WAL file keeps earlier commits' frames until they are overwritten, and one of
            # them may hold a removed text (the insert of its pending_texts row: pending.py) or
            # row: emptied now, or, a reader holding it back, by the service's checkpoint thread
            # (scrub_wal); a closing last connection deletes the file anyway
            self._wal_scrub_due = True
            self.scrub_wal()

    def scrub_wal(self) -> bool:
        """Truncate the SQLite WAL if a scrubbing remove left frames of earlier commits in it
        (which may hold removed texts or rows); True when nothing is due any more. Takes the
        writer lock; waits at most 100 ms for readers (store.truncate_wal)."""
        if not self._wal_scrub_due:
            return True
        with self._wlock:
            if self._wal_scrub_due and self._wconn is not None and truncate_wal(self._wconn):
                self._wal_scrub_due = False
            return not self._wal_scrub_due

    def _merged_moves(
        self,
        conn,
        affected: list[int],
        members: dict[int, list[dict]],
        gone: set[int],
        doc_updates: list[tuple],
        now: float,
    ) -> list[tuple[int | None, int | None, float, int]]:
        """(merged_into, keeper, updated_at, cluster) for the clusters merged into one of
        `affected` that this remove moves. A merged cluster's ``merged_into`` is where a reader
        of its old number goes (GET /v1/clusters/{id}); its ``keeper`` (kept by the merge,
        committing.py) is the representative of its documents. After a split it points at the
        part holding that document; when the document is removed, at the part holding its
        successor (its first surviving exact copy, else its most similar surviving stored pair,
        which takes its place); with neither (or an index from before representatives were
        kept: keeper NULL), at the part keeping the old number, as before. When the cluster it
        went into is emptied, all of its documents are gone: merged_into and keeper NULL, size 0,
        which readers answer as a cluster whose every member was removed. (Before 2026-12-01 a
        split left it pointing at a part that need not hold any of its documents, and an emptied
        target left it pointing at an empty cluster.)"""
        followers = []
        for s in range(0, len(affected), 30000):
            chunk = affected[s : s + 30000]
            followers += conn.execute(
                f"SELECT cluster, keeper, merged_into FROM clusters WHERE merged_into IN "
                f"({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        if not followers:
            return []
        part_of = {d: cid for _, _, cid, d in doc_updates}  # every surviving member of `affected`
        lost = sorted({k for _, k, _ in followers if k is not None and k in gone})
        old = {m["doc"]: m for ms in members.values() for m in ms}
        successor = self._successors(conn, lost, old, set(part_of))
        emptied = {c for c in affected if not any(m["doc"] in part_of for m in members.get(c, ()))}
        moves: list[tuple[int | None, int | None, float, int]] = []
        for x, rep, t in followers:
            if t in emptied:
                moves.append((None, None, now, x))
                continue
            r = successor.get(rep, None if rep in gone else rep)
            if r is None or r not in part_of:
                # not known where its documents are: it follows the number t (kept by the part
                # holding t's keeper, or its successor, or its oldest document: _remove_docs);
                # a representative removed without a successor
                # is dropped (a document number is never a live keeper of something else)
                if rep is not None and rep in gone:
                    moves.append((t, None, now, x))
                continue
            if (part_of[r], r) != (t, rep):
                moves.append((part_of[r], r, now, x))
        return moves

    def _successors(self, conn, lost: list[int], old: dict[int, dict], survivors: set[int]) -> dict[int, int]:
        """{removed document: the surviving document that takes its place}, for the removed
        keepers of split clusters (_remove_docs) and the removed representatives of merged
        clusters (_merged_moves): its first surviving exact copy (the lowest document number of
        its exact key in its cluster), else its most similar surviving stored pair in its
        cluster (ties: the oldest). A document with neither is left out. `old`: every member of
        the touched clusters, removed or not ({doc: member}); `survivors`: those that stay."""
        successor: dict[int, int] = {}
        lost = [r for r in lost if r in old]
        if not lost:
            return successor
        best: dict[int, tuple[float, int]] = {}  # lost -> (-similarity, doc): the most similar, then the oldest
        ls = set(lost)
        for a, b, sim in _pairs_touching(conn, lost):
            for x, y in ((a, b), (b, a)):
                if x in ls and y in survivors and old[y]["cluster"] == old[x]["cluster"]:
                    best[x] = min(best.get(x, (2.0, y)), (-sim, y))
        first_copy: dict[tuple[int, int], int] = {}  # (cluster, exact key) -> its first surviving document
        for d in sorted(survivors):
            if old[d]["exact_key"] != 0:
                first_copy.setdefault((old[d]["cluster"], old[d]["exact_key"]), d)
        for r in lost:
            copy = first_copy.get((old[r]["cluster"], old[r]["exact_key"])) if old[r]["exact_key"] != 0 else None
            if copy is not None:
                successor[r] = copy
            elif r in best:
                successor[r] = best[r][1]
        return successor

    def _bridges(self, conn, rest: list[dict], lab: np.ndarray) -> list[tuple[int, int, float]]:
        """The verified pairs (i, j, similarity), i < j positions in `rest` (a story's remaining
        articles, in document order), that join its parts `lab`: its articles signed again from
        their texts (as an add signs them), and in each LSH bucket holding articles of two parts,
        pairs across them verified as an add verifies them, a chunk at a time, until one passes
        (the parts are then one) or none is left. Nothing is found when the stored pairs were
        all the verified ones. The bucket's pairs are never listed whole: a story of 3,000
        articles has 4.5 million (the first form of this listed them, in memory, on every split)."""
        cfg = self.config
        ds = [m["doc"] for m in rest]
        tx = self._texts_of(conn, ds)
        texts = [tx[d] for d in ds]
        signed = sign(texts, self.signer, cfg.bands, cfg.rows, self.threads)
        tok = np.flatnonzero(signed.has_tok)
        if len(tok) < 2:
            return []
        bar = cfg.pass_bar
        fp = None
        if cfg.settings.method == "simhash":
            fp = np.zeros(len(rest), np.uint64)
            fp[tok] = signed.sigs[:, 0]
        similarities = self._pair_measure(conn, ds, texts)

        parent = {int(x): int(x) for x in _sets.unique(lab).tolist()}

        def root(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        found: list[tuple[int, int, float]] = []
        checked: set[int] = set()
        n = len(rest)
        for j in range(signed.band_keys.shape[1]):
            keys = signed.band_keys[:, j]
            o = np.argsort(keys, kind="stable")
            ks = keys[o]
            starts = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
            ends = np.append(starts[1:], len(ks))
            for s0, e0 in zip(starts.tolist(), ends.tolist()):
                if e0 - s0 < 2:
                    continue
                members = np.sort(tok[o[s0:e0]])
                while True:  # join the bucket's parts two at a time
                    by_root: dict[int, list[int]] = {}
                    for m in members.tolist():
                        by_root.setdefault(root(int(lab[m])), []).append(m)
                    if len(by_root) < 2:
                        break
                    joined = False
                    groups = list(by_root.values())
                    for ga in range(len(groups)):
                        for gb in range(ga + 1, len(groups)):
                            hit = self._first_pass(groups[ga], groups[gb], n, checked, fp, similarities, bar)
                            if hit is not None:
                                found.append(hit)
                                parent[root(int(lab[hit[0]]))] = root(int(lab[hit[1]]))
                                joined = True
                                break
                        if joined:
                            break
                    if not joined:
                        break
        return found

    def _pair_measure(self, conn, ds: list[int], texts: list[str] | None = None):
        """``measure(pairs)``: the similarity of each pair of positions in `ds` (documents), as
        the index verifies (exact on their texts, `texts` if read already; or the estimate on
        their stored signatures), its texts or signatures read once, on the first call."""
        held: list = []

        def measure(pr: np.ndarray) -> np.ndarray:
            if not held:
                if self.config.settings.verify == "exact":
                    if texts is None:
                        read = self._texts_of(conn, ds)
                        held.append(HashSets(self.signer.hashes([read[d] for d in ds])))
                    else:
                        held.append(HashSets(self.signer.hashes(texts)))
                else:
                    sg = self._sigs_of(conn, ds)
                    held.append(np.stack([sg[d] for d in ds]))
            if self.config.settings.verify == "exact":
                return np.asarray(verify_exact(held[0], pr, self.config.settings.measure), np.float64)
            return np.asarray(self._estimate(held[0], pr), np.float64)

        return measure

    def _first_pass(
        self, a: list[int], b: list[int], n: int, checked: set[int], fp, similarities, bar: float, chunk: int = 4096
    ) -> tuple[int, int, float] | None:
        """The first pair across `a` and `b` (positions, each sorted) that passes, verified a
        chunk at a time (each pair once over every band: `checked`), as (i, j, sim) with i < j."""
        ua, ub = np.asarray(a, np.int64), np.asarray(b, np.int64)
        step = max(1, chunk // len(ub))
        for s0 in range(0, len(ua), step):
            u, v = np.meshgrid(ua[s0 : s0 + step], ub, indexing="ij")
            pr = np.sort(np.stack([u.ravel(), v.ravel()], axis=1), axis=1)
            code = pr[:, 0] * n + pr[:, 1]
            new = np.fromiter((c not in checked for c in code.tolist()), bool, len(code))
            pr, code = pr[new], code[new]
            checked.update(code.tolist())
            if fp is not None:  # SimHash: a candidate is within max_distance bits
                pr = pr[hamming(fp[pr[:, 0]], fp[pr[:, 1]]) <= self.config.settings.max_distance]
            if not len(pr):
                continue
            sims = similarities(pr)
            ok = np.flatnonzero(sims >= bar)
            if len(ok):
                best = int(ok[np.argmax(sims[ok])])
                return int(pr[best, 0]), int(pr[best, 1]), float(sims[best])
        return None

    def _scrub(self, conn) -> None:
        """Overwrite the texts listed in ``scrubs`` with zeros, fsync each file once, then delete
        the rows. Called after a scrubbing remove's commit, and by a writer's open for what an
        interrupted one left (a Ctrl-C or a kill during the overwriting left removed texts
        readable in the log for good: nothing listed them)."""
        todo = conn.execute("SELECT rowid, file, offset, length FROM scrubs").fetchall()
        if not todo:
            return
        self._committed_for_good()  # a text zeroed for a removal that a power cut undid: lost
        names = dict(conn.execute("SELECT file, name FROM text_files").fetchall())
        by_file: dict[int, list[tuple[int, int]]] = {}
        for _, f, off, ln in todo:
            by_file.setdefault(f, []).append((off, ln))
        for f, spans in by_file.items():
            if f not in names:  # a compact rewrote the log without it since
                continue
            with open(os.path.join(self.directory, names[f]), "r+b") as fh:
                for off, ln in sorted(spans):
                    zero_range(fh.fileno(), off, ln)  # a hole where it can: the space is freed (holes.py)
                os.fsync(fh.fileno())
        with immediate(conn):
            conn.executemany("DELETE FROM scrubs WHERE rowid = ?", [(r[0],) for r in todo])

    def _pick(self, members: list[dict]) -> dict:
        m = len(members)
        ids = [x["id"] for x in members]
        times = np.array([nan_if_none(x["published_at"]) for x in members], dtype=np.float64)
        id_rank = np.empty(m, np.int64)
        id_rank[np.argsort(np.array(ids, dtype=str), kind="stable")] = np.arange(m)
        ordered, _ = pick_keepers(
            np.zeros(m, np.int64),
            np.arange(m),
            times,
            source_ranks([x["source"] for x in members], self.config.settings.prefer_source),
            id_rank,
        )
        return members[int(ordered[0])]

    def _after_remove(self, st: State | None, gen: int, removed: list[int]) -> None:
        """After this process's own remove: the same segments and level 0, more tombstones. Not
        reloaded from SQLite: that read all of level 0 again (0.9 s at 48,500 documents) in the
        request after every DELETE. The removed documents stay in level 0's map (as after a
        fold that raced a remove, fold.py); the tombstones keep them out of every lookup."""
        with self._state_lock:
            if st is None or self._state is not st or st.generation != gen - 1:
                self._state = None
                return
            st.l0.docs.difference_update(removed)
            tomb = _sets.union(st.tombstones, np.asarray(removed, np.int64))
            self._state = State(gen, st.bands, st.segments, st.l0, tomb)

    def compact(self) -> dict:
        """Merge every segment and level 0 into one segment without removed documents, rewrite
        the text log without removed texts, and checkpoint SQLite. Returns before/after sizes."""
        with self._wlock:
            conn = self._writer()
            before = self.disk_bytes()
            st = self._state_for(conn)
            parts = self._arrays(st) + [st.l0.postings(self.config.bands)]
            p = Postings.merge(parts, self.config.bands, st.tombstones)
            p.docs = int(len(_sets.unique(np.concatenate([p.exact[1]] + [b[1] for b in p.bands]))))
            name = None  # no live document (an empty index, or all removed): no segment, as a new index
            if p.docs:
                name = f"seg-{int(self._meta(conn, 'generation')) + 1:08d}-{os.urandom(4).hex()}.ndx"
                size, crc = write_segment(os.path.join(self.directory, name), p)
            # text log: copy live texts to a new file
            new_text: tuple[Any, ...] | None = None  # (file, name), then (file, name, length)
            moves = []
            if self.config.store_text:
                names = dict(conn.execute("SELECT file, name FROM text_files").fetchall())
                fid = max(names) + 1
                new_text = (fid, f"texts-{fid:06d}.dat")
                off = 0
                with open(os.path.join(self.directory, new_text[1]), "wb") as out:
                    cur = conn.execute(
                        "SELECT doc, text_file, text_offset, text_length, text_crc, id FROM documents "
                        "WHERE text_file IS NOT NULL ORDER BY text_file, text_offset"
                    )
                    for d, f, o, ln, crc_, ident in cur:
                        txt = self._read_text(conn, d, names[f], o, ln, crc_, repr(ident)).encode("utf-8")
                        out.write(txt)
                        moves.append((fid, off, d))
                        off += ln
                    out.flush()
                    os.fsync(out.fileno())
                new_text = (*new_text, off)
            old_segs = [r[0] for r in conn.execute("SELECT file FROM segments")]
            old_texts = [r[0] for r in conn.execute("SELECT name FROM text_files")]
            with immediate(conn):
                conn.execute("DELETE FROM segments")
                conn.execute("DELETE FROM level0")
                conn.execute("DELETE FROM tombstones")
                if new_text is not None:  # the new log holds no removed text to overwrite
                    conn.execute("DELETE FROM scrubs")
                if name is not None:
                    conn.execute(
                        "INSERT INTO segments (file, docs, bytes, crc, created_at) VALUES (?, ?, ?, ?, ?)",
                        (name, p.docs, size, crc, time.time()),
                    )
                if new_text is not None:
                    conn.executemany("UPDATE documents SET text_file = ?, text_offset = ? WHERE doc = ?", moves)
                    conn.execute("DELETE FROM text_files")
                    conn.execute("INSERT INTO text_files VALUES (?, ?, ?)", new_text)
                    self._pending.all_synced(conn)  # the new log is fsynced; the old ones go
                self._bump(conn)
            self._committed_for_good()
            self._texts.retire(old_texts if new_text is not None else [])
            if new_text is not None:
                self._drop_log_file()  # its file is deleted below
            for f in old_segs + (old_texts if new_text is not None else []):
                try:
                    os.unlink(os.path.join(self.directory, f))
                except OSError:
                    pass
            # the database's own free pages given back too (level 0's rows, now in the segment,
            # and the removed documents' rows left them: SQLite reuses free pages but never
            # shrinks its file): VACUUM rewrites it without them when they are over 1/16 of it
            # (WAL mode: readers beside keep their snapshot; ~220 MB at 1.2M articles). Before
            # 2026-12-02 a compact of an index of small adds could leave it larger on disk
            pages, free = (conn.execute(f"PRAGMA {x}").fetchone()[0] for x in ("page_count", "freelist_count"))
            vacuumed = free * 16 >= pages and free > 0
            if vacuumed:
                conn.execute("VACUUM")
            # the WAL emptied where no reader holds it back (a reader in a read transaction,
            # an export beside, made this wait out the 30 s busy timeout until 2026-12-01)
            truncate_wal(conn)
            return {
                "bytes_before": before,
                "bytes_after": self.disk_bytes(),
                "segments": int(name is not None),
                "database_free_pages": free,
                "vacuumed": vacuumed,
            }


def _pairs_touching(conn, docs: list[int]):
    """The stored pairs (a, b, similarity) with a or b among `docs` (in chunks: SQLite's limit
    on a statement's parameters)."""
    for s in range(0, len(docs), 15000):
        chunk = docs[s : s + 15000]
        ph = ",".join("?" * len(chunk))
        yield from conn.execute(f"SELECT a, b, similarity FROM pairs WHERE a IN ({ph}) OR b IN ({ph})", chunk + chunk)
