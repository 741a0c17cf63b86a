"""Stand-ins for Numba: shape (see s2s/backends/numba_numpy/__init__.py).

np.ndim, np.reshape (order C/F/A), squeeze / expand_dims with literal axes, ravel, atleast_1d/2d/3d, tile,
repeat (axis); the Numba versions of the adjoint helpers shape/helpers.tile_vjp and repeat_vjp,
and of s2s.runtime.astype.
"""
from __future__ import annotations

import gast
import numba
import numba.extending
import numpy as np
from numba import types
from numba.np.numpy_support import as_dtype

from ... import runtime as rt
from ...frontend.ast_build import const, constant_value, name
from ...rules.registry import declare
from . import helpers as sh
from ...backends.numba_lower.common import is_array, is_none
from ...backends.numba_lower.common import overload as helper_overload
from ...backends.numba_numpy.common import standin
from .numba_source import (axes_value, axis_value, const_value, int_parts, is_int, is_number, make_impl, ndim,
                           NOT_CONSTANT, perm_first, refuse, tuple_text)


# ===== np.ndim (of an array or a number: the rank is part of the type) =========================
@numba.extending.overload(np.ndim)
def _np_ndim(a):
    n = a.ndim if is_array(a) else 0
    return lambda a: n


# ===== reshape, squeeze, expand_dims, atleast_nd =============================================
@standin(np.reshape)
def _reshape(a, shape=None, order="C", newshape=None, copy=None):
    if not (is_none(newshape) and is_none(copy)):
        return None
    if not (is_array(a) or is_number(a)):
        return None
    if is_int(shape):
        rev = "shape"
    elif isinstance(shape, types.BaseTuple) and all(is_int(e) for e in shape.types):
        n = len(shape.types)
        rev = tuple_text(f"shape[{k}]" for k in reversed(range(n)))
    else:
        return None
    o = const_value(order)
    if o not in ("C", "F", "A"):
        return None
    head = "def impl(a, shape=None, order='C', newshape=None, copy=None):\n    x = np.asarray(a)\n"
    c_src = "np.ascontiguousarray(x).reshape(shape)"
    f_src = f"np.ascontiguousarray(x.T).reshape({rev}).T"
    if o == "A" and is_array(a) and a.layout == "F":
        o = "F"
    if o == "A" and (not is_array(a) or a.layout == "C"):
        o = "C"
    if o == "C":
        return make_impl(head + f"    return {c_src}\n")
    if o == "F":
        return make_impl(head + f"    return {f_src}\n")
    return make_impl(head + "    if x.flags.f_contiguous and not x.flags.c_contiguous:\n"
                 f"        return np.ascontiguousarray({f_src})\n    return {c_src}\n")


@standin(np.squeeze)
def _squeeze(a, axis=None):
    if not (is_array(a) or is_number(a)):
        return None
    nd = ndim(a)
    if is_none(axis):
        if nd == 0:
            return lambda a, axis=None: np.asarray(a).copy()
        refuse("np.squeeze(a) without axis: which axes have length 1, and so the rank of the result, "
                "is known only at run time; pass axis= (an int or a tuple of ints)")
    axes = axes_value(axis, nd, "np.squeeze")
    if axes is NOT_CONSTANT:
        refuse("np.squeeze: axis must be a constant int or tuple of ints under jit")
    src = "def impl(a, axis=None):\n    x = np.asarray(a)\n    s = x.shape\n"
    for d in axes:
        src += (f"    if s[{d}] != 1:\n        raise ValueError('cannot select an axis to squeeze out "
                "which has size not equal to one')\n")
    keep = tuple_text(f"s[{d}]" for d in range(nd) if d not in axes)
    src += f"    return np.ascontiguousarray(x).reshape({keep})\n"
    return make_impl(src)


