"""An add's plan: everything it decides before anything is written.

The dedup pipeline's stages run as "query before insert": exact pass (against the archive and
the earlier part of the batch), MinHash signatures, LSH band postings looked up in the archive
plus LSH pairs inside the batch, verification of every candidate (exact Jaccard on the stored
texts, or the signature estimate), union-find over the new edges and the clusters they touch
(join, merge or start), and the keeper rule re-decided for each touched cluster. The array
steps are in plan_steps.py; the commit that writes a plan in committing.py. A mixin of
:class:`~neardup.index.core.Index`.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neardup import _core
from neardup.errors import IndexCorruptError
from neardup.index import budget, store
from neardup.index.attrs import IndexAttrs
from neardup.index.intake import Signed, sign
from neardup.index.plan_steps import (
    best_pairs,
    best_pairs_few,
    concat_hits,
    first_in_archive,
    first_in_archive_few,
    first_in_batch,
    first_in_batch_few,
    group,
    group_few,
    join,
    join_few,
    nan_if_none,
    pair_rows,
    pair_rows_few,
    unique_pairs,
    unique_pairs_few,
)
from neardup.index.segment import Postings
from neardup.index.stages import Stages
from neardup.index.store import State, lookup
from neardup.index.verdicts import Verdicts
from neardup.io.records import Checked
from neardup.simhash import hamming
from neardup.stages.candidates import pairs_from_keys
from neardup.stages.keepers import pick_keepers, source_ranks
from neardup.stages.verify import HashSets, estimate_pairs, verify_exact

__all__ = ["Plan", "Planning", "parts_share_a_story"]


def _hits(ci_all: np.ndarray, cd_all: np.ndarray, ci: np.ndarray, cd: np.ndarray) -> np.ndarray:
    """How many bands each unique pair (ci, cd) shares: its count among (ci_all, cd_all), the
    lookups' hits (a pair once per band)."""
    u, counts = np.unique((ci_all.astype(np.uint64) << np.uint64(32)) | cd_all.astype(np.uint64), return_counts=True)
    return counts[np.searchsorted(u, (ci.astype(np.uint64) << np.uint64(32)) | cd.astype(np.uint64))]


@dataclass
class Plan:
    """Everything an add decides, before anything is written (``Planning._plan``); the commit
    (committing.py) writes it."""

    docs: list[Checked]
    extras: list[tuple[str | None, int | None]]  # per doc: (its other fields as JSON, its title's length)
    doc_nums: np.ndarray
    exact_keys: np.ndarray
    has_tok: np.ndarray
    sigs: np.ndarray  # rows for has_tok docs
    sig_row: np.ndarray  # per doc: row in sigs or -1
    band_keys: np.ndarray
    cluster_of: np.ndarray  # final cluster per batch doc
    singles: tuple[np.ndarray, np.ndarray]  # new clusters of one batch document: (cluster sorted, its doc)
    merged: dict[int, int]  # absorbed cluster -> target
    cluster_rows: dict[int, tuple[int, int]]  # every other affected cluster -> (keeper doc, size)
    first_new: int  # clusters from this number on are new
    member_updates: list[tuple[float, str | None, int, int]]  # (similarity, match, cluster, doc) for archive docs
    new_sim: np.ndarray
    new_match: list[str | None]
    closest: list[tuple[Any, float, str] | None]
    pairs: list[tuple[int, int, float]]
    verdicts: Verdicts
    next_cluster: int
    old_multi: int  # how many of the clusters this add grows or merges away had two or more members
    stages: Stages = field(default_factory=Stages)


def parts_share_a_story(plan: Plan, parts: list[int]) -> bool:
    """Whether documents of two of the batch's consecutive parts (their sizes) end in one story
    (``cluster_of`` is each document's cluster after the add, merges included): then a part's
    verdicts, which give its story's state at the end of the batch, would describe the other's
    articles too (``Index.add_checked``, `parts`)."""
    owner: dict[int, int] = {}
    pos = 0
    for k, size in enumerate(parts):
        for c in set(plan.cluster_of[pos : pos + size].tolist()):
            if owner.setdefault(c, k) != k:
                return True
        pos += size
    return False


def _empty() -> np.ndarray:
    return np.zeros(0, np.int64)


