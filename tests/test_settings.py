"""The one settings object: validated when made, frozen, serialisable, and the one source of
every default (the batch job, the index, the Spark kernels, the CLI)."""

import dataclasses
import inspect
import pickle

import pytest

import neardup
from neardup.errors import InvalidParameterError
from neardup.settings import DEFAULT_MAX_CHARS, Settings


def test_defaults_and_band_shape():
    s = Settings()
    assert (s.method, s.k, s.num_perm, s.threshold, s.max_chars) == ("minhash", 5, 128, 0.8, DEFAULT_MAX_CHARS)
    assert s.band_shape() == (13, 7)  # P(candidate) >= 0.95 at J = 0.8
    assert Settings(bands=9, rows=13).band_shape() == (9, 13)
    assert Settings(method="simhash", max_distance=3).band_shape() == (4, 16)
    assert Settings(method="simhash", max_distance=4).band_shape() == (5, 13)


def test_frozen_hashable_picklable_round_trip():
    s = Settings(k=3, prefer_source="agency,site-a", threshold=0.7)
    assert s.prefer_source == ("agency", "site-a")  # one string of names, not letters
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.k = 4  # type: ignore[misc]
    assert hash(s) == hash(Settings(k=3, prefer_source=["agency", "site-a"], threshold=0.7))
    assert pickle.loads(pickle.dumps(s)) == s
    assert Settings.from_dict(s.as_dict()) == s
    assert s.replace(k=4).k == 4 and s.k == 3


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"k": 0}, "k must be >= 1"),
        ({"k": "5"}, "k must be an integer"),
        ({"threshold": True}, "threshold must be a number"),
        ({"threshold": 1.5}, r"threshold must be in \(0, 1\]"),
        ({"threshold": float("nan")}, "threshold must be in"),
        ({"recall": 1.0}, "recall must be in"),
        ({"method": "lsh"}, "method must be one of"),
        ({"bands": 4}, "give both bands and rows"),
        ({"bands": 20, "rows": 7}, "is more than num_perm"),
        ({"method": "simhash", "bands": 4, "rows": 16}, "apply to MinHash's LSH"),
        ({"measure": "containment", "verify": "estimate"}, "needs exact verification"),
        ({"max_distance": 32}, "max_distance must be in 0..31"),
        ({"max_chars": 0}, "max_chars must be >= 1"),
        ({"prefer_source": [1]}, "prefer_source must be source names"),
    ],
)
def test_invalid_settings_are_refused_when_made(kw, msg):
    with pytest.raises(InvalidParameterError, match=msg):
        Settings(**kw)


def test_from_dict_refuses_unknown_keys():
    with pytest.raises(InvalidParameterError, match="unknown setting 'bandz'"):
        Settings.from_dict({"bandz": 3})


def test_dedup_keyword_defaults_are_the_settings_defaults():
    # neardup.dedup spells its keywords out (for help() and IDEs): each default must be the field's
    params = inspect.signature(neardup.dedup).parameters
    for f in dataclasses.fields(Settings):
        default = params[f.name].default
        assert (tuple(default) if f.name == "prefer_source" else default) == f.default, f.name


def test_index_config_holds_the_settings(tmp_path):
    with neardup.Index.create(tmp_path / "ix", threshold=0.7, prefer_source="agency") as ix:
        s = ix.config.settings
        assert isinstance(s, Settings)
        assert (s.threshold, s.prefer_source) == (0.7, ("agency",))
        assert (s.bands, s.rows) == Settings(threshold=0.7).band_shape()  # resolved when created
        assert ix.opts.settings is s  # the index's runs hold the same object


@pytest.mark.parametrize("bad", [{"read_block_bytes": 0}, {"row_chunk": -1}, {"parquet_block": 1.5}])
def test_batch_steps_are_checked_when_made(bad):
    from neardup.stages.options import BatchSteps

    with pytest.raises(InvalidParameterError, match=next(iter(bad))):
        BatchSteps(**bad)
    with pytest.raises(InvalidParameterError, match="steps must be a BatchSteps"):
        neardup.dedup([{"id": "a", "text": "one two three"}], steps={"row_chunk": 7})
