"""``neardup index init, stats, export, remove, compact, check, backup``: make, look into and
look after an index."""

from __future__ import annotations

import argparse
import json
import sys

from neardup.cli import settings_args
from neardup.cli.exits import EXIT_OK, EXIT_USAGE
from neardup.cli.index_common import interrupted, plural, read_text_file

#: The settings ``index init`` takes, in their --help order: every Settings field but
#: ``max_chars`` (a limit of each add, not stored: ``index add --max-chars``).
INIT_SETTINGS = (
    "method",
    "max_distance",
    "k",
    "unit",
    "num_perm",
    "scheme",
    "seed",
    "threshold",
    "recall",
    "bands",
    "rows",
    "verify",
    "measure",
    "prefer_source",
)


def init(a: argparse.Namespace) -> int:
    from neardup.index import Index

    idx = Index.create(
        a.dir,
        **settings_args.values_from_args(a, INIT_SETTINGS),
        store_text=not a.no_text,
        signature_bits=a.signature_bits,
        segment_min=a.segment_min,
        l0_max=a.l0_max,
        merge_max=a.merge_max,
    )
    c = idx.config
    idx.close()
    if c.settings.method == "simhash":  # no permutations or bands: 64-bit fingerprints in block tables
        how = f"simhash k={c.settings.k} max_distance={c.settings.max_distance} ({c.settings.max_distance + 1} blocks)"
    else:
        how = (
            f"{c.settings.method} k={c.settings.k} num_perm={c.settings.num_perm} scheme={c.settings.scheme} "
            f"seed={c.settings.seed}, {c.bands} bands x {c.rows} rows"
        )
    print(f"created index {a.dir}: {how}, threshold {c.settings.threshold}, verify {c.settings.verify}")
    return EXIT_OK


def stats(a: argparse.Namespace) -> int:
    from neardup.index import Index

    with Index.open(a.dir) as idx:
        print(json.dumps(idx.stats(), indent=2))
    return EXIT_OK


def export(a: argparse.Namespace) -> int:
    from neardup.index import Index
    from neardup.io.writers import atomic_open, dumps

    kind = (
        "jsonl"
        if a.out == "-" or a.out.lower().endswith(".jsonl")
        else "parquet"
        if a.out.lower().endswith(".parquet")
        else None
    )
    if kind is None:
        print(
            f"neardup index export: -o {a.out}: name a .jsonl or .parquet file, or '-' for JSONL on stdout",
            file=sys.stderr,
        )
        return EXIT_USAGE
    n = 0
    with Index.open(a.dir) as idx:
        rows = idx.clusters(min_size=1 if a.all else 2)
        if a.out == "-":
            for r in rows:
                sys.stdout.write(dumps(r) + "\n")
                n += 1
        elif kind == "parquet":
            from neardup.index.export import write_clusters_parquet

            n = write_clusters_parquet(rows, a.out)
        else:
            with atomic_open(a.out) as f:
                for r in rows:
                    f.write(dumps(r) + "\n")
                    n += 1
    if a.out != "-":
        print(f"wrote {plural(n, 'cluster')} to {a.out}")
    return EXIT_OK


def remove(a: argparse.Namespace) -> int:
    from neardup.index import Index

    ids = list(a.ids)
    if a.ids_file:
        ids += [line.strip() for line in read_text_file(a.ids_file).splitlines() if line.strip()]
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
        return interrupted("remove", a.dir, before)
    print(f"removed {n:,} documents")
    return EXIT_OK


def compact(a: argparse.Namespace) -> int:
    from neardup.index import Index

    with Index.open(a.dir) as idx:
        r = idx.compact()
    print(
        f"compacted: {r['bytes_before']:,} -> {r['bytes_after']:,} bytes on disk"
        + (f" (the database's {r['database_free_pages']:,} free pages given back)" if r.get("vacuumed") else "")
    )
    return EXIT_OK


def check(a: argparse.Namespace) -> int:
    from neardup.index import Index

    with Index.open(a.dir) as idx:
        if a.recount:
            c = idx.recount()
            print("counts stored: " + ", ".join(f"{k} {v:,}" for k, v in c.items()))
        r = idx.check()
    print(f"index is sound: SQLite {r['sqlite']}, {r['segments']} segment(s), {r['texts']:,} texts checked")
    return EXIT_OK


def backup(a: argparse.Namespace) -> int:
    from neardup.index.backup import backup

    r = backup(a.dir, a.dest)
    print(
        f"backed up: {r['documents']:,} documents, {r['segments']} segment(s), {r['text_files']} text log(s), "
        f"{r['bytes']:,} bytes, checked, in {a.dest} (generation {r['generation']}, {r['seconds']:.1f} s"
        + (f", {r['attempts']} attempts" if r["attempts"] > 1 else "")
        + ")"
    )
    return EXIT_OK
