"""Elementwise NumPy operations (and their builtins/math twins).

Each op has its reverse-mode template (d[x] notation) and its forward-mode
template (t[x] notation) side by side.  Conventions: the first template
parameter is the op's result; the others mirror the NumPy signature.
`broadcasts=True` unbroadcasts every adjoint contribution to its argument's
shape (and broadcasts a tangent to the result's shape), so the rules stay pure
maths.  Tangents are sums of terms, each linear in one t[...].
"""
# The templates are parsed, never called; names in them refer to the generated
# module's namespace (np, math and the public names of s2s.runtime and of the op
# helper modules, s2s/ops/<family>/helpers.py).
import builtins
import math

import numpy as np

from . import helpers as eh
from ...rules.registry import adjoint, declare, nondiff, tangent


def _alias(fn, name, adj, tan, broadcasts=False):
    """Register existing templates for another spelling of the same maths."""
    adjoint(fn, name, broadcasts=broadcasts)(adj)
    tangent(fn, name, broadcasts=broadcasts)(tan)


# ----- Binary arithmetic (also the operators + - * / ** @ %) -------------------


@adjoint(np.add, "np.add", broadcasts=True)
def add(y, a, b):
    d[a] = d[y]
    d[b] = d[y]


@tangent(np.add, broadcasts=True)
def add_(y, a, b):
    t[y] = t[a] + t[b]


@adjoint(np.subtract, "np.subtract", broadcasts=True)
def subtract(y, a, b):
    d[a] = d[y]
    d[b] = -d[y]


@tangent(np.subtract, broadcasts=True)
def subtract_(y, a, b):
    t[y] = t[a] - t[b]


@adjoint(np.multiply, "np.multiply", broadcasts=True)
def multiply(y, a, b):
    d[a] = d[y] * b
    d[b] = d[y] * a


@tangent(np.multiply, broadcasts=True)
def multiply_(y, a, b):
    t[y] = t[a] * b + a * t[b]


@adjoint(np.true_divide, "np.divide", broadcasts=True)   # np.divide is np.true_divide
def divide(y, a, b):
    d[a] = d[y] / b
    d[b] = -d[y] * y / b


@tangent(np.true_divide, broadcasts=True)
def divide_(y, a, b):
    t[y] = t[a] / b - t[b] * y / b


@adjoint(np.power, "np.power", broadcasts=True)
def power(y, a, b):
    d[a] = d[y] * b * a ** (b - 1)
    d[b] = d[y] * y * safe_log(a)


@tangent(np.power, broadcasts=True)
def power_(y, a, b):
    t[y] = t[a] * b * a ** (b - 1) + t[b] * y * safe_log(a)


@adjoint(np.float_power, "np.float_power", broadcasts=True)
def float_power(y, a, b):
    d[a] = d[y] * b * np.float_power(a, b - 1)
    d[b] = d[y] * y * safe_log(a)


@tangent(np.float_power, broadcasts=True)
def float_power_(y, a, b):
    t[y] = t[a] * b * np.float_power(a, b - 1) + t[b] * y * safe_log(a)


@adjoint(np.maximum, "np.maximum", broadcasts=True)
def maximum(y, a, b):
    d[a] = d[y] * tie_share(a, b)
    d[b] = d[y] * tie_share(b, a)


@tangent(np.maximum, broadcasts=True)
def maximum_(y, a, b):
    t[y] = t[a] * tie_share(a, b) + t[b] * tie_share(b, a)


@adjoint(np.minimum, "np.minimum", broadcasts=True)
def minimum(y, a, b):
    d[a] = d[y] * tie_share(b, a)
    d[b] = d[y] * tie_share(a, b)


@tangent(np.minimum, broadcasts=True)
def minimum_(y, a, b):
    t[y] = t[a] * tie_share(b, a) + t[b] * tie_share(a, b)


@adjoint(np.fmax, "np.fmax", broadcasts=True)
def fmax(y, a, b):
    d[a] = d[y] * nan_max_share(a, b)
    d[b] = d[y] * nan_max_share(b, a)


@tangent(np.fmax, broadcasts=True)
def fmax_(y, a, b):
    t[y] = t[a] * nan_max_share(a, b) + t[b] * nan_max_share(b, a)


@adjoint(np.fmin, "np.fmin", broadcasts=True)
def fmin(y, a, b):
    d[a] = d[y] * nan_max_share(-a, -b)
    d[b] = d[y] * nan_max_share(-b, -a)


