"""MinHash: schemes, batch forms, threads, statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup

from .conftest import RAIN_BASE, X, Y

SCHEMES = ["multiply-shift", "datasketch-affine32", "oph"]


def random_pair(rng: np.random.Generator, n: int, shared: int) -> tuple[np.ndarray, np.ndarray]:
    common = rng.integers(0, 2**32, size=shared, dtype=np.uint64)  # 32-bit: valid for every scheme
    a = np.unique(np.concatenate([common, rng.integers(0, 2**32, size=n - shared, dtype=np.uint64)]))
    b = np.unique(np.concatenate([common, rng.integers(0, 2**32, size=n - shared, dtype=np.uint64)]))
    return a, b


@pytest.mark.parametrize("scheme", SCHEMES)
def test_shapes_and_dtypes(scheme: str) -> None:
    mh = neardup.MinHash(num_perm=64, scheme=scheme)
    sig = mh.signature(RAIN_BASE)
    assert sig.shape == (64,) and sig.dtype == np.uint32
    sigs = mh.signatures([RAIN_BASE, X, Y])
    assert sigs.shape == (3, 64) and sigs.dtype == np.uint32
    assert np.array_equal(sigs[0], sig)
    assert mh.signatures([]).shape == (0, 64)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_empty_text_is_all_max(scheme: str) -> None:
    sig = neardup.MinHash(num_perm=16, scheme=scheme).signature("  ... ")
    assert np.all(sig == np.uint32(0xFFFFFFFF))


def test_parameters_readable() -> None:
    mh = neardup.MinHash(num_perm=32, seed=9)
    assert mh.a.dtype == np.uint64 and mh.a.shape == (32,) and np.all(mh.a % 2 == 1)
    assert mh.b.shape == (32,)
    assert neardup.MinHash(scheme="oph").a is None
    assert neardup.MinHash(seed=1).num_perm == 128 and neardup.MinHash(seed=1).seed == 1


def test_seeds_differ_and_repeat() -> None:
    a = neardup.MinHash(seed=1).signature(RAIN_BASE)
    assert np.array_equal(a, neardup.MinHash(seed=1).signature(RAIN_BASE))
    assert not np.array_equal(a, neardup.MinHash(seed=2).signature(RAIN_BASE))


@pytest.mark.parametrize("scheme", ["multiply-shift", "oph"])
def test_text_path_equals_hash_path(scheme: str) -> None:
    mh = neardup.MinHash(scheme=scheme)
    assert np.array_equal(mh.signature(RAIN_BASE), mh.signature_from_hashes(mh.shingler.hashes(RAIN_BASE)))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=2**32 - 1), min_size=1, max_size=200),
    st.randoms(use_true_random=False),
    st.sampled_from(SCHEMES),
)
def test_set_semantics(ids: list[int], rnd, scheme: str) -> None:  # noqa: ANN001
    """Order and repetition of shingles do not change a signature."""
    mh = neardup.MinHash(num_perm=64, scheme=scheme)
    shuffled = ids + ids[: len(ids) // 2]
    rnd.shuffle(shuffled)
    assert np.array_equal(mh.signature_from_hashes(ids), mh.signature_from_hashes(shuffled))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=40), st.sampled_from(SCHEMES))
def test_thread_count_invariance(texts: list[str], scheme: str) -> None:
    texts = [t for t in texts if _encodable(t)]
    mh = neardup.MinHash(num_perm=32, scheme=scheme, shingler=neardup.Shingler(k=2))
    one = mh.signatures(texts, threads=1)
    assert np.array_equal(one, mh.signatures(texts, threads=2))
    assert np.array_equal(one, mh.signatures(texts, threads=3))
    assert np.array_equal(one, mh.signatures(texts))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.text(max_size=80), max_size=40),
    st.sampled_from(SCHEMES),
    st.sampled_from(["word", "char", "whitespace"]),
    st.booleans(),
)
def test_keyed_signatures_are_signatures_plus_exact_keys(texts: list[str], scheme: str, unit: str, stop: bool) -> None:
    # the index's intake signs and keys every text in one pass; it must give what the two
    # separate calls give, for any text, unit and stop-word list
    from neardup import _core

    texts = [t for t in texts if _encodable(t)] + ["Heavy RAIN over  Karnataka.", "", "!!", "Straße ﬁnance"]
    sh = neardup.Shingler(k=3, unit=unit, stopwords=["the", "over"] if stop and unit != "char" else None)
    mh = neardup.MinHash(num_perm=32, scheme=scheme, shingler=sh)
    sigs, keys, ntok = mh._signatures_keyed(texts, threads=2)
    want_keys, want_ntok = _core._exact_keys(texts, None, unit)  # (the keys of the shingles' own unit)
    assert np.array_equal(sigs, mh.signatures(texts))
    assert np.array_equal(keys, want_keys) and np.array_equal(ntok, want_ntok)


@pytest.mark.parametrize("chunks", [1, 3])
def test_keyed_signatures_of_arrow_strings_are_those_of_the_list(chunks: int) -> None:
    # dedup's Spark kernel (doc_keys) hands the texts as Arrow strings, read in place
    pa = pytest.importorskip("pyarrow")
    texts = ["Heavy RAIN over  Karnataka.", "", "!!", "Straße ﬁnance", "the cat sat on the mat"] * 3
    mh = neardup.MinHash(num_perm=32, shingler=neardup.Shingler(k=2))
    want = mh._signatures_keyed(texts, threads=2)
    step = -(-len(texts) // chunks)
    arr = pa.chunked_array([texts[i : i + step] for i in range(0, len(texts), step)], pa.string())
    for a in (arr, arr.combine_chunks(), arr.cast(pa.large_string())):
        got = mh._signatures_keyed(a, threads=2)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    empty = mh._signatures_keyed(pa.array([], pa.string()))
    assert empty[0].shape == (0, 32) and len(empty[1]) == len(empty[2]) == 0
    with pytest.raises(neardup.InvalidInputError, match="item 1: text is null"):
        mh._signatures_keyed(pa.array(["a b c", None], pa.string()))


def _encodable(t: str) -> bool:
    try:
        t.encode()
        return True
    except UnicodeEncodeError:
        return False


@pytest.mark.parametrize("scheme", ["multiply-shift", "oph", "datasketch-affine32"])
@pytest.mark.parametrize(("n", "shared"), [(300, 240), (150, 90), (100, 30)])
def test_estimator_unbiased_with_binomial_variance(scheme: str, n: int, shared: int) -> None:
    """Mean error within 3 standard errors over many seeds; variance near J(1-J)/k."""
    rng = np.random.default_rng(n + shared)
    a, b = random_pair(rng, n, shared)
    j = neardup.jaccard(a, b)
    k, trials = 128, 300
    ests = np.array(
        [
            neardup.estimate_jaccard(m.signature_from_hashes(a), m.signature_from_hashes(b))
            for m in (neardup.MinHash(num_perm=k, seed=s, scheme=scheme) for s in range(trials))
        ]
    )
    se = ests.std(ddof=1) / np.sqrt(trials)
    assert abs(ests.mean() - j) < 3 * se + 1e-12
    ideal = j * (1 - j) / k
    # The sample variance of 300 draws is within ~±16% of the truth (3 sigma); the
    # schemes must be at most 10% worse than classic MinHash's binomial variance.
    assert 0.7 * ideal < ests.var(ddof=1) < 1.1**2 * ideal * 1.2


def test_oph_spread_close_to_classic_on_100_shingles() -> None:
    """The fast scheme's standard error at 128 slots is within 10% of classic MinHash."""
    rng = np.random.default_rng(11)
    sds = {}
    for scheme in ("multiply-shift", "oph"):
        errs = []
        for pair in range(40):
            a, b = random_pair(rng, 100 + pair, 60)
            j = neardup.jaccard(a, b)
            for s in range(50):
                m = neardup.MinHash(num_perm=128, seed=1000 * pair + s, scheme=scheme)
                errs.append(neardup.estimate_jaccard(m.signature_from_hashes(a), m.signature_from_hashes(b)) - j)
        sds[scheme] = float(np.std(errs))
    assert sds["oph"] <= 1.10 * sds["multiply-shift"], sds


