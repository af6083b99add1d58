"""Real data: Reuters-21578 (../shared/data). Its reissued and corrected wire stories are found,
and `eval`'s exact ground truth agrees with the data README's measurement."""

import json
import os

import pytest

import neardup
from neardup.cli import main
from neardup.evaluate import evaluate

REUTERS = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "reuters21578.jsonl.gz")
)
if not os.path.exists(REUTERS):
    # in CI and in a developer's work tree, shared/ sits beside the repository
    REUTERS = os.path.normpath(os.path.join(os.getcwd(), "..", "shared", "data", "reuters21578.jsonl.gz"))

pytestmark = pytest.mark.skipif(
    not os.path.exists(REUTERS), reason="Reuters-21578 is not in ../shared/data beside this repository"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reuters")
    # one record has an empty text: skipped and listed; dates such as
    # "27-MAR-1987 00:02:59.13&#5;&#5;&#5;RM" cannot be read and count as missing
    res = neardup.dedup(REUTERS, out, time_field="date", on_error="skip")
    return out, res


def test_reuters_reissued_stories_found(run):
    out, res = run
    r = res.report
    assert r["documents"] == 21577 and r["skipped"] == 1
    assert r["skipped_records"][0]["reason"] == "text is empty"
    # the README measured about 506 pairs at J >= 0.8, 335 of them exact copies, the largest
    # cluster of 12: the same order of magnitude must come out here
    assert 300 <= r["exact_copies_removed"] <= 450
    assert 400 <= r["copies_removed"] <= 600
    assert max(c["size"] for c in res.clusters) >= 4
    # every reported pair is a verified >= 0.8 pair
    assert all(p["similarity"] >= 0.8 for p in res.pairs)
    # reissued stories: "BANKS EXPRESS GRAVE CONCERN ON BRAZIL DEBT MOVE(S)" ran at 17:55 and again,
    # edited, at 18:16; "MANILA SAID TO OFFER DEBT BONDS TO BANKS" ran on 1 and again on 2 March
    by_keeper = {c["keeper"]: {m["id"] for m in c["members"]} for c in res.clusters}
    assert "reuters-190" in by_keeper["reuters-175"]
    assert "reuters-347" in by_keeper["reuters-230"]
    kept = {k for k in res.kept}
    for c in res.clusters:
        assert c["keeper"] in kept
        assert all(m["id"] not in kept for m in c["members"])


def test_reuters_eval_against_exact_ground_truth(run, capsys):
    out, _ = run
    r = evaluate(REUTERS, str(out), png=None)
    assert 450 <= r["true_pairs"] <= 600  # README: "about 506 at J >= 0.8"
    assert r["pair_precision"] == 1.0
    assert r["pair_recall"] >= 0.98
    assert r["adjusted_rand_index"] >= 0.98
    # at J >= 0.5 (README: about 845 pairs) the same run finds the near-identical ones only
    low = evaluate(REUTERS, str(out), threshold=0.5, png=None, write=False)
    assert 750 <= low["true_pairs"] <= 950
    assert low["pair_recall"] < r["pair_recall"]
    assert main(["eval", REUTERS, str(out), "--png", "none"]) == 0
    assert "pair recall" in capsys.readouterr().out
    assert json.loads((out / "eval.json").read_text())["true_pairs"] == r["true_pairs"]
