"""The Numba backends' vectorizable float64 kernels (s2s/ops/elementwise/numba_vecmath.py).

Accuracy is measured in ulps against a long-double reference (80-bit on x86-64),
special values against NumPy bit for bit; then the lowering: np.exp / np.tanh /
np.sin / np.cos in jitted code run the kernels, fused loops rerun with the C
library when an argument is beyond the trig kernels' range, and results still
equal the unjitted ones.
"""
from __future__ import annotations

import numba
import numpy as np
import pytest

import s2s
from s2s import runtime as rt
from s2s.ops.elementwise import numba_vecmath as vecmath

LONG_DOUBLE_IS_WIDER = np.finfo(np.longdouble).nmant > 52
needs_long_double = pytest.mark.skipif(not LONG_DOUBLE_IS_WIDER, reason="needs an 80/128-bit long double")


def _map(kernel):
    @numba.njit
    def run(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = kernel(x[i])
        return out
    return run


KERNELS = {
    "exp": (_map(vecmath.exp_f64), np.exp, 1.0),
    "tanh": (_map(vecmath.tanh_f64), np.tanh, 3.0),
    "log": (_map(vecmath.log_f64), np.log, 1.0),
    "sin": (_map(vecmath.sin_f64), np.sin, 1.0),
    "cos": (_map(vecmath.cos_f64), np.cos, 1.0),
}

RANGES = {
    "exp": [(-1.0, 1.0), (-50.0, 50.0), (-745.0, 709.7), (-1e-8, 1e-8)],
    "tanh": [(-0.5, 0.5), (-3.0, 3.0), (-25.0, 25.0), (-1e-6, 1e-6)],
    "log": [(0.5, 2.0), (0.9, 1.1), (1.0 - 1e-6, 1.0 + 1e-6), (0.0, 1e4), (1e-310, 1e-300)],
    "sin": [(-1.0, 1.0), (-10.0, 10.0), (-1e5, 1e5), (-vecmath.TRIG_MAX, vecmath.TRIG_MAX), (-1e-8, 1e-8)],
    "cos": [(-1.0, 1.0), (-10.0, 10.0), (-1e5, 1e5), (-vecmath.TRIG_MAX, vecmath.TRIG_MAX), (-1e-8, 1e-8)],
}


def _ulps(got: np.ndarray, ref: np.ndarray) -> float:
    """Largest error in units of the last place of the float64 reference (finite references)."""
    ref64 = ref.astype(np.float64)
    finite = np.isfinite(ref64) & (ref64 != 0)
    spacing = np.spacing(np.abs(ref64[finite])).astype(np.longdouble)
    return float(np.max(np.abs(got[finite].astype(np.longdouble) - ref[finite]) / spacing))


@needs_long_double
@pytest.mark.parametrize("fn", list(KERNELS))
def test_kernel_accuracy_in_ulps(fn):
    kernel, ufunc, bound = KERNELS[fn]
    rng = np.random.default_rng(11)
    for lo, hi in RANGES[fn]:
        x = rng.uniform(lo, hi, 200_000)
        if fn == "log":     # and every binade, subnormals too
            x = np.concatenate([x, np.exp(rng.uniform(np.log(5e-324), np.log(1.7e308), 200_000))])
        ref = ufunc(x.astype(np.longdouble))
        err = _ulps(kernel(x), ref)
        assert err <= bound, f"{fn} on [{lo}, {hi}]: {err:.3f} ulp (bound {bound})"


@needs_long_double
@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_trig_near_multiples_of_half_pi(fn):
    """Where x - k*pi/2 cancels: the reduction carries pi/2 to 152 bits."""
    kernel, ufunc, _ = KERNELS[fn]
    k = np.arange(-600_000, 600_000, 997).astype(np.float64)
    base = k * (np.pi / 2)
    x = np.concatenate([base, np.nextafter(base, np.inf), np.nextafter(base, -np.inf)])
    x = x[np.abs(x) <= vecmath.TRIG_MAX]
    ref = ufunc(x.astype(np.longdouble))
    # long double carries 64 bits of pi/2: where the true result is tiny, compare absolutely
    got = kernel(x)
    big = np.abs(ref) > 1e-3
    assert _ulps(got[big], ref[big]) <= 1.0
    assert np.max(np.abs(got[~big] - ref[~big].astype(np.float64))) < 1e-15


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                     1.0, -1.0, 709.78, 709.79, -708.5, -740.0, -745.1, -745.2, 800.0, -800.0, 19.0, 21.0,
                     -21.0, np.pi, -np.pi / 2, 3 * np.pi / 2])


