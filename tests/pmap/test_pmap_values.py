"""s2s.pmap on the cpu backend, values (devices are threads; S2S_CPU_DEVICES=4 here).

Each collective (psum pmean pmax pmin all_gather ppermute all_to_all pswapaxes axis_index
axis_size) on float arrays of ranks 0, 1, 2, Python scalars and ints, compared with the same
maths written with plain NumPy on the stacked (n, ...) input, on one device, never with
hard-coded numbers.
"""
from __future__ import annotations


import numpy as np
import pytest

import s2s
from cases.pmap_cases import *  # noqa: F401,F403  (N, run, rng, fd_dir, the per-device functions c_*, r_*)
from cases.pmap_cases import four_cpu_devices  # noqa: F401  (the autouse fixture)


# =================================================================================================
# values
# =================================================================================================
REDUCTIONS = [(c_psum, r_psum), (c_pmean, r_pmean), (c_pmax, r_pmax), (c_pmin, r_pmin)]


@pytest.mark.parametrize("shape", [(N,), (N, 3), (N, 2, 3)], ids=["rank0", "rank1", "rank2"])
@pytest.mark.parametrize("fn,ref", REDUCTIONS, ids=lambda v: getattr(v, "__name__", ""))
def test_reductions_float(fn, ref, shape):
    X = rng(1).standard_normal(shape)
    got = run(s2s.pmap(fn, axis_name="i"), X)
    assert got.shape == X.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, ref(X), rtol=1e-14, atol=1e-14)
    # every device holds the same, to the last bit
    for j in range(1, N):
        np.testing.assert_array_equal(got[j], got[0])


@pytest.mark.parametrize("fn,ref", [(c_psum, r_psum), (c_pmax, r_pmax), (c_pmin, r_pmin)],
                         ids=["psum", "pmax", "pmin"])
@pytest.mark.parametrize("shape", [(N,), (N, 5)], ids=["scalar", "rank1"])
def test_reductions_int(fn, ref, shape):
    X = rng(2).integers(-50, 50, size=shape).astype(np.int64)
    got = run(s2s.pmap(fn, axis_name="i"), X)
    np.testing.assert_array_equal(got, ref(X))
    assert got.dtype.kind == "i", got.dtype


def test_pmean_of_ints_is_float():
    X = np.array([[1, 2], [2, 3], [4, 4], [6, 8]], dtype=np.int64)
    got = run(s2s.pmap(c_pmean, axis_name="i"), X)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, r_pmean(X.astype(float)), rtol=1e-15)


def test_psum_of_float32_keeps_precision_of_inputs():
    X = rng(3).standard_normal((N, 3)).astype(np.float32)
    got = s2s.pmap(c_psum, axis_name="i")(X)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, r_psum(X.astype(np.float64)), rtol=1e-6)


def test_psum_of_python_constants_is_the_axis_size():
    X = rng(4).standard_normal((N, 2))
    got = run(s2s.pmap(c_psum_const, axis_name="i"), X)
    np.testing.assert_allclose(got, r_psum_const(X))


def c_count_positive(x):
    return s2s.psum(x > 0.0, "i")


def test_psum_of_bools_counts_the_devices():
    X = rng(3).standard_normal((N, 5))
    got = s2s.pmap(c_count_positive, axis_name="i")(X)
    np.testing.assert_array_equal(got, r_psum((X > 0).astype(np.int64)))


def c_tuple_psum(x):
    a, b = s2s.psum((x, np.sin(x)), "i")
    return a * b


def test_psum_of_a_tuple():
    X = rng(3).standard_normal((N, 3))
    got = run(s2s.pmap(c_tuple_psum, axis_name="i"), X, compiled=False)
    np.testing.assert_allclose(got, r_psum(X) * r_psum(np.sin(X)), rtol=1e-13)


def c_psum_plus_x(x):
    return s2s.psum(x, "i") + x


@pytest.mark.parametrize("layout", ["strided", "fortran", "in_axes1"])
def test_non_contiguous_inputs(layout):
    base = rng(3).standard_normal((N, 10, 3))
    if layout == "strided":
        X = base[:, ::3, 1]
    elif layout == "fortran":
        X = np.asfortranarray(base)
    else:
        X = base
    if layout == "in_axes1":
        got = run(s2s.pmap(c_psum_plus_x, axis_name="i", in_axes=1), np.swapaxes(X, 0, 1))
    else:
        got = run(s2s.pmap(c_psum_plus_x, axis_name="i"), X)
    np.testing.assert_allclose(got, r_psum(X) + X, rtol=1e-14)


