"""Numba lowering of the core runtime helpers (s2s/runtime/__init__.py).

Tapes (stack, push, pop, restore), argument checks, seeds and zeros, unbroadcast / broadcast_like /
expand_reduced / reduced_size, tie and extremum weights, add_at (and add_at_value, rt.add_at as a
value), setitem_cotangent, the matmul / dot cotangents, float_dtype_flag, choose, pick_cotangent,
fft_axes and inverse_axes.
"""
from __future__ import annotations


import numba
import numpy as np
from numba import types
from numba.extending import register_jitable
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.typed import List

from .. import runtime as rt
from ..backends.numba_lower.common import (blas_operand, impl_from_source, is_array, is_complex, is_none,
                                           overload)
from ..ops.linalg.numba_products import expand_last, expand_second_last, matmul
from ..ops.reductions.numba_kernels import (axis_mask, axis_mask_impl, is_float_sequence, kept_shape_from_mask,
                                            reduce_sum, reduced_flat_index, stack_sequence)



# ----- tapes -----------------------------------------------------------------------
@overload(rt.stack)
def _stack():
    def impl():
        return List()
    return impl


@overload(rt.push)
def _push(st, value):
    def impl(st, value):
        st.append(value)
    return impl


@overload(rt.pop)
def _pop(st):
    def impl(st):
        return st.pop()
    return impl


@overload(rt.restore)
def _restore(st, current):
    def impl(st, current):
        st.pop()
        if len(st) > 0:
            return st[-1]
        return current
    return impl


@overload(rt.copy_value)
def _copy_value(x):
    if is_array(x):
        return lambda x: x.copy()
    return lambda x: x


# ----- seeds, zeros -------------------------------------------------------------------
@overload(rt.check_unpack)
def _check_unpack(value, count):
    def impl(value, count):
        if len(value) != count:
            raise ValueError("cannot unpack: the number of values does not match the names")
    return impl


@overload(rt.list_position)
def _list_position(index, length):
    def impl(index, length):
        if index < -length or index >= length:
            raise IndexError("list index out of range")
        return index + length if index < 0 else index
    return impl


@overload(rt.check_not_held)
def _check_not_held(target, held, update, target_name, holder):
    if is_array(target) and is_array(held):
        def impl(target, held, update, target_name, holder):
            if _may_share_memory(target, held):
                raise ValueError("an in-place update changes an array that a list element, a default argument "
                                 "or a partial's argument also holds: Python would change it there too")
        return impl
    return lambda target, held, update, target_name, holder: None


@overload(rt.check_nonempty)
def _check_nonempty(seq, loop):
    def impl(seq, loop):
        if len(seq) == 0:
            raise ValueError("a loop filling an empty list runs no step: s2s keeps the list as the rows of an "
                             "array whose shape its first step gives")
    return impl


@overload(rt.check_row)
def _check_row(rows, value):
    def impl(rows, value):
        if np.shape(value) != np.shape(rows)[1:]:
            raise ValueError("s2s keeps a list grown in a loop as the rows of one array, and this value does "
                             "not have the shape of its first element")
    return impl


@overload(rt.check_rank)
def _check_rank(x, rank, what):
    def impl(x, rank, what):
        if np.ndim(x) != rank:
            raise ValueError("s2s: an argument of a rank this definition does not cover")
    return impl


@overload(rt.check_unset)
def _check_unset(value, what):
    if value is None or isinstance(value, (types.NoneType, types.Omitted)):
        return lambda value, what: None

    def impl(value, what):
        raise NotImplementedError("s2s: an argument this definition does not cover was given")
    return impl


@register_jitable
def _byte_span(a):
    """The lowest and one past the highest byte address an array's elements occupy."""
    lo = hi = a.ctypes.data
    for k in range(a.ndim):
        span = (a.shape[k] - 1) * a.strides[k]
        if span < 0:
            lo += span
        else:
            hi += span
    return lo, hi + a.itemsize