@standin(np.ravel)
def _ravel(a, order="C"):
    if not (is_array(a) or is_number(a)):
        return None
    o = const_value(order)
    if o == "A":     # F only for an F-contiguous array that is not also C-contiguous
        o = "F" if is_array(a) and a.layout == "F" and a.ndim > 1 else ("C" if not is_array(a) or a.layout == "C" else o)
    if o == "K":     # memory order: known from the layout only for contiguous arrays
        o = "C" if not is_array(a) or a.layout == "C" or a.ndim <= 1 else ("F" if a.layout == "F" else o)
    head = "def impl(a, order='C'):\n    x = np.asarray(a)\n"
    if o == "C":
        return make_impl(head + "    return np.ascontiguousarray(x).ravel()\n")
    if o == "F":
        return make_impl(head + "    return np.ascontiguousarray(x.T).ravel()\n")
    if o == "A":
        return make_impl(head + "    if x.flags.f_contiguous and not x.flags.c_contiguous:\n"
                     "        return np.ascontiguousarray(x.T).ravel()\n"
                     "    return np.ascontiguousarray(x).ravel()\n")
    if o == "K":
        refuse("np.ravel(order='K') of a non-contiguous array: its memory order is known only at run time; "
                "use order='C' or 'F'")
    refuse(f"np.ravel: order must be a constant 'C', 'F', 'A' or 'K' under jit (got {order})")


@standin(np.expand_dims)
def _expand_dims(a, axis):
    if not (is_array(a) or is_number(a)):
        return None
    nd = ndim(a)
    v = const_value(axis)
    if v is NOT_CONSTANT:
        if isinstance(axis, types.Integer) and is_array(a):
            return lambda a, axis: np.expand_dims(a, axis)     # Numba's own
        return None
    vals = v if isinstance(v, tuple) else (v,)
    out_nd = nd + len(vals)
    axes = axes_value(axis, out_nd, "np.expand_dims")
    parts, k = [], 0
    for d in range(out_nd):
        if d in axes:
            parts.append("1")
        else:
            parts.append(f"s[{k}]")
            k += 1
    src = ("def impl(a, axis):\n    x = np.asarray(a)\n    s = x.shape\n"
           f"    return np.ascontiguousarray(x).reshape({tuple_text(parts)})\n")
    return make_impl(src)


_ATLEAST_SHAPES = {   # (target rank, input rank) -> new shape from s = x.shape
    (1, 0): "(1,)",
    (2, 0): "(1, 1)", (2, 1): "(1, s[0])",
    (3, 0): "(1, 1, 1)", (3, 1): "(1, s[0], 1)", (3, 2): "(s[0], s[1], 1)",
}


def atleast_expr(rank: int, e: str, t) -> str | None:
    """Source for np.atleast_{rank}d(e) of type t."""
    if not (is_array(t) or is_number(t)):
        return None
    nd = ndim(t)
    if nd >= rank:
        return e
    new = _ATLEAST_SHAPES[(rank, nd)].replace("s[", f"np.shape({e})[")
    return f"np.ascontiguousarray(np.asarray({e})).reshape({new})"


def _atleast_typer(rank):
    def typer(*arys):
        if len(arys) == 1 and isinstance(arys[0], types.StarArgTuple):
            arys = arys[0].types
        exprs = [atleast_expr(rank, f"arys[{k}]", t) for k, t in enumerate(arys)]
        if not exprs or any(e is None for e in exprs):
            return None
        ret = exprs[0] if len(exprs) == 1 else tuple_text(exprs)
        return make_impl(f"def impl(*arys):\n    return {ret}\n")
    return typer


standin(np.atleast_1d)(_atleast_typer(1))
standin(np.atleast_2d)(_atleast_typer(2))
standin(np.atleast_3d)(_atleast_typer(3))


