"""``neardup index ...`` and ``neardup serve``: argument parsing and commands.

Registered in neardup/cli.py by one call, :func:`register`. Exit codes are those of the
``neardup`` command (docs/dedup.md), plus 6: the index is locked by another writer, 7: the
index is corrupt, 8: the index's settings differ from those asked for.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import time

# The neardup command's exit codes, defined once in neardup/cli.py; the index adds 6-9.
from neardup.cli import (EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_OUTPUT, EXIT_RECORD, EXIT_USAGE,
                         exit_for)

EXIT_LOCKED, EXIT_CORRUPT, EXIT_CONFIG, EXIT_NOT_FOUND, EXIT_LISTEN = 6, 7, 8, 9, 10


def _fields_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("fields")
    g.add_argument("--id-field", default="id", help="record id field (default: id)")
    g.add_argument("--text-field", default="text", help="text field (default: text)")
    g.add_argument("--title-field", default=None,
                   help="optional title field, prepended to the text (compared with it, as in neardup dedup)")
    g.add_argument("--time-field", default="published_at",
                   help="publish time field, for the keeper rule and --older-than (default: published_at)")
    g.add_argument("--source-field", default="source", help="source field, for --prefer-source (default: source)")
    g.add_argument("--max-chars", type=int, default=5_000_000,
                   help="longest text accepted, in characters (default: 5,000,000)")


def register(sub) -> None:
    """Add the ``index`` and ``serve`` subcommands to the ``neardup`` parser's subparsers."""
    p = sub.add_parser("index", help="a persistent, incremental index (init, add, query, stats, export, remove, "
                                     "compact, check, backup)",
                       description="A persistent near-duplicate index in a directory: each added document is "
                                   "checked against everything older, clustered, and stored (docs/index.md).")
    isub = p.add_subparsers(dest="index_command", metavar="ACTION")

    q = isub.add_parser("init", help="create an index in DIR",
                        description="Create an index in DIR. Its settings are stored in it and checked on every "
                                    "open; they are those of neardup dedup, with the same defaults.")
    q.add_argument("dir", metavar="DIR", help="the index's directory (created; must not hold an index)")
    q.add_argument("--method", default="minhash", choices=["minhash", "simhash"],
                   help="MinHash signatures in LSH bands, or 64-bit SimHash fingerprints (default: minhash)")
    q.add_argument("--max-distance", type=int, default=3,
                   help="with --method simhash: candidates are fingerprints within this many bits (default: 3)")
    q.add_argument("--k", type=int, default=5, help="shingle size in --unit (default: 5)")
    q.add_argument("--unit", choices=["word", "whitespace", "char"], default="word",
                   help="what a shingle is made of (default: word)")
    q.add_argument("--num-perm", type=int, default=128, help="MinHash values per signature (default: 128)")
    q.add_argument("--scheme", default=None, help="MinHash scheme (default: neardup dedup's)")
    q.add_argument("--seed", type=int, default=1, help="MinHash seed (default: 1)")
    q.add_argument("--threshold", type=float, default=0.8, help="similarity threshold (default: 0.8)")
    q.add_argument("--recall", type=float, default=0.95,
                   help="the bands and rows are chosen for this recall at the threshold (default: 0.95)")
    q.add_argument("--bands", type=int, default=None, help="pin the number of LSH bands (with --rows)")
    q.add_argument("--rows", type=int, default=None, help="pin the rows per band (with --bands)")
    q.add_argument("--verify", choices=["exact", "estimate"], default="exact",
                   help="exact: every candidate's similarity computed on the stored texts; estimate: from the "
                        "signatures (default: exact)")
    q.add_argument("--measure", choices=["jaccard", "containment"], default="jaccard",
                   help="jaccard, or containment of the smaller text in the larger (default: jaccard)")
    q.add_argument("--prefer-source", default="", help="comma-separated sources preferred as keepers")
    q.add_argument("--signature-bits", type=int, choices=[16, 32], default=32,
                   help="with --verify estimate: bits kept per MinHash value (16: half the bytes, an estimate "
                        "at most 1/num_perm higher for ~0.2%% of pairs)")
    _tuning_args(q, "stored in the index", merge=True)
    q.add_argument("--no-text", action="store_true",
                   help="do not store texts (needs --verify estimate; the web page then shows no texts)")

    q = isub.add_parser("add", help="add a batch: each document checked against the archive and the earlier "
                                    "part of the batch, then inserted (all or nothing)")
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("inputs", nargs="+", metavar="FILE", help="JSONL (.gz/.zst), Parquet, CSV, '-' for stdin")
    _fields_args(q)
    q.add_argument("--verdicts", metavar="FILE", help="write one verdict per document (JSONL) to FILE")
    q.add_argument("--on-error", choices=["stop", "skip"], default="stop",
                   help="a bad record, or an id the index holds or the batch repeats: stop, adding nothing "
                        "(default), or skip it (each listed on stderr and in --json) and add the rest")
    _tuning_args(q, "for this add only; default: the index's")
    q.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    q.add_argument("--json", action="store_true", help="print a JSON summary")
    _config_checks(q)

    q = isub.add_parser("query", help="verdicts for a text or a file, without inserting",
                        description="Print one verdict (JSON) per document, as an add would give it, without "
                                    "inserting anything.")
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("inputs", nargs="*", metavar="FILE",
                   help="records: JSONL (.gz/.zst), Parquet, CSV, '-' for stdin (each record one document)")
    q.add_argument("--text", help="a text to check ('-': read it from stdin); its id is 'query'")
    q.add_argument("--text-file", metavar="FILE", action="append", default=[],
                   help="a plain-text file checked as one document, its id the file's name (repeatable)")
    _fields_args(q)
    q.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")

    q = isub.add_parser("stats", help="counts, sizes and settings")
    q.add_argument("dir", metavar="DIR", help="the index's directory")

    q = isub.add_parser("export", help="clusters and keepers as JSONL (default) or Parquet")
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("-o", "--out", required=True, metavar="FILE", help=".jsonl or .parquet ('-' for stdout JSONL)")
    q.add_argument("--all", action="store_true", help="include stories of one document")

    q = isub.add_parser("remove", help="remove documents by id and/or by age")
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("--ids", nargs="*", default=[], metavar="ID", help="ids of documents to remove")
    q.add_argument("--ids-file", metavar="FILE", help="one id per line")
    q.add_argument("--older-than", metavar="AGE|DATE",
                   help="publish time (or, without one, add time) before this: 30d, 12h, or an ISO date")
    q.add_argument("--no-scrub", action="store_true", help="do not overwrite removed texts now (compact will)")

    q = isub.add_parser("compact", help="merge segments, drop removed documents and texts")
    q.add_argument("dir", metavar="DIR", help="the index's directory")

    q = isub.add_parser("check", help="verify every checksum, SQLite's integrity and the kept counts")
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("--recount", action="store_true",
                   help="first count documents, stories, clusters and text bytes from the tables and store "
                        "the counts (the repair when check reports them wrong; takes the writer lock)")

    q = isub.add_parser("backup", help="copy the index to a new directory, consistent and checked, while it is "
                                       "in use (no lock: adds and the service go on)",
                        description="Copy the index in DIR to DEST (a new directory): the database from one "
                                    "snapshot, the segments and text logs it lists, removed texts not yet "
                                    "overwritten zeroed in the copy; then the copy is checked as 'neardup index "
                                    "check' does and renamed into place. Takes no lock: the service and adds go "
                                    "on. Started again if the index changed under it in a way the copy cannot "
                                    "hold (a remove, a compact); DEST is a whole, checked index or does not exist.")
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("dest", metavar="DEST", help="the backup's directory (must not exist; missing parents are made)")

    p = sub.add_parser("serve", help="the HTTP service over an index (FastAPI on uvicorn)",
                       description="Serve DIR over HTTP: POST /v1/documents, GET /v1/documents/{id}, "
                                   "GET /v1/clusters/{id}, DELETE /v1/documents/{id}, /v1/stats, /v1/health, "
                                   "/openapi.json, and a web page at /.")
    p.add_argument("dir", metavar="DIR", help="the index's directory")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, loopback)")
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    p.add_argument("--max-body", type=int, default=10_000_000, help="largest request body in bytes (default 10 MB)")
    p.add_argument("--max-batch", type=int, default=10_000, help="most documents in one POST (default 10,000)")
    p.add_argument("--init", action="store_true", help="create the index in DIR if there is none")
    p.add_argument("--threads", type=int, default=None, help="worker threads of a batch (default: all cores)")
    p.add_argument("--log-level", default="warning", help="uvicorn's log level (default: warning)")
    p.add_argument("--sync", choices=["full", "normal"], default="full",
                   help="full (default): every commit fsynced, survives a power cut; normal: not fsynced "
                        "per commit (survives a crash of the process, may lose the last adds on a power cut)")
    p.add_argument("--writer", choices=["process", "thread"], default="process",
                   help="process (default): adds, dry runs and removes run in a process of their own, "
                        "with their own core and Python interpreter lock; thread: in a thread of the "
                        "server's process (one process, the HTTP side and the writer share the lock)")
    p.add_argument("--fold", choices=["background", "inline"], default="background",
                   help="background (default): level 0 is folded into a segment by a thread of its own, off "
                        "the requests' path; inline: inside the add that fills it, as `index add` does (one "
                        "slow request every --l0-max articles)")
    g = p.add_argument_group("where postings go (this process only; speed and file layout, never results)")
    g.add_argument("--l0-max", type=int, default=None, metavar="N",
                   help="level 0's size limit (default: the index's, 50000); with --fold background an add "
                        "folds inline only past 2 x N")
    g.add_argument("--l0-fold-at", type=int, default=None, metavar="N",
                   help="with --fold background: a fold starts once level 0 holds more than N documents "
                        "(default: the index's, else half of --l0-max)")
    g.add_argument("--merge-max", type=int, default=None, metavar="N",
                   help="a background fold merges small segments into one of at most N documents "
                        "(default: the index's, 1000000)")
    g = p.add_argument_group("waits and limits (checked at start: a bad value is refused, exit 2)")
    g.add_argument("--write-timeout", type=_serve_timeout, default=60.0, metavar="SECONDS",
                   help="a POST or DELETE waits this long for the writer's answer, then gets 503 writer_timeout "
                        "(its outcome unknown); 0 or none: no limit (default: 60)")
    g.add_argument("--health-timeout", type=_serve_positive_seconds, default=2.0, metavar="SECONDS",
                   help="GET /v1/health waits this long for the writer's answer; then 503, unless the writer "
                        "(process or thread) is working through a long group (default: 2)")
    g.add_argument("--shutdown-timeout", type=_serve_seconds, default=10.0, metavar="SECONDS",
                   help="a shutdown (SIGTERM, Ctrl-C) waits this long for the requests under way, then cuts "
                        "them off (default: 10)")
    g.add_argument("--max-connections", type=_serve_count, default=None, metavar="N",
                   help="past N open connections a request gets 503 at once (default: as many as the limit "
                        "on open files allows, less those in use and 256 kept for the index; more is refused)")
    g.add_argument("--max-open-files", type=_serve_count, default=65536, metavar="N",
                   help="raise the soft limit on open files up to N, within the hard limit; never lowered "
                        "(default: 65536)")