@tangent(np.fmin, broadcasts=True)
def fmin_(y, a, b):
    t[y] = t[a] * nan_max_share(-a, -b) + t[b] * nan_max_share(-b, -a)


@adjoint(np.arctan2, "np.arctan2", broadcasts=True)
def arctan2(y, a, b):
    d[a] = d[y] * b / (a * a + b * b)
    d[b] = -d[y] * a / (a * a + b * b)


@tangent(np.arctan2, broadcasts=True)
def arctan2_(y, a, b):
    t[y] = t[a] * b / (a * a + b * b) - t[b] * a / (a * a + b * b)


# At (0, 0), the apex of the cone y = |(a, b)|, the derivative is taken to be 0, as for |x|, the
# 2-norm and np.std (docs/conventions.md): a / y with 0 / inf there instead of 0 / 0.
@adjoint(np.hypot, "np.hypot", broadcasts=True)
def hypot(y, a, b):
    d[a] = d[y] * a / np.where(y == 0.0, math.inf, y)
    d[b] = d[y] * b / np.where(y == 0.0, math.inf, y)


@tangent(np.hypot, broadcasts=True)
def hypot_(y, a, b):
    t[y] = t[a] * a / np.where(y == 0.0, math.inf, y) + t[b] * b / np.where(y == 0.0, math.inf, y)


@adjoint(np.logaddexp, "np.logaddexp", broadcasts=True)
def logaddexp(y, a, b):
    d[a] = d[y] * np.exp(a - y)
    d[b] = d[y] * np.exp(b - y)


@tangent(np.logaddexp, broadcasts=True)
def logaddexp_(y, a, b):
    t[y] = t[a] * np.exp(a - y) + t[b] * np.exp(b - y)


@adjoint(np.logaddexp2, "np.logaddexp2", broadcasts=True)
def logaddexp2(y, a, b):
    d[a] = d[y] * np.exp2(a - y)
    d[b] = d[y] * np.exp2(b - y)


@tangent(np.logaddexp2, broadcasts=True)
def logaddexp2_(y, a, b):
    t[y] = t[a] * np.exp2(a - y) + t[b] * np.exp2(b - y)


@adjoint(np.remainder, "np.mod", broadcasts=True)   # np.mod is np.remainder
def mod(y, a, b):
    d[a] = d[y]
    d[b] = -d[y] * np.floor_divide(a, b)


@tangent(np.remainder, broadcasts=True)
def mod_(y, a, b):
    t[y] = t[a] - t[b] * np.floor_divide(a, b)


@adjoint(np.fmod, "np.fmod", broadcasts=True)
def fmod(y, a, b):
    d[a] = d[y]
    d[b] = -d[y] * np.trunc(a / b)


@tangent(np.fmod, broadcasts=True)
def fmod_(y, a, b):
    t[y] = t[a] - t[b] * np.trunc(a / b)


@adjoint(np.where, "np.where", broadcasts=True)
def where(y, condition, a=None, b=None):
    d[a] = np.where(condition, d[y], 0.0)
    d[b] = np.where(condition, 0.0, d[y])


@tangent(np.where, broadcasts=True)
def where_(y, condition, a=None, b=None):
    t[y] = np.where(condition, t[a], 0.0) + np.where(condition, 0.0, t[b])


@adjoint(np.clip, "np.clip", broadcasts=True)
def clip(y, a, a_min=None, a_max=None, out=None, min=None, max=None):
    d[a] = d[y] * clip_share(a, a_min, a_max, min, max, 0)
    d[a_min] = d[y] * clip_share(a, a_min, a_max, min, max, 1)
    d[a_max] = d[y] * clip_share(a, a_min, a_max, min, max, 2)
    d[min] = d[y] * clip_share(a, a_min, a_max, min, max, 1)
    d[max] = d[y] * clip_share(a, a_min, a_max, min, max, 2)


@tangent(np.clip, broadcasts=True)
def clip_(y, a, a_min=None, a_max=None, out=None, min=None, max=None):
    t[y] = (t[a] * clip_share(a, a_min, a_max, min, max, 0)
            + t[a_min] * clip_share(a, a_min, a_max, min, max, 1)
            + t[a_max] * clip_share(a, a_min, a_max, min, max, 2)
            + t[min] * clip_share(a, a_min, a_max, min, max, 1)
            + t[max] * clip_share(a, a_min, a_max, min, max, 2))


