"""Reading a batch for the index (index/intake.py): the JSONL path that checks records of the
usual shape itself gives what check_record gives, record by record, error by error."""

import json
import math

import numpy as np
import pytest

from neardup.errors import RecordError
from neardup.index.intake import _extra_json, checked_blocks, read_and_sign, read_checked, records
from neardup.io.readers import open_sources
from neardup.io.records import Fields, Limits, check_record


def reference(inputs, fields, max_chars):
    """Every record through check_record, as the reader did before the JSONL path."""
    limits = Limits(max_chars=max_chars)
    skip = {fields.id, fields.text, fields.title, fields.time, fields.source}
    out = []
    for src in open_sources(inputs):
        for recno, rec in src.records():
            if isinstance(rec, RecordError):
                raise rec
            c = check_record(rec, fields, limits, src.name, recno)
            ex = {k: v for k, v in rec.items() if k not in skip}
            if c.time_error is not None:  # an unreadable time is kept among the other fields
                ex[fields.time] = rec[fields.time]
            title = rec.get(fields.title) if fields.title else None
            out.append((c, (_extra_json(ex) if ex else None, len(title) if title else None)))
    return out


def same(a, b) -> bool:
    """Equal, value by value and type by type (NaN times equal to each other)."""
    (ca, (xa, ta)), (cb, (xb, tb)) = a, b
    if type(ca) is not type(cb) or len(ca) != len(cb) or ta != tb or xa != xb:
        return False
    for u, v in zip(ca, cb):
        if isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v):
            continue
        if type(u) is not type(v) or u != v:
            return False
    return True


GOOD = [
    {"id": "a1", "text": "heavy rain over the coast", "published_at": 1790000000, "source": "site-a"},
    {"id": "a2", "text": "heavy rain", "published_at": 1790000000.25, "source": None},
    {"id": "a3", "text": "no time field at all"},
    {"id": "a4", "text": "time null", "published_at": None, "source": "s"},
    {"id": "a5", "text": "an ISO time", "published_at": "2026-11-30T12:00:00Z", "source": "s"},
    {"id": "a6", "text": "a bad time", "published_at": "yesterday-ish", "source": "s"},
    {"id": "a7", "text": "a boolean time", "published_at": True},
    {"id": "a8", "text": "a huge int time", "published_at": 10**30},
    {"id": "a9", "text": "a time just inside the fast path", "published_at": (1 << 62) - 1},
    {"id": "a10", "text": "a negative time", "published_at": -5},
    {"id": 11, "text": "an integer id"},
    {"id": "a12", "text": "caf\u00e9 au lait, non-ASCII", "source": "s"},
    {"id": "a13", "text": "a numeric source", "source": 42},
    {"id": "a14", "text": "extra fields", "copy_of": "a1", "tags": ["x", 1], "n": 1.5},
    {"id": "a15", "text": "  leading spaces are text  "},
    {"id": " a16 ", "text": "an id with spaces"},
    {"id": "a17", "text": "emoji \U0001f600 text", "title": "ignored without --title-field"},
    {"id": "a18", "text": "x" * 50},
    {"id": "\u0438\u0434-19", "text": "a non-ASCII id (the general path checks it)", "source": "S\u00fcddeutsche"},
]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "fields",
    [
        Fields(),
        Fields(title="title"),
        Fields(time=None, source=None),
        Fields(id="id", text="text", time="published_at", source="copy_of"),
    ],
)
def test_jsonl_path_equals_check_record(tmp_path, fields):
    lines = [json.dumps(r, ensure_ascii=False) for r in GOOD]
    lines[3:3] = ["", "   ", "\t"]  # blank lines are not records
    lines.append('{"id": "nan-time", "text": "json accepts NaN", "published_at": NaN}')  # orjson does not
    p = write(tmp_path / "a.jsonl", lines)
    got = list(records(p, fields, 50))  # a18: exactly at the limit
    want = reference(p, fields, 50)
    assert len(got) == len(want) == len(GOOD) + 1
    for g, w in zip(got, want):
        assert same(g, w), (g, w)
    docs, extras = read_checked([p, p], fields, 50)
    assert len(docs) == 2 * len(want)
    assert all(same(g, w) for g, w in zip(zip(docs, extras), want + want))


