"""Shared fixtures: the guide's example texts."""

from __future__ import annotations

import subprocess
import sys

import pytest

X = "the monsoon session of parliament begins on monday with a debate on the data bill"
Y = "the monsoon session of parliament begins on tuesday with a debate on the data bill"
Z = "the city corporation has started a drive to clear blocked drains before the monsoon"

RAIN_BASE = (
    "heavy rain is likely over coastal karnataka and goa for the next three days "
    "the weather office said on sunday and fishermen have been advised not to "
    "venture into the sea until thursday as wind speeds may touch 55 kmph "
    "schools in two districts will stay shut on monday officials said"
)


@pytest.fixture
def guide_sentences() -> tuple[str, str, str]:
    return X, Y, Z


@pytest.fixture(scope="session")
def synth_200k(tmp_path_factory):
    """`neardup synth` of 160,000 originals and 40,000 copies of 30 words (seed 0): the input of
    the --memory-limit runs of tests/cli/test_dedup_signals.py and
    tests/local/test_outputs_safety.py. Written once per session (~4 s); every user only
    reads it (their runs write into their own directories)."""
    path = tmp_path_factory.mktemp("synth_200k") / "c.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "synth",
            "-o",
            str(path),
            "--originals",
            "160000",
            "--copies",
            "40000",
            "--words",
            "30",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return path
