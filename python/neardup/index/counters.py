"""Counts of what an index holds, kept in ``meta`` by every commit (format 4).

``Index.stats`` used to count them with full scans: ``SUM(text_length)`` over every
``documents`` row and an aggregate over every ``clusters`` row, 0.1-0.7 s with the database in
the page cache on a 1.2M-article index and 1.6 s (over 5 s on a busy host) once it had left
it: an operator's dashboard polling ``GET /v1/stats`` read the whole database from the disk
the service's fsyncs share. Each add and remove now updates the counts in its own transaction
(in the statement that bumps the generation: no extra statement on the request path), so they
are read in constant time and are exactly as durable and atomic as the rows they count.

:func:`recount` counts them the old way; ``Index.check`` compares the two, and the upgrade
from format 3 (migrate.py) and ``Index.recount`` :func:`store` what it counts.

The counts:

* ``documents``: rows of ``documents``;
* ``stories``: clusters with at least one member (a merged or emptied cluster has size 0);
* ``clusters``: clusters of two or more (stories with duplicates);
* ``text_bytes``: the stored texts' bytes (UTF-8; 0 when texts are not stored).

Duplicates (documents that are not their story's keeper) are ``documents - stories``: every
document is a member of exactly one story.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

__all__ = ["NAMES", "ZERO", "recount", "read", "store", "moved"]

NAMES = ("documents", "stories", "clusters", "text_bytes")
ZERO = {k: "0" for k in NAMES}

_RECOUNT = {
    "documents": "SELECT COUNT(*) FROM documents",
    "stories": "SELECT COUNT(*) FROM clusters WHERE size > 0",
    "clusters": "SELECT COUNT(*) FROM clusters WHERE size >= 2",
    "text_bytes": "SELECT COALESCE(SUM(text_length), 0) FROM documents",
}


def recount(conn: sqlite3.Connection) -> dict[str, int]:
    """The counts, by scanning the tables (in the caller's transaction, if any)."""
    return {k: int(conn.execute(q).fetchone()[0]) for k, q in _RECOUNT.items()}


def read(conn: sqlite3.Connection) -> dict[str, int]:
    """The counts kept in ``meta``."""
    rows = dict(conn.execute(f"SELECT key, value FROM meta WHERE key IN ({','.join('?' * len(NAMES))})", NAMES))
    out = {}
    for k in NAMES:
        try:
            out[k] = int(rows[k])
        except (KeyError, ValueError):
            from neardup.errors import IndexCorruptError

            raise IndexCorruptError(
                f"the count {k!r} in meta is {'missing' if k not in rows else repr(rows[k])}, "
                "not a number: `neardup index check --recount` counts again"
            ) from None
    return out


def store(conn: sqlite3.Connection, counts: dict[str, int]) -> None:
    """Write `counts` into ``meta`` (in the caller's transaction; a missing key is added)."""
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(counts[k])) for k in NAMES])


def moved(current: Mapping[str, str | int], **delta: int) -> dict[str, str]:
    """The counts after a commit that changes them by `delta` (keys of NAMES; a missing one
    is unchanged), from the `current` ones: strings, as ``meta`` holds them (for ``_bump``)."""
    return {k: str(int(current[k]) + int(delta.get(k, 0))) for k in NAMES}
