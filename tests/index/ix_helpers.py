"""A small version of the guide's synthetic corpus, split into days, for the index tests.

Originals of `words` words drawn with Zipf-like frequencies from a made-up vocabulary; copies:
a third differing only in spacing and case, a third with light edits (1-8 words), a third with
heavy edits (30-60 words); plus "bridge" triples (two copies each ~6 edits from a later original,
below the threshold to each other) so that a later day merges two clusters.
"""

from __future__ import annotations

import json
import os

import numpy as np


def _vocab(rng, n=6000):
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = set()
    while len(words) < n:
        ln = int(rng.integers(2, 10))
        words.add("".join(rng.choice(letters, ln)))
    words = sorted(words)
    w = 1.0 / np.arange(1, n + 1) ** 1.05
    return words, w / w.sum()


def _edit(rng, toks, vocab, p, k):
    toks = list(toks)
    for pos in rng.choice(len(toks), size=k, replace=False):
        toks[pos] = vocab[int(rng.choice(len(vocab), p=p))]
    return toks


def synth(originals=400, copies=160, bridges=15, words=120, seed=0) -> list[dict]:
    rng = np.random.default_rng(seed)
    vocab, p = _vocab(rng)
    docs = []
    base = []
    t0 = 1_790_000_000
    for i in range(originals):
        toks = [vocab[j] for j in rng.choice(len(vocab), size=words, p=p)]
        base.append(toks)
        docs.append(
            {
                "id": f"o{i:05d}",
                "text": " ".join(toks),
                "published_at": t0 + int(rng.integers(0, 86400 * 4)),
                "source": f"site-{int(rng.integers(0, 12))}",
                "truth": f"o{i:05d}",
            }
        )
    for c in range(copies):
        o = int(rng.integers(0, originals))
        kind = c % 3
        toks = base[o]
        if kind == 0:
            text = "  ".join(t.upper() if rng.random() < 0.3 else t for t in toks)
        elif kind == 1:
            text = " ".join(_edit(rng, toks, vocab, p, int(rng.integers(1, 9))))
        else:
            text = " ".join(_edit(rng, toks, vocab, p, int(rng.integers(30, 61)) * words // 300))
        docs.append(
            {
                "id": f"c{c:05d}",
                "text": text,
                "published_at": t0 + int(rng.integers(0, 86400 * 4)),
                "source": ["agency", "site-a", "site-b"][int(rng.integers(0, 3))],
                "truth": f"o{o:05d}",
            }
        )
    for b in range(bridges):
        toks = [vocab[j] for j in rng.choice(len(vocab), size=words, p=p)]
        positions = rng.permutation(words)
        a_t, b_t = list(toks), list(toks)
        for pos in positions[:2]:
            a_t[pos] = "zz" + vocab[int(rng.integers(0, 500))]
        for pos in positions[2:4]:
            b_t[pos] = "qq" + vocab[int(rng.integers(0, 500))]
        docs.append({"id": f"bA{b:03d}", "text": " ".join(a_t), "published_at": t0 + 10, "source": "site-a"})
        docs.append({"id": f"bB{b:03d}", "text": " ".join(b_t), "published_at": t0 + 20, "source": "site-b"})
        docs.append(
            {"id": f"bX{b:03d}", "text": " ".join(toks), "published_at": t0 + 5, "source": "agency", "day": "last"}
        )
    return docs


def days(docs: list[dict], n_days: int = 4, seed: int = 1) -> list[list[dict]]:
    """Split into `n_days` batches in a random order; bridge centres come on the last day."""
    rng = np.random.default_rng(seed)
    last = [d for d in docs if d.get("day") == "last"]
    rest = [d for d in docs if d.get("day") != "last"]
    order = rng.permutation(len(rest))
    parts = [list(x) for x in np.array_split(np.array(rest, dtype=object)[order], n_days)]
    parts[-1] += last
    return parts


def uneven_batches(docs: list[dict], rng, lo: int, hi: int):
    """`docs` in consecutive batches of lo..hi documents: yields (batch, documents so far)."""
    s = 0
    while s < len(docs):
        n = rng.randint(lo, hi)
        yield docs[s : s + n], min(s + n, len(docs))
        s += n


def write_jsonl(path, rows) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return os.fspath(path)


def cluster_sets(rows) -> dict[frozenset, str]:
    """{frozenset(all member ids incl. keeper): keeper} from clusters.jsonl-style rows."""
    return {frozenset([r["keeper"]] + [m["id"] for m in r["members"]]): r["keeper"] for r in rows}


def member_sims(rows) -> dict[str, tuple[float, str]]:
    return {m["id"]: (round(m["similarity"], 5), m["match"]) for r in rows for m in r["members"]}


def chain_texts(seed: int) -> dict[str, str]:
    """a, b, c: three stories (each two edited regions of 6 words from the others: below the
    threshold); mbc joins b and c, mab joins a and b (one region from each): a chain that a
    removal splits."""
    import random

    rng = random.Random(seed)
    base = [f"w{rng.randrange(5000)}" for _ in range(120)]
    regions = [range(i * 30 + 3, i * 30 + 9) for i in range(3)]

    def edit(*which):
        t = list(base)
        for r, tag in which:
            for p in regions[r]:
                t[p] = tag + t[p]
        return " ".join(t)

    return {
        "a": edit((0, "x")),
        "b": edit((1, "y")),
        "c": edit((2, "z")),
        "mbc": edit((1, "y"), (2, "z")),
        "mab": edit((0, "x"), (1, "y")),
    }


def follow(ix, cluster: int) -> set:
    """The ids a reader of an old cluster number finds, following merged_into (as the web page
    does)."""
    for _ in range(10):
        r = ix.get_cluster(cluster)
        if r["merged_into"] is None:
            assert r["size"] == len(r["members"]) > 0
            return {m["id"] for m in r["members"]}
        cluster = r["merged_into"]
    raise AssertionError("merged_into goes round in a circle")
