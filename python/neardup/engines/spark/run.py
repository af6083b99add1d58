"""The Spark runner: reading, the stages as ``mapInArrow`` kernels, outputs and the report.

Data flow (N = ``partitions``; every arrow is a kernel from :mod:`neardup.kernels`):

1. read: each input as a *source* (:mod:`.sources`: JSONL lines with their line numbers,
   CSV records as the local reader makes them, Parquet rows, DataFrame rows) → the local engine's record checks fused with ``doc_keys``
   (exact key, token count, band keys) in one Python pass; the texts are dropped there.
   Bad records and duplicate ids are listed (or raised with ``on_error="stop"``).
2. exact pass: the records (no texts) → ``repartition(N, xkey)`` → ``exact_groups``
   (representative = earliest document with the key).
3. band rows of the representatives (``posexplode`` of the band keys; exact copies dropped by
   a broadcast anti-join) → ``repartition(N, band, key)`` → ``bucket_members`` (buckets of two
   or more; identical member lists once) → the members' texts read again from the sources
   (broadcast semi-join) → ``repartition(N, bid)`` → ``verify_buckets`` (per-bucket
   union-find, spanning edges only).
   With ``method="simhash"`` the band rows are the fingerprint's ``max_distance + 1`` blocks
   and ``simhash_candidates`` / ``simhash_verify`` (:mod:`neardup.kernels.simhash`) take the
   place of ``bucket_members`` / ``verify_buckets``: the local engine's candidates (every
   pair within ``max_distance`` bits), each owned by one bucket.
4. components of exact + verified edges: ``large_star`` / ``small_star`` rounds, each
   repartitioned by node; convergence when the per-partition ``edge_checksum`` sums do not
   change; a bound on rounds; each round checkpointed. No pair ever reaches the driver.
5. keepers: ``repartition(N, label)`` → ``keeper_rows`` (the local keeper rule) → similarity
   of each member to its keeper (``pair_similarity``) → clusters, pairs; the kept records
   are the sources read once more, filtered in the JVM (:mod:`.outputs`).

So the corpus crosses the JVM/Python boundary once in full (step 1) and is never shuffled;
only the bucket members' texts (a few percent) are read a second time.
"""
from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from neardup import kernels as K
from neardup.engines.spark.mapping import _map
from neardup.engines.spark.outputs import OutputStage, stale_kept, write_outputs
from neardup.engines.spark.sources import read_sources
from neardup.errors import InvalidParameterError
from neardup.errors import InputFileError, OutputError, RecordError
from neardup.io.writers import ensure_output_dir, writable_tree
from neardup.io.records import Fields, Limits
from neardup.lsh import candidate_probability
from neardup.stages.candidates import curve_table
from neardup.stages.options import DedupOptions
from neardup.stages.report import StageLog, peak_rss_mb
from neardup.stages.outputs import DedupResult, out_path

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
    # the kept file this run wrote (report.json lists it): an earlier run's other kept file
    # may still be there (read before 2026-12-01, when kept.parquet was read whatever the run wrote)
    id_field = report["options"]["fields"]["id"]
    kept: list[Any] = []
    files = report.get("files") or []
    if "kept.parquet" in files:
        t = ds.dataset(os.path.join(outdir, "kept.parquet"), format="parquet").to_table()
        kept = t.column(id_field).to_pylist() if id_field in t.column_names else []
    elif "kept.jsonl" in files:
        kdir = os.path.join(outdir, "kept.jsonl")
        for name in sorted(n for n in os.listdir(kdir) if n.startswith("part-")):
            with open(os.path.join(kdir, name), encoding="utf-8") as f:
                kept += [json.loads(line).get(id_field) for line in f if line.strip()]
    return SparkDedupResult(report=report, clusters=clusters, pairs=pairs, kept=kept)


# ---- arrow plumbing ---------------------------------------------------------------------


_CHECKED_DDL = ("pos BIGINT, id STRING, id_int BOOLEAN, text STRING, time DOUBLE, source STRING, "
                "time_error STRING, error STRING")


_META_DDL = ("pos BIGINT, id STRING, id_int BOOLEAN, time DOUBLE, source STRING, time_error STRING, "
             "error STRING, xkey BIGINT, ntok BIGINT, bkeys ARRAY<BIGINT>, fp BIGINT")


# ---- reading ----------------------------------------------------------------------------


