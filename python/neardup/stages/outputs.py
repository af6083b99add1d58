"""The outputs contract of a batch run, shared by the local and Spark engines: the result
type, the output directory as a path, the files a run writes, refusing to overwrite an input,
and the stale files of an earlier run that may be removed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from neardup.errors import InputTypeError, InvalidParameterError, OutputError
from neardup.stages.report import summary_text

__all__ = [
    "DedupResult",
    "KEPT_NAMES",
    "check_tmp_dir",
    "out_path",
    "output_names",
    "refuse_input_outputs",
    "stale_outputs",
]


@dataclass
class DedupResult:
    """What a run found. ``clusters`` and ``pairs`` are the rows of clusters.jsonl and
    pairs.jsonl; ``kept`` the ids of the kept documents in input order."""

    report: dict[str, Any]
    clusters: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    kept: list[Any] = field(default_factory=list)

    def summary(self) -> str:
        return summary_text(self.report)


#: The outputs one --format writes and the other does not.
KEPT_NAMES = ("kept.jsonl", "kept.parquet")


def stale_outputs(out: str, output_format: str, sources: list[Any], dirs: bool = False) -> list[str]:
    """The other format's kept file of a previous run in `out`, to remove once this run's
    outputs are in place: ``--format parquet`` then a run without it left the old
    kept.parquet beside the new kept.jsonl and report.json, a stale set read as current.
    Removed only when neardup wrote it: the previous report.json (of this directory) lists
    it, it is not newer than that report (outputs are renamed into place before their
    report), and it is not an input of this run. Anything else is never touched. `dirs`: a
    kept directory (the Spark engine's output) is one too, unless it holds an input."""
    keep = "kept.parquet" if output_format == "parquet" else "kept.jsonl"
    report_path = os.path.join(out, "report.json")
    try:
        with open(report_path, "rb") as f:
            import json

            listed = json.load(f).get("files") or []
        report_mtime = os.stat(report_path).st_mtime_ns
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(listed, list):  # (not a report neardup wrote: a string would match by substring)
        return []
    stale = []
    for name in KEPT_NAMES:
        path = os.path.join(out, name)
        is_dir = dirs and os.path.isdir(path)
        if name == keep or name not in listed or os.path.islink(path) or not (is_dir or os.path.isfile(path)):
            continue
        try:
            if os.stat(path).st_mtime_ns > report_mtime:
                continue  # written (or copied in) after the previous run's report: not its own
        except OSError:
            continue
        given = [p for s in sources for p in (getattr(s, "path", None), getattr(s, "name", None))]
        if is_dir:
            real = os.path.realpath(path)
            if any(
                isinstance(p, str) and p != "-" and (os.path.realpath(p) + os.sep).startswith(real + os.sep)
                for p in given
            ):
                continue  # holds an input of this run: never removed
        elif any(_same_file(p, path) for p in given):
            continue  # this run's input: never removed
        stale.append(path)
    return stale


def _same_file(a: object, b: str) -> bool:
    try:
        return isinstance(a, str) and a != "-" and os.path.samefile(a, b)
    except OSError:
        return False


#: The files a run writes in its output directory, by --format (kept.jsonl or kept.parquet).
def output_names(output_format: str) -> list[str]:
    return [
        "clusters.jsonl",
        "pairs.jsonl",
        "kept.parquet" if output_format == "parquet" else "kept.jsonl",
        "report.json",
    ]


def refuse_input_outputs(sources: list[Any], out: str, output_format: str) -> None:
    """Refuse, before anything is read, a run one of whose outputs is one of its inputs (the
    same file by any name: a path, a symlink, a hard link): the outputs are renamed into place
    at the end, so ``neardup dedup d/kept.jsonl -o d`` replaced its 20,000-record input by the
    17,570 kept, silently. Stdin ("-") and in-memory records have no path and never clash."""
    targets = [os.path.join(out, name) for name in output_names(output_format)]
    targets = [t for t in targets if os.path.exists(t)]  # a file not there yet is no input
    if not targets:
        return
    for s in sources:
        for path in {getattr(s, "path", None), getattr(s, "name", None)}:
            if not isinstance(path, str) or path == "-" or not os.path.exists(path):
                continue
            for t in targets:
                if _same_file(path, t):
                    raise OutputError(
                        f"{t}: this output would overwrite the input {path} "
                        f"(the same file): give another output directory (-o)"
                    )


def check_tmp_dir(tmp_dir: str | None) -> None:
    """Create and remove a directory in `tmp_dir` before the run reads anything: a place where
    nothing can be created (``/proc``) passed the option check (it is a directory, and root may
    write anywhere) and failed at the first spill with an unnamed ``[Errno 2] ... /proc/neardup-x``
    after minutes of work, as an input error (exit 4)."""
    if tmp_dir is None:
        return
    from neardup.stages.spill import make_dir

    made: list[str] = []
    try:
        make_dir("neardup-check-", tmp_dir, made.append)
    except OSError as exc:
        raise InvalidParameterError(
            f"tmp_dir {tmp_dir!r} (--tmp-dir): cannot create a spill directory there: {exc.strerror or exc}"
        ) from None
    finally:
        for path in made:
            try:
                os.rmdir(path)
            except OSError:
                pass


def out_path(out: Any, what: str = "out") -> str | None:
    """The output directory (`what`, for the message) as a str: a str, bytes (os.fsdecode) or
    an os.PathLike, as the standard library takes a path; anything else is said before the
    run, not after it (where os.path.join failed on bytes and on a number)."""
    if out is None:
        return None
    try:
        return os.fsdecode(out)
    except TypeError:
        raise InputTypeError(
            f"{what}: expected a directory path (str, bytes or os.PathLike) or None, got {type(out).__name__}"
        ) from None
