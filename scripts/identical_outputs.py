"""Record, then compare, the outputs of neardup's engines: the refactor's honesty check.

    python scripts/identical_outputs.py record BEFORE/     # at the old commit
    python scripts/identical_outputs.py record AFTER/      # at the new one
    python scripts/identical_outputs.py compare BEFORE/ AFTER/

``record`` runs ``neardup dedup`` (local engine, several option sets; Spark engine with
``--spark``), and a day-by-day ``neardup index add`` (MinHash and SimHash indexes, each
day's verdicts, then ``index export --all``) on the shared Reuters-21578 corpus and on a
``neardup synth`` corpus. It writes every output file under DIR and a ``manifest.json``
of their SHA-256. ``report.json`` and ``--json`` summaries lose only what a run cannot
repeat (seconds, memory figures, paths); every other byte is compared.

``compare`` prints each file that differs and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REUTERS = ROOT.parent / "shared" / "data" / "reuters21578.jsonl.gz"

# Keys whose values a repeated run cannot reproduce (clock, memory, where it ran).
VOLATILE = {
    "seconds",
    "cpu_seconds",
    "peak_rss_mb",
    "baseline_rss_bytes",
    "outdir",
    "stages",
    "first_pass",
    "stage_shares",
    "peak_held_bytes_estimate",
    "per_document_bytes",
    "path",
    "dir",
    "bytes",
    "size_bytes",
    "sizes",
    "files",
    "timings",
    "elapsed",
    "minimum_bytes",
    "limit_bytes",
}

DEDUP_VARIANTS = {
    "default": [],
    "simhash": ["--method", "simhash"],
    "estimate": ["--verify", "estimate", "--prefer-source", "agency,reuters"],
    "containment": ["--measure", "containment", "--threshold", "0.7"],
    "multiply-shift": ["--scheme", "multiply-shift", "--k", "3", "--bands", "20", "--rows", "5"],
    "parquet": ["--format", "parquet"],
}


def run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr[-3000:]}")
    return proc


def scrub(value: object) -> object:
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def write_scrubbed_json(text: str, dest: Path) -> None:
    dest.write_text(json.dumps(scrub(json.loads(text)), indent=1, sort_keys=True) + "\n")


def corpora(work: Path, synth_n: int) -> dict[str, Path]:
    synth = work / "synth.jsonl"
    copies = synth_n // 5
    run(["neardup", "synth", "-o", str(synth), "--originals", str(synth_n), "--copies", str(copies)])
    reuters = work / "reuters.jsonl"
    with gzip.open(REUTERS, "rt", encoding="utf-8") as src, reuters.open("w") as dst:
        shutil.copyfileobj(src, dst)
    return {"synth": synth, "reuters": reuters}


def days(corpus: Path, work: Path, n_days: int) -> list[Path]:
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    size = -(-len(lines) // n_days)
    out = []
    for d in range(n_days):
        p = work / f"{corpus.stem}-day{d}.jsonl"
        p.write_text("".join(lines[d * size : (d + 1) * size]), encoding="utf-8")
        out.append(p)
    return out


def record_dedup(name: str, corpus: Path, dest: Path, engines: list[str]) -> None:
    for engine in engines:
        variants = DEDUP_VARIANTS if engine == "local" else {"default": [], "simhash": ["--method", "simhash"]}
        for variant, extra in variants.items():
            out = dest / f"dedup-{engine}-{name}-{variant}"
            cmd = ["neardup", "dedup", str(corpus), "-o", str(out), "-q", "--on-error", "skip", *extra]
            if engine == "spark":
                cmd += ["--engine", "spark", "--master", "local[2]"]
            run(cmd)
            report = out / "report.json"
            write_scrubbed_json(report.read_text(), report)


def record_index(name: str, corpus: Path, work: Path, dest: Path, method: str) -> None:
    idx = work / f"index-{name}-{method}"
    if idx.exists():
        shutil.rmtree(idx)
    extra = ["--method", "simhash"] if method == "simhash" else ["--prefer-source", "agency"]
    run(["neardup", "index", "init", str(idx), *extra])
    out = dest / f"index-{name}-{method}"
    out.mkdir(parents=True)
    for i, day in enumerate(days(corpus, work, 4)):
        proc = run(
            [
                "neardup",
                "index",
                "add",
                str(idx),
                str(day),
                "--on-error",
                "skip",
                "--json",
                "--verdicts",
                str(out / f"verdicts-day{i}.jsonl"),
            ]
        )
        write_scrubbed_json(proc.stdout, out / f"add-day{i}.json")
    run(["neardup", "index", "export", str(idx), "--all", "-o", str(out / "export.jsonl")])
    proc = run(["neardup", "index", "query", str(idx), str(days(corpus, work, 4)[0])])
    (out / "query-day0.txt").write_text(proc.stdout)


def content(p: Path, work: bytes) -> bytes:
    """What is compared of an output file: its bytes, the record's own work directory written
    as <work> (a skipped record's file is named in report.json and in the index's skip lists);
    of a Parquet file, its schema and rows (Spark's writer lists a column's encodings in the
    footer in an order that changes from one JVM to the next, with the same data)."""
    if p.suffix == ".parquet" or (p.name.startswith("part-") and ".parquet" in p.name):
        import pyarrow.parquet as pq

        table = pq.read_table(p)
        return (str(table.schema) + "\n" + json.dumps(table.to_pylist(), default=str)).encode()
    return p.read_bytes().replace(work, b"<work>")


def manifest(dest: Path) -> None:
    """SHA-256 of every output's :func:`content`."""
    work = str((dest / "_work").resolve()).encode()
    files = {}
    for p in sorted(dest.rglob("*")):
        if not p.is_file() or p.name == "manifest.json" or "_work" in p.parts or p.name.endswith(".crc"):
            continue  # (Hadoop's checksum files beside Spark's parts)
        # a Spark part is named part-NNNNN-<a run's UUID>-c000...: compared by its number
        name = re.sub(r"^(part-\d+)-[0-9a-f-]{36}-c\d+", r"\1", p.name)
        files[str(p.relative_to(dest).parent / name)] = hashlib.sha256(content(p, work)).hexdigest()
    (dest / "manifest.json").write_text(json.dumps(files, indent=1) + "\n")
    print(f"{len(files)} files recorded in {dest}")


