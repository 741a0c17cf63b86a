"""Stand-ins for Numba: reductions and scans (see s2s/backends/numba_numpy/__init__.py).

np.sum / np.mean / np.max / np.min / np.prod with axis (None, int, tuple) and keepdims (the
forms helpers call; generated code reaches numba_lower's reduce_* instead); np.var / np.std
with axis, ddof and keepdims; np.cumsum / np.cumprod with an axis; np.average with axis,
weights, returned and keepdims.  Also the axis bookkeeping the other reductions (numba_norm.py, linalg/numba_trace.py,
special.py's logsumexp & co.) share.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload as nb_overload

from ...backends.numba_lower.common import is_array, is_none, overload
from ...runtime import unbroadcast
from . import helpers
from .numba_kernels import (is_float_sequence, kept_shape_from_mask, n_reduced, reduce_sum, reduced_flat_index,
                            stack_sequence)
from ...backends.numba_numpy.common import flag_value, literal_value, standin


SIGNED_INTS = (types.int8, types.int16, types.int32, types.int64)


# =============================================================================
# Axis bookkeeping
# =============================================================================

def _axis_literals(axis):
    """The axes of a literal `axis` argument as a tuple (None when not literal / None)."""
    v = literal_value(axis, default=False)
    if v is False or v is None:
        return None
    return v if isinstance(v, tuple) else (v,)


def check_literal_axes(axis, nd):
    """Raise a TypingError for literal axes NumPy would reject (out of range, repeated)."""
    axes = _axis_literals(axis)
    if axes is None:
        return
    for a in axes:
        if not isinstance(a, int) or not -nd <= a < nd:
            raise TypingError(f"axis {a} is out of bounds for an array of dimension {nd}")
    if len({a % nd for a in axes}) != len(axes):
        raise TypingError(f"repeated axis in {axes}")


def axis_form(axis):
    """'none', 'int', 'tuple' (of integers), or None (unsupported)."""
    if is_none(axis):
        return "none"
    if isinstance(axis, types.Integer):
        return "int"
    if isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer) for t in axis.types):
        return "tuple"
    return None


def reduced_mask(axis, nd):
    """Boolean mask of the reduced axes (checked: in range, not repeated); Numba only."""
    raise NotImplementedError


@nb_overload(reduced_mask)
def _reduced_mask(axis, nd):
    form = axis_form(axis)
    if form == "none":
        def impl(axis, nd):
            return np.ones(nd, dtype=np.bool_)
    elif form == "int":
        def impl(axis, nd):
            if axis < -nd or axis >= nd:
                raise ValueError("axis is out of bounds for the array's dimension")
            m = np.zeros(nd, dtype=np.bool_)
            m[axis % nd] = True
            return m
    elif form == "tuple":
        def impl(axis, nd):
            m = np.zeros(nd, dtype=np.bool_)
            for a in axis:
                if a < -nd or a >= nd:
                    raise ValueError("axis is out of bounds for the array's dimension")
                if m[a % nd]:
                    raise ValueError("repeated axis")
                m[a % nd] = True
            return m
    else:
        return None
    return impl


def reduced_shape(shape, axis, keepdims):
    """`shape` with the reduced axes set to 1 (keepdims) or dropped; Numba only."""
    raise NotImplementedError


@nb_overload(reduced_shape)
def _reduced_shape(shape, axis, keepdims):
    nd = len(shape)
    keep = flag_value(keepdims)
    if keep is None or axis_form(axis) is None:
        return None
    nred = n_reduced(axis, nd)
    if keep:
        def impl(shape, axis, keepdims):
            return kept_shape_from_mask(shape, reduced_mask(axis, nd))
        return impl

    def impl(shape, axis, keepdims):
        red = reduced_mask(axis, nd)
        out = shape[nred:]
        k = 0
        for d in range(nd):
            if not red[d]:
                out = tuple_setitem(out, k, shape[d])
                k += 1
        return out
    return impl


def drop_reduced(r, shape, axis):
    """A keepdims reduction result `r` of an array of `shape` without the reduced axes (a scalar
    when all are reduced), as NumPy's keepdims=False returns it; Numba only."""
    raise NotImplementedError


@nb_overload(drop_reduced)
def _drop_reduced(r, shape, axis):
    nd = len(shape)
    if n_reduced(axis, nd) == nd:
        def impl(r, shape, axis):
            return np.ascontiguousarray(r).reshape(r.size)[0]
        return impl

    def impl(r, shape, axis):
        return np.ascontiguousarray(r).reshape(reduced_shape(shape, axis, False))
    return impl


