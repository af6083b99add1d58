"""Where an add's postings go: explicit settings, not environment variables.

They change speed and file layout, never results (a query sees level 0 and every segment alike),
so unlike :class:`~neardup.index.core.IndexConfig` they are not checked on open: they are stored
in the index when it is created (``meta.tuning``) and a process may override them for itself
(``Index.open(DIR, segment_min=..., l0_max=...)``), as the tests do to exercise both paths.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from neardup.errors import InvalidParameterError


@dataclass(frozen=True)
class Tuning:
    #: an add of at least this many documents writes its postings to a new segment file
    segment_min: int = 20_000
    #: smaller adds go to level 0 (SQLite) until it would hold more than this many documents;
    #: then level 0 is folded into the next segment in the same transaction. An index opened
    #: with ``background_fold=True`` (the service) folds in a thread of its own instead, and
    #: folds inline only past ``BACKSTOP x l0_max`` (see fold.py)
    l0_max: int = 50_000
    #: with ``background_fold=True``: a commit that leaves level 0 above this many documents
    #: starts a background fold (None: half of l0_max)
    l0_fold_at: int | None = None
    #: a background fold merges trailing segments into its own only while the merged segment
    #: stays at most this many documents: bigger segments are left alone (``compact`` rewrites
    #: everything). Uncapped, the size-tiered chain's largest merge rewrote the whole index
    #: (1.3M documents, 220 MB, in the service's writer process): p99 197 ms over the 40 s
    #: around it, at 200 requests/s. Capped, the index keeps about N / merge_max big segments,
    #: each searched by every lookup (~0.05 ms per segment and article)
    merge_max: int = 1_000_000

    def check(self) -> Tuning:
        for k, v in asdict(self).items():
            if k == "l0_fold_at" and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidParameterError(f"{k} must be a positive integer, got {v!r}")
        return self

    @property
    def fold_at(self) -> int:
        """Level 0's size above which a background fold starts."""
        return self.l0_fold_at if self.l0_fold_at is not None else max(1, self.l0_max // 2)

    def with_overrides(self, **kw) -> Tuning:
        return replace(self, **{k: v for k, v in kw.items() if v is not None}).check()

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(s: str | None) -> Tuning:
        """The stored settings; an index made before they were stored gets the defaults."""
        if not s:
            return Tuning()
        d = json.loads(s)
        kw: dict[str, Any] = {
            k: (None if v is None else int(v)) for k, v in d.items() if k in Tuning.__dataclass_fields__
        }
        return Tuning(**kw)


@dataclass(frozen=True)
class Steps:
    """How much the index reads, plans, verifies or writes at a time. Like :class:`Tuning` they
    change speed and memory, never results; unlike it they are not stored: a process passes
    them to ``Index.open`` / ``Index.create`` (``steps=Steps(...)``), and tests make them small
    to reach the paths between steps."""

    #: documents read and checked before they are handed to the signer (intake.py)
    sign_chunk: int = 16_384
    #: a plan of at most this many documents takes the steps for a few (plan_steps.py: lists
    #: and dicts instead of array sorts; the same results); 0: never
    small_plan: int = 16
    #: a new document keeps its this-many most similar pairs, plus a spanning forest (budget.py)
    pairs_per_document: int = 32
    #: archive candidates in one cluster verified per round (budget.py)
    candidates_per_cluster: int = 32
    #: a background fold writes its segment in pieces of this many bytes, each fdatasynced before
    #: the next (segment.py). Written whole, a merged segment of 220 MB went to the disk in one
    #: burst at the final fsync, and every commit's WAL sync waited behind it (365 ms, measured
    #: in the service at 200 requests/s); paced, a WAL sync waits for at most one piece
    pace_bytes: int = 1 << 20
    #: bytes cut from a retired segment at a time, and the seconds between cuts (fold.py)
    retire_step: int = 1 << 20
    retire_pause: float = 0.02

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if k == "retire_pause":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                    raise InvalidParameterError(f"retire_pause must be a number >= 0, got {v!r}")
            elif isinstance(v, bool) or not isinstance(v, int) or v < (0 if k == "small_plan" else 1):
                raise InvalidParameterError(
                    f"{k} must be a whole number ({'>= 0' if k == 'small_plan' else '>= 1'}), got {v!r}"
                )
