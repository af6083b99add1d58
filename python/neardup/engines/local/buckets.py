"""LSH buckets too large to list pair by pair (``DedupOptions.large_bucket``).

A bucket of m documents has m(m - 1)/2 candidate pairs: 5e9 for 100,000 copies of a short
text. The answer of a run is the connected components of the candidate pairs that pass
verification, so such a bucket is verified by a per-bucket union-find instead (the core's
``buckets::spanning_edges``, the scheme of the Spark engine's ``verify_buckets``): each member,
in input order, is checked only against earlier members it is not yet connected to — one
member of each other component until one passes — and only the edges that join two
components are kept. The components are exactly those of all the bucket's passing pairs
(the argument is in ``crates/neardup-core/src/buckets.rs``), so clusters and keepers are the
same as with every pair listed; ``pairs.jsonl`` holds the spanning edges of such buckets
instead of all their pairs, and the checks made are counted in the report.

Documents already connected by verified pairs of smaller buckets start connected (their
components seed the union-find), so a large bucket mostly costs one check per document.
The shingle sets of a large bucket's documents are held while it is verified (re-read once,
in input order); under ``--memory-limit`` the buckets are taken in groups whose sets fit, and a
single bucket whose sets do not fit stops the run with the size it needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from neardup import _core, _sets
from neardup.engines.local.memory import CLUSTER_BYTES_PER_DOC, MemoryBudget
from neardup.engines.local.reread import read_sets, set_bytes_estimate
from neardup.graph import connected_components
from neardup.io.readers import read_buffer_bytes
from neardup.stages.verify import HashSets

__all__ = ["LargeBuckets", "spanning_pairs"]


@dataclass
class LargeBuckets:
    """Buckets kept whole by the candidate stage: bucket k is ``members[offsets[k]:offsets[k+1]]``
    (document indices, ascending)."""

    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    members: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def spanning_pairs(
    lb: LargeBuckets,
    near: np.ndarray,
    n: int,
    sources,
    docs,
    signer,
    fields,
    limits,
    opts,
    mem: MemoryBudget,
    ntok: np.ndarray | None = None,
    sigs_of=None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Spanning edges (document pairs a < b) and their similarities for the large buckets,
    given the verified `near` pairs of the rest; with ``opts.settings.verify == "estimate"``,
    `sigs_of(docs)` gives the signature rows of documents instead of re-reading them."""
    info = {
        "buckets": len(lb),
        "documents": 0,
        "largest": int(lb.sizes().max()) if len(lb) else 0,
        "checks": 0,
        "spanning_edges": 0,
        "groups": 0,
        "documents_read": 0,
    }
    if len(lb) == 0:
        return np.zeros((0, 2), np.int64), np.zeros(0), info
    found_e: list[np.ndarray] = []
    found_s: list[np.ndarray] = []
    info["documents"] = int(len(_sets.unique(lb.members)))
    read_bytes = read_buffer_bytes(sources) if sigs_of is None else 0
    for ks in _groups(lb, ntok, opts, mem, n, read_bytes):
        info["groups"] += 1
        # components so far (verified pairs of small buckets and earlier groups' edges)
        so_far = np.concatenate([np.asarray(near, np.int64).reshape(-1, 2)] + found_e)
        labels = np.asarray(connected_components(n, so_far.astype(np.uint32)), dtype=np.uint32)
        del so_far
        offs = lb.offsets[ks[0] : ks[-1] + 2] - lb.offsets[ks[0]]
        mem_docs = lb.members[lb.offsets[ks[0]] : lb.offsets[ks[-1] + 1]]
        local_docs = _sets.unique(mem_docs)  # input order
        local = np.searchsorted(local_docs, mem_docs).astype(np.uint32)
        seed = labels[local_docs]
        del labels
        if sigs_of is not None:
            edges, sims, checks = _core._bucket_spanning_estimate(
                offs.astype(np.int64),
                local,
                seed,
                np.ascontiguousarray(sigs_of(local_docs), np.uint32),
                float(opts.settings.threshold),
            )
        else:
            sets, read = read_sets(sources, docs, local_docs, signer, fields, limits, opts)
            info["documents_read"] += read
            hs = HashSets(sets)
            del sets
            edges, sims, checks = _core._bucket_spanning_exact(
                offs.astype(np.int64),
                local,
                seed,
                hs.data,
                hs.offsets,
                opts.settings.measure,
                float(opts.settings.threshold),
            )
            del hs
        info["checks"] += int(checks)
        if len(edges):
            found_e.append(local_docs[edges.astype(np.int64)])
            found_s.append(np.asarray(sims))
    pairs = np.concatenate(found_e) if found_e else np.zeros((0, 2), np.int64)
    sims = np.concatenate(found_s) if found_s else np.zeros(0)
    info["spanning_edges"] = int(len(pairs))
    return pairs, sims, info


def _groups(
    lb: LargeBuckets, ntok: np.ndarray | None, opts, mem: MemoryBudget, n: int, read_bytes: int = 0
) -> list[list[int]]:
    """Consecutive runs of buckets whose documents' sets (held twice while they are joined into
    one array) fit in what the memory limit leaves, besides `read_bytes` that the input's
    reader holds while it re-reads them; one group when there is no limit."""
    k = len(lb)
    if not mem.limited or ntok is None:
        return [list(range(k))]
    per_doc = 2 * set_bytes_estimate(ntok, opts.settings.k) + 16  # the sets, and the local tables
    need = [int(per_doc[lb.members[lb.offsets[i] : lb.offsets[i + 1]]].sum()) for i in range(k)]
    # reserved: the clusters stage, and the components recomputed before each group (16 a document)
    share = mem.share(
        "large buckets",
        (CLUSTER_BYTES_PER_DOC + 16) * n,
        max(need) + read_bytes,
        "the shingle sets of its largest bucket and the input's read buffer",
    )
    assert share is not None  # (mem.limited)
    free = share - read_bytes
    groups: list[list[int]] = [[]]
    used = 0
    for i in range(k):
        if groups[-1] and used + need[i] > free:
            groups.append([])
            used = 0
        groups[-1].append(i)
        used += need[i]  # a document in two buckets of a group is counted twice: an upper bound
    return groups
