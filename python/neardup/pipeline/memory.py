"""``--memory-limit``: how the batch job splits a memory budget between its big structures.

What grows with the corpus, and where it goes:

* per document, always in memory: ~60 bytes (id bytes and its index entry, time, source,
  input and record number, exact key, first-copy index, token count; ``pipeline.docs``);
* per signed document: the rows the candidate stage reads (8 bytes per LSH band with exact
  verification; a whole signature otherwise) — kept in memory while they and the per-document
  tables fit in ``rows_budget``, then spilled to a file (``pipeline.store``) that the band sort
  reads back in chunks (not mapped, so its pages do not count as the process's memory);
* the candidate stage sorts one band column at a time per core (16 bytes per signed document
  per core) — in memory while that fits in ``sort_budget``, otherwise externally through
  partition files (``pipeline.candidates``) — and keeps the candidate pairs (8 bytes each);
* exact verification holds shingle sets of candidate documents while later pairs need them —
  at most ``verify_budget``, or it re-reads in more passes (``pipeline.reread``).

Without a limit nothing spills and verification runs in one pass. With one, half goes to the
per-document tables and the rows (the rows spill when the two together pass it), a fifth to the
band sort and a fifth to held shingle sets; the rest is headroom for the interpreter and the
batches of text in flight. The per-document tables themselves cannot spill (about 100 bytes per
document plus the id): a limit below that is not met, and the run report states the peak
resident memory actually reached next to the limit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from neardup.errors import InvalidParameterError

__all__ = ["MemoryPlan", "parse_size"]

#: Shares of the limit for the spillable structures (the rest is for what cannot spill).
ROWS_SHARE = 0.5  # the kept rows together with the per-document tables
VERIFY_SHARE = 0.2
SORT_SHARE = 0.2

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


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


@dataclass(frozen=True)
class MemoryPlan:
    limit: int | None
    rows_budget: int | None
    verify_budget: int | None
    sort_budget: int | None = None

    @classmethod
    def for_limit(cls, limit: int | None) -> "MemoryPlan":
        if limit is None:
            return cls(None, None, None, None)
        return cls(limit, int(limit * ROWS_SHARE), int(limit * VERIFY_SHARE), int(limit * SORT_SHARE))