def test_estimate_jaccard_rows() -> None:
    mh = neardup.MinHash()
    s1 = mh.signatures([X, RAIN_BASE])
    s2 = mh.signatures([Y, RAIN_BASE])
    est = neardup.estimate_jaccard(s1, s2)
    assert est.shape == (2,) and est[1] == 1.0
    assert est[0] == neardup.estimate_jaccard(s1[0], s2[0])


def test_arrow_strings_zero_copy_path() -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow is an optional dependency")
    texts = [RAIN_BASE, X, "", "ಕರಾವಳಿ ಕರ್ನಾಟಕ"]
    mh = neardup.MinHash()
    expected = mh.signatures(texts)
    assert np.array_equal(mh.signatures(pa.array(texts)), expected)
    assert np.array_equal(mh.signatures(pa.array(texts, type=pa.large_string())), expected)
    assert np.array_equal(mh.signatures(pa.array(texts).slice(1, 2)), expected[1:3])
    chunked = pa.chunked_array([texts[:2], texts[2:]])
    assert np.array_equal(mh.signatures(chunked), expected)
    with pytest.raises(neardup.InvalidInputError, match="item 1: text is null"):
        mh.signatures(pa.array(["a", None]))
    with pytest.raises(neardup.InputTypeError):
        mh.signatures(pa.array([1, 2]))


