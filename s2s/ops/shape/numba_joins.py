"""Stand-ins for Numba: joining (see s2s/backends/numba_numpy/__init__.py).

concatenate / stack / hstack / vstack / dstack / column_stack of lists and tuples, np.array of a
list of arrays; the Numba versions of their adjoint helpers (shape/helpers.concatenate_vjp,
stack_vjp, hstack_vjp, vstack_vjp, column_stack_vjp) and of split_vjp.
"""
from __future__ import annotations

import numpy as np
from numba import types

from . import helpers as sh
from ...backends.numba_lower.common import is_array, is_none
from ...backends.numba_lower.common import overload as helper_overload
from ...backends.numba_numpy.common import standin
from .numba import atleast_expr
from .numba_source import (axis_value, const_value, index_text, is_number, make_impl, ndim, NOT_CONSTANT, np_dtype,
                           refuse, tuple_text)


# ===== joining ==================================================================================
def _sequence(t):
    """('static', element types) for a tuple or literal list, ('dynamic', element type) for a
    list; None otherwise."""
    if isinstance(t, types.LiteralList):
        return "static", list(t.types)
    if isinstance(t, types.BaseTuple):
        return "static", list(t.types)
    if isinstance(t, (types.List, types.ListType)):
        return "dynamic", t.dtype
    return None


def _pre_expr(kind, e: str, t):
    """(source, rank) of element e (type t) prepared for the join: kind is None (as it is),
    'ravel', 'atleast_1d/2d/3d', 'column' (column_stack), or ('expand', ax) (stack)."""
    if not (is_array(t) or is_number(t)):
        return None
    nd = ndim(t)
    if kind is None:
        return (e if is_array(t) else f"np.asarray({e})"), nd
    if kind == "ravel":
        return f"np.ascontiguousarray(np.asarray({e})).ravel()", 1
    if kind in ("atleast_1d", "atleast_2d", "atleast_3d"):
        rank = int(kind[-2])
        return atleast_expr(rank, e, t), max(nd, rank)
    if kind == "column":
        if nd == 0:
            return f"np.asarray({e}).reshape((1, 1))", 2
        if nd == 1:
            return f"np.ascontiguousarray({e}).reshape((np.shape({e})[0], 1))", 2
        return e, nd
    if kind[0] == "expand":
        ax = kind[1] % (nd + 1)
        return (f"np.ascontiguousarray(np.asarray({e})).reshape(np.shape({e})[:{ax}] + (1,) + "
                f"np.shape({e})[{ax}:])", nd + 1)
    raise AssertionError(kind)


def _join_source(seq, argname: str, pre, axis, what: str, sig: str, dtype=None):
    """Source of `def impl(sig)` joining the elements of seq (argument `argname`) along axis
    (an int against the prepared rank, None: flattened, 'hstack': 0 for 1-d else 1)."""
    parts = _sequence(seq)
    if parts is None:
        return None
    kind, elems = parts
    if axis is None:
        pre = "ravel"
    if kind == "static":
        if not elems:
            refuse(f"{what}: need at least one array to concatenate")
        prepared = [_pre_expr(pre, f"{argname}[{k}]", t) for k, t in enumerate(elems)]
        if any(p is None for p in prepared):
            return None
        ranks = {r for _, r in prepared}
        etypes = elems
    else:
        p = _pre_expr(pre, f"{argname}[i]", elems)
        if p is None:
            return None
        ranks = {p[1]}
        etypes = [elems]
    if len(ranks) != 1:
        refuse(f"{what}: all the input arrays must have the same number of dimensions (got ranks {sorted(ranks)})")
    nd = ranks.pop()
    if nd == 0:
        refuse(f"{what}: zero-dimensional arrays cannot be concatenated")
    if axis is None:
        ax = 0
    elif axis == "hstack":
        ax = 0 if nd == 1 else 1
    else:
        if not -nd <= axis < nd:
            refuse(f"{what}: axis {axis} is out of bounds for arrays of dimension {nd}")
        ax = axis % nd
    dt = dtype if dtype is not None else np.result_type(*[np_dtype(t) for t in etypes])
    dts = f"np.{dt.name}" if dt.name != "bool" else "np.bool_"
    slot = index_text(nd, ax, "p:q")
    src = f"def impl({sig}):\n"
    if kind == "static":
        for k, (e, _) in enumerate(prepared):
            src += f"    e{k} = {e}\n"
        src += "    s0 = e0.shape\n    tot = 0\n"
        for k in range(len(prepared)):
            src += f"    _check_dims(e{k}.shape, s0, {ax})\n    tot += e{k}.shape[{ax}]\n"
        src += f"    out = np.empty(tuple_setitem(s0, {ax}, tot), {dts})\n    p = 0\n"
        for k in range(len(prepared)):
            src += f"    q = p + e{k}.shape[{ax}]\n    out[{slot}] = e{k}\n    p = q\n"
    else:
        e = _pre_expr(pre, f"{argname}[i]", elems)[0]
        src += (f"    if len({argname}) == 0:\n        raise ValueError('need at least one array to concatenate')\n"
                f"    i = 0\n    s0 = ({e}).shape\n    tot = 0\n"
                f"    for i in range(len({argname})):\n        ei = {e}\n"
                f"        _check_dims(ei.shape, s0, {ax})\n        tot += ei.shape[{ax}]\n"
                f"    out = np.empty(tuple_setitem(s0, {ax}, tot), {dts})\n    p = 0\n"
                f"    for i in range(len({argname})):\n        ei = {e}\n"
                f"        q = p + ei.shape[{ax}]\n        out[{slot}] = ei\n        p = q\n")
    return src + "    return out\n"