def _serve_seconds(text: str) -> float:
    """argparse type of serve's --shutdown-timeout: seconds, finite, 0 or more."""
    import math

    try:
        v = float(text)
    except ValueError:
        v = None
    if v is None or not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, got {text!r}")
    return v


def _serve_positive_seconds(text: str) -> float:
    """argparse type of serve's --health-timeout: seconds, more than 0."""
    v = _serve_seconds(text)
    if v == 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text!r}")
    return v


def _serve_timeout(text: str) -> float | None:
    """argparse type of serve's --write-timeout: seconds, or 0 / none for no limit."""
    if text.strip().lower() in ("none", "off"):
        return None
    v = _serve_seconds(text)
    return v if v > 0 else None


def _serve_count(text: str) -> int:
    """argparse type of serve's --max-connections and --max-open-files: a whole number, 1 or more."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, 1 or more, got {text!r}")
    return v


def _config_checks(q: argparse.ArgumentParser) -> None:
    g = q.add_argument_group("settings checked against the index (refused if different)")
    g.add_argument("--k", type=int, default=None, help="the shingle size the caller expects")
    g.add_argument("--num-perm", type=int, default=None, help="the MinHash values per signature expected")
    g.add_argument("--scheme", default=None, help="the MinHash scheme expected")
    g.add_argument("--seed", type=int, default=None, help="the MinHash seed expected")
    g.add_argument("--threshold", type=float, default=None, help="the similarity threshold expected")


def _tuning_args(q, note: str, merge: bool = False) -> None:
    g = q.add_argument_group(f"where postings go ({note}; speed and file layout only, never results)")
    g.add_argument("--segment-min", type=int, default=None, metavar="N",
                   help="adds of at least N documents write a segment file (default 20000)")
    g.add_argument("--l0-max", type=int, default=None, metavar="N",
                   help="level 0 is folded into a segment beyond N documents (default 50000)")
    if merge:  # only background folds (neardup serve) merge: stored by init, overridden by serve
        g.add_argument("--merge-max", type=int, default=None, metavar="N",
                       help="a background fold (neardup serve) merges small segments into one of at most N "
                            "documents (default 1000000; compact rewrites everything)")


def _fields(a):
    from neardup.io.records import Fields

    return Fields(id=a.id_field, text=a.text_field, title=a.title_field, time=a.time_field or None,
                  source=a.source_field or None)


def run(a: argparse.Namespace) -> int:
    """Run ``neardup index ...`` or ``neardup serve``; errors become messages and exit codes."""
    from neardup.errors import InvalidParameterError, NeardupError
    from neardup.errors import (
        DocumentNotFoundError,
        DuplicateIdError,
        IndexConfigError,
        IndexCorruptError,
        IndexExistsError,
        IndexLockedError,
        IndexNotFoundError,
        ScrubIncompleteError,
    )
    from neardup.errors import BackupBusyError
    from neardup.errors import InputFileError, OutputError, RecordError

    name = "serve" if a.command == "serve" else f"index {a.index_command}"
    nothing = "; nothing was added" if name == "index add" else ""  # (a query adds nothing anyway)
    try:
        if a.command == "serve":
            return _serve(a)
        if a.index_command is None:
            print("neardup index: give an action (init, add, query, stats, export, remove, compact, check, backup)",
                  file=sys.stderr)
            return EXIT_USAGE
        return _INDEX[a.index_command](a)
    except (KeyboardInterrupt, Exception) as exc:
        return exit_for(exc, name, [
            (KeyboardInterrupt, EXIT_INTERRUPTED, "neardup {prog}: interrupted"),
            ((IndexLockedError, BackupBusyError), EXIT_LOCKED, "neardup {prog}: {exc}"),
            (_listen_error(), EXIT_LISTEN, "neardup {prog}: {exc}"),
            (IndexCorruptError, EXIT_CORRUPT, "neardup {prog}: the index is damaged: {exc}"),
            (_SqliteDamage, EXIT_CORRUPT, "neardup {prog}: the index is damaged: index.sqlite: {exc} "
                                          "(neardup index check says more)"),
            (ScrubIncompleteError, EXIT_OUTPUT, "neardup {prog}: {exc}"),
            (IndexConfigError, EXIT_CONFIG, "neardup {prog}: {exc}"),
            ((IndexNotFoundError, IndexExistsError, DocumentNotFoundError), EXIT_NOT_FOUND, "neardup {prog}: {exc}"),
            (DuplicateIdError, EXIT_RECORD, "neardup {prog}: {exc}" + nothing),
            (RecordError, EXIT_RECORD, "neardup {prog}: bad record: {exc}" + nothing),
            (InputFileError, EXIT_INPUT, "neardup {prog}: cannot read input: {exc}"),
            (OutputError, EXIT_OUTPUT, "neardup {prog}: cannot write output: {exc}"),
            (_DiskFull, EXIT_OUTPUT, "neardup {prog}: cannot write: the disk is full ({exc}); the index is as it "
                                     "was before this command"),
            # an operating system's error no rule above names (a file where a directory goes, a
            # directory where a file goes, ...): said, not a traceback
            (OSError, EXIT_OUTPUT if name in ("index init", "index export", "index compact", "index backup") else EXIT_INPUT,
             "neardup {prog}: {exc}"),
            ((InvalidParameterError, ValueError), EXIT_USAGE, "neardup {prog}: {exc}"),
            (NeardupError, EXIT_INTERNAL, "neardup {prog}: {exc}"),
        ])


def _init(a) -> int:
    from neardup.index import Index

    from neardup.settings import DEFAULT_SCHEME

    idx = Index.create(a.dir, method=a.method, k=a.k, unit=a.unit, num_perm=a.num_perm,
                       scheme=a.scheme or DEFAULT_SCHEME, seed=a.seed,
                       threshold=a.threshold, recall=a.recall, bands=a.bands, rows=a.rows, verify=a.verify,
                       measure=a.measure, prefer_source=[s.strip() for s in a.prefer_source.split(",") if s.strip()],
                       store_text=not a.no_text, signature_bits=a.signature_bits, max_distance=a.max_distance,
                       segment_min=a.segment_min, l0_max=a.l0_max, merge_max=a.merge_max)
    c = idx.config
    idx.close()
    if c.settings.method == "simhash":  # no permutations or bands: 64-bit fingerprints in block tables
        how = f"simhash k={c.settings.k} max_distance={c.settings.max_distance} ({c.settings.max_distance + 1} blocks)"
    else:
        how = (f"{c.settings.method} k={c.settings.k} num_perm={c.settings.num_perm} scheme={c.settings.scheme} seed={c.settings.seed}, "
               f"{c.bands} bands x {c.rows} rows")
    print(f"created index {a.dir}: {how}, threshold {c.settings.threshold}, verify {c.settings.verify}")
    return EXIT_OK


@contextlib.contextmanager
def _without_cyclic_gc():
    """The cyclic garbage collector off for one add from the command line (reference counting
    still frees everything). A day's add makes about a million container objects (parsed
    records, checked records, the plan's rows) that all live until the add ends, so the
    collector's passes over them find nothing: measured on the 1M + 200,000 benchmark, 1,327
    passes took 0.98 s of a 12.7 s add and freed 311 objects. The previous state is restored
    (``main()`` may be called from Python)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _add(a) -> int:
    from neardup.index import Index
    from neardup.io.writers import dumps

    t0 = time.perf_counter()
    before = None
    try:
        # the verdicts' file is opened before the add: one that cannot be written is said while
        # nothing is added yet (it was found after the commit: the batch in, its verdicts lost)
        with _verdicts_out(a.verdicts) as vf:
            with _without_cyclic_gc(), Index.open(a.dir, threads=a.threads, k=a.k, num_perm=a.num_perm,
                                                  scheme=a.scheme, seed=a.seed, threshold=a.threshold,
                                                  segment_min=a.segment_min, l0_max=a.l0_max) as idx:
                before = idx.stats()["batches"]
                verdicts = idx.add(a.inputs if a.inputs != ["-"] else "-", fields=_fields(a), max_chars=a.max_chars,
                                   on_error=a.on_error)
                st = idx.totals()
            dt = time.perf_counter() - t0
            if vf is not None:
                for v in verdicts:
                    vf.write(dumps(v.as_dict()) + "\n")
    except KeyboardInterrupt:
        return _interrupted("add", a.dir, before)
    dup = verdicts.duplicates
    out = sys.stderr if a.verdicts == "-" else sys.stdout  # (stdout holds the verdicts then)
    bad_times = verdicts.unreadable_times
    summary = {"added": len(verdicts), "new": len(verdicts) - dup, "duplicates": dup, "seconds": round(dt, 3),
               "documents": st["documents"], "clusters": st["clusters"], "unreadable_times": len(bad_times)}
    if a.on_error == "skip":
        skipped = verdicts.skipped
        summary["skipped"] = len(skipped)
        summary["skipped_records"] = [e.as_dict() for e in skipped[:1000]]  # (as dedup's report.json lists them)
        for e in skipped[:20]:
            print(f"neardup index add: skipped {e}", file=sys.stderr)
        if len(skipped) > 20:
            print(f"neardup index add: ... and {len(skipped) - 20:,} more skipped (--json lists the first 1,000)",
                  file=sys.stderr)
    if bad_times:
        first = "; ".join(f"{i!r}: {why}" for i, why in bad_times[:3])
        print(f"neardup index add: warning: {_n(len(bad_times), 'time')} could not be read and count as missing "
              f"for the keeper rule (the values are kept with the documents' fields): {first}"
              + (" ..." if len(bad_times) > 3 else ""), file=sys.stderr)
    if a.json:
        print(json.dumps(summary), file=out)
    else:
        print(f"added {_n(len(verdicts), 'document')} in {dt:.2f} s: {_n(len(verdicts) - dup, 'new story', 'new stories')}, "
              f"{_n(dup, 'duplicate')}"
              + (f", {_n(len(verdicts.skipped), 'record')} skipped" if verdicts.skipped else "")
              + f"; the index holds {_n(st['documents'], 'document')}, "
              f"{_n(st['clusters'], 'cluster')} of two or more", file=out)
    return EXIT_OK


