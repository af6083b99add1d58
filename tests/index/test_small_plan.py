"""The plan's steps for a few documents (lists and dicts, index/plan_steps.py, ``Steps.small_plan``) decide what
the batch forms (numpy) decide: the same verdicts, clusters, keepers, similarities and rows."""

import sqlite3

import numpy as np
import pytest

from neardup.index import Index, Steps

ROWS = (
    "SELECT doc, id, cluster, similarity, match, closest, closest_similarity FROM documents ORDER BY doc",
    "SELECT cluster, keeper, size, merged_into FROM clusters ORDER BY cluster",
    "SELECT a, b, similarity FROM pairs ORDER BY a, b",
)


def _groups(corpus, seed=3):
    """The corpus in a shuffled order (copies before their originals too), in groups of 1 to 16
    documents; some groups also hold an exact copy of their own first document, made here."""
    rng = np.random.default_rng(seed)
    docs = [corpus[i] for i in rng.permutation(len(corpus))]
    out, i, k = [], 0, 0
    sizes = (1, 2, 3, 16, 5, 1, 8, 4)
    while i < len(docs):
        g = [dict(d) for d in docs[i : i + sizes[k % len(sizes)]]]
        i += len(g)
        if k % 3 == 1:
            g.append({**g[0], "id": f"{g[0]['id']}-again", "text": g[0]["text"].upper()})
        out.append(g)
        k += 1
    return out


def _run(path, groups, small: int, monkeypatch, **settings):
    verdicts = []
    with Index.create(path, prefer_source=["agency"], steps=Steps(small_plan=small), **settings) as ix:
        for g in groups:
            verdicts.append([v.as_dict() for v in ix.add(g)])
        listed = list(ix.clusters())
    con = sqlite3.connect(path / "index.sqlite")
    rows = [con.execute(q).fetchall() for q in ROWS]
    con.close()
    return verdicts, listed, rows


@pytest.mark.parametrize(
    "settings",
    [{}, {"verify": "estimate"}, {"method": "simhash", "verify": "estimate"}],
    ids=["exact", "estimate", "simhash"],
)
def test_small_groups_plan_as_large_ones(tmp_path, corpus, monkeypatch, settings):
    groups = _groups(corpus)
    few = _run(tmp_path / "few", groups, Steps().small_plan, monkeypatch, **settings)
    batch = _run(tmp_path / "batch", groups, 0, monkeypatch, **settings)
    assert few[0] == batch[0]
    assert few[1] == batch[1]
    assert few[2] == batch[2]
    # the input covers the joins: the corpus's bridges merged MinHash clusters (SimHash's
    # distance does not reach across them), and some groups matched inside themselves
    if settings.get("method") != "simhash":
        assert any(r[3] is not None for r in few[2][1])
    assert any(v["closest"] == g[0]["id"] for vs, g in zip(few[0], groups) for v in vs[1:])
