"""NumPy operations: one block per op family, adjoint templates in d[x] notation.

Conventions: the first template parameter is the op's result; the others
mirror the NumPy signature.  `broadcasts=True` wraps every contribution in
`unbroadcast(..., x)`, so elementwise rules stay pure maths.
"""
# The templates are parsed, never called; names in them refer to the generated
# module's namespace (np, math and the public names of s2s.runtime).
import builtins
import math

import numpy as np

from .. import runtime as rt
from .registry import adjoint, nondiff, register

# ----- Binary arithmetic (also the operators + - * / ** @) -------------------


@adjoint(np.add, "np.add", broadcasts=True)
def add(y, a, b):
    d[a] = d[y]
    d[b] = d[y]


@adjoint(np.subtract, "np.subtract", broadcasts=True)
def subtract(y, a, b):
    d[a] = d[y]
    d[b] = -d[y]


@adjoint(np.multiply, "np.multiply", broadcasts=True)
def multiply(y, a, b):
    d[a] = d[y] * b
    d[b] = d[y] * a


@adjoint(np.true_divide, "np.divide", broadcasts=True)
def divide(y, a, b):
    d[a] = d[y] / b
    d[b] = -d[y] * y / b


@adjoint(np.power, "np.power", broadcasts=True)
def power(y, a, b):
    d[a] = d[y] * b * a ** (b - 1)
    d[b] = d[y] * y * np.log(np.where(a > 0, a, 1.0))


@adjoint(np.matmul, "np.matmul")
def matmul(y, a, b):
    d[a] = matmul_vjp_a(d[y], a, b)
    d[b] = matmul_vjp_b(d[y], a, b)


@adjoint(np.dot, "np.dot")
def dot(y, a, b):
    d[a] = dot_vjp_a(d[y], a, b)
    d[b] = dot_vjp_b(d[y], a, b)


@adjoint(np.maximum, "np.maximum", broadcasts=True)
def maximum(y, a, b):
    d[a] = d[y] * tie_weight(a, b)
    d[b] = d[y] * tie_weight(b, a)


@adjoint(np.minimum, "np.minimum", broadcasts=True)
def minimum(y, a, b):
    d[a] = d[y] * tie_weight(b, a)
    d[b] = d[y] * tie_weight(a, b)


@adjoint(np.where, "np.where", broadcasts=True)
def where(y, condition, a, b):
    d[a] = np.where(condition, d[y], 0.0)
    d[b] = np.where(condition, 0.0, d[y])


@adjoint(np.mod, "np.mod", broadcasts=True)
def mod(y, a, b):
    d[a] = d[y]
    d[b] = -d[y] * np.floor_divide(a, b)


# ----- Unary elementwise ------------------------------------------------------


@adjoint(np.negative, "np.negative")
def negative(y, x):
    d[x] = -d[y]


@adjoint(np.positive, "np.positive")
def positive(y, x):
    d[x] = d[y]


@adjoint(np.sin, "np.sin")
def sin(y, x):
    d[x] = d[y] * np.cos(x)


@adjoint(np.cos, "np.cos")
def cos(y, x):
    d[x] = -d[y] * np.sin(x)


@adjoint(np.tan, "np.tan")
def tan(y, x):
    d[x] = d[y] * (1.0 + y * y)


@adjoint(np.arctan, "np.arctan")
def arctan(y, x):
    d[x] = d[y] / (1.0 + x * x)


@adjoint(np.arcsin, "np.arcsin")
def arcsin(y, x):
    d[x] = d[y] / np.sqrt(1.0 - x * x)


@adjoint(np.arccos, "np.arccos")
def arccos(y, x):
    d[x] = -d[y] / np.sqrt(1.0 - x * x)


@adjoint(np.sinh, "np.sinh")
def sinh(y, x):
    d[x] = d[y] * np.cosh(x)


@adjoint(np.cosh, "np.cosh")
def cosh(y, x):
    d[x] = d[y] * np.sinh(x)


@adjoint(np.tanh, "np.tanh")
def tanh(y, x):
    d[x] = d[y] * (1.0 - y * y)


@adjoint(np.exp, "np.exp")
def exp(y, x):
    d[x] = d[y] * y


@adjoint(np.expm1, "np.expm1")
def expm1(y, x):
    d[x] = d[y] * (y + 1.0)


@adjoint(np.log, "np.log")
def log(y, x):
    d[x] = d[y] / x


@adjoint(np.log1p, "np.log1p")
def log1p(y, x):
    d[x] = d[y] / (1.0 + x)


@adjoint(np.log2, "np.log2")
def log2(y, x):
    d[x] = d[y] / (x * 0.6931471805599453)


