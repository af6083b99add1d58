"""CSV/TSV input on Spark: the local engine's reader (fields, record numbers, its errors),
so the same records are checked, skipped, clustered and kept as by the local engine."""

import csv
import gzip
import io
import json
import os
from datetime import UTC, datetime

import pytest
from parity import assert_same
from spark_corpus import make_corpus

import neardup
from neardup.errors import RecordError


def write_csv(path, docs, delimiter=",", bad=True) -> str:
    """The corpus as CSV, with quoted fields spanning lines (record numbers are the line a
    record starts on) and, with ``bad``, records the local reader or checks reject."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerow(["id", "text", "published_at", "source"])
    for i, d in enumerate(docs):
        text = d["text"]
        if i % 7 == 0:  # a title line inside the field: the record spans two lines
            text = f'Headline "{i}", quoted\n{text}'
        when = datetime.fromtimestamp(d["published_at"], UTC).isoformat()  # CSV fields are strings
        w.writerow([d["id"], text, when, d["source"]])
        if bad and i == 20:
            w.writerow(["short-row", "only two columns"])
        if bad and i == 40:
            w.writerow(["empty-text", "   ", "2026-01-01", "site-1"])
        if bad and i == 60:
            w.writerow([docs[3]["id"], "a duplicate id", "", ""])
        if bad and i == 80:
            w.writerow(["bad-time", d["text"] + " more", "not a date", "site-2"])
    data = buf.getvalue().encode("utf-8")
    if bad:  # a record with a byte that is not UTF-8
        data += b"latin1,caf\xe9 au lait,,site-3\n"
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)
    return str(path)


@pytest.fixture(scope="module")
def docs():
    return make_corpus(originals=200, copies=60, words=60, seed=7)


def test_csv_bad_records_stop_and_skip_like_the_local_engine(spark, docs, tmp_path):
    from neardup.engines.spark import dedup_spark

    path = write_csv(tmp_path / "in.csv", docs)
    with pytest.raises(RecordError) as local_err:
        neardup.dedup(path, None)
    with pytest.raises(RecordError) as spark_err:
        dedup_spark(spark, path, None)
    assert str(spark_err.value) == str(local_err.value)
    assert "expected 4 columns, got 2" in str(local_err.value)
    kw = dict(on_error="skip", prefer_source=["agency"])
    local = neardup.dedup(path, tmp_path / "local", **kw)
    sp = dedup_spark(spark, path, tmp_path / "spark", collect=True, **kw)
    lr = local.report
    assert lr["skipped"] == 4 and lr["unreadable_times"] == 1
    assert lr["clusters"] >= 20 and lr["near_copies_removed"] >= 5
    assert_same(local, sp)
    assert sp.report["unreadable_time_records"] == lr["unreadable_time_records"]
    kdir = tmp_path / "spark" / "kept.jsonl"
    kept = [x for n in sorted(os.listdir(kdir)) if n.startswith("part-") for x in (kdir / n).read_text().splitlines()]
    assert kept == (tmp_path / "local" / "kept.jsonl").read_text().splitlines()


@pytest.mark.parametrize(
    "body,error,words",
    [
        ("id,text,text\na,one two three,four\n", "InputFileError", "more than once"),  # a column named twice
        (
            'id,text\n1,"Breaking: heavy rain\n2,second story\n',
            "RecordError",
            "unexpected end of data",
        ),  # an open quote
    ],
)
def test_csv_reader_errors_like_the_local_engine(spark, tmp_path, body, error, words):
    from neardup import errors
    from neardup.engines.spark import dedup_spark

    path = tmp_path / "in.csv"
    path.write_text(body)
    kind = getattr(errors, error)
    with pytest.raises(kind) as local_err:
        neardup.dedup(str(path), None)
    with pytest.raises(kind) as spark_err:
        dedup_spark(spark, str(path), None)
    assert str(spark_err.value) == str(local_err.value) and words in str(local_err.value)


def test_tsv_gz_and_jsonl_together_like_the_local_engine(spark, docs, tmp_path):
    from neardup.engines.spark import dedup_spark

    tsv = write_csv(tmp_path / "in.tsv.gz", docs[:150], delimiter="\t", bad=False)
    jl = tmp_path / "more.jsonl"
    jl.write_text("".join(json.dumps(d) + "\n" for d in docs[150:]))
    kw = dict(method="simhash", k=3, max_distance=8)
    local = neardup.dedup([tsv, str(jl)], tmp_path / "local", **kw)
    sp = dedup_spark(spark, [tsv, str(jl)], tmp_path / "spark", collect=True, **kw)
    assert local.report["clusters"] >= 5
    assert_same(local, sp)
    kdir = tmp_path / "spark" / "kept.jsonl"
    kept = [x for n in sorted(os.listdir(kdir)) if n.startswith("part-") for x in (kdir / n).read_text().splitlines()]
    assert kept == (tmp_path / "local" / "kept.jsonl").read_text().splitlines()
    assert [i["format"] for i in sp.report["inputs"]] == ["csv", "jsonl"]
    assert [i["records"] for i in sp.report["inputs"]] == [i["records"] for i in local.report["inputs"]]
