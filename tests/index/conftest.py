import ix_helpers
import pytest


@pytest.fixture(scope="session")
def corpus():
    return ix_helpers.synth()


@pytest.fixture
def small_segments():
    """Settings that make small adds go to segment files (and level 0 fold early), to test both
    posting paths: pass them to Index.create / Index.open."""
    return {"segment_min": 150, "l0_max": 200}


@pytest.fixture
def make_index(tmp_path):
    """make_index(docs): a new index under tmp_path holding `docs` (its directory)."""
    from neardup.index import Index

    def make(docs, name: str = "ix"):
        d = tmp_path / name
        with Index.create(d) as ix:
            ix.add(docs)
        return d

    return make
