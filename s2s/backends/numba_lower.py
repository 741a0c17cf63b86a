"""Numba lowering of the runtime helpers generated code calls.

Each `@overload(rt.helper)` is the "lower" entry of that helper: the
implementation Numba compiles in nopython mode, chosen at typing time from the
argument types (scalar or array, ndim, None or int axis).  Importing this
module registers them; generated code keeps calling the same names, so the
Python backend and the Numba backends run the very same source.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.typed import List

from .. import runtime as rt
from .. import runtime_batching as rtb
from .. import runtime_fused as rtf


OVERLOADED: set[int] = set()
# How a plain-NumPy helper becomes an njit function (numba_cpu fills this in on import): an
# overload that picks one of several helpers at typing time calls the one it picks through it.
_HELPER_COMPILER: list = []


def set_helper_compiler(compile_helper) -> None:
    _HELPER_COMPILER[:] = [compile_helper]


def compiled_helper(fn):
    """The njit version of the plain-NumPy helper fn (its own helper calls compiled too)."""
    if not _HELPER_COMPILER:
        raise RuntimeError("s2s: no helper compiler registered (import s2s.backends.numba_cpu)")
    return _HELPER_COMPILER[0](fn)
_overload = overload


# Helpers index with the user's indices (add_at(dx, i, g) is the adjoint of x[i]): out of range
# must raise IndexError, as the generated Python does, never write past an array.  (The jit flag
# does not reach overloads: each is compiled with its own options.)
CHECKED = {"boundscheck": True}


def overload(fn, *args, **kwargs):   # noqa: F811 - records which helpers have a Numba implementation
    OVERLOADED.add(id(fn))
    kwargs["jit_options"] = {**CHECKED, **kwargs.get("jit_options", {})}
    return _overload(fn, *args, **kwargs)


def _is_array(t) -> bool:
    return isinstance(t, types.Array)


def _is_none(t) -> bool:
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) and getattr(t, "value", None) is None


def _impl_from_source(src: str, names: dict | None = None):
    """The function `impl` defined by `src`, with `names` (what it calls) as its globals: for
    implementations whose statements depend on the argument types (one check per tuple
    element, one index form per layout)."""
    glb: dict = dict(names or {})
    exec(src, glb)
    return glb["impl"]


def _scalarish(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean)) or (_is_array(t) and t.ndim == 0)


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
    if _is_array(x):
        return lambda x: x.copy()
    return lambda x: x


# ----- seeds, zeros -------------------------------------------------------------------
@overload(rt.check_unpack)
def _check_unpack(value, count):
    def impl(value, count):
        if len(value) != count:
            raise ValueError("cannot unpack: the number of values does not match the names")
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


@overload(rt.check_unshared)
def _check_unshared(target, other, update, target_name, other_name):
    if not (isinstance(target, types.Array) and isinstance(other, types.Array)):
        return lambda target, other, update, target_name, other_name: None

    def impl(target, other, update, target_name, other_name):
        # np.may_share_memory: the byte ranges the two arrays span overlap
        if target.size == 0 or other.size == 0:
            return
        lo_t, hi_t = _byte_span(target)
        lo_o, hi_o = _byte_span(other)
        if lo_t < hi_o and lo_o < hi_t:
            raise ValueError("s2s: an in-place update of an array another variable shares")
    return impl


@overload(rt.seed_cotangent)
def _seed(y):
    if isinstance(getattr(y, "dtype", y), types.Complex):
        raise numba.core.errors.TypingError("grad of a complex-valued output is not supported; "
                                            "differentiate the real part: np.real(...)")
    if isinstance(getattr(y, "dtype", y), types.Boolean):
        raise numba.core.errors.TypingError("grad of a boolean output: a comparison has no derivative (as in JAX)")
    if _is_array(y) and y.ndim > 0:
        def impl(y):
            raise ValueError("grad requires a function with a scalar output")
        return impl
    return lambda y: 1.0


@overload(rt.zeros_like)
def _zeros_like(x):
    if _is_array(x) and x.ndim == 0:
        # Numba's arithmetic on 0-d arrays gives scalars: a 0-d zero array would not unify with
        # `dx + ...` in a loop; the cotangent of a 0-d array is a scalar (the wrapper returns it)
        return lambda x: 0.0
    if _is_array(x):
        return lambda x: np.zeros(x.shape)
    if isinstance(x, types.ListType):
        def impl(x):
            return List.empty_list(x.item_type)
        return impl
    if isinstance(x, types.List) and _is_array(x.dtype):     # np.split's pieces: one zero array each
        return lambda x: [np.zeros(e.shape) for e in x]
    if isinstance(x, types.BaseTuple):      # an op's tuple result (see add_at_value)
        if len(x) == 0:
            return lambda x: ()
        parts = ", ".join(f"rt.zeros_like(x[{j}])" for j in range(len(x)))
        return _impl_from_source(f"def impl(x):\n    return ({parts},)\n", {"rt": rt})
    return lambda x: 0.0


@overload(rt.stop_gradient)
def _stop_gradient(x):
    return lambda x: x


@overload(rt.to_float)
def _to_float(x):
    return lambda x: float(x)


# ----- shape bookkeeping: flat index maps ------------------------------------------------
@numba.njit(cache=True)
def _reduced_flat_index(flat, full_shape, kshape):
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


@numba.njit(cache=True)
def _kept_shape(shape, red):
    out = shape
    for d in range(len(shape)):
        if red[d]:
            out = tuple_setitem(out, d, 1)
    return out


def _axis_mask_impl(axis_type):
    """A function (axis, ndim) -> boolean mask of reduced axes, specialized on the axis type."""
    if _is_none(axis_type):
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
    return numba.njit(mask)


def _n_reduced(axis_type, nd):
    if _is_none(axis_type):
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


# ----- unbroadcast / expand ---------------------------------------------------------------
def _is_complex(t) -> bool:
    return isinstance(getattr(t, "dtype", t), types.Complex)


@overload(rt.unbroadcast)
def _unbroadcast(g, x):
    if _is_complex(g) and not _is_complex(x):     # a real operand of a complex op: the real part
        return lambda g, x: rt.unbroadcast(np.real(g), x)
    if not _is_array(g) or g.ndim == 0:
        return lambda g, x: g
    if not _is_array(x) or x.ndim == 0:
        return lambda g, x: np.sum(g)
    if g.ndim < x.ndim:
        return None
    same_rank = g.ndim == x.ndim
    out_dtype = np.complex128 if _is_complex(g) else np.float64

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
    if not _is_array(x):
        return lambda g, x: g
    return lambda g, x: np.ascontiguousarray(np.broadcast_to(g, x.shape))


@overload(rt.expand_reduced)
def _expand_reduced(g, x, axis=None, keepdims=False):
    if is_float_sequence(x):      # the cotangent of builtin sum of a list: shaped like the stacked list
        return lambda g, x, axis=None, keepdims=False: rt.expand_reduced(g, stack_sequence(x), axis, keepdims)
    if isinstance(x, (types.List, types.BaseTuple)):
        return None
    if not _is_array(x) or x.ndim == 0:
        return lambda g, x, axis=None, keepdims=False: g
    if not _is_array(g) or g.ndim == 0:
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g * 1.0)
    mask_of = _axis_mask_impl(axis)
    if mask_of is None:
        return None
    nd = x.ndim

    def impl(g, x, axis=None, keepdims=False):
        kshape = _kept_shape(x.shape, mask_of(axis, nd))
        gc = np.ascontiguousarray(g).ravel()
        out = np.empty(x.size)
        for flat in range(x.size):
            out[flat] = gc[_reduced_flat_index(flat, x.shape, kshape)]
        return out.reshape(x.shape)
    return impl


@overload(rt.reduced_size)
def _reduced_size(x, axis=None):
    if not _is_array(x):
        return lambda x, axis=None: 1.0
    mask_of = _axis_mask_impl(axis)
    nd = x.ndim

    def impl(x, axis=None):
        red = mask_of(axis, nd)
        n = 1.0
        for d in range(nd):
            if red[d]:
                n *= x.shape[d]
        return n
    return impl


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
    return item == types.float64 or isinstance(item, types.Integer) or (_is_array(item) and item.dtype == types.float64)


@overload(stack_sequence)
def _stack_sequence(a):
    if not is_float_sequence(a):
        return None
    if _is_array(a.dtype):
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
        if not _is_array(x):
            return lambda x, axis=None, keepdims=False: x
        keep = _keepdims_value(keepdims)
        if keep is None:
            return None
        if _is_none(axis) and not keep:
            return lambda x, axis=None, keepdims=False: whole(x)
        mask_of = _axis_mask_impl(axis)
        if mask_of is None:
            return None
        nd = x.ndim
        nred = _n_reduced(axis, nd)
        if nred == nd and not keep:       # every axis reduced: a number (as NumPy gives)
            return lambda x, axis=None, keepdims=False: whole(x)

        def impl(x, axis=None, keepdims=False):
            red = mask_of(axis, nd)
            kshape = _kept_shape(x.shape, red)
            size = 1
            for d in range(nd):
                size *= kshape[d]
            out = np.full(size, start)
            xc = np.ascontiguousarray(x).ravel()
            for flat in range(xc.size):
                j = _reduced_flat_index(flat, x.shape, kshape)
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


# ----- reversed ranges ----------------------------------------------------------------------
def reversed_range(*args):
    """reversed(range(*args)) as a range (Numba compiles ranges, not reversed())."""
    return range(*args)[::-1]


@overload(reversed_range)
def _reversed_range(*args):
    n = len(args[0]) if isinstance(args[0], types.BaseTuple) else len(args)
    if n == 1:
        def impl1(*args):
            stop = args[0]
            return range(stop - 1, -1, -1)
        return impl1
    if n == 2:
        def impl2(*args):
            return range(args[1] - 1, args[0] - 1, -1)
        return impl2

    def impl3(*args):
        a, b, c = args[0], args[1], args[2]
        count = len(range(a, b, c))
        if count <= 0:
            return range(0, 0, 1)
        return range(a + (count - 1) * c, a - c, -c)
    return impl3


# ----- elementwise helpers ------------------------------------------------------------------
@overload(rt.tie_weight)
def _tie_weight(a, b):
    if _is_array(a) or _is_array(b):
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
    if not _is_array(x):
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
        return _impl_from_source(f"def impl(a, index, v):\n    return ({parts},)\n")

    def impl(a, index, v):
        rt.add_at(a, index, v)
        return a
    return impl


@numba.njit(cache=True)
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
    checks = "".join(f"    if _repeats(index[{k}]):\n        raise ValueError(MESSAGE)\n" for k in where)
    return _impl_from_source(f"def impl(a, index, v):\n{checks}    a[index] += v\n", {
        "_repeats": _repeats, "MESSAGE": "s2s jit: a tuple index repeats a position; this accumulation is not "
                                         "compiled (run without s2s.jit, or index one axis at a time)"})


@overload(rt.add_at)
def _add_at(a, index, v):
    if isinstance(index, types.BaseTuple) and any(isinstance(t, types.Array) for t in index.types):
        return _add_at_tuple(a, index, v)
    if isinstance(index, types.Array):
        if index.dtype == types.boolean:
            if not _is_array(a) or index.ndim != a.ndim or a.layout != "C":
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
        if _is_array(v):
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


def _basic_index_type(index) -> bool:
    parts = index.types if isinstance(index, types.BaseTuple) else (index,)
    return all(isinstance(p, (types.Integer, types.SliceType, types.NoneType)) for p in parts)


@overload(rtb.badd_at, prefer_literal=True)
def _badd_at(a, index, v, ab, vb, size):
    """add_at per example (vmapped `x[i] += v`): a is batched; v batched when vb."""
    if not _is_array(a) or not isinstance(vb, types.BooleanLiteral):
        return None
    if _basic_index_type(index):
        if isinstance(index, types.BaseTuple):
            def basic_tuple(a, index, v, ab, vb, size):
                a[(slice(None),) + index] += v
            return basic_tuple

        def basic(a, index, v, ab, vb, size):
            a[:, index] += v
        return basic
    if vb.literal_value:
        def each_batched(a, index, v, ab, vb, size):
            for b in range(size):
                rt.add_at(a[b], index, v[b])
        return each_batched

    def each(a, index, v, ab, vb, size):
        for b in range(size):
            rt.add_at(a[b], index, v)
    return each


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
    return (a.ndim if _is_array(a) else 0, b.ndim if _is_array(b) else 0)


def _blas_operand(x):
    """x as BLAS takes it: C- or F-contiguous arrays as they are (a transpose is a flag to gemm,
    not a copy: h.T @ g on 256x512 floats 0.54 -> 0.17 ms), other layouts copied."""
    return np.ascontiguousarray(x)


@overload(_blas_operand, inline="always")
def _blas_operand_impl(x):
    if _is_array(x) and x.layout in ("C", "F"):
        return lambda x: x
    return lambda x: np.ascontiguousarray(x)


@overload(rt.matmul_vjp_a)
def _matmul_vjp_a(g, a, b):
    case = _mm_case(a, b)
    if case == (1, 1):
        return lambda g, a, b: g * b
    if case == (2, 1):
        return lambda g, a, b: np.outer(g, b)
    if case == (1, 2):
        return lambda g, a, b: np.dot(_blas_operand(b), _blas_operand(g))
    if case == (2, 2):
        return lambda g, a, b: np.dot(_blas_operand(g), _blas_operand(b.T))
    return None


@overload(rt.matmul_vjp_b)
def _matmul_vjp_b(g, a, b):
    case = _mm_case(a, b)
    if case == (1, 1):
        return lambda g, a, b: g * a
    if case == (2, 1):
        return lambda g, a, b: np.dot(_blas_operand(a.T), _blas_operand(g))
    if case == (1, 2):
        return lambda g, a, b: np.outer(a, g)
    if case == (2, 2):
        return lambda g, a, b: np.dot(_blas_operand(a.T), _blas_operand(g))
    return None


@overload(rt.dot_vjp_a)
def _dot_vjp_a(g, a, b):
    if not _is_array(a) or not _is_array(b):
        return lambda g, a, b: rt.unbroadcast(g * b, a)
    return lambda g, a, b: rt.matmul_vjp_a(g, a, b)


@overload(rt.dot_vjp_b)
def _dot_vjp_b(g, a, b):
    if not _is_array(a) or not _is_array(b):
        return lambda g, a, b: rt.unbroadcast(g * a, b)
    return lambda g, a, b: rt.matmul_vjp_b(g, a, b)


@overload(rt.float_dtype_flag, prefer_literal=True)
def _float_dtype_flag(dtype):
    # a constant of the dtype's type: float / complex keep derivatives, int / bool do not (it was
    # 1.0 for every dtype: x.astype(int) passed x's cotangent through)
    t = dtype
    if _is_none(t):             # dtype=None (np.asarray(x)): np.dtype(None) is float64, as in Python
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


@_overload(np.ndim)
def _np_ndim(a):
    n = a.ndim if _is_array(a) else 0
    return lambda a: n


# ----- op helpers (s2s/rules/*_helpers.py) whose plain-Python bodies use dynamic tuples -------
from ..rules import fft_helpers as fh  # noqa: E402
from ..rules import products_helpers as ph  # noqa: E402
from ..rules import reduction_helpers as rh  # noqa: E402
from ..rules import shape_helpers as sh  # noqa: E402


@overload(fh.cotangent_kind)
def _cotangent_kind(v, like):
    if _is_complex(v) and not _is_complex(like):
        return lambda v, like: np.real(v)
    if _is_complex(like) and not _is_complex(v):
        return lambda v, like: v * (1.0 + 0.0j)
    return lambda v, like: v


@overload(ph.dot_vjp_any_a)
def _dot_vjp_any_a(g, a, b):
    if not _is_array(a) or not _is_array(b) or a.ndim == 0 or b.ndim == 0:
        return lambda g, a, b: rt.unbroadcast(g * b, a)
    if a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b: rt.matmul_vjp_a(g, a, b)
    return None


@overload(ph.dot_vjp_any_b)
def _dot_vjp_any_b(g, a, b):
    if not _is_array(a) or not _is_array(b) or a.ndim == 0 or b.ndim == 0:
        return lambda g, a, b: rt.unbroadcast(g * a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b: rt.matmul_vjp_b(g, a, b)
    return None


# np.array(obj)'s cotangent, one level of obj's nesting per loop: the plain helper recurses, and
# Numba's cached machine code of a caller of a recursive function crashes the next process that
# loads it (the recursive call's address is fixed up when compiled, not when loaded from disk)
def _array_vjp_source(obj, g: str, o: str, depth: int) -> list[str]:
    if not isinstance(obj, (types.List, types.BaseTuple)):
        return None
    inner = obj.dtype if isinstance(obj, types.List) else (obj.types[0] if len(obj.types) else None)
    if isinstance(obj, types.BaseTuple) and any(t != inner for t in obj.types):
        return None          # a heterogeneous tuple: no list type holds its cotangents
    out, i = f"out{depth}", f"i{depth}"
    lines = [f"{out} = []", f"for {i} in range(len({o})):"]
    if isinstance(inner, (types.List, types.BaseTuple)):
        body = _array_vjp_source(inner, f"{g}[{i}]", f"{o}[{i}]", depth + 1)
        if body is None:
            return None
        lines += ["    " + ln for ln in body] + [f"    {out}.append(out{depth + 1})"]
    else:
        lines.append(f"    {out}.append({g}[{i}])")
    return lines


@overload(sh.array_vjp)
def _array_vjp(g, obj):
    if not isinstance(obj, (types.List, types.BaseTuple)):
        return lambda g, obj: g
    body = _array_vjp_source(obj, "g", "obj", 0)
    if body is None:
        return None
    return _impl_from_source("def impl(g, obj):\n" + "".join("    " + ln + "\n" for ln in body) + "    return out0\n")


@overload(sh.linspace_weights)
def _linspace_weights(y, num, endpoint=True, retstep=False, axis=0):
    if not _is_array(y) or y.ndim != 1:
        return None          # a linspace of arrays: no compiled version (the error says so)

    def impl(y, num, endpoint=True, retstep=False, axis=0):
        if retstep or axis != 0:
            raise ValueError("s2s differentiates np.linspace only with retstep=False and axis=0")
        div = num - 1 if endpoint else num
        return np.arange(num) / max(div, 1)
    return impl


@overload(rh.prod_except)
def _prod_except(x, axis=None):
    if not _is_array(x) or x.ndim == 0:
        return lambda x, axis=None: 1.0
    mask_of = _axis_mask_impl(axis)
    if mask_of is None:
        return None
    nd = x.ndim

    def impl(x, axis=None):
        # product of the other elements in each reduced group, division-free (exact at zeros)
        kshape = _kept_shape(x.shape, mask_of(axis, nd))
        size = 1
        for d in range(nd):
            size *= kshape[d]
        xc = np.ascontiguousarray(x).ravel()
        groups = np.empty(xc.size, dtype=np.int64)
        counts = np.zeros(size, dtype=np.int64)
        for flat in range(xc.size):
            j = _reduced_flat_index(flat, x.shape, kshape)
            groups[flat] = j
            counts[j] += 1
        out = np.empty(xc.size)
        for flat in range(xc.size):
            p = 1.0
            j = groups[flat]
            for other in range(xc.size):
                if other != flat and groups[other] == j:
                    p *= xc[other]
            out[flat] = p
        return out.reshape(x.shape)
    return impl


@overload(rtb.balign)
def _balign(x, peers, flags):
    # static: ranks and flags are known when Numba types the call
    if not _is_array(x):
        return lambda x, peers, flags: x
    flag_values = [getattr(f, "literal_value", None) for f in getattr(flags, "types", ())]
    if any(v is None for v in flag_values):
        return None
    ranks = [x.ndim - 1]
    for p, f in zip(peers.types, flag_values):
        nd = p.ndim if _is_array(p) else 0
        ranks.append(nd - 1 if f else nd)
    pad = max(ranks) - (x.ndim - 1)
    if pad <= 0:
        return lambda x, peers, flags: x
    if x.ndim == 1 and pad == 1:
        return lambda x, peers, flags: np.ascontiguousarray(x).reshape((x.shape[0], 1))
    if x.ndim == 1 and pad == 2:
        return lambda x, peers, flags: np.ascontiguousarray(x).reshape((x.shape[0], 1, 1))
    if x.ndim == 2 and pad == 1:
        return lambda x, peers, flags: np.ascontiguousarray(x).reshape((x.shape[0], 1, x.shape[1]))
    ones = (1,) * pad      # (B, ...) -> (B, 1, ..., 1, ...)
    return lambda x, peers, flags: np.ascontiguousarray(x).reshape((x.shape[0],) + ones + x.shape[1:])


@overload(rtb.batch_size)
def _batch_size(args, axes, names, axis_size=None):
    # the batched positions are those whose axis is not None (a tuple of constants loses its
    # literal values in Numba's typing: the axes themselves are read at run time)
    batched = [i for i, a in enumerate(getattr(axes, "types", ())) if not isinstance(a, (types.NoneType, types.Omitted))]
    if not batched:
        return lambda args, axes, names, axis_size=None: axis_size
    src = "def impl(args, axes, names, axis_size=None):\n"
    src += "    n = args[%d].shape[axes[%d] %% args[%d].ndim]\n" % (batched[0], batched[0], batched[0])
    for k in batched[1:]:
        src += "    if args[%d].shape[axes[%d] %% args[%d].ndim] != n:\n" % (k, k, k)
        src += "        raise ValueError('vmap: the batched arguments differ in size along their batch axes')\n"
    src += "    return n\n"
    return _impl_from_source(src)


@overload(rtb.baxis)
def _baxis(axis, x):
    nd = (x.ndim - 1) if _is_array(x) else 0
    if _is_none(axis):
        tup = tuple(range(1, nd + 1))
        return lambda axis, x: tup
    if isinstance(axis, types.Integer):
        if nd == 0:
            return lambda axis, x: 1
        return lambda axis, x: axis % nd + 1
    if isinstance(axis, types.BaseTuple) and all(isinstance(a, types.Integer) for a in axis.types):
        n = len(axis.types)
        if n == 0:
            return lambda axis, x: ()
        if nd == 0:
            ones = (1,) * n
            return lambda axis, x: ones
        return _impl_from_source("def impl(axis, x):\n    return (%s,)\n"
                                 % ", ".join(f"axis[{k}] % {nd} + 1" for k in range(n)))
    return None


@overload(rtb.btranspose)
def _btranspose(x, axes=None):
    if not _is_array(x) or x.ndim < 1:
        return None
    nd = x.ndim - 1
    if _is_none(axes):
        perm = (0,) + tuple(range(nd, 0, -1))
        return lambda x, axes=None: np.transpose(x, perm)
    if isinstance(axes, types.BaseTuple) and all(isinstance(a, types.Integer) for a in axes.types):
        if len(axes.types) != nd:
            raise numba.core.errors.TypingError(f"s2s: np.transpose axes of length {len(axes.types)} do not match "
                                                f"an array of rank {nd} (per example)")
        if nd == 0:
            return lambda x, axes=None: x
        perm = ", ".join(["0"] + [f"axes[{k}] % {nd} + 1" for k in range(nd)])
        return _impl_from_source("import numpy as np\ndef impl(x, axes=None):\n"
                                 "    return np.transpose(x, (%s,))\n" % perm)
    return None


@overload(rtb.breshape)
def _breshape(x, shape):
    if not _is_array(x):
        return None
    if isinstance(shape, types.Integer):
        return lambda x, shape: np.ascontiguousarray(x).reshape((x.shape[0], shape))
    if isinstance(shape, types.BaseTuple) and all(isinstance(a, types.Integer) for a in shape.types):
        return lambda x, shape: np.ascontiguousarray(x).reshape((x.shape[0],) + shape)
    return None


def _basic_index_part(t) -> bool:
    return isinstance(t, (types.Integer, types.SliceType, types.NoneType, types.EllipsisType)) \
        and not isinstance(t, types.Boolean)


@overload(rtb.bgetitem)
def _bgetitem(x, index, xb):
    flag = getattr(xb, "literal_value", None)
    if flag is None:
        return None
    if not flag:
        return lambda x, index, xb: x[index]
    if not _is_array(x):
        return None
    parts = list(index.types) if isinstance(index, types.BaseTuple) else [index]
    if all(_basic_index_part(t) for t in parts):
        if isinstance(index, types.BaseTuple):
            src = "def impl(x, index, xb):\n    return x[:%s]\n" % "".join(f", index[{k}]" for k in range(len(parts)))
            return _impl_from_source(src)
        return lambda x, index, xb: x[:, index]

    def per_example(x, index, xb):       # advanced indexing: per example, stacked (np.stack)
        n = x.shape[0]
        if n < 1:
            raise ValueError("vmap: a per-example loop needs at least one example (np.stack of no arrays)")
        first = x[0][index]
        out = bmap_empty(first, n)
        bmap_put(out, 0, first)
        for b in range(1, n):
            bmap_put(out, b, x[b][index])
        return out
    return per_example


@overload(rtb.bseed)
def _bseed(y):
    return lambda y: 1.0


@overload(rtb.bmatmul)
def _bmatmul(a, b, ab, bb):
    fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
    if fa is None or fb is None or not (_is_array(a) and _is_array(b)):
        return None
    pa, pb = a.ndim - int(fa), b.ndim - int(fb)
    if fa and not fb:
        if pa == 1 and pb == 1:
            return lambda a, b, ab, bb: np.dot(_blas_operand(a), _blas_operand(b))
        if pa == 1 and pb == 2:
            return lambda a, b, ab, bb: np.dot(_blas_operand(a), _blas_operand(b))
        if pa == 2 and pb == 1:      # per-example matrix @ shared vector: one product of all rows
            def rows_times_vector(a, b, ab, bb):
                n, m, k = a.shape
                return np.dot(np.ascontiguousarray(a).reshape((n * m, k)), np.ascontiguousarray(b)).reshape((n, m))
            return rows_times_vector
    if fb and not fa:
        if pa == 1 and pb == 1:
            return lambda a, b, ab, bb: np.dot(_blas_operand(b), _blas_operand(a))
        if pa == 2 and pb == 1:
            return lambda a, b, ab, bb: np.dot(_blas_operand(b), _blas_operand(a.T))
    if fa and fb and pa == 1 and pb == 1:
        def rowdot(a, b, ab, bb):
            out = np.empty(a.shape[0])
            for i in range(a.shape[0]):
                s = 0.0
                for k in range(a.shape[1]):
                    s += a[i, k] * b[i, k]
                out[i] = s
            return out
        return rowdot
    return _bmatmul_per_example(a, b, fa, fb, pa, pb)


def _example_matmul(x, y):
    """x @ y for one example (x of any rank >= 1, y a vector or a matrix)."""
    return x @ y


@overload(_example_matmul)
def _example_matmul_impl(x, y):
    if not (_is_array(x) and _is_array(y)) or y.ndim > 2 or x.ndim < 1:
        return None
    if x.ndim <= 2:
        return lambda x, y: np.dot(_blas_operand(x), _blas_operand(y))
    if y.ndim == 1:
        def stack_times_vector(x, y):
            k = x.shape[-1]
            return np.dot(np.ascontiguousarray(x).reshape((x.size // k if k else 0, k)), _blas_operand(y)) \
                .reshape(x.shape[:-1])
        return stack_times_vector

    def stack_times_matrix(x, y):      # (..., m, k) @ (k, n): the rows of every matrix at once
        k = x.shape[-1]
        return np.dot(np.ascontiguousarray(x).reshape((x.size // k if k else 0, k)), _blas_operand(y)) \
            .reshape(x.shape[:-1] + (y.shape[1],))
    return stack_times_matrix


def _bmatmul_per_example(a, b, fa, fb, pa, pb):
    """bmatmul as one product per example: a stack of matrices (or a vector, or a matrix) times a
    vector or a matrix; the product of a vector or matrix with a stack of matrices is refused."""
    if pb > 2 or pa < 1 or pb < 1 or not (fa or fb):
        return None
    if not all(isinstance(t.dtype, types.Float) for t in (a, b)):
        return None
    dtype = np.result_type(_np_dtype(a.dtype), _np_dtype(b.dtype))
    if pb == 1:
        tail = "sa[:-1]"
    elif pa == 1:
        tail = "sb[1:]"
    else:
        tail = "sa[:-1] + sb[1:]"
    src = ("def impl(a, b, ab, bb):\n"
           f"    n = {'a' if fa else 'b'}.shape[0]\n"
           f"    sa = a.shape{'[1:]' if fa else ''}\n"
           f"    sb = b.shape{'[1:]' if fb else ''}\n"
           "    if sa[-1] != sb[0]:\n"
           "        raise ValueError('matmul: Input operand 1 has a mismatch in its core dimension 0')\n"
           f"    out = np.empty((n,) + {tail}, dtype)\n"
           "    for i in range(n):\n"
           f"        out[i] = _example_matmul({'a[i]' if fa else 'a'}, {'b[i]' if fb else 'b'})\n"
           "    return out\n")
    return _impl_from_source(src, {"np": np, "dtype": dtype, "_example_matmul": _example_matmul})


@overload(rtb.bdot)
def _bdot(a, b, ab, bb):
    """Per-example np.dot of vectors/matrices is the per-example matmul; a scalar side multiplies."""
    fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
    if fa is None or fb is None:
        return None
    pa = (a.ndim if _is_array(a) else 0) - int(fa)
    pb = (b.ndim if _is_array(b) else 0) - int(fb)
    if pa >= 1 and pb >= 1:
        if pb > 2:       # np.dot of a stack of matrices is not matmul's product
            return None
        return lambda a, b, ab, bb: rtb.bmatmul(a, b, ab, bb)
    if pa == 0 or pb == 0:
        # the flags are constants: align at typing time (a conditional expression would have to
        # unify an aligned array with the unaligned one)
        src = "def impl(a, b, ab, bb):\n    return %s * %s\n" % (
            "rtb.balign(a, (b,), (bb,))" if fa else "a", "rtb.balign(b, (a,), (ab,))" if fb else "b")
        return _impl_from_source(src, {"rtb": rtb})
    return None


@overload(rtb.bunbroadcast)
def _bunbroadcast(g, x, gb, xb):
    if _is_complex(g) and not _is_complex(x):
        return lambda g, x, gb, xb: rtb.bunbroadcast(np.real(g), x, gb, xb)
    fg, fx = getattr(gb, "literal_value", None), getattr(xb, "literal_value", None)
    if fg is None or fx is None:
        return None
    if not fg:       # one cotangent for the batch: unbroadcast it once, repeated per example of x
        if not fx:
            return lambda g, x, gb, xb: rt.unbroadcast(g, x)
        if not _is_array(x):
            return None
        return lambda g, x, gb, xb: rtb.bexpand(rt.unbroadcast(g, x[0]), x.shape[0])
    if not _is_array(g):
        return lambda g, x, gb, xb: g
    xr = (x.ndim - (1 if fx else 0)) if _is_array(x) else 0
    gr = g.ndim - (1 if fg else 0)
    if fg and gr == xr and not _is_array(x):
        return lambda g, x, gb, xb: g
    if fg and gr >= xr and xr > 0:
        # x may have been broadcast along its size-1 axes (hypot(a, b) of b (3, 1) and a (3, 4)) and
        # along new leading axes (a (2, 3) / b (3,)): sum g over those (i % 1 == 0) and over the
        # leading ones, each example on its own
        nd = g.ndim
        extra = gr - xr
        idx = ", ".join(f"i{k}" for k in range(nd))
        out_idx = ", ".join(["i0"] + [f"i{k} % out.shape[{k - extra}]" for k in range(1 + extra, nd)])
        lines = ["def impl(g, x, gb, xb):",
                 f"    xs = x.shape{'[1:]' if fx else ''}"]
        if extra == 0:
            lines += ["    if g.shape[1:] == xs:",
                      "        return np.ascontiguousarray(g)"]
        lines += ["    out = np.zeros((g.shape[0],) + xs, g.dtype)"]
        for k in range(nd):
            lines.append("    " * (k + 1) + f"for i{k} in range(g.shape[{k}]):")
        lines.append("    " * (nd + 1) + f"out[{out_idx}] += g[{idx}]")
        lines.append("    return out")
        return _impl_from_source("\n".join(lines) + "\n", {"np": np})
    if fg and xr == 0:
        def sum_rows(g, x, gb, xb):
            out = np.zeros(g.shape[0])
            gg = np.ascontiguousarray(g).reshape((g.shape[0], -1))
            for i in range(gg.shape[0]):
                out[i] = gg[i].sum()
            return out
        return sum_rows
    return None


def _bexpand_reduced_axes(g, x, axis, keepdims, fg, fx):
    """bexpand_reduced of a reduction over constant axes: every element of the result reads the
    reduced value its example and its kept indices name (g's size-1 axes broadcast)."""
    if not _is_array(x) or (fg and not _is_array(g)):
        return None
    nd = x.ndim - (1 if fx else 0)
    if isinstance(axis, types.IntegerLiteral):
        axes = (axis.literal_value,)
    elif isinstance(axis, types.BaseTuple) and all(isinstance(t, types.IntegerLiteral) for t in axis.types):
        axes = tuple(t.literal_value for t in axis.types)
    else:
        return None
    keep = getattr(keepdims, "literal_value", keepdims if isinstance(keepdims, bool) else None)
    if keep is None or nd == 0 or any(not -nd <= a < nd for a in axes):
        return None
    axes = {a % nd for a in axes}
    gidx = ["b"] if fg else []
    pos = len(gidx)
    for k in range(nd):
        if keep:
            gidx.append(f"i{k} % g.shape[{pos}]")
            pos += 1
        elif k not in axes:
            gidx.append(f"i{k}")
            pos += 1
    if _is_array(g) and g.ndim != pos:
        return None
    read = "g" if not _is_array(g) else (f"g[{', '.join(gidx)}]" if gidx else "g[()]")
    lines = ["def impl(g, x, axis, keepdims, gb, xb):",
             f"    size = {'g' if fg else 'x'}.shape[0]",
             f"    xs = x.shape{'[1:]' if fx else ''}",
             f"    out = np.empty((size,) + xs, {'g.dtype' if _is_array(g) else 'np.float64'})",
             "    for b in range(size):"]
    for k in range(nd):
        lines.append("    " * (k + 2) + f"for i{k} in range(xs[{k}]):")
    lines.append("    " * (nd + 2) + f"out[b, {', '.join(f'i{k}' for k in range(nd))}] = {read}")
    lines.append("    return out")
    return _impl_from_source("\n".join(lines) + "\n", {"np": np})


@overload(rtb.bexpand_reduced)
def _bexpand_reduced(g, x, axis, keepdims, gb, xb):
    """The cotangent of a full reduction per example (axis None): each example's value g[b]
    (or the shared g) fills that example's shape. Other axes: no Numba version (the generic
    runtime function is refused by Numba, and the error says so)."""
    fg, fx = getattr(gb, "literal_value", None), getattr(xb, "literal_value", None)
    if fg is None or fx is None or not (fg or fx):
        return None
    if not _is_none(axis):
        return _bexpand_reduced_axes(g, x, axis, keepdims, fg, fx)
    if fg != _is_array(g):       # batched: an array of per-example values; shared: a number
        return None
    if not _is_array(x):
        if fx:
            return None
        return lambda g, x, axis, keepdims, gb, xb: np.ascontiguousarray(g).reshape(g.size).astype(np.float64)

    if fg:
        if fx:
            def shape_of(x):
                return x.shape[1:]
        else:
            def shape_of(x):
                return x.shape
        shape_of = numba.njit(inline="always")(shape_of)

        def fill_per_example(g, x, axis, keepdims, gb, xb):
            size = g.shape[0]
            out = np.empty((size,) + shape_of(x))
            rows = out.reshape((size, out.size // size if size else 0))
            gflat = np.ascontiguousarray(g).reshape(g.size)     # per-example scalars (keepdims: ones)
            for b in range(size):
                rows[b, :] = gflat[b]
            return out
        return fill_per_example

    def fill_shared(g, x, axis, keepdims, gb, xb):    # (x batched)
        out = np.empty(x.shape)
        out[...] = g
        return out
    return fill_shared


@overload(rtb.bexpand)
def _bexpand(x, size):
    if _is_array(x):
        return lambda x, size: np.ascontiguousarray(np.broadcast_to(x, (size,) + x.shape))
    return lambda x, size: np.full(size, x)


@overload(rt.fft_axes)
def _fft_axes(a, axes):
    if _is_none(axes):
        n = a.ndim if _is_array(a) else 0
        return _impl_from_source(f"def impl(a, axes):\n    return ({''.join(f'{k}, ' for k in range(n))})\n")
    if isinstance(axes, types.UniTuple) and isinstance(axes.dtype, types.Integer):
        return lambda a, axes: axes
    return None


@overload(rt.inverse_axes)
def _inverse_axes_tuple(axes):
    if _is_none(axes):
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


def _bmatmul_vjp_lower(side):
    per_example = rt.matmul_vjp_a if side == "a" else rt.matmul_vjp_b

    def lower(g, a, b, ab, bb, keep=False):
        fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
        fk = getattr(keep, "literal_value", None)
        if fa is None or fb is None or not fk or not (_is_array(a) and _is_array(b) and _is_array(g)):
            return None
        if g.ndim == 1 and fa != fb and (a.ndim, b.ndim) == ((2, 1) if fa else (1, 2)):
            # per-example dot products (a batched vector against a shared one, or the reverse):
            # the cotangent of one side is g[i] times the other side's vector, written in place
            def dot_impl(g, a, b, ab, bb, keep=False):
                batched, shared = (a, b) if fa else (b, a)
                n, d = g.shape[0], batched.shape[1]
                out = np.empty((n, d))
                for i in range(n):
                    gi = g[i]
                    if side == ("b" if fa else "a"):      # the cotangent of the shared vector
                        for j in range(d):
                            out[i, j] = gi * batched[i, j]
                    else:                                 # the cotangent of the batched vector
                        for j in range(d):
                            out[i, j] = gi * shared[j]
                return out
            return dot_impl

        def impl(g, a, b, ab, bb, keep=False):
            n = g.shape[0]
            first = per_example(g[0], a[0] if fa else a, b[0] if fb else b)
            out = np.empty((n,) + first.shape)
            out[0] = first
            for i in range(1, n):
                out[i] = per_example(g[i], a[i] if fa else a, b[i] if fb else b)
            return out
        return impl
    return lower


overload(rtb.bmatmul_vjp_a)(_bmatmul_vjp_lower("a"))
overload(rtb.bmatmul_vjp_b)(_bmatmul_vjp_lower("b"))


# ----- per-example loops: bmap and per_example, as numba_cpu lowers them --------------------
# `t = bmap(fn, args, flags, batch, kwargs)` becomes a loop over the examples that computes
# example 0, allocates the stacked result from it (bmap_empty), and writes each example's value
# into it (bmap_put): np.stack([np.asarray(o) for o in outs]) without a list of outputs.
# `return per_example(example_fn, ...)` likewise, per output component (stack_empty, stack_put,
# stack_finish: the batch axis moved to out_axes, None: example 0's value).
def bmap_empty(first, size):
    """Room for `size` stacked copies of np.asarray(first)."""
    first = np.asarray(first)
    return np.empty((size,) + first.shape, first.dtype)


def bmap_put(out, b, value):
    """out[b] = np.asarray(value), refusing a value of another shape (np.stack does)."""
    value = np.asarray(value)
    if value.shape != out.shape[1:]:
        raise ValueError("all input arrays must have the same shape")
    out[b] = value


def stack_empty(first, size):
    """bmap_empty per component of a tuple output."""
    if isinstance(first, tuple):
        return tuple(bmap_empty(v, size) for v in first)
    return bmap_empty(first, size)


def stack_put(out, b, value):
    if isinstance(out, tuple):
        for o, v in zip(out, value):
            bmap_put(o, b, v)
    else:
        bmap_put(out, b, value)


def stack_finish(out, first, out_axes):
    """The stacked outputs with their batch axes at out_axes (None: example 0's value)."""
    if isinstance(out, tuple):
        axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(out)
        return tuple(f if ax is None else np.moveaxis(o, 0, ax) for o, f, ax in zip(out, first, axes))
    return first if out_axes is None else np.moveaxis(out, 0, out_axes)


def _refuse(msg):
    raise numba.core.errors.TypingError(msg)


def _np_dtype(t):
    return numba.np.numpy_support.as_dtype(types.unliteral(t))


def _stacked_parts(t):
    """(kind, dtype, ndim of a part) of a value np.asarray stacks: 'scalar', 'array', or
    'tuple'/'list' of scalars or of arrays of one type; None for anything else."""
    if isinstance(t, (types.Number, types.Boolean)):
        return "scalar", _np_dtype(t), 0
    if _is_array(t):
        return "array", _np_dtype(t.dtype), t.ndim
    if isinstance(t, types.BaseTuple) and len(t.types) > 0:
        if all(isinstance(e, (types.Number, types.Boolean)) for e in t.types):
            return "tuple", np.result_type(*[_np_dtype(e) for e in t.types]), 0
        if all(_is_array(e) for e in t.types) and len({(e.ndim, e.dtype) for e in t.types}) == 1:
            return "tuple", _np_dtype(t.types[0].dtype), t.types[0].ndim
        return None
    if isinstance(t, (types.List, types.ListType)):
        e = t.dtype
        if isinstance(e, (types.Number, types.Boolean)):
            return "list", _np_dtype(e), 0
        if _is_array(e):
            return "list", _np_dtype(e.dtype), e.ndim
    return None


def _not_stackable(t):
    _refuse(f"s2s: vmap's per-example loop under jit stacks numbers, arrays, and tuples or lists of "
            f"arrays of one shape; the op returned {t} (a tuple of arrays of different ranks, such as "
            f"np.linalg.eigh's, has no stacked form: np.stack refuses it too)")


@overload(bmap_empty)
def _bmap_empty(first, size):
    parts = _stacked_parts(first)
    if parts is None:
        _not_stackable(first)
    kind, dtype, _ = parts
    if kind == "scalar":
        return lambda first, size: np.empty(size, dtype)
    if kind == "array":
        return lambda first, size: np.empty((size,) + first.shape, dtype)
    if kind == "tuple":
        n = len(first.types)
        if parts[2] == 0:
            return lambda first, size: np.empty((size, n), dtype)
        return lambda first, size: np.empty((size, n) + first[0].shape, dtype)

    def from_list(first, size):
        if len(first) == 0:
            raise ValueError("s2s: vmap's per-example loop cannot stack an empty list (no element type)")
        return np.empty((size, len(first)) + np.shape(first[0]), dtype)
    return from_list


def _put_source(kind, ndim, n):
    src = "def impl(out, b, value):\n"
    bad = "        raise ValueError('all input arrays must have the same shape')\n"
    if kind == "scalar":
        return src + "    out[b] = value\n"
    if kind == "array":
        if ndim == 0:
            return src + "    out[b] = value.item()\n"
        return src + "    if value.shape != out.shape[1:]:\n" + bad + "    out[b] = value\n"
    if kind == "tuple":
        for k in range(n):
            if ndim == 0:
                src += f"    out[b, {k}] = value[{k}]\n"
            else:
                src += f"    if value[{k}].shape != out.shape[2:]:\n" + bad + f"    out[b, {k}] = value[{k}]\n"
        return src
    src += "    if len(value) != out.shape[1]:\n" + bad
    src += "    for k in range(len(value)):\n"
    if ndim == 0:
        return src + "        out[b, k] = value[k]\n"
    return src + "        if value[k].shape != out.shape[2:]:\n    " + bad + "        out[b, k] = value[k]\n"


@overload(bmap_put)
def _bmap_put(out, b, value):
    parts = _stacked_parts(value)
    if parts is None or not _is_array(out):
        return None
    kind, _, ndim = parts
    n = len(value.types) if kind == "tuple" else 0
    return _impl_from_source(_put_source(kind, ndim, n))


@overload(stack_empty)
def _stack_empty(first, size):
    if isinstance(first, types.BaseTuple):
        if len(first.types) == 0:
            return None
        for e in first.types:
            if _stacked_parts(e) is None:
                _not_stackable(e)
        src = "def impl(first, size):\n    return (%s,)\n" % ", ".join(
            f"bmap_empty(first[{k}], size)" for k in range(len(first.types)))
        return _impl_from_source(src, {"bmap_empty": bmap_empty})
    return lambda first, size: bmap_empty(first, size)


@overload(stack_put)
def _stack_put(out, b, value):
    if isinstance(out, types.BaseTuple):
        if not isinstance(value, types.BaseTuple) or len(value.types) != len(out.types):
            return None
        src = "def impl(out, b, value):\n" + "".join(
            f"    bmap_put(out[{k}], b, value[{k}])\n" for k in range(len(out.types)))
        return _impl_from_source(src, {"bmap_put": bmap_put})
    return lambda out, b, value: bmap_put(out, b, value)


def _literal_axes(t):
    """The Python value of a constant out_axes type (an int, None, or a tuple of those), or
    a sentinel when it is not a constant."""
    if _is_none(t):
        return None
    if isinstance(t, types.IntegerLiteral):
        return t.literal_value
    if isinstance(t, types.BaseTuple):
        vals = [_literal_axes(e) for e in t.types]
        return _NOT_LITERAL if any(v is _NOT_LITERAL for v in vals) else tuple(vals)
    return _NOT_LITERAL


_NOT_LITERAL = object()


def _move_batch_source(expr: str, ndim: int, ax):
    """Source for expr (batch first, rank ndim) with its batch axis moved to ax."""
    if not -ndim <= ax < ndim:
        _refuse(f"s2s: vmap out_axes={ax} is out of range for an output of rank {ndim - 1} per example")
    a = ax % ndim
    if a == 0:
        return expr
    perm = list(range(1, a + 1)) + [0] + list(range(a + 1, ndim))
    return f"np.transpose({expr}, {tuple(perm)})"


@overload(stack_finish, prefer_literal=True)
def _stack_finish(out, first, out_axes):
    axes = _literal_axes(out_axes)
    if axes is _NOT_LITERAL:
        return None
    if isinstance(out, types.BaseTuple):
        n = len(out.types)
        per = list(axes) if isinstance(axes, tuple) else [axes] * n
        if len(per) != n:
            _refuse(f"s2s: vmap out_axes has {len(per)} entries but the function returns {n} values")
        parts = [f"first[{k}]" if ax is None else _move_batch_source(f"out[{k}]", out.types[k].ndim, ax)
                 for k, ax in enumerate(per)]
        return _impl_from_source("import numpy as np\ndef impl(out, first, out_axes):\n    return (%s,)\n"
                                 % ", ".join(parts))
    if isinstance(axes, tuple):
        _refuse("s2s: vmap out_axes is a tuple but the function returns one value")
    if axes is None:
        return lambda out, first, out_axes: first
    return _impl_from_source("import numpy as np\ndef impl(out, first, out_axes):\n    return %s\n"
                             % _move_batch_source("out", out.ndim, axes))


# ----- fused loops ------------------------------------------------------------------------
def _array_positions(tup):
    return [k for k, t in enumerate(getattr(tup, "types", ())) if _is_array(t) and t.ndim > 0]


@overload(rtf.fused_size)
def _fused_size(arrays, summed=()):
    pos = _array_positions(arrays)
    groups = getattr(summed, "types", ())
    if not pos or not all(_array_positions(g) for g in groups):
        # no arrays, or a fused sum of numbers only: the unfused code runs (a 0-d array is a number
        # in the loop: flat_view reads its value)
        return lambda arrays, summed=(): -1
    ndims = {arrays.types[k].ndim for k in pos}
    if len(ndims) != 1:
        return lambda arrays, summed=(): -1
    first, rest = pos[0], pos[1:]
    src = "def impl(arrays, summed=()):\n    s = arrays[%d].shape\n" % first
    for k in rest:
        src += "    if arrays[%d].shape != s:\n        return -1\n" % k
    src += "    return arrays[%d].size\n" % first
    return _impl_from_source(src)


def _fused_alloc(make):
    """fused_empty / fused_zeros: an array shaped like the highest-rank input (the rank of the
    broadcast result, the unfused branch's type), whichever input comes first; a number when
    no input is an array (the unfused branch's type then; fused_size is -1, the loop never runs)."""
    def typer(arrays):
        pos = _array_positions(arrays)
        if not pos:
            if all(isinstance(t, types.Number) for t in getattr(arrays, "types", ())):
                return lambda arrays: 0.0
            return None
        first = max(pos, key=lambda k: arrays.types[k].ndim)
        return lambda arrays: make(arrays[first].shape)
    return typer


overload(rtf.fused_empty)(_fused_alloc(np.empty))
overload(rtf.fused_zeros)(_fused_alloc(np.zeros))


@overload(rtf.fused_grid)
def _fused_grid(full, trail):
    fpos, tpos = _array_positions(full), _array_positions(trail)
    zero_d = any(_is_array(t) and t.ndim == 0 for t in tuple(full.types) + tuple(trail.types))
    if zero_d or len(fpos) != len(full.types) or not tpos:
        return lambda full, trail: (-1, 0)
    ranks = {full.types[k].ndim for k in fpos}
    tranks = {trail.types[k].ndim for k in tpos}
    if len(ranks) != 1 or len(tranks) != 1 or tranks.pop() >= next(iter(ranks)):
        return lambda full, trail: (-1, 0)
    skip = full.types[fpos[0]].ndim - trail.types[tpos[0]].ndim
    src = "def impl(full, trail):\n    s = full[0].shape\n"
    for k in fpos[1:]:
        src += "    if full[%d].shape != s:\n        return -1, 0\n" % k
    for k in tpos:
        src += "    if trail[%d].shape != s[%d:]:\n        return -1, 0\n" % (k, skip)
    # no elements: the unfused code (a broadcast operand's outputs would not be written)
    src += ("    cols = trail[%d].size\n    if full[0].size == 0:\n        return -1, 0\n"
            "    return full[0].size // cols, cols\n" % tpos[0])
    return _impl_from_source(src)


@overload(rtf.flat_view, inline="always")
def _flat_view(x):
    if _is_array(x) and x.ndim == 0:
        return lambda x: x[()]
    if _is_array(x) and x.layout == "C":
        # inlined, so that parallel=True's alias analysis sees a view: a call's result is taken to be
        # a new array, and the fused loop's writes to an output's flat view were removed as dead
        return lambda x: x.reshape(x.size)
    if _is_array(x):
        return lambda x: np.ascontiguousarray(x).ravel()
    return lambda x: x


@overload(rtf.fused_out_view, inline="always")
def _fused_out_view(x):
    if _is_array(x):
        return _flat_view(x)
    if isinstance(x, types.Number):
        return lambda x: np.empty(1)      # a number output: its loop never runs (rtf.fused_out_view)
    return None


@overload(rtf.elem)
def _elem(xf, i):
    if _is_array(xf):
        return lambda xf, i: xf[i]
    return lambda xf, i: xf


# ----- fused rows (transforms/fuse_rows.py) ------------------------------------------------
def _rows_flags(ab, bb):
    fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
    return (None, None) if fa is None or fb is None else (bool(fa), bool(fb))


@overload(rtf.rows_size)
def _rows_size(a, b, ab, bb, others):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (fa or fb) or not (_is_array(a) and _is_array(b)):
        return None
    if a.ndim != (2 if fa else 1) or b.ndim != (2 if fb else 1) or \
            any(_is_array(t) and t.ndim != 1 for t in others.types):
        return lambda a, b, ab, bb, others: -1     # other ranks: the unfused code runs
    arrays = [k for k, t in enumerate(others.types) if _is_array(t)]
    src = "def impl(a, b, ab, bb, others):\n"
    src += "    n = a.shape[0]\n" if fa else "    n = b.shape[0]\n"
    if fa and fb:
        src += "    if b.shape[0] != n:\n        return -1\n"
    src += "    if a.shape[-1] != b.shape[-1]:\n        return -1\n"
    for k in arrays:
        src += "    if others[%d].shape[0] != n:\n        return -1\n" % k
    src += "    return n\n"
    return _impl_from_source(src)


@overload(rtf.rows_empty)
def _rows_empty(a, b, ab, bb):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (_is_array(a) and _is_array(b)):
        return None
    dtype = numba.np.numpy_support.from_dtype(np.result_type(numba.np.numpy_support.as_dtype(a.dtype),
                                                             numba.np.numpy_support.as_dtype(b.dtype)))
    if fa:
        return lambda a, b, ab, bb: np.empty(a.shape[0], dtype=dtype)
    return lambda a, b, ab, bb: np.empty(b.shape[0], dtype=dtype)


@overload(rtf.rows_outer_empty)
def _rows_outer_empty(a, b, ab, bb):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (_is_array(a) and _is_array(b)):
        return None
    if fa:
        return lambda a, b, ab, bb: np.empty((a.shape[0], a.shape[-1]))
    return lambda a, b, ab, bb: np.empty((b.shape[0], a.shape[-1]))


# the dot product may sum in any order (as BLAS does): that is what lets LLVM vectorize it
@overload(rtf.row_dot, jit_options={"fastmath": {"reassoc", "nsz", "contract"}})
def _row_dot(a, b, i, ab, bb):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (_is_array(a) and _is_array(b)):
        return None

    src = ("def impl(a, b, i, ab, bb):\n    s = 0.0\n    for k in range(a.shape[-1]):\n"
           "        s += %s * %s\n    return s\n" % ("a[i, k]" if fa else "a[k]", "b[i, k]" if fb else "b[k]"))
    return _impl_from_source(src)


@overload(rtf.row_times, inline="always")
def _row_times(out, i, c, v, vb):
    fv = getattr(vb, "literal_value", None)
    if fv is None or not _is_array(v):
        return None
    if fv:
        def batched(out, i, c, v, vb):
            for j in range(out.shape[1]):
                out[i, j] = c * v[i, j]
        return batched

    def shared(out, i, c, v, vb):
        for j in range(out.shape[1]):
            out[i, j] = c * v[j]
    return shared
