"""Writing a Spark run's outputs: clusters.parquet, pairs.parquet and the kept records.

The kept records are the input records themselves, read again from their sources: every row
not in ``dropped`` (bad records, duplicate ids, copies removed — a small set, broadcast) gets
its ``alternates`` (broadcast too) and is written in input order. JSONL lines are written
untouched but for the spliced-in alternates, as the local engine writes them. Nothing here
shuffles the corpus: the sources are scanned in file order and filtered in the JVM.

kept.parquet is written by the local engine's writer (``parquet_out.write_kept``) on the
driver: the kept records are parsed into the local engine's dicts on the executors and streamed
to the driver a partition at a time, in input order, so that the columns, their order, their
types and every value are the local engine's (the schema rule infers types per block of 8,192
records in input order; Spark's own JSON schema inference sorted the columns by name, wrote an
all-null field as a string, and a field that was an integer in a Parquet input and a float or
string in a JSONL or CSV input failed the run). The price: this file is written by one
process, like the local engine's, not one task per partition.

The outputs are written as one set (:class:`OutputStage`), as the local engine's are
(``writers.staged``): Spark writes them into a hidden staging directory inside OUT, and only
once all of them and report.json are complete are they moved into place, the previous ones
moved aside into the staging directory, which is then deleted. A run that fails or is
interrupted before that leaves the previous outputs as they were and none of its own.
"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import time
from collections.abc import Sequence

import pyarrow as pa

from neardup import kernels as K
from neardup.errors import OutputError
from neardup.io.writers import dumps, ensure_output_dir
from neardup.stages.kept import as_text, text_fields

__all__ = ["write_outputs", "OutputStage", "stale_kept", "STAGE_PREFIX"]

#: The staging directory of a run in OUT: ``.neardup-spark-<pid>x<random>`` (one per run).
STAGE_PREFIX = ".neardup-spark-"


class OutputStage:
    """A run's outputs as one set. :meth:`create` makes the hidden staging directory
    ``OUT/.neardup-spark-<pid>x<random>`` that the outputs are written into; :meth:`commit`
    moves them into OUT; :meth:`discard` (a failure, an interrupt) deletes the staging
    directory and whatever is in it, leaving OUT's previous outputs as they were.

    The swap (:meth:`commit`): a directory cannot be renamed over a non-empty one, so each
    output's previous version is first renamed into ``STAGE/previous/``, then the new one into
    its place; report.json last, by ``os.replace`` (the new set is the current one from then
    on); then the other format's kept output of the previous run (:func:`stale_kept`); then the
    staging directory is deleted. Renames only, nothing is copied: if any of them fails (or a
    signal lands among them), the ones done are undone and the previous set is back. Only a
    crash between two of them (SIGKILL, power loss: a window of a few rename calls) leaves a
    mix: some outputs new, the rest and report.json the previous run's, at most one output
    missing, and the staging directory left with the previous versions it had taken under
    ``previous/`` (docs/spark.md)."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.path = os.path.join(out, f"{STAGE_PREFIX}{os.getpid()}x{os.urandom(4).hex()}")
        # the previous outputs are in the staging directory while the swap runs (or after an
        # undo that did not finish): then it is never deleted
        self.holds_previous = False

    def create(self) -> None:
        try:
            os.mkdir(self.path)
        except OSError as exc:
            raise OutputError(f"{self.out}: cannot write: {exc.strerror or exc}") from exc

    def commit(self, names: list[str], stale: Sequence[str] = (), last: str = "report.json") -> None:
        """Move the outputs `names` (`last` last: report.json; a file, replaced by ``os.replace``,
        the commit point) from the staging directory into OUT, then the paths `stale` aside; then
        delete the staging directory."""
        aside = os.path.join(self.path, "previous")
        report, staged_report = os.path.join(self.out, last), os.path.join(self.path, last)
        current = self.out
        self.holds_previous = True
        try:
            os.mkdir(aside)
            for name in names:
                new, current = os.path.join(self.path, name), os.path.join(self.out, name)
                if name == last:
                    # not older than the outputs before it (stale_kept's rule reads its time;
                    # a file system may set a directory's time when it is moved)
                    os.utime(new)
                    os.replace(new, current)  # the commit point: the new set is current
                    break
                if os.path.lexists(current):
                    os.rename(current, os.path.join(aside, name))
                os.rename(new, current)
        except BaseException as exc:
            # undone from what the file system says (a signal may land between a rename and
            # any note of it), unless report.json was moved in: then the new set is in place
            if os.path.lexists(staged_report) or not os.path.lexists(report):
                try:
                    self._undo([n for n in names if n != last], aside)
                except OSError as undo_exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise exc from None  # (the interrupt, not what its cleanup met)
                    raise OutputError(
                        f"{current}: cannot write: {exc}; the previous outputs could not all be put "
                        f"back: those missing are in {aside}"
                    ) from undo_exc
            else:
                self.holds_previous = False
            if isinstance(exc, OSError):
                raise OutputError(f"{current}: cannot write: {exc.strerror or exc}") from exc
            raise
        self.holds_previous = False
        for path in stale:  # only once the new set is in place; deleted with the staging directory
            try:
                os.rename(path, os.path.join(aside, os.path.basename(path)))
            except OSError:
                pass  # (gone already: left as it is)
        self.discard()

    def _undo(self, names: list[str], aside: str) -> None:
        """Each output moved in back to the staging directory and its previous version back
        in its place (holds_previous stays True if this does not finish)."""
        for name in reversed(names):
            new, dst, old = (os.path.join(self.path, name), os.path.join(self.out, name), os.path.join(aside, name))
            if not os.path.lexists(new) and os.path.lexists(dst):
                os.rename(dst, new)  # (moved in)
            if os.path.lexists(old):
                os.rename(old, dst)
        self.holds_previous = False

    def discard(self) -> None:
        """Delete the staging directory (never raises). Tasks of a cancelled job may still be
        creating directories in it as it goes: tried again a few times."""
        if self.holds_previous:
            return  # an undo cut short: the previous outputs are in it, left for the user
        for _ in range(5):
            shutil.rmtree(self.path, ignore_errors=True)
            if not os.path.lexists(self.path):
                return
            time.sleep(0.2)


