"""Numba versions of the adjoint helpers of the products (see s2s/backends/numba_numpy/__init__.py).

The helpers of s2s/ops/linalg/products_helpers.py (tensordot, dot, inner, outer, kron, einsum, trace,
diag and cross cotangents, einsum_operands / einsum_with / einsum_vjp_swap), whose plain bodies use
Python lists or rank-changing calls Numba cannot type.  dot_vjp_any_a / _b have one overload each,
of every rank (vectors and matrices through s2s.runtime's matmul_vjp_a / _b, whose one Numba
version is in s2s/runtime/core_numba.py).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError

from ... import runtime as rt
from . import products_helpers as ph
from ...backends.numba_lower.common import impl_from_source, is_array, is_none, overload
from ...backends.numba_numpy.common import STANDINS, literal_value
from .numba_products import matmul, ndim, tensordot_fn


_EINSUM = STANDINS[id(np.einsum)]
_CROSS = STANDINS[id(np.cross)]


def _const_ints_src(vals) -> str:
    vals = [int(v) for v in vals]
    if not vals:
        return "np.zeros(0, dtype=np.int64)"
    return "np.array(%r, dtype=np.int64)" % (vals,)


def _static_axes(axes):
    """tensordot `axes` of these types as a Python value (int, or pair of lists), None if unknown."""
    if isinstance(axes, types.IntegerLiteral):
        return int(axes.literal_value)
    if isinstance(axes, types.Omitted):
        return axes.value
    if isinstance(axes, int):
        return axes
    if isinstance(axes, types.BaseTuple) and len(axes.types) == 2:
        out = []
        for t in axes.types:
            if isinstance(t, types.IntegerLiteral):
                out.append([int(t.literal_value)])
            elif isinstance(t, types.List) and t.initial_value is not None:
                out.append(list(t.initial_value))
            elif isinstance(t, types.BaseTuple) and all(isinstance(e, types.IntegerLiteral) for e in t.types):
                out.append([e.literal_value for e in t.types])
            else:
                return None
        return out
    return None


def _tensordot_vjp_impl(which, g, a, b, xa_xb=None, axes_type=None):
    """impl(g, a, b[, axes]) of tensordot_vjp_a (which=0) / _b (1), the plan computed at typing."""
    if not (is_array(a) and is_array(b)) or a.ndim == 0 or b.ndim == 0:
        return None
    axes = xa_xb if xa_xb is not None else _static_axes(axes_type)
    if axes is None:
        return None
    dummy_a, dummy_b = np.empty((1,) * a.ndim), np.empty((1,) * b.ndim)
    try:
        (ca, cb), perm = ph.tensordot_vjp_plan(dummy_a, dummy_b, axes, which)
    except Exception:
        return None
    gnd = ndim(g)
    if gnd is None:
        return None
    if gnd == 0:       # a full contraction: g multiplies the other operand (transposed back)
        other = "b" if which == 0 else "a"
        src = f"def impl(g, a, b, axes=2):\n    return (g * {other}).transpose({tuple(perm)!r})\n"
        return impl_from_source(src, {"np": np})
    n = len(ca)
    first, second = ("g", "b") if which == 0 else ("a", "g")
    nd1 = gnd if which == 0 else a.ndim
    nd2 = b.ndim if which == 0 else gnd
    src = ("def impl(g, a, b, axes=2):\n"
           f"    r = _td({first}, {second}, {_const_ints_src(ca)}, {_const_ints_src(cb)})\n"
           f"    return r.transpose({tuple(perm)!r})\n")
    return impl_from_source(src, {"np": np, "_td": tensordot_fn(nd1, nd2, n)})


def _tdvjp_lower(which):
    def lower(g, a, b, axes=2):
        return _tensordot_vjp_impl(which, g, a, b, axes_type=axes)
    return lower


overload(ph.tensordot_vjp_a)(_tdvjp_lower(0))
overload(ph.tensordot_vjp_b)(_tdvjp_lower(1))


def _pair_vjp_lower(which, axes_of, scalar_other):
    def lower(g, a, b):
        na, nb = ndim(a), ndim(b)
        if na is None or nb is None:
            return None
        if na == 0 or nb == 0:
            if scalar_other == "b":
                return lambda g, a, b: rt.unbroadcast(g * b, a)
            return lambda g, a, b: rt.unbroadcast(g * a, b)
        impl = _tensordot_vjp_impl(which, g, a, b, xa_xb=axes_of(na, nb))
        if impl is None:
            return None
        return impl_from_source("def impl(g, a, b):\n    return td(g, a, b)\n", {"td": numba.njit(impl)})
    return lower


def _dot_axes(na, nb):
    return [[na - 1], [max(nb - 2, 0)]]


def _inner_axes(na, nb):
    return [[na - 1], [nb - 1]]


def _dot_any_lower(which, other):
    """np.dot's cotangents, one overload for every rank: a number or 0-d operand scales, vectors and
    matrices are matmul's (s2s.runtime's matmul_vjp_a / _b), higher ranks a tensordot."""
    inner = _pair_vjp_lower(which, _dot_axes, other)
    matmul_vjp = rt.matmul_vjp_a if which == 0 else rt.matmul_vjp_b

    def lower(g, a, b):
        if not is_array(a) or not is_array(b) or a.ndim == 0 or b.ndim == 0:
            if other == "b":
                return lambda g, a, b: rt.unbroadcast(g * b, a)
            return lambda g, a, b: rt.unbroadcast(g * a, b)
        if a.ndim <= 2 and b.ndim <= 2:
            return lambda g, a, b: matmul_vjp(g, a, b)
        return inner(g, a, b)
    return lower


overload(ph.dot_vjp_any_a)(_dot_any_lower(0, "b"))
overload(ph.dot_vjp_any_b)(_dot_any_lower(1, "a"))
overload(ph.inner_vjp_a)(_pair_vjp_lower(0, _inner_axes, "b"))
overload(ph.inner_vjp_b)(_pair_vjp_lower(1, _inner_axes, "a"))



# ----- outer, kron ---------------------------------------------------------------------------------
def _outer_vjp_lower(side):
    def lower(g, a, b):
        if not (is_array(g) and is_array(a) and is_array(b)):
            return None
        if side == "a":
            return lambda g, a, b: np.ascontiguousarray(matmul(g, np.ascontiguousarray(b).ravel())).reshape(a.shape)
        return lambda g, a, b: np.ascontiguousarray(matmul(np.ascontiguousarray(a).ravel(), g)).reshape(b.shape)
    return lower


overload(ph.outer_vjp_a)(_outer_vjp_lower("a"))
overload(ph.outer_vjp_b)(_outer_vjp_lower("b"))


def _kron_vjp_lower(side):
    def lower(g, a, b):
        if not (is_array(g) and is_array(a) and is_array(b)):
            return None
        na, nb = a.ndim, b.ndim
        nd = max(na, nb)
        if g.ndim != nd:
            return None
        pa = ["1" if d < nd - na else f"a.shape[{d - (nd - na)}]" for d in range(nd)]
        pb = ["1" if d < nd - nb else f"b.shape[{d - (nd - nb)}]" for d in range(nd)]
        inter = []
        for d in range(nd):
            inter += [pa[d], pb[d]]
        tup = lambda xs: "(" + "".join(x + ", " for x in xs) + ")"  # noqa: E731
        iv = [f"i{d}" for d in range(nd)]
        jv = [f"j{d}" for d in range(nd)]
        gi = ", ".join(f"i{d}, j{d}" for d in range(nd))
        lines = ["def impl(g, a, b):",
                 f"    gg = np.ascontiguousarray(g).reshape({tup(inter)})",
                 f"    aa = np.ascontiguousarray(a).reshape({tup(pa)})",
                 f"    bb = np.ascontiguousarray(b).reshape({tup(pb)})",
                 f"    out = np.zeros({tup(pa) if side == 'a' else tup(pb)})"]
        ind = "    "
        for d in range(nd):
            lines.append(f"{ind}for i{d} in range(aa.shape[{d}]):")
            ind += "    "
        for d in range(nd):
            lines.append(f"{ind}for j{d} in range(bb.shape[{d}]):")
            ind += "    "
        if side == "a":
            lines.append(f"{ind}out[{', '.join(iv)}] += gg[{gi}] * bb[{', '.join(jv)}]")
            lines.append("    return out.reshape(a.shape)")
        else:
            lines.append(f"{ind}out[{', '.join(jv)}] += gg[{gi}] * aa[{', '.join(iv)}]")
            lines.append("    return out.reshape(b.shape)")
        return impl_from_source("\n".join(lines) + "\n", {"np": np})
    return lower


overload(ph.kron_vjp_a)(_kron_vjp_lower("a"))
overload(ph.kron_vjp_b)(_kron_vjp_lower("b"))


# ----- einsum ---------------------------------------------------------------------------------------
@overload(ph.einsum_vjp)
def _einsum_vjp(g, subscripts, k, a, b=None, c=None):
    if not isinstance(subscripts, types.StringLiteral) or not isinstance(k, types.IntegerLiteral):
        return None
    ops = [t for t in (a, b, c) if not is_none(t)]
    if not all(is_array(t) for t in ops) or not (is_array(g) or isinstance(g, types.Number)):
        return None
    kk = k.literal_value
    ins, out = ph._einsum_parse(subscripts.literal_value, [t.ndim for t in ops])
    letters_k = ins[kk]
    others, _, distinct, result, spec = ph._einsum_cotangent_letters(ins, out, kk)
    names = ["a", "b", "c"]
    x = names[kk]
    # a full contraction's cotangent is a number (`np.einsum("i,i->", x, y)`): einsum takes arrays
    lines = ["def impl(g, subscripts, k, a, b=None, c=None):",
             "    ga = g" if is_array(g) else "    ga = np.full((), g)",
             f"    r = einsum({spec!r}, ga{''.join(', ' + names[i] for i in others)})",
             f"    out = np.zeros({x}.shape)"]
    ind = "    "
    for ch in distinct:
        ax = letters_k.index(ch)
        lines.append(f"{ind}for i_{ch} in range({x}.shape[{ax}]):")
        ind += "    "
    rv = f"r[{', '.join('i_' + ch for ch in result)}]" if result else "r"
    lines.append(f"{ind}out[{', '.join('i_' + ch for ch in letters_k)}] = {rv}")
    lines.append("    return out")
    return impl_from_source("\n".join(lines) + "\n", {"np": np, "einsum": _EINSUM})


# ----- trace, diag ----------------------------------------------------------------------------------


@overload(ph.trace_vjp)
def _trace_vjp(g, a, offset=0, axis1=0, axis2=1):
    """g on the offset diagonal of a's (axis1, axis2) plane, zeros elsewhere."""
    if not is_array(a) or a.ndim < 2:
        return None
    nd = a.ndim
    ax1, ax2 = literal_value(axis1), literal_value(axis2)
    if not isinstance(ax1, int) or not isinstance(ax2, int):
        return None
    ax1, ax2 = ax1 % nd, ax2 % nd
    if ax1 == ax2:
        raise TypingError("s2s (jit): np.trace: axis1 and axis2 cannot be the same")
    perm = tuple(d for d in range(nd) if d not in (ax1, ax2)) + (ax1, ax2)
    if nd == 2:
        value = "g[()]" if is_array(g) else "g"
        put = f"            v[i, j] = {value}\n"
    else:
        put = "            v[..., i, j] = g\n"
    src = ("def impl(g, a, offset=0, axis1=0, axis2=1):\n"
           "    out = np.zeros(a.shape)\n"
           f"    v = out.transpose({perm})\n"
           "    for i in range(v.shape[-2]):\n"
           "        j = i + offset\n"
           "        if j >= 0 and j < v.shape[-1]:\n" + put +
           "    return out\n")
    return impl_from_source(src, {"np": np})


