"""``neardup serve``: the HTTP service over an index (neardup.service)."""

from __future__ import annotations

import argparse
from typing import Any

from neardup.cli.exits import exit_for, index_rules


def register(sub: Any) -> None:
    """Add ``serve`` to the ``neardup`` parser's subparsers."""
    p = sub.add_parser(
        "serve",
        help="the HTTP service over an index (FastAPI on uvicorn)",
        description="Serve DIR over HTTP: POST /v1/documents, GET /v1/documents/{id}, "
        "GET /v1/clusters/{id}, DELETE /v1/documents/{id}, /v1/stats, /v1/health, "
        "/openapi.json, and a web page at /.",
    )
    p.add_argument("dir", metavar="DIR", help="the index's directory")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, loopback)")
    p.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    p.add_argument("--max-body", type=int, default=10_000_000, help="largest request body in bytes (default 10 MB)")
    p.add_argument("--max-batch", type=int, default=10_000, help="most documents in one POST (default 10,000)")
    p.add_argument("--init", action="store_true", help="create the index in DIR if there is none")
    p.add_argument("--threads", type=int, default=None, help="worker threads of a batch (default: all cores)")
    p.add_argument("--log-level", default="warning", help="uvicorn's log level (default: warning)")
    p.add_argument(
        "--sync",
        choices=["full", "normal"],
        default="full",
        help="full (default): every commit fsynced, survives a power cut; normal: not fsynced "
        "per commit (survives a crash of the process, may lose the last adds on a power cut)",
    )
    p.add_argument(
        "--writer",
        choices=["process", "thread"],
        default="process",
        help="process (default): adds, dry runs and removes run in a process of their own, "
        "with their own core and Python interpreter lock; thread: in a thread of the "
        "server's process (one process, the HTTP side and the writer share the lock)",
    )
    p.add_argument(
        "--fold",
        choices=["background", "inline"],
        default="background",
        help="background (default): level 0 is folded into a segment by a thread of its own, off "
        "the requests' path; inline: inside the add that fills it, as `index add` does (one "
        "slow request every --l0-max articles)",
    )
    g = p.add_argument_group("where postings go (this process only; speed and file layout, never results)")
    g.add_argument(
        "--l0-max",
        type=int,
        default=None,
        metavar="N",
        help="level 0's size limit (default: the index's, 50000); with --fold background an add "
        "folds inline only past 2 x N",
    )
    g.add_argument(
        "--l0-fold-at",
        type=int,
        default=None,
        metavar="N",
        help="with --fold background: a fold starts once level 0 holds more than N documents "
        "(default: the index's, else half of --l0-max)",
    )
    g.add_argument(
        "--merge-max",
        type=int,
        default=None,
        metavar="N",
        help="a background fold merges small segments into one of at most N documents (default: the index's, 1000000)",
    )
    g = p.add_argument_group("waits and limits (checked at start: a bad value is refused, exit 2)")
    g.add_argument(
        "--write-timeout",
        type=_serve_timeout,
        default=60.0,
        metavar="SECONDS",
        help="a POST or DELETE waits this long for the writer's answer, then gets 503 writer_timeout "
        "(its outcome unknown); 0 or none: no limit (default: 60)",
    )
    g.add_argument(
        "--health-timeout",
        type=_serve_positive_seconds,
        default=2.0,
        metavar="SECONDS",
        help="GET /v1/health waits this long for the writer's answer; then 503, unless the writer "
        "(process or thread) is working through a long group (default: 2)",
    )
    g.add_argument(
        "--shutdown-timeout",
        type=_serve_seconds,
        default=10.0,
        metavar="SECONDS",
        help="a shutdown (SIGTERM, Ctrl-C) waits this long for the requests under way, then cuts "
        "them off (default: 10)",
    )
    g.add_argument(
        "--max-connections",
        type=_serve_count,
        default=None,
        metavar="N",
        help="past N open connections a request gets 503 at once (default: as many as the limit "
        "on open files allows, less those in use and 256 kept for the index; more is refused)",
    )
    g.add_argument(
        "--max-open-files",
        type=_serve_count,
        default=65536,
        metavar="N",
        help="raise the soft limit on open files up to N, within the hard limit; never lowered (default: 65536)",
    )


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


def run(a: argparse.Namespace) -> int:
    """Run ``neardup serve``; errors become messages and exit codes (those of ``neardup index``)."""
    try:
        return _serve(a)
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - mapped to an exit code, or raised again
        return exit_for(exc, "serve", index_rules("serve"))


def _serve(a) -> int:
    from neardup.service.server import serve

    return serve(
        a.dir,
        host=a.host,
        port=a.port,
        max_body=a.max_body,
        max_batch=a.max_batch,
        init=a.init,
        threads=a.threads,
        log_level=a.log_level,
        sync=a.sync,
        fold=a.fold,
        l0_max=a.l0_max,
        l0_fold_at=a.l0_fold_at,
        merge_max=a.merge_max,
        writer=a.writer,
        write_timeout=a.write_timeout,
        health_timeout=a.health_timeout,
        shutdown_timeout=a.shutdown_timeout,
        max_connections=a.max_connections,
        max_open_files=a.max_open_files,
    )
