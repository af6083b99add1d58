"""Reader edge cases from the adversarial report (s15/h2): CSV rows the csv module rejects
under --on-error skip, empty compressed files, Parquet duplicate column names, Parquet times
Python cannot hold, Parquet dates."""

import datetime as dt
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.cli import main
from neardup.io import InputFileError, RecordError
from neardup.io.readers import CsvSource, ParquetSource, open_sources

RAIN = "the rain fell on the city all night long and the drains overflowed by morning"


def _read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(x) for x in f if x.strip()]


# ---- 1. a CSV row the csv module rejects ------------------------------------------------


def test_csv_rejected_row_is_handed_out_only_when_wanted(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text('id,text\n1,fine words here\n2,"bad"quote here\n3,more fine words\n', encoding="utf-8")
    src = CsvSource(str(p))
    got = list(src.records())
    assert [r for r, _ in got] == [2, 3, 4]
    assert isinstance(got[1][1], RecordError) and "malformed CSV" in str(got[1][1])
    wanted = np.zeros(5, dtype=bool)
    wanted[[2, 4]] = True  # the re-read of records 2 and 4: the rejected row 3 is not wanted
    again = list(src.records(wanted))
    assert [r for r, _ in again] == [2, 4]
    assert all(isinstance(rec, dict) for _, rec in again)


@pytest.mark.parametrize(
    "name,data,line,kept_ids",
    [
        ("after.csv", 'id,text\n1,hello world this is fine\n2,"bad"quote here\n3,another fine text\n', 3, ["1", "3"]),
        # candidates after the bad row: verification re-reads them
        ("before.csv", f'id,text\n1,"bad"quote here\n2,{RAIN}\n3,{RAIN} today\n', 2, ["2"]),
        ("quote.tsv", f'id\ttext\n1\t"Hello," she said, {RAIN}\n2\tother text\n', 2, ["2"]),
    ],
)
def test_csv_rejected_row_is_skipped_and_listed(tmp_path, name, data, line, kept_ids):
    p = tmp_path / name
    p.write_text(data, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["dedup", str(p), "-o", str(out), "-q", "--on-error", "skip"]) == 0
    report = json.loads((out / "report.json").read_text())
    bad = [s for s in report["skipped_records"] if "malformed CSV" in s["reason"]]
    assert len(bad) == 1 and report["skipped"] == 1 and bad[0]["line"] == line
    assert [k["id"] for k in _read(out / "kept.jsonl")] == kept_ids


# ---- 6. an empty compressed file ---------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst", ".csv.gz"])
def test_an_empty_compressed_file_is_an_unreadable_input(tmp_path, suffix, capsys):
    p = tmp_path / ("empty" + suffix)
    p.write_bytes(b"")
    with pytest.raises(InputFileError, match="empty"):
        for s in open_sources([str(p)]):
            list(s.records())
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q"]) == 4
    assert "empty" in capsys.readouterr().err


def test_an_empty_plain_file_is_still_an_empty_input(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q"]) == 0


# ---- 7. a Parquet file naming a column twice ----------------------------------------------


def test_parquet_naming_a_column_twice_is_refused(tmp_path, capsys):
    t = pa.Table.from_arrays(
        [
            pa.array(["a", "b"]),
            pa.array([RAIN, "unrelated words in this one"]),
            pa.array(["unrelated words in this one", RAIN]),
        ],
        names=["id", "text", "text"],
    )
    p = tmp_path / "dup.parquet"
    pq.write_table(t, p)
    with pytest.raises(InputFileError, match="column 'text' more than once"):
        ParquetSource(str(p))
    assert main(["dedup", str(p), "-o", str(tmp_path / "out"), "-q", "--on-error", "skip"]) == 4
    assert "more than once" in capsys.readouterr().err
    assert not (tmp_path / "out" / "kept.jsonl").exists()


# ---- 4. a Parquet time past year 9999 ------------------------------------------------------


def _overflow_file(tmp_path, column):
    cols = {"id": ["a", "b", "c"], "text": [RAIN, RAIN + " again", "other words entirely here"]}
    cols[column] = pa.array([10**12, 0, 86400], pa.timestamp("s"))
    p = tmp_path / f"ts_{column}.parquet"
    pq.write_table(pa.table(cols), p)
    return p


def test_parquet_time_past_9999_in_the_time_field_is_an_unreadable_time(tmp_path):
    p = _overflow_file(tmp_path, "published_at")
    out = tmp_path / "out"
    assert main(["dedup", str(p), "-o", str(out), "-q"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["skipped"] == 0
    bad = report["unreadable_time_records"]
    assert [(b["line"], b["field"]) for b in bad] == [(1, "published_at")]
    assert "out of the range of times" in bad[0]["reason"]
    kept = _read(out / "kept.jsonl")
    assert [(k["id"], k["published_at"]) for k in kept] == [("b", "1970-01-01T00:00:00"), ("c", "1970-01-02T00:00:00")]
    clusters = _read(out / "clusters.jsonl")
    # the readable time wins the keeper rule: b (1970) before a (unreadable, counts as missing)
    assert clusters[0]["keeper"] == "b" and clusters[0]["members"][0]["id"] == "a"


def test_parquet_time_past_9999_in_another_column_is_carried_as_text(tmp_path):
    p = _overflow_file(tmp_path, "extra")
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / f"out_{fmt}"
        assert main(["dedup", str(p), "-o", str(out), "-q", "--format", fmt]) == 0
        rows = _read(out / "kept.jsonl") if fmt == "jsonl" else pq.read_table(out / "kept.parquet").to_pylist()
        by_id = {r["id"]: r for r in rows}
        assert by_id["a"]["extra"] == "+33658-09-27T01:46:40"
        assert by_id["c"]["extra"] == "1970-01-02T00:00:00"


def test_far_times_and_dates_of_every_unit_and_nesting(tmp_path):
    big_ms = 10**15 + 5
    t = pa.table(
        {
            "id": ["a"],
            "text": ["words"],
            "ms_tz": pa.array([big_ms], pa.timestamp("ms", tz="UTC")),
            "d32": pa.array([2**30], pa.date32()),
            "neg": pa.array([-(10**12)], pa.timestamp("s")),
            "lst": pa.array([[10**12, 0]], pa.list_(pa.timestamp("s"))),
            "st": pa.array([{"t": 10**12, "n": 1}], pa.struct([("t", pa.timestamp("s")), ("n", pa.int64())])),
        }
    )
    p = tmp_path / "far.parquet"
    with pytest.raises(OverflowError):  # (what failed the whole batch)
        t.to_pylist()
    pq.write_table(t, p)
    [(_, rec)] = list(ParquetSource(str(p)).records())
    assert rec["ms_tz"] == "+33658-09-27T01:46:40.005Z"
    assert rec["d32"] == "+2941775-04-07"
    assert rec["neg"] == "-29719-04-05T22:13:20"
    assert rec["lst"] == ["+33658-09-27T01:46:40", dt.datetime(1970, 1, 1)]
    assert rec["st"] == {"t": "+33658-09-27T01:46:40", "n": 1}
    # the algorithm against Python's own calendar where Python has one
    from neardup.io.readers import _civil

    for days in (-719162, -1, 0, 59, 11016, 2932896):
        assert _civil(days) == "+" + (dt.date(1970, 1, 1) + dt.timedelta(days=days)).isoformat()


# ---- 5. a Parquet date column --------------------------------------------------------------


@pytest.mark.parametrize("typ", [pa.date32(), pa.date64()])
def test_parquet_date_is_midnight_utc(tmp_path, typ):
    p = tmp_path / "dates.parquet"
    pq.write_table(
        pa.table(
            {
                "id": ["a-late", "b-early"],
                "text": [RAIN, RAIN],
                "published_at": pa.array([dt.date(2026, 3, 1), dt.date(2026, 1, 1)], typ),
            }
        ),
        p,
    )
    out = tmp_path / "out"
    assert main(["dedup", str(p), "-o", str(out), "-q"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["unreadable_time_records"] == []
    assert _read(out / "clusters.jsonl")[0]["keeper"] == "b-early"
    assert neardup.io.parse_time(dt.date(2026, 1, 1)) == dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()