@overload(ph.diag_vjp)
def _diag_vjp(g, v, k=0):
    if not (is_array(v) and is_array(g)) or v.ndim not in (1, 2):
        return None
    if v.ndim == 1:
        return lambda g, v, k=0: np.diag(np.ascontiguousarray(g), k)

    def impl(g, v, k=0):
        out = np.zeros(v.shape)
        for i in range(g.shape[0]):
            if k >= 0:
                out[i, i + k] = g[i]
            else:
                out[i - k, i] = g[i]
        return out
    return impl


# ----- cross ---------------------------------------------------------------------------------------
def _cross_vjp_lower(side):
    def lower(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if not (is_array(a) and is_array(b) and is_array(g)):
            return None
        ax = literal_value(axis, default=NotImplemented)
        vals = [literal_value(t, default=NotImplemented) for t in (axisa, axisb, axisc)]
        if ax is NotImplemented or any(not isinstance(v, int) for v in vals):
            return None
        xa, xb, xc = (ax, ax, ax) if ax is not None else vals
        xa, xb, xc = xa % a.ndim, xb % b.ndim, xc % g.ndim
        # the cotangent has the broadcast rank (g's): an operand's vector axis goes back where
        # it is counted from the right (b of shape (3,) beside a (4, 3): axis 1 of (4, 3), not 0)
        ba, bb = xa - a.ndim + g.ndim, xb - b.ndim + g.ndim
        if ba < 0 or bb < 0:
            return None

        def impl(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
            am = np.moveaxis(a, xa, -1)
            bm = np.moveaxis(b, xb, -1)
            if am.shape[-1] != 3 or bm.shape[-1] != 3:
                raise ValueError("s2s compiles the cotangent of np.cross for 3-vectors only")
            gm = np.moveaxis(g, xc, -1)
            if side == "a":
                d = _CROSS(bm, gm)
                return rt.unbroadcast(np.moveaxis(d, -1, ba), a)
            d = _CROSS(gm, am)
            return rt.unbroadcast(np.moveaxis(d, -1, bb), b)
        return impl
    return lower


overload(ph.cross_vjp_a)(_cross_vjp_lower("a"))
overload(ph.cross_vjp_b)(_cross_vjp_lower("b"))


# ----- einsum_operands (forward mode's einsum with its unused operands left out) --------------------
_einsum_standin = STANDINS[id(np.einsum)]


@overload(ph.einsum_operands, prefer_literal=True)
def _einsum_operands(subscripts, a, b=None, c=None):
    """The operand count is read from the constant subscripts at typing time (the Python helper
    branches on it at run time, and Numba would type every branch)."""
    if not isinstance(subscripts, types.StringLiteral):
        return None
    n = ph.einsum_count(subscripts.literal_value)
    if n == 1:
        return lambda subscripts, a, b=None, c=None: _einsum_standin(subscripts, a)
    if n == 2:
        return lambda subscripts, a, b=None, c=None: _einsum_standin(subscripts, a, b)
    if n == 3:
        return lambda subscripts, a, b=None, c=None: _einsum_standin(subscripts, a, b, c)
    return None


@overload(ph.einsum_with, prefer_literal=True)
def _einsum_with(subscripts, k, x, a, b=None, c=None):
    """Which operand x replaces is read from the constant k at typing time (the Python helper
    branches on it, and Numba would type every branch: an operand may be None)."""
    kk = literal_value(k)
    if kk == 0:
        return lambda subscripts, k, x, a, b=None, c=None: ph.einsum_operands(subscripts, x, b, c)
    if kk == 1:
        return lambda subscripts, k, x, a, b=None, c=None: ph.einsum_operands(subscripts, a, x, c)
    if kk == 2:
        return lambda subscripts, k, x, a, b=None, c=None: ph.einsum_operands(subscripts, a, b, x)
    return None


@overload(ph.einsum_vjp_swap, prefer_literal=True)
def _einsum_vjp_swap(g, subscripts, k, j, x, a, b=None, c=None):
    kk, jj = literal_value(k), literal_value(j)
    if not isinstance(kk, int) or not isinstance(jj, int):
        return None
    if jj == kk:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: 0.0 * ph.einsum_vjp(g, subscripts, k, a, b, c)
    if jj == 0:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: ph.einsum_vjp(g, subscripts, k, x, b, c)
    if jj == 1:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: ph.einsum_vjp(g, subscripts, k, a, x, c)
    if jj == 2:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: ph.einsum_vjp(g, subscripts, k, a, b, x)
    return None
