import pytest

import ix_helpers


@pytest.fixture(scope="session")
def corpus():
    return ix_helpers.synth()


@pytest.fixture
def small_segments(monkeypatch):
    """Make small adds go to segment files (and level 0 flush early), to test both paths."""
    import neardup.index.core as core

    monkeypatch.setattr(core, "SEGMENT_MIN", 150)
    monkeypatch.setattr(core, "L0_MAX", 200)
