"""The reductions compiled code calls, and the flat index maps reductions share.

numba_cpu.lower rewrites np.sum / max / min / prod / mean with axis or keepdims to reduce_sum & co.
(defined here, with their Numba implementations); stack_sequence is np.array of a list or tuple of
numbers or equal-shape arrays (builtin sum of a list). The flat index maps (`reduced_flat_index`,
`kept_shape_from_mask`, `axis_mask_impl`) serve these and the cotangents of reductions
(runtime/core_numba.py, backends/numba_lower/op_helpers.py, numba.py here).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.cpython.unsafe.tuple import tuple_setitem

from ... import runtime as rt
from ...backends.numba_lower.common import is_array, is_none, overload


# ----- shape bookkeeping: flat index maps ------------------------------------------------
@numba.njit(cache=True, error_model="numpy")
def reduced_flat_index(flat, full_shape, kshape):
    """Flat index into a reduction's result (laid out with kept size-1 axes `kshape`)
    for flat index `flat` of the full array."""
    rem = flat
    j = 0
    mult = 1
    for d in range(len(full_shape) - 1, -1, -1):
        idx = rem % full_shape[d]
        rem //= full_shape[d]
        if kshape[d] != 1:
            j += idx * mult
        mult *= kshape[d]
    return j


@numba.njit(cache=True, error_model="numpy")
def kept_shape_from_mask(shape, red):
    """`shape` with the axes the boolean mask `red` marks set to 1 (helpers.kept_shape takes an axis)."""
    out = shape
    for d in range(len(shape)):
        if red[d]:
            out = tuple_setitem(out, d, 1)
    return out


def axis_mask(axis, nd):
    """The boolean mask of the axes a reduction over `axis` (None, an int, a tuple) takes, of `nd`
    axes (compiled code only: its implementation per axis type is axis_mask_impl's)."""
    raise NotImplementedError("s2s: axis_mask runs in compiled code only")


def axis_mask_impl(axis_type):
    """A function (axis, ndim) -> boolean mask of reduced axes, specialized on the axis type (None
    for an axis type that is not covered).  Compiled code calls `axis_mask`, not a closure over
    this function: an implementation closing over a compiled function is not kept on disk."""
    if is_none(axis_type):
        def mask(axis, nd):
            return np.ones(nd, dtype=np.bool_)
    elif isinstance(axis_type, types.Integer):
        def mask(axis, nd):
            m = np.zeros(nd, dtype=np.bool_)
            m[axis % nd] = True
            return m
    elif isinstance(axis_type, types.BaseTuple) and len(axis_type) == 0:
        def mask(axis, nd):       # axis=(): nothing reduced (vmap's axes of a per-example scalar)
            return np.zeros(nd, dtype=np.bool_)
    elif isinstance(axis_type, types.BaseTuple):
        def mask(axis, nd):
            m = np.zeros(nd, dtype=np.bool_)
            for a in axis:
                m[a % nd] = True
            return m
    else:
        return None
    return mask


@overload(axis_mask)
def _axis_mask(axis, nd):
    return axis_mask_impl(axis)


def n_reduced(axis_type, nd):
    if is_none(axis_type):
        return nd
    if isinstance(axis_type, types.Integer):
        return 1
    return len(axis_type)


def _keepdims_value(keepdims):
    if isinstance(keepdims, types.BooleanLiteral):
        return keepdims.literal_value
    if isinstance(keepdims, types.Omitted):
        return bool(keepdims.value)
    if keepdims is None or isinstance(keepdims, types.NoneType):
        return False
    if isinstance(keepdims, types.Boolean):
        return None          # not a constant: refuse (generated code passes constants)
    return None


# ----- np.sum & co. with axis / keepdims, as compiled code calls them ------------------------
def reduce_sum(x, axis=None, keepdims=False):
    """np.sum with axis/keepdims, as compiled code calls it."""
    return np.sum(x, axis=axis, keepdims=keepdims)


def reduce_max(x, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


def reduce_min(x, axis=None, keepdims=False):
    return np.min(x, axis=axis, keepdims=keepdims)


def reduce_prod(x, axis=None, keepdims=False):
    return np.prod(x, axis=axis, keepdims=keepdims)


def reduce_mean(x, axis=None, keepdims=False):
    return np.mean(x, axis=axis, keepdims=keepdims)


def stack_sequence(a):
    """np.array of a list or tuple of numbers or of equal-shape arrays (compiled code)."""
    return np.array(a)


def is_float_sequence(t) -> bool:
    """A list or homogeneous tuple of float64/int numbers or float64 arrays (what stack_sequence takes)."""
    if not isinstance(t, (types.List, types.UniTuple)):
        return False
    item = t.dtype
    return item == types.float64 or isinstance(item, types.Integer) or (is_array(item) and item.dtype == types.float64)


@overload(stack_sequence)
def _stack_sequence(a):
    if not is_float_sequence(a):
        return None
    if is_array(a.dtype):
        def arrays(a):
            out = np.empty((len(a),) + a[0].shape)
            for i in range(len(a)):
                out[i] = a[i]
            return out
        return arrays

    def numbers(a):
        out = np.empty(len(a))
        for i in range(len(a)):
            out[i] = a[i]
        return out
    return numbers


def _reduce_lower(kind):
    whole = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[kind]
    start = {"sum": 0.0, "max": -np.inf, "min": np.inf, "prod": 1.0}[kind]
    this = {"sum": reduce_sum, "max": reduce_max, "min": reduce_min, "prod": reduce_prod}[kind]

    def lower(x, axis=None, keepdims=False):
        if is_float_sequence(x):      # builtin sum of a list: the list as an array
            return lambda x, axis=None, keepdims=False: this(stack_sequence(x), axis, keepdims)
        if isinstance(x, (types.List, types.BaseTuple)):
            return None
        if not is_array(x):
            return lambda x, axis=None, keepdims=False: x
        keep = _keepdims_value(keepdims)
        if keep is None:
            return None
        if is_none(axis) and not keep:
            return lambda x, axis=None, keepdims=False: whole(x)
        if axis_mask_impl(axis) is None:
            return None
        nd = x.ndim
        nred = n_reduced(axis, nd)
        if nred == nd and not keep:       # every axis reduced: a number (as NumPy gives)
            return lambda x, axis=None, keepdims=False: whole(x)

        def impl(x, axis=None, keepdims=False):
            red = axis_mask(axis, nd)
            kshape = kept_shape_from_mask(x.shape, red)
            size = 1
            for d in range(nd):
                size *= kshape[d]
            out = np.full(size, start)
            xc = np.ascontiguousarray(x).ravel()
            for flat in range(xc.size):
                j = reduced_flat_index(flat, x.shape, kshape)
                v = xc[flat]
                if kind == "sum":
                    out[j] += v
                elif kind == "prod":
                    out[j] *= v
                elif kind == "max":
                    if v > out[j]:
                        out[j] = v
                elif v < out[j]:
                    out[j] = v
            if keep:
                return out.reshape(kshape)
            oshape = x.shape[nred:]
            k = 0
            for d in range(nd):
                if not red[d]:
                    oshape = tuple_setitem(oshape, k, x.shape[d])
                    k += 1
            return out.reshape(oshape)
        return impl
    return lower


for _fn, _kind in ((reduce_sum, "sum"), (reduce_max, "max"), (reduce_min, "min"), (reduce_prod, "prod")):
    overload(_fn)(_reduce_lower(_kind))


@overload(reduce_mean)
def _reduce_mean(x, axis=None, keepdims=False):
    def impl(x, axis=None, keepdims=False):
        return reduce_sum(x, axis, keepdims) / rt.reduced_size(x, axis)
    return impl