def stale_kept(out: str, output_format: str, inputs: list[str]) -> list[str]:
    """The other format's kept output of the previous run in `out`, removed once this run's
    outputs are in place: the local engine's rerun rule (``stages.outputs.stale_outputs``:
    listed in the previous report.json, not newer than it, not an input of this run; nothing
    else is ever touched), for a Spark run's kept *directory* too (an input anywhere inside it
    spares it). `inputs`: this run's local input files."""
    from types import SimpleNamespace

    from neardup.stages.outputs import stale_outputs

    return stale_outputs(out, output_format, [SimpleNamespace(path=p) for p in inputs], dirs=True)


def write_outputs(outdir, clusters_df, pairs_df, dropped, alts, sources, opts, spark) -> list[str]:
    from pyspark.sql import functions as F

    from neardup.engines.spark.mapping import _map

    ensure_output_dir(outdir)
    clusters_df.write.mode("overwrite").parquet(os.path.join(outdir, "clusters.parquet"))
    pairs_df.write.mode("overwrite").parquet(os.path.join(outdir, "pairs.parquet"))
    drop = F.broadcast(dropped)
    name = "kept.jsonl" if opts.output_format == "jsonl" else "kept.parquet"
    path = os.path.join(outdir, name)
    if opts.output_format == "parquet":
        _write_kept_parquet(
            path, sources, drop, alts, opts.fields.id, fields=opts.fields, block=opts.steps.parquet_block
        )
        return ["clusters.parquet", "pairs.parquet", name]
    alt = F.broadcast(alts)
    renamed = F.broadcast(alts.select("pos", F.col("alternates").alias(_ALTS), F.col("alt_int").alias(_ALT_INT)))
    parts = []  # in the sources' order: the union writes its inputs' partitions in turn
    for s in sources:
        kept = s.raw.join(drop, "pos", "left_anti")
        if s.format in ("jsonl", "csv"):
            # a file's splits in file order, each filtered in place: the lines stay in order
            # (a CSV record's ``value`` is the local reader's dict as JSON: the local engine
            # writes a kept CSV record as that dict plus "alternates")
            kept = kept.join(alt, "pos", "left")
            if s.files:  # several files (a glob): Spark orders their splits by size, not by file
                kept = kept.orderBy("pos")
            parts.append(_map(kept.select("value", "alternates", "alt_int"), _kept_lines_kernel, "value STRING"))
        else:
            # each row as the local engine writes a kept Parquet record: its dict (Arrow's
            # to_pylist), the text fields as text (as_text), the alternates as given (integer
            # ids as numbers; Spark's to_json of an array<string> wrote them as strings). The
            # run's alternates under a name of their own: a record may have an "alternates" field
            rows = kept.join(renamed, "pos", "left").orderBy("pos").select(*s.cols, _ALTS, _ALT_INT)
            parts.append(
                _map(
                    rows,
                    functools.partial(_kept_rows_lines, texts=text_fields(opts.fields), renames=s.renames, tzs=s.tzs),
                    "value STRING",
                )
            )
    df = parts[0]
    for p in parts[1:]:
        df = df.union(p)
    df.write.mode("overwrite").text(path)
    return ["clusters.parquet", "pairs.parquet", name]


