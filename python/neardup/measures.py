"""Exact set measures on shingle ids (sorted, distinct ``uint64`` arrays, as
:meth:`neardup.Shingler.hashes` returns them)."""

from __future__ import annotations

from typing import Any

from neardup import _core
from neardup._ints import u64_array

__all__ = ["jaccard", "containment"]


def jaccard(h1: Any, h2: Any) -> float:
    """|h1 ∩ h2| / |h1 ∪ h2|; 0.0 when both are empty."""
    return _core.jaccard(u64_array("h1", h1), u64_array("h2", h2))


def containment(h1: Any, h2: Any) -> float:
    """Containment of h1 in h2: |h1 ∩ h2| / |h1| (Broder); 0.0 when h1 is empty.

    A 120-word story pasted into a 1,020-word page has Jaccard ~0.11 with the page but
    containment 1.0 in it.
    """
    return _core.containment(u64_array("h1", h1), u64_array("h2", h2))