GATHERS = [(c_gather, r_gather), (c_gather_tiled, r_gather_tiled)]


@pytest.mark.parametrize("shape", [(N,), (N, 3), (N, 2, 3)], ids=["rank0", "rank1", "rank2"])
@pytest.mark.parametrize("fn,ref", GATHERS, ids=["untiled", "tiled"])
def test_all_gather(fn, ref, shape):
    X = rng(5).standard_normal(shape)
    got = run(s2s.pmap(fn, axis_name="i"), X)
    expected = ref(X)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("shape", [(N, 3), (N, 2, 3)], ids=["rank1", "rank2"])
def test_all_gather_axis1(shape):
    X = rng(6).standard_normal(shape)
    got = run(s2s.pmap(c_gather_ax1, axis_name="i"), X)
    expected = r_gather_ax1(X)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_all_gather_ints():
    X = rng(7).integers(0, 100, size=(N, 3))
    got = run(s2s.pmap(c_gather, axis_name="i"), X)
    np.testing.assert_array_equal(got, r_gather(X))
    assert got.dtype.kind == "i"


@pytest.mark.parametrize("shape", [(N,), (N, 3), (N, 2, 3)], ids=["rank0", "rank1", "rank2"])
@pytest.mark.parametrize("fn,ref", [(c_ring, r_ring), (c_partial, r_partial)], ids=["ring", "partial"])
def test_ppermute(fn, ref, shape):
    X = rng(8).standard_normal(shape) + 3.0          # no zeros: 'receives nothing' must show
    got = run(s2s.pmap(fn, axis_name="i"), X)
    assert got.shape == X.shape
    np.testing.assert_array_equal(got, ref(X))


A2A = [(c_a2a_00, r_a2a_00, (N, N, 3)), (c_a2a_01, r_a2a_01, (N, N, 3)), (c_a2a_10, r_a2a_10, (N, 3, N)),
       (c_a2a_00, r_a2a_00, (N, N)), (c_a2a_tiled_00, r_a2a_tiled_00, (N, 2 * N)),
       (c_a2a_tiled_00, r_a2a_tiled_00, (N, 2 * N, 3)), (c_a2a_tiled_10, r_a2a_tiled_10, (N, 2, 2 * N)),
       (c_pswap0, r_a2a_00, (N, N, 3)), (c_pswap1, r_pswap1, (N, 3, N))]


@pytest.mark.parametrize("fn,ref,shape", A2A,
                         ids=["00", "01", "10", "00-rank1", "tiled00", "tiled00-rank2", "tiled10",
                              "pswap0", "pswap1"])
def test_all_to_all(fn, ref, shape):
    X = rng(9).standard_normal(shape)
    got = run(s2s.pmap(fn, axis_name="i"), X)
    expected = ref(X)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_array_equal(got, expected)


def c_a2a_neg(x):
    return s2s.all_to_all(x, "i", -1, -2)


def test_all_to_all_negative_axes():
    X = rng(9).standard_normal((N, 3, N))
    got = run(s2s.pmap(c_a2a_neg, axis_name="i"), X)
    np.testing.assert_array_equal(got, r_a2a_10(X))


def test_all_to_all_twice_with_axes_swapped_is_the_identity():
    X = rng(10).standard_normal((N, 3, N))
    once = run(s2s.pmap(c_a2a_10, axis_name="i"), X)
    back = run(s2s.pmap(c_a2a_01, axis_name="i"), once)
    np.testing.assert_array_equal(back, X)


@pytest.mark.parametrize("shape", [(N,), (N, 3)], ids=["rank0", "rank1"])
def test_axis_index_and_size(shape):
    X = rng(11).standard_normal(shape)
    got = run(s2s.pmap(c_index, axis_name="i"), X)
    np.testing.assert_allclose(got, r_index(X), rtol=1e-15)


def index_only(x):
    return s2s.axis_index("i")


def index_arith(x):
    return s2s.axis_index("i") * 2 + 1


def test_axis_index_is_an_integer():
    got = run(s2s.pmap(index_only, axis_name="i"), np.zeros((N, 2)))
    np.testing.assert_array_equal(got, np.arange(N))
    assert got.dtype.kind == "i", got.dtype


def test_integer_arithmetic_on_axis_index_stays_integer():
    got = run(s2s.pmap(index_arith, axis_name="i"), np.zeros((N, 2)))
    np.testing.assert_array_equal(got, 2 * np.arange(N) + 1)
    assert got.dtype.kind == "i", got.dtype