# ===== tile, repeat ============================================================================
@standin(np.tile)
def _tile(A, reps):
    if not (is_array(A) or is_number(A)):
        return None
    r = int_parts(reps, "reps")
    if r is None:
        return None
    nd_a = ndim(A)
    nd = max(nd_a, len(r))
    pa = ["1"] * (nd - nd_a) + [f"s[{k}]" for k in range(nd_a)]
    pr = ["1"] * (nd - len(r)) + r
    inter = [x for i in range(nd) for x in ("1", pa[i])]
    full = [x for i in range(nd) for x in (pr[i], pa[i])]
    out = [f"{pr[i]} * {pa[i]}" for i in range(nd)]
    src = ("def impl(A, reps):\n    x = np.ascontiguousarray(np.asarray(A))\n    s = x.shape\n"
           + "".join(f"    if {e} < 0:\n        raise ValueError('negative dimensions are not allowed')\n" for e in r)
           + f"    b = np.broadcast_to(x.reshape({tuple_text(inter)}), {tuple_text(full)})\n"
           f"    return np.ascontiguousarray(b).reshape({tuple_text(out)})\n")
    return make_impl(src)


@numba.njit(cache=True, error_model="numpy")
def _repeat_counts(repeats, n):
    r = np.asarray(repeats).ravel()
    if r.size == 1:
        out = np.full(n, r[0], dtype=np.int64)
    elif r.size == n:
        out = r.astype(np.int64)
    else:
        raise ValueError("np.repeat: repeats does not match the length of the axis")
    for k in range(n):
        if out[k] < 0:
            raise ValueError("negative dimensions are not allowed")
    return out


@standin(np.repeat)
def _repeat(a, repeats, axis=None):
    if not (is_array(a) or is_number(a)):
        return None
    if not (is_int(repeats) or (is_array(repeats) and isinstance(repeats.dtype, types.Integer)
                                 and repeats.ndim <= 1)):
        return None
    nd = ndim(a)
    ax = axis_value(axis, max(nd, 1), "np.repeat")
    if ax is NOT_CONSTANT:
        return None
    if ax is not None and nd == 0:
        refuse("np.repeat: axis of a 0-d array")
    src = "def impl(a, repeats, axis=None):\n    x = np.asarray(a)\n"
    if ax is None:
        src += "    y = np.ascontiguousarray(x).ravel()\n    rest = ()\n"
    else:
        perm, inv = perm_first(nd, ax)
        src += f"    y = np.ascontiguousarray(x.transpose({perm}))\n    rest = y.shape[1:]\n"
    src += ("    n = y.shape[0]\n    m = _prod(rest)\n    y2 = y.reshape((n, m))\n"
            "    r = _repeat_counts(repeats, n)\n    total = 0\n    for k in range(n):\n        total += r[k]\n"
            "    out = np.empty((total, m), y.dtype)\n    p = 0\n"
            "    for k in range(n):\n        for j in range(r[k]):\n            out[p] = y2[k]\n            p += 1\n")
    if ax is None:
        src += "    return out.reshape(total)\n"
    else:
        src += f"    return out.reshape((total,) + rest).transpose({inv})\n"
    return make_impl(src, _repeat_counts=_repeat_counts)


# ===== adjoints of tile / repeat ===============================================================


@helper_overload(sh.tile_vjp)
def _tile_vjp(g, A, reps):
    r = int_parts(reps, "reps")
    if r is None:
        return None
    if not (is_array(A) or is_number(A)):
        return None
    nd_a = ndim(A)
    nd = max(nd_a, len(r))
    pa = ["1"] * (nd - nd_a) + [f"s[{k}]" for k in range(nd_a)]
    pr = ["1"] * (nd - len(r)) + r
    full = [x for i in range(nd) for x in (pr[i], pa[i])]
    src = ("def impl(g, A, reps):\n    s = np.shape(A)\n"
           f"    gm = np.ascontiguousarray(np.asarray(g * 1.0)).reshape({tuple_text(full)})\n"
           f"    return reduce_sum(gm, {tuple(range(0, 2 * nd, 2))}, False).reshape(s)\n")
    from ..reductions.numba_kernels import reduce_sum
    return make_impl(src, reduce_sum=reduce_sum)