@pytest.mark.parametrize("fn", list(KERNELS))
def test_special_values_match_numpy(fn):
    kernel, ufunc, bound = KERNELS[fn]
    x = SPECIALS
    if fn in ("sin", "cos"):
        x = x[~np.isinf(x)]        # the kernels' callers send inf (|x| > TRIG_MAX) to np.sin/np.cos
    with np.errstate(all="ignore"):
        ref = ufunc(x)
    got = kernel(x)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(ref[ok])), "signs (of zeros, too) differ"
    assert np.array_equal(np.isinf(got[ok]), np.isinf(ref[ok]))
    np.testing.assert_allclose(got[ok], ref[ok], rtol=4e-16 * bound, atol=0)


@numba.njit
def _fast_all(x):
    return rt.fast_exp(x), rt.fast_tanh(x), rt.fast_sin(x), rt.fast_cos(x), rt.fast_log(x)


def _numpy_all(x):
    with np.errstate(all="ignore"):
        return np.exp(x), np.tanh(x), np.sin(x), np.cos(x), np.log(x)


@pytest.mark.parametrize("x", [
    pytest.param(np.linspace(-4.0, 4.0, 37), id="vector"),
    pytest.param(np.linspace(-4.0, 4.0, 36).reshape(4, 9).T, id="transposed matrix"),
    pytest.param(np.linspace(-4.0, 4.0, 40)[::3], id="strided"),
    pytest.param(np.array([0.3, 2e6, -np.inf, np.nan, -3e7, 1.0]), id="beyond the trig range"),
    pytest.param(0.7, id="float"),
    pytest.param(-3e6, id="float beyond the trig range"),
])
def test_fast_helpers_on_float64(x):
    got = _fast_all(x)
    for g, e, fn in zip(got, _numpy_all(x), ("exp", "tanh", "sin", "cos", "log")):
        assert np.shape(g) == np.shape(e), fn
        np.testing.assert_allclose(g, e, rtol=1e-15, atol=0, err_msg=fn)     # (nan where NumPy's is)


@pytest.mark.parametrize("x", [
    pytest.param(np.linspace(-2.0, 2.0, 9, dtype=np.float32), id="float32"),
    pytest.param(np.arange(-3, 4), id="int64"),
    pytest.param(np.array([0.5 + 1j, -1.0 - 0.25j]), id="complex128"),
    pytest.param(3, id="int"),
])
def test_fast_helpers_fall_back_to_numpy(x):
    """Other dtypes are NumPy's (Numba's) ufuncs: same dtype, same values."""
    for g, e in zip(_fast_all(x), _numpy_all(x)):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(g, e, rtol=1e-6 if np.asarray(e).dtype == np.float32 else 1e-15)


# ----- the lowering --------------------------------------------------------------------

def trig_chain(x):
    return np.sum(np.sin(x) * x**2 + np.exp(-x * x) + np.cos(x) * np.tanh(x))


def trig_chain_grad(x):
    return (np.cos(x) * x**2 + 2 * x * np.sin(x) - 2 * x * np.exp(-x * x)
            - np.sin(x) * np.tanh(x) + np.cos(x) * (1 - np.tanh(x) ** 2))


