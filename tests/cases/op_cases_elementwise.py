"""Op cases: elementwise unary and binary (broadcasting) functions (one small function per op; see op_cases.py).

Nothing here imports s2s: the functions run under plain NumPy."""
from __future__ import annotations

from cases.op_cases_base import *  # noqa: F401,F403  (the weights W..., K..., np, math, sp, case)
from cases.op_cases_base import _distinct, _frac, _nz, _u


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
