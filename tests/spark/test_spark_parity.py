"""Same input, same parameters: the Spark engine (local[2]) and the local engine give the same
clusters, keepers, member similarities and kept records."""

import json
import os

import pyarrow.parquet as pq
import pytest
from parity import assert_same, canon_clusters
from spark_corpus import REUTERS, make_corpus, synth_parquet, write_jsonl

import neardup
from neardup.errors import RecordError


@pytest.fixture(scope="module")
def synth_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    return write_jsonl(d / "synth.jsonl", make_corpus())


def test_synthetic_corpus_same_answer(spark, synth_file, tmp_path):
    from neardup.engines.spark import dedup_spark, read_outputs

    kw = dict(prefer_source=["agency"])
    local = neardup.dedup(synth_file, tmp_path / "local", **kw)
    sp = dedup_spark(spark, synth_file, tmp_path / "spark", collect=True, **kw)
    assert local.report["clusters"] > 50 and local.report["near_copies_removed"] > 10
    assert_same(local, sp)
    # what was written is what was returned, in the local engine's layout (Parquet)
    back = read_outputs(str(tmp_path / "spark"))
    assert canon_clusters(back.clusters) == canon_clusters(sp.clusters)
    assert {tuple(sorted(p)) for p in back.pairs[0]} if back.pairs else True
    kept_lines = []
    kdir = tmp_path / "spark" / "kept.jsonl"
    for name in sorted(os.listdir(kdir)):
        if name.startswith("part-"):
            kept_lines += (kdir / name).read_text().splitlines()
    local_lines = (tmp_path / "local" / "kept.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in kept_lines] == [json.loads(x) for x in local_lines]


def test_parquet_input_and_estimate_verification(spark, synth_file, tmp_path):
    from neardup.engines.spark import dedup_spark

    path = synth_parquet(synth_file, tmp_path)
    kw = dict(verify="estimate", bands=16, rows=8, output_format="parquet")
    local = neardup.dedup(path, tmp_path / "local", **kw)
    sp = dedup_spark(spark, path, tmp_path / "spark", collect=True, **kw)
    assert_same(local, sp)
    kept = pq.read_table(tmp_path / "spark" / "kept.parquet")
    assert kept.num_rows == local.report["kept"] and "alternates" in kept.column_names


def test_bad_records_stop_and_skip_like_the_local_engine(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    docs = make_corpus(originals=30, copies=10, words=40, seed=3)
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(d) for d in docs]
    lines.insert(5, "{not json")
    lines.insert(9, json.dumps({"id": docs[2]["id"], "text": "a duplicate id"}))
    lines.insert(12, json.dumps({"id": "empty", "text": "   "}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordError) as local_err:
        neardup.dedup(str(path), None)
    with pytest.raises(RecordError) as spark_err:
        dedup_spark(spark, str(path), None)
    assert str(spark_err.value) == str(local_err.value)
    local = neardup.dedup(str(path), None, on_error="skip")
    sp = dedup_spark(spark, str(path), None, on_error="skip", collect=True)
    assert sp.report["skipped"] == local.report["skipped"] == 3
    assert_same(local, sp)


@pytest.mark.skipif(not os.path.exists(REUTERS), reason="Reuters-21578 is not in ../shared/data")
def test_reuters_same_answer(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    kw = dict(time_field="date", on_error="skip")
    local = neardup.dedup(REUTERS, None, **kw)
    sp = dedup_spark(spark, REUTERS, None, collect=True, **kw)
    assert local.report["documents"] == 21577
    assert_same(local, sp)
    by_keeper = {c["keeper"]: {m["id"] for m in c["members"]} for c in sp.clusters}
    assert "reuters-190" in by_keeper["reuters-175"]


def test_cli_engine_spark(spark, synth_file, tmp_path, capsys):
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
                "--format",
                "parquet",
                "--prefer-source",
                "agency",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "clusters:" in text
    report = json.loads((out / "report.json").read_text())
    assert report["engine"] == "spark" and report["spark"]["partitions"] == 4
    assert sorted(report["files"]) == ["clusters.parquet", "kept.parquet", "pairs.parquet", "report.json"]


def test_jsonl_zst_input_like_the_local_engine(spark, tmp_path):
    import zstandard

    from neardup.engines.spark import dedup_spark

    docs = make_corpus(originals=60, copies=30, words=40, seed=4)
    lines = [json.dumps(d).encode() for d in docs]
    lines.insert(7, b'{"id": "latin1", "text": "caf\xe9 au lait"}')  # not UTF-8: skipped by both
    lines.insert(11, b"")
    twin = " ".join(f"w{i}" for i in range(40))  # integer ids: alternates written as numbers
    lines += [json.dumps({"id": 900001, "text": twin}).encode(), json.dumps({"id": 900002, "text": twin}).encode()]
    # kept lines the JVM does not splice: trailing whitespace, an "alternates" key already there
    lines += [
        b'{"id": "ws", "text": "trailing blanks after the record"}  \t',
        b'{"id": "has-alt", "text": "a record with its own alternates key", "alternates": [1]}',
    ]
    path = tmp_path / "in.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b"\n".join(lines) + b"\n"))
    local = neardup.dedup(str(path), tmp_path / "local", on_error="skip")
    sp = dedup_spark(spark, str(path), tmp_path / "spark", on_error="skip", collect=True)
    assert sp.report["skipped"] == local.report["skipped"] == 1
    assert_same(local, sp)
    kdir = tmp_path / "spark" / "kept.jsonl"
    kept = [x for n in sorted(os.listdir(kdir)) if n.startswith("part-") for x in (kdir / n).read_text().splitlines()]
    assert kept == (tmp_path / "local" / "kept.jsonl").read_text().splitlines()


def test_binary_parquet_columns_like_the_local_engine(spark, tmp_path):
    # id, title, text and source as Parquet binary: read as their UTF-8 text by both engines (a
    # record whose text is not UTF-8 skipped by both, with the same reason); kept.jsonl writes
    # the binary columns as base64 in both (Spark's JSON writer, the local engine's dumps)
    import pyarrow as pa

    from neardup.engines.spark import dedup_spark

    docs = make_corpus(originals=40, copies=20, words=40, seed=8)
    b = lambda xs: pa.array([x.encode() for x in xs], pa.binary())  # noqa: E731
    texts = [d["text"].encode() for d in docs]
    texts[5] = b"caf\xe9 au lait and more words"  # Latin-1, not UTF-8
    path = tmp_path / "bin.parquet"
    pq.write_table(
        pa.table(
            {
                "id": b([d["id"] for d in docs]),
                "title": b([f"t{i % 3}" for i in range(len(docs))]),
                "text": pa.array(texts, pa.binary()),
                "source": b([d["source"] for d in docs]),
            }
        ),
        path,
        row_group_size=16,
    )
    kw = dict(on_error="skip", title_field="title", prefer_source=["agency"])
    local = neardup.dedup(str(path), tmp_path / "local", **kw)
    sp = dedup_spark(spark, str(path), tmp_path / "spark", collect=True, **kw)
    assert local.report["skipped"] == 1 and "text is not valid UTF-8" in local.report["skipped_records"][0]["reason"]
    assert local.report["near_copies_removed"] >= 3  # (the comparison is not vacuous)
    assert_same(local, sp)
    kdir = tmp_path / "spark" / "kept.jsonl"
    kept = [
        json.loads(x)
        for n in sorted(os.listdir(kdir))
        if n.startswith("part-")
        for x in (kdir / n).read_text().splitlines()
    ]
    assert kept == [json.loads(x) for x in (tmp_path / "local" / "kept.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("kw", [dict(threshold=1.0), dict(bands=1, rows=4, threshold=0.5)])
def test_one_band_like_the_local_engine(spark, synth_file, kw):
    # one band: its keys are a column one wide (the local engine flattened them and crashed)
    from neardup.engines.spark import dedup_spark

    local = neardup.dedup(synth_file, None, **kw)
    sp = dedup_spark(spark, synth_file, None, collect=True, **kw)
    assert local.report["lsh"]["bands"] == 1 and local.report["copies_removed"] > 0
    assert_same(local, sp)


def test_what_the_spark_engine_does_not_read(spark):
    from neardup.engines.spark import dedup_spark
    from neardup.errors import InputFileError

    with pytest.raises(InputFileError, match="cannot read stdin"):
        dedup_spark(spark, "-", None)
    for remote in ("hdfs:///news/in.csv", "s3a://b/in.jsonl.zst"):
        with pytest.raises(InputFileError, match="from the local file system only"):
            dedup_spark(spark, remote, None)
