"""--png of curve and eval: a directory gets a default name, a name without an extension gets
.png (and the name said is the file written), an extension matplotlib cannot write is a usage
error (exit 2) and a place that cannot be written an output error (exit 5)."""

import json
import os

import pytest

from neardup.cli import main

pytest.importorskip("matplotlib")


def test_curve_png_into_a_directory(tmp_path, capsys):
    d = tmp_path / "plots"
    d.mkdir()
    for arg in (str(d), str(d) + os.sep):
        assert main(["curve", "--png", arg]) == 0
        assert os.listdir(d) == ["curve.png"]
        assert capsys.readouterr().out.splitlines()[-1] == f"wrote {d / 'curve.png'}"


def test_curve_png_without_an_extension(tmp_path, capsys):
    assert main(["curve", "--png", str(tmp_path / "name")]) == 0
    assert os.listdir(tmp_path) == ["name.png"]
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {tmp_path / 'name.png'}"


@pytest.mark.parametrize("cmd", ["curve", "eval"])
def test_png_bad_extension_and_unwritable_place(tmp_path, capsys, cmd):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "some words here to read"}) + "\n")
    out = tmp_path / "out"
    assert main(["dedup", str(corpus), "-o", str(out), "-q"]) == 0
    args = ["curve"] if cmd == "curve" else ["eval", str(corpus), str(out)]
    assert main(args + ["--png", str(tmp_path / "x.xyz")]) == 2
    assert ".xyz" in capsys.readouterr().err
    assert main(args + ["--png", str(tmp_path / "no" / "such" / "x.png")]) == 5
    assert "cannot write" in capsys.readouterr().err
    assert not (out / "eval.json").exists()  # (eval: refused before any work)
    assert not any(p.name.endswith((".xyz", ".png")) for p in tmp_path.iterdir())