@helper_overload(sh.repeat_vjp)
def _repeat_vjp(g, a, repeats, axis=None):
    if not (is_array(a) or is_number(a)) or not is_array(g):
        return None
    nd = ndim(a)
    ax = axis_value(axis, max(nd, 1), "repeat_vjp")
    if ax is NOT_CONSTANT:
        return None
    src = "def impl(g, a, repeats, axis=None):\n"
    if ax is None:
        src += "    s = np.shape(a)\n    n = _prod(s)\n    gy = np.ascontiguousarray(g * 1.0).ravel()\n    rest = ()\n"
    else:
        perm, inv = perm_first(nd, ax)
        src += (f"    n = np.shape(a)[{ax}]\n    gy = np.ascontiguousarray((g * 1.0).transpose({perm}))\n"
                "    rest = gy.shape[1:]\n")
    src += ("    m = _prod(rest)\n    g2 = gy.reshape((gy.shape[0], m))\n    r = _repeat_counts(repeats, n)\n"
            "    out = np.zeros((n, m))\n    p = 0\n"
            "    for k in range(n):\n        for j in range(r[k]):\n            out[k] += g2[p]\n            p += 1\n")
    if ax is None:
        src += "    return out.reshape(s)\n"
    else:
        src += f"    return np.ascontiguousarray(out.reshape((n,) + rest).transpose({inv}))\n"
    return make_impl(src, _repeat_counts=_repeat_counts)


# ===== astype ===================================================================================
def _dtype_of(t):
    """The NumPy dtype a dtype argument names, or None."""
    if isinstance(t, types.NumberClass):
        return np.dtype(as_dtype(t.instance_type))
    if isinstance(t, types.DType):
        return np.dtype(as_dtype(t.dtype))
    if isinstance(t, types.Function):
        key = getattr(t.typing_key, "__name__", None) if not isinstance(t.typing_key, type) else t.typing_key
        for py in (int, float, bool, complex):
            if t.typing_key is py or key == py.__name__:
                return np.dtype(py)
    if isinstance(t, types.StringLiteral):
        try:
            return np.dtype(t.literal_value)
        except TypeError:
            return None
    if isinstance(t, types.Omitted) and isinstance(t.value, type):
        return np.dtype(t.value)
    return None


@helper_overload(rt.astype)
def _astype(x, dtype):
    dt = _dtype_of(dtype)
    if dt is None or not (is_array(x) or is_number(x)):
        return None
    target = dt.type
    return lambda x, dtype: np.asarray(x).astype(target)


# ----- calls rewritten into forms Numba compiles (OpRule.numba_call, read by backends/numba_cpu.lower) -----

def _transpose_call(node):
    """np.transpose(x, None) -> np.transpose(x); np.transpose(x, axes) -> x.transpose(axes)."""
    if len(node.args) == 2 and constant_value(node.args[1]) is None:
        node.args = node.args[:1]
    if len(node.args) == 2:
        return gast.Call(func=gast.Attribute(node.args[0], "transpose", gast.Load()), args=[node.args[1]],
                         keywords=[])
    return None


def _reshape_call(node):
    """np.reshape(x, shape) -> np.ascontiguousarray(x).reshape(shape): Numba reshapes only contiguous
    arrays (NumPy's reshape copies a non-contiguous one too)."""
    if len(node.args) == 2 and all(k.arg == "order" and constant_value(k.value) == "C" for k in node.keywords):
        contiguous = gast.Call(func=gast.Attribute(name("np"), "ascontiguousarray", gast.Load()), args=[node.args[0]],
                               keywords=[])
        return gast.Call(func=gast.Attribute(contiguous, "reshape", gast.Load()), args=[node.args[1]], keywords=[])
    return None


declare(np.transpose, numba_call=_transpose_call)
declare(np.reshape, numba_call=_reshape_call)
declare(np.zeros_like, cuda_scalar=lambda node: const(0.0))    # (CUDA device code: a number's zero)
