"""Execution engines, siblings over the engine-neutral stages (``neardup.stages``): ``local`` (the batch job), ``spark``; the incremental index is ``neardup.index``.

Every engine runs the same kernels (``neardup.kernels``) and gives the same answer."""
