"""Stand-ins for Numba: elementwise functions it lacks (see s2s/backends/numba_numpy/__init__.py).

np.heaviside (scalars and arrays, broadcasting as NumPy does) and math.cbrt; np.clip with keyword
bounds (min=, max=), None and array bounds, and the Numba version of its adjoint helper
`elementwise/helpers.clip_share` (its plain version does not compile).
"""
from __future__ import annotations

import builtins
import math

import gast
import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError

from . import helpers as eh
from ...frontend.ast_build import call_named, const, name
from ...frontend.nodes import clone
from ...rules.registry import declare
from ...backends.numba_lower.common import impl_from_source, is_array, is_none, overload
from ...backends.numba_numpy.common import literal_value, standin
from ..reductions.numba import float_like
from ..special.numba import kernel_ufunc     # (lazy numba.vectorize of a scalar kernel)


@numba.njit(cache=True, error_model="numpy")
def _heaviside(x1, x2):
    if x1 != x1:
        return x1
    if x1 < 0.0:
        return 0.0
    if x1 > 0.0:
        return 1.0
    return x2


def _real(t) -> bool:
    dt = t.dtype if is_array(t) else t
    return isinstance(dt, (types.Float, types.Integer))


@standin(np.heaviside)
def _heaviside_typer(x1, x2):
    if not (_real(x1) and _real(x2)):
        return None
    if is_array(x1) or is_array(x2):
        uf = kernel_ufunc(_heaviside, 2)
        return lambda x1, x2: uf(x1, x2)
    return lambda x1, x2: _heaviside(float(x1), float(x2))


if hasattr(math, "cbrt"):
    @standin(math.cbrt, home="math")
    def _cbrt_typer(x):
        if not isinstance(x, (types.Float, types.Integer)):
            return None
        return lambda x: np.cbrt(float(x))


# =============================================================================
# np.clip and its adjoint helper
# =============================================================================

def _clip_operand_ok(t):
    if is_none(t):
        return True
    if is_array(t):
        return t.dtype in (types.float64, types.int64) or isinstance(t.dtype, types.Boolean)
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def _clip_bounds(a_min, a_max, min_, max_):
    """(lo, hi) argument names for the bounds given, or None when NumPy rejects the combination."""
    given = {k: not is_none(t) for k, t in (("a_min", a_min), ("a_max", a_max), ("min", min_), ("max", max_))}
    if (given["a_min"] or given["a_max"]) and (given["min"] or given["max"]):
        raise TypingError("np.clip: passing `min` or `max` keyword argument when `a_min` and `a_max` "
                          "are provided is forbidden")
    lo = "a_min" if given["a_min"] else "min" if given["min"] else None
    hi = "a_max" if given["a_max"] else "max" if given["max"] else None
    return lo, hi


@standin(np.clip)
def _clip(a, a_min=None, a_max=None, out=None, min=None, max=None):  # noqa: A002
    if not is_none(out):
        return None
    dt = a.dtype if is_array(a) else a
    if not (dt == types.float64 or isinstance(dt, types.Integer) and (dt == types.int64 or not is_array(a))):
        return None      # float32 / small ints / bool: NumPy's result dtype rules differ
    for t in (a_min, a_max, min, max):
        if not _clip_operand_ok(t):
            return None
    lo, hi = _clip_bounds(a_min, a_max, min, max)
    expr = "a"
    if lo is not None:
        expr = f"np.maximum({expr}, {lo})"
    if hi is not None:
        expr = f"np.minimum({expr}, {hi})"
    if lo is None and hi is None:
        expr = "a.copy()" if is_array(a) else "a"
    return impl_from_source(
        "import numpy as np\n"
        f"def impl(a, a_min=None, a_max=None, out=None, min=None, max=None):\n    return {expr}\n")


@overload(eh.clip_share)
def _clip_share(a, a_min=None, a_max=None, min=None, max=None, which=0):  # noqa: A002
    w = literal_value(which, default=None)
    if not isinstance(w, int):
        return None
    for t in (a, a_min, a_max, min, max):
        if not is_none(t) and not float_like(t):
            return None
    lo = "a_min" if not is_none(a_min) else "min" if not is_none(min) else None
    hi = "a_max" if not is_none(a_max) else "max" if not is_none(max) else None
    arrays = any(is_array(t) and t.ndim > 0 for t in (a, a_min, a_max, min, max) if not is_none(t))

    def is_arr(t):
        return not is_none(t) and is_array(t) and t.ndim > 0

    shaped = {"af": is_arr(a), "m": is_arr(a) or (lo is not None and is_arr({"a_min": a_min, "min": min}[lo])),
              "a_min": is_arr(a_min), "min": is_arr(min), "a_max": is_arr(a_max), "max": is_arr(max)}

    def tie(p, q):   # elementwise/helpers.tie_share(p, q): 1 where p > q, 0.5 where p == q, else 0
        if shaped[p] or shaped[q]:
            return f"np.where({p} > {q}, 1.0, np.where({p} == {q}, 0.5, 0.0))"
        return f"(1.0 if {p} > {q} else (0.5 if {p} == {q} else 0.0))"

    # the shares of minimum(maximum(a, lo), hi), ties split evenly (as the plain version)
    lines = ["    af = a * 1.0", f"    m = np.maximum(af, {lo})" if lo else "    m = af"]
    if w == 2:
        share = tie("m", hi) if hi else "0.0 * m"
    else:
        keep = tie(hi, "m") if hi else "1.0"
        if w == 1:
            share = f"{tie(lo, 'af')} * {keep}" if lo else "0.0 * m"
        else:
            share = f"{tie('af', lo)} * {keep}" if lo else f"{keep} + 0.0 * m"
    if arrays:
        lines.append(f"    return np.asarray({share}).astype(np.float64)")
    else:
        lines.append(f"    return float({share})")
    return impl_from_source("import numpy as np\n"
                            "def impl(a, a_min=None, a_max=None, min=None, max=None, which=0):\n"
                            + "\n".join(lines) + "\n")


# ----- CUDA device code: the number form of a call (OpRule.cuda_scalar, read by backends/numba_cuda.py) -----
def _where_scalar(node):
    c, a, b = node.args
    return gast.IfExp(c, a, b)


def _builtin(fname):
    return lambda node: call_named(fname, node.args)


def _sign_scalar(node):
    x = node.args[0]

    def as_float(op, arg):
        return call_named("float", [gast.Compare(arg, [op], [const(0)])])
    return gast.BinOp(as_float(gast.Gt(), x), gast.Sub(), as_float(gast.Lt(), clone(x)))


def _square_scalar(node):
    return gast.BinOp(node.args[0], gast.Mult(), clone(node.args[0]))


declare(np.where, cuda_scalar=_where_scalar)
declare(np.maximum, cuda_scalar=_builtin("max"))
declare(np.minimum, cuda_scalar=_builtin("min"))
declare(np.sign, cuda_scalar=_sign_scalar)
declare(np.square, cuda_scalar=_square_scalar)


# ----- calls rewritten into forms Numba compiles (OpRule.numba_call, read by backends/numba_cpu.lower) -----
def _abs_call(node):
    """abs(x) -> np.abs(x): Numba's builtin abs takes numbers only, and x may be an array."""
    if len(node.args) == 1 and not node.keywords:
        new = gast.Call(func=gast.Attribute(name("np"), "abs", gast.Load()), args=node.args, keywords=[])
        new.s2s_fn = np.abs
        return new
    return None


declare(builtins.abs, numba_call=_abs_call)
