"""Bad input: each case gets a clear message naming file, line and field; --on-error skip counts
and lists them; nothing already written is left half-written."""

import gzip
import json
import os
import tempfile

import pytest
from nd_helpers import read_jsonl

import neardup
from neardup import synth
from neardup.cli import main
from neardup.io import InputFileError, OutputError, RecordError, atomic_open

GOOD = [
    {"id": "a", "text": "heavy rain is likely over coastal karnataka and goa for the next three days"},
    {"id": "b", "text": "Heavy rain is likely over coastal Karnataka and Goa, for the next three days!"},
    {"id": "c", "text": "the city corporation has started a drive to clear blocked drains"},
]


def corpus(tmp_path, bad_line: bytes, at: int = 2, name="in.jsonl"):
    """GOOD as JSONL with `bad_line` inserted as line `at` (1-based)."""
    lines = [json.dumps(r).encode() for r in GOOD]
    lines.insert(at - 1, bad_line)
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


CASES = [
    # (bad line, field, words in the reason)
    (b'{"id": "x", "text": "unterminated', None, "malformed JSON"),
    (b"[1, 2, 3]", None, "expected a JSON object"),
    (b'{"id": "x"}', "text", "missing text"),
    (b'{"id": "x", "text": null}', "text", "must be a string, got null"),
    (b'{"id": "x", "text": 42}', "text", "must be a string, got int"),
    (b'{"text": "some words here"}', "id", "missing id"),
    (b'{"id": null, "text": "some words here"}', "id", "missing id"),
    (b'{"id": [1], "text": "some words here"}', "id", "id must be a string or an integer"),
    (b'{"id": "x", "text": ""}', "text", "text is empty"),
    (b'{"id": "x", "text": "   \\n "}', "text", "text is empty"),
    (b'{"id": "x", "text": "caf\xe9 au lait"}', None, "not valid UTF-8 (byte 0xe9"),
    (b'{"id": "x", "text": "lone \\ud800 surrogate"}', "text", "lone surrogate"),
    (b'{"id": "a", "text": "a second document with the same id"}', "id", "duplicate id 'a' (first at"),
]


@pytest.mark.parametrize("bad,field,reason", CASES, ids=[c[2] for c in CASES])
def test_bad_record_stops_with_file_line_and_field(tmp_path, bad, field, reason):
    at = 3 if b'"id": "a"' in bad else 2
    path = corpus(tmp_path, bad, at=at)
    with pytest.raises(RecordError) as e:
        neardup.dedup(path, tmp_path / "out")
    err = e.value
    assert err.path == path and err.line == at and err.field == field
    assert reason in str(err)
    assert str(err).startswith(f"{path}:{at}: ")
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.parametrize("bad,field,reason", CASES, ids=[c[2] for c in CASES])
def test_bad_record_skipped_and_listed(tmp_path, bad, field, reason):
    at = 3 if b'"id": "a"' in bad else 2
    path = corpus(tmp_path, bad, at=at)
    res = neardup.dedup(path, tmp_path / "out", on_error="skip", time_field="published_at")
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert rep["skipped"] == 1 and rep["inputs"][0]["skipped"] == 1
    (s,) = rep["skipped_records"]
    assert s["file"] == path and s["line"] == at and s["field"] == field and reason in s["reason"]
    assert rep["documents"] == 3
    # the good records are deduplicated as usual (a and b are exact copies)
    assert res.clusters[0]["keeper"] == "a" and res.clusters[0]["members"][0]["id"] == "b"
    assert [k["id"] for k in read_jsonl(tmp_path / "out" / "kept.jsonl")] == ["a", "c"]


def test_cli_bad_record_exit_code_and_message(tmp_path, capsys):
    path = corpus(tmp_path, b'{"id": "x", "text": 42}')
    assert main(["dedup", path, "-o", str(tmp_path / "o"), "-q"]) == 3
    err = capsys.readouterr().err
    assert f"{path}:2: field 'text': text must be a string, got int" in err
    assert "--on-error skip" in err
    assert main(["dedup", path, "-o", str(tmp_path / "o"), "-q", "--on-error", "skip"]) == 0


