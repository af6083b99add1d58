"""Arguments at the edges of the compiled core's range: each a clear error (or MemoryError),
never an abort of the interpreter, a Rust panic or a search that never returns.

Calls that once aborted or hung run in a subprocess (with a small address space where the
failure was a refused allocation), so a regression fails this test instead of ending pytest."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import zlib

import numpy as np
import pytest

import neardup
from neardup import _core, lsh
from neardup import datasketch_compat as dc
from neardup.errors import InvalidInputError, InvalidParameterError
from neardup.minhash import MinHash, estimate_jaccard
from neardup.shingle import Shingler
from neardup.simhash import SimHash


def run_isolated(code: str, address_space: int | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter (optionally under RLIMIT_AS); its exit code tells a crash."""
    pre = ""
    if address_space is not None:
        pre = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({address_space}, {address_space}))\n"
    return subprocess.run(
        [sys.executable, "-c", pre + textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout
    )


def test_band_keys_with_bands_times_rows_past_64_bits_is_a_parameter_error():
    # 2**32 x 2**32 wrapped to 0 in the core's check, then the key matrix's allocation aborted
    r = run_isolated("""
        import numpy as np
        from neardup import _core
        from neardup.errors import InvalidParameterError
        sig = np.arange(32, dtype=np.uint32).reshape(2, 16)
        for b, r in [(2**32, 2**32), (2**62, 4), (2**63, 2), (2, 2**63)]:
            try:
                _core.band_keys(sig, b, r)
            except InvalidParameterError as e:
                assert "num_perm" in str(e), e
            else:
                raise SystemExit(f"{b} x {r} accepted")
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr[-2000:])


def test_connected_components_of_a_size_the_allocator_refuses_is_a_memory_error():
    r = run_isolated(
        """
        import neardup
        try:
            neardup.connected_components(2**32 - 1, [])
        except MemoryError as e:
            print("MemoryError", e)
    """,
        address_space=3 << 30,
    )
    assert r.returncode == 0 and r.stdout.startswith("MemoryError"), (r.returncode, r.stdout, r.stderr[-2000:])


def test_read_texts_with_a_damaged_length_is_truncated_not_an_allocation():
    # a ~4 GiB length (damaged metadata) was allocated in full before anything was read
    r = run_isolated(
        """
        import os, tempfile, zlib
        import numpy as np
        from neardup import _core
        from neardup.errors import InvalidInputError
        fd, path = tempfile.mkstemp()
        os.write(fd, b"hello world")
        for off, ln in [(0, 2**32 - 1), (2**63, 5), (2**64 - 3, 5), (6, 6)]:
            try:
                _core.read_texts(fd, np.array([0, off], np.uint64), np.array([5, ln], np.uint32),
                                 np.array([zlib.crc32(b"hello"), 0], np.uint32))
            except InvalidInputError as e:
                assert str(e).startswith("truncated") and e.index == 1, (str(e), e.index)
            else:
                raise SystemExit(f"({off}, {ln}) read")
        os.close(fd)
        os.unlink(path)
        print("ok")
    """,
        address_space=3 << 30,
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr[-2000:])


def test_read_texts_reads_up_to_the_end_of_the_file():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "log")
        with open(path, "wb") as f:
            f.write(b"abcdef")
        fd = os.open(path, os.O_RDONLY)
        try:
            got = _core.read_texts(
                fd,
                np.array([0, 3], np.uint64),
                np.array([3, 3], np.uint32),
                np.array([zlib.crc32(b"abc"), zlib.crc32(b"def")], np.uint32),
            )
            assert got == ["abc", "def"]
            with pytest.raises(InvalidInputError, match="^truncated") as e:
                _core.read_texts(fd, np.array([3], np.uint64), np.array([4], np.uint32), np.array([0], np.uint32))
            assert e.value.index == 0
        finally:
            os.close(fd)


def test_core_areas_and_optimisers_refuse_what_never_returned():
    r = run_isolated(
        """
        from neardup import _core
        from neardup.errors import InvalidParameterError
        calls = [lambda: _core.false_positive_area(float("nan"), 4, 4),
                 lambda: _core.false_positive_area(float("inf"), 4, 4),
                 lambda: _core.false_negative_area(-0.5, 4, 4),
                 lambda: _core.false_negative_area(0.5, 0, 4),
                 lambda: _core.params_for_recall(0.5, 10**9, 0.9),
                 lambda: _core.optimal_params(0.5, 10**9, 0.5, 0.5)]
        for i, c in enumerate(calls):
            try:
                c()
            except InvalidParameterError:
                pass
            else:
                raise SystemExit(f"call {i} accepted")
        print("ok")
    """,
        timeout=60,
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr[-2000:])
    # the edges of the range still answer, as the Python wrappers' do
    assert _core.false_positive_area(0.0, 4, 4) == 0.0
    assert _core.false_negative_area(1.0, 4, 4) == 0.0
    assert _core.false_positive_area(0.5, 4, 4) == pytest.approx(lsh.false_positive_area(0.5, 4, 4))


BAD_THREADS = [2**64, 2**31, 0, -1, 1.5, True, np.bool_(True), "2"]


@pytest.mark.parametrize("threads", BAD_THREADS, ids=repr)
def test_every_batch_call_refuses_a_bad_thread_count_with_one_error_class(threads):
    texts = ["a b c", "d e f"]
    m, s = MinHash(16), SimHash()
    calls = [
        lambda: m.signatures(texts, threads=threads),
        lambda: s.fingerprints(texts, threads=threads),
        lambda: Shingler().hashes_batch(texts, threads=threads),
        lambda: lsh.band_keys(m.signatures(texts), 4, 4, threads=threads),
        lambda: _core._exact_keys(texts, threads=threads),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(InvalidParameterError, match="threads") as e:
            call()
        assert type(e.value) is InvalidParameterError, (i, type(e.value))


def test_good_thread_counts_and_numpy_integers_still_work():
    texts = ["a b c d e f g", "a b c d e f h"]
    m = MinHash(16)
    one = m.signatures(texts, threads=1)
    assert np.array_equal(one, m.signatures(texts, threads=np.int64(3)))
    assert np.array_equal(one, m.signatures(texts, threads=None))
    keys, ntok = _core._exact_keys(texts, threads=2)
    assert len(keys) == 2 and ntok.tolist() == [7, 7]


@pytest.mark.parametrize("seed", [1.5, -1, True, 2**32, 2**63, "1"], ids=repr)
def test_to_lean_bytes_refuses_a_seed_datasketch_cannot_use(seed):
    sig = np.arange(1, 17, dtype=np.uint32)
    with pytest.raises(InvalidParameterError, match="seed"):
        dc.to_lean_bytes(sig, seed)


def test_to_lean_bytes_round_trips_the_seed_range():
    sig = np.arange(1, 17, dtype=np.uint32)
    for seed in (0, 1, 2**32 - 1, np.uint32(7)):
        got_seed, got = dc.from_lean_bytes(dc.to_lean_bytes(sig, seed))
        assert got_seed == int(seed) and np.array_equal(got, sig)


def test_estimate_jaccard_checks_1d_signatures_as_2d_ones():
    with pytest.raises(InvalidParameterError, match="uint32"):
        estimate_jaccard(np.array([1, 2], np.uint32), np.array([1.0, 2.5]))
    with pytest.raises(InvalidParameterError, match="uint32"):
        estimate_jaccard(["a", "b"], ["a", "c"])
    with pytest.raises(InvalidParameterError, match="uint32"):
        estimate_jaccard(np.array([-1, 2]), np.array([1, 2]))
    assert estimate_jaccard(np.array([1, 2, 3, 4], np.uint32), np.array([1, 2, 0, 4], np.uint32)) == 0.75
    assert estimate_jaccard([1, 2], [1, 3]) == 0.5  # plain ints in range, as before


def test_from_params_with_no_parameters_says_so():
    with pytest.raises(InvalidParameterError, match="at least one"):
        MinHash.from_params([], [])


def test_shingler_k_limit_is_the_cores():
    assert Shingler(k=65536).k == 65536
    with pytest.raises(InvalidParameterError, match=r"\[1, 65536\]"):
        Shingler(k=65537)
    with pytest.raises(InvalidParameterError, match=r"\[1, 65536\]"):
        Shingler(k=2**32 - 1)
    assert neardup.Shingler is Shingler
