"""Upgrading an index made by an earlier format in place, on open.

Format 1 kept level 0 as one SQLite row per posting, ``postings(band, key, doc)`` (band -1 for
the exact key): a single-article add then dirtied one random B-tree page per band, most of the
cost of its commit. Format 2 keeps one row per document, ``level0(doc, exact_key, bands)``.
Format 3 adds ``pending_texts`` (the texts of small fsynced adds until the text log is fsynced;
an older neardup would not rewrite them into the log after a power cut, so it must refuse).
Format 4 keeps counts of documents, stories, clusters and text bytes in ``meta`` (counters.py),
counted once here by scanning the tables (about a second on a 1.2M-article index); an older
neardup would add without updating them. Format 5 changes no table but what ``pairs`` may
hold: in a story over the budget (budget.py) a budget of each document's verified pairs, not
all of them, which a removal completes by verifying again; an older neardup's removal would
read the budget as all the pairs and split such stories.

Each upgrade is one transaction under the writer lock (IndexLockedError if a writer holds it);
an older neardup refuses the newer format instead of missing what it adds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from neardup.index import counters
from neardup.index.store import WriterLock, immediate

LEVEL0 = "CREATE TABLE level0 (doc INTEGER PRIMARY KEY, exact_key INTEGER NOT NULL, bands BLOB NOT NULL)"
PENDING = (
    "CREATE TABLE pending_texts (doc INTEGER PRIMARY KEY, file INTEGER NOT NULL, "
    "offset INTEGER NOT NULL, body BLOB NOT NULL)"
)


def _upgrade(
    directory: str, conn: sqlite3.Connection, old: int, change: Callable[[sqlite3.Connection], object]
) -> None:
    """Format `old` to `old` + 1 by `change`, in one transaction under the writer lock."""
    lock = WriterLock(directory)
    lock.acquire()
    try:
        with immediate(conn):
            if conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] != str(old):
                conn.execute("ROLLBACK")  # another process upgraded it meanwhile
                return
            change(conn)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(old + 1),))
    finally:
        lock.release()


def migrate_1_to_2(directory: str, conn: sqlite3.Connection, cfg_bands: int) -> None:
    def change(conn: sqlite3.Connection) -> None:
        rows: dict[int, list] = {}
        for band, key, doc in conn.execute("SELECT band, key, doc FROM postings"):
            r = rows.setdefault(doc, [0, np.zeros(cfg_bands, np.uint64)])
            if band < 0:
                r[0] = key
            else:
                r[1][band] = key & 0xFFFFFFFFFFFFFFFF
        conn.execute(LEVEL0)
        conn.executemany(
            "INSERT INTO level0 VALUES (?, ?, ?)",
            [(d, ek, b.astype("<u8").tobytes()) for d, (ek, b) in sorted(rows.items())],
        )
        conn.execute("DROP TABLE postings")

    _upgrade(directory, conn, 1, change)


def migrate_2_to_3(directory: str, conn: sqlite3.Connection) -> None:
    _upgrade(directory, conn, 2, lambda c: c.execute(PENDING))


def migrate_3_to_4(directory: str, conn: sqlite3.Connection) -> None:
    _upgrade(directory, conn, 3, lambda c: counters.store(c, counters.recount(c)))


def migrate_4_to_5(directory: str, conn: sqlite3.Connection) -> None:
    _upgrade(directory, conn, 4, lambda c: None)  # (every pair of a format-4 index is stored)
