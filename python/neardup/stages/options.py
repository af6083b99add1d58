"""The options of a dedup run (one dataclass, shared by the CLI, the Python API and later
runners), with their checks."""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field

from neardup.errors import InvalidParameterError
from neardup.io.records import Fields, Limits

__all__ = ["DedupOptions"]

METHODS = ("minhash", "simhash")
VERIFY = ("exact", "estimate")
MEASURES = ("jaccard", "containment")
ON_ERROR = ("stop", "skip")

# The MinHash scheme of the dedup job. One-permutation hashing with optimal densification is
# about 3x faster than classic multiply-shift MinHash (one hash per shingle instead of 128) and,
# since every candidate is verified exactly, only candidate recall depends on it: measured recall
# of true pairs at J >= 0.8 was 99.78 % (oph) vs 99.71 % (multiply-shift) on the guide-size
# synthetic corpus and 100 % vs 99.4 % on Reuters-21578 (docs/dedup.md). `--scheme
# multiply-shift` gives the guide's classic MinHash.
DEFAULT_SCHEME = "oph"
FORMATS = ("jsonl", "parquet")
#: Default of ``large_bucket``: buckets above this many documents are not listed pair by pair.
LARGE_BUCKET = 100


def source_names(value) -> tuple:
    """``prefer_source`` as given: names, or one string of comma-separated names ("agency" is
    one name, not six letters)."""
    if isinstance(value, str):
        return tuple(x for x in value.split(",") if x)
    try:
        return tuple(value)
    except TypeError:
        raise InvalidParameterError(f"prefer_source must be source names (a list of strings, or one string "
                                    f"of comma-separated names), got {value!r}") from None


