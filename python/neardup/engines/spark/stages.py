"""The Spark run's stages, as short steps over one :class:`SparkRun` (the run's parameters,
DataFrames, counts, stage log and cleanup list). :func:`neardup.engines.spark.run.run_spark`
calls them in order, inside the run's job group, and owns the lifecycle around them (the
interrupt, the outputs' staging directory, the cleanup); the data flow is told in
:mod:`neardup.engines.spark.run`'s docstring.

A step reads the fields earlier steps set and sets its own. Functions sent to the executors
(the ``_map`` kernels) close over the kernel parameters only, never over the run object (it
holds the SparkSession)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from neardup import kernels as K
from neardup.engines.spark.mapping import _map
from neardup.engines.spark.sources import read_sources
from neardup.errors import OutputError, RecordError
from neardup.io.records import Fields, Limits
from neardup.lsh import candidate_probability
from neardup.stages.candidates import curve_table
from neardup.stages.options import DedupOptions
from neardup.stages.report import StageLog

MAX_SKIPPED_LISTED = 1000

_CHECKED_DDL = (
    "pos BIGINT, id STRING, id_int BOOLEAN, text STRING, time DOUBLE, source STRING, time_error STRING, error STRING"
)


_META_DDL = (
    "pos BIGINT, id STRING, id_int BOOLEAN, time DOUBLE, source STRING, time_error STRING, "
    "error STRING, xkey BIGINT, ntok BIGINT, bkeys ARRAY<BIGINT>, fp BIGINT"
)


# ---- the run's state --------------------------------------------------------------------


@dataclass
class Counts:
    """What the stages counted (the report's numbers)."""

    per_input_rows: dict = field(default_factory=dict)  # input index -> (rows, bad rows)
    dups_per_input: dict = field(default_factory=dict)  # input index -> duplicate ids
    bad: int = 0
    dups: int = 0
    docs: int = 0
    exact: int = 0
    exact_groups: int = 0
    no_tokens: int = 0
    time_errors: int = 0
    signatures: int = 0
    candidates: int = 0
    member_rows: int = 0
    near: int = 0
    rounds: int = 0
    clusters: int = 0
    removed: int = 0
    near_removed: int = 0


@dataclass
class SparkRun:
    """One run: its parameters, its DataFrames as the stages make them, the stage log and the
    DataFrames to unpersist at the end (``cached``)."""

    spark: Any
    inputs: Any
    out: str | None
    opts: DedupOptions
    limits: Limits  # (a JSON line holding NaN or Infinity refused: kept.jsonl stays JSON)
    params: K.KernelParams
    bands: int  # LSH bands and rows (0, 0 for SimHash)
    rows: int
    partitions: int | None  # as given; ``N`` is the one used
    reliable_checkpoints: bool
    max_rounds: int
    t_start: float  # time.perf_counter() at the start, for the report's seconds
    log: StageLog = field(default_factory=StageLog)
    cached: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    saved_conf: str | None = None  # spark.sql.shuffle.partitions before the run
    output_stage: Any = None  # outputs.OutputStage, once the outputs are being written
    N: int = 0
    n: Counts = field(default_factory=Counts)
    listed: list = field(default_factory=list)  # (pos, RecordError) of the skipped records listed
    # the DataFrames, in the order the stages make them
    checked: Any = None
    dups: Any = None
    valid: Any = None
    docs: Any = None
    members: Any = None
    payload: Any = None
    col: str = ""  # the payload's column: text, sig or fp
    near: Any = None
    labels: Any = None
    mem_rows: Any = None
    full: Any = None

    @property
    def simhash(self) -> bool:
        return self.opts.settings.method == "simhash"

    def persist(self, df):
        """``df`` persisted (memory and disk), and unpersisted when the run ends."""
        from pyspark import StorageLevel

        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        self.cached.append(df)
        return df


@dataclass
class OutputFrames:
    """The outputs as DataFrames (not computed yet)."""

    clusters: Any
    pairs: Any
    dropped: Any  # every record that is not kept
    alts: Any  # alternates of each keeper


# ---- 1. read, check, keys: one pass over the texts, which are not kept ------------------


def read_inputs(run: SparkRun) -> None:
    """Read and number the inputs, check the records and compute their keys; count and list
    the bad records and duplicate ids (or raise the first with ``on_error="stop"``)."""
    with run.log.stage("read"):
        spark, opts = run.spark, run.opts
        run.sources = read_sources(spark, run.inputs)
        if run.out is not None:  # an input an output would overwrite: refused, as the local engine does
            _refuse_overwriting_inputs(_local_files(run.sources), run.out, opts.output_format)
        run.N = _partitions(spark, run.partitions, run.sources)
        # every shuffle of the run (joins, groupBy, distinct too) at N partitions, not 200
        run.saved_conf = spark.conf.get("spark.sql.shuffle.partitions")
        spark.conf.set("spark.sql.shuffle.partitions", str(run.N))
        run.checked = run.persist(_keyed_records(run))
        _bad_records_and_duplicate_ids(run)


def _keyed_records(run: SparkRun):
    """Every input's checked records with their keys (``doc_keys``), the texts dropped."""
    fields, limits, params = run.opts.fields, run.limits, run.params
    names = [s.path for s in run.sources]
    parts = []
    for s in run.sources:
        check = s.checker(fields, limits, names)
        parts.append(_map(s.check_input(s.raw), lambda t, c=check: K.doc_keys(c(t), params), _META_DDL))
    return _union(parts)


def _src_of():
    from pyspark.sql import functions as F

    return (F.col("pos") / (1 << K.POS_SHIFT)).cast("int").alias("s")


def _bad_records_and_duplicate_ids(run: SparkRun) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    checked, n = run.checked, run.n
    n.per_input_rows = {
        int(x.s): (int(x.n), int(x.bad))
        for x in checked.groupBy(_src_of())
        .agg(F.count("*").alias("n"), F.sum(F.col("error").isNotNull().cast("int")).alias("bad"))
        .collect()
    }
    n.bad = sum(v[1] for v in n.per_input_rows.values())
    good = checked.filter(F.col("error").isNull())
    # the earliest record of each id by a window: one shuffle by id (a groupBy and a
    # join back to the records took two)
    first_pos = F.min("pos").over(Window.partitionBy("id"))
    run.dups = run.persist(
        good.select("pos", "id").withColumn("first_pos", first_pos).filter(F.col("pos") != F.col("first_pos"))
    )
    dup_first = _list_skipped(run)
    n.dups_per_input = dict(run.dups.groupBy(_src_of()).count().collect()) if dup_first else {}
    n.dups = sum(n.dups_per_input.values())
    run.valid = good.join(run.dups.select("pos"), "pos", "left_anti") if dup_first else good


def _list_skipped(run: SparkRun) -> list:
    """The first bad records and duplicate ids, in input order, as ``run.listed``; the first
    raised with ``on_error="stop"``. Returns the first duplicate ids' rows."""
    from pyspark.sql import functions as F

    sources, fields = run.sources, run.opts.fields
    errors_first = (
        (
            run.checked.filter(F.col("error").isNotNull())
            .select("pos", "error")
            .orderBy("pos")
            .limit(MAX_SKIPPED_LISTED)
            .collect()
        )
        if run.n.bad
        else []
    )
    dup_first = run.dups.orderBy("pos").limit(MAX_SKIPPED_LISTED).collect()
    # (the file and line of a record of an input of several files: Source.where)
    listed = [
        (row.pos, sources[int(row.pos) >> K.POS_SHIFT].located(_rec_error(json.loads(row.error))))
        for row in errors_first
    ]
    for row in dup_first:
        name, rn = _where(sources, row.pos)
        first_name, frn = _where(sources, row.first_pos)
        listed.append(
            (row.pos, RecordError(name, rn, f"duplicate id {row.id!r} (first at {first_name}:{frn})", field=fields.id))
        )
    listed.sort(key=lambda x: x[0])
    run.listed = listed
    if listed and run.opts.on_error == "stop":
        raise listed[0][1]
    return dup_first


# ---- 2. exact pass: the records (no texts) grouped by exact key -------------------------


def exact_pass(run: SparkRun) -> None:
    from pyspark.sql import functions as F

    with run.log.stage("exact") as st:
        valid, n = run.valid, run.n
        cols = [c for c in valid.columns if c not in ("bkeys", "fp")]
        run.docs = docs = run.persist(
            _map(
                valid.select(*cols).repartition(run.N, "xkey"),
                _exact_pass,
                _META_DDL.replace(", bkeys ARRAY<BIGINT>, fp BIGINT", "") + ", rep BIGINT, lead BOOLEAN",
                whole_partition=True,
            )
        )
        dup_rep = F.when(F.col("rep") != F.col("pos"), F.col("rep"))
        agg = docs.agg(
            F.count("*").alias("n"),
            F.count(dup_rep).alias("n_exact"),
            F.sum(F.col("lead").cast("long")).alias("groups"),
            F.sum((F.col("ntok") == 0).cast("long")).alias("no_tokens"),
            F.count("time_error").alias("te"),
        ).first()
        n.docs, n.exact, n.exact_groups = int(agg.n), int(agg.n_exact), int(agg.groups or 0)
        n.no_tokens, n.time_errors = int(agg.no_tokens or 0), int(agg.te or 0)
        st.count = n.exact
        st.note = "normalise and hash; group identical texts"


# ---- 3. band rows of the representatives, buckets, verification -------------------------


def find_candidates(run: SparkRun) -> None:
    from pyspark.sql import functions as F

    with run.log.stage("candidates") as st:
        n, settings = run.n, run.opts.settings
        copies = F.broadcast(run.docs.filter(F.col("rep") != F.col("pos")).select("pos"))
        reps = run.valid.filter(F.col("ntok") > 0).join(copies, "pos", "left_anti")
        if run.simhash:
            run.members, n.candidates, n.member_rows = _simhash_members(reps, run.N, run.params, run.persist)
            st.note = f"{settings.max_distance + 1} blocks per fingerprint; pairs within {settings.max_distance} bits"
        else:
            run.members, n.candidates, n.member_rows = _minhash_members(reps, run.N, run.persist)
            st.note = f"{run.bands} band rows per signature; buckets of two or more (distinct member lists)"
        n.signatures = n.docs - n.exact - n.no_tokens
        st.count = n.candidates


def verify_candidates(run: SparkRun) -> None:
    with run.log.stage("verify") as st:
        _verification_payload(run)
        run.near = _verified_edges(run)
        run.n.near = run.near.count()
        st.count = run.n.near
        settings = run.opts.settings
        st.note = (
            f"{settings.verify} {settings.measure}; spanning edges of each bucket's union-find"
            if settings.verify == "exact" or not run.simhash
            else "estimate: 1 - distance / 64"
        )


def _verification_payload(run: SparkRun) -> None:
    """Texts (or signatures, or fingerprints) of the bucket members only: every document the
    verification and the keeper similarities need is one of them."""
    params, members = run.params, run.members
    fields, limits = run.opts.fields, run.limits
    if run.opts.settings.verify == "exact":
        texts = _texts(run.sources, members.select("pos").distinct(), fields, limits)
        run.payload, run.col = run.persist(texts), "text"
    elif run.simhash:
        run.payload, run.col = members.select("pos", "fp").distinct(), "fp"
    else:
        texts = _texts(run.sources, members.select("pos").distinct(), fields, limits)
        run.payload, run.col = (
            run.persist(_map(texts, lambda t: K.signatures(t, params), "pos BIGINT, sig BINARY")),
            "sig",
        )


def _verified_edges(run: SparkRun):
    params, members, payload, N = run.params, run.members, run.payload, run.N
    edge_ddl = "a BIGINT, b BIGINT, similarity DOUBLE, similarity6 DOUBLE"
    if run.simhash:
        vin = members.select("bid", "band", "pos", "fp")
        if run.opts.settings.verify == "exact":
            vin = vin.join(payload, "pos").select("bid", "band", "pos", "fp", "text")
        # each candidate pair is owned by one bucket: no pair is verified twice
        return run.persist(
            _map(vin.repartition(N, "bid"), lambda t: K.simhash_verify(t, params), edge_ddl, whole_partition=True)
        )
    vin = members.join(payload, "pos").select("bid", "pos", run.col).repartition(N, "bid")
    return run.persist(
        _map(vin, lambda t: K.verify_buckets(t, params), edge_ddl, whole_partition=True).dropDuplicates(["a", "b"])
    )  # a pair in several buckets


# ---- 4. connected components, 5. keepers ------------------------------------------------


def clusters(run: SparkRun) -> None:
    """The "clusters" stage: components of exact + verified edges, then each one's keeper."""
    with run.log.stage("clusters") as st:
        connect_components(run)
        choose_keepers(run)
        st.count = run.n.clusters
        st.note = f"large-star/small-star, {run.n.rounds} rounds"


def connect_components(run: SparkRun) -> None:
    from pyspark.sql import functions as F

    docs, near = run.docs, run.near
    exact_edges = docs.filter(F.col("rep") != F.col("pos")).select(F.col("pos").alias("u"), F.col("rep").alias("v"))
    near_edges = near.select(F.greatest("a", "b").alias("u"), F.least("a", "b").alias("v"))
    edges = exact_edges.unionByName(near_edges).distinct()
    labels, run.n.rounds = _components(run.spark, edges, run.N, run.max_rounds, run.reliable_checkpoints)
    run.labels = run.persist(labels)


def choose_keepers(run: SparkRun) -> None:
    """Each cluster's keeper (the local keeper rule), the members' ranks and their similarity
    to their keeper (``run.full``); the cluster and removal counts."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    labels, n = run.labels, run.n
    kin = labels.join(run.docs.select("pos", "id", "time", "source", "xkey", "rep"), "pos").repartition(run.N, "label")
    ddl = (
        "label BIGINT, pos BIGINT, id STRING, rank BIGINT, size BIGINT, keeper_pos BIGINT, "
        "keeper_id STRING, rep BIGINT, keeper_rep BIGINT, exact BOOLEAN"
    )
    prefer = tuple(run.opts.settings.prefer_source)
    run.mem_rows = run.persist(_map(kin, lambda t: K.keeper_rows(t, prefer), ddl, whole_partition=True))
    # clusters numbered by label order (one row per cluster; a DataFrame window, not
    # an RDD round trip through Python)
    cluster_ids = (
        labels.select("label").distinct().withColumn("cluster", F.row_number().over(Window.orderBy("label")) - 1)
    )
    full = (
        run.mem_rows.join(cluster_ids, "label")
        .join(_keeper_similarities(run).select("pos", "similarity6"), "pos", "left")
        .withColumn("similarity", F.when(F.col("exact"), F.lit(1.0)).otherwise(F.col("similarity6")))
        .withColumn("match", F.when(F.col("exact"), F.lit("exact")).otherwise(F.lit("near")))
    )
    run.full = full = run.persist(full)
    agg = full.agg(
        F.sum((F.col("rank") == 0).cast("long")).alias("c"),
        F.sum((F.col("rank") > 0).cast("long")).alias("r"),
        F.sum(((F.col("rank") > 0) & ~F.col("exact")).cast("long")).alias("nr"),
    ).first()
    n.clusters, n.removed, n.near_removed = int(agg.c or 0), int(agg.r or 0), int(agg.nr or 0)


def _keeper_similarities(run: SparkRun):
    """(pos, similarity, similarity6) of each non-exact member to its keeper (on the
    representatives' texts, which are bucket members: a cluster of two exact groups is joined
    by near edges)."""
    from pyspark.sql import functions as F

    params, col = run.params, run.col
    need = run.mem_rows.filter((F.col("rank") > 0) & ~F.col("exact"))
    # both texts of each pair in one shuffle: the (small) pair ends are broadcast
    # against the payload, which is streamed, then gathered by member
    ends = F.broadcast(
        need.select("pos", F.col("rep").alias("tp"), F.lit(0).alias("side")).unionByName(
            need.select("pos", F.col("keeper_rep").alias("tp"), F.lit(1).alias("side"))
        )
    )
    pairs_in = (
        run.payload.select(F.col("pos").alias("tp"), col)
        .join(ends, "tp")
        .groupBy("pos")
        .agg(
            F.max(F.when(F.col("side") == 0, F.col(col))).alias(col + "_a"),
            F.max(F.when(F.col("side") == 1, F.col(col))).alias(col + "_b"),
        )
    )
    ddl_s = "pos BIGINT, similarity DOUBLE, similarity6 DOUBLE"
    return _map(pairs_in, lambda t: K.pair_similarity(t, params), ddl_s)


# ---- outputs ----------------------------------------------------------------------------


def output_frames(run: SparkRun) -> OutputFrames:
    """clusters, pairs, the records not kept and the keepers' alternates, as DataFrames."""
    from pyspark.sql import functions as F

    full = run.full
    clusters_df = (
        full.filter(F.col("rank") > 0)
        .groupBy("cluster", "keeper_id", "size")
        .agg(F.sort_array(F.collect_list(F.struct("rank", "id", "similarity", "match"))).alias("m"))
        .select(
            "cluster",
            F.col("keeper_id").alias("keeper"),
            "size",
            F.transform(
                "m",
                lambda x: F.struct(x["id"].alias("id"), x["similarity"].alias("similarity"), x["match"].alias("match")),
            ).alias("members"),
        )
        .orderBy("cluster")
    )
    pairs_df = _pairs_frame(run)
    # alternates of each keeper, in rule order; ``alt_int``: which ids were integers in the
    # input (the local engine writes them back as numbers)
    removed_rows = F.broadcast(full.filter(F.col("rank") > 0).select("pos", "keeper_pos", "rank", "id"))
    alts = (
        run.docs.select("pos", "id_int")
        .join(removed_rows, "pos")
        .groupBy(F.col("keeper_pos").alias("pos"))
        .agg(F.sort_array(F.collect_list(F.struct("rank", "id", "id_int"))).alias("alts"))
        .select(
            "pos",
            F.transform("alts", lambda x: x["id"]).alias("alternates"),
            F.transform("alts", lambda x: x["id_int"]).alias("alt_int"),
        )
    )
    # every record that is not kept: bad records, duplicate ids, copies removed
    dropped = (
        run.checked.filter(F.col("error").isNotNull())
        .select("pos")
        .unionByName(run.dups.select("pos"))
        .unionByName(full.filter(F.col("rank") > 0).select("pos"))
    )
    return OutputFrames(clusters=clusters_df, pairs=pairs_df, dropped=dropped, alts=alts)


def _pairs_frame(run: SparkRun):
    """(a, b, similarity, match): the exact pairs (copy, representative), then the near ones."""
    from pyspark.sql import functions as F

    docs = run.docs
    idmap = docs.select(F.col("pos").alias("p"), F.col("id").alias("pid"))
    pairs_exact = docs.filter(F.col("rep") != F.col("pos")).select(
        F.col("rep").alias("pa"),
        F.col("pos").alias("pb"),
        F.lit(1.0).alias("similarity"),
        F.lit("exact").alias("match"),
        F.lit(0).alias("kind"),
    )
    pairs_near = run.near.select(
        F.least("a", "b").alias("pa"),
        F.greatest("a", "b").alias("pb"),
        F.col("similarity6").alias("similarity"),
        F.lit("near").alias("match"),
        F.lit(1).alias("kind"),
    )
    return (
        pairs_exact.unionByName(pairs_near)
        .join(idmap.withColumnRenamed("p", "pa").withColumnRenamed("pid", "a"), "pa")
        .join(idmap.withColumnRenamed("p", "pb").withColumnRenamed("pid", "b"), "pb")
        .orderBy("kind", "pa", "pb")
        .select("a", "b", "similarity", "match")
    )


def collect_rows(run: SparkRun, frames: OutputFrames, result) -> None:
    """The output rows into ``result`` (``collect=True``)."""
    from pyspark.sql import functions as F

    result.clusters = [_cluster_row(x) for x in frames.clusters.collect()]
    result.pairs = [x.asDict() for x in frames.pairs.collect()]
    removed = run.full.filter(F.col("rank") > 0).select("pos")
    result.kept = [
        x.id for x in run.docs.join(removed, "pos", "left_anti").select("pos", "id").orderBy("pos").collect()
    ]


# ---- the report -------------------------------------------------------------------------


def build_report(run: SparkRun) -> dict[str, Any]:
    """report.json, but for the output files and the timings (the run adds them)."""
    spark, opts, n = run.spark, run.opts, run.n
    report: dict[str, Any] = {
        "engine": "spark",
        "spark": {
            "master": spark.sparkContext.master,
            "version": spark.version,
            "partitions": run.N,
            "components_rounds": n.rounds,
            "band_rows": n.signatures * run.params.nkeys,
            "bucket_member_rows": n.member_rows,
        },
        "inputs": [],
        "method": opts.settings.method,
        "options": opts.as_dict(),
        "documents": n.docs,
        "skipped": n.bad + n.dups,
        "skipped_records": [e.as_dict() for _, e in run.listed[:MAX_SKIPPED_LISTED]],
        "skipped_listed_max": MAX_SKIPPED_LISTED,
        "no_token_documents": n.no_tokens,
        "unreadable_times": n.time_errors if opts.fields.time else 0,
        "exact_groups": n.exact_groups,
        "exact_copies_removed": n.exact,
        "signatures": n.signatures,
        "lsh": None if run.simhash else _lsh_report(run),
        "candidates": n.candidates,
        "verified_pairs": n.exact + n.near,
        "near_pairs": n.near,
        "near_pairs_note": "Spark: spanning edges only (same components as all verified pairs)",
        "clusters": n.clusters,
        "copies_removed": n.removed,
        "near_copies_removed": n.near_removed,
        "kept": n.docs - n.removed,
        "outdir": None,
        "files": [],
    }
    if not run.simhash:
        report["candidates_note"] = "Spark: buckets of two or more documents (distinct member lists), not pairs"
    report["inputs"] = _inputs_report(run)
    report["unreadable_time_records"] = _unreadable_time_records(run) if report["unreadable_times"] else []
    return report


def _lsh_report(run: SparkRun) -> dict[str, Any]:
    settings, b, r = run.opts.settings, run.bands, run.rows
    return {
        "bands": b,
        "rows": r,
        "rule": "pinned" if settings.bands is not None else f"recall >= {settings.recall} at the threshold",
        "p_at_threshold": float(candidate_probability(settings.threshold, b, r)),
        "curve": curve_table(b, r),
    }


def _inputs_report(run: SparkRun) -> list[dict[str, Any]]:
    inputs = []
    for i, s in enumerate(run.sources):
        total, bad = run.n.per_input_rows.get(i, (0, 0))
        skipped = bad + int(run.n.dups_per_input.get(i, 0))
        inputs.append({"path": s.path, "format": s.format, "records": total - skipped, "skipped": skipped})
    return inputs


def _unreadable_time_records(run: SparkRun) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    te = run.docs.filter(F.col("time_error").isNotNull())
    return [
        dict(zip(("file", "line"), _where(run.sources, x.pos)), field=run.opts.fields.time, reason=x.time_error)
        for x in te.select("pos", "time_error").orderBy("pos").limit(MAX_SKIPPED_LISTED).collect()
    ]


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
    parts = [
        _map(
            s.check_input(s.raw.join(want, "pos", "left_semi")), s.checker(fields, limits, names), _CHECKED_DDL
        ).select("pos", "text")
        for s in sources
    ]
    return _union(parts)


# ---- the stages' Spark pieces -----------------------------------------------------------


def _minhash_members(reps, N: int, persist):
    """(bid, pos) of every LSH bucket of two or more representatives, identical member lists
    once; and the number of such buckets (Spark's "candidates" for MinHash)."""
    from pyspark.sql import functions as F

    bands = reps.select("pos", F.posexplode("bkeys").alias("band", "key"))
    buckets = _map(
        bands.repartition(N, "band", "key"), K.bucket_members, "members ARRAY<BIGINT>", whole_partition=True
    ).dropDuplicates(["members"])
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
    members = persist(
        _map(
            bands.repartition(N, "band", "key"),
            lambda t: K.simhash_candidates(t, params),
            "bid BIGINT, band INT, pos BIGINT, fp BIGINT, ncand BIGINT",
            whole_partition=True,
        )
    )
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
    return {
        "cluster": x.cluster,
        "keeper": x.keeper,
        "size": x.size,
        "members": [{"id": m.id, "similarity": m.similarity, "match": m.match} for m in x.members],
    }


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
            raise RuntimeError(
                f"connected components did not converge in {max_rounds} large-star/small-star rounds (raise max_rounds)"
            )
        both = e.unionByName(e.select(F.col("v").alias("u"), F.col("u").alias("v")))
        ls = _map(both.repartition(N, "u"), K.large_star, "u BIGINT, v BIGINT", whole_partition=True)
        ss = _map(ls.repartition(N, "u"), K.small_star, "u BIGINT, v BIGINT", whole_partition=True)
        e_new = checkpoint(ss.distinct())
        rounds += 1
        cur = checksum(e_new)
        e = e_new
        converged = cur == prev
        prev = cur
    labels = (
        e.select(F.col("u").alias("pos"), F.col("v").alias("label"))
        .unionByName(e.select(F.col("v").alias("pos"), F.col("v").alias("label")))
        .distinct()
    )
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
                    raise OutputError(
                        f"{target}: this output would overwrite the input {f}: give another output directory"
                    )
