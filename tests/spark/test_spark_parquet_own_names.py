"""A Parquet input whose records have columns named as the engine's own working columns
(``__neardup_file``, ``__neardup_row``, ``__neardup_off``: the record numbering of several
files) runs as locally and keeps those columns' values: they were overwritten by the file's
name and the run failed on a missing attribute."""

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from parity import assert_same
from spark_corpus import make_corpus

import neardup


def test_record_columns_named_as_the_engines_own(spark, tmp_path):
    from neardup.engines.spark import dedup_spark

    docs = make_corpus(originals=60, copies=30, words=30, seed=5)
    for i, x in enumerate(docs):
        x.pop("copy_kind", None)
        x["__neardup_file"] = f"mine-{i}"
        x["__NEARDUP_ROW"] = i * 10  # (Spark's names are case-insensitive)
        x["__neardup_off_"] = -i
    d = tmp_path / "day.parquet"
    d.mkdir()
    paths = []
    for k in range(3):  # several files: the numbering's join is used
        p = d / f"part-{k}.parquet"
        pq.write_table(pa.Table.from_pylist(docs[k * 30 : (k + 1) * 30]), p)
        paths.append(str(p))
    local = neardup.dedup(paths, tmp_path / "local", output_format="parquet")
    sp = dedup_spark(spark, [f"file://{d}"], tmp_path / "spark", collect=True, output_format="parquet")
    assert_same(local, sp)
    assert local.report["copies_removed"] >= 5
    kept = ds.dataset(str(tmp_path / "spark" / "kept.parquet"), format="parquet").to_table().to_pylist()
    assert kept == ds.dataset(str(tmp_path / "local" / "kept.parquet"), format="parquet").to_table().to_pylist()
    assert len(kept) == local.report["kept"]
    assert all(r["__neardup_file"] == f"mine-{r['__NEARDUP_ROW'] // 10}" for r in kept)
    assert all(r["__neardup_off_"] == -(r["__NEARDUP_ROW"] // 10) for r in kept)