def test_ten_megabyte_document(tmp_path):
    big = "word " * (2 * 1024 * 1024)  # 10 MiB of text
    path = tmp_path / "big.jsonl"
    with open(path, "w") as f:
        f.write(json.dumps(GOOD[0]) + "\n")
        f.write(json.dumps({"id": "big", "text": big}) + "\n")
    with pytest.raises(RecordError) as e:
        neardup.dedup(str(path), None)
    assert e.value.line == 2 and e.value.field == "text" and "over the limit" in str(e.value)
    res = neardup.dedup(str(path), None, on_error="skip")
    assert res.report["skipped"] == 1 and res.report["documents"] == 1
    # a higher limit processes it (one 10 MB document is fine, just slow to shingle)
    res = neardup.dedup(str(path), None, max_chars=20_000_000)
    assert res.report["documents"] == 2


def test_unreadable_inputs(tmp_path, capsys):
    with pytest.raises(InputFileError, match="no such file"):
        neardup.dedup(str(tmp_path / "missing.jsonl"))
    with pytest.raises(InputFileError, match="is a directory"):
        neardup.dedup(str(tmp_path))
    bad_gz = tmp_path / "bad.jsonl.gz"
    bad_gz.write_bytes(b"this is not gzip data at all")
    with pytest.raises(InputFileError, match="bad.jsonl.gz: read error"):
        neardup.dedup(str(bad_gz))
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(
        gzip.compress(b"".join(b'{"id": "%d", "text": "x y %d"}\n' % (i, i) for i in range(5000)))[:3000]
    )
    with pytest.raises(InputFileError, match="cut.jsonl.gz: read error"):
        neardup.dedup(str(truncated))
    bad_zst = tmp_path / "bad.jsonl.zst"
    bad_zst.write_bytes(b"not zstd either")
    with pytest.raises(InputFileError, match="bad.jsonl.zst"):
        neardup.dedup(str(bad_zst))
    # a .zst file cut inside a frame: was read as fewer records, or none, with exit code 0
    import zstandard

    lines = b"".join(b'{"id": "%d", "text": "x y %d"}\n' % (i, i) for i in range(5000))
    whole = zstandard.ZstdCompressor().compress(lines[:40000]) + zstandard.ZstdCompressor().compress(lines[40000:])
    two = tmp_path / "two.jsonl.zst"
    two.write_bytes(whole)  # two frames, whole: every record
    assert neardup.dedup(str(two), None).report["documents"] == 5000
    cut = tmp_path / "cut.jsonl.zst"
    for n in (20, len(whole) // 3, len(whole) - 5):
        cut.write_bytes(whole[:n])
        with pytest.raises(InputFileError, match="cut.jsonl.zst: read error .*ends inside a frame"):
            neardup.dedup(str(cut), None, on_error="skip")
    bad_pq = tmp_path / "bad.parquet"
    bad_pq.write_bytes(b"PAR1 nope")
    with pytest.raises(InputFileError, match="bad.parquet"):
        neardup.dedup(str(bad_pq))
    assert main(["dedup", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "o")]) == 4
    assert "missing.jsonl: no such file" in capsys.readouterr().err


def test_a_pipe_is_read_once_and_spooled(tmp_path):
    # an input that is not a regular file (<(zcat day.gz), a FIFO) can be read only once: read
    # as a file, the run gave an empty kept.jsonl beside a report of 50 kept, or failed when
    # verification read it again (a FIFO hung)
    import threading

    corpus = tmp_path / "c.jsonl"
    synth.write_corpus(str(corpus), originals=120, copies=40, words=60, seed=3)
    want = neardup.dedup(str(corpus), tmp_path / "file")
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    feed = threading.Thread(target=lambda: fifo.write_bytes(corpus.read_bytes()))
    # (the spool files before: another process's in the shared temporary directory are not ours)
    before = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("neardup-spool-")}
    feed.start()
    got = neardup.dedup(str(fifo), tmp_path / "pipe")
    feed.join()
    assert (got.clusters, got.pairs, got.kept) == (want.clusters, want.pairs, want.kept) and want.report["near_pairs"]
    assert (tmp_path / "pipe" / "kept.jsonl").read_bytes() == (tmp_path / "file" / "kept.jsonl").read_bytes()
    assert got.report["inputs"][0]["path"] == str(fifo)
    assert not [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("neardup-spool-") and n not in before]


def test_csv_in_a_directory_named_tsv_is_csv(tmp_path):
    d = tmp_path / "exports.tsv.d"
    d.mkdir()
    (d / "x.csv").write_text("id,text\na,heavy rain in goa today\n")
    assert neardup.dedup(str(d / "x.csv"), None).report["documents"] == 1