def _checked_inputs(spark, inputs, fields: Fields, limits: Limits):
    """The checked records (texts included) of all inputs, and their sources."""
    sources = read_sources(spark, inputs)
    names = [s.path for s in sources]
    parts = [_map(s.check_input(s.raw), s.checker(fields, limits, names), _CHECKED_DDL) for s in sources]
    return _union(parts), sources


def _union(parts):
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df


def _texts(sources, pos_df, fields: Fields, limits: Limits):
    """(pos, text) of the documents in ``pos_df`` (a small set): every source read again,
    the rows picked in the JVM by a broadcast semi-join, and only those checked in Python."""
    from pyspark.sql import functions as F

    names = [s.path for s in sources]
    want = F.broadcast(pos_df.select("pos"))
    parts = [_map(s.check_input(s.raw.join(want, "pos", "left_semi")), s.checker(fields, limits, names),
                  _CHECKED_DDL).select("pos", "text") for s in sources]
    return _union(parts)


# ---- the run ----------------------------------------------------------------------------


def dedup_spark(spark, inputs, out=None, *, partitions: int | None = None, checkpoint_dir: str | None = None,
                max_rounds: int = DEFAULT_MAX_ROUNDS, collect: bool = False, **kwargs) -> SparkDedupResult:
    """``neardup.dedup`` on Spark: the same keyword arguments (``id_field``, ``threshold``,
    ``prefer_source``, ``method``, ``max_distance``, ...). ``inputs``: JSONL/Parquet paths
    (local or any Hadoop file system URL), CSV/TSV and .jsonl.zst paths (local file system)
    or Spark DataFrames. ``out``: directory for clusters.parquet, pairs.parquet,
    kept.parquet (or kept.jsonl with ``output_format="jsonl"``) and report.json.
    ``collect=True`` also returns the output rows (small runs and tests only)."""
    kwargs.pop("progress", None)
    opts = DedupOptions.from_kwargs(**kwargs)
    return run_spark(spark, inputs, out, opts, partitions=partitions, checkpoint_dir=checkpoint_dir,
                     max_rounds=max_rounds, collect=collect)


def run_spark(spark, inputs, out, opts: DedupOptions, *, partitions: int | None = None,
              checkpoint_dir: str | None = None, max_rounds: int = DEFAULT_MAX_ROUNDS,
              collect: bool = False) -> SparkDedupResult:
    # Ctrl-C raises KeyboardInterrupt and nothing else while the run goes (plain_sigint): the
    # run's own cleanup cancels its job group, as after SIGTERM in the command
    with plain_sigint():
        return _run_spark(spark, inputs, out, opts, partitions=partitions, checkpoint_dir=checkpoint_dir,
                          max_rounds=max_rounds, collect=collect)


