import pytest

import ix_helpers


@pytest.fixture(scope="session")
def corpus():
    return ix_helpers.synth()


@pytest.fixture
def small_segments():
    """Settings that make small adds go to segment files (and level 0 fold early), to test both
    posting paths: pass them to Index.create / Index.open."""
    return {"segment_min": 150, "l0_max": 200}