def test_outputs_get_the_umask_mode_and_write_errors_are_output_errors(tmp_path, capsys):
    recs = [{"id": "a", "text": "heavy rain in goa today"}]
    old = os.umask(0o027)
    try:
        neardup.dedup(recs, tmp_path / "o")
    finally:
        os.umask(old)
    assert {oct(os.stat(tmp_path / "o" / n).st_mode & 0o777) for n in os.listdir(tmp_path / "o")} == {"0o640"}
    (tmp_path / "o2" / "report.json").mkdir(parents=True)  # a directory where a file goes
    with pytest.raises(OutputError, match="report.json: cannot write: Is a directory"):
        neardup.dedup(recs, tmp_path / "o2")
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(recs[0]) + "\n")
    assert main(["dedup", str(path), "-o", str(tmp_path / "o2"), "-q"]) == 5
    assert "cannot write output" in capsys.readouterr().err


def test_a_byte_order_mark_is_not_part_of_the_first_record(tmp_path):
    # Windows tools write one: JSONL line 1 was "malformed JSON: Unexpected UTF-8 BOM", every CSV
    # row "missing id" (the first column was named "\ufeffid")
    j = tmp_path / "bom.jsonl"
    j.write_bytes(b"\xef\xbb\xbf" + b"".join(json.dumps(r).encode() + b"\n" for r in GOOD))
    c = tmp_path / "bom.csv"
    c.write_bytes(
        b"\xef\xbb\xbfid,text\n" + b"".join(f"{r['id']},{r['text'].replace(',', '')}\n".encode() for r in GOOD)
    )
    for path in (j, c):
        res = neardup.dedup(str(path), tmp_path / path.suffix[1:])
        assert res.report["documents"] == 3 and res.report["skipped"] == 0 and res.kept == ["a", "c"]
    assert (tmp_path / "jsonl" / "kept.jsonl").read_bytes().startswith(b'{"id"')


def test_a_csv_quote_left_open_is_a_bad_record_not_the_rest_of_the_file(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,text\n1,"Breaking: heavy rain\n2,second story\n3,third story\n')
    with pytest.raises(RecordError, match=r"q.csv:2: malformed CSV: unexpected end of data"):
        neardup.dedup(str(path), None)


def test_an_integer_id_past_64_bits_in_jsonl(tmp_path):
    # orjson reads it as a float: "id must be a string or an integer, got float"
    path = tmp_path / "big.jsonl"
    path.write_text(
        '{"id": 123456789012345678901234567890, "text": "heavy rain in goa"}\n'
        '{"id": -9223372036854775809, "text": "heavy rain in goa"}\n'
    )
    res = neardup.dedup(str(path), None)
    assert res.kept == [-9223372036854775809]  # (no times: the smaller id as text keeps)
    assert res.clusters[0]["members"][0]["id"] == 123456789012345678901234567890


def test_json_nested_too_deeply_is_a_bad_record(tmp_path):
    # past orjson's 1,024 levels the json module hit Python's recursion limit: a RecursionError
    # traceback, with --on-error skip too
    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": "d", "text": "t", "x": ' + "[" * 1100 + "]" * 1100 + "}\n" + json.dumps(GOOD[0]) + "\n")
    with pytest.raises(RecordError, match="deep.jsonl:1: malformed JSON: nested too deeply"):
        neardup.dedup(str(path), None)
    assert neardup.dedup(str(path), None, on_error="skip").report["skipped"] == 1


