"""`neardup eval`: the exact self-join and the metrics, each against a brute-force computation."""

import itertools
import json
import random

import numpy as np
import pytest

import neardup
from neardup.cli import main
from neardup.evaluate import evaluate, ground_truth
from neardup.evaluate.metrics import adjusted_rand_index, pairwise_scores
from neardup.stages.verify import HashSets, self_join, verify_exact


def random_families(seed, n_fam=40, vocab=300):
    rng = random.Random(seed)
    sets = []
    for _ in range(n_fam):
        base = {rng.randrange(vocab) for _ in range(rng.randrange(1, 40))}
        for _ in range(rng.randrange(1, 5)):
            s = set(base)
            for _ in range(rng.randrange(0, 5)):
                s.add(rng.randrange(vocab))
            if len(s) > 1 and rng.random() < 0.5:
                s.discard(rng.choice(sorted(s)))
            sets.append(s)
    sets += [set(), set()]
    rng.shuffle(sets)
    return sets


def brute_pairs(sets, t):
    out = []
    for i, j in itertools.combinations(range(len(sets)), 2):
        a, b = sets[i], sets[j]
        if a and b and len(a & b) / len(a | b) >= t:
            out.append((i, j, len(a & b) / len(a | b)))
    return out


@pytest.mark.parametrize("t", [0.2, 0.5, 0.8, 0.9, 1.0])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_self_join_equals_brute_force(seed, t):
    sets = random_families(seed)
    hs = HashSets([np.array(sorted(s), dtype=np.uint64) for s in sets])
    pairs, jac = self_join(hs, t)
    got = [(int(a), int(b), float(j)) for (a, b), j in zip(pairs, jac)]
    assert got == brute_pairs(sets, t)


def test_verify_exact_matches_python_sets():
    sets = random_families(9)
    hs = HashSets([np.array(sorted(s), dtype=np.uint64) for s in sets])
    pairs = np.array(list(itertools.combinations(range(len(sets)), 2)), dtype=np.uint32)
    jac = verify_exact(hs, pairs, "jaccard")
    con = verify_exact(hs, pairs, "containment")
    for (i, j), a, c in zip(pairs.tolist(), jac, con):
        x, y = sets[i], sets[j]
        assert a == (len(x & y) / len(x | y) if x | y else 0.0)
        assert c == (len(x & y) / min(len(x), len(y)) if x and y else 0.0)


def brute_pairwise(true, pred):
    tp = fp = fn = 0
    agree = 0
    n = len(true)
    for i, j in itertools.combinations(range(n), 2):
        t, p = true[i] == true[j], pred[i] == pred[j]
        tp += t and p
        fp += p and not t
        fn += t and not p
        agree += t == p
    return tp, fp, fn


def brute_ari(true, pred):
    # the textbook formula from the contingency table, with Python loops
    from math import comb

    n = len(true)
    cells = {}
    for t, p in zip(true, pred):
        cells[(t, p)] = cells.get((t, p), 0) + 1
    a, b = {}, {}
    for t, p in zip(true, pred):
        a[t] = a.get(t, 0) + 1
        b[p] = b.get(p, 0) + 1
    idx = sum(comb(v, 2) for v in cells.values())
    sa, sb = sum(comb(v, 2) for v in a.values()), sum(comb(v, 2) for v in b.values())
    exp = sa * sb / comb(n, 2)
    mx = (sa + sb) / 2
    return 1.0 if mx == exp else (idx - exp) / (mx - exp)


@pytest.mark.parametrize("seed", range(6))
def test_metrics_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 60
    true = rng.integers(0, 15, n)
    pred = np.where(rng.random(n) < 0.7, true, rng.integers(0, 30, n))
    tp, fp, fn = brute_pairwise(true.tolist(), pred.tolist())
    s = pairwise_scores(true, pred)
    assert s["precision"] == pytest.approx(tp / (tp + fp))
    assert s["recall"] == pytest.approx(tp / (tp + fn))
    assert s["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert adjusted_rand_index(true, pred) == pytest.approx(brute_ari(true.tolist(), pred.tolist()))
    assert adjusted_rand_index(true, true) == 1.0


def story(rng, n=120):
    return [f"w{rng.randrange(5000)}" for _ in range(n)]


def small_corpus(tmp_path, seed=0):
    """Originals with copies at known edit levels, written as JSONL."""
    rng = random.Random(seed)
    recs = []
    for i in range(40):
        words = story(rng)
        recs.append({"id": f"o{i}", "text": " ".join(words)})
        for c in range(rng.randrange(0, 4)):
            w = list(words)
            for _ in range(rng.choice([0, 1, 2, 4, 8, 15, 30])):
                w[rng.randrange(len(w))] = f"x{rng.randrange(10**6)}"
            recs.append({"id": f"o{i}c{c}", "text": " ".join(w)})
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path), recs


