"""An index's clusters as a Parquet file (``neardup index export -o FILE.parquet``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from neardup.io.writers import atomic_open

__all__ = ["EXPORT_BLOCK", "write_clusters_parquet"]

#: clusters written per Parquet row group by default (an archive's clusters are never all in
#: memory at once)
EXPORT_BLOCK = 8192


def write_clusters_parquet(
    rows: Iterable[dict[str, Any]], path: str | os.PathLike[str], block: int = EXPORT_BLOCK
) -> int:
    """Write `rows` (``Index.clusters()``'s) to `path` atomically, `block` clusters per row
    group, ids as strings (an index may hold integer and string ids: one column type); an
    empty export is a file with the schema and no rows. Returns the clusters written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("cluster", pa.int64()),
            ("keeper", pa.string()),
            ("size", pa.int64()),
            (
                "members",
                pa.list_(pa.struct([("id", pa.string()), ("similarity", pa.float64()), ("match", pa.string())])),
            ),
        ]
    )
    n = 0
    with atomic_open(os.fspath(path), "wb") as f, pq.ParquetWriter(f, schema) as w:
        chunk: list[dict[str, Any]] = []
        for r in rows:
            r["keeper"] = str(r["keeper"])
            for m in r["members"]:
                m["id"] = str(m["id"])
            chunk.append(r)
            if len(chunk) == block:
                w.write_table(pa.Table.from_pylist(chunk, schema=schema))
                n += len(chunk)
                chunk = []
        if chunk or n == 0:
            w.write_table(pa.Table.from_pylist(chunk, schema=schema))
            n += len(chunk)
    return n
