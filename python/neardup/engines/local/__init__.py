"""The local batch engine: ``neardup.dedup``, the batch job on one machine (run.py strings the
engine-neutral stages of :mod:`neardup.stages` together; memory.py, store.py, reread.py,
buckets.py and docs.py keep a large corpus within ``--memory-limit``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from neardup.engines.local.run import run
from neardup.io.records import Fields
from neardup.settings import DEFAULT_MAX_CHARS, DEFAULT_SCHEME, Settings
from neardup.stages.options import LARGE_BUCKET, BatchSteps, DedupOptions
from neardup.stages.outputs import DedupResult

__all__ = ["dedup", "DedupOptions", "DedupResult"]


def dedup(
    inputs: Any,
    out: str | bytes | os.PathLike | None = None,
    *,
    id_field: str = "id",
    text_field: str = "text",
    title_field: str | None = None,
    time_field: str | None = "published_at",
    source_field: str | None = "source",
    method: str = "minhash",
    k: int = 5,
    unit: str = "word",
    num_perm: int = 128,
    scheme: str = DEFAULT_SCHEME,
    seed: int = 1,
    threshold: float = 0.8,
    recall: float = 0.95,
    bands: int | None = None,
    rows: int | None = None,
    max_distance: int = 3,
    verify: str = "exact",
    measure: str = "jaccard",
    prefer_source: Sequence[str] | str = (),
    on_error: str = "stop",
    max_chars: int = DEFAULT_MAX_CHARS,
    output_format: str = "jsonl",
    batch_size: int = 8192,
    threads: int | None = None,
    progress: bool = False,
    memory_limit: int | str | None = None,
    tmp_dir: str | None = None,
    collect: bool = True,
    large_bucket: int | None = LARGE_BUCKET,
    steps: BatchSteps | None = None,
) -> DedupResult:
    """Find near-duplicate documents, cluster them and keep one per cluster.

    ``inputs``: a path, a list of paths (JSONL, .jsonl.gz, .jsonl.zst, Parquet, CSV; ``"-"``
    for stdin), or a list of dict records; a path (here, ``out`` and ``tmp_dir``) is a str,
    bytes or an os.PathLike, as the standard library takes them. ``out``: a directory for clusters.jsonl,
    pairs.jsonl, kept.jsonl (or kept.parquet) and report.json; ``None`` writes nothing.
    The other arguments are those of ``neardup dedup`` (see docs/dedup.md); ``memory_limit``
    (bytes or ``"16G"``) and ``tmp_dir`` bound memory on large corpora (docs/scale.md);
    ``collect=False`` (with ``out``) writes the rows without also returning them as lists;
    ``large_bucket``: LSH buckets of more documents are verified by a per-bucket union-find
    (the same clusters; only spanning edges in ``pairs``), ``None`` lists every pair;
    ``steps`` (:class:`~neardup.stages.options.BatchSteps`): how much is read, turned into rows
    or written at a time (speed and memory, never results).
    Raises :class:`neardup.io.RecordError` for a bad record (unless ``on_error="skip"``),
    :class:`neardup.io.InputFileError`, :class:`neardup.io.OutputError`,
    :class:`neardup.InvalidParameterError`.
    """
    settings = Settings(
        method=method,
        k=k,
        unit=unit,
        num_perm=num_perm,
        scheme=scheme,
        seed=seed,
        threshold=threshold,
        recall=recall,
        bands=bands,
        rows=rows,
        max_distance=max_distance,
        verify=verify,
        measure=measure,
        prefer_source=prefer_source,  # type: ignore[arg-type]  # Settings normalises it (source_names)
        max_chars=max_chars,
    )
    opts = DedupOptions(
        settings=settings,
        fields=Fields(
            id=id_field, text=text_field, title=title_field, time=time_field or None, source=source_field or None
        ),
        on_error=on_error,
        output_format=output_format,
        batch_size=batch_size,
        threads=threads,
        progress=progress,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
        collect=collect,
        large_bucket=large_bucket,
        steps=steps or BatchSteps(),
    )
    return run(inputs, out, opts)