def _dtype_arg(dtype, casting, what):
    if not is_none(dtype):
        return NOT_CONSTANT
    c = const_value(casting)
    if c not in ("same_kind", None):
        return NOT_CONSTANT
    return None


@standin(np.concatenate)
def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if not is_none(out) or _dtype_arg(dtype, casting, "np.concatenate") is NOT_CONSTANT:
        return None
    ax = const_value(axis)
    if ax is NOT_CONSTANT or not (ax is None or isinstance(ax, int)):
        return None
    src = _join_source(arrays, "arrays", None, ax, "np.concatenate",
                       "arrays, axis=0, out=None, dtype=None, casting='same_kind'")
    return None if src is None else make_impl(src)


@standin(np.stack)
def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if not is_none(out) or _dtype_arg(dtype, casting, "np.stack") is NOT_CONSTANT:
        return None
    ax = const_value(axis)
    if ax is NOT_CONSTANT or not isinstance(ax, int):
        return None
    parts = _sequence(arrays)
    if parts is None:
        return None
    first = parts[1][0] if parts[0] == "static" else parts[1]
    if parts[0] == "static" and not parts[1]:
        refuse("np.stack: need at least one array to stack")
    nd = ndim(first) + 1
    if not -nd <= ax < nd:
        refuse(f"np.stack: axis {ax} is out of bounds for arrays of dimension {nd}")
    src = _join_source(arrays, "arrays", ("expand", ax % nd), ax % nd, "np.stack",
                       "arrays, axis=0, out=None, dtype=None, casting='same_kind'")
    return None if src is None else make_impl(src)


def _stack_like(pre, axis, name, with_dtype):
    sig = "tup, dtype=None, casting='same_kind'" if with_dtype else "tup"

    def typer(tup, dtype=None, casting="same_kind"):
        if with_dtype and _dtype_arg(dtype, casting, name) is NOT_CONSTANT:
            return None
        src = _join_source(tup, "tup", pre, axis, name, sig)
        return None if src is None else make_impl(src)

    if not with_dtype:
        def typer1(tup):
            return typer(tup)
        return typer1
    return typer


standin(np.hstack)(_stack_like("atleast_1d", "hstack", "np.hstack", True))
standin(np.vstack)(_stack_like("atleast_2d", 0, "np.vstack", True))
standin(np.dstack)(_stack_like("atleast_3d", 2, "np.dstack", False))
standin(np.column_stack)(_stack_like("column", 1, "np.column_stack", False))


@standin(np.array)
def _array(object, dtype=None, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None):  # noqa: A002
    defaults = const_value(copy) is True and const_value(order) == "K" and const_value(subok) is False \
        and const_value(ndmin) == 0 and const_value(ndmax) == 0 and is_none(like)
    if not defaults:
        return None
    parts = _sequence(object)
    elems = None if parts is None else (parts[1] if parts[0] == "static" else [parts[1]])
    if elems and all(is_array(t) for t in elems) and is_none(dtype):
        # a list or tuple of arrays: np.stack (which also checks that their shapes agree)
        src = _join_source(object, "object", ("expand", 0), 0, "np.array",
                           "object, dtype=None, copy=True, order='K', subok=False, ndmin=0, ndmax=0, like=None")
        return None if src is None else make_impl(src)
    if elems and any(is_array(t) for t in elems):
        return None
    if is_array(object) and is_none(dtype):
        return lambda object, dtype=None, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None: object.copy()

    def native(object, dtype=None, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None):  # noqa: A002
        return np.array(object, dtype)
    return native


