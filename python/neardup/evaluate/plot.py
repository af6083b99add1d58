"""PNG plots (matplotlib, an optional dependency: ``pip install 'neardup[plot]'``)."""
from __future__ import annotations

import numpy as np

from neardup.errors import NeardupError

__all__ = ["histogram", "curve_png"]


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise NeardupError("PNG output needs matplotlib: pip install 'neardup[plot]'") from exc
    return plt


def histogram(jaccard: np.ndarray, found: np.ndarray, threshold: float, path: str) -> None:
    """Histogram of the true pairs' Jaccard, stacked found / missed."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    bins = np.linspace(threshold, 1.0, 21)
    ax.hist([jaccard[found], jaccard[~found]], bins=bins, stacked=True, color=["#3b7dd8", "#e4572e"],
            label=[f"found ({int(found.sum()):,})", f"missed ({int((~found).sum()):,})"])
    ax.axvline(threshold, color="black", linestyle="--", linewidth=1)
    ax.set_yscale("log")  # the few missed pairs stay visible next to thousands found
    ax.set_xlabel("exact Jaccard of the true pair")
    ax.set_ylabel("pairs (log scale)")
    ax.set_title(f"True pairs at J >= {threshold}: found and missed")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def curve_png(b: int, r: int, threshold: float, path: str, others: list[tuple[str, int, int]] = ()) -> None:
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
    fig.savefig(path)
    plt.close(fig)
