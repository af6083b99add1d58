"""Small helpers shared by the pipeline tests."""

import json
import os


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return str(path)


REUTERS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "reuters21578.jsonl.gz")
