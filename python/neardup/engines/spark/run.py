"""The Spark runner: reading, the stages as ``mapInArrow`` kernels, outputs and the report.

Data flow (N = ``partitions``; every arrow is a kernel from :mod:`neardup.kernels`):

1. read: JSONL lines (``spark.read.text``, line numbers from per-partition counts) or Parquet
   rows (``_metadata.row_index``) → ``check_jsonl``/``check_rows`` (the local engine's record
   checks) → bad records and duplicate ids listed (or raised with ``on_error="stop"``).
2. exact pass: ``exact_keys`` → ``repartition(N, xkey)`` → ``exact_groups`` (representative =
   earliest document with the key). Documents are then kept hash-partitioned by ``pos``.
3. band rows for the representatives: ``band_rows`` (signature + band keys in one kernel, one
   row per (band, key, doc)) → ``repartition(N, band, key)`` → ``bucket_members`` (buckets of
   two or more; identical member lists once) → members joined to their texts →
   ``repartition(N, bid)`` → ``verify_buckets`` (per-bucket union-find, spanning edges only).
4. components of exact + verified edges: ``large_star`` / ``small_star`` rounds, each
   repartitioned by node; convergence when the per-partition ``edge_checksum`` sums do not
   change; a bound on rounds; each round checkpointed. No pair ever reaches the driver.
5. keepers: ``repartition(N, label)`` → ``keeper_rows`` (the local keeper rule) → similarity
   of each member to its keeper (``pair_similarity``) → clusters, pairs, kept (Parquet).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from neardup import kernels as K
from neardup.errors import InvalidParameterError
from neardup.io.errors import InputFileError, RecordError
from neardup.io.readers import format_of
from neardup.io.records import Fields, Limits
from neardup.io.writers import ensure_output_dir
from neardup.pipeline.candidates import choose_bands, curve_table
from neardup.pipeline.options import DedupOptions
from neardup.pipeline.report import StageLog, peak_rss_mb
from neardup.pipeline.run import DedupResult

__all__ = ["session", "dedup_spark", "run_spark", "read_outputs", "SparkDedupResult", "MAX_SKIPPED_LISTED"]

MAX_SKIPPED_LISTED = 1000
DEFAULT_MAX_ROUNDS = 64


# ---- session ----------------------------------------------------------------------------


def session(master: str = "local[2]", app_name: str = "neardup", conf: dict | None = None,
            shuffle_partitions: int | None = None):
    """A SparkSession for neardup. With a ``local[...]`` master everything is bound to
    127.0.0.1 and the UI is off; executors run this interpreter (``PYSPARK_PYTHON``)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = SparkSession.builder.master(master).appName(app_name)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf or {})
    for k, v in settings.items():
        b = b.config(k, v)
    return b.getOrCreate()


# ---- result -----------------------------------------------------------------------------


@dataclass
class SparkDedupResult(DedupResult):
    """What a Spark run found: the report, and (``collect=True``) the rows of the outputs in
    the local engine's form (ids as strings). The local engine's result type, so the two
    engines' results are used the same way."""


