"""Stand-ins for Numba: reordering and picking (see s2s/backends/numba_numpy/__init__.py).

flip / roll / rot90 / sort / argsort / take with axes, np.argpartition; the Numba versions of the
adjoint helpers shape/helpers.negated, sort_vjp, take_vjp and take_along_axis_vjp, and of the
helpers of the order statistics (np.quantile / percentile / median: reductions/helpers.reduce_perm,
reduce_flat_shape, kept_shape, quantile_weights).
"""
from __future__ import annotations

import numpy as np
from numba import types

from ..reductions import helpers as rh
from . import helpers as sh
from ...backends.numba_lower.common import is_array, is_none
from ...backends.numba_lower.common import overload as helper_overload
from ...backends.numba_numpy.common import standin
from .numba_source import (axes_value, axis_value, const_value, dispatch_axis, index_text, int_parts, is_int,
                           is_number, make_impl, ndim, NOT_CONSTANT, perm_first, perm_last, refuse, tuple_text)


# ===== flip, roll, rot90 =======================================================================
def _flip_src(nd, axes):
    return ", ".join("::-1" if d in axes else ":" for d in range(nd))


@standin(np.flip)
def _flip(m, axis=None):
    if not (is_array(m) or is_number(m)):
        return None
    nd = ndim(m)
    head = "def impl(m, axis=None):\n    x = np.asarray(m)\n"
    if is_none(axis):
        if nd == 0:
            return make_impl(head + "    return x\n")
        return make_impl(head + f"    return x[{_flip_src(nd, range(nd))}]\n")
    if nd == 0:
        refuse("np.flip: axis of a 0-d array")
    axes = axes_value(axis, nd, "np.flip")
    if axes is NOT_CONSTANT:
        if not isinstance(axis, types.Integer):
            return None
        return make_impl(head + dispatch_axis("axis", nd, lambda k: f"return x[{_flip_src(nd, (k,))}]", "np.flip"))
    return make_impl(head + f"    return x[{_flip_src(nd, axes)}]\n")


def _roll_lines(nd, ax, shift, src_name, dst_name, indent="    "):
    lo, hi = index_text(nd, ax, "s:"), index_text(nd, ax, ":n - s")
    lo2, hi2 = index_text(nd, ax, ":s"), index_text(nd, ax, "n - s:")
    lines = (f"{dst_name} = np.empty({src_name}.shape, {src_name}.dtype)\n"
             f"n = {src_name}.shape[{ax}]\nif n > 0:\n    s = ({shift}) % n\n"
             f"    {dst_name}[{lo}] = {src_name}[{hi}]\n    {dst_name}[{lo2}] = {src_name}[{hi2}]\n")
    return "".join(indent + ln + "\n" for ln in lines.splitlines())


@standin(np.roll)
def _roll(a, shift, axis=None):
    if not (is_array(a) or is_number(a)):
        return None
    shifts = int_parts(shift, "shift")
    if shifts is None:
        return None
    nd = ndim(a)
    src = "def impl(a, shift, axis=None):\n    x = np.asarray(a)\n"
    if is_none(axis):
        total = " + ".join(shifts) if shifts else "0"
        src += "    y = np.ascontiguousarray(x).ravel()\n" + _roll_lines(1, 0, total, "y", "out")
        return make_impl(src + "    return out.reshape(x.shape)\n")
    if nd == 0:
        refuse("np.roll: axis of a 0-d array")
    v = const_value(axis)
    if v is NOT_CONSTANT:
        if not isinstance(axis, types.Integer):
            return None
        total = " + ".join(shifts) if shifts else "0"
        return make_impl(src + dispatch_axis("axis", nd, lambda k: _roll_lines(nd, k, total, "x", "out", "")
                                          + "return out", "np.roll"))
    vals = v if isinstance(v, tuple) else (v,)
    for a_ in vals:
        if isinstance(a_, bool) or not isinstance(a_, int) or not -nd <= a_ < nd:
            refuse(f"np.roll: axis {a_!r} is out of bounds for an array of dimension {nd}")
    if len(shifts) != len(vals) and len(shifts) != 1 and len(vals) != 1:
        refuse(f"np.roll: shift ({len(shifts)} values) and axis ({len(vals)} values) do not broadcast")
    n = max(len(shifts), len(vals))
    pairs = [(shifts[k if len(shifts) > 1 else 0], vals[k if len(vals) > 1 else 0] % nd) for k in range(n)]
    cur = "x"
    for k, (s, ax) in enumerate(pairs):
        src += _roll_lines(nd, ax, s, cur, f"r{k}")
        cur = f"r{k}"
    if cur == "x":
        return make_impl(src + "    return x.copy()\n")
    return make_impl(src + f"    return {cur}\n")