@register_jitable
def _may_share_memory(a, b):
    """np.may_share_memory: the byte ranges the two (non-empty) arrays span overlap."""
    if a.size == 0 or b.size == 0:
        return False
    lo_a, hi_a = _byte_span(a)
    lo_b, hi_b = _byte_span(b)
    return lo_a < hi_b and lo_b < hi_a


@overload(rt.check_unshared)
def _check_unshared(target, other, update, target_name, other_name):
    if not (isinstance(target, types.Array) and isinstance(other, types.Array)):
        return lambda target, other, update, target_name, other_name: None

    def impl(target, other, update, target_name, other_name):
        if _may_share_memory(target, other):
            raise ValueError("s2s: an in-place update of an array another variable shares")
    return impl


@overload(rt.check_element_view)
def _check_element_view(value, array, read):
    # a read by integer index is a view exactly when it is an array: a row of the array it indexes
    if not (isinstance(value, types.Array) and isinstance(array, types.Array)):
        return lambda value, array, read: None

    def impl(value, array, read):
        if _may_share_memory(value, array):
            raise ValueError("s2s: a row read by index is a view of an array an indexed write later changes; "
                             "copy it (.copy()) or read it after the write")
    return impl


@overload(rt.seed_cotangent)
def _seed(y):
    if isinstance(getattr(y, "dtype", y), types.Complex):
        raise numba.core.errors.TypingError("grad of a complex-valued output is not supported; "
                                            "differentiate the real part: np.real(...)")
    if isinstance(getattr(y, "dtype", y), types.Boolean):
        raise numba.core.errors.TypingError("grad of a boolean output: a comparison has no derivative (as in JAX)")
    if is_array(y) and y.ndim > 0:
        def impl(y):
            raise ValueError("grad requires a function with a scalar output")
        return impl
    return lambda y: 1.0


@overload(rt.zeros_like)
def _zeros_like(x):
    if is_array(x) and x.ndim == 0:
        # Numba's arithmetic on 0-d arrays gives scalars: a 0-d zero array would not unify with
        # `dx + ...` in a loop; the cotangent of a 0-d array is a scalar (the wrapper returns it)
        return lambda x: 0.0
    if is_array(x):
        return lambda x: np.zeros(x.shape)
    if isinstance(x, types.ListType):
        def impl(x):
            return List.empty_list(x.item_type)
        return impl
    if isinstance(x, types.List) and is_array(x.dtype):     # np.split's pieces: one zero array each
        return lambda x: [np.zeros(e.shape) for e in x]
    if isinstance(x, types.BaseTuple):      # an op's tuple result (see add_at_value)
        if len(x) == 0:
            return lambda x: ()
        parts = ", ".join(f"rt.zeros_like(x[{j}])" for j in range(len(x)))
        return impl_from_source(f"def impl(x):\n    return ({parts},)\n", {"rt": rt})
    return lambda x: 0.0


@overload(rt.stop_gradient)
def _stop_gradient(x):
    return lambda x: x


@overload(rt.to_float)
def _to_float(x):
    return lambda x: float(x)


# ----- unbroadcast / expand ---------------------------------------------------------------
@overload(rt.unbroadcast)
def _unbroadcast(g, x):
    if is_complex(g) and not is_complex(x):     # a real operand of a complex op: the real part
        return lambda g, x: rt.unbroadcast(np.real(g), x)
    if not is_array(g) or g.ndim == 0:
        return lambda g, x: g
    if not is_array(x) or x.ndim == 0:
        return lambda g, x: np.sum(g)
    if g.ndim < x.ndim:
        return None
    same_rank = g.ndim == x.ndim
    out_dtype = np.complex128 if is_complex(g) else np.float64

    def impl(g, x):
        if same_rank and g.shape == x.shape:
            return np.ascontiguousarray(g).reshape(x.shape)
        xs = x.shape
        gs = g.shape
        off = len(gs) - len(xs)
        out = np.zeros(x.size, dtype=out_dtype)
        gc = np.ascontiguousarray(g).ravel()
        for flat in range(gc.size):
            rem = flat
            xi = 0
            mult = 1
            for d in range(len(gs) - 1, -1, -1):
                idx = rem % gs[d]
                rem //= gs[d]
                if d >= off:
                    xd = d - off
                    if xs[xd] != 1:
                        xi += idx * mult
                    mult *= xs[xd]
            out[xi] += gc[flat]
        return out.reshape(xs)
    return impl


