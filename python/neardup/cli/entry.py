"""``neardup``'s entry: parse, dispatch to the command's module, turn errors into exit codes
(neardup.cli.exits), Ctrl-C and a closed stdout into theirs."""

from __future__ import annotations

import argparse
import os
import sys

from neardup.cli import curve, dedup, index, serve, synth
from neardup.cli import eval as eval_cmd
from neardup.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    batch_rules,
    exit_for,
)
from neardup.cli.parser import build_parser, command_of

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """The ``neardup`` command; returns its exit code."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # (a closed pipe is found here, or at exit: inside the try)
        return code
    except KeyboardInterrupt:  # while the parser or the command's modules load (start-up)
        print("neardup: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # quietly, with no traceback, as a tool killed by SIGPIPE; stdout goes nowhere from here
        # so that the interpreter's own flush at exit does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(a: argparse.Namespace) -> int:
    if a.command == "dedup":
        return dedup.run(a, demo=a.demo)
    if a.command == "demo":
        a.inputs = []
        return dedup.run(a, demo=True)
    if a.command == "curve":
        return curve.run(a)
    if a.command == "eval":
        return eval_cmd.run(a)
    if a.command == "synth":
        return synth.run(a)
    if a.command == "index":
        return index.run(a)
    if a.command == "serve":
        return serve.run(a)
    return EXIT_USAGE


def _main(argv: list[str] | None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    ap = build_parser(command_of(args))
    a = ap.parse_args(args)
    if a.command is None:
        ap.print_help()
        return EXIT_USAGE
    try:
        return _run(a)
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - mapped to an exit code, or raised again
        return exit_for(exc, a.command, batch_rules(a.command))
