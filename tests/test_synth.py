"""neardup.synth: the guide's synthetic corpus (no timing here: rates are in docs/synth.md)."""

from __future__ import annotations

import collections
import gzip
import json
import os
import re

import pytest

from neardup import synth
from neardup.errors import InvalidParameterError

# Small corpora that still cross a chunk boundary (4,096 originals a chunk).
SMALL = dict(originals=600, copies=300, words=60, seed=3)
CROSS = dict(originals=5000, copies=900, words=40, seed=11)


@pytest.fixture(scope="module")
def small():
    return list(synth.generate(**SMALL))


@pytest.fixture(scope="module")
def cross():
    return list(synth.generate(**CROSS))


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def test_deterministic_given_seed(small):
    assert list(synth.generate(**SMALL)) == small
    other = list(synth.generate(**{**SMALL, "seed": 4}))
    assert [r["text"] for r in other] != [r["text"] for r in small]


def test_fields_and_types(small):
    for r in small:
        assert tuple(r) == synth.FIELDS
        assert isinstance(r["id"], str) and isinstance(r["text"], str)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["published_at"])
        assert r["source"] == "agency" or re.fullmatch(r"site-\d+", r["source"])
        assert isinstance(r["edits"], int)
        if r["original_id"] is None:
            assert r["copy_kind"] is None and r["edits"] == 0
            assert len(r["text"].split(" ")) == SMALL["words"]
        else:
            assert r["copy_kind"] in synth.COPY_KINDS


def test_counts_and_thirds(cross):
    kinds = collections.Counter(r["copy_kind"] for r in cross)
    assert kinds == {None: 5000, "spacing": 300, "light": 300, "heavy": 300}


def test_default_split_matches_the_guide():
    # 20,000 copies split 6,667 / 6,667 / 6,666 as in the guide's run; cheap with short articles.
    kinds = collections.Counter(r["copy_kind"] for r in synth.generate(originals=50, copies=20_000, words=3))
    assert kinds == {None: 50, "spacing": 6667, "light": 6667, "heavy": 6666}


def test_ids_unique_and_copies_point_back(cross):
    ids = [r["id"] for r in cross]
    assert len(set(ids)) == len(ids)
    by_id = {r["id"]: r for r in cross}
    seen: set[str] = set()
    for r in cross:
        if r["original_id"] is not None:
            orig = by_id[r["original_id"]]
            assert orig["original_id"] is None
            assert r["original_id"] in seen  # the original comes first in the stream
            assert r["published_at"] > orig["published_at"]  # ISO strings order like times
            if orig["source"] != "agency":
                assert r["source"] != orig["source"]
        seen.add(r["id"])


def test_spacing_copies_fold_to_their_original(cross):
    by_id = {r["id"]: r for r in cross}
    n = 0
    for r in cross:
        if r["copy_kind"] == "spacing":
            orig = by_id[r["original_id"]]["text"]
            assert r["text"] != orig
            assert _fold(r["text"]) == orig
            assert r["edits"] == 0
            n += 1
    assert n == 300


@pytest.mark.parametrize("kind, lo, hi", [("light", 1, 8), ("heavy", 30, 60)])
def test_edit_counts_in_range_and_true(kind, lo, hi):
    records = list(synth.generate(originals=400, copies=600, words=300, seed=5))
    by_id = {r["id"]: r for r in records}
    edits = []
    for r in records:
        if r["copy_kind"] == kind:
            a = by_id[r["original_id"]]["text"].split(" ")
            b = r["text"].split(" ")
            assert len(a) == len(b) == 300
            assert sum(x != y for x, y in zip(a, b)) == r["edits"]
            edits.append(r["edits"])
    assert lo <= min(edits) and max(edits) <= hi
    assert len(set(edits)) > (hi - lo) // 2  # the whole range is used


def test_edits_clamped_on_short_articles():
    records = list(synth.generate(originals=30, copies=60, words=5, seed=1))
    heavy = [r for r in records if r["copy_kind"] == "heavy"]
    assert heavy and all(r["edits"] == 5 for r in heavy)