def test_a_tmp_dir_that_is_not_there_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(GOOD[0]) + "\n")
    assert main(["dedup", str(path), "-o", str(tmp_path / "o"), "--tmp-dir", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "tmp_dir" in err and "is not a directory" in err


def test_output_cut_by_its_reader_is_quiet(tmp_path):
    # neardup demo | head -1: BrokenPipeError's traceback, exit 1
    import subprocess
    import sys

    p = subprocess.run(
        f"{sys.executable} -m neardup.cli demo | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        executable="/bin/bash",
    )
    assert p.stdout.count("\n") == 1 and "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr


def test_csv_non_utf8_and_ragged_rows(tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes(b"id,text\na,heavy rain in goa today\nb,caf\xe9 au lait\nc,too,many\n")
    with pytest.raises(RecordError) as e:
        neardup.dedup(str(path))
    assert (e.value.line, e.value.field) == (3, "text") and "UTF-8" in str(e.value)
    res = neardup.dedup(str(path), None, on_error="skip", time_field=None)
    lines = [(s["line"], s["reason"]) for s in res.report["skipped_records"]]
    assert lines == [(3, "not valid UTF-8"), (4, "expected 2 columns, got 3")]


def test_output_directory_not_writable(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("I am a file")
    with pytest.raises(OutputError):
        neardup.dedup(GOOD, blocker / "out")
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in GOOD) + "\n")
    assert main(["dedup", str(path), "-o", str(blocker), "-q"]) == 5
    assert "cannot write output" in capsys.readouterr().err


def test_atomic_open_leaves_old_file_on_failure(tmp_path):
    target = tmp_path / "kept.jsonl"
    target.write_text("old complete content\n")
    with pytest.raises(RuntimeError):
        with atomic_open(str(target)) as f:
            f.write("half of the new ")
            raise RuntimeError("disk full")
    assert target.read_text() == "old complete content\n"
    assert os.listdir(tmp_path) == ["kept.jsonl"]


def test_crash_while_writing_outputs_leaves_no_half_file(tmp_path, monkeypatch):
    out = tmp_path / "out"
    neardup.dedup(GOOD, out)
    before = {n: (out / n).read_bytes() for n in os.listdir(out)}
    import sys

    kept = sys.modules["neardup.stages.kept"]  # the kept records are written there
    real = kept._kept_records

    def interrupted(*a, **k):
        it = real(*a, **k)
        yield next(it)
        raise KeyboardInterrupt  # Ctrl-C in the middle of the kept records

    monkeypatch.setattr(kept, "_kept_records", interrupted)
    more = GOOD + [{"id": "d", "text": GOOD[2]["text"].upper()}]  # (a copy: its clusters.jsonl differs)
    with pytest.raises(KeyboardInterrupt):
        neardup.dedup(more, out)
    after = sorted(os.listdir(out))
    assert after == sorted(before)  # no temporary or half files left
    # the previous run's whole set, as it was: the outputs are renamed into place together
    # (clusters.jsonl and pairs.jsonl of the failed run used to sit beside the old kept.jsonl)
    assert {n: (out / n).read_bytes() for n in after} == before


def test_bad_options_are_usage_errors(tmp_path, capsys):
    with pytest.raises(neardup.InvalidParameterError):
        neardup.dedup(GOOD, threshold=0)
    with pytest.raises(neardup.InvalidParameterError):
        neardup.dedup(GOOD, bands=16)
    with pytest.raises(neardup.InvalidParameterError):
        neardup.dedup(GOOD, bands=20, rows=8)
    with pytest.raises(neardup.InvalidParameterError):
        neardup.dedup(GOOD, measure="containment", verify="estimate")
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in GOOD) + "\n")
    assert main(["dedup", str(path), "-o", str(tmp_path / "o"), "--threshold", "1.5"]) == 2
    assert "threshold" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["dedup", "--no-such-option"])
    assert e.value.code == 2
    assert main(["dedup", str(path)]) == 2  # -o is required with inputs


def test_unreadable_time_counts_as_missing_and_is_reported(tmp_path):
    recs = [
        dict(GOOD[0], published_at="27-MAR-1987 00:02:59.13&#5;&#5;&#5;RM"),
        dict(GOOD[1], published_at="2026-07-12T09:00:00Z"),
        GOOD[2],
    ]
    res = neardup.dedup(recs)
    assert res.report["skipped"] == 0 and res.report["documents"] == 3
    assert res.report["unreadable_times"] == 1
    (bad,) = res.report["unreadable_time_records"]
    assert bad["line"] == 1 and bad["field"] == "published_at" and "cannot parse" in bad["reason"]
    assert res.clusters[0]["keeper"] == "b"  # the record with a readable time wins


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:59:59-05:00",
        "0001-01-01T00:00:00+05:00",
        "Fri, 31 Dec 9999 23:59:59 -0500",
        10**400,
        -(10**400),
        # numbers past the years a date can have (were taken as times:
        # the service's page then failed to show the story)
        10**13,
        -1e300,
        2**70,
        253402300800,
        "253402300800",
    ],
)
def test_time_out_of_range_is_an_unreadable_time_not_a_crash(tmp_path, value):
    # a date that exists but leaves datetime's years once its offset is applied, or an integer
    # past a float's range, raised OverflowError from the record check (exit 1, a traceback)
    from neardup.io.records import parse_time

    with pytest.raises(ValueError, match="out of the range of times"):
        parse_time(value)
    recs = [dict(GOOD[0], published_at=value), dict(GOOD[1], published_at="2026-07-12T09:00:00Z"), GOOD[2]]
    res = neardup.dedup(recs)
    assert res.report["documents"] == 3 and res.report["unreadable_times"] == 1
    (bad,) = res.report["unreadable_time_records"]
    assert bad["line"] == 1 and "out of the range of times" in bad["reason"] and len(bad["reason"]) < 120


