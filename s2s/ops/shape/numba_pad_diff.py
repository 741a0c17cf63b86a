"""Stand-ins for Numba: np.pad and np.diff (see s2s/backends/numba_numpy/__init__.py).

np.pad (constant, edge, reflect, symmetric, wrap) and np.diff (n, axis, prepend, append), with the
Numba versions of their adjoint helpers (shape/helpers.pad_vjp, pad_value_vjp, diff_vjp,
diff_tangent).
"""
from __future__ import annotations

import numpy as np
from numba import types

from . import helpers as sh
from ...backends.numba_lower.common import is_array, is_none
from ...backends.numba_lower.common import overload as helper_overload
from ...backends.numba_numpy.common import STANDINS, standin
from .numba_source import (axis_value, const_value, is_int, is_number, make_impl, ndim, NOT_CONSTANT, np_dtype,
                           perm_last, refuse, tuple_text)


# ===== pad ======================================================================================
_PAD_MODES = {"constant": 0, "edge": 1, "reflect": 2, "symmetric": 3, "wrap": 4}


def _pad_widths(pad_width, nd, what):
    """Source expressions (before, after) of every axis."""
    def pair(t, e):
        if is_int(t):
            return e, e
        if isinstance(t, types.BaseTuple) and all(is_int(x) for x in t.types) and len(t.types) in (1, 2):
            return (f"{e}[0]", f"{e}[1]") if len(t.types) == 2 else (f"{e}[0]", f"{e}[0]")
        return None

    if is_int(pad_width):
        return [("pad_width", "pad_width")] * nd
    if not isinstance(pad_width, types.BaseTuple):
        return None
    ts = pad_width.types
    if all(is_int(t) for t in ts):
        p = pair(pad_width, "pad_width")
        return None if p is None else [p] * nd
    if all(isinstance(t, types.BaseTuple) for t in ts):
        if len(ts) == 1:
            p = pair(ts[0], "pad_width[0]")
            return None if p is None else [p] * nd
        if len(ts) != nd:
            refuse(f"{what}: pad_width has {len(ts)} entries for an array of dimension {nd}")
        out = [pair(t, f"pad_width[{k}]") for k, t in enumerate(ts)]
        return None if any(p is None for p in out) else out
    return None


def _pad_setup(array, pad_width, what):
    if not (is_array(array) or is_number(array)):
        return None
    nd = ndim(array)
    widths = _pad_widths(pad_width, nd, what)
    if widths is None:
        return None
    return nd, widths


def _pad_loops(nd, body: str, shape_src="s"):
    """Nested loops over the padded positions: j{d} output index, i{d} source index (maps m{d})."""
    src = ""
    for d in range(nd):
        ind = "    " * (d + 1)
        src += f"{ind}for j{d} in range(m{d}.size):\n{ind}    i{d} = m{d}[j{d}]\n"
    ind = "    " * (nd + 1)
    return src + "".join(ind + ln + "\n" for ln in body.splitlines())


@standin(np.pad)
def _pad(array, pad_width, mode="constant", constant_values=0, end_values=0, reflect_type="even",
         stat_length=None):
    md = const_value(mode)
    if md not in _PAD_MODES:
        return None
    if not (isinstance(end_values, types.Omitted) and isinstance(reflect_type, types.Omitted)
            and isinstance(stat_length, types.Omitted)):
        return None
    if md != "constant" and not isinstance(constant_values, types.Omitted):
        refuse(f"np.pad: unsupported keyword arguments for mode '{md}': constant_values")
    if md == "constant" and not is_number(constant_values):
        return None              # per-axis constants: not here
    setup = _pad_setup(array, pad_width, "np.pad")
    if setup is None:
        return None
    nd, widths = setup
    src = ("def impl(array, pad_width, mode='constant', constant_values=0, end_values=0, "
           "reflect_type='even', stat_length=None):\n    x = np.asarray(array)\n    s = x.shape\n")
    if nd == 0:
        return make_impl(src + "    return x.copy()\n")
    for d, (b, a) in enumerate(widths):
        src += f"    m{d} = _pad_map(s[{d}], {b}, {a}, {_PAD_MODES[md]})\n"
    shape = tuple_text(f"m{d}.size" for d in range(nd))
    src += f"    out = np.empty({shape}, x.dtype)\n"
    if md == "constant":
        src += "    out[...] = constant_values\n"
        inner = ", ".join(f"{b}:{b} + s[{d}]" for d, (b, _) in enumerate(widths))
        src += f"    out[{inner}] = x\n    return out\n"
        return make_impl(src)
    idx_j = ", ".join(f"j{d}" for d in range(nd))
    idx_i = ", ".join(f"i{d}" for d in range(nd))
    src += _pad_loops(nd, f"out[{idx_j}] = x[{idx_i}]") + "    return out\n"
    return make_impl(src)


