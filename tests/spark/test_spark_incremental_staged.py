"""add_batch writes as one set (outputs.OutputStage), as dedup_spark does: a batch that fails
or is interrupted once everything but the last file is written leaves OUT (day/,
matches.parquet, batch.json) and the index (bands/, docs/, index.json) exactly as they were,
and no staging directory (a batch that succeeds, with the index's files linked into its next
version: test_spark_incremental)."""

import os
import signal

import pytest
from spark_corpus import make_corpus, tree, write_jsonl

from neardup.engines.spark.outputs import STAGE_PREFIX


def staging_dirs(*dirs) -> list[str]:
    return [
        os.path.join(root, n)
        for d in dirs
        for root, subdirs, _ in os.walk(d)
        for n in subdirs
        if n.startswith(STAGE_PREFIX)
    ]


def test_an_interrupted_batch_leaves_out_and_the_index_as_they_were(spark, tmp_path, monkeypatch):
    import neardup.engines.spark.incremental as inc
    from neardup.engines.spark.run import _is_pyspark_sigint

    pyspark_handler = signal.getsignal(signal.SIGINT)  # (the session was made in this, the main, thread)
    assert _is_pyspark_sigint(pyspark_handler)

    docs = make_corpus(originals=160, copies=60, words=60, seed=9)
    archive, day = docs[:160], docs[160:]
    index, out = str(tmp_path / "index"), tmp_path / "out"
    inc.build_index(spark, write_jsonl(tmp_path / "archive.jsonl", archive), index)
    # a previous batch's outputs in OUT (any bytes: they must stay as they are)
    for name in ("day/clusters.parquet/part-0", "day/report.json", "matches.parquet/part-0", "batch.json"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(f"previous {name}\n")
    out = str(out)
    out_before, index_before = tree(out, inodes=True), tree(index, inodes=True)
    seen = {}
    real = inc._write_json

    def fail_on_batch_json(path, obj):  # the last file of the batch: everything else is written
        if os.path.basename(path) == "batch.json":
            stage = os.path.dirname(path)
            seen["out"] = sorted(os.listdir(stage))
            seen["index"] = sorted(n for s in staging_dirs(index) for n in os.listdir(s))
            seen["day"] = sorted(os.listdir(os.path.join(stage, "day")))
            raise KeyboardInterrupt  # (as Ctrl-C raises it in the main thread)
        real(path, obj)

    monkeypatch.setattr(inc, "_write_json", fail_on_batch_json)
    with pytest.raises(KeyboardInterrupt):
        inc.add_batch(spark, index, write_jsonl(tmp_path / "day.jsonl", day), out)
    assert seen == {
        "out": ["day", "matches.parquet"],
        "index": ["bands", "docs", "index.json"],
        "day": ["clusters.parquet", "kept.jsonl", "pairs.parquet", "report.json"],
    }
    assert staging_dirs(out, index) == []
    assert signal.getsignal(signal.SIGINT) is pyspark_handler  # (replaced while the batch ran: put back)
    assert tree(out, inodes=True) == out_before
    assert tree(index, inodes=True) == index_before
