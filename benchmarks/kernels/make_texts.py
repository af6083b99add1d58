"""Write the synthetic corpus's texts one per line (whitespace runs folded) for the Rust microbenchmark."""

import sys

from neardup import synth

path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/texts.txt"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
with open(path, "w") as f:
    for r in synth.generate(originals=n, copies=n // 5, words=300, seed=0):
        f.write(" ".join(r["text"].split()) + "\n")
print(path)
