"""``neardup synth``: write the guide's synthetic test corpus."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from neardup.cli.exits import EXIT_INTERNAL, EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("synth", help="write the guide's synthetic test corpus")
    p.add_argument("-o", "--out", required=True, metavar="FILE", help=".jsonl, .jsonl.gz, .jsonl.zst or .parquet")
    p.add_argument("--originals", type=int, default=100_000)
    p.add_argument("--copies", type=int, default=20_000)
    p.add_argument("--words", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)


def run(a: argparse.Namespace) -> int:
    try:
        from neardup import synth
    except ImportError as exc:
        print(f"neardup synth: the synthetic corpus generator is not installed ({exc})", file=sys.stderr)
        return EXIT_INTERNAL
    synth.write_corpus(a.out, originals=a.originals, copies=a.copies, words=a.words, seed=a.seed)
    print(f"wrote {a.out}: {a.originals:,} originals and {a.copies:,} copies of {a.words} words (seed {a.seed})")
    return EXIT_OK