def safe_sum(x, axis, keep):
    """numba_lower.reductions.reduce_sum, also where it fails to compile (an int axis of a 1-d
    array, or all axes, without keepdims: it builds the result shape with tuple_setitem on an
    empty tuple); Numba only."""
    raise NotImplementedError


@nb_overload(safe_sum)
def _safe_sum(x, axis, keep):
    keepv = flag_value(keep)
    if keepv is None:
        return None
    if keepv or not is_array(x):
        return lambda x, axis, keep: reduce_sum(x, axis, keep)

    def impl(x, axis, keep):
        return drop_reduced(reduce_sum(x, axis, True), x.shape, axis)
    return impl


def float_like(t):
    """Array or scalar of float64, int or bool (what these stand-ins compute in float64)."""
    dt = t.dtype if is_array(t) else t
    return dt == types.float64 or isinstance(dt, (types.Integer, types.Boolean))


# =============================================================================
# np.sum / np.mean / np.max / np.min / np.prod with axis and keepdims
# =============================================================================

def _reduction_typer(kind):
    whole = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}[kind]

    def typer(a, axis=None, dtype=None, out=None, keepdims=False):
        if not (is_none(dtype) and is_none(out)):
            return None
        keep = flag_value(keepdims)
        form = axis_form(axis)
        if keep is None or form is None:
            return None
        if isinstance(a, (types.List, types.UniTuple)):
            return _sequence_reduction(a, kind)
        if not is_array(a):
            if not isinstance(a, (types.Float, types.Integer, types.Boolean)) or form != "none" or keep:
                return None
            return lambda a, axis=None, dtype=None, out=None, keepdims=False: whole(a)
        if form == "none" and not keep:
            return lambda a, axis=None, dtype=None, out=None, keepdims=False: whole(a)
        check_literal_axes(axis, a.ndim)
        # numba_lower's reduce_* accumulate in float64: exact for float64 input only (and for
        # the float mean); integer sums/products/extrema keep their dtype in NumPy
        if not (a.dtype == types.float64 or kind == "mean" and isinstance(a.dtype, (types.Integer, types.Boolean))):
            return None
        lower = {"sum": safe_sum, "max": nan_max, "min": nan_min, "prod": _reduce_prod}.get(kind)
        if kind == "mean":
            def impl(a, axis=None, dtype=None, out=None, keepdims=False):
                s = safe_sum(a, axis, keep)
                return s / _count(a.shape, axis)
            return impl

        def impl(a, axis=None, dtype=None, out=None, keepdims=False):
            return lower(a, axis, keep)
        return impl
    return typer


def _sequence_reduction(a, kind):
    """np.sum([a, b, ...], axis=...) & co. of a list or tuple of numbers or equal-shape float64
    arrays: stacked into one array, then reduced as an array."""
    if not is_float_sequence(a):
        return None
    whole = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}[kind]

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        return whole(stack_sequence(a), axis=axis, keepdims=keepdims)
    return impl


def _count(shape, axis):
    raise NotImplementedError


@nb_overload(_count)
def _count_impl(shape, axis):
    nd = len(shape)

    def impl(shape, axis):
        red = reduced_mask(axis, nd)
        n = 1.0
        for d in range(nd):
            if red[d]:
                n *= shape[d]
        return n
    return impl


def nan_max(x, axis, keep):
    raise NotImplementedError


def nan_min(x, axis, keep):
    raise NotImplementedError


def _reduce_prod(x, axis, keep):
    raise NotImplementedError


def _extremum_impl(is_max):
    def typer(x, axis, keep):
        keepv = flag_value(keep)
        if keepv is None:
            return None
        nd = x.ndim
        start = -np.inf if is_max else np.inf

        def impl(x, axis, keep):
            kshape = reduced_shape(x.shape, axis, True)
            size = 1
            for d in range(nd):
                size *= kshape[d]
            out = np.full(size, start)
            seen = np.zeros(size, dtype=np.bool_)
            xc = np.ascontiguousarray(x).reshape(x.size)
            for flat in range(x.size):
                j = reduced_flat_index(flat, x.shape, kshape)
                v = xc[flat]
                if v != v:          # NumPy's max/min propagate NaN
                    out[j] = v
                    seen[j] = True
                elif not (out[j] != out[j]):
                    if is_max and v > out[j] or not is_max and v < out[j]:
                        out[j] = v
                seen[j] = True
            for j in range(size):
                if not seen[j]:
                    raise ValueError("zero-size array to reduction operation which has no identity")
            r = out.reshape(kshape)
            if keepv:
                return r
            return drop_reduced(r, x.shape, axis)
        return impl
    return typer