def test_signature_from_hashes_reads_a_list_of_ids_past_2_63():
    """Shingler.hashes(...).tolist() mixes ids below and above 2^63: NumPy read the list as
    float64 and it was refused ("hashes must be integers")."""
    h = neardup.Shingler().hashes("the quick brown fox jumps over the lazy dog")
    assert (h >= 2**63).any() and (h < 2**63).any()
    mh = neardup.MinHash(16)
    assert np.array_equal(mh.signature_from_hashes(h.tolist()), mh.signature_from_hashes(h))
    with pytest.raises(neardup.InvalidParameterError):
        mh.signature_from_hashes([1.5, 2.5])


def test_estimate_jaccard_rows_check_their_values_as_one_row_does():
    """2-D signatures were cast to uint32: [[2**32 + 1]] agreed with [[1]], floats too."""
    for a, b in (([[2**32 + 1]], [[1]]), ([[1.5]], [[1.2]]), ([[-1]], [[2**32 - 1]])):
        with pytest.raises(neardup.InvalidParameterError, match="uint32"):
            neardup.estimate_jaccard(np.array(a), np.array(b))
    with pytest.raises(neardup.InvalidParameterError, match="empty"):
        neardup.estimate_jaccard(np.zeros((3, 0), np.uint32), np.zeros((3, 0), np.uint32))
    assert neardup.estimate_jaccard(np.array([[1, 2]], np.uint32), np.array([[1, 3]], np.uint32)).tolist() == [0.5]


def test_threads_are_bounded_and_pools_not_kept_for_every_size():
    """threads=10**6 started threads until the machine gave out; a loop over threads=1..100
    kept 5,000 threads alive."""
    import os

    s = neardup.Shingler()
    with pytest.raises(neardup.InvalidParameterError, match="threads must be an integer in 1..=1024"):
        s.hashes_batch(["a b"], threads=10**6)
    before = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None
    for t in range(20, 60):
        s.hashes_batch(["a b c d e f"], threads=t)
    if before is not None:
        assert len(os.listdir("/proc/self/task")) - before < 8 * 60  # at most 8 pools kept


def test_schemes_pickle_copy_and_compare_by_their_settings():
    """Shingler, MinHash and SimHash could not be pickled (multiprocessing sends them to its
    workers) and MinHash(16) != MinHash(16)."""
    import copy
    import pickle

    t = "the quick brown fox jumps over the lazy dog"
    objs = [
        neardup.Shingler(k=3, stopwords="english"),
        neardup.MinHash(16),
        neardup.MinHash(16, scheme="oph", seed=7),
        neardup.MinHash(8, scheme="datasketch-affine32"),
        neardup.MinHash.from_params([1, 3], [0, 5]),
        neardup.SimHash(),
    ]
    for o in objs:
        for back in (pickle.loads(pickle.dumps(o)), copy.deepcopy(o), copy.copy(o)):
            assert back == o and hash(back) == hash(o)
            if isinstance(o, neardup.MinHash):
                assert np.array_equal(back.signature(t), o.signature(t))
            elif isinstance(o, neardup.SimHash):
                assert back.fingerprint(t) == o.fingerprint(t)
            else:
                assert np.array_equal(back.hashes(t), o.hashes(t))
    assert neardup.MinHash(16) == neardup.MinHash(16) != neardup.MinHash(16, seed=2)
