"""Outputs that must not destroy anything: an input in the output directory under an
output's name, a --tmp-dir where nothing can be created, a full spill disk, and a previous
run's kept file of the other --format."""

import errno
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from nd_helpers import write_jsonl as _write_jsonl

import neardup
from neardup.cli import main
from neardup.cli.exits import EXIT_OUTPUT, EXIT_USAGE
from neardup.engines.local.store import RowStore
from neardup.errors import InvalidParameterError, OutputError
from neardup.stages import candidates


def write_jsonl(path, rows) -> Path:
    return Path(_write_jsonl(path, rows))


def _lines(path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


# ---- 1. an input is one of the outputs ------------------------------------------------------


@pytest.mark.parametrize("name", ["kept.jsonl", "pairs.jsonl", "clusters.jsonl", "report.json"])
def test_input_named_as_an_output_is_refused_and_left_intact(tmp_path, rain, name):
    d = tmp_path / "d"
    d.mkdir()
    src = write_jsonl(d / name, rain)
    before = src.read_bytes()
    with pytest.raises(OutputError, match="would overwrite the input"):
        neardup.dedup(str(src), str(d))
    assert src.read_bytes() == before
    assert os.listdir(d) == [name]  # nothing else written either


def test_input_reached_by_symlink_or_hard_link_is_refused(tmp_path, rain):
    real = write_jsonl(tmp_path / "corpus.jsonl", rain)
    before = real.read_bytes()
    for how in ("symlink", "link"):
        d = tmp_path / how
        d.mkdir()
        getattr(os, how)(real, d / "kept.jsonl")  # the output name is another name of the input
        with pytest.raises(OutputError, match="would overwrite the input"):
            neardup.dedup(str(real), str(d))
        assert real.read_bytes() == before
    # and the output directory itself given by a symlink
    d = tmp_path / "real_out"
    d.mkdir()
    os.link(real, d / "pairs.jsonl")
    os.symlink(d, tmp_path / "alias")
    with pytest.raises(OutputError):
        neardup.dedup(str(real), str(tmp_path / "alias"))
    assert real.read_bytes() == before


def test_other_formats_kept_name_is_no_clash(tmp_path, rain):
    # --format parquet writes kept.parquet: an input named kept.jsonl there is not written
    d = tmp_path / "d"
    d.mkdir()
    src = write_jsonl(d / "kept.jsonl", rain)
    before = src.read_bytes()
    neardup.dedup(str(src), str(d), output_format="parquet", collect=False)
    assert src.read_bytes() == before
    assert (d / "kept.parquet").exists()


def test_cli_refuses_the_clash_with_one_line(tmp_path, rain, capsys):
    d = tmp_path / "d"
    d.mkdir()
    src = write_jsonl(d / "kept.jsonl", rain)
    n = _lines(src)
    for extra in ([], ["--memory-limit", "2G"]):
        assert main(["dedup", str(src), "-o", str(d), "-q", *extra]) == EXIT_OUTPUT
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "would overwrite the input" in err and "Traceback" not in err
        assert _lines(src) == n


# ---- 4. --tmp-dir where nothing can be created ---------------------------------------------


def _uncreatable_dir() -> str:
    if os.path.isdir("/proc"):
        try:
            os.rmdir(tempfile.mkdtemp(dir="/proc"))
        except OSError:
            return "/proc"
    pytest.skip("no directory here in which mkdtemp fails")


def test_tmp_dir_where_nothing_can_be_created(tmp_path, rain_file, capsys):
    where = _uncreatable_dir()
    with pytest.raises(InvalidParameterError, match="cannot create a spill directory there"):
        neardup.dedup(str(rain_file), None, tmp_dir=where)
    assert main(["dedup", str(rain_file), "-o", str(tmp_path / "o"), "-q", "--tmp-dir", where]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tmp-dir" in err and where in err
    assert not (tmp_path / "o").exists()  # said before anything was read or written


# ---- 3. a full spill disk -------------------------------------------------------------------


class _FullDisk:
    """A file object whose writes fail as a full disk's do."""

    def __init__(self, err=errno.ENOSPC):
        self.err = err
        self.closed = False

    def write(self, data):
        raise OSError(self.err, os.strerror(self.err))

    def close(self):
        self.closed = True


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EDQUOT])
def test_rowstore_spill_on_a_full_disk_is_an_output_error(tmp_path, monkeypatch, err):
    import builtins

    import neardup.engines.local.store as store_mod

    real_open = builtins.open
    monkeypatch.setattr(
        store_mod,
        "open",
        lambda p, m="r", *a, **k: _FullDisk(err) if "w" in m else real_open(p, m, *a, **k),
        raising=False,
    )
    st = RowStore(4, np.uint32, 64, str(tmp_path), "signatures")
    with pytest.raises(OutputError) as ei:
        for _ in range(10):
            st.append(np.ones((4, 4), np.uint32))
    msg = str(ei.value)
    assert str(tmp_path) in msg and "--tmp-dir" in msg and "signatures" in msg and "bytes" in msg
    assert "free space there" in msg
    st.close()
    assert os.listdir(tmp_path) == []  # the spill directory removed