def record(dest: Path, synth_n: int, spark: bool) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    work = dest / "_work"
    work.mkdir(parents=True)
    engines = ["local", "spark"] if spark else ["local"]
    for name, corpus in corpora(work, synth_n).items():
        record_dedup(name, corpus, dest, engines)
        for method in ("minhash", "simhash"):
            record_index(name, corpus, work, dest, method)
    shutil.rmtree(work)
    manifest(dest)


def compare(a: Path, b: Path) -> int:
    ma = json.loads((a / "manifest.json").read_text())
    mb = json.loads((b / "manifest.json").read_text())
    differ = sorted(k for k in ma.keys() | mb.keys() if ma.get(k) != mb.get(k))
    for k in differ:
        print(
            f"differs: {k} ({'missing in ' + str(b) if k not in mb else 'missing in ' + str(a) if k not in ma else 'content'})"
        )
    print(f"{len(ma)} files, {len(differ)} differ")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("dest", type=Path)
    rec.add_argument("--synth", type=int, default=20000, help="originals in the synth corpus")
    rec.add_argument("--spark", action="store_true", help="also the Spark engine (local[2])")
    man = sub.add_parser("manifest", help="hash a record's files again (after a change of this script)")
    man.add_argument("dest", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "record":
        record(args.dest, args.synth, args.spark)
        return 0
    if args.cmd == "manifest":
        manifest(args.dest)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
