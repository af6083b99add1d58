"""``neardup dedup`` and ``neardup demo``: find, cluster and drop near-duplicates in files (or in
the embedded demo corpus)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from neardup.cli import settings_args
from neardup.cli.exits import EXIT_OK, EXIT_USAGE
from neardup.cli.settings_args import options
from neardup.cli.signals import terminate_as_interrupt

#: The settings in each --help group of dedup and demo, in their order (every field of
#: neardup.settings.Settings is in one of them: tests/cli/test_settings_flags.py).
SIGNATURES = ("method", "k", "unit", "num_perm", "scheme", "seed")
CANDIDATES = ("threshold", "recall", "bands", "rows", "max_distance", "verify", "measure")


def register(sub: Any, spark: bool) -> None:
    """Add ``dedup`` and ``demo`` to the ``neardup`` parser's subparsers; `spark`: with the
    ``--engine spark`` options (neardup.cli.spark)."""
    p = sub.add_parser(
        "dedup",
        help="find, cluster and drop near-duplicates in files",
        description="Find near-duplicates in INPUT files (JSONL, .jsonl.gz, .jsonl.zst, Parquet, "
        "CSV; '-' for stdin JSONL), cluster them, keep one per cluster. With no INPUT "
        "(or --demo), runs on the embedded demo corpus (the guide's rain story).",
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT")
    p.add_argument("-o", "--out", metavar="OUTDIR", help="output directory (required unless --demo)")
    p.add_argument("--demo", action="store_true", help="run on the embedded demo corpus")
    add_dedup_options(p)
    if spark:
        from neardup.cli import spark as spark_cli

        spark_cli.add_options(p)  # --engine spark (docs/spark.md)

    p = sub.add_parser("demo", help="run dedup on the embedded demo corpus (same as: neardup dedup --demo)")
    p.add_argument("-o", "--out", metavar="OUTDIR", help="also write the outputs here")
    add_dedup_options(p)


def add_dedup_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("fields")
    g.add_argument("--id-field", default="id", help="record id field (default: id)")
    g.add_argument("--text-field", default="text", help="text field (default: text)")
    g.add_argument("--title-field", default=None, help="optional title field, prepended to the text")
    g.add_argument(
        "--time-field",
        default="published_at",
        help="publish time field for the keeper rule (default: published_at; '' for none)",
    )
    g.add_argument("--source-field", default="source", help="source field for --prefer-source (default: source)")
    settings_args.add_settings(p.add_argument_group("signatures"), SIGNATURES)
    settings_args.add_settings(p.add_argument_group("candidates and verification"), CANDIDATES)
    g = p.add_argument_group("keeper, errors, output")
    settings_args.add_settings(g, ["prefer_source"])
    g.add_argument(
        "--on-error",
        choices=["stop", "skip"],
        default="stop",
        help="bad records: stop with an error (default) or skip and list them in the report",
    )
    settings_args.add_settings(g, ["max_chars"])
    g.add_argument(
        "--format",
        dest="output_format",
        choices=["jsonl", "parquet"],
        default="jsonl",
        help="format of the kept records (default: jsonl)",
    )
    g.add_argument("--batch-size", type=int, default=8192, help="records per batch (default: 8192)")
    g.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    g.add_argument(
        "--memory-limit",
        default=None,
        metavar="SIZE",
        help="peak memory of the whole run, e.g. 16G: each stage sizes its share from what is "
        "resident, rows spill to a file, sorts go external, verification re-reads in more "
        "passes; a limit below the input's minimum stops early and says the minimum "
        "(default: no limit; docs/scale.md)",
    )
    g.add_argument(
        "--large-bucket",
        type=int,
        default=100,
        metavar="N",
        help="LSH buckets of more than N documents are verified by a per-bucket union-find that "
        "keeps only spanning edges, not listed pair by pair (same clusters; 0: list every "
        "pair; default: 100; docs/dedup.md)",
    )
    g.add_argument("--tmp-dir", default=None, metavar="DIR", help="where spill files go (default: the system's)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress bars and no summary")
    g.add_argument("--json", action="store_true", help="print report.json to stdout instead of the summary")


def run(a: argparse.Namespace, demo: bool) -> int:
    from neardup.io.writers import writable_tree
    from neardup.stages.report import summary_text

    if demo and a.inputs:  # (the files were silently ignored)
        print(
            "neardup dedup: --demo runs on the embedded corpus: give INPUT files or --demo, not both", file=sys.stderr
        )
        return EXIT_USAGE
    if getattr(a, "engine", "local") == "spark":  # docs/spark.md (SIGTERM/SIGHUP: the same cleanup as Ctrl-C)
        from neardup.cli import spark as spark_cli

        with terminate_as_interrupt():
            return spark_cli.run(a)
    progress = (not a.quiet) and sys.stdout.isatty() and sys.stderr.isatty()
    if demo or not a.inputs:
        from neardup.demo import records

        if not a.quiet and not a.json:
            print("neardup demo: the guide's rain story as six sites ran it (embedded corpus)\n")
        from neardup.engines.local import run as run_local

        res = run_local(records(), a.out, options(a, demo=True, progress=progress, threads=a.threads))
        if a.json:
            print(json.dumps(writable_tree(res.report), indent=2))  # (as report.json writes a name not UTF-8)
        elif not a.quiet:
            print(summary_text(res.report))
            print("\nclusters:")
            for c in res.clusters:
                mem = ", ".join(f"{m['id']} ({m['match']}, J={m['similarity']:.2f})" for m in c["members"])
                print(f"  keeper {c['keeper']}: alternates {mem}")
            print("kept: " + ", ".join(str(k) for k in res.kept))
        return EXIT_OK
    if not a.out:
        print("neardup dedup: -o/--out OUTDIR is required with INPUT files", file=sys.stderr)
        return EXIT_USAGE
    with terminate_as_interrupt():
        from neardup.engines.local import run as run_local

        # rows go to files only
        res = run_local(a.inputs, a.out, options(a, progress=progress, threads=a.threads, collect=False))
    if a.json:
        print(json.dumps(writable_tree(res.report), indent=2))  # (as report.json writes a name not UTF-8)
    elif not a.quiet:
        print(summary_text(res.report))
    return EXIT_OK