@contextmanager
def plain_sigint():
    """While the block runs (in the main thread), SIGINT (Ctrl-C) raises KeyboardInterrupt and
    does nothing else, once: a second one while the first one's cleanup runs is ignored, as
    the command's SIGTERM (``neardup.cli._terminate_as_interrupt``). The handler in place before
    is put back after.

    PySpark's SparkContext installs a SIGINT handler that calls ``cancelAllJobs`` through py4j
    from inside the handler, so in the main thread, most often while that thread is waiting in
    a py4j call for a job: the call goes out on the connection that is still waiting for the
    job's answer (py4j's "reentrant call" error and its tracebacks on stderr; or it waits
    behind the job, which is not cancelled), and it cancels every job of the session. The run's
    own cleanup (``_stop_jobs``: its job group only, from a thread with a connection of its
    own) does it right. Only PySpark's handler or Python's default one is replaced: a handler
    of the caller's own is left in place."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not (previous is signal.default_int_handler or _is_pyspark_sigint(previous)):
        yield
        return
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _is_pyspark_sigint(h) -> bool:
    """`h` is the SIGINT handler a SparkContext installs (``SparkContext.__init__``'s own)."""
    return getattr(h, "__qualname__", "").startswith("SparkContext.") and \
        getattr(h, "__module__", "").startswith("pyspark.")


def _run_spark(spark, inputs, out, opts: DedupOptions, *, partitions: int | None,
               checkpoint_dir: str | None, max_rounds: int, collect: bool) -> SparkDedupResult:
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    opts.check()
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise InvalidParameterError(f"partitions must be a positive integer, got {partitions!r}")
    out = out_path(out)  # a str (bytes and os.PathLike as the local engine takes them)
    if checkpoint_dir is not None:
        checkpoint_dir = out_path(checkpoint_dir, "checkpoint_dir")
    if out is not None:  # before the job, not after it (a file there failed the run at the end)
        ensure_output_dir(out)
    simhash = opts.settings.method == "simhash"
    t_start = time.perf_counter()
    log = StageLog()
    fields = opts.fields
    limits = opts.limits()  # (a JSON line holding NaN or Infinity refused: kept.jsonl stays JSON)
    # SimHash has no LSH bands: its band rows are the fingerprint's max_distance + 1 blocks
    b, r = (0, 0) if simhash else opts.settings.band_shape()
    params = K.KernelParams.from_options(opts, b, r, threads=1)
    if checkpoint_dir:
        spark.sparkContext.setCheckpointDir(checkpoint_dir)
    mem = StorageLevel.MEMORY_AND_DISK
    cached: list = []

    def persist(df):
        df = df.persist(mem)
        cached.append(df)
        return df

    sources: list = []
    saved_conf = None
    stage: OutputStage | None = None
    interrupted = False
    # the run's jobs in a job group of their own: an interrupt cancels them, and the jobs a JVM
    # call still under way would start after it (_stop_jobs); the caller's group is put back after
    group = f"neardup-{os.getpid()}x{os.urandom(4).hex()}"
    sc = spark.sparkContext
    saved_group = {k: sc.getLocalProperty(k) for k in _JOB_GROUP_KEYS}
    sc.setJobGroup(group, "neardup dedup")
    try:
        # ---- 1. read, check, keys: one pass over the texts, which are not kept ------------
        with log.stage("read") as st:
            sources = read_sources(spark, inputs)
            if out is not None:  # an input an output would overwrite: refused, as the local engine does
                _refuse_overwriting_inputs(_local_files(sources), out, opts.output_format)
            names = [s.path for s in sources]
            N = _partitions(spark, partitions, sources)
            # every shuffle of the run (joins, groupBy, distinct too) at N partitions, not 200
            saved_conf = spark.conf.get("spark.sql.shuffle.partitions")
            spark.conf.set("spark.sql.shuffle.partitions", str(N))
            parts = []
            for s in sources:
                check = s.checker(fields, limits, names)
                parts.append(_map(s.check_input(s.raw), lambda t, c=check: K.doc_keys(c(t), params), _META_DDL))
            checked = persist(_union(parts))
            src_of = (F.col("pos") / (1 << K.POS_SHIFT)).cast("int").alias("s")
            per_input_rows = {int(x.s): (int(x.n), int(x.bad)) for x in checked.groupBy(src_of).agg(
                F.count("*").alias("n"), F.sum(F.col("error").isNotNull().cast("int")).alias("bad")).collect()}
            n_bad = sum(v[1] for v in per_input_rows.values())
            good = checked.filter(F.col("error").isNull())
            # the earliest record of each id by a window: one shuffle by id (a groupBy and a
            # join back to the records took two)
            first_pos = F.min("pos").over(Window.partitionBy("id"))
            dups = persist(good.select("pos", "id").withColumn("first_pos", first_pos)
                           .filter(F.col("pos") != F.col("first_pos")))
            errors_first = (checked.filter(F.col("error").isNotNull()).select("pos", "error")
                            .orderBy("pos").limit(MAX_SKIPPED_LISTED).collect()) if n_bad else []
            dup_first = dups.orderBy("pos").limit(MAX_SKIPPED_LISTED).collect()
            # (the file and line of a record of an input of several files: Source.where)
            listed = [(row.pos, sources[int(row.pos) >> K.POS_SHIFT].located(_rec_error(json.loads(row.error))))
                      for row in errors_first]
            for row in dup_first:
                name, rn = _where(sources, row.pos)
                first_name, frn = _where(sources, row.first_pos)
                listed.append((row.pos, RecordError(name, rn, f"duplicate id {row.id!r} (first at {first_name}:{frn})",
                                                    field=fields.id)))
            listed.sort(key=lambda x: x[0])
            if listed and opts.on_error == "stop":
                raise listed[0][1]
            dups_per_input = dict(dups.groupBy(src_of).count().collect()) if dup_first else {}
            n_dups = sum(dups_per_input.values())
            valid = good.join(dups.select("pos"), "pos", "left_anti") if dup_first else good
        # ---- 2. exact pass: the records (no texts) grouped by exact key ------------------
        with log.stage("exact") as st:
            cols = [c for c in valid.columns if c not in ("bkeys", "fp")]
            docs = persist(_map(valid.select(*cols).repartition(N, "xkey"), _exact_pass,
                                _META_DDL.replace(", bkeys ARRAY<BIGINT>, fp BIGINT", "") + ", rep BIGINT, lead BOOLEAN",
                                whole_partition=True))
            dup_rep = F.when(F.col("rep") != F.col("pos"), F.col("rep"))
            agg = docs.agg(F.count("*").alias("n"), F.count(dup_rep).alias("n_exact"),
                           F.sum(F.col("lead").cast("long")).alias("groups"),
                           F.sum((F.col("ntok") == 0).cast("long")).alias("no_tokens"),
                           F.count("time_error").alias("te")).first()
            n_docs, n_exact, exact_groups = int(agg.n), int(agg.n_exact), int(agg.groups or 0)
            no_tokens, n_time_errors = int(agg.no_tokens or 0), int(agg.te or 0)
            st.count = n_exact
            st.note = "normalise and hash; group identical texts"
        # ---- 3. band rows of the representatives, buckets, verification ----------------
        with log.stage("candidates") as st:
            copies = F.broadcast(docs.filter(F.col("rep") != F.col("pos")).select("pos"))
            reps = valid.filter(F.col("ntok") > 0).join(copies, "pos", "left_anti")
            if simhash:
                members, n_cand, n_member_rows = _simhash_members(reps, N, params, persist)
                st.note = f"{opts.settings.max_distance + 1} blocks per fingerprint; pairs within {opts.settings.max_distance} bits"
            else:
                members, n_cand, n_member_rows = _minhash_members(reps, N, persist)
                st.note = f"{b} band rows per signature; buckets of two or more (distinct member lists)"
            n_signatures = n_docs - n_exact - no_tokens
            st.count = n_cand
        with log.stage("verify") as st:
            # texts (or signatures, or fingerprints) of the bucket members only: every
            # document the verification and the keeper similarities need is one of them
            if opts.settings.verify == "exact":
                texts = _texts(sources, members.select("pos").distinct(), fields, limits)
                payload, col = persist(texts), "text"
            elif simhash:
                payload, col = members.select("pos", "fp").distinct(), "fp"
            else:
                texts = _texts(sources, members.select("pos").distinct(), fields, limits)
                payload, col = persist(_map(texts, lambda t: K.signatures(t, params), "pos BIGINT, sig BINARY")), "sig"
            edge_ddl = "a BIGINT, b BIGINT, similarity DOUBLE, similarity6 DOUBLE"
            if simhash:
                vin = members.select("bid", "band", "pos", "fp")
                if opts.settings.verify == "exact":
                    vin = vin.join(payload, "pos").select("bid", "band", "pos", "fp", "text")
                # each candidate pair is owned by one bucket: no pair is verified twice
                near = persist(_map(vin.repartition(N, "bid"), lambda t: K.simhash_verify(t, params), edge_ddl,
                                    whole_partition=True))
            else:
                vin = members.join(payload, "pos").select("bid", "pos", col).repartition(N, "bid")
                near = persist(_map(vin, lambda t: K.verify_buckets(t, params), edge_ddl,
                                    whole_partition=True).dropDuplicates(["a", "b"]))  # a pair in several buckets
            n_near = near.count()
            st.count = n_near
            st.note = (f"{opts.settings.verify} {opts.settings.measure}; spanning edges of each bucket's union-find"
                       if opts.settings.verify == "exact" or not simhash else "estimate: 1 - distance / 64")
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
            prefer = tuple(opts.settings.prefer_source)
            mem_rows = persist(_map(kin, lambda t: K.keeper_rows(t, prefer), ddl, whole_partition=True))
            # clusters numbered by label order (one row per cluster; a DataFrame window, not
            # an RDD round trip through Python)
            cluster_ids = (labels.select("label").distinct()
                           .withColumn("cluster", F.row_number().over(Window.orderBy("label")) - 1))
            # similarity of each non-exact member to its keeper (on the representatives' texts,
            # which are bucket members: a cluster of two exact groups is joined by near edges)
            need = mem_rows.filter((F.col("rank") > 0) & ~F.col("exact"))
            # both texts of each pair in one shuffle: the (small) pair ends are broadcast
            # against the payload, which is streamed, then gathered by member
            ends = F.broadcast(need.select("pos", F.col("rep").alias("tp"), F.lit(0).alias("side")).unionByName(
                need.select("pos", F.col("keeper_rep").alias("tp"), F.lit(1).alias("side"))))
            pairs_in = (payload.select(F.col("pos").alias("tp"), col).join(ends, "tp").groupBy("pos")
                        .agg(F.max(F.when(F.col("side") == 0, F.col(col))).alias(col + "_a"),
                             F.max(F.when(F.col("side") == 1, F.col(col))).alias(col + "_b")))
            ddl_s = "pos BIGINT, similarity DOUBLE, similarity6 DOUBLE"
            sims = _map(pairs_in, lambda t: K.pair_similarity(t, params), ddl_s)
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
        pairs_df = (pairs_exact.unionByName(pairs_near)
                    .join(idmap.withColumnRenamed("p", "pa").withColumnRenamed("pid", "a"), "pa")
                    .join(idmap.withColumnRenamed("p", "pb").withColumnRenamed("pid", "b"), "pb")
                    .orderBy("kind", "pa", "pb").select("a", "b", "similarity", "match"))
        n_pairs = n_exact + n_near
        # alternates of each keeper, in rule order; ``alt_int``: which ids were integers in the
        # input (the local engine writes them back as numbers)
        removed_rows = F.broadcast(full.filter(F.col("rank") > 0).select("pos", "keeper_pos", "rank", "id"))
        alts = (docs.select("pos", "id_int").join(removed_rows, "pos").groupBy(F.col("keeper_pos").alias("pos"))
                .agg(F.sort_array(F.collect_list(F.struct("rank", "id", "id_int"))).alias("alts"))
                .select("pos", F.transform("alts", lambda x: x["id"]).alias("alternates"),
                        F.transform("alts", lambda x: x["id_int"]).alias("alt_int")))
        # every record that is not kept: bad records, duplicate ids, copies removed
        dropped = (checked.filter(F.col("error").isNotNull()).select("pos")
                   .unionByName(dups.select("pos")).unionByName(full.filter(F.col("rank") > 0).select("pos")))
        n_kept = n_docs - n_removed
        report: dict[str, Any] = {
            "engine": "spark",
            "spark": {"master": spark.sparkContext.master, "version": spark.version, "partitions": N,
                      "components_rounds": rounds, "band_rows": n_signatures * params.nkeys,
                      "bucket_member_rows": n_member_rows},
            "inputs": [],
            "method": opts.settings.method,
            "options": opts.as_dict(),
            "documents": n_docs,
            "skipped": n_bad + n_dups,
            "skipped_records": [e.as_dict() for _, e in listed[:MAX_SKIPPED_LISTED]],
            "skipped_listed_max": MAX_SKIPPED_LISTED,
            "no_token_documents": no_tokens,
            "unreadable_times": n_time_errors if fields.time else 0,
            "exact_groups": exact_groups,
            "exact_copies_removed": n_exact,
            "signatures": n_signatures,
            "lsh": None if simhash else {
                "bands": b, "rows": r,
                "rule": "pinned" if opts.settings.bands is not None else f"recall >= {opts.settings.recall} at the threshold",
                "p_at_threshold": float(candidate_probability(opts.settings.threshold, b, r)),
                "curve": curve_table(b, r)},
            "candidates": n_cand,
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
        if not simhash:
            report["candidates_note"] = "Spark: buckets of two or more documents (distinct member lists), not pairs"
        for i, s in enumerate(sources):
            total, bad = per_input_rows.get(i, (0, 0))
            skipped = bad + int(dups_per_input.get(i, 0))
            report["inputs"].append({"path": s.path, "format": s.format, "records": total - skipped, "skipped": skipped})
        if report["unreadable_times"]:
            te = docs.filter(F.col("time_error").isNotNull())
            report["unreadable_time_records"] = [
                dict(zip(("file", "line"), _where(sources, x.pos)), field=fields.time, reason=x.time_error)
                for x in te.select("pos", "time_error").orderBy("pos").limit(MAX_SKIPPED_LISTED).collect()]
        else:
            report["unreadable_time_records"] = []
        result = SparkDedupResult(report=report)
        if out is not None:
            # the outputs as one set (outputs.OutputStage): written into a staging directory in
            # OUT and moved into place together at the end; a failure or an interrupt on the
            # way leaves the previous run's outputs as they were
            stage = OutputStage(out)
            stage.create()
            with log.stage("write") as st:
                files = write_outputs(stage.path, clusters_df, pairs_df, dropped, alts, sources, opts, spark)
                st.count = len(files)
            report["outdir"] = os.fspath(out)
            report["files"] = files + ["report.json"]
        if collect:
            result.clusters = [_cluster_row(x) for x in clusters_df.collect()]
            result.pairs = [x.asDict() for x in pairs_df.collect()]
            removed = full.filter(F.col("rank") > 0).select("pos")
            result.kept = [x.id for x in docs.join(removed, "pos", "left_anti").select("pos", "id").orderBy("pos").collect()]
        report["stages"] = log.as_list()
        report["seconds"] = round(time.perf_counter() - t_start, 4)
        report["peak_rss_mb"] = peak_rss_mb()
        report["peak_rss_note"] = "the driver process only; executors are separate processes"
        if stage is not None:
            from neardup.io.writers import atomic_open

            with atomic_open(os.path.join(stage.path, "report.json")) as f:
                json.dump(writable_tree(report), f, indent=2, ensure_ascii=False)  # (a file name not UTF-8)
                f.write("\n")
            # the rerun rule (the previous report.json, read before it is replaced): the other
            # format's kept output of the previous run goes with the previous set
            stage.commit(report["files"], stale_kept(out, opts.output_format, _local_files(sources)))
        return result
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)  # Ctrl-C; SIGTERM/SIGHUP in the CLI (cli.Terminated)
        if interrupted or stage is not None:
            _stop_jobs(spark, group, exc)  # (before the staging directory goes: tasks may write into it)
        if stage is not None:
            stage.discard()
        err = _input_error(exc) if isinstance(exc, Exception) else None
        if err is None:
            raise
        raise err from None
    finally:
        # (after an interrupt, never in place of it: the JVM may be gone or slow to answer)
        try:
            if saved_conf is not None:
                spark.conf.set("spark.sql.shuffle.partitions", saved_conf)
            for k, v in saved_group.items():
                sc.setLocalProperty(k, v)
        except Exception:
            if not interrupted:
                raise
        cached += [s.cached for s in sources if s.cached is not None]
        for df in cached if not interrupted else ():  # (an interrupted run's cache goes with its process)
            try:
                df.unpersist()
            except Exception:  # pragma: no cover
                pass


#: The local properties SparkContext.setJobGroup sets (put back after the run).
_JOB_GROUP_KEYS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")

#: Set by the command (``neardup dedup --engine spark``, whose session it is): once a run is being
#: stopped, the JVM's log is turned off (a cancelled write's "ERROR FileFormatWriter: Aborting
#: job" and its stack trace before the command's one line). A session of the caller's is left as is.
QUIET_STOP = False

#: Seconds the cleanup after an interrupt gives the JVM at most (to cancel the run's jobs, to
#: answer the call the interrupt cut short, for the cancelled tasks to end): it never hangs.
STOP_WAIT = 30.0


def _stop_jobs(spark, group: str, exc: BaseException, wait: float = STOP_WAIT) -> None:
    """After an interrupt or a failure: cancel the run's Spark jobs (those running, and those a
    JVM call still under way would start: ``cancelJobGroupAndFutureJobs``), let the call an
    interrupt cut short (if it landed inside one) finish, and wait for the tasks of the run's
    unfinished jobs to end (a failed or cancelled job's other tasks are killed, not at once),
    so that nothing still writes into the staging directory when it is deleted. Bounded by
    `wait` seconds in all; never raises.

    An interrupt that lands inside a py4j call leaves this thread's connection waiting for that
    call's answer: a call on it would read that answer as its own, or wait behind the job for
    its turn. So the JVM is asked by a thread of its own (a connection of its own), and the
    cut connection is closed (the next call on this thread opens a new one), its answer read
    first if py4j left it waiting for one (the py4j Spark 4 ships closes it itself). The call
    itself may go on in the JVM: the jobs it would start are the ones cancelled in advance."""
    deadline = time.monotonic() + wait

    def cancel() -> None:
        sc = spark.sparkContext
        quiet = not QUIET_STOP
        while True:  # (a call may meet a connection py4j is shutting down: tried again until the deadline)
            try:
                if not quiet:  # (before the cancel, and tried again as it is: a log left on printed
                    sc.setLogLevel("OFF")  # a cancelled write's JVM stack trace)
                    quiet = True
                try:
                    sc._jsc.sc().cancelJobGroupAndFutureJobs(group)
                except Exception as e:
                    if "cancelJobGroupAndFutureJobs" not in str(e):
                        raise
                    sc.cancelAllJobs()  # (a Spark before 4.0)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def tasks_ended() -> None:
        tracker = spark.sparkContext.statusTracker()
        stages: set[int] = set()
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            if info is not None and info.status != "SUCCEEDED":
                stages.update(info.stageIds)
        while time.monotonic() < deadline:
            infos = [tracker.getStageInfo(s) for s in stages]
            if not any(i.numActiveTasks for i in infos if i is not None):
                return
            time.sleep(0.05)

    _bounded(cancel, deadline)
    if isinstance(exc, KeyboardInterrupt):
        _finish_cut_call(exc, deadline)
    _bounded(tasks_ended, deadline)


def _bounded(fn, deadline: float) -> None:
    """``fn()`` in a daemon thread (a py4j connection of its own), waited for until `deadline`;
    its errors are dropped."""
    def run() -> None:
        try:
            fn()
        except Exception:
            pass

    t = threading.Thread(target=run, name="neardup-spark-stop", daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))