def log_loss(y):
    return np.sum(np.log(y) * y) + np.sum(np.log(y + 1.0))


def test_fused_loop_runs_the_kernels():
    j = s2s.jit(s2s.grad(trig_chain))
    x = np.linspace(-3.0, 3.0, 101)
    src = j.generated_for_args(x).source
    assert "sin_f64(" in src and "cos_f64(" in src and "fast_exp(" in src and "fast_tanh(" in src
    assert "trig_uncovered(" in src
    np.testing.assert_allclose(j(x), trig_chain_grad(x), rtol=1e-13, atol=1e-14)
    # np.log as its kernel, in a fused loop and on an array; 0 and negatives as NumPy's
    lj = s2s.jit(s2s.value_and_grad(log_loss))
    y = np.concatenate([np.linspace(0.01, 30.0, 97), [0.0, -1.0, np.inf]])
    assert "fast_log(" in lj.generated_for_args(y).source
    with np.errstate(all="ignore"):
        got, want = lj(y), s2s.value_and_grad(log_loss)(y)
    assert got[0] == pytest.approx(want[0], rel=1e-14) or (np.isnan(got[0]) and np.isnan(want[0]))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-14)
    # the Python backend's source keeps NumPy's names
    assert "fast_" not in s2s.grad(trig_chain).source and "sin_f64" not in s2s.grad(trig_chain).source


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_fused_loop_reruns_beyond_the_trig_range(target):
    """Arguments the kernels do not cover (|x| > 2**20, inf) make the fused loop run again with
    np.sin/np.cos; sums restart from their initial values."""
    j = s2s.jit(s2s.grad(trig_chain), target=target)
    x = np.linspace(-3.0, 3.0, 64)
    x[[5, 40]] = [3.5e6, -2.0**21]
    expected = trig_chain_grad(x)
    np.testing.assert_allclose(j(x), expected, rtol=1e-12, atol=1e-12)
    x[7] = np.inf
    with np.errstate(all="ignore"):
        got, ref = j(x), s2s.grad(trig_chain)(x)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got[~np.isnan(ref)], ref[~np.isnan(ref)], rtol=1e-12, atol=1e-12)


def summed_sines(x, y):
    return np.sum(np.sin(x) * y) + np.sum(np.cos(x * y))


def test_rerun_restarts_the_fused_sums():
    """Forward sums inside a fused loop (value_and_grad keeps the value): a rerun must not add twice."""
    x = np.linspace(-2.0, 2.0, 50)
    y = np.linspace(0.5, 1.5, 50)
    x[3] = 5e6
    j = s2s.jit(s2s.value_and_grad(summed_sines, argnums=(0, 1)))
    value, (gx, gy) = j(x, y)
    ref_value, (rx, ry) = s2s.value_and_grad(summed_sines, argnums=(0, 1))(x, y)
    assert value == pytest.approx(ref_value, rel=1e-13)
    np.testing.assert_allclose(gx, rx, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(gy, ry, rtol=1e-12, atol=1e-13)


def test_parallel_fused_loop_is_a_prange():
    j = s2s.jit(s2s.grad(trig_chain), target="parallel")
    x = np.linspace(-3.0, 3.0, 1000)
    assert "in prange(" in j.generated_for_args(x).source
    np.testing.assert_allclose(j(x), trig_chain_grad(x), rtol=1e-13, atol=1e-14)
    # the default target: a serial loop, and a prange twin it switches to past PARALLEL_MIN
    # elements (tests/jit/test_parallel_twins.py)
    assert "parallel_worth(" not in j.generated_for_args(x).source
    default = s2s.jit(s2s.grad(trig_chain))
    assert "prange" not in default.generated_for_args(x).source
    twins = s2s.jit(s2s.grad(trig_chain))
    twins.twins = True          # (the version it compiles for calls past the switch)
    assert "if parallel_worth(" in twins.generated_for_args(x).source
