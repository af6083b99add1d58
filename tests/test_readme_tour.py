"""The README's "short tour of the API" runs as printed (a docs audit found it calling
``sh.fingerprint(b)`` with ``b`` the number of bands, and ``texts`` never defined)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_tour_runs_and_says_what_its_comments_say():
    text = README.read_text(encoding="utf-8")
    tour = text.split("## A short tour of the API", 1)[1]
    code = re.search(r"```python\n(.*?)```", tour, re.S).group(1)
    ns: dict = {}
    exec(compile(code, "README.md (tour)", "exec"), ns)  # noqa: S102 - the project's own README
    assert (ns["bands"], ns["rows"]) == (13, 7)  # "13 x 7"
    n = len(ns["texts"])
    assert ns["sigs"].shape == (n, 128) and str(ns["sigs"].dtype) == "uint32"
    assert ns["keys"].shape == (n, 13) and str(ns["keys"].dtype) == "uint64"
    assert ns["pairs"].ndim == 2 and ns["pairs"].shape[1] == 2 and str(ns["pairs"].dtype) == "uint32"
    assert len(ns["labels"]) == n