def _finish_cut_call(exc: BaseException, deadline: float) -> None:
    """If `exc` landed inside a py4j call of this thread (its traceback ends in py4j's
    ``send_command``), close that connection, first reading the call's answer (until
    `deadline`) if it was waiting for it: the call is then over in the JVM too. Never raises."""
    import linecache
    import traceback

    cut = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if code.co_name == "send_command" and code.co_filename.endswith(os.path.join("py4j", "clientserver.py")):
            cut = frame, lineno
    if cut is None:
        return
    frame, lineno = cut
    conn: Any = frame.f_locals.get("self")  # py4j's connection (anything else: the errors are caught)
    try:
        if "readline" in linecache.getline(frame.f_code.co_filename, lineno):
            while conn.socket is not None and time.monotonic() < deadline:
                conn.socket.settimeout(max(0.01, deadline - time.monotonic()))
                line = conn.stream.readline()
                if not line or line.startswith(b"!"):  # (the answer: py4j's RETURN_MESSAGE)
                    break
    except Exception:
        pass
    try:
        conn.close()
    except Exception:
        pass


#: Spark's error classes for an input it cannot read (a truncated .gz, a damaged Parquet footer,
#: a path that is not there): the local engine's InputFileError (exit 4), not a JVM stack trace
_READ_ERRORS = re.compile(r"\[((?:FAILED_READ_FILE|PATH_NOT_FOUND|CANNOT_READ_FILE_FOOTER)[A-Z_.]*)\] ?([^\n]*)")