@helper_overload(sh.negated)
def _negated(v):
    if is_int(v) or isinstance(v, types.Number):
        return lambda v: -v
    if isinstance(v, types.BaseTuple) and all(is_int(e) for e in v.types):
        return make_impl(f"def impl(v):\n    return {tuple_text(f'-v[{k}]' for k in range(len(v.types)))}\n")
    return None


@standin(np.rot90)
def _rot90(m, k=1, axes=(0, 1)):
    if not is_array(m):
        return None
    nd = m.ndim
    ax = const_value(axes)
    if not (isinstance(ax, tuple) and len(ax) == 2 and all(isinstance(a, int) for a in ax)):
        if is_none(axes) or ax is NOT_CONSTANT:
            return None
        refuse("np.rot90: len(axes) must be 2")
    if nd < 2:
        refuse("np.rot90: the array must have at least 2 dimensions")
    if ax[0] == ax[1] or abs(ax[0] - ax[1]) == nd:
        refuse("np.rot90: axes must be different")
    if not all(-nd <= a < nd for a in ax):
        refuse(f"np.rot90: axes={ax} out of range for an array of dimension {nd}")
    a0, a1 = ax[0] % nd, ax[1] % nd
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    perm = tuple(perm)
    branches = {0: "m[:]", 1: f"m[{_flip_src(nd, (a1,))}].transpose({perm})",
                2: f"m[{_flip_src(nd, (a0, a1))}]", 3: f"m.transpose({perm})[{_flip_src(nd, (a1,))}]"}
    kv = const_value(k)
    head = "def impl(m, k=1, axes=(0, 1)):\n"
    if isinstance(kv, int) and not isinstance(kv, bool):
        return make_impl(head + f"    return {branches[kv % 4]}\n")
    if not is_int(k):
        return None
    src = head + "    kk = k % 4\n"
    for j in range(3):
        src += f"    if kk == {j}:\n        return {branches[j]}\n"
    return make_impl(src + f"    return {branches[3]}\n")


# ===== sort, argsort ============================================================================
def _sort_typer(arg: bool):
    name = "np.argsort" if arg else "np.sort"

    def typer(a, axis=-1, kind=None, order=None, stable=None):
        if not is_array(a) or not is_none(order):
            return None
        kd = const_value(kind)
        st = const_value(stable)
        if kd not in (None, "quicksort", "mergesort", "heapsort", "stable") or st not in (None, True, False):
            return None
        nd = a.ndim
        # argsort: always stable (NumPy's order of ties is unspecified unless the kind is stable)
        row = "np.argsort(r[i], kind='mergesort')" if arg else "np.sort(r[i])"
        odt = "np.int64" if arg else "y.dtype"

        def body(ax, flat=False):
            src = ""
            if flat:
                src += "y = np.ascontiguousarray(a).ravel()\n"
                inv = None
            else:
                perm, inv = perm_last(nd, ax)
                src += f"y = np.ascontiguousarray(a.transpose({perm}))\n"
            src += ("n = y.shape[-1]\nrows = _prod(y.shape[:-1])\nr = y.reshape((rows, n))\n"
                    f"out = np.empty((rows, n), {odt})\nfor i in range(rows):\n    out[i] = {row}\n")
            if flat:
                return src + "return out.reshape(n)\n"
            return src + f"return out.reshape(y.shape).transpose({inv})\n"

        head = "def impl(a, axis=-1, kind=None, order=None, stable=None):\n"
        if is_none(axis):
            return make_impl(head + "".join("    " + ln + "\n" for ln in body(0, True).splitlines()))
        if nd == 0:
            refuse(f"{name}: axis of a 0-d array")
        ax = axis_value(axis, nd, name)
        if ax is NOT_CONSTANT:
            return make_impl(head + dispatch_axis("axis", nd, body, name))
        return make_impl(head + "".join("    " + ln + "\n" for ln in body(ax).splitlines()))
    return typer


standin(np.sort)(_sort_typer(False))
standin(np.argsort)(_sort_typer(True))