@contextlib.contextmanager
def _verdicts_out(path: str | None):
    """Where `add --verdicts` writes: nothing (None), stdout ("-"), a file that is not a regular
    one (a pipe, /dev/stdout: written as it is, not replaced by a file), else a regular file
    written atomically (complete, or the old one left)."""
    from neardup.errors import OutputError
    from neardup.io.writers import atomic_open

    if path is None:
        yield None
    elif path == "-":
        yield sys.stdout
    elif os.path.isdir(path):
        raise OutputError(f"{path}: is a directory (--verdicts names a file)")
    elif os.path.exists(path) and not os.path.isfile(path):
        try:
            f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        with f:
            yield f
    else:
        with atomic_open(path) as f:
            yield f


#: file names that look like a plain text, not records (query's hint to use --text-file)
PLAIN_TEXT = (".txt", ".text", ".md", ".html", ".htm")


def _query(a) -> int:
    from neardup.index import Index
    from neardup.errors import RecordError

    given = [bool(a.inputs), a.text is not None, bool(a.text_file)]
    if sum(given) != 1:
        print("neardup index query: give one of FILE(s), --text or --text-file", file=sys.stderr)
        return EXIT_USAGE
    records = None
    if a.text is not None:
        records = [{"id": "query", "text": sys.stdin.read() if a.text == "-" else a.text}]
    elif a.text_file:
        records = [{"id": os.path.basename(f), "text": _read_text_file(f)} for f in a.text_file]
    with Index.open(a.dir, threads=a.threads) as idx:
        if records is not None:
            vs = idx.query(records, fields=None, max_chars=a.max_chars)
        else:
            try:
                vs = idx.query(a.inputs if a.inputs != ["-"] else "-", fields=_fields(a), max_chars=a.max_chars)
            except RecordError:
                if any(f.lower().endswith(PLAIN_TEXT) for f in a.inputs):
                    print("neardup index query: FILE is read as records (JSONL, Parquet, CSV); "
                          "check a plain-text file with --text-file", file=sys.stderr)
                raise
    for v in vs:
        print(json.dumps(v.as_dict(), ensure_ascii=False))
    return EXIT_OK