def _input_error(exc: BaseException) -> InputFileError | None:
    """The InputFileError a Spark read failure stands for, else None: Spark's own sentence (it
    names the file) and the first cause the JVM gives (``EOFException: Unexpected end of
    input stream``)."""
    msg = str(exc)
    m = _READ_ERRORS.search(msg)
    if m is None:
        return None
    what = m.group(2).split(" SQLSTATE")[0].strip()
    cause = next((line.split("Caused by:", 1)[1].strip() for line in msg.splitlines() if "Caused by:" in line), None)
    return InputFileError(f"{what}" + (f" ({cause})" if cause else "") + f" [{m.group(1)}]")


def _minhash_members(reps, N: int, persist):
    """(bid, pos) of every LSH bucket of two or more representatives, identical member lists
    once; and the number of such buckets (Spark's "candidates" for MinHash)."""
    from pyspark.sql import functions as F

    bands = reps.select("pos", F.posexplode("bkeys").alias("band", "key"))
    buckets = _map(bands.repartition(N, "band", "key"), K.bucket_members, "members ARRAY<BIGINT>",
                   whole_partition=True).dropDuplicates(["members"])
    buckets = buckets.withColumn("bid", F.xxhash64("members"))
    members = persist(buckets.select("bid", F.posexplode("members").alias("i", "pos")))
    # a bucket is counted by its first member: no distinct count (and its extra shuffle)
    agg = members.agg(F.count(F.when(F.col("i") == 0, 1)).alias("b"), F.count("*").alias("m")).first()
    return members, int(agg.b), int(agg.m)


