"""--method simhash on Spark: the local engine's candidates (every pair within max_distance
bits, found by block tables), its verification, clusters and keepers."""

import json
import os

import pytest
from parity import assert_same, canon_clusters
from spark_corpus import REUTERS, make_corpus, synth_parquet, write_jsonl

import neardup


@pytest.fixture(scope="module")
def synth_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth-simhash")
    return write_jsonl(d / "synth.jsonl", make_corpus())


def test_simhash_exact_verification_same_answer(spark, synth_file, tmp_path):
    from neardup.engines.spark import dedup_spark, read_outputs

    # 13 blocks of ~5 bits: buckets of ~20 fingerprints, so the per-bucket union-find runs on
    # buckets of many members; threshold 0.5: some candidates fail verification
    kw = dict(method="simhash", k=3, max_distance=12, threshold=0.5, prefer_source=["agency"])
    local = neardup.dedup(synth_file, tmp_path / "local", **kw)
    sp = dedup_spark(spark, synth_file, tmp_path / "spark", collect=True, **kw)
    lr = local.report
    assert lr["near_copies_removed"] >= 40 and lr["near_pairs"] < lr["candidates"]
    assert_same(local, sp)
    assert sp.report["near_pairs"] <= lr["near_pairs"]
    back = read_outputs(str(tmp_path / "spark"))
    assert canon_clusters(back.clusters) == canon_clusters(sp.clusters)
    kdir = tmp_path / "spark" / "kept.jsonl"
    kept = [x for n in sorted(os.listdir(kdir)) if n.startswith("part-") for x in (kdir / n).read_text().splitlines()]
    assert kept == (tmp_path / "local" / "kept.jsonl").read_text().splitlines()


def test_simhash_estimate_parquet_same_answer(spark, synth_file, tmp_path):
    from neardup.engines.spark import dedup_spark

    path = synth_parquet(synth_file, tmp_path)
    # estimate: every candidate within the distance is a near copy, similarity 1 - d / 64
    kw = dict(method="simhash", k=3, max_distance=8, verify="estimate")
    local = neardup.dedup(path, None, **kw)
    sp = dedup_spark(spark, path, None, collect=True, **kw)
    assert local.report["near_pairs"] == local.report["candidates"] >= 20
    assert_same(local, sp)


@pytest.mark.skipif(not os.path.exists(REUTERS), reason="Reuters-21578 is not in ../shared/data")
def test_simhash_reuters_same_answer(spark):
    from neardup.engines.spark import dedup_spark

    kw = dict(method="simhash", k=3, max_distance=6, time_field="date", on_error="skip")
    local = neardup.dedup(REUTERS, None, **kw)
    sp = dedup_spark(spark, REUTERS, None, collect=True, **kw)
    lr = local.report
    assert lr["documents"] == 21577 and lr["near_pairs"] >= 90 and lr["near_pairs"] < lr["candidates"]
    assert_same(local, sp)


def test_cli_simhash_on_spark(spark, synth_file, tmp_path, capsys):
    from neardup.cli import main

    out = tmp_path / "cli"
    assert (
        main(
            [
                "dedup",
                synth_file,
                "-o",
                str(out),
                "--engine",
                "spark",
                "--partitions",
                "4",
                "--method",
                "simhash",
                "--max-distance",
                "6",
                "--k",
                "3",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "SimHash 64-bit" in text and "within 6 bits" in text
    local = neardup.dedup(synth_file, None, method="simhash", max_distance=6, k=3)
    report = json.loads((out / "report.json").read_text())
    assert report["engine"] == "spark" and report["method"] == "simhash"
    assert report["candidates"] == local.report["candidates"] and report["clusters"] == local.report["clusters"]