def read_outputs(outdir: str) -> SparkDedupResult:
    """Read a Spark run's output directory (Parquet) back in the local engine's row form."""
    import pyarrow.dataset as ds

    def rows(name: str) -> list[dict]:
        p = os.path.join(outdir, name)
        return ds.dataset(p, format="parquet").to_table().to_pylist() if os.path.exists(p) else []

    with open(os.path.join(outdir, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    clusters = sorted(rows("clusters.parquet"), key=lambda c: c["cluster"])
    pairs = rows("pairs.parquet")
    kept_name = "kept.parquet" if os.path.exists(os.path.join(outdir, "kept.parquet")) else None
    kept = []
    if kept_name:
        t = ds.dataset(os.path.join(outdir, kept_name), format="parquet").to_table()
        kept = t.column(report["options"]["fields"]["id"]).to_pylist() if report["options"]["fields"]["id"] in t.column_names else []
    return SparkDedupResult(report=report, clusters=clusters, pairs=pairs, kept=kept)


# ---- arrow plumbing ---------------------------------------------------------------------


def _target_schema(spark_schema):
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(spark_schema, prefers_large_types=False)
    except TypeError:  # older signatures
        return to_arrow_schema(spark_schema)


def _map(df, fn, ddl: str, whole_partition: bool = False):
    """``df.mapInArrow`` with a kernel ``fn(pa.Table) -> pa.Table``. ``whole_partition``
    hands the kernel the whole partition at once (grouping kernels: a group never spans two
    calls)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(ddl) if isinstance(ddl, str) else ddl
    target = _target_schema(schema)

    def conform(t: pa.Table):
        t = t.select(target.names).cast(target)
        for b in t.to_batches(max_chunksize=8192):
            yield b

    def run(batches):
        if whole_partition:
            bl = list(batches)
            if not bl:
                return
            t = pa.Table.from_batches(bl)
            yield from conform(fn(t))
        else:
            for b in batches:
                yield from conform(fn(pa.Table.from_batches([b])))

    return df.mapInArrow(run, schema)


_CHECKED_DDL = ("pos BIGINT, id STRING, id_int BOOLEAN, text STRING, time DOUBLE, source STRING, "
                "time_error STRING, error STRING")


# ---- reading ----------------------------------------------------------------------------


def _read_jsonl(spark, path: str, src: int):
    """(src, recno, value): every line of one JSONL file with its 1-based line number."""
    from pyspark.sql import functions as F

    if path.lower().endswith((".zst", ".zstd")):
        raise InputFileError(f"{path}: the Spark engine reads plain and .gz JSONL (decompress .zst first)")
    df = spark.read.text(path).select(
        F.spark_partition_id().alias("_pid"), F.monotonically_increasing_id().alias("_mid"), "value")
    counts = dict(df.groupBy("_pid").count().collect())
    offs, run = [], 0
    for p in range(max(counts) + 1 if counts else 0):
        offs.append(run)
        run += counts.get(p, 0)
    off_col = F.element_at(F.array(*[F.lit(o) for o in offs] or [F.lit(0)]), F.col("_pid") + 1)
    recno = off_col + (F.col("_mid") - F.shiftleft(F.col("_pid").cast("bigint"), 33)) + 1
    return df.select(F.lit(src).alias("src"), recno.cast("bigint").alias("recno"), "value")


def _read_parquet(spark, path: str, src: int):
    from pyspark.sql import functions as F

    df = spark.read.parquet(path)
    cols = df.columns
    return df.select(F.lit(src).alias("src"), (F.col("_metadata.row_index") + 1).alias("recno"), *cols), cols


def _checked_inputs(spark, inputs, fields: Fields, limits: Limits, keep_value: bool):
    """The checked records of all inputs, and per input (name, format, raw DataFrame)."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    if isinstance(inputs, (str, os.PathLike)) or (inputs is not None and _is_df(inputs)):
        inputs = [inputs]
    parts = []
    meta = []
    names = []
    for i, item in enumerate(inputs):
        if _is_df(item):
            names.append(f"<dataframe {i}>")
        else:
            names.append(os.fspath(item))
    for i, item in enumerate(inputs):
        if isinstance(item, DataFrame):
            cols = item.columns
            raw = item.select(F.lit(i).alias("src"), (F.monotonically_increasing_id() + 1).alias("recno"), *cols)
            raw = raw.localCheckpoint(eager=True)  # the ids must not change between uses
            ddl = _CHECKED_DDL
            part = _map(raw, lambda t, n=names: K.check_rows(t, fields=fields, limits=limits, names=n), ddl)
            meta.append({"path": names[i], "format": "dataframe", "raw": raw, "cols": cols})
        else:
            path = os.fspath(item)
            if path == "-":
                raise InputFileError("-: the Spark engine cannot read stdin; write it to a file first")
            if not os.path.exists(path) and "://" not in path:
                raise InputFileError(f"{path}: no such file")
            if os.path.isdir(path):
                raise InputFileError(f"{path}: is a directory, not a file")
            fmt = format_of(path)
            if fmt == "jsonl":
                raw = _read_jsonl(spark, path, i)
                ddl = _CHECKED_DDL + (", value STRING" if keep_value else "")
                part = _map(raw, lambda t, n=names: K.check_jsonl(t, fields=fields, limits=limits, names=n,
                                                                  keep_value=keep_value), ddl)
                meta.append({"path": path, "format": "jsonl", "raw": None})
            elif fmt == "parquet":
                raw, cols = _read_parquet(spark, path, i)
                part = _map(raw, lambda t, n=names: K.check_rows(t, fields=fields, limits=limits, names=n),
                            _CHECKED_DDL)
                if keep_value:
                    part = part.withColumn("value", F.lit(None).cast("string"))
                meta.append({"path": path, "format": "parquet", "raw": raw, "cols": cols})
            else:
                raise InputFileError(f"{path}: the Spark engine reads JSONL (.jsonl, .jsonl.gz) and Parquet, not {fmt}")
        if keep_value and isinstance(item, DataFrame):
            part = part.withColumn("value", F.lit(None).cast("string"))
        parts.append(part)
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df, meta


def _is_df(obj) -> bool:
    return type(obj).__name__ == "DataFrame" and type(obj).__module__.startswith("pyspark")


# ---- the run ----------------------------------------------------------------------------


def dedup_spark(spark, inputs, out=None, *, partitions: int | None = None, checkpoint_dir: str | None = None,
                max_rounds: int = DEFAULT_MAX_ROUNDS, collect: bool = False, **kwargs) -> SparkDedupResult:
    """``neardup.dedup`` on Spark: the same keyword arguments (``id_field``, ``threshold``,
    ``prefer_source``, ...). ``inputs``: JSONL/Parquet paths (local or any Hadoop file system
    URL) or Spark DataFrames. ``out``: directory for clusters.parquet, pairs.parquet,
    kept.parquet (or kept.jsonl with ``output_format="jsonl"``) and report.json.
    ``collect=True`` also returns the output rows (small runs and tests only)."""
    from neardup.pipeline import DedupOptions as _O  # noqa: F401
    from neardup.io.records import Fields as _F

    prefer = kwargs.pop("prefer_source", ())
    if isinstance(prefer, str):
        prefer = [s for s in prefer.split(",") if s]
    fkw = {k: kwargs.pop(k) for k in ("id_field", "text_field", "title_field", "time_field", "source_field")
           if k in kwargs}
    fields = _F(id=fkw.get("id_field", "id"), text=fkw.get("text_field", "text"), title=fkw.get("title_field"),
                time=fkw.get("time_field", "published_at") or None, source=fkw.get("source_field", "source") or None)
    kwargs.pop("progress", None)
    opts = DedupOptions(fields=fields, prefer_source=tuple(prefer), **kwargs)
    return run_spark(spark, inputs, out, opts, partitions=partitions, checkpoint_dir=checkpoint_dir,
                     max_rounds=max_rounds, collect=collect)


def run_spark(spark, inputs, out, opts: DedupOptions, *, partitions: int | None = None,
              checkpoint_dir: str | None = None, max_rounds: int = DEFAULT_MAX_ROUNDS,
              collect: bool = False) -> SparkDedupResult:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    opts.check()
    if opts.method != "minhash":
        raise InvalidParameterError("the Spark engine runs --method minhash (SimHash: use the local engine)")
    t_start = time.perf_counter()
    log = StageLog()
    N = int(partitions or spark.conf.get("spark.sql.shuffle.partitions"))
    fields = opts.fields
    limits = Limits(max_chars=opts.max_chars)
    b, r = choose_bands(opts.threshold, opts.num_perm, opts.recall, opts.bands, opts.rows)
    params = K.KernelParams.from_options(opts, b, r, threads=1)
    if checkpoint_dir:
        spark.sparkContext.setCheckpointDir(checkpoint_dir)
    want_jsonl_kept = out is not None
    keep_value = want_jsonl_kept
    mem = StorageLevel.MEMORY_AND_DISK
    cached: list = []

    def persist(df):
        df = df.persist(mem)
        cached.append(df)
        return df

    try:
        # ---- 1. read and check ---------------------------------------------------------
        with log.stage("read") as st:
            checked, meta = _checked_inputs(spark, inputs, fields, limits, keep_value)
            checked = persist(checked)
            per_input_rows = {int(s): (int(n), int(bad)) for s, n, bad in checked.groupBy(
                (F.col("pos") / (1 << K.POS_SHIFT)).cast("int").alias("s")).agg(
                F.count("*"), F.sum(F.col("error").isNotNull().cast("int"))).collect()}
            good = checked.filter(F.col("error").isNull())
            firsts = good.groupBy("id").agg(F.min("pos").alias("first_pos"), F.count("*").alias("n")).filter("n > 1")
            dups = good.join(firsts, "id").filter(F.col("pos") != F.col("first_pos")).select("pos", "id", "first_pos")
            dups = persist(dups)
            n_dups = dups.count()
            n_bad = sum(v[1] for v in per_input_rows.values())
            names = [m["path"] for m in meta]
            errors_first = (checked.filter(F.col("error").isNotNull()).select("pos", "error")
                            .orderBy("pos").limit(MAX_SKIPPED_LISTED).collect()) if n_bad else []
            dup_first = dups.orderBy("pos").limit(MAX_SKIPPED_LISTED).collect() if n_dups else []
            listed = [(row.pos, _rec_error(json.loads(row.error))) for row in errors_first]
            for row in dup_first:
                s, rn = int(row.pos) >> K.POS_SHIFT, int(row.pos) & ((1 << K.POS_SHIFT) - 1)
                fs, frn = int(row.first_pos) >> K.POS_SHIFT, int(row.first_pos) & ((1 << K.POS_SHIFT) - 1)
                listed.append((row.pos, RecordError(names[s], rn, f"duplicate id {row.id!r} (first at {names[fs]}:{frn})",
                                                    field=fields.id)))
            listed.sort(key=lambda x: x[0])
            if listed and opts.on_error == "stop":
                raise listed[0][1]
            valid = good.join(dups.select("pos"), "pos", "left_anti")
            # ---- 2. exact pass ----------------------------------------------------------
            keyed = _map(valid, lambda t: _append(t, K.exact_keys(t.select(["pos", "text"]), params.threads),
                                                  ["xkey", "ntok"]),
                         _CHECKED_DDL + (", value STRING" if keep_value else "") + ", xkey BIGINT, ntok BIGINT")
            keyed = persist(keyed)
            n_docs = keyed.count()
            st.count = n_docs
        with log.stage("exact") as st:
            groups = _map(keyed.select("pos", "xkey", "ntok").repartition(N, "xkey"), K.exact_groups,
                          "pos BIGINT, rep BIGINT", whole_partition=True)
            docs = persist(keyed.join(groups, "pos"))
            dup_rep = F.when(F.col("rep") != F.col("pos"), F.col("rep"))
            agg = docs.agg(F.count(dup_rep).alias("n_exact"), F.countDistinct(dup_rep).alias("groups"),
                           F.sum((F.col("ntok") == 0).cast("long")).alias("no_tokens")).first()
            n_exact, exact_groups, no_tokens = int(agg.n_exact), int(agg.groups), int(agg.no_tokens or 0)
            st.count = n_exact
            st.note = "normalise and hash; group identical texts"
        # ---- 3. signatures, band rows, buckets, verification ---------------------------
        with log.stage("signatures") as st:
            reps = docs.filter((F.col("rep") == F.col("pos")) & (F.col("ntok") > 0)).select("pos", "text")
            bands = persist(_map(reps, lambda t: K.band_rows(t, params), "band INT, key BIGINT, pos BIGINT"))
            n_band_rows = bands.count()
            st.count = n_band_rows // b if b else 0
            st.note = f"{b} band rows per signature"
        with log.stage("candidates") as st:
            buckets = _map(bands.repartition(N, "band", "key"), K.bucket_members, "members ARRAY<BIGINT>",
                           whole_partition=True).dropDuplicates(["members"])
            buckets = buckets.withColumn("bid", F.xxhash64("members"))
            members = persist(buckets.select("bid", F.explode("members").alias("pos")))
            agg = members.agg(F.countDistinct("bid").alias("b"), F.count("*").alias("m")).first()
            n_buckets, n_member_rows = int(agg.b), int(agg.m)
            st.count = n_buckets
            st.note = "buckets of two or more (distinct member lists)"
        with log.stage("verify") as st:
            if opts.verify == "exact":
                payload = docs.select("pos", "text")
                ddl_in = "text"
            else:
                payload = _map(reps, lambda t: K.signatures(t, params), "pos BIGINT, sig BINARY")
                ddl_in = "sig"
            vin = members.join(payload, "pos").select("bid", "pos", ddl_in).repartition(N, "bid")
            near = persist(_map(vin, lambda t: K.verify_buckets(t, params),
                                "a BIGINT, b BIGINT, similarity DOUBLE, similarity6 DOUBLE",
                                whole_partition=True).dropDuplicates(["a", "b"]))  # a pair in several buckets
            n_near = near.count()
            st.count = n_near
            st.note = f"{opts.verify} {opts.measure}; spanning edges of each bucket's union-find"
        # ---- 4. connected components --------------------------------------------------
        with log.stage("clusters") as st:
            exact_edges = docs.filter(F.col("rep") != F.col("pos")).select(F.col("pos").alias("u"), F.col("rep").alias("v"))
            near_edges = near.select(F.greatest("a", "b").alias("u"), F.least("a", "b").alias("v"))
            edges = exact_edges.unionByName(near_edges).distinct()
            labels, rounds = _components(spark, edges, N, max_rounds, bool(checkpoint_dir))
            labels = persist(labels)
            # ---- 5. keepers -----------------------------------------------------------
            kin = labels.join(docs.select("pos", "id", "time", "source", "xkey", "rep"), "pos").repartition(N, "label")
            ddl = ("label BIGINT, pos BIGINT, id STRING, rank BIGINT, size BIGINT, keeper_pos BIGINT, "
                   "keeper_id STRING, rep BIGINT, keeper_rep BIGINT, exact BOOLEAN")
            prefer = tuple(opts.prefer_source)
            mem_rows = _map(kin, lambda t: K.keeper_rows(t, prefer), ddl, whole_partition=True)
            mem_rows = persist(mem_rows)
            cluster_ids = (labels.select("label").distinct().rdd.map(lambda x: x[0]).sortBy(lambda x: x)
                           .zipWithIndex().toDF(["label", "cluster"]))
            # similarity of each non-exact member to its keeper (on the representatives' texts)
            need = mem_rows.filter((F.col("rank") > 0) & ~F.col("exact")).select("pos", "rep", "keeper_rep")
            if opts.verify == "exact":
                ta = docs.select(F.col("pos").alias("rep"), F.col("text").alias("text_a"))
                tb = docs.select(F.col("pos").alias("keeper_rep"), F.col("text").alias("text_b"))
                ddl_s = "pos BIGINT, rep BIGINT, keeper_rep BIGINT, similarity DOUBLE, similarity6 DOUBLE"
            else:
                ta = payload.select(F.col("pos").alias("rep"), F.col("sig").alias("sig_a"))
                tb = payload.select(F.col("pos").alias("keeper_rep"), F.col("sig").alias("sig_b"))
                ddl_s = "pos BIGINT, rep BIGINT, keeper_rep BIGINT, similarity DOUBLE, similarity6 DOUBLE"
            sims = _map(need.join(ta, "rep").join(tb, "keeper_rep"), lambda t: K.pair_similarity(t, params), ddl_s)
            full = (mem_rows.join(cluster_ids, "label")
                    .join(sims.select("pos", "similarity6"), "pos", "left")
                    .withColumn("similarity", F.when(F.col("exact"), F.lit(1.0)).otherwise(F.col("similarity6")))
                    .withColumn("match", F.when(F.col("exact"), F.lit("exact")).otherwise(F.lit("near"))))
            full = persist(full)
            agg = full.agg(F.sum((F.col("rank") == 0).cast("long")).alias("c"),
                           F.sum((F.col("rank") > 0).cast("long")).alias("r"),
                           F.sum(((F.col("rank") > 0) & ~F.col("exact")).cast("long")).alias("nr")).first()
            n_clusters, n_removed, n_near_removed = int(agg.c or 0), int(agg.r or 0), int(agg.nr or 0)
            st.count = n_clusters
            st.note = f"large-star/small-star, {rounds} rounds"
        # ---- outputs -----------------------------------------------------------------
        clusters_df = (full.filter(F.col("rank") > 0)
                       .groupBy("cluster", "keeper_id", "size")
                       .agg(F.sort_array(F.collect_list(F.struct("rank", "id", "similarity", "match"))).alias("m"))
                       .select("cluster", F.col("keeper_id").alias("keeper"), "size",
                               F.transform("m", lambda x: F.struct(x["id"].alias("id"), x["similarity"].alias("similarity"),
                                                                   x["match"].alias("match"))).alias("members"))
                       .orderBy("cluster"))
        idmap = docs.select(F.col("pos").alias("p"), F.col("id").alias("pid"))
        pairs_exact = (docs.filter(F.col("rep") != F.col("pos"))
                       .select(F.col("rep").alias("pa"), F.col("pos").alias("pb"), F.lit(1.0).alias("similarity"),
                               F.lit("exact").alias("match"), F.lit(0).alias("kind")))
        pairs_near = near.select(F.least("a", "b").alias("pa"), F.greatest("a", "b").alias("pb"),
                                 F.col("similarity6").alias("similarity"), F.lit("near").alias("match"),
                                 F.lit(1).alias("kind"))
        pairs_all = pairs_exact.unionByName(pairs_near)
        pairs_df = (pairs_all.join(idmap.withColumnRenamed("p", "pa").withColumnRenamed("pid", "a"), "pa")
                    .join(idmap.withColumnRenamed("p", "pb").withColumnRenamed("pid", "b"), "pb")
                    .orderBy("kind", "pa", "pb"))
        pairs_df = pairs_df.select("a", "b", "similarity", "match")
        n_pairs = n_exact + n_near
        alts = (full.filter(F.col("rank") > 0).groupBy(F.col("keeper_pos").alias("pos"))
                .agg(F.sort_array(F.collect_list(F.struct("rank", "id"))).alias("alts"))
                .select("pos", F.transform("alts", lambda x: x["id"]).alias("alternates")))
        removed_pos = full.filter(F.col("rank") > 0).select("pos")
        kept_docs = docs.join(removed_pos, "pos", "left_anti").join(alts, "pos", "left")
        n_kept = n_docs - n_removed
        report: dict[str, Any] = {
            "engine": "spark",
            "spark": {"master": spark.sparkContext.master, "version": spark.version, "partitions": N,
                      "components_rounds": rounds, "band_rows": n_band_rows, "bucket_member_rows": n_member_rows},
            "inputs": [{"path": m["path"], "format": m["format"], "records": per_input_rows.get(i, (0, 0))[0]
                        - per_input_rows.get(i, (0, 0))[1], "skipped": per_input_rows.get(i, (0, 0))[1]}
                       for i, m in enumerate(meta)],
            "method": opts.method,
            "options": opts.as_dict(),
            "documents": n_docs,
            "skipped": n_bad + n_dups,
            "skipped_records": [e.as_dict() for _, e in listed[:MAX_SKIPPED_LISTED]],
            "skipped_listed_max": MAX_SKIPPED_LISTED,
            "no_token_documents": no_tokens,
            "unreadable_times": None,
            "exact_groups": exact_groups,
            "exact_copies_removed": n_exact,
            "signatures": n_band_rows // b if b else 0,
            "lsh": {"bands": b, "rows": r,
                    "rule": "pinned" if opts.bands is not None else f"recall >= {opts.recall} at the threshold",
                    "p_at_threshold": float(__import__("neardup").lsh.candidate_probability(opts.threshold, b, r)),
                    "curve": curve_table(b, r)},
            "candidates": n_buckets,
            "candidates_note": "Spark: buckets of two or more documents (distinct member lists), not pairs",
            "verified_pairs": n_pairs,
            "near_pairs": n_near,
            "near_pairs_note": "Spark: spanning edges only (same components as all verified pairs)",
            "clusters": n_clusters,
            "copies_removed": n_removed,
            "near_copies_removed": n_near_removed,
            "kept": n_kept,
            "outdir": None,
            "files": [],
        }
        dups_per_input = dict(dups.groupBy((F.col("pos") / (1 << K.POS_SHIFT)).cast("int").alias("s"))
                              .count().collect()) if n_dups else {}
        for i, m in enumerate(meta):
            total, bad = per_input_rows.get(i, (0, 0))
            report["inputs"][i]["skipped"] = bad + int(dups_per_input.get(i, 0))
            report["inputs"][i]["records"] = total - report["inputs"][i]["skipped"]
        te = docs.filter(F.col("time_error").isNotNull())
        report["unreadable_times"] = te.count() if fields.time else 0
        if report["unreadable_times"]:
            report["unreadable_time_records"] = [
                {"file": names[int(x.pos) >> K.POS_SHIFT], "line": int(x.pos) & ((1 << K.POS_SHIFT) - 1),
                 "field": fields.time, "reason": x.time_error}
                for x in te.select("pos", "time_error").orderBy("pos").limit(MAX_SKIPPED_LISTED).collect()]
        else:
            report["unreadable_time_records"] = []
        result = SparkDedupResult(report=report)
        if out is not None:
            with log.stage("write") as st:
                files = _write_outputs(spark, os.fspath(out), clusters_df, pairs_df, kept_docs, meta, opts, fields)
                st.count = len(files)
            report["outdir"] = os.fspath(out)
            report["files"] = files + ["report.json"]
        if collect:
            result.clusters = [_cluster_row(x) for x in clusters_df.collect()]
            result.pairs = [x.asDict() for x in pairs_df.collect()]
            result.kept = [x.id for x in kept_docs.select("pos", "id").orderBy("pos").collect()]
        report["stages"] = log.as_list()
        report["seconds"] = round(time.perf_counter() - t_start, 4)
        report["peak_rss_mb"] = peak_rss_mb()
        report["peak_rss_note"] = "the driver process only; executors are separate processes"
        if out is not None:
            from neardup.io.writers import atomic_open

            with atomic_open(os.path.join(os.fspath(out), "report.json")) as f:
                json.dump(report, f, indent=2, ensure_ascii=False)
                f.write("\n")
        return result
    finally:
        for df in cached:
            try:
                df.unpersist()
            except Exception:  # pragma: no cover
                pass


def _rec_error(d: dict) -> RecordError:
    return RecordError(d["file"], d["line"], d["reason"], field=d.get("field"))


def _append(t: pa.Table, extra: pa.Table, names: list[str]) -> pa.Table:
    for n in names:
        t = t.append_column(n, extra.column(n))
    return t


def _cluster_row(x) -> dict:
    return {"cluster": x.cluster, "keeper": x.keeper, "size": x.size,
            "members": [{"id": m.id, "similarity": m.similarity, "match": m.match} for m in x.members]}


def _components(spark, edges, N: int, max_rounds: int, reliable: bool):
    """Connected components of ``edges`` (u > v) by large-star / small-star rounds.
    Returns ((pos, label) for every node of every component, rounds run)."""
    from pyspark.sql import functions as F

    def checkpoint(df):
        return df.checkpoint(eager=True) if reliable else df.localCheckpoint(eager=True)

    def checksum(df):
        rows = _map(df, K.edge_checksum, "n BIGINT, checksum BIGINT").collect()
        n = sum(x.n for x in rows)
        c = sum(x.checksum for x in rows) & 0xFFFFFFFFFFFFFFFF
        return n, c

    e = checkpoint(edges.select("u", "v"))
    prev = checksum(e)
    rounds = 0
    converged = prev[0] == 0
    while not converged:
        if rounds >= max_rounds:
            raise RuntimeError(f"connected components did not converge in {max_rounds} large-star/small-star rounds "
                               "(raise max_rounds)")
        both = e.unionByName(e.select(F.col("v").alias("u"), F.col("u").alias("v")))
        ls = _map(both.repartition(N, "u"), K.large_star, "u BIGINT, v BIGINT", whole_partition=True)
        ss = _map(ls.repartition(N, "u"), K.small_star, "u BIGINT, v BIGINT", whole_partition=True)
        e_new = checkpoint(ss.distinct())
        rounds += 1
        cur = checksum(e_new)
        e = e_new
        converged = cur == prev
        prev = cur
    labels = e.select(F.col("u").alias("pos"), F.col("v").alias("label")).unionByName(
        e.select(F.col("v").alias("pos"), F.col("v").alias("label"))).distinct()
    return labels, rounds


def _write_outputs(spark, outdir, clusters_df, pairs_df, kept_docs, meta, opts, fields) -> list[str]:
    from pyspark.sql import functions as F

    ensure_output_dir(outdir)
    clusters_df.write.mode("overwrite").parquet(os.path.join(outdir, "clusters.parquet"))
    pairs_df.write.mode("overwrite").parquet(os.path.join(outdir, "pairs.parquet"))
    kept = kept_docs.withColumn("alternates", F.coalesce("alternates", F.array().cast("array<string>")))
    # kept records: the input records themselves (JSONL lines untouched + alternates; Parquet
    # and DataFrame rows with an alternates column)
    jsonl_parts, row_parts = [], []
    for i, m in enumerate(meta):
        lo, hi = i << K.POS_SHIFT, (i + 1) << K.POS_SHIFT
        mine = kept.filter((F.col("pos") >= lo) & (F.col("pos") < hi))
        if m["format"] == "jsonl":
            lines = _map(mine.select("pos", "value", "alternates"), _kept_lines_kernel, "pos BIGINT, value STRING")
            jsonl_parts.append(lines)
        else:
            raw = m["raw"]
            rows = (raw.withColumn("pos", F.shiftleft(F.col("src").cast("bigint"), K.POS_SHIFT) + F.col("recno"))
                    .join(mine.select("pos", "alternates"), "pos").orderBy("pos").drop("src", "recno", "pos"))
            row_parts.append(rows)
    name = "kept.jsonl" if opts.output_format == "jsonl" else "kept.parquet"
    path = os.path.join(outdir, name)
    if opts.output_format == "jsonl":
        parts = [p.orderBy("pos").select("value") for p in jsonl_parts]
        parts += [p.select(F.to_json(F.struct(*p.columns)).alias("value")) for p in row_parts]
        df = parts[0]
        for p in parts[1:]:
            df = df.union(p)
        df.write.mode("overwrite").text(path)
    else:
        parts = []
        for p in jsonl_parts:
            lines = p.orderBy("pos").select("value")
            parts.append(spark.read.json(lines.rdd.map(lambda x: x[0])))
        parts += row_parts
        df = parts[0]
        for p in parts[1:]:
            df = df.unionByName(p, allowMissingColumns=True)
        df.write.mode("overwrite").parquet(path)
    return ["clusters.parquet", "pairs.parquet", name]


def _kept_lines_kernel(t: pa.Table) -> pa.Table:
    pos = t.column("pos")
    vals = t.column("value").to_pylist()
    alts = t.column("alternates").to_pylist()
    out = [K.kept_jsonl_line(v, a or []) for v, a in zip(vals, alts)]
    return pa.table({"pos": pos, "value": pa.array(out, pa.string())})
