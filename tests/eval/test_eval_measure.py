"""eval scores a run by the run's own measure (a --measure containment run against
containment, not Jaccard), its containment ground truth against brute force; an unreadable
pairs.jsonl is an unreadable input, not a traceback."""

import itertools
import json
import random

import numpy as np
import pytest

from neardup.cli import main
from neardup.evaluate import containment_join, evaluate
from neardup.stages.verify import HashSets

STORY = "the rain fell on the city all night long and the drains overflowed by morning while residents waited"
PAGE = (
    "breaking news from the capital " + STORY + " also read the weather forecast for the coming "
    "week and more stories from our partners across the region today"
)


def _sets(seed, n=60, vocab=80):
    rng = random.Random(seed)
    base = [{rng.randrange(vocab) for _ in range(rng.randrange(1, 25))} for _ in range(n // 3)]
    sets = []
    for b in base:
        sets.append(set(b))
        for _ in range(2):  # a part of it, or it with more
            s = (
                set(rng.sample(sorted(b), max(1, int(len(b) * rng.uniform(0.5, 1)))))
                if rng.random() < 0.5
                else b | {rng.randrange(vocab) for _ in range(rng.randrange(0, 30))}
            )
            sets.append(s)
    sets += [set()]
    rng.shuffle(sets)
    return sets


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("t", [0.5, 0.7, 0.8, 2 / 3, 1.0])
def test_containment_join_equals_brute_force(seed, t):
    sets = _sets(seed)
    hs = HashSets([np.array(sorted(s), dtype=np.uint64) for s in sets])
    pairs, sim = containment_join(hs, t)
    got = {(int(a), int(b)): float(c) for (a, b), c in zip(pairs, sim)}
    want = {}
    for i, j in itertools.combinations(range(len(sets)), 2):
        a, b = sets[i], sets[j]
        if a and b:
            c = len(a & b) / min(len(a), len(b))
            if c >= t:
                want[(i, j)] = c
    assert got.keys() == want.keys()
    assert all(abs(got[k] - want[k]) < 1e-12 for k in want)


def _containment_run(tmp_path):
    recs = [
        {"id": "story", "text": STORY},
        {"id": "page", "text": PAGE},
        {"id": "other", "text": "completely unrelated words about parliament and the minister of finance"},
    ]
    corpus = tmp_path / "cont.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "out"
    assert (
        main(["dedup", str(corpus), "-o", str(out), "-q", "--measure", "containment", "--bands", "128", "--rows", "1"])
        == 0
    )
    assert len((out / "pairs.jsonl").read_text().splitlines()) == 1
    return corpus, out


def test_a_containment_run_is_scored_by_containment(tmp_path, capsys):
    corpus, out = _containment_run(tmp_path)
    r = evaluate(str(corpus), str(out), write=False)
    assert r["measure"] == "containment"
    assert r["true_pairs"] == 1 and r["pair_recall"] == 1.0
    assert r["reported_pairs"] == 1 and r["pair_precision"] == 1.0
    assert r["reported_pairs_min_containment"] == 1.0
    assert r["adjusted_rand_index"] == 1.0 and r["pairwise_precision"] == 1.0
    assert main(["eval", str(corpus), str(out), "--png", "none"]) == 0
    printed = capsys.readouterr().out
    assert "exact containment >= 0.8" in printed and "pair precision: 1.0000" in printed
    assert json.loads((out / "eval.json").read_text())["measure"] == "containment"


def test_a_jaccard_run_still_reads_jaccard(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate([STORY, STORY + " now", PAGE]))
    )
    out = tmp_path / "out"
    assert main(["dedup", str(corpus), "-o", str(out), "-q"]) == 0
    r = evaluate(str(corpus), str(out), write=False)
    assert r["measure"] == "jaccard" and "recall_by_jaccard" in r and "reported_pairs_min_jaccard" in r
    assert r["true_pairs"] == 1 and r["pair_precision"] == 1.0  # (STORY and PAGE: Jaccard 0.3)


@pytest.mark.parametrize(
    "name,damage",
    [
        ("pairs.jsonl", lambda b: b[:20]),
        ("clusters.jsonl", lambda b: b[:25]),
        ("pairs.jsonl", lambda b: b"[1, 2]\n"),
        ("clusters.jsonl", lambda b: b'{"x": 1}\n'),
    ],
)
def test_a_damaged_output_file_is_an_unreadable_input(tmp_path, capsys, name, damage):
    corpus, out = _containment_run(tmp_path)
    p = out / name
    p.write_bytes(damage(p.read_bytes()))
    assert main(["eval", str(corpus), str(out), "--png", "none"]) == 4
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err