@nb_overload(_reduce_prod)
def _reduce_prod_impl(x, axis, keep):
    keepv = flag_value(keep)
    if keepv is None:
        return None
    nd = x.ndim

    def impl(x, axis, keep):
        kshape = reduced_shape(x.shape, axis, True)
        size = 1
        for d in range(nd):
            size *= kshape[d]
        out = np.ones(size)
        xc = np.ascontiguousarray(x).reshape(x.size)
        for flat in range(x.size):
            out[reduced_flat_index(flat, x.shape, kshape)] *= xc[flat]
        r = out.reshape(kshape)
        if keepv:
            return r
        return drop_reduced(r, x.shape, axis)
    return impl


nb_overload(nan_max)(_extremum_impl(True))
nb_overload(nan_min)(_extremum_impl(False))
for _fn, _kind in ((np.sum, "sum"), (np.prod, "prod"), (np.max, "max"), (np.min, "min"), (np.mean, "mean")):
    standin(_fn)(_reduction_typer(_kind))
if np.amax is not np.max:      # pragma: no cover - aliases in numpy 2
    standin(np.amax)(_reduction_typer("max"))
    standin(np.amin)(_reduction_typer("min"))


# =============================================================================
# np.var / np.std
# =============================================================================

def _var_typer(take_root: bool):
    def typer(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        if not (is_none(dtype) and is_none(out)):
            return None
        keep = flag_value(keepdims)
        if keep is None or axis_form(axis) is None:
            return None
        if not isinstance(ddof, (int, float, types.Integer, types.Float, types.Omitted)):
            return None
        if not is_array(a):
            if not isinstance(a, (types.Float, types.Integer, types.Boolean)) or axis_form(axis) != "none" or keep:
                return None

            def scalar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
                # one element: 0 / max(1 - ddof, 0) (NumPy's 0/0 warning aside)
                v = np.divide(0.0, max(1.0 - ddof, 0.0))
                return np.sqrt(v) if take_root else v
            return scalar
        if not float_like(a):
            return None
        check_literal_axes(axis, a.ndim)

        def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
            x = a.astype(np.float64)
            n = _count(x.shape, axis)
            mean = reduce_sum(x, axis, True) / n
            d = x - mean
            v = np.divide(safe_sum(d * d, axis, keep), max(n - ddof, 0.0))
            return np.sqrt(v) if take_root else v
        return impl
    return typer


standin(np.var)(_var_typer(False))
standin(np.std)(_var_typer(True))


# =============================================================================
# np.cumsum / np.cumprod
# =============================================================================

def _scan_dtype(t):
    """NumPy's accumulator dtype for cumsum/cumprod of dtype t (None: unsupported)."""
    if t in (types.float64, types.float32):
        return t
    if isinstance(t, types.Boolean) or t in SIGNED_INTS:
        return types.int64
    return None


def _scan_typer(is_sum: bool):
    def typer(a, axis=None, dtype=None, out=None):
        if not (is_none(dtype) and is_none(out)):
            return None
        form = axis_form(axis)
        if form not in ("none", "int"):
            return None
        dt = _scan_dtype(a.dtype if is_array(a) else a)
        if dt is None:
            return None
        npdt = np.dtype(str(dt)).type
        if not is_array(a) or a.ndim == 0:
            if form != "none":
                return None      # NumPy treats a 0-d input with an axis as 1-d; not covered

            def scalar(a, axis=None, dtype=None, out=None):
                return np.full(1, a, dtype=npdt)
            return scalar
        nd = a.ndim
        check_literal_axes(axis, nd)

        def impl(a, axis=None, dtype=None, out=None):
            if axis is None:
                x = np.ascontiguousarray(a.astype(npdt)).reshape(a.size)
                ax = 0
            else:
                x = np.ascontiguousarray(a.astype(npdt))
                if axis < -nd or axis >= nd:
                    raise ValueError("axis is out of bounds for the array's dimension")
                ax = axis % nd
            shape = x.shape
            n = shape[ax] if x.ndim > 0 else 1
            inner = 1
            for d in range(ax + 1, x.ndim):
                inner *= shape[d]
            outer = x.size // max(n * inner, 1)
            xf = x.reshape(x.size)
            res = np.empty(x.size, dtype=npdt)
            for o in range(outer):
                base = o * n * inner
                for i in range(inner):
                    acc = xf[base + i]
                    res[base + i] = acc
                    for k in range(1, n):
                        p = base + k * inner + i
                        if is_sum:
                            acc = acc + xf[p]
                        else:
                            acc = acc * xf[p]
                        res[p] = acc
            return res.reshape(shape)
        return impl
    return typer


standin(np.cumsum)(_scan_typer(True))
standin(np.cumprod)(_scan_typer(False))


# =============================================================================
# np.average
# =============================================================================

@standin(np.average)
def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    ret = flag_value(returned)
    keep = flag_value(keepdims)
    form = axis_form(axis)
    if ret is None or keep is None or form is None:
        return None
    if not float_like(a) or not (is_none(weights) or float_like(weights)):
        return None
    if not is_array(a):
        if form != "none" or keep:
            return None
        if is_none(weights):
            def scalar(a, axis=None, weights=None, returned=False, keepdims=False):
                return (float(a), 1.0) if ret else float(a)
            return scalar
        return None
    nd = a.ndim
    check_literal_axes(axis, nd)
    if is_none(weights):
        def impl(a, axis=None, weights=None, returned=False, keepdims=False):
            x = a.astype(np.float64)
            n = _count(x.shape, axis)
            avg = safe_sum(x, axis, keep) / n
            if ret:
                return avg, _full_like_result(avg, n)
            return avg
        return impl
    wnd = weights.ndim if is_array(weights) else 0
    if wnd == nd:
        along = False
    elif wnd == 1 and (form == "int" or form == "tuple" and len(axis) == 1):
        along = True
    else:
        return None      # NumPy: axis must be given / weights of several axes: not covered

    def impl_w(a, axis=None, weights=None, returned=False, keepdims=False):
        x = a.astype(np.float64)
        w = np.asarray(weights).astype(np.float64)
        if along:
            ax = _first_axis(axis, nd)
            if w.shape[0] != x.shape[ax]:
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            wshape = tuple_setitem(_ones_shape(x.shape), ax, w.shape[0])
            wr = w.reshape(wshape)
        else:
            if w.shape != x.shape:
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            wr = w
        scl = safe_sum(wr, axis, keep)
        if np.any(scl == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = safe_sum(x * wr, axis, keep) / scl
        if ret:
            return avg, _broadcast_copy(scl, avg)
        return avg
    return impl_w


def _first_axis(axis, nd):
    raise NotImplementedError


@nb_overload(_first_axis)
def _first_axis_impl(axis, nd):
    if isinstance(axis, types.Integer):
        def impl(axis, nd):
            if axis < -nd or axis >= nd:
                raise ValueError("axis is out of bounds for the array's dimension")
            return axis % nd
    else:
        def impl(axis, nd):
            if axis[0] < -nd or axis[0] >= nd:
                raise ValueError("axis is out of bounds for the array's dimension")
            return axis[0] % nd
    return impl


def _ones_shape(shape):
    raise NotImplementedError


@nb_overload(_ones_shape)
def _ones_shape_impl(shape):
    def impl(shape):
        out = shape
        for d in range(len(shape)):
            out = tuple_setitem(out, d, 1)
        return out
    return impl


def _full_like_result(avg, v):
    raise NotImplementedError


@nb_overload(_full_like_result)
def _full_like_result_impl(avg, v):
    if is_array(avg):
        return lambda avg, v: np.full(avg.shape, v)
    return lambda avg, v: float(v)


def _broadcast_copy(s, like):
    raise NotImplementedError


@nb_overload(_broadcast_copy)
def _broadcast_copy_impl(s, like):
    if is_array(like):
        if is_array(s):
            return lambda s, like: np.ascontiguousarray(np.broadcast_to(s, like.shape))
        return lambda s, like: np.full(like.shape, s)
    if is_array(s):
        return lambda s, like: np.ascontiguousarray(s).reshape(s.size)[0]
    return lambda s, like: s


# ----- np.average's derivatives: weights of a's rank (the helpers' general forms read the axes
# with numbers.Integral, which Numba has no type for) ------------------------------------------
def _same_rank_weights(a, weights) -> bool:
    return is_array(a) and is_array(weights) and weights.ndim == a.ndim


@overload(helpers.average_weights)
def _average_weights(a, weights, axis=None):
    if is_none(weights):
        return lambda a, weights, axis=None: np.ones(np.shape(a))
    if _same_rank_weights(a, weights):
        return lambda a, weights, axis=None: np.broadcast_to(weights, a.shape) * 1.0
    return None


@overload(helpers.average_vjp_w)
def _average_vjp_w(g, a, weights, y, axis=None, keepdims=False):
    if not (_same_rank_weights(a, weights) and is_none(axis)):
        return None

    def impl(g, a, weights, y, axis=None, keepdims=False):
        w = np.broadcast_to(weights, a.shape)
        return unbroadcast((g / np.sum(w)) * (a - y), weights)
    return impl