def _read_text_file(path: str) -> str:
    """A plain-text file's content (UTF-8), for ``query --text-file`` and ``remove --ids-file``;
    :class:`InputFileError` naming the file otherwise."""
    from neardup.errors import InputFileError
    from neardup.io.records import decode_utf8

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return decode_utf8(data)
    except ValueError as exc:
        raise InputFileError(f"{path}: {exc}") from None


def _n(k: int, one: str, many: str | None = None) -> str:
    """'1 document', '2 documents' (thousands separated)."""
    return f"{k:,} {one if k == 1 else (many or one + 's')}"


def _stats(a) -> int:
    from neardup.index import Index

    with Index.open(a.dir) as idx:
        print(json.dumps(idx.stats(), indent=2))
    return EXIT_OK


#: what `export -o` writes: JSONL, or Parquet a block of this many clusters at a time (an
#: archive's clusters are never all in memory at once)
EXPORT_BLOCK = 8192


def _export(a) -> int:
    from neardup.index import Index
    from neardup.io.writers import atomic_open, dumps

    kind = "jsonl" if a.out == "-" or a.out.lower().endswith(".jsonl") else \
        "parquet" if a.out.lower().endswith(".parquet") else None
    if kind is None:
        print(f"neardup index export: -o {a.out}: name a .jsonl or .parquet file, or '-' for JSONL on stdout",
              file=sys.stderr)
        return EXIT_USAGE
    n = 0
    with Index.open(a.dir) as idx:
        rows = idx.clusters(min_size=1 if a.all else 2)
        if a.out == "-":
            for r in rows:
                sys.stdout.write(dumps(r) + "\n")
                n += 1
        elif kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            # ids as strings (an index may hold integer and string ids: one column type)
            schema = pa.schema([("cluster", pa.int64()), ("keeper", pa.string()), ("size", pa.int64()),
                                ("members", pa.list_(pa.struct([("id", pa.string()), ("similarity", pa.float64()),
                                                                ("match", pa.string())])))])
            with atomic_open(a.out, "wb") as f, pq.ParquetWriter(f, schema) as w:
                block: list[dict] = []
                for r in rows:
                    r["keeper"] = str(r["keeper"])
                    for m in r["members"]:
                        m["id"] = str(m["id"])
                    block.append(r)
                    if len(block) == EXPORT_BLOCK:
                        w.write_table(pa.Table.from_pylist(block, schema=schema))
                        n += len(block)
                        block = []
                if block or n == 0:  # (an empty export is a file with the schema and no rows)
                    w.write_table(pa.Table.from_pylist(block, schema=schema))
                    n += len(block)
        else:
            with atomic_open(a.out) as f:
                for r in rows:
                    f.write(dumps(r) + "\n")
                    n += 1
    if a.out != "-":
        print(f"wrote {_n(n, 'cluster')} to {a.out}")
    return EXIT_OK


