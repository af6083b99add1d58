"""neardup._sets: the sort-based set operations give exactly what NumPy's give."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from neardup import _sets

DTYPES = [np.int64, np.uint64, np.uint32, np.int32]


def _arrays(dtype):
    info = np.iinfo(dtype)
    # few distinct values (many repeats) and the type's extremes both drawn
    elems = st.one_of(st.integers(-3 if info.min < 0 else 0, 3), st.integers(int(info.min), int(info.max)))
    return hnp.arrays(dtype, st.integers(0, 60), elements=elems)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_same_as_numpy(dtype, data):
    a = data.draw(_arrays(dtype))
    b = data.draw(_arrays(dtype))
    u = _sets.unique(a)
    assert u.dtype == np.unique(a).dtype
    np.testing.assert_array_equal(u, np.unique(a))
    np.testing.assert_array_equal(_sets.union(a, b), np.union1d(a, b))
    np.testing.assert_array_equal(_sets.isin(a, b), np.isin(a, b))
    np.testing.assert_array_equal(_sets.isin(b, a), np.isin(b, a))
    n = min(len(a), len(b))
    ru, rv = _sets.unique_rows(a[:n], b[:n])
    want = np.unique(np.stack([a[:n], b[:n]], axis=1), axis=0).reshape(-1, 2)
    np.testing.assert_array_equal(ru, want[:, 0])
    np.testing.assert_array_equal(rv, want[:, 1])


def test_large_arrays_match():
    rng = np.random.default_rng(7)
    a = rng.integers(-(2**62), 2**62, size=200_000, dtype=np.int64)
    a = np.concatenate([a, a[:50_000], [np.iinfo(np.int64).min, np.iinfo(np.int64).max]])
    b = np.concatenate([a[::7], rng.integers(-(2**62), 2**62, size=1000)])
    np.testing.assert_array_equal(_sets.unique(a), np.unique(a))
    np.testing.assert_array_equal(_sets.union(a, b), np.union1d(a, b))
    np.testing.assert_array_equal(_sets.isin(b, a), np.isin(b, a))


def test_floats_refused():
    # np.unique's NaN rules are not reproduced: a float array is a caller's mistake here
    with pytest.raises(TypeError, match="integer array expected"):
        _sets.unique(np.array([1.0, np.nan]))