def test_ground_truth_equals_brute_force_on_texts(tmp_path):
    path, recs = small_corpus(tmp_path)
    sh = neardup.Shingler(k=5)
    sets = [set(sh.hashes(r["text"]).tolist()) for r in recs]
    for t in (0.5, 0.8):
        gt = ground_truth(path, t, fields=neardup.stages.options.DedupOptions().fields)
        got = [(int(a), int(b)) for a, b in gt.pairs]
        assert got == [(i, j) for i, j, _ in brute_pairs(sets, t)]


def test_eval_scores_a_run_against_brute_force(tmp_path, capsys):
    path, recs = small_corpus(tmp_path, seed=3)
    out = tmp_path / "run"
    # a deliberately weak index (2 bands of 64 rows) so that some true pairs are missed
    neardup.dedup(path, out, bands=2, rows=64, time_field=None)
    r = evaluate(path, str(out), png=None)
    sh = neardup.Shingler(k=5)
    sets = [set(sh.hashes(x["text"]).tolist()) for x in recs]
    truth = brute_pairs(sets, 0.8)
    clusters = [json.loads(line) for line in (out / "clusters.jsonl").read_text().splitlines()]
    label = {x["id"]: i for i, x in enumerate(recs)}
    for c in clusters:
        for m in [c["keeper"]] + [m["id"] for m in c["members"]]:
            label[m] = f"c{c['cluster']}"
    found = [label[recs[i]["id"]] == label[recs[j]["id"]] for i, j, _ in truth]
    assert r["true_pairs"] == len(truth)
    assert r["true_pairs_found"] == sum(found)
    assert r["pair_recall"] == pytest.approx(sum(found) / len(truth))
    assert r["pair_recall"] < 1.0  # the weak index did miss some
    assert r["pair_precision"] == 1.0  # verified pairs are all truly >= 0.8
    # the default index finds every true pair
    neardup.dedup(path, tmp_path / "good", time_field=None)
    assert main(["eval", path, str(tmp_path / "good"), "--png", "none"]) == 0
    text = capsys.readouterr().out
    assert "pair recall: 1.0000" in text and "pair precision: 1.0000" in text
    good = json.loads((tmp_path / "good" / "eval.json").read_text())
    assert good["pairwise_f1"] == pytest.approx(1.0) or good["pairwise_precision"] < 1.0
    assert good["adjusted_rand_index"] > 0.9


def test_eval_png(tmp_path):
    pytest.importorskip("matplotlib", reason="the histogram needs the plot extra (matplotlib)")
    path, _ = small_corpus(tmp_path, seed=5)
    neardup.dedup(path, tmp_path / "run", time_field=None)
    assert main(["eval", path, str(tmp_path / "run"), "--threshold", "0.5"]) == 0
    assert (tmp_path / "run" / "eval.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_refuses_what_it_cannot_score(tmp_path, capsys):
    # against another corpus than the run's it printed recall and precision 1.0 (the run's ids
    # were simply not found); user mistakes were tracebacks (exit 1)
    path, _ = small_corpus(tmp_path, seed=3)
    (tmp_path / "o").mkdir()
    other, _ = small_corpus(tmp_path / "o", seed=4)
    out = tmp_path / "run"
    neardup.dedup(path, out, time_field=None)
    assert main(["eval", other, str(out), "--png", "none"]) == 4
    assert "is not a run over this corpus" in capsys.readouterr().err
    assert main(["eval", str(out), path, "--png", "none"]) == 4  # swapped
    assert "give the corpus first" in capsys.readouterr().err
    for bad in ("0", "1.5", "nan", "-1"):
        assert main(["eval", path, str(out), "--threshold", bad, "--png", "none"]) == 2
    assert "threshold must be in (0, 1]" in capsys.readouterr().err
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "report.json").write_text('{"a": 1}')
    assert main(["eval", path, str(tmp_path / "junk"), "--png", "none"]) == 4
    assert "not the report of a neardup dedup run" in capsys.readouterr().err
    (tmp_path / "junk" / "report.json").write_text("{not json")
    assert main(["eval", path, str(tmp_path / "junk"), "--png", "none"]) == 4
    assert "cannot read it as JSON" in capsys.readouterr().err