def test_band_sort_on_a_full_disk_is_an_output_error(tmp_path, monkeypatch):
    monkeypatch.setattr(candidates, "open", lambda *a, **k: _FullDisk(), raising=False)
    keys = np.random.default_rng(0).integers(0, 2**63, size=(5000, 4), dtype=np.uint64)
    keys[1] = keys[0]
    with pytest.raises(OutputError, match="band sort.*No space left on device"):
        candidates._external_pairs(keys, 4096, str(tmp_path), {})
    assert os.listdir(tmp_path) == []


def _mount_small_tmpfs(path) -> bool:
    path.mkdir()
    try:
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(path)], capture_output=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def test_cli_full_spill_disk_says_one_line(tmp_path):
    small = tmp_path / "small"
    if not _mount_small_tmpfs(small):
        pytest.skip("cannot mount a small tmpfs here (the monkeypatched tests cover the message)")
    try:
        corpus = tmp_path / "c.jsonl"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "synth",
                "-o",
                str(corpus),
                "--originals",
                "40000",
                "--copies",
                "10000",
                "--words",
                "30",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        # a subprocess: the limit is the whole process's, and pytest's own memory is not the CLI's
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "dedup",
                str(corpus),
                "-o",
                str(tmp_path / "o"),
                "-q",
                "--tmp-dir",
                str(small),
                "--memory-limit",
                "110M",
                "--verify",
                "estimate",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if p.returncode == EXIT_USAGE and "too small" in p.stderr:
            pytest.skip(f"this interpreter needs more than the test's limit: {p.stderr}")
        assert p.returncode == EXIT_OUTPUT, p.stderr
        err = p.stderr
        assert err.count("\n") == 1 and "--tmp-dir" in err and str(small) in err and "Traceback" not in err
        assert "No space left on device" in err and "MB" in err
        assert os.listdir(small) == []  # the partial spill removed
        assert not (tmp_path / "o").exists() or os.listdir(tmp_path / "o") == []
    finally:
        subprocess.run(["umount", str(small)], capture_output=True, timeout=20)


# ---- 5. the other format's kept file of a previous run ---------------------------------------


def test_rerun_in_the_other_format_removes_the_previous_kept_file(tmp_path, rain_file):
    out = tmp_path / "o"
    neardup.dedup(str(rain_file), str(out), output_format="parquet")
    assert (out / "kept.parquet").exists()
    neardup.dedup(str(rain_file), str(out))
    assert sorted(os.listdir(out)) == ["clusters.jsonl", "kept.jsonl", "pairs.jsonl", "report.json"]
    neardup.dedup(str(rain_file), str(out), output_format="parquet")
    assert sorted(os.listdir(out)) == ["clusters.jsonl", "kept.parquet", "pairs.jsonl", "report.json"]


def test_a_kept_file_neardup_did_not_write_is_never_removed(tmp_path, rain_file):
    out = tmp_path / "o"
    # not listed by any report.json
    out.mkdir()
    (out / "kept.parquet").write_bytes(b"mine")
    neardup.dedup(str(rain_file), str(out))
    assert (out / "kept.parquet").read_bytes() == b"mine"
    # listed, but written after that report (copied in by hand since)
    rep = json.loads((out / "report.json").read_text())
    rep["files"].append("kept.parquet")
    (out / "report.json").write_text(json.dumps(rep))
    past = os.stat(out / "report.json").st_mtime_ns - 10**9
    os.utime(out / "report.json", ns=(past, past))
    neardup.dedup(str(rain_file), str(out), output_format="jsonl")
    assert (out / "kept.parquet").read_bytes() == b"mine"


def test_a_previous_kept_file_that_is_this_runs_input_is_kept(tmp_path, rain_file):
    out = tmp_path / "o"
    neardup.dedup(str(rain_file), str(out), output_format="parquet")
    before = (out / "kept.parquet").read_bytes()
    neardup.dedup(str(out / "kept.parquet"), str(out), id_field="id")  # dedup the kept records again
    assert (out / "kept.parquet").read_bytes() == before
    assert (out / "kept.jsonl").exists()


# ---- 6. kept.parquet under --memory-limit ------------------------------------------------------


