"""Input and output: readers for JSONL/Parquet/CSV/stdin, record checks, atomic writers.

Reused by every runner (the batch ``dedup`` job, the persistent index, the Spark runner).
"""

from neardup.errors import InputFileError, OutputError, RecordError
from neardup.io.readers import (
    CsvSource,
    JsonlSource,
    ParquetSource,
    RecordsSource,
    Source,
    format_of,
    open_sources,
)
from neardup.io.records import Checked, Fields, Limits, check_record, parse_time
from neardup.io.writers import atomic_open, dumps, write_jsonl

__all__ = [
    "InputFileError",
    "OutputError",
    "RecordError",
    "CsvSource",
    "JsonlSource",
    "ParquetSource",
    "RecordsSource",
    "Source",
    "format_of",
    "open_sources",
    "Checked",
    "Fields",
    "Limits",
    "check_record",
    "parse_time",
    "atomic_open",
    "dumps",
    "write_jsonl",
]