def test_vocabulary_is_real_english():
    words, p = synth.vocabulary()
    assert len(words) == synth.VOCABULARY_SIZE
    assert all(re.fullmatch(r"[a-z]+", w) for w in words)
    assert words[0] == "the"
    assert abs(p.sum() - 1) < 1e-9 and (p > 0).all()
    assert (p[:-1] >= p[1:]).all()  # most frequent first


def test_word_frequencies_realistic(cross):
    counts = collections.Counter(w for r in cross if r["original_id"] is None for w in r["text"].split(" "))
    top = [w for w, _ in counts.most_common(10)]
    assert top[0] == "the"
    assert {"of", "and", "to", "a", "in"} <= set(top)
    words, p = synth.vocabulary()
    total = sum(counts.values())
    assert counts["the"] / total == pytest.approx(p[0], rel=0.05)
    assert len(counts) > 5000  # a long tail, not a handful of words


def _read(path):
    fmt = synth.format_for(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if fmt == "jsonl.gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f]
    if fmt == "jsonl.zst":
        import io

        import zstandard

        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as z:
            return [json.loads(line) for line in io.TextIOWrapper(z, encoding="utf-8")]
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("name", ["c.jsonl", "c.ndjson", "c.jsonl.gz", "c.jsonl.zst", "c.parquet"])
def test_formats_round_trip(tmp_path, cross, name):
    if name.endswith(".zst"):
        pytest.importorskip("zstandard")
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    path = tmp_path / name
    seen = []
    counts = synth.write_corpus(path, progress=seen.append, **CROSS)
    assert _read(path) == cross
    assert counts["records"] == 5900 and counts["originals"] == 5000 and counts["copies"] == 900
    assert counts["spacing"] == counts["light"] == counts["heavy"] == 300
    assert counts["bytes"] == os.path.getsize(path)
    assert seen and seen[-1] == 5900
    assert sorted(os.listdir(tmp_path)) == [name]  # no temporary file left behind


def test_write_is_atomic_on_failure(tmp_path):
    path = tmp_path / "c.jsonl.gz"

    def boom(n):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        synth.write_corpus(path, progress=boom, **SMALL)
    assert os.listdir(tmp_path) == []
    # an existing file is left as it was
    path.write_text("old")
    with pytest.raises(RuntimeError):
        synth.write_corpus(path, progress=boom, **SMALL)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["c.jsonl.gz"]


def test_unknown_extension(tmp_path):
    with pytest.raises(InvalidParameterError, match="format"):
        synth.write_corpus(tmp_path / "c.csv", **SMALL)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(originals=-1),
        dict(copies=-1),
        dict(words=0),
        dict(seed=-1),
        dict(originals=0, copies=5),
        dict(originals=1.5),
        dict(words=True),
    ],
)
def test_bad_parameters(kwargs):
    with pytest.raises(InvalidParameterError):
        synth.generate(**kwargs)


def test_empty_corpus():
    assert list(synth.generate(originals=0, copies=0)) == []


def test_sizes_and_levels_out_of_range_are_refused(tmp_path):
    # words=10**9 tried to allocate gigabytes (the process was killed); level=100 was a bare
    # ValueError for .gz and .zst and silently taken for Parquet
    from neardup.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="words must be <= 1,000,000"):
        synth.write_corpus(tmp_path / "a.jsonl", originals=2, copies=0, words=10**9)
    for name, msg in (
        ("a.jsonl.gz", "0..9"),
        ("a.jsonl.zst", "1..22"),
        ("a.parquet", "1..22"),
        ("a.jsonl", "level applies to"),
    ):
        with pytest.raises(InvalidParameterError, match=msg):
            synth.write_corpus(tmp_path / name, originals=2, copies=0, words=5, level=100)
        assert not (tmp_path / name).exists()
    assert synth.write_corpus(tmp_path / "b.jsonl.gz", originals=2, copies=0, words=5, level=9)["records"] == 2