def test_epoch_seconds_written_as_text_are_a_time(tmp_path):
    # every field of a CSV is text: a column of epoch seconds was an unreadable time in every
    # record ("cannot parse '1793073600'"), so the keeper rule ignored it
    from neardup.io.records import parse_time

    assert parse_time("1793073600") == 1793073600.0 and parse_time(" -5.25 ") == -5.25
    assert parse_time("20261201") == parse_time("2026-12-01")  # eight digits: ISO 8601's basic date first
    text = "heavy rain over the coast for three days and the weather office said on sunday"
    path = tmp_path / "in.csv"
    path.write_text(f"id,text,published_at\nlate,{text},1793077200\nearly,{text},1793073600\n")
    res = neardup.dedup(str(path), None)
    assert res.report["unreadable_times"] == 0 and res.clusters[0]["keeper"] == "early"


def test_failure_in_the_kernels_stops_the_reader_thread(tmp_path, monkeypatch):
    import sys
    import threading

    run = sys.modules["neardup.engines.local.run"]
    real = run.exact_keys
    calls = []

    def failing(texts, threads, unit):
        calls.append(len(texts))
        if len(calls) == 2:
            raise RuntimeError("kernel failed")
        return real(texts, threads, unit)

    monkeypatch.setattr(run, "exact_keys", failing)
    recs = [{"id": str(i), "text": f"story number {i} about rain"} for i in range(200)]
    with pytest.raises(RuntimeError, match="kernel failed"):
        neardup.dedup(recs, tmp_path / "o", batch_size=10)
    assert not [t for t in threading.enumerate() if t.name == "neardup-reader"]
    assert not (tmp_path / "o").exists()
    # a bad record found by the reader thread after some batches were processed
    recs[150]["text"] = None
    monkeypatch.setattr(run, "exact_keys", real)
    with pytest.raises(RecordError, match=":151: field 'text'"):
        neardup.dedup(recs, batch_size=10)
    assert not [t for t in threading.enumerate() if t.name == "neardup-reader"]


def test_lone_surrogate_in_an_id_is_a_bad_record_not_a_crash(tmp_path):
    # JSON's "\ud800" gives an id that UTF-8 cannot hold: writing it to clusters.jsonl raised
    # UnicodeEncodeError (exit 1, a traceback) after the whole run
    from neardup.errors import RecordError

    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"id": "a\\ud800", "text": "heavy rain over the coast today"}\n'
        '{"id": "b", "text": "heavy rain over the coast today"}\n',
        encoding="utf-8",
    )
    with pytest.raises(RecordError, match="id is not valid Unicode"):
        neardup.dedup(str(path), tmp_path / "out")
    res = neardup.dedup(str(path), tmp_path / "out2", on_error="skip")
    assert res.report["skipped"] == 1 and res.report["documents"] == 1
    (s,) = res.report["skipped_records"]
    assert s["line"] == 1 and s["field"] == "id"


def test_a_binary_source_is_its_utf8_text(tmp_path):
    # a Parquet column of binary type gives bytes: the source is their text ("agency"), not the
    # Python form "b'agency'" (which --prefer-source agency never matched)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from neardup.errors import RecordError

    text = "heavy rain over the coast for three days, the weather office said on sunday"
    path = tmp_path / "in.parquet"
    pq.write_table(
        pa.table(
            {"id": ["site", "agency"], "text": [text, text], "source": pa.array([b"site-a", b"agency"], pa.binary())}
        ),
        path,
    )
    res = neardup.dedup(str(path), None, prefer_source=["agency"])
    assert res.clusters[0]["keeper"] == "agency"
    pq.write_table(pa.table({"id": ["a"], "text": [text], "source": pa.array([b"\xffbad"], pa.binary())}), path)
    with pytest.raises(RecordError, match="source is not valid UTF-8 \\(byte 0xff at offset 0\\)"):
        neardup.dedup(str(path), None)


