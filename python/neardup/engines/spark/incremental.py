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
from neardup.stages.options import DedupOptions

__all__ = ["build_index", "add_batch"]

#: the settings (of :class:`neardup.settings.Settings`) stored in index.json and checked on every add
_PARAM_KEYS = ("k", "unit", "num_perm", "scheme", "seed", "threshold", "recall", "bands", "rows", "measure")


def _options(kwargs: dict) -> DedupOptions:
    opts = DedupOptions.from_kwargs(**kwargs)
    opts.check()
    if opts.settings.method != "minhash" or opts.settings.verify != "exact":
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
    docs = _map(
        good,
        lambda t: _append(
            t, K.exact_keys(t.select(["pos", "text"]), params.threads, params.settings.unit), ["xkey", "ntok"]
        ),
        _CHECKED_DDL + ", xkey BIGINT, ntok BIGINT",
    )
    bands = _map(
        docs.filter(F.col("ntok") > 0).select("pos", "text"),
        lambda t: K.band_rows(t, params),
        "band INT, key BIGINT, pos BIGINT",
    )
    return docs, bands, meta


def build_index(spark, inputs, index_dir: str, **kwargs) -> dict:
    """Store the band rows and texts of every valid document of ``inputs`` as a band index.
    Keyword arguments: those of ``neardup.dedup`` (fields, k, num_perm, threshold, bands/rows...)."""

    opts = _options(dict(kwargs))
    b, r = opts.settings.band_shape()
    params = K.KernelParams.from_options(opts, b, r, threads=1)
    t0 = time.perf_counter()
    docs, bands, _ = _docs_and_bands(spark, inputs, opts, params)
    docs = docs.persist()
    ids = docs.select("pos", "id")
    (
        bands.join(ids, "pos")
        .select("band", "key", "id")
        .repartition("band")
        .write.mode("overwrite")
        .partitionBy("band")
        .parquet(os.path.join(index_dir, "bands"))
    )
    docs.select("id", "xkey", "text", "time", "source").write.mode("overwrite").parquet(os.path.join(index_dir, "docs"))
    n = docs.count()
    docs.unpersist()
    meta = {
        "params": {k: getattr(opts.settings, k) for k in _PARAM_KEYS},
        "bands": b,
        "rows": r,
        "documents": n,
        "batches": [],
        "seconds": round(time.perf_counter() - t0, 3),
    }
    meta["params"]["bands"], meta["params"]["rows"] = b, r
    with open(os.path.join(index_dir, "index.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    return meta


def add_batch(spark, index_dir: str, inputs, out: str, *, partitions: int | None = None, **kwargs) -> dict:
    """Deduplicate one day's ``inputs`` among themselves and against the index, write
    ``out/day/`` (the day's own clusters/pairs/kept), ``out/matches.parquet`` and
    ``out/batch.json``, and append the day's new documents to the index.

    All or nothing, as ``dedup_spark``'s outputs (:class:`~.outputs.OutputStage`): OUT's outputs
    are written into a staging directory in OUT, and the index's next version (the day's new
    rows beside hard links to the index's files; no data copied) into one in INDEX; once every
    file is written, OUT's set is swapped in (batch.json last), then the index's (index.json
    last). A failure or an interrupt before that leaves OUT and the index as they were, and no
    staging directory."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from neardup.engines.spark.outputs import OutputStage
    from neardup.engines.spark.run import _JOB_GROUP_KEYS, _map, _stop_jobs, plain_sigint, run_spark
    from neardup.io.writers import ensure_output_dir

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
    ensure_output_dir(out)
    out_stage, index_stage = OutputStage(out), OutputStage(index_dir)
    # the batch's jobs in a group of their own: an interrupt cancels them before the staging
    # directories go (as run_spark's; the caller's group is put back after)
    sc = spark.sparkContext
    group = f"neardup-{os.getpid()}x{os.urandom(4).hex()}"
    saved_group = {k: sc.getLocalProperty(k) for k in _JOB_GROUP_KEYS}
    cached: list = []
    interrupted = False
    with plain_sigint():
        try:
            sc.setJobGroup(group, "neardup add_batch")
            out_stage.create()
            index_stage.create()
            staged_out, staged_index = out_stage.path, index_stage.path
            # 1. the day among itself: the same answer as the local engine
            day_opts = _options(dict(kwargs))
            day = run_spark(spark, inputs, os.path.join(staged_out, "day"), day_opts, partitions=partitions)
            removed_today = spark.read.parquet(os.path.join(staged_out, "day", "clusters.parquet")).select(
                F.explode("members.id").alias("id")
            )
            # 2. the day against the index: broadcast the day's rows
            docs, bands, _ = _docs_and_bands(spark, inputs, opts, params)
            docs = docs.persist()
            day_bands = bands.persist()
            cached += [docs, day_bands]
            index_bands = spark.read.parquet(os.path.join(index_dir, "bands"))
            index_docs = spark.read.parquet(os.path.join(index_dir, "docs"))
            near_cand = (
                index_bands.join(F.broadcast(day_bands), ["band", "key"])
                .select("pos", F.col("id").alias("archive_id"))
                .distinct()
            )
            exact_cand = (
                index_docs.filter(F.col("xkey") != 0)
                .select("xkey", F.col("id").alias("archive_id"))
                .join(F.broadcast(docs.filter(F.col("ntok") > 0).select("pos", "xkey")), "xkey")
                .select("pos", "archive_id")
            )
            exact_m = exact_cand.withColumn("similarity", F.lit(1.0)).withColumn("match", F.lit("exact"))
            near_only = near_cand.join(exact_cand, ["pos", "archive_id"], "left_anti")
            pairs = near_only.join(docs.select("pos", F.col("text").alias("text_a")), "pos").join(
                index_docs.select(F.col("id").alias("archive_id"), F.col("text").alias("text_b")), "archive_id"
            )
            sims = _map(
                pairs,
                lambda t: K.pair_similarity(t, params),
                "archive_id STRING, pos BIGINT, similarity DOUBLE, similarity6 DOUBLE",
            )
            near_m = (
                sims.filter(F.col("similarity") >= opts.settings.threshold)
                .select("pos", "archive_id", F.col("similarity6").alias("similarity"))
                .withColumn("match", F.lit("near"))
            )
            allm = exact_m.unionByName(near_m)
            w = Window.partitionBy("pos").orderBy(
                F.col("match").asc(), F.col("similarity").desc(), F.col("archive_id").asc()
            )
            best = (
                allm.withColumn("_r", F.row_number().over(w))
                .filter("_r = 1")
                .drop("_r")
                .join(docs.select("pos", "id"), "pos")
            )
            best = best.persist()
            cached.append(best)
            best.orderBy("pos").select("id", "archive_id", "similarity", "match").write.mode("overwrite").parquet(
                os.path.join(staged_out, "matches.parquet")
            )
            n_matched = best.count()
            # 4. the day's new documents join the index: its next version in the index's staging
            # directory, the day's rows written there and the index's files linked in beside them
            new_docs = docs.join(best.select("pos"), "pos", "left_anti").join(removed_today, "id", "left_anti")
            new_docs = new_docs.persist()
            cached.append(new_docs)
            n_new = new_docs.count()
            (
                day_bands.join(new_docs.select("pos", "id"), "pos")
                .select("band", "key", "id")
                .repartition("band")
                .write.mode("overwrite")
                .partitionBy("band")
                .parquet(os.path.join(staged_index, "bands"))
            )
            new_docs.select("id", "xkey", "text", "time", "source").write.mode("overwrite").parquet(
                os.path.join(staged_index, "docs")
            )
            for name in ("bands", "docs"):
                _link_tree(os.path.join(index_dir, name), os.path.join(staged_index, name))
            report: dict[str, Any] = {
                "documents": day.report["documents"],
                "day_copies_removed": day.report["copies_removed"],
                "matched_archive": n_matched,
                "added_to_index": n_new,
                "index_documents_before": meta["documents"],
                "seconds": round(time.perf_counter() - t0, 3),
            }
            meta["documents"] += n_new
            meta["batches"].append(
                {"inputs": [str(x) for x in ([inputs] if isinstance(inputs, (str, os.PathLike)) else inputs)], **report}
            )
            _write_json(os.path.join(staged_index, "index.json"), meta)
            _write_json(os.path.join(staged_out, "batch.json"), report)
            # OUT first: an index that took the batch is never left with OUT not having it (a
            # rerun of the batch against that index would match the day with itself)
            out_stage.commit(["day", "matches.parquet", "batch.json"], last="batch.json")
            index_stage.commit(["bands", "docs", "index.json"], last="index.json")
            return report
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            _stop_jobs(spark, group, exc)  # (before the staging directories go: tasks may write into them)
            out_stage.discard()
            index_stage.discard()
            raise
        finally:
            try:
                for k, v in saved_group.items():
                    sc.setLocalProperty(k, v)
                for df in cached if not interrupted else ():  # (an interrupted run's cache: its process's)
                    df.unpersist()
            except Exception:  # pragma: no cover  (after an interrupt: the JVM may be slow to answer)
                pass


def _write_json(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def _link_tree(src: str, dst: str) -> None:
    """Every file under `src` hard-linked at its place under `dst` (a file system without hard
    links: copied), beside what is there; a name `dst` has already (Spark's ``_SUCCESS``) is
    left as it is. Hidden directories (a staging directory) are not entered."""
    import shutil

    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        target = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(target, exist_ok=True)
        for f in files:
            t = os.path.join(target, f)
            if os.path.lexists(t):
                continue
            try:
                os.link(os.path.join(root, f), t)
            except OSError:
                shutil.copy2(os.path.join(root, f), t)