def _simhash_members(reps, N: int, params, persist):
    """(bid, band, pos, fp) of the members of the candidate pairs each (block, block value)
    bucket owns; and the number of candidate pairs — the local engine's count, since each
    pair is owned by exactly one bucket."""
    from pyspark.sql import functions as F

    bands = reps.select("pos", "fp", F.posexplode("bkeys").alias("band", "key"))
    members = persist(_map(bands.repartition(N, "band", "key"), lambda t: K.simhash_candidates(t, params),
                           "bid BIGINT, band INT, pos BIGINT, fp BIGINT, ncand BIGINT", whole_partition=True))
    agg = members.agg(F.sum("ncand").alias("c"), F.count("*").alias("m")).first()
    return members, int(agg.c or 0), int(agg.m)


def _partitions(spark, partitions: int | None, sources) -> int:
    """Partitions of every shuffle: ``partitions``; else ``spark.sql.shuffle.partitions`` when
    it was set explicitly; else as many as the inputs' read splits, at least two per core.
    (Spark's default of 200 gives a 2-core machine 200 tiny tasks per stage; the shuffled
    rows are far smaller than the input, so the input's splits are a generous measure.)"""
    if partitions:
        return int(partitions)
    if spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        return int(spark.conf.get("spark.sql.shuffle.partitions"))
    splits = sum(s.raw.rdd.getNumPartitions() for s in sources)
    return max(2 * spark.sparkContext.defaultParallelism, splits)


