"""``neardup index add``: add a batch of documents to an index."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import time
from typing import IO

from neardup.cli import settings_args
from neardup.cli.exits import EXIT_OK
from neardup.cli.index_common import fields, interrupted, plural

#: The settings ``index add`` takes to check against the index's (refused if different).
CHECKED = ("k", "num_perm", "scheme", "seed", "threshold")


def run(a: argparse.Namespace) -> int:
    from neardup.index import Index
    from neardup.io.writers import dumps

    t0 = time.perf_counter()
    before = None
    try:
        # the verdicts' file is opened before the add: one that cannot be written is said while
        # nothing is added yet (it was found after the commit: the batch in, its verdicts lost)
        with _verdicts_out(a.verdicts) as vf:
            with (
                _without_cyclic_gc(),
                Index.open(
                    a.dir,
                    threads=a.threads,
                    segment_min=a.segment_min,
                    l0_max=a.l0_max,
                    **settings_args.values_from_args(a, CHECKED),
                ) as idx,
            ):
                before = idx.stats()["batches"]
                verdicts = idx.add(
                    a.inputs if a.inputs != ["-"] else "-", fields=fields(a), max_chars=a.max_chars, on_error=a.on_error
                )
                st = idx.totals()
            dt = time.perf_counter() - t0
            if vf is not None:
                for v in verdicts:
                    vf.write(dumps(v.as_dict()) + "\n")
    except KeyboardInterrupt:
        return interrupted("add", a.dir, before)
    dup = verdicts.duplicates
    out = sys.stderr if a.verdicts == "-" else sys.stdout  # (stdout holds the verdicts then)
    bad_times = verdicts.unreadable_times
    summary = {
        "added": len(verdicts),
        "new": len(verdicts) - dup,
        "duplicates": dup,
        "seconds": round(dt, 3),
        "documents": st["documents"],
        "clusters": st["clusters"],
        "unreadable_times": len(bad_times),
    }
    if a.on_error == "skip":
        skipped = verdicts.skipped
        summary["skipped"] = len(skipped)
        summary["skipped_records"] = [e.as_dict() for e in skipped[:1000]]  # (as dedup's report.json lists them)
        for e in skipped[:20]:
            print(f"neardup index add: skipped {e}", file=sys.stderr)
        if len(skipped) > 20:
            print(
                f"neardup index add: ... and {len(skipped) - 20:,} more skipped (--json lists the first 1,000)",
                file=sys.stderr,
            )
    if bad_times:
        first = "; ".join(f"{i!r}: {why}" for i, why in bad_times[:3])
        print(
            f"neardup index add: warning: {plural(len(bad_times), 'time')} could not be read and count as missing "
            f"for the keeper rule (the values are kept with the documents' fields): {first}"
            + (" ..." if len(bad_times) > 3 else ""),
            file=sys.stderr,
        )
    if a.json:
        print(json.dumps(summary), file=out)
    else:
        print(
            f"added {plural(len(verdicts), 'document')} in {dt:.2f} s: {plural(len(verdicts) - dup, 'new story', 'new stories')}, "
            f"{plural(dup, 'duplicate')}"
            + (f", {plural(len(verdicts.skipped), 'record')} skipped" if verdicts.skipped else "")
            + f"; the index holds {plural(st['documents'], 'document')}, "
            f"{plural(st['clusters'], 'cluster')} of two or more",
            file=out,
        )
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
            f: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
        with f:
            yield f
    else:
        with atomic_open(path) as f:
            yield f