BAD = [
    ('{"id": "", "text": "x"}', "id is empty"),
    ('{"id": "   ", "text": "x"}', "id is empty"),
    ('{"text": "x"}', "missing id"),
    ('{"id": 1.5, "text": "x"}', "id must be"),
    ('{"id": "b", "text": ""}', "text is empty"),
    ('{"id": "b", "text": "   "}', "text is empty"),
    ('{"id": "b", "text": null}', "text must be a string"),
    ('{"id": "b"}', "missing text"),
    ('{"id": "b", "text": "' + "y" * 41 + '"}', "over the limit"),
    ('{"id": "b", "text": "lone \\ud800 surrogate"}', "not valid Unicode"),
    ('{"id": "b\\udfff", "text": "words"}', "id is not valid Unicode"),
    ("[1, 2]", "expected a JSON object"),
    ('{"id": "b", "text": ', "malformed JSON"),
    (b'{"id": "b", "text": "\xff"}', "not valid UTF-8"),
]


@pytest.mark.parametrize("line,message", BAD)
def test_jsonl_path_raises_what_check_record_raises(tmp_path, line, message):
    good = json.dumps(GOOD[0])
    data = (good + "\n\n").encode() + (line if isinstance(line, bytes) else line.encode()) + b"\n" + good.encode()
    p = tmp_path / "bad.jsonl"
    p.write_bytes(data)
    with pytest.raises(RecordError) as want:
        reference(str(p), Fields(), 40)
    with pytest.raises(RecordError) as got:
        list(checked_blocks(str(p), Fields(), 40))
    assert str(got.value) == str(want.value)
    assert message in str(got.value) and ":3" in str(got.value)  # the line number


@pytest.mark.parametrize(
    "line,field",
    [
        ('{"id": "b", "text": "w", "note": "x\\ud800"}', "note"),
        ('{"id": "b", "text": "w", "source": "s\\ud800"}', "source"),
        ('{"id": "b", "text": "w", "tags": [1, {"k": "\\udfff"}]}', "tags"),
        ('{"id": "b", "text": "w", "k\\ud800": 1}', "k\ud800"),
    ],
)
def test_a_lone_surrogate_in_another_field_is_the_records_error(tmp_path, line, field):
    # JSON allows it, UTF-8 (SQLite, every reader of the index) does not: refused like one in
    # the text, naming the field, instead of failing the add's transaction (a source only here:
    # dedup compares sources and stores none)
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(GOOD[0]) + "\n" + line + "\n", encoding="utf-8")
    for inputs in (str(p), [GOOD[0], json.loads(line)]):
        with pytest.raises(RecordError) as got:
            list(checked_blocks(inputs, Fields(), 40))
        assert got.value.field == field and "is not valid Unicode (lone surrogate)" in str(got.value)
        assert ":2" in str(got.value)


def test_other_sources_and_blocks(tmp_path):
    # in-memory records take the general path, in lists of at most 8192
    recs = [{"id": f"r{i}", "text": f"text number {i}", "published_at": i} for i in range(9000)]
    blocks = list(checked_blocks(recs, Fields(), 1000))
    assert [len(d) for d, _ in blocks] == [8192, 808]
    assert [c.key for d, _ in blocks for c in d] == [f"r{i}" for i in range(9000)]
    # a JSONL file of several blocks (readers.BLOCK_BYTES): every record once, in order
    p = tmp_path / "big.jsonl"
    with open(p, "w") as f:
        for i in range(6000):
            f.write(json.dumps({"id": f"d{i}", "text": f"{i} " + "w" * 2000, "published_at": i}) + "\n")
    blocks = list(checked_blocks(str(p), Fields(), 10_000))
    assert len(blocks) > 2
    assert [c.key for d, _ in blocks for c in d] == [f"d{i}" for i in range(6000)]
    assert all(same(g, w) for g, w in zip(records(str(p), Fields(), 10_000), reference(str(p), Fields(), 10_000)))


