"""The SimHash kernels on their own (no Spark), against the local engine's definition:
candidates = every pair within max_distance bits (Rust ``hamming_candidates``)."""

import numpy as np
import pyarrow as pa
import pytest
from test_kernels import run_grouped

import neardup
from neardup import kernels as K
from neardup.kernels import simhash as S
from neardup.settings import Settings


def fingerprints(seed, n=2000, groups=150, d=3):
    """Random fingerprints with planted groups of near copies (a few bits flipped)."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**63, size=n, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    for g in range(groups):
        base = int(fps[g])
        for c in range(int(rng.integers(1, 6))):
            f = base
            for bit in rng.choice(64, int(rng.integers(0, d + 2)), replace=False):
                f ^= 1 << int(bit)
            fps[groups + g * 6 + c] = f
    return fps


def band_rows(fps, d):
    n = len(fps)
    keys = S.block_keys(fps, d)
    return pa.table(
        {
            "band": pa.array(np.tile(np.arange(d + 1, dtype=np.int32), n)),
            "key": pa.array(keys.reshape(-1).view(np.int64)),
            "pos": pa.array(np.repeat(np.arange(n, dtype=np.int64) + 100, d + 1)),
            "fp": pa.array(np.repeat(fps, d + 1).view(np.int64)),
        }
    )


def test_block_masks_cover_the_64_bits_as_the_rust_core_does():
    for d in (0, 2, 3, 6, 31):
        m = S.block_masks(d)
        assert len(m) == d + 1
        assert int(np.bitwise_or.reduce(m)) == 2**64 - 1
        assert sum(bin(int(x)).count("1") for x in m) == 64


@pytest.mark.parametrize("seed,d", [(0, 3), (1, 6), (2, 0)])
def test_candidates_and_spanning_edges_give_the_local_components(seed, d):
    fps = fingerprints(seed, d=d)
    ref, _ = neardup._core._allpairs_hamming(fps, d, None)
    params = K.KernelParams(settings=Settings(method="simhash", max_distance=d, verify="estimate"))
    members = run_grouped(band_rows(fps, d), ["band", "key"], lambda t: S.simhash_candidates(t, params))
    # each pair within the distance is owned by one bucket: the local engine's count
    assert sum(members.column("ncand").to_pylist()) == len(ref) > 0
    edges = run_grouped(members, ["bid"], lambda t: S.simhash_verify(t, params))
    pairs = np.stack([edges.column("a").to_numpy(), edges.column("b").to_numpy()], axis=1) - 100
    n = len(fps)
    want = neardup.connected_components(n, np.asarray(ref, np.uint32).reshape(-1, 2))
    got = neardup.connected_components(n, pairs.astype(np.uint32))
    assert np.array_equal(np.asarray(got), np.asarray(want))
    # estimate similarity: 1 - distance / 64, as the local engine reports it
    a, b = pairs[:, 0], pairs[:, 1]
    assert np.allclose(edges.column("similarity").to_numpy(), 1 - np.asarray(neardup.hamming(fps[a], fps[b])) / 64)


def test_a_bucket_of_many_copies_is_not_verified_pairwise():
    # 300 fingerprints within 2 bits of each other: 44,850 candidate pairs; each of the 4
    # blocks' buckets emits a spanning tree of the pairs it owns (at most 299 edges each)
    rng = np.random.default_rng(5)
    base = int(rng.integers(0, 2**63))
    fps = np.array([base ^ (1 << int(rng.integers(0, 64))) for _ in range(300)], dtype=np.uint64)
    params = K.KernelParams(settings=Settings(method="simhash", max_distance=3, verify="estimate"))
    members = S.simhash_candidates(band_rows(fps, 3), params)
    ref, _ = neardup._core._allpairs_hamming(fps, 3, None)
    assert sum(members.column("ncand").to_pylist()) == len(ref)
    edges = S.simhash_verify(members, params)
    assert len(ref) == 300 * 299 // 2 and 299 <= edges.num_rows <= 4 * 299
    pairs = np.stack([edges.column("a").to_numpy(), edges.column("b").to_numpy()], axis=1) - 100
    assert len(set(neardup.connected_components(300, pairs.astype(np.uint32)).tolist())) == 1


def test_exact_verification_drops_pairs_below_the_threshold():
    texts = [
        "heavy rain is likely over coastal karnataka and goa today",
        "heavy rain is likely over coastal karnataka and goa today says the met office",
        "the markets closed higher on friday after a quiet week",
    ]
    sh = neardup.SimHash(shingler=neardup.Shingler(k=1, seed=0))
    fps = np.asarray(sh.fingerprints(texts), np.uint64)
    fps[1] = fps[0] ^ np.uint64(2)  # all three candidates by their fingerprints: the texts decide
    fps[2] = fps[0] ^ np.uint64(1)
    params = K.KernelParams(settings=Settings(k=1, method="simhash", max_distance=3, threshold=0.5))
    members = S.simhash_candidates(band_rows(fps, 3), params)
    pos = members.column("pos").to_numpy() - 100
    t = members.append_column("text", pa.array([texts[i] for i in pos.tolist()], pa.large_string()))
    edges = S.simhash_verify(t, params)
    got = {(a - 100, b - 100) for a, b in zip(edges.column("a").to_pylist(), edges.column("b").to_pylist())}
    assert (0, 2) not in got and (1, 2) not in got and (0, 1) in got
    sets = [neardup.Shingler(k=1, seed=0).hashes(x) for x in texts[:2]]
    assert edges.column("similarity").to_pylist()[0] == pytest.approx(neardup.jaccard(*sets))


def test_doc_keys_simhash_are_the_local_fingerprints_and_blocks():
    texts = ["a storm hit the coast", "a storm hit the coast today", "markets rose"]
    t = pa.table(
        {
            "pos": pa.array([1, 2, 3], pa.int64()),
            "text": pa.array(texts, pa.large_string()),
            "error": pa.array([None, None, None], pa.string()),
        }
    )
    params = K.KernelParams(settings=Settings(k=3, method="simhash", max_distance=4))
    out = K.doc_keys(t, params)
    want = neardup.SimHash(shingler=neardup.Shingler(k=3, seed=0)).fingerprints(texts)
    fp = out.column("fp").to_numpy().view(np.uint64)
    assert np.array_equal(fp, np.asarray(want, np.uint64))
    keys = np.array(out.column("bkeys").to_pylist(), dtype=np.int64).view(np.uint64)
    assert np.array_equal(keys, S.block_keys(fp, 4))