@helper_overload(sh.pad_vjp)
def _pad_vjp(g, array, pad_width, mode="constant"):
    md = const_value(mode)
    if md not in _PAD_MODES:
        return None
    setup = _pad_setup(array, pad_width, "np.pad")
    if setup is None or not is_array(g):
        return None
    nd, widths = setup
    src = "def impl(g, array, pad_width, mode='constant'):\n    s = np.shape(array)\n"
    if nd == 0:
        return make_impl(src + "    return np.asarray(g * 1.0).copy()\n")
    for d, (b, a) in enumerate(widths):
        src += f"    m{d} = _pad_map(s[{d}], {b}, {a}, {_PAD_MODES[md]})\n"
    src += "    out = np.zeros(s)\n"
    idx_j = ", ".join(f"j{d}" for d in range(nd))
    idx_i = ", ".join(f"i{d}" for d in range(nd))
    cond = " and ".join(f"i{d} >= 0" for d in range(nd))
    src += _pad_loops(nd, f"if {cond}:\n    out[{idx_i}] += g[{idx_j}]") + "    return out\n"
    return make_impl(src)


@helper_overload(sh.pad_value_vjp)
def _pad_value_vjp(g, array, pad_width):
    setup = _pad_setup(array, pad_width, "np.pad")
    if setup is None or not is_array(g):
        return None
    nd, widths = setup
    src = "def impl(g, array, pad_width):\n    s = np.shape(array)\n    mask = np.ones(g.shape)\n"
    if nd:
        inner = ", ".join(f"{b}:{b} + s[{d}]" for d, (b, _) in enumerate(widths))
        src += f"    mask[{inner}] = 0.0\n"
    return make_impl(src + "    return np.sum(g * mask)\n")


# ===== diff =====================================================================================
def _diff_part(t, name, nd, perm):
    """Lines setting {name}2 (rows x width) and {name}w for a prepend/append value; None: absent."""
    if is_none(t):
        return None
    if is_number(t) or (is_array(t) and t.ndim == 0):
        return (f"    {name}w = 1\n    {name}2 = np.empty((rows, 1), dt)\n"
                f"    {name}2[:, 0] = np.asarray({name}).ravel()[0]\n")
    if is_array(t):
        if t.ndim != nd:
            refuse("np.diff: prepend/append must have the same number of dimensions as a")
        return (f"    {name}y = np.ascontiguousarray({name}.transpose({perm}))\n"
                f"    _check_dims({name}y.shape, y.shape, {nd - 1})\n"
                f"    {name}w = {name}y.shape[-1]\n    {name}2 = {name}y.reshape((rows, {name}w))\n")
    refuse(f"np.diff: prepend/append of type {t}")


