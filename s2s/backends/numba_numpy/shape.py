"""Stand-ins for Numba: shape, joining, reordering and indexing (see s2s/backends/numba_numpy/__init__.py).

np.reshape (order C/F/A), squeeze / expand_dims with literal axes, atleast_1d/2d/3d, tile, repeat
(axis), concatenate / stack / hstack / vstack / dstack / column_stack of lists and tuples, np.array of
a list of arrays, flip / roll / rot90 / sort / argsort / diff / take with axes, pad (constant, edge,
reflect, symmetric, wrap); and Numba versions of the adjoint helpers of these ops (s2s.rules.shape_helpers:
tile_vjp, repeat_vjp, concatenate_vjp & co., split_vjp, pad_vjp, sort_vjp, diff_vjp, take_vjp,
take_along_axis_vjp, negated; s2s.runtime.astype).

Most implementations are generated as source per argument types (literal axes, tuple lengths,
ranks): an axis becomes a fixed index expression such as `out[:, p:q]`.
"""
from __future__ import annotations

import numba
import numba.extending
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.np.numpy_support import as_dtype

from ...rules import reduction_helpers as rh
from ...rules import shape_helpers as sh
from ... import runtime as rt
from ..numba_lower import _is_array, _is_none
from ..numba_lower import overload as helper_overload
from . import STANDINS, literal_value, standin

_NOT = object()       # an argument that is not a compile-time constant


def _refuse(msg):
    raise TypingError("s2s (jit): " + msg)


def _const(t):
    return literal_value(t, _NOT)