# ===== adjoints of the joins and of split ======================================================


def _pieces_source(seq, argname, pre, axis, what, sig, reshape_back=True):
    """Source of `def impl(sig)` cutting g into the cotangents of the elements of seq that a join
    (_join_source's pre/axis) put together: a tuple for a tuple or literal list, a list for a list."""
    parts = _sequence(seq)
    if parts is None:
        return None
    kind, elems = parts
    flat = axis is None
    if flat:
        pre = "ravel"
    etypes = elems if kind == "static" else [elems]
    if not etypes or not all(is_array(t) for t in etypes):
        return None
    exprs = ([_pre_expr(pre, f"{argname}[{k}]", t) for k, t in enumerate(elems)] if kind == "static"
             else [_pre_expr(pre, f"{argname}[i]", elems)])
    ranks = {r for _, r in exprs}
    if len(ranks) != 1:
        return None
    nd = ranks.pop()
    if flat:
        ax = 0
    elif axis == "hstack":
        ax = 0 if nd == 1 else 1
    else:
        ax = axis % nd
    stack_axis = isinstance(pre, tuple) and pre[0] == "expand"

    def piece(e_src, x_src, k):
        if stack_axis:
            return (f"    c{k} = np.ascontiguousarray(g[{index_text(nd, ax, 'p')}])\n    p += 1\n")
        shape = f"np.shape({x_src})" if reshape_back else f"({e_src}).shape"
        return (f"    w{k} = ({e_src}).shape[{ax}]\n"
                f"    c{k} = np.ascontiguousarray(g[{index_text(nd, ax, f'p:p + w{k}')}]).reshape({shape})\n"
                f"    p += w{k}\n")
    src = f"def impl({sig}):\n    p = 0\n"
    if kind == "static":
        for k, (e, _) in enumerate(exprs):
            src += piece(e, f"{argname}[{k}]", k)
        return src + f"    return {tuple_text(f'c{k}' for k in range(len(exprs)))}\n"
    src += (f"    out = []\n    for i in range(len({argname})):\n"
            + "".join("    " + ln + "\n" for ln in piece(exprs[0][0], f"{argname}[i]", "i").splitlines())
            + "        out.append(ci)\n    return out\n")
    return src


@helper_overload(sh.concatenate_vjp)
def _concatenate_vjp(g, arrays, axis=0):
    ax = const_value(axis)
    if ax is NOT_CONSTANT or not is_array(g):
        return None
    src = _pieces_source(arrays, "arrays", None, ax, "concatenate_vjp", "g, arrays, axis=0")
    return None if src is None else make_impl(src)


@helper_overload(sh.stack_vjp)
def _stack_vjp(g, arrays, axis=0):
    ax = const_value(axis)
    if not isinstance(ax, int) or not is_array(g):
        return None
    src = _pieces_source(arrays, "arrays", ("expand", ax % g.ndim), ax % g.ndim, "stack_vjp", "g, arrays, axis=0")
    return None if src is None else make_impl(src)


def _stack_like_vjp(pre, axis):
    def typer(g, tup):
        if not is_array(g):
            return None
        src = _pieces_source(tup, "tup", pre, axis, "stack_vjp", "g, tup")
        return None if src is None else make_impl(src)
    return typer


helper_overload(sh.hstack_vjp)(_stack_like_vjp("atleast_1d", "hstack"))
helper_overload(sh.vstack_vjp)(_stack_like_vjp("atleast_2d", 0))
helper_overload(sh.column_stack_vjp)(_stack_like_vjp("column", 1))


@helper_overload(sh.split_vjp)
def _split_vjp(g, ary, indices_or_sections, axis=0):
    if not is_array(ary) or not isinstance(g, (types.List, types.ListType, types.BaseTuple)):
        return None
    ax = axis_value(axis, ary.ndim, "split_vjp")
    if ax is NOT_CONSTANT or ax is None:
        return None
    slot = index_text(ary.ndim, ax, "b[k]:b[k + 1]")
    src = ("def impl(g, ary, indices_or_sections, axis=0):\n"
           f"    b = _split_bounds(ary.shape[{ax}], indices_or_sections)\n"
           "    if len(g) != b.size - 1:\n        raise ValueError('split_vjp: wrong number of pieces')\n"
           "    out = np.zeros(ary.shape)\n")
    if isinstance(g, types.BaseTuple):
        for k in range(len(g.types)):
            src += f"    k = {k}\n    out[{slot}] = g[{k}]\n"
    else:
        src += f"    for k in range(len(g)):\n        out[{slot}] = g[k]\n"
    return make_impl(src + "    return out\n")