@overload(rt.broadcast_like)
def _broadcast_like(g, x):
    if not is_array(x):
        return lambda g, x: g
    return lambda g, x: np.ascontiguousarray(np.broadcast_to(g, x.shape))


@overload(rt.expand_reduced)
def _expand_reduced(g, x, axis=None, keepdims=False):
    if is_float_sequence(x):      # the cotangent of builtin sum of a list: shaped like the stacked list
        return lambda g, x, axis=None, keepdims=False: rt.expand_reduced(g, stack_sequence(x), axis, keepdims)
    if isinstance(x, (types.List, types.BaseTuple)):
        return None
    if not is_array(x) or x.ndim == 0:
        return lambda g, x, axis=None, keepdims=False: g
    if not is_array(g) or g.ndim == 0:
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g * 1.0)
    if axis_mask_impl(axis) is None:
        return None
    nd = x.ndim

    def impl(g, x, axis=None, keepdims=False):
        kshape = kept_shape_from_mask(x.shape, axis_mask(axis, nd))
        gc = np.ascontiguousarray(g).ravel()
        out = np.empty(x.size)
        for flat in range(x.size):
            out[flat] = gc[reduced_flat_index(flat, x.shape, kshape)]
        return out.reshape(x.shape)
    return impl


@overload(rt.reduced_size)
def _reduced_size(x, axis=None):
    if not is_array(x):
        return lambda x, axis=None: 1.0
    if axis_mask_impl(axis) is None:
        return None
    nd = x.ndim

    def impl(x, axis=None):
        red = axis_mask(axis, nd)
        n = 1.0
        for d in range(nd):
            if red[d]:
                n *= x.shape[d]
        return n
    return impl


# ----- elementwise helpers ------------------------------------------------------------------
@overload(rt.tie_weight)
def _tie_weight(a, b):
    if is_array(a) or is_array(b):
        def impl(a, b):
            return np.where(a > b, 1.0, np.where(a == b, 0.5, 0.0))
        return impl

    def scalar(a, b):
        if a > b:
            return 1.0
        if a == b:
            return 0.5
        return 0.0
    return scalar


@overload(rt.extremum_weights)
def _extremum_weights(x, y, axis=None, keepdims=False):
    if not is_array(x):
        return lambda x, y, axis=None, keepdims=False: 1.0

    def impl(x, y, axis=None, keepdims=False):
        hit = (x == rt.expand_reduced(y, x, axis, keepdims)).astype(np.float64)
        count = rt.expand_reduced(reduce_sum(hit, axis, keepdims), x, axis, keepdims)
        return hit / count
    return impl


def add_at_value(a, index, v):
    """rt.add_at as a value (numba_cpu rebinds `a` to it): the array accumulated in place, or a
    new tuple (an op's tuple result, slogdet / eigh / qr / svd: tuples do not change in place)."""
    if isinstance(a, tuple):
        return tuple(e + v if k == index else e for k, e in enumerate(a))
    rt.add_at(a, index, v)
    return a


@overload(add_at_value, prefer_literal=True)
def _add_at_value(a, index, v):
    if isinstance(a, types.BaseTuple):
        k = getattr(index, "literal_value", None)
        if not isinstance(k, int) or not -len(a) <= k < len(a):
            return None
        k %= len(a)
        parts = ", ".join(f"a[{j}] + v" if j == k else f"a[{j}]" for j in range(len(a)))
        return impl_from_source(f"def impl(a, index, v):\n    return ({parts},)\n")

    def impl(a, index, v):
        rt.add_at(a, index, v)
        return a
    return impl