@dataclass
class _Work:
    """An add's plan in the making (``Planning._plan``): the batch, and the working arrays each
    step fills for the next, in the order of the steps."""

    conn: sqlite3.Connection
    docs: list[Checked]
    sw: Stages
    st: State
    small: bool  # a few documents: plan_steps' forms for a few
    # the batch signed: exact keys, which have tokens, signatures (rows for has_tok), band keys
    ek: np.ndarray
    has_tok: np.ndarray
    sigs: np.ndarray
    bk: np.ndarray
    tok_idx: np.ndarray  # the documents with tokens
    sig_row: np.ndarray  # per doc: row in sigs or -1
    few: list[tuple[list, _core.PostingArrays]]  # per band (exact keys first): Planning._few_handles
    # exact pass: per doc, its first copy in the archive, or earlier in the batch (else -1)
    arch_exact: np.ndarray = field(default_factory=_empty)
    batch_exact: np.ndarray = field(default_factory=_empty)
    reps: np.ndarray = field(default_factory=_empty)  # documents with tokens and no earlier copy
    # candidates: (batch document ci, archive document cd) pairs, and batch pairs bp
    ci: np.ndarray = field(default_factory=_empty)
    cd: np.ndarray = field(default_factory=_empty)
    ci_hits: np.ndarray = field(default_factory=_empty)  # each pair once per band it shares
    cd_hits: np.ndarray = field(default_factory=_empty)
    bp: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    meta: dict[int, dict] = field(default_factory=dict)  # archive documents involved
    # verification
    hcache: dict = field(default_factory=dict)  # shingle hash sets, shared with the similarities to keepers
    budgeted: bool = False
    sims_a: np.ndarray = field(default_factory=lambda: np.zeros(0))
    sims_b: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # union-find
    ae: np.ndarray = field(default_factory=_empty)  # documents with an archive copy
    be: np.ndarray = field(default_factory=_empty)  # documents with an earlier batch copy
    all_new: bool = False
    first_new: int = 0
    next_cluster: int = 0
    cluster_of: np.ndarray = field(default_factory=_empty)
    merged: dict[int, int] = field(default_factory=dict)
    # keepers
    next_doc: int = 0
    doc_nums: np.ndarray = field(default_factory=_empty)
    dn: list[int] = field(default_factory=list)
    singles: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (_empty(), _empty()))
    batch_by_cluster: dict[int, list[int]] = field(default_factory=dict)
    old_keeper: dict[int, int | None] = field(default_factory=dict)
    old_members: dict[int, list[dict]] = field(default_factory=dict)
    old_multi: int = 0
    absorbed: dict[int, list[int]] = field(default_factory=dict)
    cluster_rows: dict[int, tuple[int, int]] = field(
        default_factory=dict
    )  # clusters other than the singles: (keeper, size)
    member_updates: list[tuple[float, str | None, int, int]] = field(default_factory=list)
    new_sim: np.ndarray = field(default_factory=lambda: np.zeros(0))
    new_match: list[str | None] = field(default_factory=list)
    sim_jobs: list[tuple[str, int, str, int, int]] = field(
        default_factory=list
    )  # (kind, idx/doc, keeper kind, keeper idx/doc, ...)

    @property
    def n(self) -> int:
        return len(self.docs)

    def olds_of(self, c: int) -> list[dict]:
        """The archive members of cluster `c` and of the clusters merged into it."""
        return [m for cc in [c] + self.absorbed.get(c, []) for m in self.old_members.get(cc, [])]