#: The run's alternates column in a kept row, under a name no record field takes (a record may
#: have a field "alternates" of its own, which the run's replaces in its place).
_ALTS = "__neardup_alternates"
_ALT_INT = "__neardup_alternates_int"


def _ids_as_given(alts: list | None, ints: list | None) -> list:
    """A keeper's alternates as the input gave them: integers where the id was one."""
    if not alts:
        return []
    assert ints is not None  # (a row's alternates and their flags are null together: one left join)
    return [int(x) if i else x for x, i in zip(alts, ints)]


def _write_kept_parquet(
    path: str, sources, drop, alts, id_field: str | None = None, fields=None, block: int | None = None
) -> None:
    """``path``/part-00000.parquet: the kept records of every source, in input order, through
    the local engine's writer (module docstring). The directory is the Spark engine's layout
    for its outputs (one part file here, and ``_SUCCESS`` when it is complete)."""
    from pyspark.sql import functions as F

    from neardup.engines.spark.mapping import _map
    from neardup.stages.parquet_out import write_kept

    alt = F.broadcast(alts.select("pos", F.col("alternates").alias(_ALTS), F.col("alt_int").alias(_ALT_INT)))
    parts = []
    for s in sources:
        kept = s.raw.join(drop, "pos", "left_anti").join(alt, "pos", "left")
        if s.format in ("jsonl", "csv"):
            # the splits of a file in file order, each filtered in place: no sort needed, but
            # for an input of several files, whose splits Spark orders by size
            if s.files:
                kept = kept.orderBy("pos")
            parts.append(_map(kept.select("value", _ALTS, _ALT_INT), _kept_lines_records, "rec BINARY"))
        else:
            rows = kept.orderBy("pos").select(*s.cols, _ALTS, _ALT_INT)
            parts.append(_map(rows, functools.partial(_kept_rows_records, renames=s.renames, tzs=s.tzs), "rec BINARY"))

    def records():
        for p in parts:
            # one partition at a time on the driver (prefetchPartitions=False), in partition order
            for row in p.toLocalIterator():
                yield pickle.loads(row.rec)

    if os.path.isdir(path):  # an earlier run's output: overwritten, as Spark's writer does
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)
    os.makedirs(path)
    empty = None if fields is None else (lambda: _empty_schema(sources, fields))
    write_kept(os.path.join(path, "part-00000.parquet"), records(), id_field, empty, *([block] if block else []))
    open(os.path.join(path, "_SUCCESS"), "wb").close()


def _empty_schema(sources, fields) -> pa.Schema:
    """kept.parquet's schema for a run that keeps no record, as the local engine makes it
    (stages/kept.py, parquet_out.empty_kept_schema): a local Parquet file's columns from its
    own schema, another Parquet input's or a DataFrame's from Spark's (zoned timestamps in the
    file's zone, as ``_record_rows`` gives them), a CSV file's header as strings."""
    from pyspark.sql.pandas.types import to_arrow_type

    from neardup.engines.spark.sources import _local_path
    from neardup.io.readers import CsvSource
    from neardup.stages.parquet_out import empty_kept_schema, written_type

    columns: list = []
    for s in sources:
        if s.format == "csv":
            columns += [(h, pa.string()) for h in CsvSource(_local_path(s.path, "CSV")).header()]
        elif s.format == "parquet" and "://" not in s.path and os.path.isfile(s.path):
            import pyarrow.parquet as pq

            columns += [(f.name, written_type(f.type)) for f in pq.read_schema(s.path)]
        elif s.format in ("parquet", "dataframe"):
            by_name = {f.name: f.dataType for f in s.raw.schema.fields}
            for c in s.cols:
                t = to_arrow_type(by_name[c])
                if pa.types.is_timestamp(t) and (s.tzs or {}).get(c):
                    t = pa.timestamp(t.unit, (s.tzs or {})[c])
                columns.append(((s.renames or {}).get(c, c), written_type(t)))
    return empty_kept_schema(columns, fields)