def test_parquet_output_keeps_within_the_memory_limit(tmp_path, synth_200k):
    # pyarrow's first conversion (~50 MiB, once) and a block of 8,192 records were not counted:
    # --format parquet --memory-limit 150M peaked at 198 MiB, all in the write stage. Now a
    # run either keeps within the limit or stops early (exit 2) saying the minimum.
    corpus = synth_200k  # (tests/conftest.py: written once, shared with test_dedup_signals; only read)
    ran = 0
    for limit_mib in (150, 280):
        out = tmp_path / f"o{limit_mib}"
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "dedup",
                str(corpus),
                "-o",
                str(out),
                "-q",
                "--json",
                "--format",
                "parquet",
                "--memory-limit",
                f"{limit_mib}M",
                "--tmp-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if p.returncode == EXIT_USAGE:
            assert "too small for this input" in p.stderr
            continue
        assert p.returncode == 0, p.stderr
        ran += 1
        report = json.loads(p.stdout)
        assert report["peak_rss_mb"] <= limit_mib, [(s["name"], s["peak_rss_mb"]) for s in report["stages"]]
    assert ran, "no limit tried was enough for this input"


# ---- 6. spilled signatures read without leaving their pages resident -------------------------


def test_rows_at_of_a_spilled_store_equals_indexing(tmp_path):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 2**32, size=(5000, 16), dtype=np.uint32)
    st = RowStore(16, np.uint32, 1024, str(tmp_path), "signatures")
    for at in range(0, len(data), 700):
        st.append(data[at : at + 700])
    assert st.spilled and isinstance(st.finish(), np.memmap)
    idx = rng.integers(0, len(data), size=3000)
    assert np.array_equal(st.rows_at(idx), data[idx])
    assert np.array_equal(st.rows_at(idx[:10]), data[idx[:10]])
    from neardup.engines.local.run import _estimate
    from neardup.stages.verify import estimate_pairs

    pairs = rng.integers(0, len(data), size=(9000, 2))
    assert np.array_equal(_estimate(st, pairs), estimate_pairs(data, pairs))
    st.close()


def test_band_keys_of_spilled_signatures_equal_in_memory(tmp_path):
    rng = np.random.default_rng(4)
    sigs = rng.integers(0, 50, size=(20000, 32), dtype=np.uint32)  # small values: many shared bands
    path = tmp_path / "s.bin"
    sigs.tofile(path)
    mapped = np.memmap(path, dtype=np.uint32, mode="r", shape=sigs.shape)
    a = candidates.lsh_pairs(sigs, 8, 4)
    b = candidates.lsh_pairs(mapped, 8, 4)
    assert len(a) and np.array_equal(a, b)


def test_estimate_run_keeps_within_the_memory_limit(tmp_path, synth_200k):
    """--verify estimate under a limit keeps its peak under it with the signatures spilled.
    Hashing the whole spilled map (candidates) and indexing it (verify) made its pages
    resident, uncounted (150M peaked at 195 MiB); then the rows copied between drops of the
    map's pages (RowStore.rows_at) were counted as two pages each, where a fault maps every
    cached page of its 64 KiB window: 170M peaked at 211.7 MiB on 200k articles of 30 words
    (short rows' pages hold many). The limit is found from what the run says it needs (no
    fixed figure: the interpreter takes 70-105 MiB by the install), stepping up to the least
    that runs with the signatures spilled; the run there, and at 10% over, stays under it."""
    corpus = synth_200k  # (tests/conftest.py: written once, shared with test_dedup_signals; only read)

    def run(mib: int):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.cli",
                "dedup",
                str(corpus),
                "-o",
                str(tmp_path / "o"),
                "-q",
                "--json",
                "--verify",
                "estimate",
                "--memory-limit",
                f"{mib}M",
                "--tmp-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if p.returncode == EXIT_USAGE:
            m = re.search(r"needs at least about ([\d.]+) MiB", p.stderr)
            assert m and "too small for this input" in p.stderr, p.stderr
            return None, float(m.group(1))
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout), None

    mib, checked = 64, 0
    for _ in range(12):
        report, needs = run(mib)
        if report is None:
            mib = max(math.ceil(needs) + 1, math.ceil(mib * 1.04))
            continue
        if not report["memory"]["rows_spilled_to_disk"]:
            break  # (nothing mapped: not the case this test is about)
        assert report["peak_rss_mb"] <= mib, (mib, [(s["name"], s["peak_rss_mb"]) for s in report["stages"]])
        checked += 1
        if checked == 2:
            break
        mib = math.ceil(mib * 1.1)
    assert checked, f"no limit up to {mib} MiB both ran and spilled the signatures"
