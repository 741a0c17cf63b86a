"""One small function per op (or op variant) for the op sweep (tests/test_op_sweep.py).

Every case function is defined at module level so s2s can read its source, and
returns a scalar: the op's output weighted by a fixed random array `W...`
(so gradients are not all ones), summed.  Each `Case` says how to make inputs
(float64, broadcast shapes where the op broadcasts, away from kinks and
singularities) and what to expect of second derivatives.

Nothing here imports s2s: the functions run under plain NumPy.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np
import scipy.special as sp

# ---------------------------------------------------------------------------
# Fixed weights
# ---------------------------------------------------------------------------
_R = np.random.default_rng(20240611)
W = _R.standard_normal((3, 4))
W4 = _R.standard_normal(4)
W3 = _R.standard_normal(3)
W33 = _R.standard_normal((3, 3))
W43 = _R.standard_normal((4, 3))
W35 = _R.standard_normal((3, 5))
W234 = _R.standard_normal((2, 3, 4))
W235 = _R.standard_normal((2, 3, 5))
W24 = _R.standard_normal((2, 4))
W12 = _R.standard_normal(12)
W32 = _R.standard_normal((3, 2))
W34x2 = _R.standard_normal((3, 4, 2))
W68 = _R.standard_normal((6, 8))
W64 = _R.standard_normal((6, 4))
W38 = _R.standard_normal((3, 8))
W42 = _R.standard_normal((4, 2))
W56 = _R.standard_normal((5, 6))
# Derived weights (s2s reads array methods on local values only)
K0 = W3.reshape(1, 3, 1)
K1 = W4.reshape(1, 4)
K2 = W12.reshape(2, 6)
K3 = W12.reshape(6, 2)
K4 = W234.transpose(2, 0, 1)
K5 = W234.transpose(1, 0, 2)
K6 = W234.swapaxes(1, 2)
K7 = W234.transpose(1, 2, 0)[:, :, :1]
K8 = W234.transpose(1, 2, 0)
K9 = W.reshape(3, 1, 4)
K10 = W.reshape(1, 3, 4, 1)
K11 = W.reshape(3, 4, 1)
K12 = W.reshape(2, 6)[0]
K13 = W12.repeat(2)
K14 = W.repeat(np.array([1, 0, 2, 3]), axis=1)[:, :6]
K15 = W4.repeat(np.array([1, 0, 2, 3]))[:6]
K16 = W.repeat(2, axis=0)[:5]
K17 = W.ravel()[:8]
K18 = W.repeat(2)[:20]
K19 = W.repeat(2, axis=1)[:, :6]
K20 = W.repeat(2, axis=0)[:4]
K21 = W3.reshape(3, 1, 1)
K22 = W3.reshape(3, 1)
MASK = _R.uniform(size=(3, 4)) < 0.5
IDX = np.array([2, 0, 3, 3, 1])
IDX2 = np.array([[0, 2], [1, 1], [3, 0]])
REPS = np.array([1, 0, 2, 3])


# ---------------------------------------------------------------------------
# Input helpers (not under test)
# ---------------------------------------------------------------------------

def _u(rng, lo, hi, shape=(3, 4)):
    return rng.uniform(lo, hi, size=shape)


def _nz(rng, shape=(3, 4), lo=0.3, hi=1.5):
    """Random sign, magnitude in [lo, hi]: away from 0."""
    return np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0) * rng.uniform(lo, hi, size=shape)


def _distinct(rng, shape=(3, 4), gap=0.1):
    n = int(np.prod(shape))
    vals = np.cumsum(rng.uniform(gap, 3 * gap, size=n)) - 1.0
    return rng.permutation(vals).reshape(shape)


def _frac(rng, shape=(3, 4)):
    """Away from integers (floor/ceil/rint/mod kinks)."""
    return rng.integers(-3, 3, size=shape) + rng.uniform(0.15, 0.35, size=shape) \
        + np.where(rng.uniform(size=shape) < 0.5, 0.0, 0.5)


def _wellcond(rng, n=3, batch=()):
    return rng.standard_normal(batch + (n, n)) * 0.3 + 2.0 * np.eye(n)


def _sym_distinct(rng, n=3):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.array([1.0, 2.5, 4.5][:n])) @ q.T


# ---------------------------------------------------------------------------
# Case record
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    name: str
    fn: Callable
    make: Callable[[Any], tuple]
    hess: bool | str = True          # True, or a reason second derivatives are not checked
    rev_xfail: str | None = None     # strict xfail of reverse mode (and of everything built on it)
    fwd_xfail: str | None = None     # strict xfail of forward mode
    hess_xfail: str | None = None    # strict xfail of s2s.hessian (forward over reverse)
    rr_xfail: str | None = None      # strict xfail of the VJP of grad (reverse over reverse)
    rtol: float = 1e-5


CASES: list[Case] = []


def case(make, **kw):
    def wrap(fn):
        CASES.append(Case(fn.__name__[:-5] if fn.__name__.endswith("_case") else fn.__name__, fn, make, **kw))
        return fn
    return wrap


# (first derivatives through an op's tuple result work: its cotangent is a list, runtime.zeros_like)
TUPLE_SECOND = ("core: second derivatives through an op's tuple result: eigh's are refused (NoRuleError for "
                "eigh_vjp: they disagreed with finite differences, tests/test_jit_errors.py checks the refusal); "
                "svd's (compute_uv=True) fail in jacfwd's vmap (bexpand of a list cotangent)")


# ===========================================================================
# Elementwise unary
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)),))
def sin_case(x):
    return np.sum(np.sin(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def cos_case(x):
    return np.sum(np.cos(x) * W)


@case(lambda r: (_u(r, -1.0, 1.0),))
def tan_case(x):
    return np.sum(np.tan(x) * W)


@case(lambda r: (_u(r, -0.8, 0.8),))
def arcsin_case(x):
    return np.sum(np.arcsin(x) * W)


@case(lambda r: (_u(r, -0.8, 0.8),))
def arccos_case(x):
    return np.sum(np.arccos(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def arctan_case(x):
    return np.sum(np.arctan(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def sinh_case(x):
    return np.sum(np.sinh(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def cosh_case(x):
    return np.sum(np.cosh(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def tanh_case(x):
    return np.sum(np.tanh(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def arcsinh_case(x):
    return np.sum(np.arcsinh(x) * W)


@case(lambda r: (_u(r, 1.3, 3.0),))
def arccosh_case(x):
    return np.sum(np.arccosh(x) * W)


@case(lambda r: (_u(r, -0.8, 0.8),))
def arctanh_case(x):
    return np.sum(np.arctanh(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def exp_case(x):
    return np.sum(np.exp(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def exp2_case(x):
    return np.sum(np.exp2(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def expm1_case(x):
    return np.sum(np.expm1(x) * W)


@case(lambda r: (_u(r, 0.3, 3.0),))
def log_case(x):
    return np.sum(np.log(x) * W)


@case(lambda r: (_u(r, 0.3, 3.0),))
def log2_case(x):
    return np.sum(np.log2(x) * W)


@case(lambda r: (_u(r, 0.3, 3.0),))
def log10_case(x):
    return np.sum(np.log10(x) * W)


@case(lambda r: (_u(r, -0.5, 2.0),))
def log1p_case(x):
    return np.sum(np.log1p(x) * W)


@case(lambda r: (_u(r, 0.3, 3.0),))
def sqrt_case(x):
    return np.sum(np.sqrt(x) * W)


@case(lambda r: (_nz(r),))
def cbrt_case(x):
    return np.sum(np.cbrt(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def square_case(x):
    return np.sum(np.square(x) * W)


@case(lambda r: (_nz(r),))
def reciprocal_case(x):
    return np.sum(np.reciprocal(x) * W)


@case(lambda r: (_nz(r),))
def abs_case(x):
    return np.sum(np.abs(x) * W)


@case(lambda r: (_nz(r),))
def absolute_case(x):
    return np.sum(np.absolute(x) * W)


@case(lambda r: (_nz(r),))
def fabs_case(x):
    return np.sum(np.fabs(x) * W)


@case(lambda r: (_nz(r),))
def builtin_abs_case(x):
    return np.sum(abs(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def negative_case(x):
    return np.sum(np.negative(x) * W) + np.sum(-x * x * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def positive_case(x):
    return np.sum(np.positive(x) * x * W)


@case(lambda r: (_nz(r),))
def sign_case(x):
    return np.sum(np.sign(x) * x * W)


@case(lambda r: (_frac(r),))
def floor_case(x):
    return np.sum(np.floor(x) * x * W)


@case(lambda r: (_frac(r),))
def ceil_case(x):
    return np.sum(np.ceil(x) * x * W)


@case(lambda r: (_frac(r),))
def rint_case(x):
    return np.sum(np.rint(x) * x * W)


@case(lambda r: (_frac(r),))
def trunc_case(x):
    return np.sum(np.trunc(x) * x * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def deg2rad_case(x):
    return np.sum(np.sin(np.deg2rad(x * 50.0)) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def rad2deg_case(x):
    return np.sum(np.rad2deg(x) * x * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def degrees_case(x):
    return np.sum(np.degrees(x) * x * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def radians_case(x):
    return np.sum(np.sin(np.radians(x * 50.0)) * W)


@case(lambda r: (_nz(r, lo=0.1, hi=1.4),))
def sinc_case(x):
    return np.sum(np.sinc(x) * W)


@case(lambda r: (_u(r, 0.3, 2.0),))
def math_functions_case(x):
    s = 0.0
    for i in range(3):
        v = x[i, 0]
        s = s + math.sin(v) * math.exp(v) + math.log(v) * math.sqrt(v) + math.tanh(v) + math.atan(v) \
            + math.log1p(v) + math.cosh(v) + math.fabs(v) * math.pow(v, 1.5) + math.hypot(v, 2.0)
    return s


# ===========================================================================
# Elementwise binary (broadcasting)
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)))
def add_case(a, b):
    return np.sum(np.add(a, b) * W) + np.sum((a + b) * a * W)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))))
def subtract_case(a, b):
    return np.sum(np.subtract(a, b) * a * W) + np.sum((b - a) * W)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)))
def multiply_case(a, b):
    return np.sum(np.multiply(a, b) * W) + np.sum(a * b * b * W)


@case(lambda r: (r.standard_normal((3, 4)), float(r.uniform(0.5, 2.0))))
def multiply_scalar_case(a, s):
    return np.sum(np.multiply(a, s) * W * s)


@case(lambda r: (r.standard_normal((3, 4)), _nz(r, (3, 1))))
def divide_case(a, b):
    return np.sum(np.divide(a, b) * W) + np.sum(a / b * a * W)


@case(lambda r: (r.standard_normal((3, 4)), _nz(r, (4,))))
def true_divide_case(a, b):
    return np.sum(np.true_divide(a, b) * W)


@case(lambda r: (_u(r, 0.3, 2.0), _u(r, -1.5, 2.5, (4,))))
def power_case(a, b):
    return np.sum(np.power(a, b) * W) + np.sum(a ** 3 * W) + np.sum(2.0 ** b * W4)


@case(lambda r: (_u(r, 0.3, 2.0), _u(r, -1.5, 2.5, (3, 1))))
def float_power_case(a, b):
    return np.sum(np.float_power(a, b) * W)


@case(lambda r: (_distinct(r), _distinct(r, (4,))))
def maximum_case(a, b):
    return np.sum(np.maximum(a, b) * W)


@case(lambda r: (_distinct(r), _distinct(r, (4,))))
def minimum_case(a, b):
    return np.sum(np.minimum(a, b) * W)


@case(lambda r: (_distinct(r), _distinct(r, (3, 1))))
def fmax_case(a, b):
    return np.sum(np.fmax(a, b) * W)


@case(lambda r: (_distinct(r), _distinct(r, (3, 1))))
def fmin_case(a, b):
    return np.sum(np.fmin(a, b) * W)


@case(lambda r: (_distinct(r), float(r.uniform(-0.3, 0.3)) + 0.05))
def builtin_max_min_case(a, s):
    return max(a[0, 0], s) * 2.0 + min(a[1, 1], s) * 3.0 + max(a[2, 3], a[1, 2])


@case(lambda r: (_nz(r), _nz(r, (4,))))
def arctan2_case(a, b):
    return np.sum(np.arctan2(a, b) * W)


@case(lambda r: (_nz(r), _nz(r, (3, 1))))
def hypot_case(a, b):
    return np.sum(np.hypot(a, b) * W)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)))
def logaddexp_case(a, b):
    return np.sum(np.logaddexp(a, b) * W)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))))
def logaddexp2_case(a, b):
    return np.sum(np.logaddexp2(a, b) * W)


@case(lambda r: (_u(r, 0.1, 5.0), np.array([0.7, 1.3, 1.9, 2.6])))
def mod_case(a, b):
    return np.sum(np.mod(a, b) * W) + np.sum(a % 0.9 * W)


@case(lambda r: (_u(r, -5.0, 5.0), np.array([0.7, 1.3, 1.9, 2.6])))
def remainder_case(a, b):
    return np.sum(np.remainder(a, b) * W)


@case(lambda r: (_u(r, -5.0, 5.0), np.array([0.7, 1.3, 1.9, 2.6])))
def fmod_case(a, b):
    return np.sum(np.fmod(a, b) * W)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)))
def where_case(a, b):
    return np.sum(np.where(MASK, a, b) * W) + np.sum(np.where(a > 0.0, a * a, 0.0) * W)


@case(lambda r: (_distinct(r), np.array([-0.9, -0.3, 0.05, 0.25]) + 0.01, np.array([[0.35], [0.6], [1.0]]) + 0.01))
def clip_case(a, lo, hi):
    return np.sum(np.clip(a, lo, hi) * W)


@case(lambda r: (_distinct(r),))
def clip_constants_case(a):
    return np.sum(np.clip(a, -0.52, 0.53) * W) + np.sum(a.clip(-0.31, None) * W) + np.sum(np.clip(a, max=0.41) * W)


@case(lambda r: (_distinct(r) + 0.05, float(r.uniform(0.3, 0.6))))
def binary_with_scalar_case(a, s):
    return np.sum((a + s) * (s - a) * W) + np.sum(a / s * W) + np.sum(np.power(np.abs(a) + 0.2, s) * W) \
        + np.sum(np.maximum(a, s) * W) + np.sum(np.arctan2(a, s) * W) + np.sum(np.hypot(s, a) * W) \
        + np.sum(np.logaddexp(a, s) * W) + np.sum(np.where(MASK, a, s) * W) + np.sum(s ** a * W)


# ===========================================================================
# Reductions
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4, 2)),))
def sum_case(x):
    return np.sum(x * x * W34x2) + np.sum(np.sum(x, axis=1) ** 2 * W32) + \
        np.sum(np.sum(x, axis=(0, 2), keepdims=True) * W4) + np.sum(x.sum(2) * W)


@case(lambda r: (r.standard_normal((3, 4, 2)),))
def mean_case(x):
    return np.mean(x * x * W34x2) + np.sum(np.mean(x, axis=-1) ** 2 * W) + \
        np.sum(np.mean(x, axis=(0, 1), keepdims=True) ** 2) + x.mean() ** 2


@case(lambda r: (_nz(r, (3, 4), 0.5, 1.5),))
def prod_case(x):
    return np.prod(x) + np.sum(np.prod(x, axis=1) * W3) + np.sum(np.prod(x, axis=0, keepdims=True) * W4) + \
        np.sum(x.prod(1) * W3)


@case(lambda r: (np.where(np.arange(12).reshape(3, 4) == 5, 0.0, _nz(r, (3, 4), 0.5, 1.5)),))
def prod_with_zero_case(x):
    return np.prod(x) + np.sum(np.prod(x, axis=1) * W3)


@case(lambda r: (_distinct(r, (3, 4, 2)),))
def max_case(x):
    return np.max(x) + np.sum(np.max(x, axis=1) * W32) + np.sum(np.max(x, axis=(0, 2), keepdims=True) * W4) + \
        np.sum(x.max(0) * W42)


@case(lambda r: (_distinct(r, (3, 4, 2)),))
def min_case(x):
    return np.min(x) + np.sum(np.min(x, axis=-1) * W) + np.sum(x.min(1) * W32)


@case(lambda r: (_distinct(r, (3, 4)),))
def amax_case(x):
    return np.sum(np.amax(x, axis=1) * W3) + np.amax(x)


@case(lambda r: (_distinct(r, (3, 4)),))
def amin_case(x):
    return np.sum(np.amin(x, axis=0) * W4) + np.amin(x)


@case(lambda r: (r.standard_normal((3, 4, 2)),))
def var_case(x):
    return np.var(x) + np.sum(np.var(x, axis=1) * W32) + np.sum(np.var(x, axis=0, ddof=1) * W42) + \
        np.sum(np.var(x, axis=(0, 2), keepdims=True) * W4) + x.var()


@case(lambda r: (r.standard_normal((3, 4, 2)),))
def std_case(x):
    return np.std(x) + np.sum(np.std(x, axis=1) * W32) + np.sum(np.std(x, axis=0, ddof=1) * W42) + \
        np.sum(x.std(axis=(0, 2), keepdims=True) * W4)


@case(lambda r: (r.standard_normal((3, 4)),))
def cumsum_case(x):
    return np.sum(np.cumsum(x, axis=1) ** 2 * W) + np.sum(np.cumsum(x) * W12) + np.sum(x.cumsum(0) * x * W)


@case(lambda r: (_nz(r, (3, 4), 0.5, 1.5),))
def cumprod_case(x):
    return np.sum(np.cumprod(x, axis=1) * W) + np.sum(np.cumprod(x) * W12) + np.sum(x.cumprod(0) * W)


@case(lambda r: (np.where(np.arange(12).reshape(3, 4) % 5 == 1, 0.0, _nz(r, (3, 4), 0.5, 1.5)),))
def cumprod_with_zero_case(x):
    return np.sum(np.cumprod(x, axis=1) * W) + np.sum(np.cumprod(x) * W12)


@case(lambda r: (r.standard_normal((3, 4)), _u(r, 0.5, 2.0, (4,))))
def average_case(x, w):
    return np.sum(np.average(x, axis=1, weights=w) * W3) + np.average(x) + \
        np.sum(np.average(x * x, axis=0, weights=x * x + 1.0, keepdims=True) * W4)


@case(lambda r: (_nz(r, (3, 4)),))
def norm_vector_case(x):
    v = x[0]
    return np.linalg.norm(x) + np.linalg.norm(v) * 2.0 + np.linalg.norm(v, 1) + np.linalg.norm(v, 3) \
        + np.sum(np.linalg.norm(x, axis=1) * W3) + np.sum(np.linalg.norm(x, 2, axis=0, keepdims=True) * W4) \
        + np.linalg.norm(v, 0) * np.sum(v) + np.linalg.norm(v, -1) + np.sum(np.linalg.norm(x, 1.5, axis=-1) * W3)


@case(lambda r: (_distinct(r, (3, 4)),))
def norm_inf_case(x):
    return np.linalg.norm(x[1], np.inf) + np.linalg.norm(x[2], -np.inf) + np.sum(np.linalg.norm(x, np.inf, axis=1) * W3)


@case(lambda r: (_distinct(r, (3, 4)) + 0.05,))
def norm_matrix_case(x):
    return np.linalg.norm(x, "fro") + np.linalg.norm(x, 1) * 2.0 + np.linalg.norm(x, np.inf) * 3.0 \
        + np.linalg.norm(x, -1) + np.linalg.norm(x, -np.inf)


@case(lambda r: (r.standard_normal((3, 4)),))
def norm_spectral_case(x):
    return np.linalg.norm(x, 2) + np.linalg.norm(x, "nuc") * 0.5 + np.linalg.norm(x, -2) * 0.25


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def norm_batched_case(x):
    return np.sum(np.linalg.norm(x, axis=(1, 2)) * np.array([0.3, -1.2])) + \
        np.sum(np.linalg.norm(x, "fro", axis=(0, 2), keepdims=True) * K0)


# ===========================================================================
# Linear algebra
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 5))))
def matmul_case(a, b):
    return np.sum(np.matmul(a, b) * W35) + np.sum((a @ b) * W35 * 0.5)


@case(lambda r: (r.standard_normal((2, 3, 4)), r.standard_normal((4, 5)), r.standard_normal(4)))
def matmul_batched_vector_case(a, b, v):
    return np.sum(np.matmul(a, b) * W235) + np.sum(np.matmul(a, v) * W.T[:2, :3]) + np.sum(np.matmul(v, b) * W35[0])


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 5)), r.standard_normal(4)))
def dot_case(a, b, v):
    return np.sum(np.dot(a, b) * W35) + np.sum(np.dot(a, v) * W3) + np.dot(v, v) + np.sum(a.dot(b) * W35)


@case(lambda r: (r.standard_normal((2, 3, 4)), r.standard_normal((4, 5)), float(r.uniform(0.5, 1.5))))
def dot_nd_scalar_case(a, b, s):
    return np.sum(np.dot(a, b) * W235) + np.sum(np.dot(s, b) * W.T[:, :1])


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 3))))
def vdot_case(a, b):
    return np.vdot(a, b) * 2.0 + np.vdot(a, a)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((2, 4)), r.standard_normal(4)))
def inner_case(a, b, v):
    return np.sum(np.inner(a, b) * W32) + np.inner(v, v) + np.sum(np.inner(a, v) * W3)


@case(lambda r: (r.standard_normal(3), r.standard_normal((2, 2))))
def outer_case(a, b):
    return np.sum(np.outer(a, b) * W) + np.sum(np.outer(a, a) * W33)


@case(lambda r: (r.standard_normal((2, 3, 4)), r.standard_normal((4, 3, 5))))
def tensordot_case(a, b):
    return np.sum(np.tensordot(a, b, axes=([1, 2], [1, 0])) * W35[:2]) \
        + np.sum(np.tensordot(a, b, axes=1) * W35) + np.tensordot(a[0], b[:, :, 0].T, axes=2) * 1.5 \
        + np.sum(np.tensordot(a[0, 0], b[0, 0], axes=0) * W56[:4, :5])


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 5)), r.standard_normal((5, 2))))
def einsum_case(a, b, c):
    return np.sum(np.einsum("ij,jk->ik", a, b) * W35) + np.einsum("ij,jk,kl->", a, b, c) \
        + np.sum(np.einsum("ij->j", a) * W4) + np.einsum("ij,ij", a, a) + np.sum(np.einsum("ji", a) * W43)


@case(lambda r: (r.standard_normal((3, 3)), r.standard_normal((2, 3, 4)), r.standard_normal((4, 5))))
def einsum_trace_ellipsis_case(s, a, b):
    return np.einsum("ii->", s) + np.sum(np.einsum("ii->i", s) * W3) + \
        np.sum(np.einsum("...ij,jk->...ik", a, b) * W235) + np.sum(np.einsum("bij,jk", a, b) * W235)


@case(lambda r: (r.standard_normal((2, 3)), r.standard_normal((3, 2)), r.standard_normal(2)))
def kron_case(a, b, v):
    return np.sum(np.kron(a, b) * W68[:, :6]) + np.sum(np.kron(v, b) * W64[:3]) + np.sum(np.kron(v, v) * W4)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((2, 3, 3))))
def trace_case(a, t):
    return np.trace(a) * 2.0 + np.trace(a, 1) + np.trace(a, -1) + np.sum(np.trace(t, axis1=1, axis2=2) * W3[:2]) \
        + a.trace()


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(3)))
def diag_case(a, v):
    return np.sum(np.diag(a) * W3) + np.sum(np.diag(a, 1) * W3) + np.sum(np.diag(v) * W33) + np.sum(np.diag(v, 1) * K1)


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def diagonal_case(a):
    return np.sum(np.diagonal(a, 0, 1, 2) * W32.T) + np.sum(np.diagonal(a, 1, 2, 0) * W33[:, :1].T[:, :1]) \
        + np.sum(a[0].diagonal() * W3)


@case(lambda r: (_wellcond(r),))
def det_case(a):
    return np.linalg.det(a) + np.linalg.det(a @ a.T) * 0.1


@case(lambda r: (_wellcond(r, 3, (2,)),))
def det_batched_case(a):
    return np.sum(np.linalg.det(a) * np.array([0.7, -1.3]))


@case(lambda r: (_wellcond(r),))
def slogdet_case(a):
    return np.linalg.slogdet(a)[1] + np.linalg.slogdet(a)[0] * 0.0


@case(lambda r: (_wellcond(r),))
def inv_case(a):
    return np.sum(np.linalg.inv(a) * W33)


@case(lambda r: (_wellcond(r), r.standard_normal((3, 2)), r.standard_normal(3)))
def solve_case(a, b, v):
    return np.sum(np.linalg.solve(a, b) * W32) + np.sum(np.linalg.solve(a, v) * W3)


@case(lambda r: (_wellcond(r, 3, (2,)), r.standard_normal((2, 3, 4))))
def solve_batched_case(a, b):
    return np.sum(np.linalg.solve(a, b) * W234)


@case(lambda r: (r.standard_normal((3, 3)) * 0.5,))
def cholesky_case(x):
    a = x @ x.T + 2.0 * np.eye(3)
    return np.sum(np.linalg.cholesky(a) * W33) + np.sum(np.linalg.cholesky(a, upper=True) * W33.T)


@case(lambda r: (_wellcond(r) + 2.0 * np.eye(3),))
def cholesky_one_triangle_case(a):
    return np.sum(np.linalg.cholesky(a) * W33)


@case(lambda r: (_sym_distinct(r) + 0.05 * r.standard_normal((3, 3)),))
def eigvalsh_case(a):
    return np.sum(np.linalg.eigvalsh(a) * W3) + np.sum(np.linalg.eigvalsh(a, UPLO="U") * W3[::-1])


@case(lambda r: (_sym_distinct(r),), hess_xfail=TUPLE_SECOND, rr_xfail=TUPLE_SECOND)
def eigh_case(a):
    wv = np.linalg.eigh(a)
    return np.sum(wv[0] * W3) + np.sum(np.abs(wv[1][0]) * W3)


@case(lambda r: (r.standard_normal((4, 3)),))
def qr_case(a):
    qr = np.linalg.qr(a)
    return np.sum(qr[0] * W43) + np.sum(qr[1] * W33)


@case(lambda r: (r.standard_normal((4, 3)),))
def svd_values_case(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) * W3) + np.sum(np.linalg.svdvals(a.T) * W3)


@case(lambda r: (r.standard_normal((4, 3)),), hess_xfail=TUPLE_SECOND, rr_xfail=TUPLE_SECOND)
def svd_case(a):
    usv = np.linalg.svd(a, full_matrices=False)
    return np.sum(usv[1] * W3) + np.sum(usv[0][:, 0] * usv[2][0, 0] * W4)


@case(lambda r: (r.standard_normal((4, 3)), r.standard_normal(3)))
def cross_case(a, b):
    return np.sum(np.cross(a, b) * W43) + np.sum(np.cross(a.T, b, axisa=0) * W43) + \
        np.sum(np.cross(a.T, b, axisa=0, axisc=0) * W43.T)


# ===========================================================================
# Shape and joining
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)),))
def reshape_case(x):
    return np.sum(np.reshape(x, (4, 3)) * W43) + np.sum(x.reshape(2, 6) ** 2 * K2) + \
        np.sum(np.reshape(x, (12,), order="F") * W12) + np.sum(x.reshape((-1, 2)) * K3)


@case(lambda r: (r.standard_normal((3, 4)),))
def ravel_flatten_case(x):
    return np.sum(np.ravel(x) * W12) + np.sum(x.ravel() ** 2 * W12) + np.sum(x.flatten() * x.flatten() * W12)


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def transpose_case(x):
    return np.sum(np.transpose(x, (2, 0, 1)) * K4) + np.sum(x.T * W234.T) + \
        np.sum(x.transpose(1, 0, 2) ** 2 * K5) + np.sum(x[0].T * W43)


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def swapaxes_moveaxis_case(x):
    return np.sum(np.swapaxes(x, 0, 2) * W234.T) + np.sum(x.swapaxes(1, 2) ** 2 * K6) + \
        np.sum(np.moveaxis(x, 0, -1) * K8) + \
        np.sum(np.moveaxis(x, (0, 1), (2, 0)) * K8)


@case(lambda r: (r.standard_normal((3, 4)),))
def expand_squeeze_case(x):
    e = np.expand_dims(x, 1)
    return np.sum(e * K9) + np.sum(np.squeeze(e) ** 2 * W) + np.sum(np.squeeze(e, axis=1) * W) \
        + np.sum(np.expand_dims(x, (0, 3)) * K10) + np.sum(e.squeeze() * W)


@case(lambda r: (r.standard_normal((3, 1)), r.standard_normal(4)))
def broadcast_to_case(a, b):
    return np.sum(np.broadcast_to(a, (3, 4)) * W) + np.sum(np.broadcast_to(b, (2, 3, 4)) * W234)


@case(lambda r: (float(r.uniform(0.5, 1.5)), r.standard_normal(4), r.standard_normal((3, 4))))
def atleast_case(s, v, m):
    return np.sum(np.atleast_1d(s) * 2.0) + np.sum(np.atleast_2d(v) * W4) + np.sum(np.atleast_3d(m) * K11) \
        + np.sum(np.atleast_2d(m) * W) + np.sum(np.atleast_1d(v) * W4)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(2)))
def tile_case(x, v):
    return np.sum(np.tile(x, (2, 2)) * W68) + np.sum(np.tile(v, 3) * K12) + \
        np.sum(np.tile(v, (3, 2)) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def repeat_case(x):
    return np.sum(np.repeat(x, 2, axis=1) * W38) + np.sum(np.repeat(x, 2) * K13) + \
        np.sum(np.repeat(x, REPS, axis=1) * K14) + \
        np.sum(np.repeat(x[0], REPS) * K15)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((2, 4)), r.standard_normal(4)))
def concatenate_case(a, b, v):
    return np.sum(np.concatenate([a, b], axis=0) * K16) + \
        np.sum(np.concatenate((a, a * 2.0), axis=1) * W38) + np.sum(np.concatenate([v, a[0]]) * K17) \
        + np.sum(np.concatenate([a, b], axis=None) * K18)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))))
def stack_case(a, b):
    return np.sum(np.stack([a, b]) * W234) + np.sum(np.stack((a, b, a), axis=-1) * K7)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 2)), r.standard_normal(4)))
def hstack_vstack_case(a, b, v):
    return np.sum(np.hstack([a, b]) * K19) + np.sum(np.hstack((v, v)) * K17) \
        + np.sum(np.vstack([a, v]) * K20) + np.sum(np.vstack((v, v)) * W24)


@case(lambda r: (r.standard_normal(3), r.standard_normal((3, 2))))
def column_stack_case(v, b):
    return np.sum(np.column_stack([v, b]) * W33) + np.sum(np.column_stack((v, v)) * W32)


@case(lambda r: (r.standard_normal((4, 3)),))
def split_case(x):
    parts = np.split(x, 2)
    return np.sum(parts[0] * W33[:2]) + np.sum(parts[1] ** 2 * W33[1:])


@case(lambda r: (r.standard_normal((3, 5)),))
def array_split_case(x):
    parts = np.array_split(x, 3, axis=1)
    return np.sum(parts[0] * W32) + np.sum(parts[2] ** 2 * K22)


@case(lambda r: (r.standard_normal((3, 4)),))
def flip_case(x):
    return np.sum(np.flip(x) * W) + np.sum(np.flip(x, 1) ** 2 * W) + np.sum(np.fliplr(x) * W) + np.sum(np.flipud(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def roll_case(x):
    return np.sum(np.roll(x, 1) * W) + np.sum(np.roll(x, -2, axis=1) ** 2 * W) + np.sum(np.roll(x, (1, 2), axis=(0, 1)) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def rot90_case(x):
    return np.sum(np.rot90(x) * W43) + np.sum(np.rot90(x, 2) * W) + np.sum(np.rot90(x, -1, axes=(1, 0)) * W43)


@case(lambda r: (r.standard_normal((3, 4)),))
def tril_triu_case(x):
    return np.sum(np.tril(x) * W) + np.sum(np.triu(x, 1) ** 2 * W) + np.sum(np.tril(x, -1) * np.triu(x) * W)


@case(lambda r: (r.standard_normal((3, 4)), float(r.uniform(0.5, 1.5))))
def pad_case(x, c):
    return np.sum(np.pad(x, 1) * W56) + np.sum(np.pad(x, ((0, 2), (1, 0)), mode="reflect") * W56[:, :5]) \
        + np.sum(np.pad(x, ((1, 1), (0, 0)), constant_values=c) * K16 * c) \
        + np.sum(np.pad(x, ((2, 0), (1, 1)), mode="edge") * W56[:5]) + np.sum(np.pad(x, 1, mode="wrap") * W56)


@case(lambda r: (_distinct(r),))
def sort_case(x):
    return np.sum(np.sort(x) * W) + np.sum(np.sort(x, axis=0) ** 2 * W) + np.sum(np.sort(x, axis=None) * W12)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))))
def diff_case(x, p):
    return np.sum(np.diff(x) * W[:, :3]) + np.sum(np.diff(x, n=2, axis=1) ** 2 * W[:, :2]) + \
        np.sum(np.diff(x, axis=0) * W[:2]) + np.sum(np.diff(x, prepend=p) * W) + np.sum(np.diff(x, append=1.0) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def take_case(x):
    return np.sum(np.take(x, IDX) * W4[:1]) + np.sum(np.take(x, IDX, axis=1) * W35) + \
        np.sum(np.take(x, IDX2, axis=1) ** 2 * K21) + np.sum(np.take(x, 5) * 2.0)


@case(lambda r: (r.standard_normal((3, 4)),))
def take_along_axis_case(x):
    return np.sum(np.take_along_axis(x, IDX2, axis=1) * W32) + \
        np.sum(np.take_along_axis(x, np.argsort(x, axis=0), axis=0) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def copy_astype_case(x):
    y = np.copy(x)
    return np.sum(y * y * W) + np.sum(x.copy() ** 2 * W) + np.sum(x.astype(np.float64) * W) + \
        np.sum(x.astype(int) * x * W) + np.sum(np.asarray(x) * W)


@case(lambda r: (r.standard_normal(3), float(r.uniform(0.5, 1.5))))
def array_of_list_case(v, s):
    m = np.array([v, v * s, v * 2.0])
    return np.sum(m * W33) + np.sum(np.array([s, s * s, 1.0]) * W3) + np.sum(np.array(v) * W3)


@case(lambda r: (r.standard_normal((3, 4)),))
def constructors_case(x):
    z = np.zeros((3, 4)) + np.ones_like(x) * 0.5 + np.full((3, 4), 0.25) + np.eye(3, 4) + np.arange(4.0)
    return np.sum((x + z) * x * W) + np.sum(np.linspace(0.0, 1.0, 4) * x[0]) + np.sum(np.zeros_like(x) * x)


@case(lambda r: (_distinct(r),))
def comparisons_argfuncs_case(x):
    m = (x > 0.1) & (x <= 1.5) | np.isnan(x)
    i = np.argmax(x[0])
    j = np.argmin(x[1])
    return np.sum(np.where(m, x, 0.0) * W) + x[0, i] * 2.0 + x[1, j] + \
        np.sum(np.where(np.isfinite(x), x * x, 0.0) * W) + np.sum(x * np.logical_not(x > 0.5) * W)


# ===========================================================================
# scipy.special
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)), _u(r, 0.5, 2.0, (3, 4))))
def logsumexp_case(x, b):
    return sp.logsumexp(x) + np.sum(sp.logsumexp(x, axis=1) * W3) + \
        np.sum(sp.logsumexp(x, axis=0, keepdims=True) * W4) + np.sum(sp.logsumexp(x, axis=1, b=b) * W3)


@case(lambda r: (r.standard_normal((3, 4)),))
def expit_case(x):
    return np.sum(sp.expit(x) * W)


@case(lambda r: (_u(r, 0.1, 0.9),))
def logit_case(x):
    return np.sum(sp.logit(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def erf_case(x):
    return np.sum(sp.erf(x) * W) + np.sum(sp.erfc(x) * x * W)


@case(lambda r: (_u(r, 0.3, 4.0),))
def gammaln_case(x):
    return np.sum(sp.gammaln(x) * W) + np.sum(sp.digamma(x) * W)


@case(lambda r: (_u(r, 0.3, 2.0), _u(r, 0.3, 3.0, (4,))))
def xlogy_case(x, y):
    return np.sum(sp.xlogy(x, y) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def softmax_case(x):
    return np.sum(sp.softmax(x, axis=1) * W) + np.sum(sp.softmax(x) * W) + np.sum(sp.softmax(x, axis=0) ** 2 * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def log_softmax_case(x):
    return np.sum(sp.log_softmax(x, axis=1) * W) + np.sum(sp.log_softmax(x) * W)


@case(lambda r: (_u(r, 0.6, 2.8), _u(r, -0.8, -0.2)))
def gamma_case(x, z):
    # gammasgn is piecewise constant (nondiff): -1 on (-1, 0), a constant factor here
    return np.sum(sp.gamma(x) * W) + np.sum(sp.rgamma(x) * W) + np.sum(sp.gamma(z) * sp.gammasgn(z) * W) + \
        np.sum(sp.rgamma(z) * x * W)


@case(lambda r: (_u(r, 0.5, 3.0), _u(r, 0.5, 3.0, (4,))))
def beta_case(a, b):
    return np.sum(sp.beta(a, b) * W) + np.sum(sp.betaln(a, b) * W) + np.sum(sp.betaln(b, 2.5) * W4)


@case(lambda r: (_u(r, 0.1, 0.9),))
def betainc_gammainc_case(x):
    # derivatives in x only: the shape parameters are constants (an array one broadcast against x)
    return np.sum(sp.betainc(2.5, 1.5, x) * W) + np.sum(sp.betainc(np.abs(W4) + 0.5, 0.7, x) * W) + \
        np.sum(sp.gammainc(1.7, 3.0 * x) * W) + np.sum(sp.gammaincc(0.8, x + 0.5) * W) + \
        np.sum(sp.gammainc(1.0, x) * W)


@case(lambda r: (_u(r, 2.0, 4.0),))
def multigammaln_case(a):
    return np.sum(sp.multigammaln(a, 3) * W) + np.sum(sp.multigammaln(a + 1.0, 1) * W) + \
        sp.multigammaln(np.mean(a), 4)


@case(lambda r: (_u(r, 0.5, 3.0),))
def bessel_jy_case(x):
    # integer and half-integer orders as constants (an order array broadcast against x too)
    return np.sum(sp.jv(1.5, x) * W) + np.sum(sp.jv(np.abs(W4), x) * W) + np.sum(sp.yn(2, x) * W) + \
        np.sum(sp.yn(0, x + 0.5) * W) + np.sum(sp.j0(x) * W) + np.sum(sp.j1(x) * W) + \
        np.sum(sp.y0(x) * W) + np.sum(sp.y1(x + 0.5) * W)


@case(lambda r: (_u(r, 0.3, 2.5),))
def bessel_i_case(x):
    return np.sum(sp.iv(0.5, x) * W) + np.sum(sp.iv(np.abs(W4) + 0.5, x) * W) + np.sum(sp.ive(1.5, x) * W) + \
        np.sum(sp.ive(2.0, -x) * W) + np.sum(sp.i0(x) * W) + np.sum(sp.i1(x) * W)


@case(lambda r: (_u(r, -0.8, 0.8),))
def erfinv_case(x):
    return np.sum(sp.erfinv(x) * W) + np.sum(sp.erfcinv(x + 1.0) * W)


# ===========================================================================
# median / percentile / partition / eig
# ===========================================================================
W2114 = W24.reshape(2, 1, 1, 4)
W212 = W24[:, :2].reshape(2, 1, 2)


def _real_eig_matrix(rng, n=3):
    """A non-symmetric matrix with real, well separated eigenvalues (1, 2.5, 4.5)."""
    p = np.eye(n) + 0.3 * rng.standard_normal((n, n))
    return p @ np.diag(np.array([1.0, 2.5, 4.5][:n])) @ np.linalg.inv(p)


@case(lambda r: (_distinct(r),))
def median_case(x):
    return np.median(x) + np.sum(np.median(x, axis=0) * W4) + np.sum(np.median(x, axis=1, keepdims=True) ** 2 * K22)


@case(lambda r: (_distinct(r),))
def quantile_case(x):
    return np.sum(np.quantile(x, 0.3, axis=1) * W3) + np.sum(np.quantile(x, np.array([0.1, 0.9]), axis=0) * W24) + \
        np.quantile(x * x, 0.75)


@case(lambda r: (_distinct(r, (2, 3, 4)),))
def percentile_case(x):
    return np.sum(np.percentile(x, 40.0, axis=(0, 2)) * W3) + \
        np.sum(np.percentile(x, [20.0, 75.0], axis=(0, 1), keepdims=True) * W2114) + \
        np.sum(np.percentile(x, [35.0, 90.0], axis=-2) ** 2 * W212[..., :1] * W4)


@case(lambda r: (_distinct(r),))
def partition_case(x):
    # np.partition fixes the kth values and which values lie on either side, not their order there
    # (nor does this case depend on it)
    p = np.partition(x, 2, axis=1)
    q = np.partition(x, (0, 1), axis=0)
    return np.sum(p[:, 2] * W3) + np.sum(np.sum(p[:, :2] ** 2, axis=1) * W3) + np.sum(q[1] * W4) + \
        np.sum(q[0] ** 2 * W4) + np.partition(x, 5, axis=None)[5]


@case(lambda r: (_real_eig_matrix(r),))
def eigvals_case(a):
    w = np.linalg.eigvals(a)
    return np.sum(np.sort(w) * W3) + np.sum(w ** 2) * 0.1


EIG_SECOND = ("eig's eigenvector helpers (eig_vjp, eig_tangent) are registered without rules, like eigh_vjp: "
              "second derivatives through its v are refused (NoRuleError)")


@case(lambda r: (_real_eig_matrix(r),), hess_xfail=EIG_SECOND, rr_xfail=EIG_SECOND)
def eig_case(a):
    w, v = np.linalg.eig(a)
    o = np.argsort(w)
    vs = np.take(v, o, axis=1)
    return np.sum(np.take(w, o) * W3) + np.sum(vs * vs * W33) + np.sum(np.abs(vs[0]) * W3)


# ===========================================================================
# Arguments the other cases left constant (tests/test_rule_table_coverage.py asks for
# every argument an adjoint differentiates to be varied by some case)
# ===========================================================================

@case(lambda r: (_u(r, 0.2, 0.7, (3,)),))
def math_more_functions_case(x):
    s = 0.0
    for i in range(3):
        v = x[i]
        s = s + math.acos(v) + math.asin(v) * math.cos(v) + math.atanh(v) * math.tan(v) + math.sinh(v) \
            + math.acosh(v + 1.5) + math.asinh(v) + math.cbrt(v) + math.exp2(v) + math.expm1(v) \
            + math.log10(v) * math.log2(v + 1.0) + math.degrees(v) * math.radians(v) \
            + math.atan2(v, 0.5 + v * v) + math.hypot(2.0, v) + math.pow(1.5, v) + float(v) * v
    return s


@case(lambda r: (_distinct(r), np.array([-0.9, -0.3, 0.05, 0.25]) + 0.01, np.array([[0.35], [0.6], [1.0]]) + 0.01))
def clip_keyword_bounds_case(a, lo, hi):
    return np.sum(np.clip(a, min=lo, max=hi) * W)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))))
def diff_append_case(x, p):
    return np.sum(np.diff(x, append=p) * W) + np.sum(np.diff(x, axis=1, prepend=p, append=p) ** 2 * W35)


@case(lambda r: (_u(r, 0.5, 3.0),))
def polygamma_case(x):
    return np.sum(sp.polygamma(1, x) * W) + np.sum(sp.polygamma(2, x) * W) + np.sum(sp.polygamma(0, x) * W)


# ops defined by other ops that were constants or had no rule (tests/test_nondiff_audit.py)
@case(lambda r: (np.eye(3) * 2.0 + 0.3 * r.standard_normal((3, 3)),))
def cond_case(a):
    return np.linalg.cond(a) + np.linalg.cond(a, -2) * 0.5


@case(lambda r: (np.sort(r.uniform(-1.0, 3.0, 6)), np.array([0.0, 2.0, 1.0, 5.0]) + r.uniform(0, 0.3, 4)))
def interp_case(x, fp):
    return np.sum(np.interp(x, np.array([-0.5, 0.4, 1.3, 2.5]), fp) * W12[:6])



# np.fft and complex values inside a function (rules/numpy_fft.py; more forms in tests/test_fft.py)
@case(lambda r: (r.standard_normal((3, 8)),))
def fft_case(x):
    z = np.fft.fft(x)
    return np.sum(np.abs(z) * W38) + np.sum(np.fft.ifft(z * z, axis=1, norm="ortho").real * W38) \
        + np.sum(np.abs(np.fft.rfft(x)) ** 2 * W35) \
        + np.sum(np.fft.irfft(np.fft.rfft(x, n=6) * (1.0 + 0.5j), n=8) * W38)


@case(lambda r: (r.standard_normal((3, 4)),))
def complex_parts_case(a):
    z = a * np.exp(1j * a)
    return np.sum(np.real(z) * W) + np.sum(np.imag(z * z) * W) + np.sum(np.angle(z + 1.5) * W) \
        + np.sum(np.conj(z).imag * a * W)