def _remove(a) -> int:
    from neardup.index import Index

    ids = list(a.ids)
    if a.ids_file:
        ids += [line.strip() for line in _read_text_file(a.ids_file).splitlines() if line.strip()]
    from neardup.index.removal import parse_age

    cutoff = parse_age(a.older_than) if a.older_than else None
    if not ids and cutoff is None:
        print("neardup index remove: give --ids, --ids-file or --older-than", file=sys.stderr)
        return EXIT_USAGE
    before = None
    try:
        with Index.open(a.dir) as idx:
            before = idx.stats()["batches"]
            n = idx.remove(ids, older_than=cutoff, scrub=not a.no_scrub)
    except KeyboardInterrupt:
        return _interrupted("remove", a.dir, before)
    print(f"removed {n:,} documents")
    return EXIT_OK


def _interrupted(what: str, directory: str, before: int | None) -> int:
    """Ctrl-C during an add or a remove: whether it went in, from the index itself (a commit
    is all or nothing; "interrupted" alone left a user thinking nothing had happened when the
    batch was in)."""
    from neardup.index import Index

    done = None
    if before is not None:
        try:
            with Index.open(directory) as idx:
                done = idx.stats()["batches"] > before
        except Exception:  # noqa: BLE001 - the message then says it does not know
            done = None
    if done is None:
        state = "whether it was committed is not known: look with `neardup index stats`"
    elif not done:
        state = "nothing was " + ("added" if what == "add" else "removed")
    elif what == "add":
        state = "the batch had been committed: its documents are in the index"
    else:
        state = ("the removal had been committed; removed texts not yet overwritten in the text log are "
                 "overwritten when the index is next opened for writing (an add, a remove, a compact)")
    print(f"neardup index {what}: interrupted; {state}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _compact(a) -> int:
    from neardup.index import Index

    with Index.open(a.dir) as idx:
        r = idx.compact()
    print(f"compacted: {r['bytes_before']:,} -> {r['bytes_after']:,} bytes on disk"
          + (f" (the database's {r['database_free_pages']:,} free pages given back)" if r.get("vacuumed") else ""))
    return EXIT_OK


def _check(a) -> int:
    from neardup.index import Index

    with Index.open(a.dir) as idx:
        if a.recount:
            c = idx.recount()
            print("counts stored: " + ", ".join(f"{k} {v:,}" for k, v in c.items()))
        r = idx.check()
    print(f"index is sound: SQLite {r['sqlite']}, {r['segments']} segment(s), {r['texts']:,} texts checked")
    return EXIT_OK


def _backup(a) -> int:
    from neardup.index.backup import backup

    r = backup(a.dir, a.dest)
    print(f"backed up: {r['documents']:,} documents, {r['segments']} segment(s), {r['text_files']} text log(s), "
          f"{r['bytes']:,} bytes, checked, in {a.dest} (generation {r['generation']}, {r['seconds']:.1f} s"
          + (f", {r['attempts']} attempts" if r["attempts"] > 1 else "") + ")")
    return EXIT_OK


class _DiskFullMeta(type):
    """isinstance(exc, _DiskFull): SQLite's "database or disk is full" (SQLITE_FULL), or an
    operating system's ENOSPC."""

    def __instancecheck__(cls, exc) -> bool:
        import errno
        import sqlite3

        if isinstance(exc, sqlite3.OperationalError):
            return "disk is full" in str(exc) or getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL"
        return isinstance(exc, OSError) and exc.errno == errno.ENOSPC


class _DiskFull(metaclass=_DiskFullMeta):
    pass


class _SqliteDamageMeta(type):
    """isinstance(exc, _SqliteDamage): SQLite found its database file damaged (SQLITE_CORRUPT,
    SQLITE_NOTADB) in the middle of a command (a damaged page it meets only when it reads it)."""

    def __instancecheck__(cls, exc) -> bool:
        import sqlite3

        if not isinstance(exc, sqlite3.DatabaseError):
            return False
        name = getattr(exc, "sqlite_errorname", "") or ""
        return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in str(exc)


class _SqliteDamage(metaclass=_SqliteDamageMeta):
    pass


def _listen_error() -> type:
    """serve's ListenError when the service module is loaded (only `serve` raises it: the other
    commands do not import FastAPI for it)."""
    mod = sys.modules.get("neardup.service.app")
    return mod.ListenError if mod is not None else _Never


class _Never(Exception):
    pass


def _serve(a) -> int:
    from neardup.service.app import serve

    return serve(a.dir, host=a.host, port=a.port, max_body=a.max_body, max_batch=a.max_batch, init=a.init,
                 threads=a.threads, log_level=a.log_level, sync=a.sync, fold=a.fold, l0_max=a.l0_max,
                 l0_fold_at=a.l0_fold_at, merge_max=a.merge_max, writer=a.writer,
                 write_timeout=a.write_timeout, health_timeout=a.health_timeout, shutdown_timeout=a.shutdown_timeout,
                 max_connections=a.max_connections, max_open_files=a.max_open_files)


_INDEX = {"init": _init, "add": _add, "query": _query, "stats": _stats, "export": _export, "remove": _remove,
          "compact": _compact, "check": _check, "backup": _backup}