def test_binary_id_text_and_title_are_their_utf8_text(tmp_path):
    # text written as Parquet binary (tools that do not mark strings as UTF-8) is read as the
    # same text: the same answer as the string columns, written to kept.jsonl as that text;
    # other binary fields are kept and written to JSON as base64 (as Spark's and Arrow's JSON
    # writers do)
    import base64
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from neardup.errors import RecordError

    texts = [
        "heavy rain over the coast for three days, the weather office said on sunday",
        "heavy rain over the coast for three days, the weather office said on monday",
        "le café du coin ferme ses portes après quarante ans de service",
    ]
    ids, titles, blobs = ["a", "b", "é"], ["Rain", "Rain", "Café"], [b"\x00\x01", b"ok", b"\xff"]
    as_str = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": ids, "title": titles, "text": texts}), as_str)
    as_bin = tmp_path / "b.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array([i.encode() for i in ids], pa.binary()),
                "title": pa.array([t.encode() for t in titles], pa.binary()),
                "text": pa.array([t.encode() for t in texts], pa.binary()),
                "blob": pa.array(blobs, pa.binary()),
            }
        ),
        as_bin,
    )
    kw = dict(title_field="title", k=3, threshold=0.5)
    want = neardup.dedup(str(as_str), None, **kw)
    got = neardup.dedup(str(as_bin), tmp_path / "out", **kw)
    assert (got.clusters, got.pairs, got.kept) == (want.clusters, want.pairs, want.kept)
    assert got.kept == ["a", "é"] and got.clusters[0]["members"][0]["id"] == "b"
    kept = [json.loads(x) for x in (tmp_path / "out" / "kept.jsonl").read_text().splitlines()]
    assert [base64.b64decode(r["blob"]) for r in kept] == [blobs[0], blobs[2]]
    # the fields read as text are written as the text the run read: the ids join clusters.jsonl's
    assert [(r["id"], r["title"], r["text"]) for r in kept] == [("a", "Rain", texts[0]), ("é", "Café", texts[2])]
    pq.write_table(pa.table({"id": ["a"], "text": pa.array([b"caf\xe9 au lait"], pa.binary())}), as_bin)
    with pytest.raises(RecordError, match="text is not valid UTF-8 \\(byte 0xe9 at offset 3\\)"):
        neardup.dedup(str(as_bin), None)


@pytest.mark.parametrize(
    "kw",
    [
        dict(k="5"),
        dict(recall="0.9"),
        dict(threads=1.5),
        dict(prefer_source=5),
        dict(threshold=True),
        dict(prefer_source=[1, 2]),
        dict(batch_size=None),
    ],
)
def test_options_of_the_wrong_type_are_parameter_errors(kw):
    # they were bare TypeErrors from a comparison, or (threshold=True) taken as 1
    from neardup.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="must be"):
        neardup.dedup(GOOD, None, **kw)


def test_inputs_that_are_neither_paths_nor_records():
    from neardup.errors import InputTypeError

    with pytest.raises(InputTypeError, match="one record \\(a dict\\) was given"):
        neardup.dedup(GOOD[0], None)  # was "id: no such file" (its keys taken for paths)
    with pytest.raises(InputTypeError, match=r"inputs\[0\]: expected a path"):
        neardup.dedup([5, "x.jsonl"], None)
    # records with one that is not a mapping: that record's error, not a TypeError about paths
    res = neardup.dedup(GOOD + [None], None, on_error="skip")
    assert res.report["skipped_records"][0]["reason"] == "expected a mapping, got NoneType"
    assert neardup.dedup(GOOD, None, k=__import__("numpy").int64(3)).report["documents"] == 3  # a NumPy int is an int


def test_settings_that_would_be_ignored_are_refused(tmp_path, capsys):
    # --demo with files ran the demo and ignored the files; SimHash ignored --bands/--rows; a
    # CSV header naming a column twice kept the last one's value without a word
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(GOOD[0]) + "\n")
    assert main(["dedup", "--demo", str(path), "-o", str(tmp_path / "o")]) == 2
    assert "not both" in capsys.readouterr().err
    from neardup.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="bands and rows apply to MinHash"):
        neardup.dedup(GOOD, None, method="simhash", bands=4, rows=16)
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("id,text,text\na,one,two\n")
    with pytest.raises(InputFileError, match="d.csv: the header names column 'text' more than once"):
        neardup.dedup(str(csv_path), None)