@numba.njit(cache=True, error_model="numpy")
def _repeats(idx):
    """Whether an integer index array names one position twice (then `+=` would not accumulate)."""
    s = np.sort(idx.ravel())
    for k in range(1, s.size):
        if s[k] == s[k - 1]:
            return True
    return False


def _add_at_tuple(a, index, v):
    """add_at for a tuple index holding an integer array: rows A[I, :] and columns A[:, J] of a
    matrix accumulate position by position (np.add.at); other forms add in place when no
    position repeats, and refuse otherwise (a plain `+=` would keep one of the repeats)."""
    where = [k for k, t in enumerate(index.types) if isinstance(t, types.Array)]
    if any(index.types[k].dtype == types.boolean for k in where):
        return None
    if a.ndim == 2 and len(index) == 2 and len(where) == 1 and index.types[where[0]].ndim == 1 \
            and isinstance(index.types[1 - where[0]], types.SliceType):
        if where[0] == 0:
            def rows(a, index, v):
                idx, sl = index
                vb = np.broadcast_to(v, (idx.size, a[0, sl].size))
                for k in range(idx.size):
                    a[idx[k], sl] += vb[k]
            return rows

        def cols(a, index, v):
            sl, idx = index
            vb = np.broadcast_to(v, (a[sl, 0].size, idx.size))
            for k in range(idx.size):
                a[sl, idx[k]] += vb[:, k]
        return cols
    if len(index) == a.ndim and all(isinstance(t, types.Integer) or (isinstance(t, types.Array)
                                                                    and isinstance(t.dtype, types.Integer))
                                    for t in index.types):
        # every axis indexed by an integer array (or an int): positions are tuples of their
        # broadcast elements, accumulated one by one as np.add.at does (x[np.arange(n), labels])
        k = len(index)
        parts = "".join(f"    i{j} = np.broadcast_to(np.asarray(index[{j}]), shape).ravel()\n" for j in range(k))
        shape = "np.broadcast_shapes(" + "".join(f"np.shape(index[{j}]), " for j in range(k)) + ")"
        at = ", ".join(f"i{j}[m]" for j in range(k))
        return impl_from_source(
            f"def impl(a, index, v):\n    shape = {shape}\n{parts}"
            f"    vb = np.broadcast_to(np.asarray(v), shape).ravel()\n"
            f"    for m in range(vb.size):\n        a[{at}] += vb[m]\n", {"np": np})
    checks = "".join(f"    if _repeats(index[{k}]):\n        raise ValueError(MESSAGE)\n" for k in where)
    return impl_from_source(f"def impl(a, index, v):\n{checks}    a[index] += v\n", {
        "_repeats": _repeats, "MESSAGE": "s2s jit: a tuple index repeats a position; this accumulation is not "
                                         "compiled (run without s2s.jit, or index one axis at a time)"})


@overload(rt.add_at)
def _add_at(a, index, v):
    if isinstance(index, types.BaseTuple) and any(isinstance(t, types.Array) for t in index.types):
        return _add_at_tuple(a, index, v)
    if isinstance(index, types.Array):
        if index.dtype == types.boolean:
            if not is_array(a) or index.ndim != a.ndim or a.layout != "C":
                return None      # a mask over the leading axes only: not compiled

            def impl_mask(a, index, v):      # x[mask] picks each position once, in C order
                flat = a.reshape(-1)
                picked = index.ravel()
                vb = np.broadcast_to(v, (np.count_nonzero(picked),))
                j = 0
                for i in range(picked.size):
                    if picked[i]:
                        flat[i] += vb[j]
                        j += 1
            return impl_mask
        if is_array(v):
            def impl_arr(a, index, v):
                for k in range(index.size):
                    a[index[k]] += v[k]
            return impl_arr

        def impl_scalar(a, index, v):
            for k in range(index.size):
                a[index[k]] += v
        return impl_scalar

    def impl(a, index, v):
        a[index] += v
    return impl


