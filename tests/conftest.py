"""Shared fixtures: the guide's example texts."""

from __future__ import annotations

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