# ----- Unary elementwise ------------------------------------------------------


@adjoint(np.negative, "np.negative")
def negative(y, x):
    d[x] = -d[y]


@tangent(np.negative)
def negative_(y, x):
    t[y] = -t[x]


@adjoint(np.positive, "np.positive")
def positive(y, x):
    d[x] = d[y]


@tangent(np.positive)
def positive_(y, x):
    t[y] = t[x]


@adjoint(np.sin, "np.sin")
def sin(y, x):
    d[x] = d[y] * np.cos(x)


@tangent(np.sin)
def sin_(y, x):
    t[y] = t[x] * np.cos(x)


@adjoint(np.cos, "np.cos")
def cos(y, x):
    d[x] = -d[y] * np.sin(x)


@tangent(np.cos)
def cos_(y, x):
    t[y] = -t[x] * np.sin(x)


@adjoint(np.tan, "np.tan")
def tan(y, x):
    d[x] = d[y] * (1.0 + y * y)


@tangent(np.tan)
def tan_(y, x):
    t[y] = t[x] * (1.0 + y * y)


@adjoint(np.arcsin, "np.arcsin")
def arcsin(y, x):
    d[x] = d[y] / np.sqrt(1.0 - x * x)


@tangent(np.arcsin)
def arcsin_(y, x):
    t[y] = t[x] / np.sqrt(1.0 - x * x)


@adjoint(np.arccos, "np.arccos")
def arccos(y, x):
    d[x] = -d[y] / np.sqrt(1.0 - x * x)


@tangent(np.arccos)
def arccos_(y, x):
    t[y] = -t[x] / np.sqrt(1.0 - x * x)


@adjoint(np.arctan, "np.arctan")
def arctan(y, x):
    d[x] = d[y] / (1.0 + x * x)


@tangent(np.arctan)
def arctan_(y, x):
    t[y] = t[x] / (1.0 + x * x)


@adjoint(np.sinh, "np.sinh")
def sinh(y, x):
    d[x] = d[y] * np.cosh(x)


@tangent(np.sinh)
def sinh_(y, x):
    t[y] = t[x] * np.cosh(x)


@adjoint(np.cosh, "np.cosh")
def cosh(y, x):
    d[x] = d[y] * np.sinh(x)


@tangent(np.cosh)
def cosh_(y, x):
    t[y] = t[x] * np.sinh(x)


@adjoint(np.tanh, "np.tanh")
def tanh(y, x):
    d[x] = d[y] * (1.0 - y * y)


@tangent(np.tanh)
def tanh_(y, x):
    t[y] = t[x] * (1.0 - y * y)


@adjoint(np.arcsinh, "np.arcsinh")
def arcsinh(y, x):
    d[x] = d[y] / np.sqrt(x * x + 1.0)


@tangent(np.arcsinh)
def arcsinh_(y, x):
    t[y] = t[x] / np.sqrt(x * x + 1.0)


@adjoint(np.arccosh, "np.arccosh")
def arccosh(y, x):
    d[x] = d[y] / np.sqrt(x * x - 1.0)


@tangent(np.arccosh)
def arccosh_(y, x):
    t[y] = t[x] / np.sqrt(x * x - 1.0)


@adjoint(np.arctanh, "np.arctanh")
def arctanh(y, x):
    d[x] = d[y] / (1.0 - x * x)


@tangent(np.arctanh)
def arctanh_(y, x):
    t[y] = t[x] / (1.0 - x * x)


@adjoint(np.exp, "np.exp")
def exp(y, x):
    d[x] = d[y] * y


@tangent(np.exp)
def exp_(y, x):
    t[y] = t[x] * y


@adjoint(np.exp2, "np.exp2")
def exp2(y, x):
    d[x] = d[y] * y * 0.6931471805599453


@tangent(np.exp2)
def exp2_(y, x):
    t[y] = t[x] * y * 0.6931471805599453


@adjoint(np.expm1, "np.expm1")
def expm1(y, x):
    d[x] = d[y] * (y + 1.0)


@tangent(np.expm1)
def expm1_(y, x):
    t[y] = t[x] * (y + 1.0)


@adjoint(np.log, "np.log")
def log(y, x):
    d[x] = d[y] / x


@tangent(np.log)
def log_(y, x):
    t[y] = t[x] / x


