import pytest
from nd_helpers import write_jsonl

from neardup.demo import records as demo_records


@pytest.fixture
def rain():
    return demo_records()


@pytest.fixture
def rain_file(tmp_path, rain):
    return write_jsonl(tmp_path / "rain.jsonl", rain)
