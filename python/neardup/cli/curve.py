"""``neardup curve``: print (and plot) the LSH S-curve for a threshold."""

from __future__ import annotations

import argparse
from typing import Any

from neardup.cli import settings_args
from neardup.cli.exits import EXIT_OK

#: `curve` compares with datasketch's optimiser up to this many permutations.
CURVE_OPTIMISER_MAX = 8192


def register(sub: Any) -> None:
    p = sub.add_parser("curve", help="print (and plot) the LSH S-curve for a threshold")
    settings_args.add_settings(p, ("threshold", "num_perm", "recall", "bands", "rows"))
    p.add_argument("--png", metavar="FILE", help="also draw the curve to this PNG (needs matplotlib)")


def run(a: argparse.Namespace) -> int:
    from neardup import lsh
    from neardup.settings import Settings

    # the settings as dedup checks them, before anything is printed (--bands without --rows was
    # ignored but labelled "pinned")
    settings = Settings(**settings_args.values_from_args(a, ("threshold", "num_perm", "recall", "bands", "rows")))
    png = None
    if a.png:  # as eval's --png: DIR/ gets curve.png, a name without an extension .png; checked first
        from neardup.evaluate.plot import png_path

        png = png_path(a.png, "curve.png")
    b, r = settings.band_shape()
    how = "pinned" if a.bands is not None else f"fewest candidates with P >= {a.recall} at the threshold"
    print(f"threshold {a.threshold}, num_perm {a.num_perm}: {b} bands x {r} rows ({how})")
    others = []
    if a.num_perm > CURVE_OPTIMISER_MAX:
        print(
            f"(datasketch's optimiser left out above num_perm {CURVE_OPTIMISER_MAX:,}: it integrates every "
            f"split, 5 s at 8,192 and minutes past that)"
        )
    else:
        try:
            db, dr = lsh.optimal_params(a.threshold, a.num_perm)
            others.append(("datasketch default", int(db), int(dr)))
        except Exception as exc:  # noqa: BLE001 - datasketch's optimiser has no answer for some inputs (threshold 1)
            print(f"(datasketch's optimiser: {exc})")
    cols = [(f"{b}x{r}", b, r)] + [(f"{n} {bb}x{rr}", bb, rr) for n, bb, rr in others]
    print(f"{'s':>5}  " + "  ".join(f"{c[0]:>24}" for c in cols))
    for s in [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]:
        mark = " <- threshold" if abs(s - a.threshold) < 1e-9 else ""
        vals = "  ".join(f"{float(lsh.candidate_probability(s, bb, rr)):>24.4f}" for _, bb, rr in cols)
        print(f"{s:>5.2f}  {vals}{mark}")
    p_at = float(lsh.candidate_probability(a.threshold, b, r))
    print(f"P(candidate) at the threshold {a.threshold}: {p_at:.4f}")
    if png:
        from neardup.evaluate.plot import curve_png

        curve_png(b, r, a.threshold, png, others)
        print(f"wrote {png}")
    return EXIT_OK