@adjoint(np.log2, "np.log2")
def log2(y, x):
    d[x] = d[y] / (x * 0.6931471805599453)


@tangent(np.log2)
def log2_(y, x):
    t[y] = t[x] / (x * 0.6931471805599453)


@adjoint(np.log10, "np.log10")
def log10(y, x):
    d[x] = d[y] / (x * 2.302585092994046)


@tangent(np.log10)
def log10_(y, x):
    t[y] = t[x] / (x * 2.302585092994046)


@adjoint(np.log1p, "np.log1p")
def log1p(y, x):
    d[x] = d[y] / (1.0 + x)


@tangent(np.log1p)
def log1p_(y, x):
    t[y] = t[x] / (1.0 + x)


@adjoint(np.sqrt, "np.sqrt")
def sqrt(y, x):
    d[x] = d[y] / (2.0 * y)


@tangent(np.sqrt)
def sqrt_(y, x):
    t[y] = t[x] / (2.0 * y)


@adjoint(np.cbrt, "np.cbrt")
def cbrt(y, x):
    d[x] = d[y] / (3.0 * y * y)


@tangent(np.cbrt)
def cbrt_(y, x):
    t[y] = t[x] / (3.0 * y * y)


@adjoint(np.square, "np.square")
def square(y, x):
    d[x] = d[y] * 2.0 * x


@tangent(np.square)
def square_(y, x):
    t[y] = t[x] * 2.0 * x


@adjoint(np.reciprocal, "np.reciprocal")
def reciprocal(y, x):
    d[x] = -d[y] * y * y


@tangent(np.reciprocal)
def reciprocal_(y, x):
    t[y] = -t[x] * y * y


@adjoint(np.fabs, "np.fabs")   # real x only
def absolute(y, x):
    d[x] = d[y] * np.sign(x)


@tangent(np.fabs)
def absolute_(y, x):
    t[y] = t[x] * np.sign(x)


# np.abs (np.absolute) and builtin abs also take complex z: d|z| = Re(conj(z) dz) / |z|, whose
# transpose is conj(z) / |z| (s2s/ops/fft/rules.py's convention).  abs_slope is np.sign(x) for a real
# x and conj(x) / |x| for a complex one, and its own derivative is right for both (np.sign's, 0,
# is not that of z / |z|: a second derivative through np.conj(np.sign(z)) would be wrong).
@adjoint(np.absolute, "np.abs")   # np.abs is np.absolute
def absolute_any(y, x):
    d[x] = d[y] * abs_slope(x)


@tangent(np.absolute)
def absolute_any_(y, x):
    t[y] = cotangent_kind(abs_slope(x) * t[x], y)


@adjoint(eh.abs_slope, "abs_slope")
def abs_slope(y, x):
    d[x] = abs_slope_vjp(d[y], x)


@tangent(eh.abs_slope)
def abs_slope_(y, x):
    t[y] = abs_slope_tangent(x, t[x])


@adjoint(np.deg2rad, "np.deg2rad")
def deg2rad(y, x):
    d[x] = d[y] * 0.017453292519943295


@tangent(np.deg2rad)
def deg2rad_(y, x):
    t[y] = t[x] * 0.017453292519943295


@adjoint(np.rad2deg, "np.rad2deg")
def rad2deg(y, x):
    d[x] = d[y] * 57.29577951308232


@tangent(np.rad2deg)
def rad2deg_(y, x):
    t[y] = t[x] * 57.29577951308232


_alias(np.radians, "np.radians", deg2rad, deg2rad_)
_alias(np.degrees, "np.degrees", rad2deg, rad2deg_)


@adjoint(np.sinc, "np.sinc")
def sinc(y, x):
    d[x] = d[y] * sinc_derivative(x)


@tangent(np.sinc)
def sinc_(y, x):
    t[y] = t[x] * sinc_derivative(x)


# ----- Builtins and math ------------------------------------------------------

_alias(builtins.abs, "abs", absolute_any, absolute_any_)
_alias(builtins.float, "float", positive, positive_)
_alias(builtins.max, "max", maximum, maximum_, broadcasts=True)
_alias(builtins.min, "min", minimum, minimum_, broadcasts=True)
for _name in ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "atan", "asin", "acos",
              "asinh", "acosh", "atanh", "expm1", "log1p", "log2", "log10", "exp2", "cbrt"):
    if not hasattr(math, _name):   # math.exp2 / math.cbrt are Python >= 3.11
        continue
    _np_name = {"atan": "arctan", "asin": "arcsin", "acos": "arccos",
                "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh"}.get(_name, _name)
    _alias(getattr(math, _name), "math." + _name, globals()[_np_name], globals()[_np_name + "_"])
