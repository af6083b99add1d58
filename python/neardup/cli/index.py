"""``neardup index ...``: argument parsing and dispatch to the actions (index_add, index_query,
index_admin). Exit codes are those of the ``neardup`` command, plus the index's 6-9
(neardup.cli.exits).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from neardup.cli import index_add, index_admin, index_query, settings_args
from neardup.cli.exits import EXIT_USAGE, exit_for, index_rules


def register(sub: Any) -> None:
    """Add the ``index`` subcommand to the ``neardup`` parser's subparsers."""
    p = sub.add_parser(
        "index",
        help="a persistent, incremental index (init, add, query, stats, export, remove, compact, check, backup)",
        description="A persistent near-duplicate index in a directory: each added document is "
        "checked against everything older, clustered, and stored (docs/index.md).",
    )
    isub = p.add_subparsers(dest="index_command", metavar="ACTION")

    q = isub.add_parser(
        "init",
        help="create an index in DIR",
        description="Create an index in DIR. Its settings are stored in it and checked on every "
        "open; they are those of neardup dedup, with the same defaults.",
    )
    q.add_argument("dir", metavar="DIR", help="the index's directory (created; must not hold an index)")
    settings_args.add_settings(q, index_admin.INIT_SETTINGS)
    q.add_argument(
        "--signature-bits",
        type=int,
        choices=[16, 32],
        default=32,
        help="with --verify estimate: bits kept per MinHash value (16: half the bytes, an estimate "
        "at most 1/num_perm higher for ~0.2%% of pairs)",
    )
    tuning_args(q, "stored in the index", merge=True)
    q.add_argument(
        "--no-text",
        action="store_true",
        help="do not store texts (needs --verify estimate; the web page then shows no texts)",
    )

    q = isub.add_parser(
        "add",
        help="add a batch: each document checked against the archive and the earlier "
        "part of the batch, then inserted (all or nothing)",
    )
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("inputs", nargs="+", metavar="FILE", help="JSONL (.gz/.zst), Parquet, CSV, '-' for stdin")
    fields_args(q)
    q.add_argument("--verdicts", metavar="FILE", help="write one verdict per document (JSONL) to FILE")
    q.add_argument(
        "--on-error",
        choices=["stop", "skip"],
        default="stop",
        help="a bad record, or an id the index holds or the batch repeats: stop, adding nothing "
        "(default), or skip it (each listed on stderr and in --json) and add the rest",
    )
    tuning_args(q, "for this add only; default: the index's")
    q.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    q.add_argument("--json", action="store_true", help="print a JSON summary")
    config_checks(q)

    q = isub.add_parser(
        "query",
        help="verdicts for a text or a file, without inserting",
        description="Print one verdict (JSON) per document, as an add would give it, without inserting anything.",
    )
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE",
        help="records: JSONL (.gz/.zst), Parquet, CSV, '-' for stdin (each record one document)",
    )
    q.add_argument("--text", help="a text to check ('-': read it from stdin); its id is 'query'")
    q.add_argument(
        "--text-file",
        metavar="FILE",
        action="append",
        default=[],
        help="a plain-text file checked as one document, its id the file's name (repeatable)",
    )
    fields_args(q)
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
    q.add_argument(
        "--older-than",
        metavar="AGE|DATE",
        help="publish time (or, without one, add time) before this: 30d, 12h, or an ISO date",
    )
    q.add_argument("--no-scrub", action="store_true", help="do not overwrite removed texts now (compact will)")

    q = isub.add_parser("compact", help="merge segments, drop removed documents and texts")
    q.add_argument("dir", metavar="DIR", help="the index's directory")

    q = isub.add_parser("check", help="verify every checksum, SQLite's integrity and the kept counts")
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument(
        "--recount",
        action="store_true",
        help="first count documents, stories, clusters and text bytes from the tables and store "
        "the counts (the repair when check reports them wrong; takes the writer lock)",
    )

    q = isub.add_parser(
        "backup",
        help="copy the index to a new directory, consistent and checked, while it is "
        "in use (no lock: adds and the service go on)",
        description="Copy the index in DIR to DEST (a new directory): the database from one "
        "snapshot, the segments and text logs it lists, removed texts not yet "
        "overwritten zeroed in the copy; then the copy is checked as 'neardup index "
        "check' does and renamed into place. Takes no lock: the service and adds go "
        "on. Started again if the index changed under it in a way the copy cannot "
        "hold (a remove, a compact); DEST is a whole, checked index or does not exist.",
    )
    q.add_argument("dir", metavar="DIR", help="the index's directory")
    q.add_argument("dest", metavar="DEST", help="the backup's directory (must not exist; missing parents are made)")


def fields_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("fields")
    g.add_argument("--id-field", default="id", help="record id field (default: id)")
    g.add_argument("--text-field", default="text", help="text field (default: text)")
    g.add_argument(
        "--title-field",
        default=None,
        help="optional title field, prepended to the text (compared with it, as in neardup dedup)",
    )
    g.add_argument(
        "--time-field",
        default="published_at",
        help="publish time field, for the keeper rule and --older-than (default: published_at)",
    )
    g.add_argument("--source-field", default="source", help="source field, for --prefer-source (default: source)")
    settings_args.add_settings(g, ["max_chars"])


def config_checks(q: argparse.ArgumentParser) -> None:
    g = q.add_argument_group("settings checked against the index (refused if different)")
    settings_args.add_expected(g, index_add.CHECKED)


def tuning_args(q, note: str, merge: bool = False) -> None:
    g = q.add_argument_group(f"where postings go ({note}; speed and file layout only, never results)")
    g.add_argument(
        "--segment-min",
        type=int,
        default=None,
        metavar="N",
        help="adds of at least N documents write a segment file (default 20000)",
    )
    g.add_argument(
        "--l0-max",
        type=int,
        default=None,
        metavar="N",
        help="level 0 is folded into a segment beyond N documents (default 50000)",
    )
    if merge:  # only background folds (neardup serve) merge: stored by init, overridden by serve
        g.add_argument(
            "--merge-max",
            type=int,
            default=None,
            metavar="N",
            help="a background fold (neardup serve) merges small segments into one of at most N "
            "documents (default 1000000; compact rewrites everything)",
        )


def run(a: argparse.Namespace) -> int:
    """Run ``neardup index ACTION``; errors become messages and exit codes."""
    name = f"index {a.index_command}"
    try:
        if a.index_command is None:
            print(
                "neardup index: give an action (init, add, query, stats, export, remove, compact, check, backup)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        return _INDEX[a.index_command](a)
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - mapped to an exit code, or raised again
        return exit_for(exc, name, index_rules(name))


_INDEX = {
    "init": index_admin.init,
    "add": index_add.run,
    "query": index_query.run,
    "stats": index_admin.stats,
    "export": index_admin.export,
    "remove": index_admin.remove,
    "compact": index_admin.compact,
    "check": index_admin.check,
    "backup": index_admin.backup,
}
