"""Inserting many rows into SQLite from columns, binding as few parameters as it can.

Python's ``sqlite3`` spends most of a large ``executemany`` binding parameters: measured here,
200,000 rows of the 20-column ``documents`` table took 2.6 s with every value bound and 0.8 s
with 7 bound and the rest written into the statement as literals. A day's add has many such
values: the add's time and batch number are the same in every row, and most rows have the same
columns NULL (a new story has no closest match, no match kind...). So the rows are grouped by
which of their columns are NULL, constant columns become literals, and each group is one
``executemany`` binding only what varies.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from itertools import repeat
from operator import is_, itemgetter
from typing import Any

import numpy as np

from neardup import _sets

__all__ = ["Const", "insert_columns", "SMALL"]

#: inserts of at most this many rows bind every value (see insert_columns)
SMALL = 16


class Const:
    """A column with the same value in every row (an int, a float or None): written as a literal."""

    def __init__(self, value: int | float | None) -> None:
        if not (value is None or type(value) in (int, float)) or (type(value) is float and not math.isfinite(value)):
            raise TypeError(f"a literal column must be an int, a finite float or None, got {value!r}")
        self.value = value

    def sql(self) -> str:
        return "NULL" if self.value is None else repr(self.value)


def insert_columns(conn: sqlite3.Connection, table: str, columns: Sequence[Sequence[Any] | Const], n: int) -> None:
    """INSERT `n` rows into `table`; ``columns[j]`` is column j's values (a sequence of n) or a
    :class:`Const`. Same rows, same values as one executemany of every value bound."""
    if n == 0:
        return
    varying: dict[int, Sequence[Any]] = {j: c for j, c in enumerate(columns) if not isinstance(c, Const)}
    for j, col in varying.items():
        if len(col) != n:
            raise ValueError(f"column {j} has {len(col)} values, expected {n}")
    if n <= SMALL:
        # a few rows (the service's adds): every value bound, so that the statement's text is
        # the same at every add and SQLite's statement cache serves it (a literal such as the
        # add's time makes a new text, and preparing it costs more than binding a few rows)
        rows = [[c.value if isinstance(c, Const) else c[i] for c in columns] for i in range(n)]
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", rows)
        return
    # which varying columns hold a NULL somewhere: each row's pattern of NULLs is its group
    # (map(is_, ...) and itemgetter below: C loops, where a generator or a comprehension took
    # 0.35 s of a day's 200,000 rows)
    nullable = [j for j, col in varying.items() if None in col]
    code = np.zeros(n, np.int64)
    for bit, j in enumerate(nullable):
        code |= np.fromiter(map(is_, varying[j], repeat(None, n)), np.bool_, n).astype(np.int64) << bit
    groups = _sets.unique(code)
    for g in groups.tolist():
        nulls = {j for bit, j in enumerate(nullable) if g >> bit & 1}
        parts, bound = [], []
        for j, c in enumerate(columns):
            if isinstance(c, Const):
                parts.append(c.sql())
            elif j in nulls:
                parts.append("NULL")
            else:
                parts.append("?")
                bound.append(j)
        sql = f"INSERT INTO {table} VALUES ({', '.join(parts)})"
        if len(groups) == 1:
            cols = [varying[j] for j in bound]
        else:
            idx = np.flatnonzero(code == g).tolist()
            pick = itemgetter(*idx) if len(idx) > 1 else (lambda c, i=idx[0]: (c[i],))
            cols = [pick(varying[j]) for j in bound]
        if bound:
            conn.executemany(sql, zip(*cols))
        else:
            conn.executemany(sql, [()] * (n if len(groups) == 1 else int((code == g).sum())))