_alias(math.fabs, "math.fabs", absolute, absolute_)
_alias(math.pow, "math.pow", power, power_, broadcasts=True)
_alias(math.atan2, "math.atan2", arctan2, arctan2_, broadcasts=True)
_alias(math.hypot, "math.hypot", hypot, hypot_, broadcasts=True)
_alias(math.degrees, "math.degrees", rad2deg, rad2deg_)
_alias(math.radians, "math.radians", deg2rad, deg2rad_)

# ----- No derivative (zero gradient, not an error) ----------------------------

for _fn in (np.iscomplexobj, np.isrealobj, np.sign, np.floor, np.ceil, np.rint, np.trunc, np.fix, np.round, np.around, np.floor_divide,
            np.signbit,
            np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
            np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
            np.isnan, np.isinf, np.isfinite, np.isclose, np.allclose, np.array_equal,
            np.isposinf, np.isneginf):
    nondiff(_fn, "np." + _fn.__name__)


# np.heaviside(x1, x2): a step in x1 (zero derivative almost everywhere), x2 where x1 == 0
@adjoint(np.heaviside, "np.heaviside", broadcasts=True)
def heaviside(y, x1, x2):
    d[x1] = d[y] * 0.0
    d[x2] = d[y] * (x1 == 0.0)


@tangent(np.heaviside, broadcasts=True)
def heaviside_(y, x1, x2):
    t[y] = t[x1] * 0.0 + t[x2] * (x1 == 0.0)


for _fn in (builtins.round, math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
            math.isclose):
    nondiff(_fn, ("math." if _fn is not builtins.round else "") + _fn.__name__)

# Helpers of ops/elementwise/helpers.py used above: masks and shares (derivative zero almost everywhere).
for _fn in (eh.tie_share, eh.nan_max_share, eh.clip_share):
    nondiff(_fn, _fn.__name__)
# sinc_derivative and safe_log are readable helpers (s2s differentiates through them).


# vmap: elementwise (every ufunc is; these are the other functions that act elementwise)
declare(np.where, np.clip, builtins.abs, eh.abs_slope, batch="elementwise")
declare(np.clip, methods=("clip",))
declare(np.clip, fusable=False)      # (Numba's np.clip takes arrays only: no per-element form in a fused loop)
declare(np.round, methods=("round",))
# Python's operators mean these ufuncs, and share their rules: `a + b` is np.add, `-a` np.negative
for _fn, _operator in ((np.add, "Add"), (np.subtract, "Sub"), (np.multiply, "Mult"), (np.true_divide, "Div"),
                       (np.power, "Pow"), (np.mod, "Mod"), (np.floor_divide, "FloorDiv"), (np.negative, "USub"),
                       (np.positive, "UAdd")):
    declare(_fn, operator=_operator)
# CUDA: the math function device code calls on numbers
for _fn, _name in ((np.sin, "sin"), (np.cos, "cos"), (np.tan, "tan"), (np.exp, "exp"), (np.log, "log"),
                   (np.sqrt, "sqrt"), (np.tanh, "tanh"), (np.sinh, "sinh"), (np.cosh, "cosh"), (np.arctan, "atan"),
                   (np.arcsin, "asin"), (np.arccos, "acos"), (np.log1p, "log1p"), (np.expm1, "expm1"),
                   (np.absolute, "fabs"), (np.floor, "floor"), (np.ceil, "ceil"), (np.log2, "log2"), (np.log10, "log10"),
                   (np.arctan2, "atan2"), (np.hypot, "hypot")):
    declare(_fn, cuda_math=_name)
# Numba: float64 arrays go through vectorizable kernels (s2s/ops/elementwise/numba_vecmath.py)
for _fn, _kernel in ((np.exp, "fast_exp"), (np.tanh, "fast_tanh"), (np.log, "fast_log"), (np.sin, "fast_sin"),
                    (np.cos, "fast_cos")):
    declare(_fn, vector_kernel=_kernel)
declare(math.floor, math.ceil, math.trunc, returns_int=True)     # (Python ints on numbers)
