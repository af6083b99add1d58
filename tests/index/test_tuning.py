"""Where postings go is an explicit setting (stored, overridable per process), never the environment."""

import os
import subprocess
import sys

import pytest

from neardup.errors import InvalidParameterError
from neardup.index import Index


def _segments(d):
    return sorted(f for f in os.listdir(d) if f.startswith("seg-"))


def test_tuning_is_stored_and_overridable(tmp_path, corpus):
    d = tmp_path / "ix"
    with Index.create(d, segment_min=20) as ix:
        assert (ix.tuning.segment_min, ix.tuning.l0_max) == (20, 50_000)
        ix.add(corpus[:30])  # >= 20: a segment file
    assert len(_segments(d)) == 1
    with Index.open(d) as ix:  # the stored setting
        assert ix.tuning.segment_min == 20
        ix.add(corpus[30:40])  # < 20: level 0
    assert len(_segments(d)) == 1
    with Index.open(d, segment_min=5) as ix:  # this process only
        ix.add(corpus[40:50])
    assert len(_segments(d)) == 2
    with Index.open(d, l0_max=3) as ix:  # level 0 (10 documents) folded into the next segment
        ix.add(corpus[50:55])
        assert ix._conn().execute("SELECT COUNT(*) FROM level0").fetchone()[0] == 0
    assert len(_segments(d)) == 3
    with Index.open(d) as ix:
        assert ix.tuning.segment_min == 20 and ix.tuning.l0_max == 50_000


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True])
def test_bad_tuning_is_refused(tmp_path, bad):
    with pytest.raises(InvalidParameterError, match="segment_min must be a positive integer"):
        Index.create(tmp_path / "ix", segment_min=bad)
    Index.create(tmp_path / "ok").close()
    with pytest.raises(InvalidParameterError, match="l0_max must be a positive integer"):
        Index.open(tmp_path / "ok", l0_max=bad)


def test_cli_takes_tuning_and_ignores_the_old_environment_variables(tmp_path, corpus):
    import ix_helpers as h

    d = str(tmp_path / "ix")
    f = h.write_jsonl(tmp_path / "a.jsonl", corpus[:40])
    run = lambda *a, **kw: subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", *a], capture_output=True, text=True, **kw
    )
    assert run("init", d, "--segment-min", "30").returncode == 0
    env = dict(os.environ, NEARDUP_INDEX_SEGMENT_MIN="100000")  # no longer read by anything
    assert run("add", d, f, env=env).returncode == 0
    assert len(_segments(d)) == 1
    g = h.write_jsonl(tmp_path / "b.jsonl", corpus[40:45])
    assert run("add", d, g, "--segment-min", "1").returncode == 0
    assert len(_segments(d)) == 2
    r = run("add", d, g, "--l0-max", "0")
    assert r.returncode == 2 and "l0_max must be a positive integer" in r.stderr


def test_merge_max_is_stored_by_init_and_refused_when_bad(tmp_path):
    d = str(tmp_path / "ix")
    r = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", "init", d, "--merge-max", "7000"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    with Index.open(d) as ix:
        assert ix.tuning.merge_max == 7000
    with pytest.raises(InvalidParameterError, match="merge_max must be a positive integer"):
        Index.open(d, merge_max=0)
    r = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", "init", str(tmp_path / "b"), "--merge-max", "-5"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "merge_max must be a positive integer" in r.stderr


def test_steps_are_checked_and_not_stored(tmp_path):
    """Steps (how much the index does at a time) are a process's choice: checked when made,
    passed to open/create, never written into the index."""
    import pytest

    from neardup.errors import InvalidParameterError
    from neardup.index import Index, Steps

    for bad in ({"sign_chunk": 0}, {"small_plan": -1}, {"pace_bytes": True}, {"retire_pause": -0.1}):
        with pytest.raises(InvalidParameterError, match=next(iter(bad))):
            Steps(**bad)
    assert Steps(small_plan=0).small_plan == 0  # 0: never the steps for a few
    with Index.create(tmp_path / "ix", steps=Steps(sign_chunk=7)) as ix:
        assert ix.steps.sign_chunk == 7
    with Index.open(tmp_path / "ix") as ix:
        assert ix.steps == Steps()
    with pytest.raises(InvalidParameterError, match="steps must be"):
        Index.open(tmp_path / "ix", steps={"sign_chunk": 7})
