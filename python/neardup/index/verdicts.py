"""What an add or a query says about each document: :class:`Verdict`, and :class:`Verdicts`,
the list an add returns.

A day's add of 200,000 articles needs its verdicts' counts, not 200,000 objects with their
alternates lists (building those cost ~2 s of the add). :class:`Verdicts` keeps the plan's
columns and builds a document's :class:`Verdict` when it is asked for; a cluster's keeper and
alternates are worked out once per cluster, on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from neardup.io.records import Checked

__all__ = ["Verdict", "Verdicts"]


@dataclass
class Verdict:
    """What the index says about one incoming document."""

    id: Any
    status: str  # "new" (a story of its own) or "duplicate" (matched an earlier document)
    cluster: int | None
    keeper: Any
    is_keeper: bool
    alternates: list
    closest: Any = None
    similarity: float | None = None
    match: str | None = None  # "exact" | "near" for the closest match
    inserted: bool = False

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "status": self.status,
            "cluster": self.cluster,
            "keeper": self.keeper,
            "is_keeper": self.is_keeper,
            "alternates": self.alternates,
            "closest": self.closest,
            "similarity": self.similarity,
            "match": self.match,
            "inserted": self.inserted,
        }


class Verdicts(Sequence):
    """The verdicts of a batch, in input order: a read-only sequence of :class:`Verdict`
    (indexing, slicing, iteration, ``len``), built lazily from the plan's columns."""

    def __init__(
        self,
        docs: list[Checked],
        cluster_of: np.ndarray,
        keeper_doc_of: Callable[[int], int],
        doc_nums: np.ndarray,
        closest: list,
        alternates_of: Callable[[int], tuple[Any, list]],
    ) -> None:
        self._docs = docs
        self._cluster = cluster_of.tolist()
        self._keeper_doc_of = keeper_doc_of
        self._dn = doc_nums.tolist()
        self._closest = closest
        self._alternates_of = alternates_of
        self._alt_cache: dict[int, tuple[Any, list]] = {}
        self.inserted = False
        #: the records an add with ``on_error="skip"`` left out (RecordError: path, line, field,
        #: reason), in input order
        self.skipped: list = []
        #: documents that matched an earlier one (in the index or earlier in the batch)
        self.duplicates = len(closest) - closest.count(None)

    @property
    def unreadable_times(self) -> list[tuple[Any, str]]:
        """(id, reason) of each document whose time field could not be read: its time counts as
        missing for the keeper rule, and the value is kept with its other fields (as
        ``neardup dedup`` keeps such a record and lists it in report.json)."""
        return [(d.id, d.time_error) for d in self._docs if d.time_error is not None]

    def __len__(self) -> int:
        return len(self._docs)

    @overload
    def __getitem__(self, i: int) -> Verdict: ...
    @overload
    def __getitem__(self, i: slice) -> list[Verdict]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._one(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("verdict index out of range")
        return self._one(i)

    def __iter__(self):
        return (self._one(i) for i in range(len(self)))

    def _one(self, i: int) -> Verdict:
        cl = self._cluster[i]
        alt = self._alt_cache.get(cl)
        if alt is None:
            alt = self._alt_cache[cl] = self._alternates_of(cl)
        kid, alts = alt
        cm = self._closest[i]
        return Verdict(
            id=self._docs[i].id,
            status="duplicate" if cm is not None else "new",
            cluster=cl,
            keeper=kid,
            is_keeper=self._keeper_doc_of(cl) == self._dn[i],
            alternates=list(alts),
            closest=cm[0] if cm else None,
            similarity=round(cm[1], 6) if cm else None,
            match=cm[2] if cm else None,
            inserted=self.inserted,
        )

    def __repr__(self) -> str:
        return f"<Verdicts: {len(self)} documents, {self.duplicates} duplicates>"