def _is_number(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


def _is_int(t) -> bool:
    """An int argument: an integer type, an int literal, or an omitted int default (a Python int)."""
    if isinstance(t, types.Omitted):
        t = t.value
    if isinstance(t, int):
        return not isinstance(t, bool)
    return isinstance(t, types.Integer) or (isinstance(t, types.Literal) and isinstance(t.literal_value, int)
                                           and not isinstance(t.literal_value, bool))


def _ndim(t) -> int:
    return t.ndim if _is_array(t) else 0


def _np_dtype(t):
    if _is_array(t):
        return as_dtype(t.dtype)
    if isinstance(t, types.Literal):
        return np.asarray(t.literal_value).dtype
    return as_dtype(t)


def _omitted_none(t) -> bool:
    return _is_none(t)


@numba.njit(cache=True)
def _check_dims(shape, ref, ax):
    """shape equals ref except along ax (NumPy's concatenate check)."""
    for d in range(len(ref)):
        if d != ax and shape[d] != ref[d]:
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly")


def _prod(shape):
    """The product of a shape tuple (1 for ())."""
    return int(np.prod(shape))


@numba.extending.overload(_prod)
def _prod_impl(shape):
    if not isinstance(shape, types.BaseTuple):
        return None
    if len(shape.types) == 0:
        return lambda shape: 1

    def impl(shape):
        n = 1
        for d in shape:
            n *= d
        return n
    return impl


def _make(src: str, **extra):
    """The function `impl` defined by `src` (numpy as np, and the helpers of this module)."""
    glb = {"np": np, "tuple_setitem": tuple_setitem, "_check_dims": _check_dims, "_prod": _prod,
           "_fix_index": _fix_index, "_pad_map": _pad_map, "_split_bounds": _split_bounds,
           "unbroadcast": rt.unbroadcast}
    glb.update(extra)
    try:
        exec(src, glb)
    except SyntaxError as e:          # a bug here, not the user's: show the source
        raise RuntimeError(f"s2s: bad generated stand-in source:\n{src}") from e
    return glb["impl"]


def _index(nd: int, ax: int, part: str) -> str:
    """`x[...]` index text: `part` at position ax, full slices elsewhere."""
    return ", ".join(part if d == ax else ":" for d in range(nd)) if nd else "()"


def _axis_value(t, nd: int, what: str):
    """A literal int axis normalized against nd; None for None; _NOT for a run-time int."""
    if _is_none(t):
        return None
    v = _const(t)
    if v is _NOT:
        if isinstance(t, types.Integer):
            return _NOT
        _refuse(f"{what}: axis must be None or an int (got {t})")
    if isinstance(v, bool) or not isinstance(v, int):
        _refuse(f"{what}: axis must be an int (got {v!r})")
    if not -nd <= v < nd:
        _refuse(f"{what}: axis {v} is out of bounds for an array of dimension {nd}")
    return v % nd


def _axes_value(t, nd: int, what: str):
    """A literal int or tuple of ints axis, normalized: a tuple; None for None; _NOT otherwise."""
    if _is_none(t):
        return None
    v = _const(t)
    if v is _NOT:
        return _NOT
    vals = v if isinstance(v, tuple) else (v,)
    out = []
    for a in vals:
        if isinstance(a, bool) or not isinstance(a, int):
            _refuse(f"{what}: axis entries must be ints (got {v!r})")
        if not -nd <= a < nd:
            _refuse(f"{what}: axis {a} is out of bounds for an array of dimension {nd}")
        out.append(a % nd)
    if len(set(out)) != len(out):
        _refuse(f"{what}: repeated axis in {v!r}")
    return tuple(out)


def _dispatch_axis(axis_src: str, nd: int, body, what: str) -> str:
    """Source choosing body(ax) by the run-time value of an int axis (each body returns)."""
    src = (f"    if {axis_src} < -{nd} or {axis_src} >= {nd}:\n"
           f"        raise ValueError('{what}: axis is out of bounds')\n"
           f"    ax_ = {axis_src} % {nd}\n")
    for k in range(nd):
        src += f"    {'if' if k == 0 else 'elif'} ax_ == {k}:\n"
        src += "".join("    " + ln + "\n" for ln in body(k).splitlines())
    src += "    raise ValueError('unreachable')\n"
    return src


def _perm_last(nd: int, ax: int):
    """(permutation moving ax last, its inverse)."""
    perm = tuple(d for d in range(nd) if d != ax) + (ax,)
    return perm, tuple(int(i) for i in np.argsort(perm))


def _perm_first(nd: int, ax: int):
    perm = (ax,) + tuple(d for d in range(nd) if d != ax)
    return perm, tuple(int(i) for i in np.argsort(perm))


def _int_parts(t, name):
    """Source expressions of the integers in argument `name` of type t (an int, or a tuple of
    ints), or None for any other type."""
    if _is_int(t):
        return [name]
    if isinstance(t, types.BaseTuple) and all(_is_int(e) for e in t.types):
        return [f"{name}[{k}]" for k in range(len(t.types))]
    return None


def _tup(items) -> str:
    items = list(items)
    return "(" + "".join(f"{i}, " for i in items) + ")"


# ===== reshape, squeeze, expand_dims, atleast_nd =============================================
@standin(np.reshape)
def _reshape(a, shape=None, order="C", newshape=None, copy=None):
    if not (_is_none(newshape) and _is_none(copy)):
        return None
    if not (_is_array(a) or _is_number(a)):
        return None
    if _is_int(shape):
        rev = "shape"
    elif isinstance(shape, types.BaseTuple) and all(_is_int(e) for e in shape.types):
        n = len(shape.types)
        rev = _tup(f"shape[{k}]" for k in reversed(range(n)))
    else:
        return None
    o = _const(order)
    if o not in ("C", "F", "A"):
        return None
    head = "def impl(a, shape=None, order='C', newshape=None, copy=None):\n    x = np.asarray(a)\n"
    c_src = "np.ascontiguousarray(x).reshape(shape)"
    f_src = f"np.ascontiguousarray(x.T).reshape({rev}).T"
    if o == "A" and _is_array(a) and a.layout == "F":
        o = "F"
    if o == "A" and (not _is_array(a) or a.layout == "C"):
        o = "C"
    if o == "C":
        return _make(head + f"    return {c_src}\n")
    if o == "F":
        return _make(head + f"    return {f_src}\n")
    return _make(head + "    if x.flags.f_contiguous and not x.flags.c_contiguous:\n"
                 f"        return np.ascontiguousarray({f_src})\n    return {c_src}\n")


@standin(np.squeeze)
def _squeeze(a, axis=None):
    if not (_is_array(a) or _is_number(a)):
        return None
    nd = _ndim(a)
    if _is_none(axis):
        if nd == 0:
            return lambda a, axis=None: np.asarray(a).copy()
        _refuse("np.squeeze(a) without axis: which axes have length 1, and so the rank of the result, "
                "is known only at run time; pass axis= (an int or a tuple of ints)")
    axes = _axes_value(axis, nd, "np.squeeze")
    if axes is _NOT:
        _refuse("np.squeeze: axis must be a constant int or tuple of ints under jit")
    src = "def impl(a, axis=None):\n    x = np.asarray(a)\n    s = x.shape\n"
    for d in axes:
        src += (f"    if s[{d}] != 1:\n        raise ValueError('cannot select an axis to squeeze out "
                "which has size not equal to one')\n")
    keep = _tup(f"s[{d}]" for d in range(nd) if d not in axes)
    src += f"    return np.ascontiguousarray(x).reshape({keep})\n"
    return _make(src)


@standin(np.ravel)
def _ravel(a, order="C"):
    if not (_is_array(a) or _is_number(a)):
        return None
    o = _const(order)
    if o == "A":     # F only for an F-contiguous array that is not also C-contiguous
        o = "F" if _is_array(a) and a.layout == "F" and a.ndim > 1 else ("C" if not _is_array(a) or a.layout == "C" else o)
    if o == "K":     # memory order: known from the layout only for contiguous arrays
        o = "C" if not _is_array(a) or a.layout == "C" or a.ndim <= 1 else ("F" if a.layout == "F" else o)
    head = "def impl(a, order='C'):\n    x = np.asarray(a)\n"
    if o == "C":
        return _make(head + "    return np.ascontiguousarray(x).ravel()\n")
    if o == "F":
        return _make(head + "    return np.ascontiguousarray(x.T).ravel()\n")
    if o == "A":
        return _make(head + "    if x.flags.f_contiguous and not x.flags.c_contiguous:\n"
                     "        return np.ascontiguousarray(x.T).ravel()\n"
                     "    return np.ascontiguousarray(x).ravel()\n")
    if o == "K":
        _refuse("np.ravel(order='K') of a non-contiguous array: its memory order is known only at run time; "
                "use order='C' or 'F'")
    _refuse(f"np.ravel: order must be a constant 'C', 'F', 'A' or 'K' under jit (got {order})")


@standin(np.expand_dims)
def _expand_dims(a, axis):
    if not (_is_array(a) or _is_number(a)):
        return None
    nd = _ndim(a)
    v = _const(axis)
    if v is _NOT:
        if isinstance(axis, types.Integer) and _is_array(a):
            return lambda a, axis: np.expand_dims(a, axis)     # Numba's own
        return None
    vals = v if isinstance(v, tuple) else (v,)
    out_nd = nd + len(vals)
    axes = _axes_value(axis, out_nd, "np.expand_dims")
    parts, k = [], 0
    for d in range(out_nd):
        if d in axes:
            parts.append("1")
        else:
            parts.append(f"s[{k}]")
            k += 1
    src = ("def impl(a, axis):\n    x = np.asarray(a)\n    s = x.shape\n"
           f"    return np.ascontiguousarray(x).reshape({_tup(parts)})\n")
    return _make(src)


_ATLEAST_SHAPES = {   # (target rank, input rank) -> new shape from s = x.shape
    (1, 0): "(1,)",
    (2, 0): "(1, 1)", (2, 1): "(1, s[0])",
    (3, 0): "(1, 1, 1)", (3, 1): "(1, s[0], 1)", (3, 2): "(s[0], s[1], 1)",
}


def _atleast_expr(rank: int, e: str, t) -> str | None:
    """Source for np.atleast_{rank}d(e) of type t."""
    if not (_is_array(t) or _is_number(t)):
        return None
    nd = _ndim(t)
    if nd >= rank:
        return e
    new = _ATLEAST_SHAPES[(rank, nd)].replace("s[", f"np.shape({e})[")
    return f"np.ascontiguousarray(np.asarray({e})).reshape({new})"


def _atleast_typer(rank):
    def typer(*arys):
        if len(arys) == 1 and isinstance(arys[0], types.StarArgTuple):
            arys = arys[0].types
        exprs = [_atleast_expr(rank, f"arys[{k}]", t) for k, t in enumerate(arys)]
        if not exprs or any(e is None for e in exprs):
            return None
        ret = exprs[0] if len(exprs) == 1 else _tup(exprs)
        return _make(f"def impl(*arys):\n    return {ret}\n")
    return typer


standin(np.atleast_1d)(_atleast_typer(1))
standin(np.atleast_2d)(_atleast_typer(2))
standin(np.atleast_3d)(_atleast_typer(3))


# ===== tile, repeat ============================================================================
@standin(np.tile)
def _tile(A, reps):
    if not (_is_array(A) or _is_number(A)):
        return None
    r = _int_parts(reps, "reps")
    if r is None:
        return None
    nd_a = _ndim(A)
    nd = max(nd_a, len(r))
    pa = ["1"] * (nd - nd_a) + [f"s[{k}]" for k in range(nd_a)]
    pr = ["1"] * (nd - len(r)) + r
    inter = [x for i in range(nd) for x in ("1", pa[i])]
    full = [x for i in range(nd) for x in (pr[i], pa[i])]
    out = [f"{pr[i]} * {pa[i]}" for i in range(nd)]
    src = ("def impl(A, reps):\n    x = np.ascontiguousarray(np.asarray(A))\n    s = x.shape\n"
           + "".join(f"    if {e} < 0:\n        raise ValueError('negative dimensions are not allowed')\n" for e in r)
           + f"    b = np.broadcast_to(x.reshape({_tup(inter)}), {_tup(full)})\n"
           f"    return np.ascontiguousarray(b).reshape({_tup(out)})\n")
    return _make(src)


@numba.njit(cache=True)
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
    if not (_is_array(a) or _is_number(a)):
        return None
    if not (_is_int(repeats) or (_is_array(repeats) and isinstance(repeats.dtype, types.Integer)
                                 and repeats.ndim <= 1)):
        return None
    nd = _ndim(a)
    ax = _axis_value(axis, max(nd, 1), "np.repeat")
    if ax is _NOT:
        return None
    if ax is not None and nd == 0:
        _refuse("np.repeat: axis of a 0-d array")
    src = "def impl(a, repeats, axis=None):\n    x = np.asarray(a)\n"
    if ax is None:
        src += "    y = np.ascontiguousarray(x).ravel()\n    rest = ()\n"
    else:
        perm, inv = _perm_first(nd, ax)
        src += f"    y = np.ascontiguousarray(x.transpose({perm}))\n    rest = y.shape[1:]\n"
    src += ("    n = y.shape[0]\n    m = _prod(rest)\n    y2 = y.reshape((n, m))\n"
            "    r = _repeat_counts(repeats, n)\n    total = 0\n    for k in range(n):\n        total += r[k]\n"
            "    out = np.empty((total, m), y.dtype)\n    p = 0\n"
            "    for k in range(n):\n        for j in range(r[k]):\n            out[p] = y2[k]\n            p += 1\n")
    if ax is None:
        src += "    return out.reshape(total)\n"
    else:
        src += f"    return out.reshape((total,) + rest).transpose({inv})\n"
    return _make(src, _repeat_counts=_repeat_counts)


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
    if not (_is_array(t) or _is_number(t)):
        return None
    nd = _ndim(t)
    if kind is None:
        return (e if _is_array(t) else f"np.asarray({e})"), nd
    if kind == "ravel":
        return f"np.ascontiguousarray(np.asarray({e})).ravel()", 1
    if kind in ("atleast_1d", "atleast_2d", "atleast_3d"):
        rank = int(kind[-2])
        return _atleast_expr(rank, e, t), max(nd, rank)
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
            _refuse(f"{what}: need at least one array to concatenate")
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
        _refuse(f"{what}: all the input arrays must have the same number of dimensions (got ranks {sorted(ranks)})")
    nd = ranks.pop()
    if nd == 0:
        _refuse(f"{what}: zero-dimensional arrays cannot be concatenated")
    if axis is None:
        ax = 0
    elif axis == "hstack":
        ax = 0 if nd == 1 else 1
    else:
        if not -nd <= axis < nd:
            _refuse(f"{what}: axis {axis} is out of bounds for arrays of dimension {nd}")
        ax = axis % nd
    dt = dtype if dtype is not None else np.result_type(*[_np_dtype(t) for t in etypes])
    dts = f"np.{dt.name}" if dt.name != "bool" else "np.bool_"
    slot = _index(nd, ax, "p:q")
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
    if not _is_none(dtype):
        return _NOT
    c = _const(casting)
    if c not in ("same_kind", None):
        return _NOT
    return None


@standin(np.concatenate)
def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if not _is_none(out) or _dtype_arg(dtype, casting, "np.concatenate") is _NOT:
        return None
    ax = _const(axis)
    if ax is _NOT or not (ax is None or isinstance(ax, int)):
        return None
    src = _join_source(arrays, "arrays", None, ax, "np.concatenate",
                       "arrays, axis=0, out=None, dtype=None, casting='same_kind'")
    return None if src is None else _make(src)


@standin(np.stack)
def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if not _is_none(out) or _dtype_arg(dtype, casting, "np.stack") is _NOT:
        return None
    ax = _const(axis)
    if ax is _NOT or not isinstance(ax, int):
        return None
    parts = _sequence(arrays)
    if parts is None:
        return None
    first = parts[1][0] if parts[0] == "static" else parts[1]
    if parts[0] == "static" and not parts[1]:
        _refuse("np.stack: need at least one array to stack")
    nd = _ndim(first) + 1
    if not -nd <= ax < nd:
        _refuse(f"np.stack: axis {ax} is out of bounds for arrays of dimension {nd}")
    src = _join_source(arrays, "arrays", ("expand", ax % nd), ax % nd, "np.stack",
                       "arrays, axis=0, out=None, dtype=None, casting='same_kind'")
    return None if src is None else _make(src)


def _stack_like(pre, axis, name, with_dtype):
    sig = "tup, dtype=None, casting='same_kind'" if with_dtype else "tup"

    def typer(tup, dtype=None, casting="same_kind"):
        if with_dtype and _dtype_arg(dtype, casting, name) is _NOT:
            return None
        src = _join_source(tup, "tup", pre, axis, name, sig)
        return None if src is None else _make(src)

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
    defaults = _const(copy) is True and _const(order) == "K" and _const(subok) is False \
        and _const(ndmin) == 0 and _const(ndmax) == 0 and _is_none(like)
    if not defaults:
        return None
    parts = _sequence(object)
    elems = None if parts is None else (parts[1] if parts[0] == "static" else [parts[1]])
    if elems and all(_is_array(t) for t in elems) and _is_none(dtype):
        # a list or tuple of arrays: np.stack (which also checks that their shapes agree)
        src = _join_source(object, "object", ("expand", 0), 0, "np.array",
                           "object, dtype=None, copy=True, order='K', subok=False, ndmin=0, ndmax=0, like=None")
        return None if src is None else _make(src)
    if elems and any(_is_array(t) for t in elems):
        return None
    if _is_array(object) and _is_none(dtype):
        return lambda object, dtype=None, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None: object.copy()

    def native(object, dtype=None, copy=True, order="K", subok=False, ndmin=0, ndmax=0, like=None):  # noqa: A002
        return np.array(object, dtype)
    return native


# ===== flip, roll, rot90 =======================================================================
def _flip_src(nd, axes):
    return ", ".join("::-1" if d in axes else ":" for d in range(nd))


@standin(np.flip)
def _flip(m, axis=None):
    if not (_is_array(m) or _is_number(m)):
        return None
    nd = _ndim(m)
    head = "def impl(m, axis=None):\n    x = np.asarray(m)\n"
    if _is_none(axis):
        if nd == 0:
            return _make(head + "    return x\n")
        return _make(head + f"    return x[{_flip_src(nd, range(nd))}]\n")
    if nd == 0:
        _refuse("np.flip: axis of a 0-d array")
    axes = _axes_value(axis, nd, "np.flip")
    if axes is _NOT:
        if not isinstance(axis, types.Integer):
            return None
        return _make(head + _dispatch_axis("axis", nd, lambda k: f"return x[{_flip_src(nd, (k,))}]", "np.flip"))
    return _make(head + f"    return x[{_flip_src(nd, axes)}]\n")


def _roll_lines(nd, ax, shift, src_name, dst_name, indent="    "):
    lo, hi = _index(nd, ax, "s:"), _index(nd, ax, ":n - s")
    lo2, hi2 = _index(nd, ax, ":s"), _index(nd, ax, "n - s:")
    lines = (f"{dst_name} = np.empty({src_name}.shape, {src_name}.dtype)\n"
             f"n = {src_name}.shape[{ax}]\nif n > 0:\n    s = ({shift}) % n\n"
             f"    {dst_name}[{lo}] = {src_name}[{hi}]\n    {dst_name}[{lo2}] = {src_name}[{hi2}]\n")
    return "".join(indent + ln + "\n" for ln in lines.splitlines())


@standin(np.roll)
def _roll(a, shift, axis=None):
    if not (_is_array(a) or _is_number(a)):
        return None
    shifts = _int_parts(shift, "shift")
    if shifts is None:
        return None
    nd = _ndim(a)
    src = "def impl(a, shift, axis=None):\n    x = np.asarray(a)\n"
    if _is_none(axis):
        total = " + ".join(shifts) if shifts else "0"
        src += "    y = np.ascontiguousarray(x).ravel()\n" + _roll_lines(1, 0, total, "y", "out")
        return _make(src + "    return out.reshape(x.shape)\n")
    if nd == 0:
        _refuse("np.roll: axis of a 0-d array")
    v = _const(axis)
    if v is _NOT:
        if not isinstance(axis, types.Integer):
            return None
        total = " + ".join(shifts) if shifts else "0"
        return _make(src + _dispatch_axis("axis", nd, lambda k: _roll_lines(nd, k, total, "x", "out", "")
                                          + "return out", "np.roll"))
    vals = v if isinstance(v, tuple) else (v,)
    for a_ in vals:
        if isinstance(a_, bool) or not isinstance(a_, int) or not -nd <= a_ < nd:
            _refuse(f"np.roll: axis {a_!r} is out of bounds for an array of dimension {nd}")
    if len(shifts) != len(vals) and len(shifts) != 1 and len(vals) != 1:
        _refuse(f"np.roll: shift ({len(shifts)} values) and axis ({len(vals)} values) do not broadcast")
    n = max(len(shifts), len(vals))
    pairs = [(shifts[k if len(shifts) > 1 else 0], vals[k if len(vals) > 1 else 0] % nd) for k in range(n)]
    cur = "x"
    for k, (s, ax) in enumerate(pairs):
        src += _roll_lines(nd, ax, s, cur, f"r{k}")
        cur = f"r{k}"
    if cur == "x":
        return _make(src + "    return x.copy()\n")
    return _make(src + f"    return {cur}\n")


@helper_overload(sh.negated)
def _negated(v):
    if _is_int(v) or isinstance(v, types.Number):
        return lambda v: -v
    if isinstance(v, types.BaseTuple) and all(_is_int(e) for e in v.types):
        return _make(f"def impl(v):\n    return {_tup(f'-v[{k}]' for k in range(len(v.types)))}\n")
    return None


@standin(np.rot90)
def _rot90(m, k=1, axes=(0, 1)):
    if not _is_array(m):
        return None
    nd = m.ndim
    ax = _const(axes)
    if not (isinstance(ax, tuple) and len(ax) == 2 and all(isinstance(a, int) for a in ax)):
        if _is_none(axes) or ax is _NOT:
            return None
        _refuse("np.rot90: len(axes) must be 2")
    if nd < 2:
        _refuse("np.rot90: the array must have at least 2 dimensions")
    if ax[0] == ax[1] or abs(ax[0] - ax[1]) == nd:
        _refuse("np.rot90: axes must be different")
    if not all(-nd <= a < nd for a in ax):
        _refuse(f"np.rot90: axes={ax} out of range for an array of dimension {nd}")
    a0, a1 = ax[0] % nd, ax[1] % nd
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    perm = tuple(perm)
    branches = {0: "m[:]", 1: f"m[{_flip_src(nd, (a1,))}].transpose({perm})",
                2: f"m[{_flip_src(nd, (a0, a1))}]", 3: f"m.transpose({perm})[{_flip_src(nd, (a1,))}]"}
    kv = _const(k)
    head = "def impl(m, k=1, axes=(0, 1)):\n"
    if isinstance(kv, int) and not isinstance(kv, bool):
        return _make(head + f"    return {branches[kv % 4]}\n")
    if not _is_int(k):
        return None
    src = head + "    kk = k % 4\n"
    for j in range(3):
        src += f"    if kk == {j}:\n        return {branches[j]}\n"
    return _make(src + f"    return {branches[3]}\n")


# ===== pad ======================================================================================
_PAD_MODES = {"constant": 0, "edge": 1, "reflect": 2, "symmetric": 3, "wrap": 4}


@numba.njit(cache=True)
def _pad_map(n, before, after, mode):
    """Source position along one axis of each position of the padded axis (-1: the constant)."""
    if before < 0 or after < 0:
        raise ValueError("index can't contain negative values")
    out = np.empty(n + before + after, dtype=np.int64)
    if n == 0 and mode != 0 and before + after > 0:
        raise ValueError("can't extend empty axis using modes other than 'constant' or 'empty'")
    for j in range(out.size):
        i = j - before
        if mode == 0:
            out[j] = i if 0 <= i < n else -1
        elif mode == 1:
            out[j] = min(max(i, 0), n - 1)
        elif mode == 2:
            if n == 1:
                out[j] = 0
            else:
                p = i % (2 * n - 2)
                out[j] = p if p < n else 2 * n - 2 - p
        elif mode == 3:
            p = i % (2 * n)
            out[j] = p if p < n else 2 * n - 1 - p
        else:
            out[j] = i % n
    return out


def _pad_widths(pad_width, nd, what):
    """Source expressions (before, after) of every axis."""
    def pair(t, e):
        if _is_int(t):
            return e, e
        if isinstance(t, types.BaseTuple) and all(_is_int(x) for x in t.types) and len(t.types) in (1, 2):
            return (f"{e}[0]", f"{e}[1]") if len(t.types) == 2 else (f"{e}[0]", f"{e}[0]")
        return None

    if _is_int(pad_width):
        return [("pad_width", "pad_width")] * nd
    if not isinstance(pad_width, types.BaseTuple):
        return None
    ts = pad_width.types
    if all(_is_int(t) for t in ts):
        p = pair(pad_width, "pad_width")
        return None if p is None else [p] * nd
    if all(isinstance(t, types.BaseTuple) for t in ts):
        if len(ts) == 1:
            p = pair(ts[0], "pad_width[0]")
            return None if p is None else [p] * nd
        if len(ts) != nd:
            _refuse(f"{what}: pad_width has {len(ts)} entries for an array of dimension {nd}")
        out = [pair(t, f"pad_width[{k}]") for k, t in enumerate(ts)]
        return None if any(p is None for p in out) else out
    return None


def _pad_setup(array, pad_width, what):
    if not (_is_array(array) or _is_number(array)):
        return None
    nd = _ndim(array)
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
    md = _const(mode)
    if md not in _PAD_MODES:
        return None
    if not (isinstance(end_values, types.Omitted) and isinstance(reflect_type, types.Omitted)
            and isinstance(stat_length, types.Omitted)):
        return None
    if md != "constant" and not isinstance(constant_values, types.Omitted):
        _refuse(f"np.pad: unsupported keyword arguments for mode '{md}': constant_values")
    if md == "constant" and not _is_number(constant_values):
        return None              # per-axis constants: not here
    setup = _pad_setup(array, pad_width, "np.pad")
    if setup is None:
        return None
    nd, widths = setup
    src = ("def impl(array, pad_width, mode='constant', constant_values=0, end_values=0, "
           "reflect_type='even', stat_length=None):\n    x = np.asarray(array)\n    s = x.shape\n")
    if nd == 0:
        return _make(src + "    return x.copy()\n")
    for d, (b, a) in enumerate(widths):
        src += f"    m{d} = _pad_map(s[{d}], {b}, {a}, {_PAD_MODES[md]})\n"
    shape = _tup(f"m{d}.size" for d in range(nd))
    src += f"    out = np.empty({shape}, x.dtype)\n"
    if md == "constant":
        src += "    out[...] = constant_values\n"
        inner = ", ".join(f"{b}:{b} + s[{d}]" for d, (b, _) in enumerate(widths))
        src += f"    out[{inner}] = x\n    return out\n"
        return _make(src)
    idx_j = ", ".join(f"j{d}" for d in range(nd))
    idx_i = ", ".join(f"i{d}" for d in range(nd))
    src += _pad_loops(nd, f"out[{idx_j}] = x[{idx_i}]") + "    return out\n"
    return _make(src)


@helper_overload(sh.pad_vjp)
def _pad_vjp(g, array, pad_width, mode="constant"):
    md = _const(mode)
    if md not in _PAD_MODES:
        return None
    setup = _pad_setup(array, pad_width, "np.pad")
    if setup is None or not _is_array(g):
        return None
    nd, widths = setup
    src = "def impl(g, array, pad_width, mode='constant'):\n    s = np.shape(array)\n"
    if nd == 0:
        return _make(src + "    return np.asarray(g * 1.0).copy()\n")
    for d, (b, a) in enumerate(widths):
        src += f"    m{d} = _pad_map(s[{d}], {b}, {a}, {_PAD_MODES[md]})\n"
    src += "    out = np.zeros(s)\n"
    idx_j = ", ".join(f"j{d}" for d in range(nd))
    idx_i = ", ".join(f"i{d}" for d in range(nd))
    cond = " and ".join(f"i{d} >= 0" for d in range(nd))
    src += _pad_loops(nd, f"if {cond}:\n    out[{idx_i}] += g[{idx_j}]") + "    return out\n"
    return _make(src)


@helper_overload(sh.pad_value_vjp)
def _pad_value_vjp(g, array, pad_width):
    setup = _pad_setup(array, pad_width, "np.pad")
    if setup is None or not _is_array(g):
        return None
    nd, widths = setup
    src = "def impl(g, array, pad_width):\n    s = np.shape(array)\n    mask = np.ones(g.shape)\n"
    if nd:
        inner = ", ".join(f"{b}:{b} + s[{d}]" for d, (b, _) in enumerate(widths))
        src += f"    mask[{inner}] = 0.0\n"
    return _make(src + "    return np.sum(g * mask)\n")


# ===== sort, argsort ============================================================================
def _sort_typer(arg: bool):
    name = "np.argsort" if arg else "np.sort"

    def typer(a, axis=-1, kind=None, order=None, stable=None):
        if not _is_array(a) or not _is_none(order):
            return None
        kd = _const(kind)
        st = _const(stable)
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
                perm, inv = _perm_last(nd, ax)
                src += f"y = np.ascontiguousarray(a.transpose({perm}))\n"
            src += ("n = y.shape[-1]\nrows = _prod(y.shape[:-1])\nr = y.reshape((rows, n))\n"
                    f"out = np.empty((rows, n), {odt})\nfor i in range(rows):\n    out[i] = {row}\n")
            if flat:
                return src + "return out.reshape(n)\n"
            return src + f"return out.reshape(y.shape).transpose({inv})\n"

        head = "def impl(a, axis=-1, kind=None, order=None, stable=None):\n"
        if _is_none(axis):
            return _make(head + "".join("    " + ln + "\n" for ln in body(0, True).splitlines()))
        if nd == 0:
            _refuse(f"{name}: axis of a 0-d array")
        ax = _axis_value(axis, nd, name)
        if ax is _NOT:
            return _make(head + _dispatch_axis("axis", nd, body, name))
        return _make(head + "".join("    " + ln + "\n" for ln in body(ax).splitlines()))
    return typer


standin(np.sort)(_sort_typer(False))
standin(np.argsort)(_sort_typer(True))


@helper_overload(sh.sort_vjp)
def _sort_vjp(g, a, axis=-1):
    if not (_is_array(a) and _is_array(g)):
        return None
    nd = a.ndim
    head = "def impl(g, a, axis=-1):\n"
    if _is_none(axis):
        return _make(head + "    order = np.argsort(np.ascontiguousarray(a).ravel(), kind='mergesort')\n"
                     "    gf = np.ascontiguousarray(g).ravel()\n    out = np.empty(a.size)\n"
                     "    for j in range(order.size):\n        out[order[j]] = gf[j]\n    return out.reshape(a.shape)\n")
    ax = _axis_value(axis, nd, "sort_vjp")
    if ax is _NOT or nd == 0:
        return None
    perm, inv = _perm_last(nd, ax)
    return _make(head + f"    y = np.ascontiguousarray(a.transpose({perm}))\n"
                 f"    gy = np.ascontiguousarray(g.transpose({perm}))\n"
                 "    n = y.shape[-1]\n    rows = _prod(y.shape[:-1])\n    r = y.reshape((rows, n))\n"
                 "    gr = gy.reshape((rows, n))\n    out = np.empty((rows, n))\n"
                 "    for i in range(rows):\n        order = np.argsort(r[i], kind='mergesort')\n"
                 "        for j in range(n):\n            out[i, order[j]] = gr[i, j]\n"
                 f"    return np.ascontiguousarray(out.reshape(y.shape).transpose({inv}))\n")


# ===== diff =====================================================================================
def _diff_part(t, name, nd, perm):
    """Lines setting {name}2 (rows x width) and {name}w for a prepend/append value; None: absent."""
    if _is_none(t):
        return None
    if _is_number(t) or (_is_array(t) and t.ndim == 0):
        return (f"    {name}w = 1\n    {name}2 = np.empty((rows, 1), dt)\n"
                f"    {name}2[:, 0] = np.asarray({name}).ravel()[0]\n")
    if _is_array(t):
        if t.ndim != nd:
            _refuse("np.diff: prepend/append must have the same number of dimensions as a")
        return (f"    {name}y = np.ascontiguousarray({name}.transpose({perm}))\n"
                f"    _check_dims({name}y.shape, y.shape, {nd - 1})\n"
                f"    {name}w = {name}y.shape[-1]\n    {name}2 = {name}y.reshape((rows, {name}w))\n")
    _refuse(f"np.diff: prepend/append of type {t}")


@standin(np.diff)
def _diff(a, n=1, axis=-1, prepend=None, append=None):
    if not _is_array(a) or not _is_int(n):
        return None
    nd = a.ndim
    if nd == 0:
        _refuse("np.diff requires input that is at least one dimensional")
    ax = _axis_value(axis, nd, "np.diff")
    if ax is _NOT:
        return None
    nv = _const(n)
    perm, inv = _perm_last(nd, ax)
    parts = [a] + [t for t in (prepend, append) if not _is_none(t)]
    dt = np.result_type(*[_np_dtype(t) for t in parts])
    if isinstance(nv, int) and nv < 0:
        _refuse(f"np.diff: order must be non-negative but got {nv}")
    if nv == 0:
        return lambda a, n=1, axis=-1, prepend=None, append=None: a
    if nv is _NOT and dt != _np_dtype(a):
        _refuse("np.diff: with a run-time n, prepend/append may not change the dtype under jit")
    op = "c[:, 1:] != c[:, :-1]" if dt == np.bool_ else "c[:, 1:] - c[:, :-1]"
    dts = "np.bool_" if dt == np.bool_ else f"np.{dt.name}"
    src = ("def impl(a, n=1, axis=-1, prepend=None, append=None):\n"
           "    if n < 0:\n        raise ValueError('order must be non-negative')\n"
           f"    dt = {dts}\n"
           f"    y = np.ascontiguousarray(a.transpose({perm}))\n"
           "    L = y.shape[-1]\n    rows = _prod(y.shape[:-1])\n")
    if nv is _NOT:
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
    return _make(src)


@helper_overload(sh.diff_vjp)
def _diff_vjp(g, a, n=1, axis=-1, prepend=None, append=None, which=1):
    if not (_is_array(a) and _is_array(g)) or not _is_int(n):
        return None
    w = _const(which)
    if w not in (0, 1, 2):
        return None
    nd = a.ndim
    ax = _axis_value(axis, nd, "diff_vjp")
    if ax is _NOT or ax is None:
        return None
    perm, inv = _perm_last(nd, ax)

    def width(t, name):
        if _is_none(t):
            return "0"
        if _is_array(t) and t.ndim == nd:
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
    return _make(src)


@helper_overload(sh.diff_tangent)
def _diff_tangent(tv, a, n=1, axis=-1, prepend=None, append=None, which=1):
    """np.diff is linear: the diff of the concatenation with part `which` replaced by its tangent
    and the other parts by zeros (np.diff's own stand-in broadcasts the prepend/append values)."""
    w = _const(which)
    if w not in (0, 1, 2) or not _is_array(a):
        return None

    def zero(t, name):
        if _is_none(t):
            return "None"
        return f"np.zeros(np.shape({name}))" if _is_array(t) else "0.0"
    parts = [zero(prepend, "prepend"), "np.zeros(a.shape)", zero(append, "append")]
    parts[w] = "tv * 1.0"
    src = ("def impl(tv, a, n=1, axis=-1, prepend=None, append=None, which=1):\n"
           f"    return diff({parts[1]}, n, axis, {parts[0]}, {parts[2]})\n")
    return _make(src, diff=STANDINS[id(np.diff)])


# ===== take =====================================================================================
_TAKE_MODES = {"raise": 0, "wrap": 1, "clip": 2}


@numba.njit(cache=True)
def _fix_index(i, n, mode):
    if mode == 0:
        if i < -n or i >= n:
            raise IndexError("index out of bounds")
        return i + n if i < 0 else i
    if n == 0:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    if mode == 1:
        return i % n
    return min(max(i, 0), n - 1)


def _take_index_kind(indices):
    if _is_int(indices):
        return "scalar"
    if _is_array(indices) and isinstance(indices.dtype, types.Integer):
        return "array"
    return None


@standin(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if not _is_array(a) or not _is_none(out):
        return None
    md = _const(mode)
    kind = _take_index_kind(indices)
    if md not in _TAKE_MODES or kind is None:
        return None
    nd = a.ndim
    code = _TAKE_MODES[md]
    head = f"def impl(a, indices, axis=None, out=None, mode='raise'):\n    md = {code}\n"
    if _is_none(axis):
        src = head + "    flat = np.ascontiguousarray(a).ravel()\n    n = flat.size\n"
        if kind == "scalar":
            return _make(src + "    return flat[_fix_index(indices, n, md)]\n")
        return _make(src + "    ic = np.ascontiguousarray(indices).ravel()\n    res = np.empty(ic.size, a.dtype)\n"
                     "    for k in range(ic.size):\n        res[k] = flat[_fix_index(ic[k], n, md)]\n"
                     "    return res.reshape(indices.shape)\n")
    if nd == 0:
        _refuse("np.take: axis of a 0-d array")
    ax = _axis_value(axis, nd, "np.take")
    if ax is _NOT:
        return None
    perm, _ = _perm_first(nd, ax)
    src = head + (f"    y = np.ascontiguousarray(a.transpose({perm}))\n    n = y.shape[0]\n    rest = y.shape[1:]\n"
                  "    m = _prod(rest)\n    y2 = y.reshape((n, m))\n")
    if kind == "scalar":
        if nd == 1:
            return _make(src + "    return y2[_fix_index(indices, n, md), 0]\n")
        return _make(src + "    return y2[_fix_index(indices, n, md)].copy().reshape(rest)\n")
    k = indices.ndim
    # result laid out (indices dims, the dims before axis, the dims after): move the index dims to axis
    order = tuple(range(k, k + ax)) + tuple(range(k)) + tuple(range(k + ax, k + nd - 1))
    return _make(src + "    ic = np.ascontiguousarray(indices).ravel()\n    res = np.empty((ic.size, m), a.dtype)\n"
                 "    for j in range(ic.size):\n        res[j] = y2[_fix_index(ic[j], n, md)]\n"
                 f"    return res.reshape(indices.shape + rest).transpose({order})\n")


@helper_overload(sh.take_vjp)
def _take_vjp(g, a, indices, axis=None, mode="raise"):
    md = _const(mode)
    kind = _take_index_kind(indices)
    if not _is_array(a) or md not in _TAKE_MODES or kind is None:
        return None
    nd = a.ndim
    head = f"def impl(g, a, indices, axis=None, mode='raise'):\n    md = {_TAKE_MODES[md]}\n"
    if _is_none(axis):
        src = head + "    n = a.size\n    out = np.zeros(n)\n"
        if kind == "scalar":
            src += "    out[_fix_index(indices, n, md)] += np.asarray(g).ravel()[0]\n"
        else:
            src += ("    ic = np.ascontiguousarray(indices).ravel()\n    gf = np.ascontiguousarray(np.asarray(g)).ravel()\n"
                    "    for k in range(ic.size):\n        out[_fix_index(ic[k], n, md)] += gf[k]\n")
        return _make(src + "    return out.reshape(a.shape)\n")
    ax = _axis_value(axis, nd, "take_vjp")
    if ax is _NOT or nd == 0:
        return None
    perm, inv = _perm_first(nd, ax)
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
    return _make(src + f"    return np.ascontiguousarray(out.reshape((n,) + rest).transpose({inv}))\n")


@helper_overload(sh.take_along_axis_vjp)
def _take_along_axis_vjp(g, arr, indices, axis=-1):
    if not (_is_array(arr) and _is_array(g) and _is_array(indices)):
        return None
    nd = arr.ndim
    head = "def impl(g, arr, indices, axis=-1):\n"
    if _is_none(axis):
        return _make(head + "    n = arr.size\n    out = np.zeros(n)\n"
                     "    ic = np.ascontiguousarray(indices).ravel()\n    gf = np.ascontiguousarray(g).ravel()\n"
                     "    if gf.size != ic.size:\n        raise ValueError('take_along_axis_vjp: shape mismatch')\n"
                     "    for k in range(ic.size):\n        out[ic[k] % n] += gf[k]\n    return out.reshape(arr.shape)\n")
    ax = _axis_value(axis, nd, "take_along_axis_vjp")
    if ax is _NOT or indices.ndim != nd or g.ndim != nd:
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
    return _make(src)


# ===== adjoints of tile / repeat / joins / split ================================================
@helper_overload(sh.tile_vjp)
def _tile_vjp(g, A, reps):
    r = _int_parts(reps, "reps")
    if r is None:
        return None
    if not (_is_array(A) or _is_number(A)):
        return None
    nd_a = _ndim(A)
    nd = max(nd_a, len(r))
    pa = ["1"] * (nd - nd_a) + [f"s[{k}]" for k in range(nd_a)]
    pr = ["1"] * (nd - len(r)) + r
    full = [x for i in range(nd) for x in (pr[i], pa[i])]
    src = ("def impl(g, A, reps):\n    s = np.shape(A)\n"
           f"    gm = np.ascontiguousarray(np.asarray(g * 1.0)).reshape({_tup(full)})\n"
           f"    return reduce_sum(gm, {tuple(range(0, 2 * nd, 2))}, False).reshape(s)\n")
    from ..numba_lower import reduce_sum
    return _make(src, reduce_sum=reduce_sum)


@helper_overload(sh.repeat_vjp)
def _repeat_vjp(g, a, repeats, axis=None):
    if not (_is_array(a) or _is_number(a)) or not _is_array(g):
        return None
    nd = _ndim(a)
    ax = _axis_value(axis, max(nd, 1), "repeat_vjp")
    if ax is _NOT:
        return None
    src = "def impl(g, a, repeats, axis=None):\n"
    if ax is None:
        src += "    s = np.shape(a)\n    n = _prod(s)\n    gy = np.ascontiguousarray(g * 1.0).ravel()\n    rest = ()\n"
    else:
        perm, inv = _perm_first(nd, ax)
        src += (f"    n = np.shape(a)[{ax}]\n    gy = np.ascontiguousarray((g * 1.0).transpose({perm}))\n"
                "    rest = gy.shape[1:]\n")
    src += ("    m = _prod(rest)\n    g2 = gy.reshape((gy.shape[0], m))\n    r = _repeat_counts(repeats, n)\n"
            "    out = np.zeros((n, m))\n    p = 0\n"
            "    for k in range(n):\n        for j in range(r[k]):\n            out[k] += g2[p]\n            p += 1\n")
    if ax is None:
        src += "    return out.reshape(s)\n"
    else:
        src += f"    return np.ascontiguousarray(out.reshape((n,) + rest).transpose({inv}))\n"
    return _make(src, _repeat_counts=_repeat_counts)


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
    if not etypes or not all(_is_array(t) for t in etypes):
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
            return (f"    c{k} = np.ascontiguousarray(g[{_index(nd, ax, 'p')}])\n    p += 1\n")
        shape = f"np.shape({x_src})" if reshape_back else f"({e_src}).shape"
        return (f"    w{k} = ({e_src}).shape[{ax}]\n"
                f"    c{k} = np.ascontiguousarray(g[{_index(nd, ax, f'p:p + w{k}')}]).reshape({shape})\n"
                f"    p += w{k}\n")
    src = f"def impl({sig}):\n    p = 0\n"
    if kind == "static":
        for k, (e, _) in enumerate(exprs):
            src += piece(e, f"{argname}[{k}]", k)
        return src + f"    return {_tup(f'c{k}' for k in range(len(exprs)))}\n"
    src += (f"    out = []\n    for i in range(len({argname})):\n"
            + "".join("    " + ln + "\n" for ln in piece(exprs[0][0], f"{argname}[i]", "i").splitlines())
            + "        out.append(ci)\n    return out\n")
    return src


@helper_overload(sh.concatenate_vjp)
def _concatenate_vjp(g, arrays, axis=0):
    ax = _const(axis)
    if ax is _NOT or not _is_array(g):
        return None
    src = _pieces_source(arrays, "arrays", None, ax, "concatenate_vjp", "g, arrays, axis=0")
    return None if src is None else _make(src)


@helper_overload(sh.stack_vjp)
def _stack_vjp(g, arrays, axis=0):
    ax = _const(axis)
    if not isinstance(ax, int) or not _is_array(g):
        return None
    src = _pieces_source(arrays, "arrays", ("expand", ax % g.ndim), ax % g.ndim, "stack_vjp", "g, arrays, axis=0")
    return None if src is None else _make(src)


def _stack_like_vjp(pre, axis):
    def typer(g, tup):
        if not _is_array(g):
            return None
        src = _pieces_source(tup, "tup", pre, axis, "stack_vjp", "g, tup")
        return None if src is None else _make(src)
    return typer


helper_overload(sh.hstack_vjp)(_stack_like_vjp("atleast_1d", "hstack"))
helper_overload(sh.vstack_vjp)(_stack_like_vjp("atleast_2d", 0))
helper_overload(sh.column_stack_vjp)(_stack_like_vjp("column", 1))


@numba.njit(cache=True)
def _split_bounds_int(n, k):
    if k <= 0:
        raise ValueError("number sections must be larger than 0.")
    base, extra = n // k, n % k
    out = np.empty(k + 1, dtype=np.int64)
    out[0] = 0
    for i in range(k):
        out[i + 1] = out[i] + (base + 1 if i < extra else base)
    return out


@numba.njit(cache=True)
def _split_bounds_seq(n, idx):
    out = np.empty(len(idx) + 2, dtype=np.int64)
    out[0] = 0
    for i in range(len(idx)):
        out[i + 1] = min(max(idx[i], 0), n)
    out[len(idx) + 1] = n
    for i in range(1, out.size):
        out[i] = max(out[i], out[i - 1])
    return out


def _split_bounds(n, ios):
    raise NotImplementedError


@numba.extending.overload(_split_bounds)
def _split_bounds_impl(n, ios):
    if _is_int(ios):
        return lambda n, ios: _split_bounds_int(n, ios)
    return lambda n, ios: _split_bounds_seq(n, ios)


@helper_overload(sh.split_vjp)
def _split_vjp(g, ary, indices_or_sections, axis=0):
    if not _is_array(ary) or not isinstance(g, (types.List, types.ListType, types.BaseTuple)):
        return None
    ax = _axis_value(axis, ary.ndim, "split_vjp")
    if ax is _NOT or ax is None:
        return None
    slot = _index(ary.ndim, ax, "b[k]:b[k + 1]")
    src = ("def impl(g, ary, indices_or_sections, axis=0):\n"
           f"    b = _split_bounds(ary.shape[{ax}], indices_or_sections)\n"
           "    if len(g) != b.size - 1:\n        raise ValueError('split_vjp: wrong number of pieces')\n"
           "    out = np.zeros(ary.shape)\n")
    if isinstance(g, types.BaseTuple):
        for k in range(len(g.types)):
            src += f"    k = {k}\n    out[{slot}] = g[{k}]\n"
    else:
        src += f"    for k in range(len(g)):\n        out[{slot}] = g[k]\n"
    return _make(src + "    return out\n")


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
    if dt is None or not (_is_array(x) or _is_number(x)):
        return None
    target = dt.type
    return lambda x, dtype: np.asarray(x).astype(target)


# ===== order statistics: np.quantile / percentile / median, np.partition =======================
# (rules/numpy_composite.py defines them with np.sort, np.take_along_axis and these helpers)
def _reduced_mask_src(axis, nd: int, what: str):
    """Lines setting `red` (one bool per axis of an nd array: reduced?) from axis None, an int or a
    tuple of ints (values read at run time); None for another axis type."""
    if _is_none(axis):
        return f"    red = np.ones({nd}, np.bool_)\n"
    check = ("        if a_ < -{nd} or a_ >= {nd}:\n"
             "            raise ValueError('" + what + ": axis is out of bounds for the array')\n").format(nd=nd)
    if _is_int(axis):
        return (f"    red = np.zeros({nd}, np.bool_)\n    for a_ in (axis,):\n" + check
                + f"        red[a_ % {nd}] = True\n")
    if isinstance(axis, types.BaseTuple) and all(_is_int(t) for t in axis.types):
        if len(axis.types) == 0:
            return f"    red = np.zeros({nd}, np.bool_)\n"
        return (f"    red = np.zeros({nd}, np.bool_)\n    for a_ in axis:\n" + check
                + f"        red[a_ % {nd}] = True\n")
    return None


def _n_reduced(axis, nd: int) -> int:
    if _is_none(axis):
        return nd
    if isinstance(axis, types.BaseTuple):
        return len(axis.types)
    return 1


@helper_overload(rh.reduce_perm)
def _reduce_perm(x, axis=None):
    if not _is_array(x) or x.ndim == 0:
        return None
    nd = x.ndim
    red = _reduced_mask_src(axis, nd, "reduce_perm")
    if red is None:
        return None
    zeros = "(" + "0, " * nd + ")"
    return _make("def impl(x, axis=None):\n" + red + f"    out = {zeros}\n    j = 0\n"
                 f"    for d in range({nd}):\n        if not red[d]:\n            out = tuple_setitem(out, j, d)\n"
                 "            j += 1\n"
                 f"    for d in range({nd}):\n        if red[d]:\n            out = tuple_setitem(out, j, d)\n"
                 "            j += 1\n    return out\n")


@helper_overload(rh.reduce_flat_shape)
def _reduce_flat_shape(x, axis=None):
    if not _is_array(x) or x.ndim == 0:
        return None
    nd = x.ndim
    red = _reduced_mask_src(axis, nd, "reduce_flat_shape")
    if red is None:
        return None
    zeros = "(" + "0, " * (nd - _n_reduced(axis, nd) + 1) + ")"
    return _make("def impl(x, axis=None):\n" + red + f"    out = {zeros}\n    j = 0\n"
                 f"    for d in range({nd}):\n        if not red[d]:\n            out = tuple_setitem(out, j, x.shape[d])\n"
                 "            j += 1\n    return tuple_setitem(out, j, -1)\n")


@helper_overload(rh.kept_shape)
def _kept_shape_helper(x, axis=None):
    if not _is_array(x) or x.ndim == 0:
        return None
    nd = x.ndim
    red = _reduced_mask_src(axis, nd, "kept_shape")
    if red is None:
        return None
    return _make("def impl(x, axis=None):\n" + red + "    out = x.shape\n"
                 f"    for d in range({nd}):\n        if red[d]:\n            out = tuple_setitem(out, d, 1)\n"
                 "    return out\n")


@helper_overload(rh.quantile_weights)
def _quantile_weights(q, shape, method="linear"):
    if not isinstance(shape, types.BaseTuple) or len(shape.types) == 0:
        return None
    if not (_is_number(q) or _is_array(q)):
        return None
    nd = len(shape.types)
    qshape = "".join(f"qa.shape[{d}], " for d in range(_ndim(q)))
    out_shape = "(" + qshape + "1, " * (nd - 1) + "n,)"
    qa = "np.asarray(q, dtype=np.float64)" if _is_array(q) else "np.full((), q, np.float64)"
    return _make(
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
    if not _is_array(a) or not _is_none(order) or _const(kind) != "introselect":
        return None
    if not (_is_int(kth) or (isinstance(kth, types.BaseTuple) and all(_is_int(t) for t in kth.types))
            or (_is_array(kth) and isinstance(kth.dtype, types.Integer) and kth.ndim <= 1)):
        return None
    argsort = _argsort_standin()
    return lambda a, kth, axis=-1, kind="introselect", order=None: argsort(a, axis)


def _argsort_standin():
    from . import STANDINS
    return STANDINS[id(np.argsort)]
