"""The ``neardup`` command's parser: the top parser and each command's subparser (made by the
command's module)."""

from __future__ import annotations

import argparse

from neardup.cli import curve, dedup, index, serve, synth
from neardup.cli import eval as eval_cmd

#: The subcommands, in the order of ``neardup --help``.
COMMANDS = ("dedup", "demo", "curve", "eval", "synth", "index", "serve")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; `command`: the subcommand the arguments name, when known. Only
    ``dedup`` has the Spark engine's options (neardup.cli.spark), added when dedup runs or the
    command is not known (``--help``), so that another command (``neardup index add`` is a daily
    job whose start-up counts) never loads them."""
    ap = argparse.ArgumentParser(prog="neardup", description="Near-duplicate detection for text.")
    from neardup import __version__

    ap.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    dedup.register(sub, spark=command in (None, "dedup"))  # dedup and demo
    curve.register(sub)
    eval_cmd.register(sub)
    synth.register(sub)
    index.register(sub)
    serve.register(sub)
    return ap


def command_of(args: list[str]) -> str | None:
    """The subcommand `args` name: the first argument that is not an option (the top-level
    parser's only option, --version, takes no value); None when there is none or it is not a
    known command (then the full parser reports it)."""
    first = next((x for x in args if not x.startswith("-")), None)
    return first if first in COMMANDS else None
