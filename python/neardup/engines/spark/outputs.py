"""Writing a Spark run's outputs: clusters.parquet, pairs.parquet and the kept records.

The kept records are the input records themselves, read again from their sources: every row
not in ``dropped`` (bad records, duplicate ids, copies removed — a small set, broadcast) gets
its ``alternates`` (broadcast too) and is written in input order. JSONL lines are written
untouched but for the spliced-in alternates, as the local engine writes them. Nothing here
shuffles the corpus, and the corpus does not go through Python: the sources are scanned in
file order, filtered and spliced in the JVM.
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
    alt = F.broadcast(_map(alts, _alt_json_kernel, "pos BIGINT, alternates ARRAY<STRING>, alt_int ARRAY<BOOLEAN>, "
                                                     "alt_json STRING"))
    jsonl_parts, row_parts = [], []
    for s in sources:
        kept = s.raw.join(drop, "pos", "left_anti").join(alt, "pos", "left")
        kept = kept.withColumn("alternates", F.coalesce("alternates", F.array().cast("array<string>")))
        if s.format == "jsonl":
            # a file's splits in file order, each filtered in place: the lines stay in order
            jsonl_parts.append(kept.select(_kept_line(F.col("value"), F.col("alt_json")).alias("value"))
                               .filter(F.col("value").isNotNull()))
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


def _alt_json_kernel(t: pa.Table) -> pa.Table:
    """Each keeper's alternates as the local engine writes them (``dumps``; integer ids as
    numbers): one small row per keeper, computed in Python so the JSON is byte-identical."""
    from neardup.io.writers import dumps

    alts = t.column("alternates").to_pylist()
    ints = t.column("alt_int").to_pylist()
    js = [dumps([int(x) if i else x for x, i in zip(a, n)]) for a, n in zip(alts, ints)]
    return t.append_column("alt_json", pa.array(js, pa.string()))


def _kept_line(value, alt_json):
    """The kept JSONL line: a record line ending in ``}`` without an ``"alternates"`` key (all
    of them, in practice) gets ``,"alternates":[...]`` spliced in by the JVM — the whole
    corpus never goes through Python again. Any other line (trailing whitespace, an existing
    ``alternates`` key, a blank line: null, dropped) goes to ``kept_jsonl_line`` in a Python UDF
    that receives nulls for every other row, so the line order is kept."""
    from pyspark.sql import functions as F

    v = value.cast("string")
    fast = v.endswith("}") & ~v.contains('"alternates"')
    alt = F.coalesce(alt_json, F.lit("[]"))
    spliced = F.concat(v.substr(F.lit(1), F.length(v) - 1), F.lit(',"alternates":'), alt, F.lit("}"))
    return F.when(fast, spliced).otherwise(_slow_kept_line(F.when(~fast, v), F.when(~fast, alt)))


def _slow_kept_line(value, alt_json):
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("string")
    def slow(values, alts):  # pandas Series; only the rare rows the JVM did not splice
        import json

        import pandas as pd

        out = [None if not isinstance(v, str) or not v.strip() else K.kept_jsonl_line(v, json.loads(a))
               for v, a in zip(values.tolist(), alts.tolist())]
        return pd.Series(out, dtype=object)

    return slow(value, alt_json)
