"""b-bit signatures (16 bits per MinHash value) for indexes without texts."""

import sqlite3

import ix_helpers as h
import numpy as np
import pytest

import neardup
from neardup.index import Index, IndexConfigError


def test_16_bit_signatures_halve_the_bytes_and_keep_the_clusters(tmp_path, corpus):
    ref = neardup.dedup(corpus, None, verify="estimate")
    with Index.create(tmp_path / "ix", verify="estimate", store_text=False, signature_bits=16) as ix:
        for day in h.days(corpus, 3):
            ix.add(day)
        rows = list(ix.clusters())
        full = ix.signer.batch([corpus[0]["text"]])[0]  # the pipeline's 32-bit signature
    # on this corpus no pair's estimate moves across the threshold (the difference, when there
    # is one, is 1/128 for ~0.2% of pairs)
    assert h.cluster_sets(rows) == h.cluster_sets(ref.clusters)
    con = sqlite3.connect(tmp_path / "ix" / "index.sqlite")
    assert {r[0] for r in con.execute("SELECT length(signature) FROM documents")} == {256}
    blob = con.execute("SELECT signature FROM documents WHERE id = ?", (corpus[0]["id"],)).fetchone()[0]
    assert np.array_equal(np.frombuffer(blob, "<u2"), (full & 0xFFFF).astype(np.uint16))


def test_signature_bits_checked(tmp_path):
    with pytest.raises(neardup.InvalidParameterError, match="signature_bits must be 16 or 32"):
        Index.create(tmp_path / "a", verify="estimate", store_text=False, signature_bits=8)
    with pytest.raises(neardup.InvalidParameterError, match="applies to verify='estimate'"):
        Index.create(tmp_path / "b", signature_bits=16)
    Index.create(tmp_path / "c", verify="estimate", store_text=False, signature_bits=16).close()
    with pytest.raises(IndexConfigError, match="signature_bits"):
        Index.open(tmp_path / "c", signature_bits=32)
