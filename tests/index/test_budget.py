"""The budget on the pairs an add verifies and stores per document (index/budget.py): the
clusters stay neardup dedup's through adds and removals, and the stored pairs stay bounded."""

import sqlite3

import ix_helpers as h
import numpy as np
import pytest

import neardup
from neardup.index import Index, Steps, budget


def _stories(seed: int, stories: int = 10, most: int = 40, words: int = 120) -> list[dict]:
    """Stories of up to `most` articles, each a copy of a random earlier article of its story
    with a few words changed: chains whose ends may be below the threshold (a removal in the
    middle can really split them), and stories far larger than a budget of 2."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(4000)]
    docs = []
    for s in range(stories):
        members = [[vocab[j] for j in rng.integers(0, len(vocab), words)]]
        for _ in range(int(rng.integers(most // 2, most))):
            toks = list(members[int(rng.integers(0, len(members)))])
            for pos in rng.choice(words, size=int(rng.integers(0, 3)), replace=False):
                toks[pos] = vocab[int(rng.integers(0, len(vocab)))]
            members.append(toks)
        docs += [
            {
                "id": f"s{s:02d}-{i:03d}",
                "text": " ".join(t),
                "published_at": 1_790_000_000 + int(rng.integers(0, 10**6)),
            }
            for i, t in enumerate(members)
        ]
    docs += [
        {"id": f"u{i:03d}", "text": " ".join(vocab[j] for j in rng.integers(0, len(vocab), words))} for i in range(30)
    ]
    return [docs[i] for i in rng.permutation(len(docs))]


SETTINGS = {
    "minhash": ({}, {}),
    "minhash-estimate": ({"verify": "estimate"}, {"verify": "estimate"}),
    "simhash": ({"method": "simhash", "max_distance": 6}, {"method": "simhash", "max_distance": 6}),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_small_budget_keeps_dedups_clusters_through_adds_and_removes(tmp_path, monkeypatch, setting):
    """With a budget of 2 pairs and 2 candidates per round, every story is far over it: the
    clusters and similarities to the keeper must still be dedup's after every add and remove
    (removes of random articles split chains: the stored pairs alone would split them more)."""
    ix_kw, dd_kw = SETTINGS[setting]
    rng = np.random.default_rng(11)
    docs = _stories(5)
    with Index.create(tmp_path / "ix", steps=Steps(pairs_per_document=2, candidates_per_cluster=2), **ix_kw) as ix:
        added: list[dict] = []
        removed_yet = False
        for batch in np.array_split(np.arange(len(docs)), 5):
            part = [docs[i] for i in batch.tolist()]
            ix.add(part[: len(part) // 2])
            for d in part[len(part) // 2 :][:8]:  # a few one at a time (the plan for a few documents)
                ix.add([d])
            ix.add(part[len(part) // 2 :][8:])
            added += part
            ref = neardup.dedup(added, None, **dd_kw)
            rows = list(ix.clusters())
            assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
            assert h.member_sims(rows) == h.member_sims(ref.clusters)
            if not removed_yet:  # (a remove adds the pairs it verifies again: more than a budget)
                con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
                per_doc = con.execute("SELECT MAX(n) FROM (SELECT b, COUNT(*) AS n FROM pairs GROUP BY b)").fetchone()[
                    0
                ]
                con.close()
                assert per_doc <= 2 + 2  # the budget, and the forest's few (a document joining parts)
                removed_yet = True
            gone = sorted(added[i]["id"] for i in rng.choice(len(added), size=len(added) // 8, replace=False).tolist())
            ix.remove(gone)
            added = [d for d in added if d["id"] not in set(gone)]
            ref = neardup.dedup(added, None, **dd_kw)
            rows = list(ix.clusters())
            assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
            assert h.member_sims(rows) == h.member_sims(ref.clusters)
        assert max(len(c) for c in h.cluster_sets(rows)) > 10  # stories far over the budget


def test_a_batch_of_many_copies_stores_a_bounded_number_of_pairs(tmp_path):
    """1,000 copies of one story in one batch verified and stored ~500,000 pairs (its time grew
    with the square of its size: 3,000 copies took 81-134 s); now each stores at most the
    budget, and the story is whole."""
    rng = np.random.default_rng(3)
    base = [f"w{int(x)}" for x in rng.integers(0, 5000, 200)]
    recs = [{"id": f"p{i}", "text": " ".join(base) + f" tail{i}"} for i in range(1000)]
    with Index.create(tmp_path / "ix") as ix:
        vs = ix.add(recs)
        assert len({v.cluster for v in vs}) == 1 and vs[-1].similarity > 0.9
        # one more copy: it joins the story, verified against a round of candidates, not 1,000
        v = ix.add([{"id": "late", "text": " ".join(base) + " late"}])[0]
        assert v.status == "duplicate" and v.cluster == vs[0].cluster and v.similarity > 0.9
        assert ix.stats()["clusters"] == 1
    con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
    n_pairs = con.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]
    assert n_pairs <= 1001 * Steps().pairs_per_document
    assert (
        con.execute("SELECT COUNT(*) FROM pairs WHERE b = (SELECT doc FROM documents WHERE id = 'late')").fetchone()[0]
        <= Steps().pairs_per_document
    )


def test_kept_pairs_keep_the_components_of_all_pairs():
    """The pairs kept (a budget per document and a spanning forest) connect what all the pairs
    connect, on random graphs of batch documents, archive clusters and exact links."""
    rng = np.random.default_rng(0)
    for trial in range(30):
        n = int(rng.integers(2, 60))
        n_arch = int(rng.integers(0, 30))
        meta = {1000 + d: {"cluster": int(rng.integers(0, 6))} for d in range(n_arch)}
        m_a = int(rng.integers(0, 80)) if n_arch else 0
        ci = rng.integers(0, n, m_a)
        cd = 1000 + rng.integers(0, max(n_arch, 1), m_a)
        bp = np.sort(rng.integers(0, n, (int(rng.integers(0, 200)), 2)), axis=1)
        bp = np.unique(bp[bp[:, 0] < bp[:, 1]], axis=0).reshape(-1, 2)
        sa, sb = rng.random(len(ci)), rng.random(len(bp))
        arch_exact = np.full(n, -1)
        batch_exact = np.full(n, -1)
        if n_arch:
            for i in rng.choice(n, size=n // 6, replace=False):
                arch_exact[i] = 1000 + int(rng.integers(0, n_arch))
        ae = np.flatnonzero(arch_exact >= 0)
        be = np.zeros(0, np.int64)
        ka, kb = budget.kept_pairs(n, ci, cd, sa, bp, sb, ae, arch_exact, be, batch_exact, meta, per_document=1)

        def comps(mask_a, mask_b):
            # nodes: batch documents, then archive clusters (0..5)
            e = [(int(i), n + meta[int(d)]["cluster"]) for i, d in zip(ci[mask_a], cd[mask_a])]
            e += [tuple(map(int, p)) for p in bp[mask_b]]
            e += [(int(i), n + meta[int(arch_exact[i])]["cluster"]) for i in ae]
            lab = neardup.connected_components(n + 6, np.array(e, np.uint32).reshape(-1, 2))
            return lab.tolist()

        assert comps(ka, kb) == comps(np.ones(len(ci), bool), np.ones(len(bp), bool)), trial
        later = np.concatenate([ci[ka], bp[kb][:, 1]])
        assert len(later) <= len(ci) + len(bp)
