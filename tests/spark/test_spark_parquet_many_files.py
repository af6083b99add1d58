"""A Parquet input of a few hundred files (a directory of parts): its records are numbered file
after file in path order (each file's offset from a broadcast join, not a map literal of every
file in the plan), so the run's clusters, keepers, kept records and the file and row of each
bad record or duplicate id are the local engine's given the same files in the same order."""

import pyarrow as pa
import pyarrow.parquet as pq
from parity import assert_same
from spark_corpus import make_corpus

import neardup

NFILES = 240


def test_a_directory_of_hundreds_of_parquet_files_numbers_records_as_locally(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    docs = make_corpus(originals=440, copies=200, words=40, seed=11)
    for x in docs:
        x.pop("copy_kind", None)
    # bad records and a duplicate id spread over the files: their (file, row) are the check
    docs[100]["text"] = ""
    docs[-1]["text"] = ""
    docs[333]["id"] = docs[7]["id"]
    d = tmp_path / "day.parquet"
    d.mkdir()
    sizes = [1 + (i * 7) % 4 for i in range(NFILES)]  # 1 to 4 rows a file
    sizes[-1] += len(docs) - sum(sizes)
    assert sizes[-1] > 0
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("published_at", pa.int64()),
            ("source", pa.string()),
            ("original_id", pa.string()),
        ]
    )
    paths, at = [], 0
    for i, n in enumerate(sizes):
        p = d / f"part-{i:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(docs[at : at + n], schema=schema), p)  # (one schema: a part of
        # nulls only would be a null column, and Spark reads every part with one schema)
        paths.append(str(p))
        at += n
    local = neardup.dedup(paths, None, on_error="skip", prefer_source=["agency"])
    sp = dedup_spark(
        spark, [f"file://{d}"], tmp_path / "spark", collect=True, on_error="skip", prefer_source=["agency"]
    )
    bad = [(r["file"], r["line"], r["reason"]) for r in sp.report["skipped_records"]]
    assert len(bad) == 3 and all(f.startswith("file://") for f, _, _ in bad), bad
    # (Spark names a file by its URL, the local engine by the path it was given)
    sp.report["skipped_records"] = [
        {**r, "file": r["file"][len("file://") :], "reason": r["reason"].replace("file://", "")}
        for r in sp.report["skipped_records"]
    ]
    assert_same(local, sp)
    assert sp.report["clusters"] > 50
