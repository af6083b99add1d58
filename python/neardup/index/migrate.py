"""Upgrading an index made by an earlier format in place, on open.

Format 1 kept level 0 as one SQLite row per posting, ``postings(band, key, doc)`` (band -1 for
the exact key): a single-article add then dirtied one random B-tree page per band, most of the
cost of its commit. Format 2 keeps one row per document, ``level0(doc, exact_key, bands)``.
The upgrade is one transaction under the writer lock (IndexLockedError if a writer holds it);
an older neardup refuses format 2 instead of missing the level-0 postings.
"""
from __future__ import annotations

import sqlite3

import numpy as np

from neardup.index.store import WriterLock

LEVEL0 = ("CREATE TABLE level0 (doc INTEGER PRIMARY KEY, exact_key INTEGER NOT NULL, "
          "bands BLOB NOT NULL)")


def migrate_1_to_2(directory: str, conn: sqlite3.Connection, cfg_bands: int) -> None:
    lock = WriterLock(directory)
    lock.acquire()
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] != "1":
                conn.execute("ROLLBACK")  # another process upgraded it meanwhile
                return
            rows: dict[int, list] = {}
            for band, key, doc in conn.execute("SELECT band, key, doc FROM postings"):
                r = rows.setdefault(doc, [0, np.zeros(cfg_bands, np.uint64)])
                if band < 0:
                    r[0] = key
                else:
                    r[1][band] = key & 0xFFFFFFFFFFFFFFFF
            conn.execute(LEVEL0)
            conn.executemany("INSERT INTO level0 VALUES (?, ?, ?)",
                             [(d, ek, b.astype("<u8").tobytes()) for d, (ek, b) in sorted(rows.items())])
            conn.execute("DROP TABLE postings")
            conn.execute("UPDATE meta SET value = '2' WHERE key = 'format'")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        lock.release()
