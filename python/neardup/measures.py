"""Exact set measures on shingle ids (sorted, distinct ``uint64`` arrays, as
:meth:`neardup.Shingler.hashes` returns them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup import _core

__all__ = ["jaccard", "containment"]


def _ids(h: Any) -> np.ndarray:
    return np.ascontiguousarray(h, dtype=np.uint64)


def jaccard(h1: Any, h2: Any) -> float:
    """|h1 ∩ h2| / |h1 ∪ h2|; 0.0 when both are empty."""
    return _core.jaccard(_ids(h1), _ids(h2))


def containment(h1: Any, h2: Any) -> float:
    """Containment of h1 in h2: |h1 ∩ h2| / |h1| (Broder); 0.0 when h1 is empty.

    A 120-word story pasted into a 1,020-word page has Jaccard ~0.11 with the page but
    containment 1.0 in it.
    """
    return _core.containment(_ids(h1), _ids(h2))