def _rec_error(d: dict) -> RecordError:
    return RecordError(d["file"], d["line"], d["reason"], field=d.get("field"))


def _where(sources, pos) -> tuple[str, int]:
    """(file, line) of the record named `pos` (its input's file that holds it: Source.where)."""
    pos = int(pos)
    return sources[pos >> K.POS_SHIFT].where(pos & ((1 << K.POS_SHIFT) - 1))


def _exact_pass(t: pa.Table) -> pa.Table:
    """``exact_groups`` on a partition holding whole exact-key groups, plus ``lead``: the row
    is the representative of a group of two or more (so the groups are counted by a sum,
    without a distinct count and its extra shuffle)."""
    from neardup import _sets

    g = K.exact_groups(t.select(["pos", "xkey", "ntok"]))
    pos, rep = g.column("pos").to_numpy(), g.column("rep").to_numpy()
    lead = _sets.isin(pos, rep[rep != pos])
    return _append(t, g, ["rep"]).append_column("lead", pa.array(lead, pa.bool_()))


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
        # A local checkpoint is lazy: the checksum job that follows computes the round once
        # and keeps its blocks (an eager one would be a job of its own, then the checksum a
        # second). A reliable checkpoint is written by a job of its own either way.
        return df.checkpoint(eager=True) if reliable else df.localCheckpoint(eager=False)

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


