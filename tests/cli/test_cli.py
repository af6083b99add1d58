"""The command line: demo, dedup from stdin, curve, --json/--quiet, progress off without a tty."""

import json
import os
import subprocess
import sys

import pytest

from neardup.cli import main
from neardup.demo import records

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "neardup.cli", *args], input=stdin, capture_output=True, timeout=300)


def test_dedup_without_input_runs_the_demo(capsys):
    assert main(["dedup"]) == 0
    out = capsys.readouterr().out
    assert "demo" in out
    assert (
        "keeper agency-001: alternates site-a-417 (near, J=0.83), site-b-092 (near, J=0.84), "
        "site-d-775 (exact, J=1.00)" in out
    )
    assert "kept: agency-001, site-c-310, site-e-058" in out


def test_demo_command_writes_outputs(tmp_path, capsys):
    assert main(["demo", "-o", str(tmp_path / "o"), "-q"]) == 0
    assert capsys.readouterr().out == ""  # --quiet: nothing printed
    assert sorted(os.listdir(tmp_path / "o")) == ["clusters.jsonl", "kept.jsonl", "pairs.jsonl", "report.json"]
    assert main(["dedup", "--demo", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["clusters"] == 1 and rep["copies_removed"] == 3


def test_dedup_from_stdin_subprocess(tmp_path):
    data = "".join(json.dumps(r) + "\n" for r in records()).encode()
    p = cli("dedup", "-", "-o", str(tmp_path / "o"), stdin=data)
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    assert "6 documents" in out and "copies removed 3" in out
    # stdout is not a terminal: no progress bars on stderr
    assert p.stderr.decode() == ""
    kept = [json.loads(line) for line in (tmp_path / "o" / "kept.jsonl").read_text().splitlines()]
    assert [k["id"] for k in kept] == ["agency-001", "site-c-310", "site-e-058"]
    rep = json.loads((tmp_path / "o" / "report.json").read_text())
    assert rep["inputs"][0]["path"] == "-"


def test_dedup_files_summary_lists_every_stage(tmp_path):
    path = tmp_path / "rain.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records()))
    p = cli("dedup", str(path), "-o", str(tmp_path / "o"), "--prefer-source", "agency")
    assert p.returncode == 0
    out = p.stdout.decode()
    for word in (
        "exact pass: 1 copies removed",
        "13 bands x 7 rows",
        "candidate pairs",
        "read",
        "signatures",
        "verify",
        "clusters",
        "peak memory",
        "outputs in",
    ):
        assert word in out, word


def test_curve_table_and_guide_numbers(capsys):
    assert main(["curve", "--threshold", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "13 bands x 7 rows" in out
    assert "datasketch default 9x13" in out  # the soft-threshold trap, side by side
    assert "P(candidate) at the threshold 0.8: 0.9531" in out
    assert main(["curve", "--threshold", "0.8", "--bands", "16", "--rows", "8"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(" 0.80"))
    assert "0.9470" in row  # the guide: 16 bands of 8 find a 0.8 pair with chance 0.947
    assert main(["curve", "--bands", "9", "--rows", "13"]) == 0
    assert "0.3988" in capsys.readouterr().out  # ... and 9 bands of 13 only 0.399


def test_curve_png(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="PNG output needs the plot extra (matplotlib)")
    png = tmp_path / "curve.png"
    assert main(["curve", "--threshold", "0.7", "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_curve_threshold_one_is_sensible(capsys):
    assert main(["curve", "--threshold", "1.0"]) == 0
    out = capsys.readouterr().out
    assert "P(candidate) at the threshold 1.0: 1.0000" in out


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "dedup" in capsys.readouterr().out


def test_synth_is_wired(tmp_path):
    from neardup import synth

    assert hasattr(synth, "write_corpus")
    out = tmp_path / "s.jsonl"
    assert main(["synth", "-o", str(out), "--originals", "50", "--copies", "10", "--words", "60"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 60 and sum(r["original_id"] is not None for r in rows) == 10


def test_large_bucket_flag(tmp_path, capsys):
    """--large-bucket 0 lists every pair; a tiny value sends every bucket through the per-bucket
    union-find: the same clusters either way. Nonsense is a usage error."""
    from neardup.synth import generate

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in generate(originals=300, copies=120, words=80, seed=2)))
    outs = {}
    for flag in ("0", "2"):
        out = tmp_path / f"out{flag}"
        assert main(["dedup", str(src), "-o", str(out), "-q", "--large-bucket", flag]) == 0
        rows = [json.loads(line) for line in (out / "clusters.jsonl").read_text().splitlines()]
        outs[flag] = sorted(sorted(m["id"] for m in r["members"]) for r in rows)
    assert outs["0"] == outs["2"] and any(len(c) > 1 for c in outs["0"])
    assert main(["dedup", str(src), "-o", str(tmp_path / "bad"), "-q", "--large-bucket", "1"]) == 2
    assert "large_bucket must be an integer >= 2" in capsys.readouterr().err


def test_index_add_does_not_import_the_spark_engine(tmp_path):
    # the Spark options (and the pyarrow import of the spark package) are dedup's only: the
    # daily `neardup index add` starts without them, `neardup dedup` still has them
    code = (
        "import sys; from neardup.cli import main; "
        f"assert main(['index', 'init', {str(tmp_path / 'ix')!r}]) == 0; "
        "assert 'neardup.engines.spark' not in sys.modules, 'spark imported'; "
        "main(['dedup', '--help'])"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert b"--engine" in p.stdout


def test_command_of():
    from neardup.cli.parser import command_of as _command_of

    assert _command_of(["index", "add", "DIR", "dedup"]) == "index"
    assert _command_of(["--version"]) is None
    assert _command_of([]) is None
    assert _command_of(["dedpu", "x"]) is None  # the full parser reports the unknown command
    assert _command_of(["dedup", "--engine", "spark", "x"]) == "dedup"


def test_index_add_runs_without_the_cyclic_gc_and_restores_it(tmp_path, monkeypatch, capsys):
    import gc

    from neardup.index import Index

    seen = []
    add = Index.add

    def spy(self, *args, **kw):
        seen.append(gc.isenabled())
        return add(self, *args, **kw)

    monkeypatch.setattr(Index, "add", spy)
    src = tmp_path / "day.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records()))
    d = str(tmp_path / "ix")
    assert main(["index", "init", d]) == 0
    assert gc.isenabled()
    assert main(["index", "add", d, str(src), "--json"]) == 0
    assert seen == [False] and gc.isenabled()
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["added"] == len(records())
    # a failing add restores it too
    assert main(["index", "add", d, str(src)]) != 0  # the ids are in the index already
    assert seen == [False, False] and gc.isenabled()


def test_curve_checks_its_settings_as_dedup_does(capsys):
    # --bands without --rows was ignored but labelled "pinned"; 0 x 0 printed a header first
    assert main(["curve", "--bands", "3"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "give both bands and rows" in err
    assert main(["curve", "--bands", "0", "--rows", "0"]) == 2
    assert capsys.readouterr().out == ""


def test_curve_leaves_out_the_slow_optimiser_for_many_permutations(capsys):
    # datasketch's optimiser integrates every split: minutes at 65,536 permutations
    assert main(["curve", "--num-perm", "16384"]) == 0
    out = capsys.readouterr().out
    assert "datasketch's optimiser left out above num_perm 8,192" in out and "P(candidate) at the threshold" in out