@helper_overload(sh.sort_vjp)
def _sort_vjp(g, a, axis=-1):
    if not (is_array(a) and is_array(g)):
        return None
    nd = a.ndim
    head = "def impl(g, a, axis=-1):\n"
    if is_none(axis):
        return make_impl(head + "    order = np.argsort(np.ascontiguousarray(a).ravel(), kind='mergesort')\n"
                     "    gf = np.ascontiguousarray(g).ravel()\n    out = np.empty(a.size)\n"
                     "    for j in range(order.size):\n        out[order[j]] = gf[j]\n    return out.reshape(a.shape)\n")
    ax = axis_value(axis, nd, "sort_vjp")
    if ax is NOT_CONSTANT or nd == 0:
        return None
    perm, inv = perm_last(nd, ax)
    return make_impl(head + f"    y = np.ascontiguousarray(a.transpose({perm}))\n"
                 f"    gy = np.ascontiguousarray(g.transpose({perm}))\n"
                 "    n = y.shape[-1]\n    rows = _prod(y.shape[:-1])\n    r = y.reshape((rows, n))\n"
                 "    gr = gy.reshape((rows, n))\n    out = np.empty((rows, n))\n"
                 "    for i in range(rows):\n        order = np.argsort(r[i], kind='mergesort')\n"
                 "        for j in range(n):\n            out[i, order[j]] = gr[i, j]\n"
                 f"    return np.ascontiguousarray(out.reshape(y.shape).transpose({inv}))\n")


# ===== take =====================================================================================
_TAKE_MODES = {"raise": 0, "wrap": 1, "clip": 2}


def _take_index_kind(indices):
    if is_int(indices):
        return "scalar"
    if is_array(indices) and isinstance(indices.dtype, types.Integer):
        return "array"
    return None