def _local_files(sources) -> list[str]:
    """The local files the inputs read (a path, or each file of a glob or a directory; a
    ``file:`` URL as its path): the ones an output in the output directory could be."""
    out = []
    for s in sources:
        for p in [s.path] + [name for _, name in (s.files or [])]:
            if isinstance(p, str) and p.startswith("file:"):
                from urllib.parse import unquote, urlparse

                p = unquote(urlparse(p).path)
            if isinstance(p, str):
                out.append(p)
    return out


def _refuse_overwriting_inputs(files: list[str], out: str, output_format: str) -> None:
    """Refuse, before the job, a run one of whose outputs is (or holds) one of its inputs: Spark
    writes clusters.parquet, pairs.parquet and kept.* as directories in "overwrite" mode, which
    deletes what is there, and report.json is replaced (an input at OUT/kept.parquet, or a file
    inside it, was lost)."""
    kept = "kept.jsonl" if output_format == "jsonl" else "kept.parquet"
    for name in ("clusters.parquet", "pairs.parquet", kept, "report.json"):
        target = os.path.join(out, name)
        if not os.path.exists(target):
            continue
        t = os.path.realpath(target)
        for f in files:
            if os.path.exists(f):
                r = os.path.realpath(f)
                if r == t or r.startswith(t + os.sep) or (os.path.isfile(t) and os.path.samefile(f, t)):
                    raise OutputError(f"{target}: this output would overwrite the input {f}: give another "
                                      "output directory")

