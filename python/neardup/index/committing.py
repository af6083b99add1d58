"""An add's commit: the texts appended to the log, the postings (level 0 or a new segment
file) and every row of the plan written in one SQLite transaction, which is what makes the
whole batch visible; then the in-memory state advanced without a reload. A mixin of
:class:`~neardup.index.core.Index`.
"""

from __future__ import annotations

import os
import time

import numpy as np

from neardup.index import counters, fold, store
from neardup.index.append import PendingTexts
from neardup.index.attrs import IndexAttrs
from neardup.index.bulk import Const, insert_columns
from neardup.index.jobs import Job
from neardup.index.plan_steps import new_clusters, new_clusters_few
from neardup.index.planning import Plan
from neardup.index.segment import Postings, write_segment
from neardup.index.store import State, u2i

__all__ = ["Committing"]


class Committing(IndexAttrs):
    def _commit(self, conn, plan: Plan, t0: float, note: str | None, pending: PendingTexts | None = None) -> None:
        cfg = self.config
        n = len(plan.docs)
        now = time.time()
        # 1. texts: appended to the log and fsynced before the transaction that references them
        text_cols: list = [Const(None)] * 4
        tf = self._last_text_file(conn)
        new_committed = tf[2]
        if pending is None:  # not started before the plan (see add_checked): now
            pending = self._append_texts(conn, plan.docs)
        if pending is not None:
            text_cols, new_committed = pending.result()
        sw = plan.stages
        sw.lap("commit: text log")
        # 2. postings: a segment file for a large add (with level 0 folded in), else level 0
        tok = np.flatnonzero(plan.has_tok)
        st = self._state_for(conn)
        # with background folds, folding inline here is only the backstop (see fold.py)
        l0_limit = self.tuning.l0_max * (fold.BACKSTOP if self.background_fold else 1)
        to_segment = n >= self.tuning.segment_min or (len(st.l0.docs) + len(tok) > l0_limit)
        seg = None
        seg_job = seg_name = None
        if to_segment and len(tok):
            # built (numpy sorts) and written in a thread of its own while the rows are inserted
            # below (SQLite and numpy release the GIL): it is needed only for the manifest row
            seg_name = f"seg-{int(self._meta(conn, 'generation')) + 1:08d}-{os.urandom(4).hex()}.ndx"
            l0 = st.l0.postings(cfg.bands) if st.l0.docs else None

            def build_segment():
                mine = Postings.build(plan.doc_nums[tok], plan.exact_keys[tok], plan.band_keys, cfg.bands)
                p = Postings.merge([mine, l0], cfg.bands, st.tombstones) if l0 is not None else mine
                size, crc = write_segment(os.path.join(self.directory, seg_name), p)
                return seg_name, p.docs, size, crc

            seg_job = Job(build_segment)
        sw.lap("commit: segment file started")
        # 3. one transaction
        batch = int(self._meta(conn, "next_batch"))
        conn.execute("BEGIN IMMEDIATE")
        try:
            # column by column, constants and NULLs as literals (bulk.py: binding parameters is
            # most of the cost of 200,000 rows)
            docs_ = plan.docs
            sigs: list[bytes | None] | Const
            if self._stores_sigs:
                sigs = [
                    (self._as_stored(plan.sigs[r]).astype(self._sig_dtype).tobytes() if r >= 0 else None)
                    for r in plan.sig_row.tolist()
                ]
            else:
                sigs = Const(None)
            cms = plan.closest
            tcols = text_cols
            id_int = [1 if type(c.id) is int else 0 for c in docs_]
            columns = [
                plan.doc_nums.tolist(),
                [c.key for c in docs_],
                id_int if 1 in id_int else Const(0),
                [None if c.time != c.time else c.time for c in docs_],
                [c.source for c in docs_],
                Const(now),
                Const(batch),
                np.asarray(plan.exact_keys, np.uint64).view(np.int64).tolist(),  # = u2i: SQLite integers are signed
                plan.cluster_of.tolist(),
                np.asarray(plan.new_sim, np.float64).tolist(),
                plan.new_match,
                [None if cm is None else str(cm[0]) for cm in cms],
                [None if cm is None else cm[1] for cm in cms],
                [e[1] for e in plan.extras],
                *tcols,
                [e[0] for e in plan.extras],
                sigs,
            ]
            sw.lap("commit: document rows built")
            insert_columns(conn, "documents", columns, n)
            sw.lap("commit: documents inserted")
            # new clusters in increasing order (appended to the table's B-tree): the singles
            # (one new document each, its own keeper) and the new clusters of several documents
            fn = plan.first_new
            multi_new = [(c, k, s_) for c, (k, s_) in plan.cluster_rows.items() if c >= fn]
            ncl, nkeep, nsize = (new_clusters_few if n <= self.steps.small_plan else new_clusters)(
                plan.singles, multi_new
            )
            insert_columns(
                conn,
                "clusters",
                [ncl, nkeep, nsize if multi_new else Const(1), Const(now), Const(now), Const(None)],
                len(ncl),
            )
            # (each statement only when it has rows: a new story, the service's usual add, has none)
            grown = [(k, s, now, c) for c, (k, s) in plan.cluster_rows.items() if c < fn]
            if grown:
                conn.executemany("UPDATE clusters SET keeper = ?, size = ?, updated_at = ? WHERE cluster = ?", grown)
            if plan.merged:
                # a merged cluster keeps its keeper as the representative of its documents: a
                # remove that splits the target re-points merged_into to the part holding it
                conn.executemany(
                    "UPDATE clusters SET size = 0, updated_at = ?, merged_into = ? WHERE cluster = ?",
                    [(now, t, c) for c, t in plan.merged.items()],
                )
                conn.executemany(
                    "UPDATE clusters SET merged_into = ? WHERE merged_into = ?",
                    [(t, c) for c, t in plan.merged.items()],
                )
                conn.executemany(
                    "UPDATE documents SET cluster = ? WHERE cluster = ?", [(t, c) for c, t in plan.merged.items()]
                )
            if plan.member_updates:
                conn.executemany(
                    "UPDATE documents SET similarity = ?, match = ?, cluster = ? WHERE doc = ?", plan.member_updates
                )
            if plan.pairs:
                conn.executemany("INSERT OR REPLACE INTO pairs VALUES (?, ?, ?)", plan.pairs)
            sw.lap("commit: other rows")
            if seg_job is not None:
                seg = seg_job.result()
                sw.lap("commit: waited for the segment file")
            if seg is not None:
                conn.execute("DELETE FROM level0")
                conn.execute(
                    "INSERT INTO segments (file, docs, bytes, crc, created_at) VALUES (?, ?, ?, ?, ?)",
                    (seg[0], seg[1], seg[2], seg[3], now),
                )
                # tombstones of documents that no segment lists any more could go; compaction does it
            prow = []
            if seg is None and len(tok):
                l0rows = []
                for k, i in enumerate(tok.tolist()):
                    d = int(plan.doc_nums[i])
                    prow.append((-1, u2i(int(plan.exact_keys[i])), d))
                    for j, key in enumerate(plan.band_keys[k].tolist()):
                        prow.append((j, u2i(key), d))
                    l0rows.append((d, u2i(int(plan.exact_keys[i])), plan.band_keys[k].astype("<u8").tobytes()))
                conn.executemany("INSERT INTO level0 VALUES (?, ?, ?)", l0rows)
            conn.execute("UPDATE text_files SET committed = ? WHERE file = ?", (new_committed, tf[0]))
            if pending is not None:
                if pending.in_db is not None:
                    conn.executemany(
                        "INSERT INTO pending_texts VALUES (?, ?, ?, ?)",
                        zip(
                            plan.doc_nums.tolist(),
                            [tf[0]] * n,
                            text_cols[1],
                            [t.encode("utf-8") for t in pending.in_db],
                        ),
                    )
                    self._pending.has_rows = True
                    self._pending.prune(conn)
                elif pending.fsync:  # (known once result() has returned)
                    self._pending.all_synced(conn)  # this add's fsync covered the whole log
            dup = plan.verdicts.duplicates
            conn.execute(
                "INSERT INTO batches VALUES (?, 'add', ?, ?, ?, ?, ?, ?)",
                (batch, t0, time.time(), n, n - dup, dup, note),
            )
            # the counts (counters.py): each new cluster is a story; a merged one is no more
            # (the texts' lengths are text_cols[2] when they were written: pending)
            counts = counters.moved(
                {k: self._meta(conn, k) for k in counters.NAMES},
                documents=n,
                text_bytes=sum(text_cols[2]) if pending is not None else 0,
                stories=len(ncl) - len(plan.merged),
                clusters=sum(1 for _, s_ in plan.cluster_rows.values() if s_ >= 2) - plan.old_multi,
            )
            gen = self._bump(
                conn,
                next_doc=int(plan.doc_nums[-1]) + 1 if n else None,
                next_cluster=plan.next_cluster,
                next_batch=batch + 1,
                **counts,
            )
            sw.lap("commit: other rows")
            conn.execute("COMMIT")
            sw.lap("commit: COMMIT")
            if pending is not None and n:
                self._pending.committed(pending.path, int(plan.doc_nums[-1]))
            self._advance_state(st, gen, seg, prow)
            self.last_stages = sw.times
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if seg_job is not None:
                seg_job.wait()  # never leave a thread writing a file nobody will list
                assert seg_name is not None  # (named with its job)
                try:
                    os.unlink(os.path.join(self.directory, seg_name))
                except OSError:
                    pass
            raise

    def _bump(self, conn, **vals) -> int:
        gen = int(self._meta(conn, "generation")) + 1
        sets = {"generation": str(gen), **{k: str(v) for k, v in vals.items() if v is not None}}
        # one statement for every key (an add sets four): each statement is a round trip
        whens = " ".join("WHEN ? THEN ?" for _ in sets)
        conn.execute(
            f"UPDATE meta SET value = CASE key {whens} END WHERE key IN ({','.join('?' * len(sets))})",
            [x for kv in sets.items() for x in kv] + list(sets),
        )
        return gen

    def _advance_state(self, st: State, gen: int, seg, prow) -> None:
        """After this process's own add: the next state without reloading from SQLite."""
        with self._state_lock:
            if self._state is not st or st.generation != gen - 1:
                self._state = None
                return
            if seg is not None:
                nst = State(gen, st.bands, st.segments + [(seg[0], seg[2], seg[3])], store.L0(), st.tombstones)
            else:
                for band, key, doc in prow:  # readers only .get() from this dict
                    st.l0.put(band, key & 0xFFFFFFFFFFFFFFFF, doc)
                nst = State(gen, st.bands, st.segments, st.l0, st.tombstones)
            self._state = nst
