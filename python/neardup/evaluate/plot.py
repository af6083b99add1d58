"""PNG plots (matplotlib, an optional dependency: ``pip install 'neardup[plot]'``)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from neardup.errors import InvalidParameterError, NeardupError, OutputError

__all__ = ["histogram", "curve_png", "png_path"]


def _formats() -> list[str]:
    """The extensions matplotlib can write (its savefig formats, which vary by version)."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:  # the plot itself then says matplotlib is needed
        return ["png", "pdf", "svg", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp"]
    return sorted(FigureCanvasBase.get_supported_filetypes())


def png_path(path: str, default_name: str) -> str:
    """The file `--png PATH` writes: in a directory (an existing one, or a path ending in a
    slash), `default_name`; a name without an extension gets ``.png`` (matplotlib adds it:
    the file written is named for what is said). An extension matplotlib cannot write is
    :class:`InvalidParameterError` (exit 2) and a place that cannot be written
    :class:`OutputError` (exit 5), both before any work is done."""
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith((os.sep, "/")):
        path = os.path.join(path, default_name)
    ext = os.path.splitext(os.path.basename(path))[1]
    if not ext:
        path += ".png"
    elif ext[1:].lower() not in (formats := _formats()):
        raise InvalidParameterError(f"--png {path}: cannot write a {ext} image (use one of: .{', .'.join(formats)})")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise OutputError(f"{path}: cannot write: no directory {parent}")
    if not os.access(parent, os.W_OK) or os.path.isdir(path):
        raise OutputError(
            f"{path}: cannot write: "
            + ("a directory is there" if os.path.isdir(path) else f"the directory {parent} is not writable")
        )
    return path


def _save(fig, path: str) -> None:
    """`fig` written to `path`; a failure to write it is :class:`OutputError` (exit 5)."""
    try:
        fig.savefig(path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise NeardupError("PNG output needs matplotlib: pip install 'neardup[plot]'") from exc
    return plt


def histogram(jaccard: np.ndarray, found: np.ndarray, threshold: float, path: str, measure: str = "jaccard") -> None:
    """Histogram of the true pairs' similarity (Jaccard, or containment), stacked found / missed."""
    name = "Jaccard" if measure == "jaccard" else measure
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    bins = np.linspace(threshold, 1.0, 21)
    ax.hist(
        [jaccard[found], jaccard[~found]],
        bins=bins,
        stacked=True,
        color=["#3b7dd8", "#e4572e"],
        label=[f"found ({int(found.sum()):,})", f"missed ({int((~found).sum()):,})"],
    )
    ax.axvline(threshold, color="black", linestyle="--", linewidth=1)
    ax.set_yscale("log")  # the few missed pairs stay visible next to thousands found
    ax.set_xlabel(f"exact {name} of the true pair")
    ax.set_ylabel("pairs (log scale)")
    ax.set_title(f"True pairs at {name} >= {threshold}: found and missed")
    ax.legend()
    fig.tight_layout()
    try:
        _save(fig, path)
    finally:
        plt.close(fig)


def curve_png(b: int, r: int, threshold: float, path: str, others: Sequence[tuple[str, int, int]] = ()) -> None:
    """The S-curve 1 - (1 - s^r)^b with the threshold marked."""
    plt = _pyplot()
    s = np.linspace(0, 1, 401)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    ax.plot(s, 1 - (1 - s**r) ** b, label=f"{b} bands x {r} rows", linewidth=2)
    for name, bb, rr in others:
        ax.plot(s, 1 - (1 - s**rr) ** bb, label=f"{name}: {bb} x {rr}", linestyle=":")
    ax.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold}")
    ax.set_xlabel("Jaccard similarity s")
    ax.set_ylabel("P(candidate)")
    ax.set_title("LSH S-curve: 1 - (1 - s^r)^b")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        _save(fig, path)
    finally:
        plt.close(fig)