@overload(rt.setitem_cotangent)
def _setitem_cotangent(g, index, like):
    if isinstance(index, types.Array):
        if index.ndim != 1 or not isinstance(index.dtype, types.Integer):
            return None

        def impl_array(g, index, like):      # a slot written twice credits only the last write
            out = g[index].astype(np.float64)
            n = g.shape[0]
            seen = np.zeros(n, dtype=np.bool_)
            for k in range(index.size - 1, -1, -1):
                slot = index[k] % n
                if seen[slot]:
                    out[k] = 0.0
                seen[slot] = True
            return rt.unbroadcast(out, like)
        return impl_array

    def impl(g, index, like):
        return rt.unbroadcast(rt.copy_value(g[index]), like)
    return impl


# ----- products -----------------------------------------------------------------------
def _mm_case(a, b):
    return (a.ndim if is_array(a) else 0, b.ndim if is_array(b) else 0)


def _matmul_vjp_stacks(side, a, b):
    """matmul_vjp_a / _b where an operand is a stack of matrices (ndim > 2): through np.matmul's
    stand-in for stacks, the cotangent summed back to the operand's shape; None for other ranks."""
    na, nb = _mm_case(a, b)
    if na == 0 or nb == 0 or (na <= 2 and nb <= 2):
        return None
    if side == "a":
        if nb == 1:
            return lambda g, a, b: rt.unbroadcast(expand_last(g) * b, a)
        if na == 1:
            return lambda g, a, b: rt.unbroadcast(matmul(b, expand_last(g))[..., 0], a)
        return lambda g, a, b: rt.unbroadcast(matmul(g, np.swapaxes(b, -1, -2)), a)
    if na == 1:
        return lambda g, a, b: rt.unbroadcast(expand_last(a) * expand_second_last(g), b)
    if nb == 1:
        return lambda g, a, b: rt.unbroadcast(matmul(expand_second_last(g), a)[..., 0, :], b)
    return lambda g, a, b: rt.unbroadcast(matmul(np.swapaxes(a, -1, -2), g), b)


@overload(rt.matmul_vjp_a)
def _matmul_vjp_a(g, a, b):
    case = _mm_case(a, b)
    if case == (1, 1):
        return lambda g, a, b: g * b
    if case == (2, 1):
        return lambda g, a, b: np.outer(g, b)
    if case == (1, 2):
        return lambda g, a, b: np.dot(blas_operand(b), blas_operand(g))
    if case == (2, 2):
        return lambda g, a, b: np.dot(blas_operand(g), blas_operand(b.T))
    return _matmul_vjp_stacks("a", a, b)


@overload(rt.matmul_vjp_b)
def _matmul_vjp_b(g, a, b):
    case = _mm_case(a, b)
    if case == (1, 1):
        return lambda g, a, b: g * a
    if case == (2, 1):
        return lambda g, a, b: np.dot(blas_operand(a.T), blas_operand(g))
    if case == (1, 2):
        return lambda g, a, b: np.outer(a, g)
    if case == (2, 2):
        return lambda g, a, b: np.dot(blas_operand(a.T), blas_operand(g))
    return _matmul_vjp_stacks("b", a, b)


@overload(rt.dot_vjp_a)
def _dot_vjp_a(g, a, b):
    if not is_array(a) or not is_array(b):
        return lambda g, a, b: rt.unbroadcast(g * b, a)
    return lambda g, a, b: rt.matmul_vjp_a(g, a, b)


@overload(rt.dot_vjp_b)
def _dot_vjp_b(g, a, b):
    if not is_array(a) or not is_array(b):
        return lambda g, a, b: rt.unbroadcast(g * a, b)
    return lambda g, a, b: rt.matmul_vjp_b(g, a, b)