@standin(np.diff)
def _diff(a, n=1, axis=-1, prepend=None, append=None):
    if not is_array(a) or not is_int(n):
        return None
    nd = a.ndim
    if nd == 0:
        refuse("np.diff requires input that is at least one dimensional")
    ax = axis_value(axis, nd, "np.diff")
    if ax is NOT_CONSTANT:
        return None
    nv = const_value(n)
    perm, inv = perm_last(nd, ax)
    parts = [a] + [t for t in (prepend, append) if not is_none(t)]
    dt = np.result_type(*[np_dtype(t) for t in parts])
    if isinstance(nv, int) and nv < 0:
        refuse(f"np.diff: order must be non-negative but got {nv}")
    if nv == 0:
        return lambda a, n=1, axis=-1, prepend=None, append=None: a
    if nv is NOT_CONSTANT and dt != np_dtype(a):
        refuse("np.diff: with a run-time n, prepend/append may not change the dtype under jit")
    op = "c[:, 1:] != c[:, :-1]" if dt == np.bool_ else "c[:, 1:] - c[:, :-1]"
    dts = "np.bool_" if dt == np.bool_ else f"np.{dt.name}"
    src = ("def impl(a, n=1, axis=-1, prepend=None, append=None):\n"
           "    if n < 0:\n        raise ValueError('order must be non-negative')\n"
           f"    dt = {dts}\n"
           f"    y = np.ascontiguousarray(a.transpose({perm}))\n"
           "    L = y.shape[-1]\n    rows = _prod(y.shape[:-1])\n")
    if nv is NOT_CONSTANT:
        src += f"    if n == 0:\n        return y.transpose({inv})\n"
    src += "    y2 = y.reshape((rows, L))\n"
    pre, app = _diff_part(prepend, "prepend", nd, perm), _diff_part(append, "append", nd, perm)
    src += (pre or "    prependw = 0\n") + (app or "    appendw = 0\n")
    src += "    c = np.empty((rows, prependw + L + appendw), dt)\n"
    if pre:
        src += "    c[:, :prependw] = prepend2\n"
    src += "    c[:, prependw:prependw + L] = y2\n"
    if app:
        src += "    c[:, prependw + L:] = append2\n"
    src += (f"    for _ in range(n):\n        c = np.ascontiguousarray({op})\n"
            f"    return c.reshape(y.shape[:-1] + (c.shape[1],)).transpose({inv})\n")
    return make_impl(src)


@helper_overload(sh.diff_vjp)
def _diff_vjp(g, a, n=1, axis=-1, prepend=None, append=None, which=1):
    if not (is_array(a) and is_array(g)) or not is_int(n):
        return None
    w = const_value(which)
    if w not in (0, 1, 2):
        return None
    nd = a.ndim
    ax = axis_value(axis, nd, "diff_vjp")
    if ax is NOT_CONSTANT or ax is None:
        return None
    perm, inv = perm_last(nd, ax)

    def width(t, name):
        if is_none(t):
            return "0"
        if is_array(t) and t.ndim == nd:
            return f"np.shape({name})[{ax}]"
        return "1"
    pre_w, app_w = width(prepend, "prepend"), width(append, "append")
    start = {0: "0", 1: "pw", 2: "pw + L"}[w]
    stop = {0: "pw", 1: "pw + L", 2: "pw + L + aw"}[w]
    target = {0: "prepend", 1: "a", 2: "append"}[w]
    src = ("def impl(g, a, n=1, axis=-1, prepend=None, append=None, which=1):\n"
           f"    pw = {pre_w}\n    aw = {app_w}\n    L = a.shape[{ax}]\n"
           f"    gy = np.ascontiguousarray(np.asarray(g * 1.0).transpose({perm}))\n"
           "    rows = _prod(gy.shape[:-1])\n    cur = gy.reshape((rows, gy.shape[-1]))\n"
           "    for _ in range(n):\n        w = cur.shape[1]\n        nxt = np.zeros((rows, w + 1))\n"
           "        nxt[:, 1:] += cur\n        nxt[:, :w] -= cur\n        cur = nxt\n"
           f"    part = np.ascontiguousarray(cur[:, {start}:{stop}])\n"
           f"    full = part.reshape(gy.shape[:-1] + (part.shape[1],)).transpose({inv})\n"
           f"    return unbroadcast(np.ascontiguousarray(full), {target})\n")
    return make_impl(src)


@helper_overload(sh.diff_tangent)
def _diff_tangent(tv, a, n=1, axis=-1, prepend=None, append=None, which=1):
    """np.diff is linear: the diff of the concatenation with part `which` replaced by its tangent
    and the other parts by zeros (np.diff's own stand-in broadcasts the prepend/append values)."""
    w = const_value(which)
    if w not in (0, 1, 2) or not is_array(a):
        return None

    def zero(t, name):
        if is_none(t):
            return "None"
        return f"np.zeros(np.shape({name}))" if is_array(t) else "0.0"
    parts = [zero(prepend, "prepend"), "np.zeros(a.shape)", zero(append, "append")]
    parts[w] = "tv * 1.0"
    src = ("def impl(tv, a, n=1, axis=-1, prepend=None, append=None, which=1):\n"
           f"    return diff({parts[1]}, n, axis, {parts[0]}, {parts[2]})\n")
    return make_impl(src, diff=STANDINS[id(np.diff)])