class Planning(IndexAttrs):
    def _plan(
        self,
        conn: sqlite3.Connection,
        docs: list[Checked],
        extras: list,
        signed: Signed | None = None,
        ids_checked: bool = False,
    ) -> Plan:
        """Everything an add decides, before anything is written. `signed`: the batch's exact
        keys, signatures and band keys when the caller computed them (an add from files does,
        while reading, and checks the ids too); else they are computed here. `ids_checked`: the
        caller has checked the ids (unique, new to the index) under the writer lock it still
        holds (the service's GroupWriter, per request)."""
        sw = Stages()
        st = self._state_for(conn)
        if signed is None:
            signed = self._sign_batch(conn, docs, ids_checked, sw)
        w = self._start(conn, docs, signed, sw, st)
        self._exact_pass(w)
        self._candidates(w)
        sw.lap("plan: lookups, batch pairs")
        self._archive_meta(w)
        sw.lap("plan: archive metadata")
        self._verify_candidates(w)
        sw.lap("plan: verification: shingles, Jaccard")
        self._keep_passing(w)
        self._union(w)
        sw.lap("plan: union-find")
        self._group_batch(w)
        self._touched_clusters(w)
        self._keepers(w)
        sw.lap("plan: keepers")
        arch_rows = {m["doc"]: m for ms in w.old_members.values() for m in ms}
        self._keeper_sims(w, w.sim_jobs, arch_rows)
        sw.lap("plan: similarities to keepers")
        closest = self._closest(w)
        pairs = self._stored_pairs(w)
        verdicts = self._verdicts(w, closest)
        sw.lap("plan: closest, verdicts")
        self.last_stages = sw.times
        return Plan(
            docs,
            extras,
            w.doc_nums,
            w.ek,
            w.has_tok,
            w.sigs,
            w.sig_row,
            w.bk,
            w.cluster_of,
            w.singles,
            w.merged,
            w.cluster_rows,
            w.first_new,
            w.member_updates,
            w.new_sim,
            w.new_match,
            closest,
            pairs,
            verdicts,
            w.next_cluster,
            w.old_multi,
            sw,
        )

    def _sign_batch(self, conn: sqlite3.Connection, docs: list[Checked], ids_checked: bool, sw: Stages) -> Signed:
        """The ids checked (unique in the batch and new to the index) unless the caller did,
        and the batch signed: exact keys, signatures, band keys."""
        cfg = self.config
        if not ids_checked:
            # ids: unique in the batch and new to the index
            keys = [c.key for c in docs]
            twice = [] if len(set(keys)) == len(docs) else sorted({k for k, m in Counter(keys).items() if m > 1})
            self._raise_duplicate_ids(twice, self._present(conn, keys))
            sw.lap("plan: id checks")
        signed = sign([c.text for c in docs], self.signer, cfg.bands, cfg.rows, self.threads)
        sw.lap("plan: signatures, band keys")
        return signed

    def _start(self, conn: sqlite3.Connection, docs: list[Checked], signed: Signed, sw: Stages, st: State) -> _Work:
        """The plan's working state: the batch signed, each document's signature row, and the
        look-up handles of this snapshot's segments."""
        n = len(docs)
        tok_idx = np.flatnonzero(signed.has_tok)
        sig_row = np.full(n, -1, np.int64)
        sig_row[tok_idx] = np.arange(len(tok_idx))
        arrays = self._arrays(st)
        few = self._few_handles(st, arrays)  # cached per set of segments
        return _Work(
            conn,
            docs,
            sw,
            st,
            n <= self.steps.small_plan,
            signed.exact_keys,
            signed.has_tok,
            signed.sigs,
            signed.band_keys,
            tok_idx,
            sig_row,
            few,
        )

    def _exact_pass(self, w: _Work) -> None:
        """Each document's first copy in the archive, else earlier in the batch; the
        representatives (documents with tokens and neither) are the ones looked up by band."""
        st, few, ek, tok_idx, n = w.st, w.few, w.ek, w.tok_idx, w.n
        qi, adocs = concat_hits(
            lookup(few[0][0], ek[tok_idx], st.tombstones, few[0][1]), st.l0.lookup(-1, ek[tok_idx], st.tombstones)
        )
        w.arch_exact = arch_exact = (first_in_archive_few if w.small else first_in_archive)(qi, adocs, tok_idx, n)
        rest = tok_idx[arch_exact[tok_idx] < 0]
        w.batch_exact = batch_exact = (first_in_batch_few if w.small else first_in_batch)(ek, rest, n)
        w.reps = tok_idx[(arch_exact[tok_idx] < 0) & (batch_exact[tok_idx] < 0)]

    def _candidates(self, w: _Work) -> None:
        """Archive postings for each representative (ci, cd), LSH pairs inside the batch (bp)."""
        cfg = self.config
        st, few, reps = w.st, w.few, w.reps
        rep_rows = w.sig_row[reps]
        rep_keys = np.ascontiguousarray(w.bk[rep_rows].T)  # band j's keys: row j
        if 0 < len(reps) <= store.SMALL_QUERY:  # a few articles (the service's): every band at once
            q_, cd = store.lookup_bands([h for _, h in few[1:]], rep_keys, st.tombstones, st.l0)
            ci = reps[q_]
        else:
            ca_i, ca_d = [], []
            for j in range(cfg.bands):
                q = rep_keys[j]
                q_, d = concat_hits(
                    lookup(few[j + 1][0], q, st.tombstones, few[j + 1][1]), st.l0.lookup(j, q, st.tombstones)
                )
                if len(q_):  # (most bands of a single new article have no hit)
                    ca_i.append(reps[q_])
                    ca_d.append(d)
            ci = np.concatenate(ca_i) if ca_i else np.zeros(0, np.int64)
            cd = np.concatenate(ca_d) if ca_d else np.zeros(0, np.int64)
        w.ci_hits, w.cd_hits = ci, cd  # each pair once per band it shares (budget.archive_rounds)
        if len(ci):  # each (batch document, archive document) once, in that order
            ci, cd = (unique_pairs_few if w.small else unique_pairs)(ci, cd)
        w.ci, w.cd = ci, cd
        if len(reps) > 1:
            bp = pairs_from_keys(np.ascontiguousarray(w.bk[rep_rows])).astype(np.int64)
            w.bp = reps[bp] if len(bp) else np.zeros((0, 2), np.int64)
        else:
            w.bp = np.zeros((0, 2), np.int64)

    def _archive_meta(self, w: _Work) -> None:
        """The archive documents involved (candidates and exact targets): their metadata in this
        snapshot; those removed since the postings were read dropped; SimHash candidates
        checked on the whole fingerprints."""
        cfg = self.config
        arch_exact = w.arch_exact
        arch_docs = sorted(set(w.cd.tolist()).union(arch_exact[arch_exact >= 0].tolist()))
        w.meta = meta = self._doc_meta(w.conn, arch_docs)
        alive = np.array([d in meta for d in w.cd.tolist()], dtype=bool) if len(w.cd) else np.zeros(0, bool)
        w.ci, w.cd = w.ci[alive], w.cd[alive]
        for i in np.flatnonzero(arch_exact >= 0).tolist():
            if int(arch_exact[i]) not in meta:  # removed since the postings were read
                arch_exact[i] = -1

        if cfg.settings.method == "simhash":
            # a candidate shares a block; it is one when the whole fingerprints are within
            # max_distance bits (as neardup dedup's SimHash tables)
            sigs, sig_row, ci, cd = w.sigs, w.sig_row, w.ci, w.cd
            fa = self._sigs_of(w.conn, cd.tolist(), meta)
            far = np.array([fa[d][0] for d in cd.tolist()], np.uint64)
            ok = hamming(sigs[sig_row[ci], 0], far) <= cfg.settings.max_distance
            w.ci, w.cd = ci[ok], cd[ok]
            bp = w.bp
            ok = hamming(sigs[sig_row[bp[:, 0]], 0], sigs[sig_row[bp[:, 1]], 0]) <= cfg.settings.max_distance
            w.bp = bp[ok]

    def _verify_candidates(self, w: _Work) -> None:
        """The similarity of every candidate pair (the pipeline's kernels): sims_a of (ci, cd),
        sims_b of bp; a story larger than a round verified in rounds (budget.py)."""
        bar = self.config.pass_bar
        w.budgeted = budgeted = self.config.store_text  # (a removal verifies again from the texts: budget.py)
        ci, cd = w.ci, w.cd
        groups = budget.rounds_needed(ci, cd, w.meta, self.steps.candidates_per_cluster) if budgeted else None
        if groups is not None:
            # a story larger than a round: its candidates verified in rounds, by cluster
            no_pairs = np.zeros((0, 2), np.int64)
            w.ci, w.cd, w.sims_a = budget.archive_rounds(
                ci,
                cd,
                _hits(w.ci_hits, w.cd_hits, ci, cd),
                groups,
                lambda i_, d_: self._verify(w, i_, d_, no_pairs)[0],
                bar,
                self.steps.candidates_per_cluster,
            )
            w.sims_b = self._verify(w, w.ci[:0], w.cd[:0], w.bp)[1]
        else:
            w.sims_a, w.sims_b = self._verify(w, ci, cd, w.bp, w.sw)

    def _keep_passing(self, w: _Work) -> None:
        """The candidate pairs that pass the bar."""
        bar = self.config.pass_bar
        ok_a = w.sims_a >= bar
        ok_b = w.sims_b >= bar
        w.ci, w.cd, w.sims_a = w.ci[ok_a], w.cd[ok_a], w.sims_a[ok_a]
        w.bp, w.sims_b = w.bp[ok_b], w.sims_b[ok_b]

    def _union(self, w: _Work) -> None:
        """Union-find over the new edges and the clusters they touch: each batch document's
        cluster (cluster_of), the clusters merged away, the next free cluster number."""
        w.ae = ae = np.flatnonzero(w.arch_exact >= 0)
        w.be = be = np.flatnonzero(w.batch_exact >= 0)
        n = w.n
        if not (len(ae) or len(be) or len(w.ci) or len(w.bp)):
            # nothing joins anything (new stories only: most of the service's single articles):
            # each document starts a cluster of its own, numbered in batch order, which is what
            # the general path below gives, without its two dozen array calls
            w.first_new = next_cluster = int(self._meta(w.conn, "next_cluster"))
            w.merged = {}
            w.cluster_of = next_cluster + np.arange(n, dtype=np.int64)
            w.next_cluster = next_cluster + n
            w.all_new = True
        else:
            w.all_new = False
            w.first_new = next_cluster = int(self._meta(w.conn, "next_cluster"))
            w.cluster_of, w.merged, w.next_cluster = (join_few if w.small else join)(
                n, w.meta, ae, w.arch_exact, be, w.batch_exact, w.ci, w.cd, w.bp, next_cluster
            )

    def _group_batch(self, w: _Work) -> None:
        """The batch's document numbers, and its documents by cluster: the singles (new
        clusters of one batch document) apart."""
        w.next_doc = next_doc = int(self._meta(w.conn, "next_doc"))
        w.doc_nums = doc_nums = np.arange(next_doc, next_doc + w.n, dtype=np.int64)
        w.dn = doc_nums.tolist()
        if w.all_new:  # every document a new cluster of its own: all singles (cluster_of is sorted)
            w.singles = (w.cluster_of, doc_nums)
            w.batch_by_cluster = {}
        else:
            w.singles, w.batch_by_cluster = (group_few if w.small else group)(w.cluster_of, doc_nums, w.first_new)

    def _touched_clusters(self, w: _Work) -> None:
        """The archive members of the touched clusters (each joined by a batch document or
        merged) and their keepers; which clusters were merged into which."""
        multi_cl = sorted(w.batch_by_cluster)
        # the clusters asked for are the touched ones (each joined by a batch document or merged)
        w.old_keeper = {}
        touched = [c for c in multi_cl if c < w.first_new] + list(w.merged)
        w.old_members = self._cluster_members(w.conn, touched, w.old_keeper)
        w.old_multi = sum(1 for c in set(touched) if len(w.old_members.get(c, ())) >= 2)  # (counters.py)
        w.cluster_rows = {}
        w.member_updates = []
        w.new_sim = np.ones(w.n)
        w.new_match = [None] * w.n
        w.sim_jobs = []
        w.absorbed = {}
        for o_, t in w.merged.items():
            w.absorbed.setdefault(t, []).append(o_)

    def _keepers(self, w: _Work) -> None:
        """The keeper of every cluster with more than one member, re-decided, its row
        (cluster_rows), and the similarities to it that are due: 1.0 for the keeper itself, a
        job (sim_jobs) for each other new member and each archive member whose keeper changed
        or that moved."""
        multi = [(c, w.olds_of(c), w.batch_by_cluster[c]) for c in sorted(w.batch_by_cluster)]
        keeper_of_multi = self._pick_keepers_of(w, multi)
        dn = w.dn
        for k, (c, olds, news) in enumerate(multi):
            keeper_doc = keeper_of_multi[k]
            w.cluster_rows[c] = (keeper_doc, len(olds) + len(news))
            keeper_changed = w.old_keeper.get(c) != keeper_doc
            for mm in olds:
                if mm["doc"] == keeper_doc:
                    if mm["match"] is not None or mm["cluster"] != c:
                        w.member_updates.append((1.0, None, c, mm["doc"]))
                elif keeper_changed or mm["cluster"] != c:
                    w.sim_jobs.append(("a", mm["doc"], "k", keeper_doc, c))
            for i in news:
                if dn[i] == keeper_doc:
                    w.new_sim[i], w.new_match[i] = 1.0, None
                else:
                    w.sim_jobs.append(("b", i, "k", keeper_doc, c))

    def _pick_keepers_of(self, w: _Work, multi: list[tuple[int, list[dict], list[int]]]) -> list[int]:
        """The pipeline's keeper rule, vectorised over every cluster of `multi` (cluster, its
        archive members, its batch documents): each one's keeper document."""
        if not multi:
            return []
        docs, dn = w.docs, w.dn
        ent_lab, ent_id, ent_t, ent_src, ent_doc = [], [], [], [], []
        for k, (_, olds, news) in enumerate(multi):
            for m in olds:
                ent_lab.append(k)
                ent_id.append(m["id"])
                ent_t.append(nan_if_none(m["published_at"]))
                ent_src.append(m["source"])
                ent_doc.append(m["doc"])
            for i in news:
                ent_lab.append(k)
                ent_id.append(docs[i].key)
                ent_t.append(docs[i].time)
                ent_src.append(docs[i].source)
                ent_doc.append(dn[i])
        e_ = len(ent_lab)
        id_rank = np.empty(e_, np.int64)
        id_rank[np.argsort(np.array(ent_id, dtype=str), kind="stable")] = np.arange(e_)
        ordered, starts = pick_keepers(
            np.array(ent_lab, np.int64),
            np.arange(e_),
            np.array(ent_t, np.float64),
            source_ranks(ent_src, self.config.settings.prefer_source),
            id_rank,
        )
        return [ent_doc[int(ordered[s0])] for s0 in starts.tolist()]

    def _closest(self, w: _Work) -> list[tuple[Any, float, str] | None]:
        """The closest earlier document of each batch document: an exact match, else the most
        similar verified pair (the first of equals: archive pairs by document, then batch pairs)."""
        docs, meta, arch_exact, batch_exact, ci, cd, bp = w.docs, w.meta, w.arch_exact, w.batch_exact, w.ci, w.cd, w.bp
        closest: list[tuple[Any, float, str] | None] = [None] * w.n
        for i in w.ae.tolist():
            closest[i] = (meta[int(arch_exact[i])]["id_value"], 1.0, "exact")
        for i, a in zip(w.be.tolist(), batch_exact[w.be].tolist()):
            closest[i] = (docs[a].id, 1.0, "exact")
        tgt = np.concatenate([ci, bp[:, 1]])
        if len(tgt):
            sims_all = np.concatenate([w.sims_a, w.sims_b])
            na = len(ci)
            for p_ in (best_pairs_few if w.small else best_pairs)(tgt, sims_all):
                i = int(tgt[p_])
                if closest[i] is None:
                    ident = meta[int(cd[p_])]["id_value"] if p_ < na else docs[int(bp[p_ - na, 0])].id
                    closest[i] = (ident, float(sims_all[p_]), "near")
        return closest

    def _stored_pairs(self, w: _Work) -> list[tuple[int, int, float]]:
        """The verified pairs stored, as (document, document, similarity): with texts kept, a
        budget per document and a forest that keeps the clusters (budget.kept_pairs)."""
        ci, cd, sims_a, bp, sims_b, doc_nums = w.ci, w.cd, w.sims_a, w.bp, w.sims_b, w.doc_nums
        if w.budgeted:  # the pairs stored: a budget per document, and a forest that keeps the clusters
            ka, kb = budget.kept_pairs(
                w.n,
                ci,
                cd,
                sims_a,
                bp,
                sims_b,
                w.ae,
                w.arch_exact,
                w.be,
                w.batch_exact,
                w.meta,
                self.steps.pairs_per_document,
            )
            ci_s, cd_s, sa_s, bp_s, sb_s = ci[ka], cd[ka], sims_a[ka], bp[kb], sims_b[kb]
        else:
            ci_s, cd_s, sa_s, bp_s, sb_s = ci, cd, sims_a, bp, sims_b
        pairs = [(int(d), int(doc_nums[i]), float(s)) for i, d, s in zip(ci_s.tolist(), cd_s.tolist(), sa_s.tolist())]
        pairs += [(int(doc_nums[a]), int(doc_nums[b]), float(s)) for (a, b), s in zip(bp_s.tolist(), sb_s.tolist())]
        return pairs

    @staticmethod
    def _verdicts(w: _Work, closest: list[tuple[Any, float, str] | None]) -> Verdicts:
        """The batch's verdicts, built when asked for (an add from the CLI only counts them).
        Their closures hold what they read, not the plan's working state (its hash sets)."""
        docs, cluster_rows, singles, next_doc, dn = w.docs, w.cluster_rows, w.singles, w.next_doc, w.dn
        absorbed, old_members, batch_by_cluster = w.absorbed, w.old_members, w.batch_by_cluster

        def keeper_doc_of(c: int) -> int:
            r = cluster_rows.get(c)
            if r is not None:
                return r[0]
            return int(singles[1][np.searchsorted(singles[0], c)])  # singles[0] is sorted

        def alternates_of(c: int) -> tuple[Any, list]:
            if c not in cluster_rows:  # a single: its own keeper
                return docs[keeper_doc_of(c) - next_doc].id, []
            kdoc = cluster_rows[c][0]
            olds = [m for cc in [c] + absorbed.get(c, []) for m in old_members.get(cc, [])]
            members = [(m["doc"], m["id_value"]) for m in olds] + [
                (dn[i], docs[i].id) for i in batch_by_cluster.get(c, [])
            ]
            kid = next(v for d, v in members if d == kdoc)
            return kid, [v for d, v in members if d != kdoc]

        return Verdicts(docs, w.cluster_of, keeper_doc_of, w.doc_nums, closest, alternates_of)

    def _few_handles(self, st: State, arrays: list[Postings]) -> list[tuple[list, _core.PostingArrays]]:
        """Per band (exact keys first), the segments' arrays, and the same held by the Rust core
        for look-ups of a few keys (store.lookup's small path), made once per set of segments."""
        key = tuple(s[0] for s in st.segments)
        held = self._few
        if held is None or held[0] != key:
            # empty arrays (a segment without postings of a band) answer nothing: left out
            parts = [[p.exact for p in arrays if len(p.exact[0])]] + [
                [p.bands[j] for p in arrays if len(p.bands[j][0])] for j in range(self.config.bands)
            ]
            held = (key, [(ps, _core.PostingArrays([k for k, _ in ps], [d for _, d in ps])) for ps in parts])
            self._few = held  # one assignment: readers in other threads see the old or the new
        return held[1]

    def _doc_meta(self, conn, doc_list: list[int]) -> dict[int, dict]:
        out: dict[int, dict] = {}
        for s in range(0, len(doc_list), 30000):
            chunk = doc_list[s : s + 30000]
            q = (
                f"SELECT doc, id, id_int, cluster, text_file, text_offset, text_length, text_crc, signature "
                f"FROM documents WHERE doc IN ({','.join('?' * len(chunk))})"
            )
            for r in conn.execute(q, chunk):
                out[r[0]] = {
                    "doc": r[0],
                    "id": r[1],
                    "id_value": int(r[1]) if r[2] else r[1],
                    "cluster": r[3],
                    "text": r[4:8],
                    "signature": r[8],
                }
        return out

    def _cluster_members(
        self, conn, clusters: list[int], keepers: dict[int, int | None] | None = None
    ) -> dict[int, list[dict]]:
        """The members of these clusters, with where their texts are (``_texts_of`` then needs
        no query of its own); `keepers`, when given, gets each cluster's keeper from the same
        statement."""
        out: dict[int, list[dict]] = {}
        for s in range(0, len(clusters), 30000):
            chunk = clusters[s : s + 30000]
            q = (
                f"SELECT d.doc, d.id, d.id_int, d.published_at, d.source, d.exact_key, d.cluster, d.similarity, "
                f"d.match, d.text_file, d.text_offset, d.text_length, d.text_crc, c.keeper FROM documents d "
                f"LEFT JOIN clusters c ON c.cluster = d.cluster WHERE d.cluster IN ({','.join('?' * len(chunk))})"
            )
            for r in conn.execute(q, chunk):
                out.setdefault(r[6], []).append(
                    {
                        "doc": r[0],
                        "id": r[1],
                        "id_value": int(r[1]) if r[2] else r[1],
                        "published_at": r[3],
                        "source": r[4],
                        "exact_key": r[5],
                        "cluster": r[6],
                        "similarity": r[7],
                        "match": r[8],
                        "text": r[9:13],
                    }
                )
                if keepers is not None:
                    keepers[r[6]] = r[13]
        return out

    def _sigs_of(self, conn, doc_list: list[int], meta: dict[int, dict] | None = None) -> dict[int, np.ndarray]:
        rows = dict(meta or {})
        need = [d for d in doc_list if d not in rows]
        if need:
            rows.update(self._doc_meta(conn, need))
        out = {}
        for d in doc_list:
            blob = rows[d]["signature"]
            if blob is None or len(blob) != self._sig_dtype.itemsize * self._sig_width:
                raise IndexCorruptError(f"the signature of {rows[d]['id']!r} is missing or damaged")
            out[d] = np.frombuffer(blob, dtype=self._sig_dtype).astype(
                np.uint64 if self.config.settings.method == "simhash" else np.uint32
            )
        return out

    @property
    def _sig_dtype(self) -> np.dtype:
        if self.config.settings.method == "simhash":
            return np.dtype("<u8")
        return np.dtype("<u2") if self.config.signature_bits == 16 else np.dtype("<u4")

    @property
    def _sig_width(self) -> int:
        """Values per stored signature: num_perm MinHash values, or one SimHash fingerprint."""
        return 1 if self.config.settings.method == "simhash" else self.config.settings.num_perm

    @property
    def _stores_sigs(self) -> bool:
        """Signatures are kept for estimates, and SimHash fingerprints always (the candidates'
        distance check needs the archive's fingerprints: 8 bytes an article)."""
        return self.config.settings.verify == "estimate" or self.config.settings.method == "simhash"

    def _estimate(self, mat: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """The signature estimate of each pair of rows of `mat`: MinHash's share of equal values,
        SimHash's 1 - distance / 64 (as ``neardup dedup``)."""
        if self.config.settings.method == "simhash":
            pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
            return 1.0 - hamming(mat[pairs[:, 0], 0], mat[pairs[:, 1], 0]) / 64.0
        return estimate_pairs(mat, pairs)

    def _as_stored(self, sigs: np.ndarray) -> np.ndarray:
        """Signatures as the index keeps them (b-bit: the low 16 bits), so that a new document's
        estimate against the archive or the batch is the same whichever add brought it."""
        return (
            sigs & np.uint32(0xFFFF)
            if self.config.signature_bits == 16 and self.config.settings.method == "minhash"
            else sigs
        )

    def _hash_sets(
        self, conn, docs, want: list[tuple[str, int]], meta, cache: dict, sw: Stages | None = None
    ) -> list[np.ndarray]:
        """Shingle hash sets of ("b", batch index) and ("a", archive document) items, each
        computed once per add: verification and the similarities to keepers share them."""
        miss = [w for w in want if w not in cache]
        if miss:
            arch = [d for kind, d in miss if kind == "a"]
            at = self._texts_of(conn, arch, meta) if arch else {}
            if sw is not None:
                sw.lap("plan: verification: archive texts read")
            hs = self.signer.hashes([docs[x].text if kind == "b" else at[x] for kind, x in miss])
            cache.update(zip(miss, hs))
        return [cache[w] for w in want]

    def _verify(
        self, w: _Work, ci: np.ndarray, cd: np.ndarray, bp: np.ndarray, sw: Stages | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Similarity of each (batch, archive) and (batch, batch) candidate pair."""
        if len(ci) == 0 and len(bp) == 0:
            return np.zeros(0), np.zeros(0)
        batch_need, bl, al, allp = (pair_rows_few if len(w.docs) <= self.steps.small_plan else pair_rows)(ci, cd, bp)
        na = len(ci)
        if self.config.settings.verify == "exact":
            hs = self._hash_sets(w.conn, w.docs, [("b", i) for i in bl] + [("a", d) for d in al], w.meta, w.hcache, sw)
            sims = verify_exact(HashSets(hs), allp, self.config.settings.measure, self.threads)
        else:
            asg = self._sigs_of(w.conn, al, w.meta)
            mat = np.concatenate(
                [self._as_stored(w.sigs[w.sig_row[batch_need]])] + ([np.stack([asg[d] for d in al])] if al else [])
            )
            sims = self._estimate(mat, allp)
        sims = np.asarray(sims, dtype=np.float64)
        return sims[:na], sims[na:]

    def _keeper_sims(self, w: _Work, jobs: list[tuple[str, int, str, int, int]], arch_rows: dict[int, dict]) -> None:
        """Similarity of members to their keeper (1.0 'exact' for the same normalised text),
        into w's member_updates, new_sim, new_match. `arch_rows`: every archive member of an
        affected cluster (``_cluster_members``)."""
        if not jobs:
            return
        doc_nums = w.doc_nums
        dn0, n = (int(doc_nums[0]), len(doc_nums)) if len(doc_nums) else (0, 0)
        ekl = w.ek.tolist()

        def ekey(d: int) -> int:
            m = arch_rows.get(d)
            return ekl[d - dn0] if dn0 <= d < dn0 + n else (m["exact_key"] & 0xFFFFFFFFFFFFFFFF if m else 0)

        need_pairs = []
        for job in jobs:
            kind, x, _, kdoc, c = job
            d = x if kind == "a" else dn0 + x
            k = ekey(d)
            if k != 0 and k == ekey(kdoc):
                self._set_sim(job, 1.0, "exact", w)
            else:
                need_pairs.append((job, d, kdoc))
        if not need_pairs:
            return
        ds = sorted({d for _, d, k in need_pairs} | {k for _, d, k in need_pairs})
        pos = {d: i for i, d in enumerate(ds)}
        pr = np.array([[pos[d], pos[k]] for _, d, k in need_pairs], np.int64)
        item = [("b", d - dn0) if dn0 <= d < dn0 + n else ("a", d) for d in ds]
        if self.config.settings.verify == "exact":
            sims = verify_exact(
                HashSets(self._hash_sets(w.conn, w.docs, item, arch_rows, w.hcache)),
                pr,
                self.config.settings.measure,
                self.threads,
            )
        else:
            asg = self._sigs_of(w.conn, [x for kind, x in item if kind == "a"])
            mat = np.stack([self._as_stored(w.sigs[w.sig_row[x]]) if kind == "b" else asg[x] for kind, x in item])
            sims = self._estimate(mat, pr)
        for (job, _, _), s in zip(need_pairs, np.asarray(sims).tolist()):
            self._set_sim(job, float(s), "near", w)

    @staticmethod
    def _set_sim(job: tuple[str, int, str, int, int], s: float, match: str, w: _Work) -> None:
        kind, x, _, _, c = job
        if kind == "a":
            w.member_updates.append((round(s, 6), match, c, x))
        else:
            w.new_sim[x], w.new_match[x] = round(s, 6), match
