"""End to end on the guide's rain story: the copies cluster with the agency story, the drains
story stays alone, and every output file has its documented schema."""

import gzip
import json
import os

import numpy as np
import pytest
from nd_helpers import read_jsonl, write_jsonl

import neardup

RAIN_CLUSTER = {"agency-001", "site-a-417", "site-b-092", "site-d-775"}


def test_rain_story_clusters_with_its_copies(rain):
    res = neardup.dedup(rain)
    assert len(res.clusters) == 1
    c = res.clusters[0]
    assert c["keeper"] == "agency-001"
    assert c["size"] == 4
    assert {c["keeper"]} | {m["id"] for m in c["members"]} == RAIN_CLUSTER
    by_id = {m["id"]: m for m in c["members"]}
    assert by_id["site-d-775"]["match"] == "exact" and by_id["site-d-775"]["similarity"] == 1.0
    # the guide's exact Jaccard values: 0.83 ("Sunday evening") and 0.84 ("Also read")
    assert by_id["site-a-417"]["match"] == "near"
    assert round(by_id["site-a-417"]["similarity"], 2) == 0.83
    assert round(by_id["site-b-092"]["similarity"], 2) == 0.84
    assert res.kept == ["agency-001", "site-c-310", "site-e-058"]
    r = res.report
    assert r["documents"] == 6
    assert r["exact_copies_removed"] == 1
    assert r["near_copies_removed"] == 2
    assert r["copies_removed"] == 3
    assert r["kept"] == 3


def test_output_files_and_schema(tmp_path, rain_file):
    out = tmp_path / "out"
    neardup.dedup(rain_file, out)
    assert sorted(os.listdir(out)) == ["clusters.jsonl", "kept.jsonl", "pairs.jsonl", "report.json"]
    clusters = read_jsonl(out / "clusters.jsonl")
    assert len(clusters) == 1
    c = clusters[0]
    assert set(c) == {"cluster", "keeper", "size", "members"}
    assert isinstance(c["cluster"], int) and c["size"] == len(c["members"]) + 1
    for m in c["members"]:
        assert set(m) == {"id", "similarity", "match"}
        assert m["match"] in ("exact", "near") and 0 <= m["similarity"] <= 1
    pairs = read_jsonl(out / "pairs.jsonl")
    assert {(p["a"], p["b"]) for p in pairs} == {
        ("agency-001", "site-a-417"),
        ("agency-001", "site-b-092"),
        ("agency-001", "site-d-775"),
    }
    for p in pairs:
        assert set(p) == {"a", "b", "similarity", "match"}
        assert p["similarity"] >= 0.8
    kept = read_jsonl(out / "kept.jsonl")
    assert [k["id"] for k in kept] == ["agency-001", "site-c-310", "site-e-058"]
    assert kept[0]["alternates"] == ["site-a-417", "site-b-092", "site-d-775"]
    assert kept[1]["alternates"] == [] and kept[2]["alternates"] == []
    # every other field is carried through untouched
    src = {r["id"]: r for r in read_jsonl(rain_file)}
    for k in kept:
        assert {key: v for key, v in k.items() if key != "alternates"} == src[k["id"]]
    report = json.loads((out / "report.json").read_text())
    for key in (
        "documents",
        "exact_copies_removed",
        "candidates",
        "verified_pairs",
        "clusters",
        "copies_removed",
        "stages",
        "seconds",
        "peak_rss_mb",
        "lsh",
        "skipped",
    ):
        assert key in report
    assert [s["name"] for s in report["stages"]] == [
        "read",
        "exact",
        "signatures",
        "candidates",
        "verify",
        "clusters",
        "write",
    ]
    assert all(s["seconds"] >= 0 and s["peak_rss_mb"] > 0 for s in report["stages"])
    assert report["lsh"]["p_at_threshold"] >= 0.95
    # no temporary files are left behind
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]


def test_extra_fields_and_raw_lines_carried_through(tmp_path, rain):
    rain[3]["extra"] = {"nested": [1, 2, {"x": "ಮಳೆ"}], "n": None}
    path = tmp_path / "rain.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for r in rain:
            f.write(json.dumps(r, ensure_ascii=False, indent=None, separators=(", ", ": ")) + "\n")
    neardup.dedup(str(path), tmp_path / "o")
    kept = read_jsonl(tmp_path / "o" / "kept.jsonl")
    drains = next(k for k in kept if k["id"] == "site-c-310")
    assert drains["extra"] == {"nested": [1, 2, {"x": "ಮಳೆ"}], "n": None}


