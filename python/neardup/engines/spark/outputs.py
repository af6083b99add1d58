"""Writing a Spark run's outputs: clusters.parquet, pairs.parquet and the kept records.

The kept records are the input records themselves, read again from their sources: every row
not in ``dropped`` (bad records, duplicate ids, copies removed — a small set, broadcast) gets
its ``alternates`` (broadcast too) and is written in input order. JSONL lines are written
untouched but for the spliced-in alternates, as the local engine writes them. Nothing here
shuffles the corpus: the sources are scanned in file order and filtered in the JVM.
"""
from __future__ import annotations

import os

import pyarrow as pa

from neardup import kernels as K
from neardup.io.writers import ensure_output_dir

__all__ = ["write_outputs"]


def write_outputs(outdir, clusters_df, pairs_df, dropped, alts, sources, opts, spark) -> list[str]:
    from pyspark.sql import functions as F

    from neardup.engines.spark.run import _map

    ensure_output_dir(outdir)
    clusters_df.write.mode("overwrite").parquet(os.path.join(outdir, "clusters.parquet"))
    pairs_df.write.mode("overwrite").parquet(os.path.join(outdir, "pairs.parquet"))
    drop = F.broadcast(dropped)
    alt = F.broadcast(alts)
    jsonl_parts, row_parts = [], []
    for s in sources:
        kept = s.raw.join(drop, "pos", "left_anti").join(alt, "pos", "left")
        kept = kept.withColumn("alternates", F.coalesce("alternates", F.array().cast("array<string>")))
        if s.format in ("jsonl", "csv"):
            # a file's splits in file order, each filtered in place: the lines stay in order
            # (a CSV record's ``value`` is the local reader's dict as JSON: the local engine
            # writes a kept CSV record as that dict plus "alternates")
            jsonl_parts.append(_map(kept.select("value", "alternates", "alt_int"), _kept_lines_kernel, "value STRING"))
        else:
            row_parts.append(kept.orderBy("pos").drop("src", "recno", "pos", "alt_int"))
    name = "kept.jsonl" if opts.output_format == "jsonl" else "kept.parquet"
    path = os.path.join(outdir, name)
    if opts.output_format == "jsonl":
        parts = jsonl_parts + [p.select(F.to_json(F.struct(*p.columns)).alias("value")) for p in row_parts]
        df = parts[0]
        for p in parts[1:]:
            df = df.union(p)
        df.write.mode("overwrite").text(path)
    else:
        parts = [spark.read.json(p.rdd.map(lambda x: x[0])) for p in jsonl_parts] + row_parts
        df = parts[0]
        for p in parts[1:]:
            df = df.unionByName(p, allowMissingColumns=True)
        df.write.mode("overwrite").parquet(path)
    return ["clusters.parquet", "pairs.parquet", name]


def _kept_lines_kernel(t: pa.Table) -> pa.Table:
    """Kept JSONL lines with their alternates; blank lines (not records) are dropped."""
    vals = t.column("value").to_pylist()
    alts = t.column("alternates").to_pylist()
    ints = t.column("alt_int").to_pylist()
    out = [K.kept_jsonl_line(v, [int(x) if i else x for x, i in zip(a, n)] if n else [])
           for v, a, n in zip(vals, alts, ints) if v is not None and v.strip()]
    return pa.table({"value": pa.array(out, pa.string())})