def _kept_lines_records(t: pa.Table) -> pa.Table:
    """Kept JSONL lines (or CSV records as JSON) → pickled (record dict, alternates): the dict
    the local engine parses from the same line. Blank lines (not records) are dropped."""
    import json

    vals = t.column("value").to_pylist()
    alts = t.column(_ALTS).to_pylist()
    ints = t.column(_ALT_INT).to_pylist()
    out = [
        pickle.dumps((json.loads(v), _ids_as_given(a, n)), protocol=pickle.HIGHEST_PROTOCOL)
        for v, a, n in zip(vals, alts, ints)
        if v is not None and v.strip()
    ]
    return pa.table({"rec": pa.array(out, pa.binary())})


def _record_rows(t: pa.Table, renames: dict[str, str] | None, tzs: dict[str, str] | None = None) -> list[dict]:
    """The record dicts of kept rows (their fields under the records' own names). `tzs`: the
    time zone of each zoned timestamp column of the Parquet file (raw names): Spark hands every
    zoned timestamp in its session's zone (Etc/UTC here), the local reader in the file's, and
    the kept records keep the file's (a New York time written as -05:00, as locally)."""
    rest = t.drop_columns([_ALTS, _ALT_INT])
    for c, tz in (tzs or {}).items():
        if c in rest.column_names and pa.types.is_timestamp(rest.schema.field(c).type):
            i = rest.column_names.index(c)
            rest = rest.set_column(i, c, rest.column(c).cast(pa.timestamp(rest.schema.field(c).type.unit, tz=tz)))
    if renames:
        rest = rest.rename_columns([renames.get(c, c) for c in rest.column_names])
    return rest.to_pylist()


def _kept_rows_records(
    t: pa.Table, renames: dict[str, str] | None = None, tzs: dict[str, str] | None = None
) -> pa.Table:
    """Kept Parquet/DataFrame rows → pickled (record dict, alternates), the dicts as Arrow's
    ``to_pylist`` makes them (as the local Parquet reader does)."""
    alts = t.column(_ALTS).to_pylist()
    ints = t.column(_ALT_INT).to_pylist()
    recs = _record_rows(t, renames, tzs)
    out = [
        pickle.dumps((r, _ids_as_given(a, n)), protocol=pickle.HIGHEST_PROTOCOL) for r, a, n in zip(recs, alts, ints)
    ]
    return pa.table({"rec": pa.array(out, pa.binary())})


def _kept_rows_lines(
    t: pa.Table, texts: tuple[str, ...], renames: dict[str, str] | None = None, tzs: dict[str, str] | None = None
) -> pa.Table:
    """Kept Parquet/DataFrame rows → kept.jsonl lines, as the local engine writes them
    (stages/kept.py: ``as_text``, the alternates, ``writers.dumps``)."""
    alts = t.column(_ALTS).to_pylist()
    ints = t.column(_ALT_INT).to_pylist()
    out = []
    for r, a, n in zip(_record_rows(t, renames, tzs), alts, ints):
        as_text(r, texts)
        r["alternates"] = _ids_as_given(a, n)
        out.append(dumps(r))
    return pa.table({"value": pa.array(out, pa.string())})


def _kept_lines_kernel(t: pa.Table) -> pa.Table:
    """Kept JSONL lines with their alternates; blank lines (not records) are dropped."""
    vals = t.column("value").to_pylist()
    alts = t.column("alternates").to_pylist()
    ints = t.column("alt_int").to_pylist()
    out = [
        K.kept_jsonl_line(v, _ids_as_given(a, n)) for v, a, n in zip(vals, alts, ints) if v is not None and v.strip()
    ]
    return pa.table({"value": pa.array(out, pa.string())})