def test_pairs_point_from_earlier_to_later_documents(rain):
    # query before insert: a pair's first member is the earlier document in input order
    order = {r["id"]: i for i, r in enumerate(rain)}
    res = neardup.dedup(list(reversed(rain)))
    assert res.pairs
    rev = {r["id"]: i for i, r in enumerate(reversed(rain))}
    for p in res.pairs:
        assert rev[p["a"]] < rev[p["b"]]
    assert order  # the keeper is still chosen by time, not by input order
    assert res.clusters[0]["keeper"] == "agency-001"


def test_verify_estimate_and_pinned_bands(rain):
    res = neardup.dedup(rain, verify="estimate", bands=16, rows=8)
    assert res.report["lsh"]["bands"] == 16 and res.report["lsh"]["rows"] == 8
    assert res.report["lsh"]["rule"] == "pinned"
    assert {m["id"] for m in res.clusters[0]["members"]} <= RAIN_CLUSTER
    sims = neardup.MinHash(num_perm=128, seed=1, scheme="oph")  # the dedup default scheme
    # the estimate reported is the share of equal signature positions
    a = sims.signature(rain[0]["text"])
    for m in res.clusters[0]["members"]:
        if m["match"] == "near":
            other = next(r for r in rain if r["id"] == m["id"])
            assert m["similarity"] == pytest.approx(float(np.mean(a == sims.signature(other["text"]))), abs=1e-6)


def test_threshold_too_high_keeps_everything(rain):
    res = neardup.dedup(rain, threshold=0.9)
    # only the spacing/case copy (exact pass) is removed
    assert res.report["near_pairs"] == 0
    assert res.report["copies_removed"] == 1


@pytest.mark.parametrize(
    "kw",
    [
        dict(threshold=1.0),
        dict(threshold=1.0, memory_limit="1G"),
        dict(bands=1, rows=4),
        dict(bands=1, rows=4, large_bucket=None),
    ],
)
def test_a_single_band(rain, kw):
    # one band (threshold 1, or pinned): the rows of band keys are one column wide, and were
    # flattened like SimHash fingerprints (TypeError "dimensionality mismatch", exit 1)
    res = neardup.dedup(rain, **kw)
    assert res.report["lsh"]["bands"] == 1
    every = neardup.dedup(rain, **{**kw, "bands": 1, "rows": 1})  # every pair sharing a value: the widest net
    assert res.report["copies_removed"] >= 1 and res.kept
    if kw.get("threshold") == 1.0:  # only identical texts are copies at similarity 1
        assert res.report["near_pairs"] == 0 and res.report["copies_removed"] == every.report["exact_copies_removed"]


@pytest.mark.parametrize("unit,k", [("word", 5), ("whitespace", 3), ("char", 9)])
def test_every_similarity_is_the_runs_own_jaccard(rain, unit, k):
    # the exact pass grouped texts with the same *word* tokens whatever the unit, and reported
    # them at similarity 1.0: with whitespace units "rain," and "rain" are different tokens
    # (one such pair of the rain story was reported at 1.0, its Jaccard 0.41)
    import numpy as np

    res = neardup.dedup(rain, None, unit=unit, k=k, threshold=0.5)
    sh = neardup.Shingler(k=k, unit=unit)
    text = {d["id"]: d["text"] for d in rain}
    assert res.pairs
    for p in res.pairs:
        a, b = sh.hashes(text[p["a"]]), sh.hashes(text[p["b"]])
        j = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
        assert p["similarity"] == pytest.approx(j, abs=1e-6), (unit, p)
    for c in res.clusters:
        for m in c["members"]:
            a, b = sh.hashes(text[c["keeper"]]), sh.hashes(text[m["id"]])
            j = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
            assert m["similarity"] == pytest.approx(j, abs=1e-6) and (m["match"] == "exact") == (j == 1.0), (unit, m)


def test_containment_finds_a_story_pasted_into_a_page():
    story = " ".join(f"story{i}" for i in range(120))
    page = " ".join(f"page{i}" for i in range(450)) + " " + story + " " + " ".join(f"tail{i}" for i in range(450))
    recs = [
        {"id": "story", "text": story},
        {"id": "page", "text": page},
        {"id": "other", "text": " ".join(f"other{i}" for i in range(300))},
    ]
    # Jaccard is only ~0.11, so the Jaccard run finds nothing ...
    assert neardup.dedup(recs, threshold=0.8, time_field=None).report["near_pairs"] == 0
    # ... containment (shared over the smaller document's shingles) is 1.0; bands loose enough
    # for candidates at J ~ 0.1 must be pinned (LSH targets Jaccard): 128 bands of 1 row make a
    # pair at J = 0.11 a candidate with P = 1 - 0.89^128 > 0.9999
    res = neardup.dedup(recs, threshold=0.9, measure="containment", bands=128, rows=1, time_field=None)
    assert res.report["near_pairs"] == 1
    assert res.pairs[0]["similarity"] == 1.0