@overload(rt.float_dtype_flag, prefer_literal=True)
def _float_dtype_flag(dtype):
    # a constant of the dtype's type: float / complex keep derivatives, int / bool do not (it was
    # 1.0 for every dtype: x.astype(int) passed x's cotangent through)
    t = dtype
    if is_none(t):             # dtype=None (np.asarray(x)): np.dtype(None) is float64, as in Python
        return lambda dtype: 1.0
    if isinstance(t, types.NumberClass):
        inst = t.instance_type
    elif isinstance(t, types.DType):
        inst = t.dtype
    elif isinstance(t, types.Function) and t.typing_key in (float, int, bool, complex):
        inst = {float: types.float64, int: types.int64, bool: types.boolean, complex: types.complex128}[t.typing_key]
    elif isinstance(t, types.StringLiteral):
        try:
            inst = numba.from_dtype(np.dtype(t.literal_value))
        except (TypeError, ValueError, NotImplementedError):
            return None
    else:
        return None
    flag = 1.0 if isinstance(inst, (types.Float, types.Complex)) else 0.0
    return lambda dtype: flag


@overload(rt.choose)
def _choose(index, *options):
    def impl(index, *options):
        return options[index]
    return impl


@overload(rt.pick_cotangent)
def _pick_cotangent(g, index, k, like):
    def impl(g, index, k, like):
        if index == k:
            return g
        return g * 0.0
    return impl


# ----- fft axes ---------------------------------------------------------------------------
@overload(rt.fft_axes)
def _fft_axes(a, axes):
    if is_none(axes):
        n = a.ndim if is_array(a) else 0
        return impl_from_source(f"def impl(a, axes):\n    return ({''.join(f'{k}, ' for k in range(n))})\n")
    if isinstance(axes, types.UniTuple) and isinstance(axes.dtype, types.Integer):
        return lambda a, axes: axes
    return None


@overload(rt.inverse_axes)
def _inverse_axes_tuple(axes):
    if is_none(axes):
        return lambda axes: None
    if isinstance(axes, types.UniTuple):
        n = axes.count

        def impl(axes):
            out = axes
            for i in range(n):
                out = tuple_setitem(out, axes[i], i)
            return out
        return impl
    return None


# ----- NumPy's Generator, made in object mode (numba_cpu._Lower.random_draws) ---------------------
_GENERATOR_TYPE = numba.typeof(np.random.default_rng(0))


def new_generator(seed=None):
    """np.random.default_rng(seed), for compiled code: Numba types a Generator handed to it (its
    draws use the same bit generator) but cannot make one."""
    return np.random.default_rng(seed)


@numba.njit
def _generator_from_int(seed):
    with numba.objmode(rng=_GENERATOR_TYPE):
        rng = np.random.default_rng(seed)
    return rng


@numba.njit
def _generator_from_entropy():
    with numba.objmode(rng=_GENERATOR_TYPE):
        rng = np.random.default_rng()
    return rng


@overload(new_generator)
def _new_generator(seed=None):
    if seed is None or is_none(seed):
        return lambda seed=None: _generator_from_entropy()
    if isinstance(seed, types.Integer):
        return lambda seed=None: _generator_from_int(seed)
    if isinstance(seed, type(_GENERATOR_TYPE)):
        return lambda seed=None: seed            # default_rng(rng) is rng itself
    return None


def flat_float64(x):
    """A draw's values as a flat float64 array (run in object mode: NumPy's own functions)."""
    return np.ascontiguousarray(np.ravel(x), dtype=np.float64)


def flat_int64(x):
    """An integer draw's values as a flat int64 array (object mode)."""
    return np.ascontiguousarray(np.ravel(x), dtype=np.int64)


def shaped_draw(flat, size):
    """A draw of NumPy's global RandomState, made flat in object mode, in the shape `size` gives."""
    return flat[0] if size is None else flat.reshape(size)


@overload(shaped_draw)
def _shaped_draw(flat, size):
    if size is None or is_none(size):
        return lambda flat, size: flat[0]
    if isinstance(size, types.Integer):
        return lambda flat, size: flat
    if isinstance(size, types.BaseTuple):
        return lambda flat, size: flat.reshape(size)
    return None
