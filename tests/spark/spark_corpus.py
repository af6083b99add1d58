"""A small synthetic corpus in the guide's mix (originals of random words; copies in thirds:
spacing/case only, light edits, heavy edits), for the engine-parity tests."""

from __future__ import annotations

import json
import os

import numpy as np

REUTERS = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "reuters21578.jsonl.gz")
)
if not os.path.exists(REUTERS):
    REUTERS = os.path.normpath(os.path.join(os.getcwd(), "..", "shared", "data", "reuters21578.jsonl.gz"))


def make_corpus(originals=600, copies=150, words=120, seed=0) -> list[dict]:
    rng = np.random.default_rng(seed)
    vocab = np.array(
        [f"{a}{b}" for a in ("ka", "ra", "mo", "su", "ve", "li", "do", "pe", "ta", "gu") for b in range(300)]
    )
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    docs = []
    bodies = []
    for i in range(originals):
        w = list(rng.choice(vocab, words, p=p))
        bodies.append(w)
        docs.append(
            {
                "id": f"o{i}",
                "text": " ".join(w),
                "published_at": 1_700_000_000 + int(rng.integers(0, 10**6)),
                "source": "agency" if rng.random() < 0.5 else f"site-{int(rng.integers(0, 30))}",
                "original_id": None,
            }
        )
    for j in range(copies):
        o = int(rng.integers(0, originals))
        w = list(bodies[o])
        kind = ("spacing", "light", "heavy")[j % 3]
        if kind == "spacing":
            text = "  ".join(x.upper() if rng.random() < 0.2 else x for x in w) + "\n"
        else:
            n = int(rng.integers(1, 9)) if kind == "light" else int(rng.integers(12, 30))
            for at in rng.choice(len(w), n, replace=False):
                w[at] = str(rng.choice(vocab))
            text = " ".join(w)
        docs.append(
            {
                "id": f"c{j}",
                "text": text,
                "published_at": 1_700_000_000 + int(rng.integers(0, 10**6)),
                "source": f"site-{int(rng.integers(0, 30))}",
                "original_id": f"o{o}",
                "copy_kind": kind,
            }
        )
    order = rng.permutation(len(docs))
    return [docs[i] for i in order]


def write_jsonl(path, docs) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    return str(path)


def synth_parquet(synth_file, tmp_path) -> str:
    """The synthetic JSONL corpus as Parquet (small row groups: several input splits)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(synth_file) as f:
        rows = [json.loads(x) for x in f]
    for r in rows:
        r.setdefault("copy_kind", None)
    path = str(tmp_path / "synth.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=200)
    return path


def tree(d, inodes: bool = False) -> dict:
    """Every directory and file under `d`: a file's bytes and modification time (and, with
    `inodes`, its inode: a file rewritten in place or replaced by a copy shows)."""
    out = {}
    for root, _dirs, files in os.walk(d):
        out[os.path.relpath(root, d) + "/"] = None
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                st = os.stat(p)
                out[os.path.relpath(p, d)] = (fh.read(), st.st_mtime_ns) + ((st.st_ino,) if inodes else ())
    return out