def test_simhash_method_finds_close_copies():
    base = " ".join(f"w{i % 97}x{i}" for i in range(2000))
    edited = base.replace("w5x5 ", "changed ")
    recs = [
        {"id": "a", "text": base},
        {"id": "b", "text": edited},
        {"id": "c", "text": " ".join(f"z{i}" for i in range(2000))},
    ]
    res = neardup.dedup(recs, method="simhash", max_distance=3, time_field=None)
    assert res.report["lsh"] is None
    assert [(p["a"], p["b"]) for p in res.pairs] == [("a", "b")]
    assert res.pairs[0]["similarity"] >= 0.8  # exact Jaccard, verified
    est = neardup.dedup(recs, method="simhash", max_distance=3, verify="estimate", time_field=None)
    assert [(p["a"], p["b"]) for p in est.pairs] == [("a", "b")]


def test_compressed_parquet_and_csv_inputs_agree(tmp_path, rain):
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    plain = write_jsonl(tmp_path / "r.jsonl", rain)
    with open(plain, "rb") as f:
        data = f.read()
    with gzip.open(tmp_path / "r.jsonl.gz", "wb") as f:
        f.write(data)
    (tmp_path / "r.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    pq.write_table(pa.Table.from_pylist(rain), tmp_path / "r.parquet")
    import csv

    with open(tmp_path / "r.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rain[0]))
        w.writeheader()
        w.writerows(rain)
    want = neardup.dedup(rain).clusters
    for name in ("r.jsonl", "r.jsonl.gz", "r.jsonl.zst", "r.parquet", "r.csv"):
        got = neardup.dedup(str(tmp_path / name), tmp_path / ("out-" + name))
        assert got.clusters == want, name
        kept = read_jsonl(tmp_path / ("out-" + name) / "kept.jsonl")
        assert [k["id"] for k in kept] == ["agency-001", "site-c-310", "site-e-058"], name


def test_parquet_output(tmp_path, rain):
    import pyarrow.parquet as pq

    neardup.dedup(rain, tmp_path / "o", output_format="parquet")
    assert not (tmp_path / "o" / "kept.jsonl").exists()
    rows = pq.read_table(tmp_path / "o" / "kept.parquet").to_pylist()
    assert [r["id"] for r in rows] == ["agency-001", "site-c-310", "site-e-058"]
    assert rows[0]["alternates"] == ["site-a-417", "site-b-092", "site-d-775"]
    assert rows[0]["title"] == rain[0]["title"]


def test_several_inputs_are_one_corpus(tmp_path, rain):
    a = write_jsonl(tmp_path / "a.jsonl", rain[:2])
    b = write_jsonl(tmp_path / "b.jsonl", rain[2:])
    res = neardup.dedup([a, b], tmp_path / "o")
    assert res.clusters == neardup.dedup(rain).clusters
    assert [i["records"] for i in res.report["inputs"]] == [2, 4]


def test_integer_ids_and_title_field(tmp_path, rain):
    for i, r in enumerate(rain):
        r["id"] = 100 + i
    res = neardup.dedup(rain, title_field="title")
    # with titles, the "Sunday evening" copy (new headline) drops under 0.8; the rest stay
    members = {m["id"] for m in res.clusters[0]["members"]}
    assert res.clusters[0]["keeper"] == 100 and 104 in members and 102 in members


def test_exact_pass_only_groups_equal_normalised_text():
    recs = [
        {"id": "1", "text": "Heavy rain, in GOA!"},
        {"id": "2", "text": "heavy   rain in goa"},
        {"id": "3", "text": "heavy rain in goa today"},
        {"id": "4", "text": "?!"},
        {"id": "5", "text": "..."},
    ]
    res = neardup.dedup(recs, time_field=None)
    assert res.report["exact_copies_removed"] == 1
    assert res.report["no_token_documents"] == 2
    # documents without any word are never grouped, not even with each other
    assert {c["keeper"] for c in res.clusters} == {"1"}
    assert res.clusters[0]["members"][0]["id"] == "2"


def test_parquet_timestamps_and_binary_fields(tmp_path, rain):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    base = dt.datetime(2026, 7, 12, 6, 0, tzinfo=dt.UTC)
    rows = []
    for i, r in enumerate(rain):
        r = dict(r)
        # the agency story is published last here, so a site copy becomes the keeper
        r["published_at"] = base + dt.timedelta(minutes=(100 if r["id"] == "agency-001" else i))
        r["blob"] = bytes([i, 255])
        rows.append(r)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "r.parquet")
    res = neardup.dedup(str(tmp_path / "r.parquet"), tmp_path / "o")
    assert res.clusters[0]["keeper"] == "site-a-417"
    kept = read_jsonl(tmp_path / "o" / "kept.jsonl")
    assert [k["id"] for k in kept] == ["site-a-417", "site-c-310", "site-e-058"]
    assert "agency-001" in kept[0]["alternates"]
