"""The input readers' block reading, and the memory they say they hold while reading (which
``--memory-limit`` counts in a re-read's working memory)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.io import readers
from neardup.io.readers import JsonlSource, ParquetSource, RecordsSource


def _lines(src: JsonlSource) -> list[bytes]:
    out: list[bytes] = []
    recno = 1
    for start, lines in src.blocks():
        assert start == recno  # each block says which line it starts at
        out += lines
        recno += len(lines)
    return out


@pytest.mark.parametrize("block", [1, 3, 7, 64, 1 << 22])
@pytest.mark.parametrize("tail", [b"", b"\n"])
def test_blocks_give_the_lines_whatever_the_block_size(tmp_path, monkeypatch, block, tail):
    # lines shorter and longer than a block (one spans many), empty lines, a CRLF line
    body = b"\n".join([b"a", b"", b"bb" * 40, b"c\r", b"", b"d" * 300, b"e"]) + tail
    path = tmp_path / "x.jsonl"
    path.write_bytes(body)
    assert _lines(JsonlSource(str(path), block_bytes=block)) == body.split(b"\n")[: -1 if tail else None]


def test_records_across_blocks_are_parsed_whole(tmp_path, monkeypatch):
    recs = [{"id": str(i), "text": "word " * (i % 50 + 1)} for i in range(300)]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    got = list(JsonlSource(str(path), block_bytes=100).records())
    assert [r for _, r in got] == recs and [n for n, _ in got] == list(range(1, 301))
    wanted = np.zeros(302, bool)
    wanted[[1, 150, 300]] = True  # the mask skips the others without parsing them
    assert [n for n, _ in JsonlSource(str(path)).records(wanted)] == [1, 150, 300]


def test_jsonl_read_buffer_is_three_blocks_or_three_times_a_smaller_file(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"id": "a", "text": "x"}\n' * 40)  # 1,000 bytes
    assert JsonlSource(str(path)).read_buffer_bytes() == 3 * 1000
    assert JsonlSource(str(path), block_bytes=256).read_buffer_bytes() == 3 * 256
    gz = tmp_path / "s.jsonl.gz"  # compressed: its size says nothing of the lines', a block is assumed
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert JsonlSource(str(gz), block_bytes=256).read_buffer_bytes() == 3 * 256


def test_parquet_read_buffer_follows_the_widest_row_group(tmp_path):
    def write(text_len: int) -> str:
        path = tmp_path / f"p{text_len}.parquet"
        # texts that differ (the same text a thousand times would be stored once, dictionary-encoded)
        texts = [(str(i) * text_len)[:text_len] for i in range(1000)]
        table = pa.table({"id": [str(i) for i in range(1000)], "text": texts})
        pq.write_table(table, path, row_group_size=250, compression="none")
        return str(path)

    small, big = ParquetSource(write(100)).read_buffer_bytes(), ParquetSource(write(1000)).read_buffer_bytes()
    # a batch of PARQUET_BATCH_ROWS rows, three times over (Arrow's buffers and Python objects)
    assert 3 * 100 * readers.PARQUET_BATCH_ROWS <= small < 3 * 200 * readers.PARQUET_BATCH_ROWS
    assert 3 * 1000 * readers.PARQUET_BATCH_ROWS <= big < 3 * 1100 * readers.PARQUET_BATCH_ROWS


def test_records_in_memory_hold_no_read_buffer():
    assert RecordsSource([{"id": "a", "text": "x"}]).read_buffer_bytes() == 0


def test_a_record_with_a_key_json_cannot_name_is_a_bad_record(tmp_path):
    """A tuple as a field name (or deeper, in a nested object) failed the run at the outputs,
    after the work, with orjson's "keys must be str, int, ..."; it is a bad record, named."""
    import neardup
    from neardup.errors import RecordError

    t = "the quick brown fox jumps over the lazy dog and runs far away into the deep dark forest"
    recs = [
        {"id": "a", "text": t, ("x", 1): 2},
        {"id": "b", "text": t + " now", "m": {"k": [{frozenset(): 1}]}},
        {"id": "c", "text": t + " again", 7: 'an int name is written as "7"', None: 1},
    ]
    with pytest.raises(RecordError, match=r"<records>:1: field name \('x', 1\) is a tuple"):
        neardup.dedup(recs, tmp_path / "out")
    assert not (tmp_path / "out" / "kept.jsonl").exists()
    res = neardup.dedup(recs, tmp_path / "out", on_error="skip")
    assert [(e["line"], e["field"]) for e in res.report["skipped_records"]] == [(1, None), (2, "m.k[0]")]
    kept = (tmp_path / "out" / "kept.jsonl").read_text()
    assert '"7":' in kept and '"null":' in kept