@adjoint(np.log10, "np.log10")
def log10(y, x):
    d[x] = d[y] / (x * 2.302585092994046)


@adjoint(np.sqrt, "np.sqrt")
def sqrt(y, x):
    d[x] = d[y] / (2.0 * y)


@adjoint(np.square, "np.square")
def square(y, x):
    d[x] = d[y] * 2.0 * x


@adjoint(np.reciprocal, "np.reciprocal")
def reciprocal(y, x):
    d[x] = -d[y] * y * y


@adjoint(np.absolute, "np.abs")
def absolute(y, x):
    d[x] = d[y] * np.sign(x)


# ----- Reductions -------------------------------------------------------------


@adjoint(np.sum, "np.sum")
def sum(y, a, axis=None, dtype=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims)


@adjoint(np.mean, "np.mean")
def mean(y, a, axis=None, dtype=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims) / reduced_size(a, axis)


@adjoint(np.prod, "np.prod")
def prod(y, a, axis=None, dtype=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims) * prod_others(a, axis)


@adjoint(np.max, "np.max")
def max(y, a, axis=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims) * extremum_weights(a, y, axis, keepdims)


@adjoint(np.min, "np.min")
def min(y, a, axis=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims) * extremum_weights(a, y, axis, keepdims)


# ----- Shape ------------------------------------------------------------------


@adjoint(np.reshape, "np.reshape")
def reshape(y, a, shape=None, order="C"):
    d[a] = np.reshape(d[y], np.shape(a))


@adjoint(np.ravel, "np.ravel")
def ravel(y, a, order="C"):
    d[a] = np.reshape(d[y], np.shape(a))


@adjoint(np.transpose, "np.transpose")
def transpose(y, a, axes=None):
    d[a] = np.transpose(d[y], inverse_axes(axes))


@adjoint(np.swapaxes, "np.swapaxes")
def swapaxes(y, a, axis1, axis2):
    d[a] = np.swapaxes(d[y], axis1, axis2)


@adjoint(np.expand_dims, "np.expand_dims")
def expand_dims(y, a, axis):
    d[a] = np.reshape(d[y], np.shape(a))


@adjoint(np.squeeze, "np.squeeze")
def squeeze(y, a, axis=None):
    d[a] = np.reshape(d[y], np.shape(a))


@adjoint(np.broadcast_to, "np.broadcast_to")
def broadcast_to(y, array, shape, subok=False):
    d[array] = unbroadcast(d[y], array)


@adjoint(np.copy, "np.copy")
def copy(y, a, order="K", subok=False):
    d[a] = d[y]


@adjoint(np.asarray, "np.asarray")
def asarray(y, a, dtype=None, order=None):
    d[a] = d[y]


# ----- Builtins and math ------------------------------------------------------

adjoint(builtins.abs, "abs")(absolute)
adjoint(builtins.float, "float")(positive)
adjoint(builtins.max, "max", broadcasts=True)(maximum)
adjoint(builtins.min, "min", broadcasts=True)(minimum)
for _name in ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh",
              "atan", "asin", "acos", "expm1", "log1p", "log2", "log10"):
    _np_name = {"atan": "arctan", "asin": "arcsin", "acos": "arccos"}.get(_name, _name)
    adjoint(getattr(math, _name), "math." + _name)(globals()[_np_name])
adjoint(math.fabs, "math.fabs")(absolute)
adjoint(math.pow, "math.pow", broadcasts=True)(power)

# ----- No derivative (zero gradient, not an error) ----------------------------

for _fn in (np.sign, np.floor, np.ceil, np.rint, np.trunc, np.round, np.floor_divide,
            np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
            np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
            np.isnan, np.isinf, np.isfinite, np.argmax, np.argmin, np.argsort,
            np.shape, np.ndim, np.size, np.any, np.all, np.count_nonzero, np.nonzero):
    nondiff(_fn, "np." + _fn.__name__)
for _fn in (np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
            np.full_like, np.eye, np.identity, np.arange, np.linspace):
    nondiff(_fn, "np." + _fn.__name__, fresh=True)
register(np.copy, "np.copy", fresh=True)
for _fn in (builtins.len, builtins.range, builtins.reversed, builtins.int, builtins.bool, builtins.print,
            builtins.isinstance, builtins.round, math.floor, math.ceil):
    nondiff(_fn, ("math." if _fn in (math.floor, math.ceil) else "") + _fn.__name__)
nondiff(builtins.slice, "slice")


@adjoint(rt.astype, "astype")
def astype(y, x, dtype):
    d[x] = d[y] * float_dtype_flag(dtype)
