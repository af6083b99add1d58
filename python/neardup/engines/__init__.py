"""Execution engines beyond the local one (``neardup.pipeline``): ``neardup.engines.spark``.

Every engine runs the same kernels (``neardup.kernels``) and gives the same answer."""