def test_read_and_sign_over_blocks(tmp_path, monkeypatch):
    # chunks handed to the signer are whole blocks of at least `chunk` documents; the result is
    # the same documents in order, the id checks see every id, and the chunks go to on_chunk
    # (after the signing), in order, also when the batch has duplicate ids (the caller raises)
    from neardup.stages.options import DedupOptions
    from neardup.stages.signer import Signer

    signer = Signer(DedupOptions())

    def day(name, ids):
        p = tmp_path / name
        with open(p, "w") as f:
            for i, d in enumerate(ids):
                f.write(json.dumps({"id": d, "text": f"story {i} " + "word " * 800}) + "\n")
        return str(p)

    def run(path, present):
        asked, chunks = [], []

        def look(keys):
            asked.extend(keys)
            return [k for k in keys if k in present]

        out = read_and_sign(path, Fields(), 1_000_000, signer, 16, 8, 1, look, on_chunk=chunks.append, chunk=1000)
        return out, asked, chunks

    (docs, extras, signed, twice, present), asked, chunks = run(day("a.jsonl", [f"d{i}" for i in range(5000)]), set())
    assert [c.key for c in docs] == [f"d{i}" for i in range(5000)]
    assert sorted(asked) == sorted(c.key for c in docs)
    assert twice == [] and present == []
    assert [c for ch in chunks for c in ch] == docs
    assert len(chunks) > 1 and all(len(ch) >= 1000 for ch in chunks[:-1])
    assert signed.sigs.shape[0] == 5000 and signed.band_keys.shape == (5000, 16)
    assert np.array_equal(signed.sigs, signer.batch([c.text for c in docs]))

    ids = [f"d{i % 4990}" for i in range(5000)]  # ten ids twice
    (docs, _, _, twice, present), _, chunks = run(day("b.jsonl", ids), {"d3"})
    assert [c.key for c in docs] == ids
    assert sorted(twice) == [f"d{i}" for i in range(10)] and set(present) == {"d3"}
    assert [c for ch in chunks for c in ch] == docs


def test_binary_parquet_columns_are_stored_as_text(tmp_path):
    # a Parquet file whose strings are binary columns: the title, text and source are stored as
    # their UTF-8 text (the title's length in characters, not bytes), another binary field as
    # base64 among the document's fields (not the Python form "b'...'")
    import base64

    import pyarrow as pa
    import pyarrow.parquet as pq

    from neardup.index import Index

    path = tmp_path / "b.parquet"
    b = lambda xs: pa.array([x.encode() if isinstance(x, str) else x for x in xs], pa.binary())  # noqa: E731
    pq.write_table(
        pa.table(
            {
                "id": b(["é1", "a2"]),
                "title": b(["Café", "Rain"]),
                "text": b(["le café du coin ferme après quarante ans", "heavy rain on the coast today"]),
                "source": b(["agence", "wire"]),
                "blob": b([b"\xff\x00", b"ok"]),
            }
        ),
        path,
    )
    with Index.create(tmp_path / "ix") as ix:
        ix.add(str(path), fields=Fields(title="title"))
        d = ix.get_document("é1")
        assert (d["title"], d["text"], d["source"]) == ("Café", "le café du coin ferme après quarante ans", "agence")
        assert base64.b64decode(d["fields"]["blob"]) == b"\xff\x00"
        bad = tmp_path / "bad.parquet"
        pq.write_table(pa.table({"id": ["c3"], "text": b([b"caf\xe9 au lait"])}), bad)
        with pytest.raises(RecordError, match="text is not valid UTF-8 \\(byte 0xe9 at offset 3\\)"):
            ix.add(str(bad))
        assert ix.totals()["documents"] == 2


def test_jsonl_path_reads_a_bom_and_ids_past_64_bits_as_check_record_does(tmp_path):
    p = tmp_path / "b.jsonl"
    p.write_bytes(
        b"\xef\xbb\xbf" + b'{"id": 123456789012345678901234567890, "text": "heavy rain"}\n'
        b'{"id": "b", "text": "w", "n": 18446744073709551616}\n'
    )
    got = list(records(str(p), Fields(), 100))
    assert [c.id for c, _ in got] == [123456789012345678901234567890, "b"]
    assert json.loads(got[1][1][0]) == {"n": 18446744073709551616}  # (not 1.8446744073709552e+19)