@standin(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if not is_array(a) or not is_none(out):
        return None
    md = const_value(mode)
    kind = _take_index_kind(indices)
    if md not in _TAKE_MODES or kind is None:
        return None
    nd = a.ndim
    code = _TAKE_MODES[md]
    head = f"def impl(a, indices, axis=None, out=None, mode='raise'):\n    md = {code}\n"
    if is_none(axis):
        src = head + "    flat = np.ascontiguousarray(a).ravel()\n    n = flat.size\n"
        if kind == "scalar":
            return make_impl(src + "    return flat[_fix_index(indices, n, md)]\n")
        return make_impl(src + "    ic = np.ascontiguousarray(indices).ravel()\n    res = np.empty(ic.size, a.dtype)\n"
                     "    for k in range(ic.size):\n        res[k] = flat[_fix_index(ic[k], n, md)]\n"
                     "    return res.reshape(indices.shape)\n")
    if nd == 0:
        refuse("np.take: axis of a 0-d array")
    ax = axis_value(axis, nd, "np.take")
    if ax is NOT_CONSTANT:
        return None
    perm, _ = perm_first(nd, ax)
    src = head + (f"    y = np.ascontiguousarray(a.transpose({perm}))\n    n = y.shape[0]\n    rest = y.shape[1:]\n"
                  "    m = _prod(rest)\n    y2 = y.reshape((n, m))\n")
    if kind == "scalar":
        if nd == 1:
            return make_impl(src + "    return y2[_fix_index(indices, n, md), 0]\n")
        return make_impl(src + "    return y2[_fix_index(indices, n, md)].copy().reshape(rest)\n")
    k = indices.ndim
    # result laid out (indices dims, the dims before axis, the dims after): move the index dims to axis
    order = tuple(range(k, k + ax)) + tuple(range(k)) + tuple(range(k + ax, k + nd - 1))
    return make_impl(src + "    ic = np.ascontiguousarray(indices).ravel()\n    res = np.empty((ic.size, m), a.dtype)\n"
                 "    for j in range(ic.size):\n        res[j] = y2[_fix_index(ic[j], n, md)]\n"
                 f"    return res.reshape(indices.shape + rest).transpose({order})\n")


@helper_overload(sh.take_vjp)
def _take_vjp(g, a, indices, axis=None, mode="raise"):
    md = const_value(mode)
    kind = _take_index_kind(indices)
    if not is_array(a) or md not in _TAKE_MODES or kind is None:
        return None
    nd = a.ndim
    head = f"def impl(g, a, indices, axis=None, mode='raise'):\n    md = {_TAKE_MODES[md]}\n"
    if is_none(axis):
        src = head + "    n = a.size\n    out = np.zeros(n)\n"
        if kind == "scalar":
            src += "    out[_fix_index(indices, n, md)] += np.asarray(g).ravel()[0]\n"
        else:
            src += ("    ic = np.ascontiguousarray(indices).ravel()\n    gf = np.ascontiguousarray(np.asarray(g)).ravel()\n"
                    "    for k in range(ic.size):\n        out[_fix_index(ic[k], n, md)] += gf[k]\n")
        return make_impl(src + "    return out.reshape(a.shape)\n")
    ax = axis_value(axis, nd, "take_vjp")
    if ax is NOT_CONSTANT or nd == 0:
        return None
    perm, inv = perm_first(nd, ax)
    src = head + (f"    n = a.shape[{ax}]\n    rest = a.transpose({perm}).shape[1:]\n    m = _prod(rest)\n"
                  "    out = np.zeros((n, m))\n")
    if kind == "scalar":
        src += "    out[_fix_index(indices, n, md)] += np.ascontiguousarray(np.asarray(g)).ravel()\n"
    else:
        k = indices.ndim
        order = tuple(range(ax, ax + k)) + tuple(range(ax)) + tuple(range(ax + k, nd - 1 + k))
        src += (f"    gk = np.ascontiguousarray(np.asarray(g).transpose({order}))\n"
                "    ic = np.ascontiguousarray(indices).ravel()\n    g2 = gk.reshape((ic.size, m))\n"
                "    for j in range(ic.size):\n        out[_fix_index(ic[j], n, md)] += g2[j]\n")
    return make_impl(src + f"    return np.ascontiguousarray(out.reshape((n,) + rest).transpose({inv}))\n")


@helper_overload(sh.take_along_axis_vjp)
def _take_along_axis_vjp(g, arr, indices, axis=-1):
    if not (is_array(arr) and is_array(g) and is_array(indices)):
        return None
    nd = arr.ndim
    head = "def impl(g, arr, indices, axis=-1):\n"
    if is_none(axis):
        return make_impl(head + "    n = arr.size\n    out = np.zeros(n)\n"
                     "    ic = np.ascontiguousarray(indices).ravel()\n    gf = np.ascontiguousarray(g).ravel()\n"
                     "    if gf.size != ic.size:\n        raise ValueError('take_along_axis_vjp: shape mismatch')\n"
                     "    for k in range(ic.size):\n        out[ic[k] % n] += gf[k]\n    return out.reshape(arr.shape)\n")
    ax = axis_value(axis, nd, "take_along_axis_vjp")
    if ax is NOT_CONSTANT or indices.ndim != nd or g.ndim != nd:
        return None
    src = head + (f"    n = arr.shape[{ax}]\n    out = np.zeros(arr.shape)\n    B = g.shape\n"
                  f"    for d in range({nd}):\n"
                  "        if indices.shape[d] != 1 and g.shape[d] == 1:\n            B = tuple_setitem(B, d, indices.shape[d])\n"
                  "    for I in np.ndindex(B):\n        gi = I\n        ii = I\n        oi = I\n"
                  f"        for d in range({nd}):\n"
                  "            if g.shape[d] == 1:\n                gi = tuple_setitem(gi, d, 0)\n"
                  "            if indices.shape[d] == 1:\n                ii = tuple_setitem(ii, d, 0)\n"
                  f"            if d != {ax} and arr.shape[d] == 1:\n                oi = tuple_setitem(oi, d, 0)\n"
                  "        j = indices[ii]\n        if j < 0:\n            j += n\n"
                  f"        oi = tuple_setitem(oi, {ax}, j)\n        out[oi] += g[gi]\n    return out\n")
    return make_impl(src)


# ===== order statistics: np.quantile / percentile / median, np.partition =======================
# (s2s/ops/composite/rules.py defines them with np.sort, np.take_along_axis and these helpers)
def _reduced_mask_src(axis, nd: int, what: str):
    """Lines setting `red` (one bool per axis of an nd array: reduced?) from axis None, an int or a
    tuple of ints (values read at run time); None for another axis type."""
    if is_none(axis):
        return f"    red = np.ones({nd}, np.bool_)\n"
    check = ("        if a_ < -{nd} or a_ >= {nd}:\n"
             "            raise ValueError('" + what + ": axis is out of bounds for the array')\n").format(nd=nd)
    if is_int(axis):
        return (f"    red = np.zeros({nd}, np.bool_)\n    for a_ in (axis,):\n" + check
                + f"        red[a_ % {nd}] = True\n")
    if isinstance(axis, types.BaseTuple) and all(is_int(t) for t in axis.types):
        if len(axis.types) == 0:
            return f"    red = np.zeros({nd}, np.bool_)\n"
        return (f"    red = np.zeros({nd}, np.bool_)\n    for a_ in axis:\n" + check
                + f"        red[a_ % {nd}] = True\n")
    return None


def _n_reduced(axis, nd: int) -> int:
    if is_none(axis):
        return nd
    if isinstance(axis, types.BaseTuple):
        return len(axis.types)
    return 1


@helper_overload(rh.reduce_perm)
def _reduce_perm(x, axis=None):
    if not is_array(x) or x.ndim == 0:
        return None
    nd = x.ndim
    red = _reduced_mask_src(axis, nd, "reduce_perm")
    if red is None:
        return None
    zeros = "(" + "0, " * nd + ")"
    return make_impl("def impl(x, axis=None):\n" + red + f"    out = {zeros}\n    j = 0\n"
                 f"    for d in range({nd}):\n        if not red[d]:\n            out = tuple_setitem(out, j, d)\n"
                 "            j += 1\n"
                 f"    for d in range({nd}):\n        if red[d]:\n            out = tuple_setitem(out, j, d)\n"
                 "            j += 1\n    return out\n")


@helper_overload(rh.reduce_flat_shape)
def _reduce_flat_shape(x, axis=None):
    if not is_array(x) or x.ndim == 0:
        return None
    nd = x.ndim
    red = _reduced_mask_src(axis, nd, "reduce_flat_shape")
    if red is None:
        return None
    zeros = "(" + "0, " * (nd - _n_reduced(axis, nd) + 1) + ")"
    return make_impl("def impl(x, axis=None):\n" + red + f"    out = {zeros}\n    j = 0\n"
                 f"    for d in range({nd}):\n        if not red[d]:\n            out = tuple_setitem(out, j, x.shape[d])\n"
                 "            j += 1\n    return tuple_setitem(out, j, -1)\n")


@helper_overload(rh.kept_shape)
def _kept_shape_helper(x, axis=None):
    if not is_array(x) or x.ndim == 0:
        return None
    nd = x.ndim
    red = _reduced_mask_src(axis, nd, "kept_shape")
    if red is None:
        return None
    return make_impl("def impl(x, axis=None):\n" + red + "    out = x.shape\n"
                 f"    for d in range({nd}):\n        if red[d]:\n            out = tuple_setitem(out, d, 1)\n"
                 "    return out\n")


@helper_overload(rh.quantile_weights)
def _quantile_weights(q, shape, method="linear"):
    if not isinstance(shape, types.BaseTuple) or len(shape.types) == 0:
        return None
    if not (is_number(q) or is_array(q)):
        return None
    nd = len(shape.types)
    qshape = "".join(f"qa.shape[{d}], " for d in range(ndim(q)))
    out_shape = "(" + qshape + "1, " * (nd - 1) + "n,)"
    qa = "np.asarray(q, dtype=np.float64)" if is_array(q) else "np.full((), q, np.float64)"
    return make_impl(
        "def impl(q, shape, method='linear'):\n"
        "    if method != 'linear':\n"
        "        raise NotImplementedError(\"s2s differentiates np.quantile / np.percentile / np.median with "
        "the default method='linear' only\")\n"
        f"    qa = {qa}\n    qf = qa.ravel()\n    n = shape[-1]\n    w = np.zeros((qf.size, n))\n"
        "    for j in range(qf.size):\n"
        "        if not (qf[j] >= 0.0 and qf[j] <= 1.0):\n"
        "            raise ValueError('Quantiles must be in the range [0, 1]')\n"
        "        pos = qf[j] * (n - 1)\n        lo = np.floor(pos)\n        f = pos - lo\n        i = int(lo)\n"
        "        w[j, i] += 1.0 - f\n        if i + 1 < n:\n            w[j, i + 1] += f\n"
        f"    return w.reshape({out_shape})\n")



@standin(np.argpartition)
def _argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """np.argpartition as a stable argsort along the axis: every kth is then in place, with the
    smaller values before it and the larger after (all NumPy promises; the order within each side
    may differ from NumPy's, as it may between NumPy versions)."""
    if not is_array(a) or not is_none(order) or const_value(kind) != "introselect":
        return None
    if not (is_int(kth) or (isinstance(kth, types.BaseTuple) and all(is_int(t) for t in kth.types))
            or (is_array(kth) and isinstance(kth.dtype, types.Integer) and kth.ndim <= 1)):
        return None
    argsort = _argsort_standin()
    return lambda a, kth, axis=-1, kind="introselect", order=None: argsort(a, axis)


def _argsort_standin():
    from ...backends.numba_numpy.common import STANDINS
    return STANDINS[id(np.argsort)]
