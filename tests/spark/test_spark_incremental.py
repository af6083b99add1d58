"""Daily batches against a band index (Parquet partitioned by band), the day's band rows
broadcast-joined against it: every day document the local engine pairs with an archive
document is matched, every match is a true match, and the index grows by the new documents."""

import json
import os

import pyarrow.dataset as ds
from spark_corpus import make_corpus, write_jsonl

import neardup


def test_daily_batch_against_band_index(spark, tmp_path):
    from neardup.engines.spark.incremental import add_batch, build_index

    docs = make_corpus(originals=300, copies=120, words=80, seed=5)
    archive, today = docs[:300], docs[300:]
    a_path = write_jsonl(tmp_path / "archive.jsonl", archive)
    d_path = write_jsonl(tmp_path / "day.jsonl", today)
    both = write_jsonl(tmp_path / "both.jsonl", archive + today)
    index = str(tmp_path / "index")
    meta = build_index(spark, a_path, index)
    assert meta["documents"] == 300
    parts = [d for d in os.listdir(os.path.join(index, "bands")) if d.startswith("band=")]
    assert len(parts) == meta["bands"]  # one directory per band
    rep = add_batch(spark, index, d_path, str(tmp_path / "out1"))
    matches = {m["id"]: m for m in ds.dataset(str(tmp_path / "out1" / "matches.parquet")).to_table().to_pylist()}
    # the local engine on archive + day: its verified pairs between an archive and a day document
    local = neardup.dedup(both, None)
    a_ids = {d["id"] for d in archive}
    expected = {}
    for p in local.pairs:
        a, b = str(p["a"]), str(p["b"])
        if (a in a_ids) != (b in a_ids):
            day_id, arch = (b, a) if a in a_ids else (a, b)
            expected[day_id] = max(expected.get(day_id, 0), p["similarity"])
    assert expected, "the corpus must have copies across the two halves"
    assert set(expected) <= set(matches)
    sh = neardup.Shingler(k=5)
    text = {d["id"]: d["text"] for d in docs}
    for day_id, m in matches.items():
        j = neardup.jaccard(sh.hashes(text[day_id]), sh.hashes(text[m["archive_id"]]))
        assert j >= 0.8 - 1e-9 and abs(j - m["similarity"]) < 1e-6 or m["match"] == "exact"
        assert m["similarity"] >= expected.get(day_id, 0) - 1e-6
    assert rep["matched_archive"] == len(matches)
    with open(os.path.join(index, "index.json")) as f:
        idx = json.load(f)
    assert idx["documents"] == 300 + rep["added_to_index"]
    # the day's new documents joined the index: their texts and one row per band each
    idx_docs = ds.dataset(os.path.join(index, "docs")).to_table()
    assert idx_docs.num_rows == 300 + rep["added_to_index"]
    bands = ds.dataset(os.path.join(index, "bands"), partitioning="hive").to_table()
    assert bands.num_rows == meta["bands"] * idx_docs.num_rows
    added = set(idx_docs.column("id").to_pylist()) - a_ids
    assert len(added) == rep["added_to_index"] and not (added & set(matches))
