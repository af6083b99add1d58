"""Daily batches on Spark against a band index stored as Parquet partitioned by band.

The guide's daily job ("query before insert") past one machine: the archive's band rows live
in ``INDEX/bands/band=j/`` (one row per (band key, document) — each band's table is
independent), its texts in ``INDEX/docs/`` for exact verification. A day's batch:

1. the day's records are checked and deduplicated among themselves (``run_spark``: the same
   answer as the local engine, written to ``OUT/day/``);
2. the day's band rows are **broadcast** and joined against the index (no shuffle of the
   index: each index partition is scanned once and probed against the day's rows in memory),
   and the day's exact keys against the archive's;
3. every candidate (day document, archive document) is verified exactly (``pair_similarity``)
   and each day document that matches is reported with its best archive match in
   ``OUT/matches.parquet`` (exact matches first, then the highest similarity, then the
   smallest archive id);
4. the day's new documents (kept by step 1 and matching nothing in the archive) are appended
   to the index, so tomorrow's batch is checked against them.

    from neardup.engines.spark.incremental import build_index, add_batch
    build_index(spark, ["archive.parquet"], "index/")
    add_batch(spark, "index/", ["2026-11-30.jsonl.gz"], "out/2026-11-30/")
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

from neardup import kernels as K
from neardup.errors import InvalidParameterError
from neardup.io.records import Fields
from neardup.pipeline.candidates import choose_bands
from neardup.pipeline.options import DedupOptions

__all__ = ["build_index", "add_batch"]

_PARAM_KEYS = ("k", "unit", "num_perm", "scheme", "seed", "threshold", "recall", "bands", "rows", "measure")


def _options(kwargs: dict) -> DedupOptions:
    fkw = {k: kwargs.pop(k) for k in ("id_field", "text_field", "title_field", "time_field", "source_field")
           if k in kwargs}
    fields = Fields(id=fkw.get("id_field", "id"), text=fkw.get("text_field", "text"), title=fkw.get("title_field"),
                    time=fkw.get("time_field", "published_at") or None,
                    source=fkw.get("source_field", "source") or None)
    prefer = kwargs.pop("prefer_source", ())
    if isinstance(prefer, str):
        prefer = [s for s in prefer.split(",") if s]
    opts = DedupOptions(fields=fields, prefer_source=tuple(prefer), **kwargs)
    opts.check()
    if opts.method != "minhash" or opts.verify != "exact":
        raise InvalidParameterError("the band index holds MinHash band keys and texts: method minhash, verify exact")
    return opts


def _docs_and_bands(spark, inputs, opts: DedupOptions, params: K.KernelParams):
    """Checked documents (with exact keys) and their band rows. Bad records: as ``on_error``."""
    from pyspark.sql import functions as F

    from neardup.engines.spark.run import _CHECKED_DDL, _append, _checked_inputs, _map, _rec_error

    checked, meta = _checked_inputs(spark, inputs, opts.fields, opts.limits())
    if opts.on_error == "stop":
        bad = checked.filter(F.col("error").isNotNull()).orderBy("pos").limit(1).collect()
        if bad:  # (naming the file and line of an input of several files: Source.located)
            raise meta[int(bad[0].pos) >> K.POS_SHIFT].located(_rec_error(json.loads(bad[0].error)))
    good = checked.filter(F.col("error").isNull())
    docs = _map(good, lambda t: _append(t, K.exact_keys(t.select(["pos", "text"]), params.threads, params.unit), ["xkey", "ntok"]),
                _CHECKED_DDL + ", xkey BIGINT, ntok BIGINT")
    bands = _map(docs.filter(F.col("ntok") > 0).select("pos", "text"), lambda t: K.band_rows(t, params),
                 "band INT, key BIGINT, pos BIGINT")
    return docs, bands, meta


def build_index(spark, inputs, index_dir: str, **kwargs) -> dict:
    """Store the band rows and texts of every valid document of ``inputs`` as a band index.
    Keyword arguments: those of ``neardup.dedup`` (fields, k, num_perm, threshold, bands/rows...)."""

    opts = _options(dict(kwargs))
    b, r = choose_bands(opts.threshold, opts.num_perm, opts.recall, opts.bands, opts.rows)
    params = K.KernelParams.from_options(opts, b, r, threads=1)
    t0 = time.perf_counter()
    docs, bands, _ = _docs_and_bands(spark, inputs, opts, params)
    docs = docs.persist()
    ids = docs.select("pos", "id")
    (bands.join(ids, "pos").select("band", "key", "id")
     .repartition("band").write.mode("overwrite").partitionBy("band").parquet(os.path.join(index_dir, "bands")))
    docs.select("id", "xkey", "text", "time", "source").write.mode("overwrite").parquet(os.path.join(index_dir, "docs"))
    n = docs.count()
    docs.unpersist()
    meta = {"params": {k: getattr(opts, k) for k in _PARAM_KEYS}, "bands": b, "rows": r, "documents": n,
            "batches": [], "seconds": round(time.perf_counter() - t0, 3)}
    meta["params"]["bands"], meta["params"]["rows"] = b, r
    with open(os.path.join(index_dir, "index.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    return meta


def add_batch(spark, index_dir: str, inputs, out: str, *, partitions: int | None = None, **kwargs) -> dict:
    """Deduplicate one day's ``inputs`` among themselves and against the index, write
    ``out/day/`` (the day's own clusters/pairs/kept), ``out/matches.parquet`` and
    ``out/batch.json``, and append the day's new documents to the index."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from neardup.engines.spark.run import _map, run_spark

    with open(os.path.join(index_dir, "index.json"), encoding="utf-8") as f:
        meta = json.load(f)
    for k, v in meta["params"].items():
        if k in kwargs and kwargs[k] != v:
            raise InvalidParameterError(f"{k}={kwargs[k]!r} differs from the index's {v!r}")
        kwargs[k] = v
    opts = _options(dict(kwargs))
    b, r = meta["bands"], meta["rows"]
    params = K.KernelParams.from_options(opts, b, r, threads=1)
    t0 = time.perf_counter()
    # 1. the day among itself: the same answer as the local engine
    day_opts = _options(dict(kwargs))
    day = run_spark(spark, inputs, os.path.join(out, "day"), day_opts, partitions=partitions)
    removed_today = (spark.read.parquet(os.path.join(out, "day", "clusters.parquet"))
                     .select(F.explode("members.id").alias("id")))
    # 2. the day against the index: broadcast the day's rows
    docs, bands, _ = _docs_and_bands(spark, inputs, opts, params)
    docs = docs.persist()
    day_bands = bands.persist()
    index_bands = spark.read.parquet(os.path.join(index_dir, "bands"))
    index_docs = spark.read.parquet(os.path.join(index_dir, "docs"))
    near_cand = (index_bands.join(F.broadcast(day_bands), ["band", "key"])
                 .select("pos", F.col("id").alias("archive_id")).distinct())
    exact_cand = (index_docs.filter(F.col("xkey") != 0).select("xkey", F.col("id").alias("archive_id"))
                  .join(F.broadcast(docs.filter(F.col("ntok") > 0).select("pos", "xkey")), "xkey")
                  .select("pos", "archive_id"))
    exact_m = exact_cand.withColumn("similarity", F.lit(1.0)).withColumn("match", F.lit("exact"))
    near_only = near_cand.join(exact_cand, ["pos", "archive_id"], "left_anti")
    pairs = (near_only.join(docs.select("pos", F.col("text").alias("text_a")), "pos")
             .join(index_docs.select(F.col("id").alias("archive_id"), F.col("text").alias("text_b")), "archive_id"))
    sims = _map(pairs, lambda t: K.pair_similarity(t, params), "archive_id STRING, pos BIGINT, similarity DOUBLE, similarity6 DOUBLE")
    near_m = (sims.filter(F.col("similarity") >= opts.threshold)
              .select("pos", "archive_id", F.col("similarity6").alias("similarity")).withColumn("match", F.lit("near")))
    allm = exact_m.unionByName(near_m)
    w = Window.partitionBy("pos").orderBy(F.col("match").asc(), F.col("similarity").desc(), F.col("archive_id").asc())
    best = (allm.withColumn("_r", F.row_number().over(w)).filter("_r = 1").drop("_r")
            .join(docs.select("pos", "id"), "pos"))
    best = best.persist()
    best.orderBy("pos").select("id", "archive_id", "similarity", "match").write.mode("overwrite").parquet(
        os.path.join(out, "matches.parquet"))
    n_matched = best.count()
    # 4. the day's new documents join the index
    new_docs = (docs.join(best.select("pos"), "pos", "left_anti").join(removed_today, "id", "left_anti"))
    new_docs = new_docs.persist()
    n_new = new_docs.count()
    (day_bands.join(new_docs.select("pos", "id"), "pos").select("band", "key", "id")
     .repartition("band").write.mode("append").partitionBy("band").parquet(os.path.join(index_dir, "bands")))
    new_docs.select("id", "xkey", "text", "time", "source").write.mode("append").parquet(os.path.join(index_dir, "docs"))
    for df in (docs, day_bands, best, new_docs):
        df.unpersist()
    report: dict[str, Any] = {
        "documents": day.report["documents"],
        "day_copies_removed": day.report["copies_removed"],
        "matched_archive": n_matched,
        "added_to_index": n_new,
        "index_documents_before": meta["documents"],
        "seconds": round(time.perf_counter() - t0, 3),
    }
    meta["documents"] += n_new
    meta["batches"].append({"inputs": [str(x) for x in ([inputs] if isinstance(inputs, (str, os.PathLike)) else inputs)],
                            **report})
    with open(os.path.join(index_dir, "index.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "batch.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    return report
