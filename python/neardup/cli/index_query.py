"""``neardup index query``: verdicts for records or texts, without inserting them."""

from __future__ import annotations

import argparse
import json
import os
import sys

from neardup.cli.exits import EXIT_OK, EXIT_USAGE
from neardup.cli.index_common import fields, read_text_file

#: file names that look like a plain text, not records (query's hint to use --text-file)
PLAIN_TEXT = (".txt", ".text", ".md", ".html", ".htm")


def run(a: argparse.Namespace) -> int:
    from neardup.errors import RecordError
    from neardup.index import Index

    given = [bool(a.inputs), a.text is not None, bool(a.text_file)]
    if sum(given) != 1:
        print("neardup index query: give one of FILE(s), --text or --text-file", file=sys.stderr)
        return EXIT_USAGE
    records = None
    if a.text is not None:
        records = [{"id": "query", "text": sys.stdin.read() if a.text == "-" else a.text}]
    elif a.text_file:
        records = [{"id": os.path.basename(f), "text": read_text_file(f)} for f in a.text_file]
    with Index.open(a.dir, threads=a.threads) as idx:
        if records is not None:
            vs = idx.query(records, fields=None, max_chars=a.max_chars)
        else:
            try:
                vs = idx.query(a.inputs if a.inputs != ["-"] else "-", fields=fields(a), max_chars=a.max_chars)
            except RecordError:
                if any(f.lower().endswith(PLAIN_TEXT) for f in a.inputs):
                    print(
                        "neardup index query: FILE is read as records (JSONL, Parquet, CSV); "
                        "check a plain-text file with --text-file",
                        file=sys.stderr,
                    )
                raise
    for v in vs:
        print(json.dumps(v.as_dict(), ensure_ascii=False))
    return EXIT_OK
