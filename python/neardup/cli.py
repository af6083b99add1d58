"""The ``neardup`` command line: dedup, demo, curve, eval, synth.

Exit codes (docs/dedup.md):
  0  success
  1  internal error (a bug: please report it)
  2  usage error: unknown option, bad option value
  3  bad input record (with --on-error stop, the default): the message names file, line, field
  4  an input file cannot be opened or read
  5  the output directory or a file in it cannot be written
  130 interrupted (Ctrl-C); no output file is left half-written
  143 dedup stopped by SIGTERM (129: SIGHUP), cleaned up as after Ctrl-C
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from contextlib import contextmanager

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_RECORD, EXIT_INPUT, EXIT_OUTPUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 5, 130


def _add_dedup_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("fields")
    g.add_argument("--id-field", default="id", help="record id field (default: id)")
    g.add_argument("--text-field", default="text", help="text field (default: text)")
    g.add_argument("--title-field", default=None, help="optional title field, prepended to the text")
    g.add_argument("--time-field", default="published_at",
                   help="publish time field for the keeper rule (default: published_at; '' for none)")
    g.add_argument("--source-field", default="source", help="source field for --prefer-source (default: source)")
    g = p.add_argument_group("signatures")
    g.add_argument("--method", choices=["minhash", "simhash"], default="minhash")
    g.add_argument("--k", type=int, default=5, help="shingle size in words (default: 5)")
    g.add_argument("--unit", choices=["word", "whitespace", "char"], default="word",
                   help="tokens: Unicode words (default), whitespace-split, or characters")
    g.add_argument("--num-perm", type=int, default=128, help="MinHash values per signature (default: 128)")
    g.add_argument("--scheme", default="oph",
                   help="MinHash scheme: oph (default: one-permutation hashing, fastest), multiply-shift "
                        "(the guide's classic MinHash), datasketch-affine32")
    g.add_argument("--seed", type=int, default=1, help="MinHash seed (default: 1)")
    g = p.add_argument_group("candidates and verification")
    g.add_argument("--threshold", type=float, default=0.8, help="similarity threshold (default: 0.8)")
    g.add_argument("--recall", type=float, default=0.95,
                   help="P(candidate) required at the threshold when choosing bands (default: 0.95)")
    g.add_argument("--bands", type=int, default=None, help="pin the number of LSH bands (with --rows)")
    g.add_argument("--rows", type=int, default=None, help="pin the rows per band (with --bands)")
    g.add_argument("--max-distance", type=int, default=3, help="SimHash: max Hamming distance (default: 3)")
    g.add_argument("--verify", choices=["exact", "estimate"], default="exact",
                   help="exact Jaccard on shingles (default) or the signature estimate")
    g.add_argument("--measure", choices=["jaccard", "containment"], default="jaccard",
                   help="jaccard (default) or containment: shared shingles over the smaller document's")
    g = p.add_argument_group("keeper, errors, output")
    g.add_argument("--prefer-source", default="",
                   help="comma-separated sources preferred as keepers after the earliest time, e.g. agency,site-a")
    g.add_argument("--on-error", choices=["stop", "skip"], default="stop",
                   help="bad records: stop with an error (default) or skip and list them in the report")
    g.add_argument("--max-chars", type=int, default=5_000_000,
                   help="texts longer than this many characters are bad records (default: 5,000,000)")
    g.add_argument("--format", dest="output_format", choices=["jsonl", "parquet"], default="jsonl",
                   help="format of the kept records (default: jsonl)")
    g.add_argument("--batch-size", type=int, default=8192, help="records per batch (default: 8192)")
    g.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    g.add_argument("--memory-limit", default=None, metavar="SIZE",
                   help="peak memory of the whole run, e.g. 16G: each stage sizes its share from what is "
                        "resident, rows spill to a file, sorts go external, verification re-reads in more "
                        "passes; a limit below the input's minimum stops early and says the minimum "
                        "(default: no limit; docs/scale.md)")
    g.add_argument("--large-bucket", type=int, default=100, metavar="N",
                   help="LSH buckets of more than N documents are verified by a per-bucket union-find that "
                        "keeps only spanning edges, not listed pair by pair (same clusters; 0: list every "
                        "pair; default: 100; docs/dedup.md)")
    g.add_argument("--tmp-dir", default=None, metavar="DIR", help="where spill files go (default: the system's)")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress bars and no summary")
    g.add_argument("--json", action="store_true", help="print report.json to stdout instead of the summary")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; `command`: the subcommand the arguments name, when known. Only
    ``dedup`` has the Spark engine's options, and adding them imports ``neardup.engines.spark``
    (its package imports pyarrow: 0.15 s), so they are left out when another command runs
    (``neardup index add`` is a daily job whose start-up counts)."""
    ap = argparse.ArgumentParser(prog="neardup", description="Near-duplicate detection for text.")
    from neardup import __version__

    ap.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("dedup", help="find, cluster and drop near-duplicates in files",
                       description="Find near-duplicates in INPUT files (JSONL, .jsonl.gz, .jsonl.zst, Parquet, "
                                   "CSV; '-' for stdin JSONL), cluster them, keep one per cluster. With no INPUT "
                                   "(or --demo), runs on the embedded demo corpus (the guide's rain story).")
    p.add_argument("inputs", nargs="*", metavar="INPUT")
    p.add_argument("-o", "--out", metavar="OUTDIR", help="output directory (required unless --demo)")
    p.add_argument("--demo", action="store_true", help="run on the embedded demo corpus")
    _add_dedup_options(p)
    if command in (None, "dedup"):
        __import__("neardup.engines.spark.cli").engines.spark.cli.add_options(p)  # --engine spark (docs/spark.md)

    p = sub.add_parser("demo", help="run dedup on the embedded demo corpus (same as: neardup dedup --demo)")
    p.add_argument("-o", "--out", metavar="OUTDIR", help="also write the outputs here")
    _add_dedup_options(p)

    p = sub.add_parser("curve", help="print (and plot) the LSH S-curve for a threshold")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--recall", type=float, default=0.95)
    p.add_argument("--bands", type=int, default=None)
    p.add_argument("--rows", type=int, default=None)
    p.add_argument("--png", metavar="FILE", help="also draw the curve to this PNG (needs matplotlib)")

    p = sub.add_parser("eval", help="score a dedup run against the exact ground truth")
    p.add_argument("corpus", nargs="+", metavar="CORPUS", help="the input(s) the run was made on")
    p.add_argument("outdir", metavar="OUTDIR", help="the run's output directory")
    p.add_argument("--threshold", type=float, default=None, help="default: the run's threshold")
    p.add_argument("--png", metavar="FILE", default=None,
                   help="histogram of true pairs' Jaccard, found/missed (default: OUTDIR/eval.png if "
                        "matplotlib is installed; 'none' to skip)")
    p.add_argument("--threads", type=int, default=None)

    p = sub.add_parser("synth", help="write the guide's synthetic test corpus")
    p.add_argument("-o", "--out", required=True, metavar="FILE", help=".jsonl, .jsonl.gz, .jsonl.zst or .parquet")
    p.add_argument("--originals", type=int, default=100_000)
    p.add_argument("--copies", type=int, default=20_000)
    p.add_argument("--words", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    __import__("neardup.index.cli").index.cli.register(sub)  # index, serve (python/neardup/index/cli.py)
    return ap


def _dedup_kwargs(a: argparse.Namespace) -> dict:
    return dict(
        id_field=a.id_field, text_field=a.text_field, title_field=a.title_field, time_field=a.time_field or None,
        source_field=a.source_field or None, method=a.method, k=a.k, unit=a.unit, num_perm=a.num_perm,
        scheme=a.scheme, seed=a.seed, threshold=a.threshold, recall=a.recall, bands=a.bands, rows=a.rows,
        max_distance=a.max_distance, verify=a.verify, measure=a.measure,
        prefer_source=[s.strip() for s in a.prefer_source.split(",") if s.strip()], on_error=a.on_error,
        max_chars=a.max_chars, output_format=a.output_format, batch_size=a.batch_size, threads=a.threads,
        progress=(not a.quiet) and sys.stdout.isatty() and sys.stderr.isatty(),
        memory_limit=a.memory_limit, tmp_dir=a.tmp_dir, large_bucket=a.large_bucket or None,
    )


def _cmd_dedup(a: argparse.Namespace, demo: bool) -> int:
    import neardup
    from neardup.io.writers import writable_tree
    from neardup.stages.report import summary_text

    if demo and a.inputs:  # (the files were silently ignored)
        print("neardup dedup: --demo runs on the embedded corpus: give INPUT files or --demo, not both",
              file=sys.stderr)
        return EXIT_USAGE
    kwargs = _dedup_kwargs(a)
    if getattr(a, "engine", "local") == "spark":  # docs/spark.md (SIGTERM/SIGHUP: the same cleanup as Ctrl-C)
        with _terminate_as_interrupt():
            return __import__("neardup.engines.spark.cli").engines.spark.cli.run(a, kwargs)
    if demo or not a.inputs:
        from neardup.demo import records

        if a.title_field is None:
            kwargs["title_field"] = None
        if not a.quiet and not a.json:
            print("neardup demo: the guide's rain story as six sites ran it (embedded corpus)\n")
        res = neardup.dedup(records(), a.out, **{**kwargs, "prefer_source": kwargs["prefer_source"] or ["agency"]})
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
    with _terminate_as_interrupt():
        res = neardup.dedup(a.inputs, a.out, **kwargs, collect=False)  # rows go to files only
    if a.json:
        print(json.dumps(writable_tree(res.report), indent=2))  # (as report.json writes a name not UTF-8)
    elif not a.quiet:
        print(summary_text(res.report))
    return EXIT_OK


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during ``neardup dedup``: raised in the main thread as Ctrl-C's
    KeyboardInterrupt is, so that the same cleanup runs (spill files and partial outputs
    removed, the previous run's outputs left as they were); the default action killed the
    process with all of them left behind. ``code``: the shell's 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.code = 128 + signum
        super().__init__(signal.Signals(signum).name)


@contextmanager
def _terminate_as_interrupt():
    """SIGTERM and SIGHUP raise :class:`Terminated` while the block runs (the main thread
    only: Python runs signal handlers there); the previous handlers are restored after. A
    second signal while the first one's cleanup runs is ignored, so it cannot cut it short."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield  # (signal.signal works only in the main thread: main() called from elsewhere)
        return
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise Terminated(signum)

    wanted = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    previous = {sig: signal.signal(sig, handler) for sig in wanted}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)


#: `curve` compares with datasketch's optimiser up to this many permutations.
CURVE_OPTIMISER_MAX = 8192


def _cmd_curve(a: argparse.Namespace) -> int:
    from neardup import lsh
    from neardup.settings import Settings

    # the settings as dedup checks them, before anything is printed (--bands without --rows was
    # ignored but labelled "pinned")
    settings = Settings(threshold=a.threshold, num_perm=a.num_perm, recall=a.recall, bands=a.bands, rows=a.rows)
    png = None
    if a.png:  # as eval's --png: DIR/ gets curve.png, a name without an extension .png; checked first
        from neardup.evaluate.plot import png_path

        png = png_path(a.png, "curve.png")
    b, r = settings.band_shape()
    how = "pinned" if a.bands is not None else f"fewest candidates with P >= {a.recall} at the threshold"
    print(f"threshold {a.threshold}, num_perm {a.num_perm}: {b} bands x {r} rows ({how})")
    others = []
    if a.num_perm > CURVE_OPTIMISER_MAX:
        print(f"(datasketch's optimiser left out above num_perm {CURVE_OPTIMISER_MAX:,}: it integrates every "
              f"split, 5 s at 8,192 and minutes past that)")
    else:
        try:
            db, dr = lsh.optimal_params(a.threshold, a.num_perm)
            others.append(("datasketch default", int(db), int(dr)))
        except Exception as exc:  # datasketch's optimiser has no answer for some inputs (threshold 1)
            print(f"(datasketch's optimiser: {exc})")
    cols = [(f"{b}x{r}", b, r)] + [(f"{n} {bb}x{rr}", bb, rr) for n, bb, rr in others]
    print(f"{'s':>5}  " + "  ".join(f"{c[0]:>24}" for c in cols))
    for s in [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]:
        mark = " <- threshold" if abs(s - a.threshold) < 1e-9 else ""
        vals = "  ".join(f"{float(lsh.candidate_probability(s, bb, rr)):>24.4f}" for _, bb, rr in cols)
        print(f"{s:>5.2f}  {vals}{mark}")
    p_at = float(lsh.candidate_probability(a.threshold, b, r))
    print(f"P(candidate) at the threshold {a.threshold}: {p_at:.4f}")
    if png:
        from neardup.evaluate.plot import curve_png

        curve_png(b, r, a.threshold, png, others)
        print(f"wrote {png}")
    return EXIT_OK


def _cmd_eval(a: argparse.Namespace) -> int:
    from neardup.evaluate import evaluate

    png = a.png
    if png is None:
        try:
            import matplotlib  # noqa: F401

            png = os.path.join(a.outdir, "eval.png")
        except ImportError:
            png = None
    elif png.lower() == "none":
        png = None
    r = evaluate(a.corpus if len(a.corpus) > 1 else a.corpus[0], a.outdir, a.threshold, png, a.threads)
    m = r["measure"]
    name = "Jaccard" if m == "jaccard" else m
    print(f"neardup eval: {r['documents']:,} documents, threshold {r['threshold']}"
          + ("" if m == "jaccard" else f", measure {m} (the run's)"))
    print(f"- ground truth: {r['true_pairs']:,} pairs with exact {name} >= {r['threshold']} "
          f"(exact self-join, not sampled); {r['clusters_true']:,} true clusters")
    print(f"- pair recall: {r['pair_recall']:.4f} ({r['true_pairs_found']:,} of {r['true_pairs']:,} true pairs "
          f"in one cluster)")
    print(f"- pair precision: {r['pair_precision']:.4f} ({r['reported_pairs_true']:,} of {r['reported_pairs']:,} "
          f"reported pairs truly >= {r['threshold']})")
    print(f"- clusters: pairwise precision {r['pairwise_precision']:.4f}, recall {r['pairwise_recall']:.4f}, "
          f"F1 {r['pairwise_f1']:.4f}; adjusted Rand index {r['adjusted_rand_index']:.4f}")
    for bnd in r[f"recall_by_{m}"]:
        print(f"    {'J' if m == 'jaccard' else 'C'} {bnd['from']:.2f}-{bnd['to']:.2f}: {bnd['pairs']:>7,} pairs, recall {bnd['recall']:.4f}")
    print(f"wrote {os.path.join(a.outdir, 'eval.json')}" + (f" and {r['png']}" if r.get("png") else ""))
    return EXIT_OK


def _cmd_synth(a: argparse.Namespace) -> int:
    try:
        from neardup import synth
    except ImportError as exc:
        print(f"neardup synth: the synthetic corpus generator is not installed ({exc})", file=sys.stderr)
        return EXIT_INTERNAL
    synth.write_corpus(a.out, originals=a.originals, copies=a.copies, words=a.words, seed=a.seed)
    print(f"wrote {a.out}: {a.originals:,} originals and {a.copies:,} copies of {a.words} words (seed {a.seed})")
    return EXIT_OK


#: The exit code of a command whose output's reader went away (``neardup demo | head -1``): a
#: tool killed by SIGPIPE reports 128 + 13.
EXIT_BROKEN_PIPE = 141


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


def _main(argv: list[str] | None) -> int:
    from neardup.errors import InvalidInputError, InvalidParameterError, NeardupError
    from neardup.errors import InputFileError, OutputError, RecordError

    args = sys.argv[1:] if argv is None else list(argv)
    ap = _parser(_command_of(args))
    a = ap.parse_args(args)
    if a.command is None:
        ap.print_help()
        return EXIT_USAGE
    try:
        if a.command == "dedup":
            return _cmd_dedup(a, demo=a.demo)
        if a.command == "demo":
            a.inputs = []
            return _cmd_dedup(a, demo=True)
        if a.command == "curve":
            return _cmd_curve(a)
        if a.command == "eval":
            return _cmd_eval(a)
        if a.command == "synth":
            return _cmd_synth(a)
        if a.command in ("index", "serve"):
            return __import__("neardup.index.cli").index.cli.run(a)
    except (KeyboardInterrupt, Exception) as exc:
        return exit_for(exc, a.command, [
            (Terminated, None, "neardup: terminated ({exc})"),
            (KeyboardInterrupt, EXIT_INTERRUPTED, "neardup: interrupted"),
            (RecordError, EXIT_RECORD, "neardup {prog}: bad record: {exc}\n" + (
                "(eval reads the corpus as the run did, with its --on-error: is it the corpus the run read?)"
                if a.command == "eval" else "(use --on-error skip to skip bad records and list them in report.json)")),
            (InputFileError, EXIT_INPUT, "neardup {prog}: cannot read input: {exc}"),
            (OutputError, EXIT_OUTPUT, "neardup {prog}: cannot write output: {exc}"),
            (InvalidParameterError, EXIT_USAGE, "neardup {prog}: {exc}"),
            (InvalidInputError, EXIT_INPUT, "neardup {prog}: {exc}"),
            (FileNotFoundError, EXIT_INPUT, "neardup {prog}: {exc}"),
            (NeardupError, EXIT_INTERNAL, "neardup {prog}: {exc}"),
        ])
    return EXIT_USAGE


def _command_of(args: list[str]) -> str | None:
    """The subcommand `args` name: the first argument that is not an option (the top-level
    parser's only option, --version, takes no value); None when there is none or it is not a
    known command (then the full parser reports it)."""
    first = next((x for x in args if not x.startswith("-")), None)
    return first if first in _COMMANDS else None


_COMMANDS = ("dedup", "demo", "curve", "eval", "synth", "index", "serve")


def exit_for(exc: BaseException, prog: str, rules: list[tuple]) -> int:
    """Print the message of the first rule ``(exception types, exit code, template)`` that
    matches `exc` and return its code; an error no rule names is raised again. One mechanism
    for every subcommand (``neardup index`` and ``serve`` pass their own rules)."""
    if isinstance(exc, BrokenPipeError) and prog != "serve":
        raise exc  # the reader of stdout went away: main's quiet 141, not an OS error's 4 or 5
    for types, code, template in rules:
        if isinstance(exc, types):
            print(template.format(prog=prog, exc=exc), file=sys.stderr)
            return code if code is not None else exc.code  # (None: the exception's own, Terminated's)
    raise exc


def entry() -> None:  # pragma: no cover
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
