"""The options of a batch run (the local and Spark engines'): the :class:`~neardup.settings.Settings`
that decide the answer, and how this run reads, works and writes."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any

from neardup.errors import InvalidParameterError
from neardup.io.readers import BLOCK_BYTES
from neardup.io.records import Fields, Limits
from neardup.settings import Settings, _is_int

__all__ = ["BatchSteps", "DedupOptions", "parse_size", "LARGE_BUCKET", "ON_ERROR", "FORMATS"]

ON_ERROR = ("stop", "skip")
FORMATS = ("jsonl", "parquet")
#: ``neardup.dedup``'s keyword arguments for the input fields -> :class:`Fields`' attributes
FIELD_KWARGS = {
    "id_field": "id",
    "text_field": "text",
    "title_field": "title",
    "time_field": "time",
    "source_field": "source",
}
#: Default of ``large_bucket``: buckets above this many documents are not listed pair by pair.
LARGE_BUCKET = 100


@dataclass(frozen=True)
class BatchSteps:
    """How much a batch run reads, turns into rows or writes at a time: speed and memory, never
    results. Tests make them small to reach the paths between steps."""

    #: JSONL is read this many (decompressed) bytes at a time (io/readers.py BLOCK_BYTES: 1 MiB)
    read_block_bytes: int = BLOCK_BYTES
    #: clusters or pairs turned into output rows at a time (their ids fetched in one call)
    row_chunk: int = 65_536
    #: kept records per Parquet block (stages/parquet_out.py; both engines write the same file)
    parquet_block: int = 8192

    def __post_init__(self) -> None:
        for name in ("read_block_bytes", "row_chunk", "parquet_block"):
            v = getattr(self, name)
            if not _is_int(v) or v < 1:
                raise InvalidParameterError(f"{name} must be a positive integer, got {v!r}")


@dataclass
class DedupOptions:
    """A batch run: its :class:`Settings` (the answer) and its run options (input fields, errors,
    output format, threads, memory). ``check()`` validates the run options."""

    settings: Settings = field(default_factory=Settings)
    fields: Fields = field(default_factory=Fields)
    on_error: str = "stop"
    output_format: str = "jsonl"
    batch_size: int = 8192
    threads: int | None = None
    progress: bool = False
    # Budget for the structures that can spill to disk (bytes; None: keep everything in
    # memory). See engines/local/memory.py for what it covers.
    memory_limit: int | str | None = None
    # Where spill files go (None: the system's temporary directory).
    tmp_dir: str | None = None
    # An LSH bucket of more documents than this is verified by a per-bucket union-find
    # (engines/local/buckets.py): the same clusters and keepers, but only its spanning edges are
    # checked and written to pairs.jsonl, not its m(m-1)/2 pairs. Below it every pair is
    # listed (a bucket of 100 has 4,950 pairs: cheap). None: always every pair.
    large_bucket: int | None = LARGE_BUCKET
    # Return clusters, pairs and kept ids in the result (False: only write them to the output
    # directory, so a run over millions of documents does not hold them all as Python rows).
    collect: bool = True
    steps: BatchSteps = field(default_factory=BatchSteps)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> DedupOptions:
        """From ``neardup.dedup``'s keyword arguments: the settings' (``k=``, ``threshold=``, ...),
        the fields' (``id_field=``, ``text_field=``, ``title_field=``, ``time_field=``,
        ``source_field=``; an empty time or source field is none) and the run options'."""
        names = Settings.names()
        settings = Settings(**{k: kwargs.pop(k) for k in list(kwargs) if k in names})
        given = {attr: kwargs.pop(k) for k, attr in FIELD_KWARGS.items() if k in kwargs}
        for attr in ("time", "source"):
            if attr in given:
                given[attr] = given[attr] or None
        run_names = {f.name for f in dataclasses.fields(cls)} - {"settings", "fields"}
        unknown = sorted(set(kwargs) - run_names)
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
        return cls(settings=settings, fields=Fields(**given), **kwargs)

    def check(self) -> None:
        def bad(msg: str) -> None:
            raise InvalidParameterError(msg)

        if not isinstance(self.settings, Settings):
            bad(f"settings must be a neardup.Settings, got {type(self.settings).__name__}")
        if not isinstance(self.steps, BatchSteps):
            bad(f"steps must be a BatchSteps, got {type(self.steps).__name__}")
        if not _is_int(self.batch_size):
            bad(f"batch_size must be an integer, got {self.batch_size!r}")
        if self.threads is not None and not _is_int(self.threads):
            bad(f"threads must be an integer or None, got {self.threads!r}")
        if self.on_error not in ON_ERROR:
            bad(f"on_error must be one of {ON_ERROR}, got {self.on_error!r}")
        if self.output_format not in FORMATS:
            bad(f"output format must be one of {FORMATS}, got {self.output_format!r}")
        if self.batch_size <= 0:
            bad("batch_size must be >= 1")
        if self.threads is not None and self.threads <= 0:
            bad("threads must be >= 1")
        if self.large_bucket is not None and (
            isinstance(self.large_bucket, bool) or not isinstance(self.large_bucket, int) or self.large_bucket < 2
        ):
            bad(f"large_bucket must be an integer >= 2 or None, got {self.large_bucket!r}")
        if self.tmp_dir is not None:  # said now, not when a spill first needs it (exit 4, unnamed)
            self._check_tmp_dir()
        if self.memory_limit is not None:
            self.memory_limit = parse_size(self.memory_limit)

    def _check_tmp_dir(self) -> None:
        try:  # bytes and os.PathLike as the standard library takes them; a str from here on
            self.tmp_dir = os.fsdecode(self.tmp_dir)  # type: ignore[arg-type]
        except TypeError:
            raise InvalidParameterError(
                f"tmp_dir must be a path (str, bytes or os.PathLike) or None, got {self.tmp_dir!r}"
            ) from None
        if not os.path.isdir(self.tmp_dir):
            raise InvalidParameterError(f"tmp_dir {self.tmp_dir!r} is not a directory")
        if not os.access(self.tmp_dir, os.W_OK | os.X_OK):
            raise InvalidParameterError(f"tmp_dir {self.tmp_dir!r} is not writable")

    def limits(self) -> Limits:
        """The record checks of a dedup run (both engines): ``max_chars``, and a line of JSON
        text holding NaN, Infinity or -Infinity (not JSON) refused, as kept.jsonl copies the
        kept lines (records.Limits.strict_json). A float NaN given typed (Parquet, a Python
        record) is a value: kept.parquet keeps it, kept.jsonl writes null."""
        return Limits(max_chars=self.settings.max_chars, strict_json=True)

    def as_dict(self) -> dict[str, Any]:
        """For report.json's ``options``: the fields, the settings and the run options."""
        from dataclasses import asdict

        s = self.settings.as_dict()  # (in the fields' order; max_chars after on_error, as ever)
        max_chars = s.pop("max_chars")
        d: dict[str, Any] = {"fields": asdict(self.fields), **s, "on_error": self.on_error, "max_chars": max_chars}
        for name in ("output_format", "batch_size", "threads", "memory_limit", "tmp_dir", "large_bucket"):
            d[name] = getattr(self, name)
        return d


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
}


def parse_size(text: str | int | None) -> int | None:
    """Bytes from ``"16G"``, ``"512MiB"``, ``"2.5g"`` or an integer; None stays None."""
    if text is None or isinstance(text, int) and not isinstance(text, bool):
        if text is not None and text <= 0:
            raise InvalidParameterError(f"a memory limit must be positive, got {text}")
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise InvalidParameterError(f"cannot read {text!r} as a size (examples: 16G, 512M, 2.5GiB, 1000000)")
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise InvalidParameterError(f"a memory limit must be positive, got {text!r}")
    return value