def _is_int(v) -> bool:
    """An integer (a NumPy one too), not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


@dataclass
class DedupOptions:
    fields: Fields = field(default_factory=Fields)
    method: str = "minhash"
    k: int = 5
    unit: str = "word"
    num_perm: int = 128
    scheme: str = DEFAULT_SCHEME
    seed: int = 1
    threshold: float = 0.8
    recall: float = 0.95
    bands: int | None = None
    rows: int | None = None
    max_distance: int = 3
    verify: str = "exact"
    measure: str = "jaccard"
    prefer_source: tuple[str, ...] = ()
    on_error: str = "stop"
    max_chars: int = 5_000_000
    output_format: str = "jsonl"
    batch_size: int = 8192
    threads: int | None = None
    progress: bool = False
    # Budget for the structures that can spill to disk (bytes; None: keep everything in
    # memory). See pipeline/memory.py for what it covers.
    memory_limit: int | None = None
    # Where spill files go (None: the system's temporary directory).
    tmp_dir: str | None = None
    # An LSH bucket of more documents than this is verified by a per-bucket union-find
    # (pipeline/buckets.py): the same clusters and keepers, but only its spanning edges are
    # checked and written to pairs.jsonl, not its m(m-1)/2 pairs. Below it every pair is
    # listed (a bucket of 100 has 4,950 pairs: cheap). None: always every pair.
    large_bucket: int | None = LARGE_BUCKET
    # Return clusters, pairs and kept ids in the result (False: only write them to the output
    # directory, so a run over millions of documents does not hold them all as Python rows).
    collect: bool = True

    def check(self) -> None:
        def bad(msg: str) -> None:
            raise InvalidParameterError(msg)

        # types first: k="5" or threads=1.5 raised a bare TypeError from a comparison, and
        # threshold=True was taken as 1
        for name in ("k", "num_perm", "seed", "max_distance", "max_chars", "batch_size"):
            if not _is_int(getattr(self, name)):
                bad(f"{name} must be an integer, got {getattr(self, name)!r}")
        for name in ("bands", "rows", "threads"):
            if getattr(self, name) is not None and not _is_int(getattr(self, name)):
                bad(f"{name} must be an integer or None, got {getattr(self, name)!r}")
        for name in ("threshold", "recall"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                bad(f"{name} must be a number, got {v!r}")
        if not all(isinstance(x, str) for x in self.prefer_source):
            bad(f"prefer_source must be source names (strings), got {list(self.prefer_source)!r}")
        if self.method not in METHODS:
            bad(f"method must be one of {METHODS}, got {self.method!r}")
        if self.verify not in VERIFY:
            bad(f"verify must be one of {VERIFY}, got {self.verify!r}")
        if self.measure not in MEASURES:
            bad(f"measure must be one of {MEASURES}, got {self.measure!r}")
        if self.measure == "containment" and self.verify != "exact":
            bad("measure 'containment' needs exact verification (signatures estimate Jaccard only)")
        if self.on_error not in ON_ERROR:
            bad(f"on_error must be one of {ON_ERROR}, got {self.on_error!r}")
        if self.output_format not in FORMATS:
            bad(f"output format must be one of {FORMATS}, got {self.output_format!r}")
        if not (isinstance(self.threshold, (int, float)) and 0 < self.threshold <= 1 and not math.isnan(self.threshold)):
            bad(f"threshold must be in (0, 1], got {self.threshold!r}")
        if not 0 < self.recall < 1:
            bad(f"recall must be in (0, 1), got {self.recall!r}")
        if self.k <= 0:
            bad(f"k must be >= 1, got {self.k}")
        if self.num_perm <= 0:
            bad(f"num_perm must be >= 1, got {self.num_perm}")
        if (self.bands is None) != (self.rows is None):
            bad("give both bands and rows, or neither")
        if self.method == "simhash" and self.bands is not None:  # (they were silently ignored)
            bad("bands and rows apply to MinHash's LSH: SimHash finds candidates through max_distance + 1 "
                "tables of fingerprint blocks (set max_distance)")
        if self.bands is not None and (self.bands <= 0 or self.rows <= 0):
            bad("bands and rows must be >= 1")
        if self.bands is not None and self.bands * self.rows > self.num_perm:
            bad(f"bands x rows = {self.bands * self.rows} is more than num_perm = {self.num_perm}")
        if not 0 <= self.max_distance <= 31:
            bad(f"max_distance must be in 0..31, got {self.max_distance}")
        if self.max_chars <= 0:
            bad("max_chars must be >= 1")
        if self.batch_size <= 0:
            bad("batch_size must be >= 1")
        if self.threads is not None and self.threads <= 0:
            bad("threads must be >= 1")
        if self.large_bucket is not None and (isinstance(self.large_bucket, bool) or
                                              not isinstance(self.large_bucket, int) or self.large_bucket < 2):
            bad(f"large_bucket must be an integer >= 2 or None, got {self.large_bucket!r}")
        if self.tmp_dir is not None:  # said now, not when a spill first needs it (exit 4, unnamed)
            import os

            try:  # bytes and os.PathLike as the standard library takes them; a str from here on
                self.tmp_dir = os.fsdecode(self.tmp_dir)
            except TypeError:
                bad(f"tmp_dir must be a path (str, bytes or os.PathLike) or None, got {self.tmp_dir!r}")
            if not os.path.isdir(self.tmp_dir):
                bad(f"tmp_dir {self.tmp_dir!r} is not a directory")
            if not os.access(self.tmp_dir, os.W_OK | os.X_OK):
                bad(f"tmp_dir {self.tmp_dir!r} is not writable")
        if self.memory_limit is not None:
            from neardup.engines.local.memory import parse_size

            self.memory_limit = parse_size(self.memory_limit)

    def limits(self) -> Limits:
        """The record checks of a dedup run (both engines): ``max_chars``, and a line of JSON
        text holding NaN, Infinity or -Infinity (not JSON) refused, as kept.jsonl copies the
        kept lines (records.Limits.strict_json). A float NaN given typed (Parquet, a Python
        record) is a value: kept.parquet keeps it, kept.jsonl writes null."""
        return Limits(max_chars=self.max_chars, strict_json=True)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["prefer_source"] = list(self.prefer_source)
        d.pop("progress")
        d.pop("collect")
        return d
