"""Runtime support called by generated code.

Everything here is either
- registered in the rule table (so generated code stays differentiable at
  higher order), or
- a plain-NumPy Python function that s2s can read and differentiate through
  (the `*_vjp` helpers), so no extra rule is needed for higher orders.
Keep these small: they appear by name in `s2s show` output.
"""
from __future__ import annotations

import numbers

import numpy as np

from .errors import ArgumentError, NonDifferentiableError, SharedArrayError


# ----- tapes ---------------------------------------------------------------
class Stack(list):
    """The tape: a LIFO of values the backward sweep needs."""
    __slots__ = ()


def stack() -> Stack:
    return Stack()


def push(st: Stack, value) -> None:
    st.append(value)


def pop(st: Stack):
    return st.pop()


def restore(st: Stack, current):
    """Typed tapes hold each value after its assignment: drop the newest, return the one before
    (or `current` if there was none)."""
    st.pop()
    return st[-1] if len(st) else current


# Array tapes (compiled code whose saved values are scalars of a known dtype): a buffer and a
# count kept in two variables; the buffer grows by doubling, and a loop with a known trip count
# reserves room for all its pushes before it starts.
def tape_push(buf, n, value):
    """buf with `value` stored at position n (a larger copy when full)."""
    if n == buf.shape[0]:
        new = np.empty(2 * buf.shape[0] + 16, buf.dtype)
        new[:n] = buf[:n]
        buf = new
    buf[n] = value
    return buf


def tape_reserve(buf, n, extra):
    """buf with room for `extra` more values after its first n."""
    if n + extra > buf.shape[0]:
        new = np.empty(n + extra, buf.dtype)
        new[:n] = buf[:n]
        return new
    return buf


def tape_top(buf, n, current):
    """The newest of the first n values (after a restore dropped one), or `current` if none."""
    return buf[n - 1] if n > 0 else current


def copy_value(x):
    """A copy of an array (a view would change under later writes); scalars as they are."""
    return x.copy() if isinstance(x, np.ndarray) else x


def fast_exp(x):
    """np.exp; the Numba backends run a vectorizable float64 kernel instead (backends/vecmath)."""
    return np.exp(x)


def fast_sin(x):
    """np.sin; the Numba backends run a vectorizable float64 kernel instead (backends/vecmath)."""
    return np.sin(x)


def fast_cos(x):
    """np.cos; the Numba backends run a vectorizable float64 kernel instead (backends/vecmath)."""
    return np.cos(x)


def fast_tanh(x):
    """np.tanh; the Numba backends run a vectorizable float64 kernel instead (backends/vecmath)."""
    return np.tanh(x)


# ----- zeros, seeds and shapes ---------------------------------------------
def zeros_like(x):
    """A zero adjoint of x's shape: float 0.0 for scalars, a new array else, and a list of
    those for a tuple or list."""
    if isinstance(x, Stack):
        return Stack()
    if isinstance(x, (tuple, list)):
        # a list also for an op's tuple result (np.linalg.slogdet's SlogdetResult, eigh, qr, svd:
        # namedtuples, not built from one iterable): add_at accumulates into its elements in place
        return [zeros_like(v) for v in x]
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            return np.zeros((), dtype=_float_dtype(x))
        return np.zeros(x.shape, dtype=_float_dtype(x))
    return 0.0


def _float_dtype(x):
    return x.dtype if np.issubdtype(x.dtype, np.inexact) else np.float64


def seed_cotangent(y):
    """The cotangent 1.0 that starts `grad`; refuses non-scalar outputs."""
    if np.ndim(y) != 0:
        raise NonDifferentiableError(
            f"grad requires a function with a scalar output, but it returned shape {np.shape(y)}",
            hint="reduce the output (e.g. np.sum) or use s2s.vjp / s2s.jacrev for non-scalar outputs")
    if isinstance(y, (complex, np.complexfloating)) or np.iscomplexobj(y):
        raise NonDifferentiableError("grad of a complex-valued output is not supported",
                                     hint="differentiate the real part: np.real(...)")
    if isinstance(y, (bool, np.bool_)) or np.asarray(y).dtype == np.bool_:
        raise NonDifferentiableError("grad of a boolean output: a comparison has no derivative (as in JAX)",
                                     hint="return the float quantity the comparison was made on")
    return 1.0


def check_unpack(value, count):
    """Python's check of `a, b = value` for a value whose length s2s does not see being built
    (an array's rows, np.split's pieces): the names then read value[0], value[1], ..."""
    if len(value) != count:
        raise ValueError(f"cannot unpack {len(value)} values into {count} names")


def check_array_output(out, what):
    """Jacobians are taken of functions returning one array (or number), not a tuple or list."""
    if isinstance(out, (tuple, list, dict)):
        raise ValueError(f"s2s: {what} of a function returning a {type(out).__name__}: take the Jacobian of "
                         "each output (a function returning that one array)")


def check_unset(value, what):
    """Refuse an argument a definition does not cover (np.interp's period=): it must be None."""
    if value is not None:
        raise NotImplementedError(f"s2s: {what} is not supported")


def check_unshared(target, other, update: str, target_name: str, other_name: str) -> None:
    """Refuse an in-place update of an array that another variable read later shares
    (frontend/aliases.py): NumPy would change both, the transformed code only one."""
    if isinstance(target, np.ndarray) and isinstance(other, np.ndarray) and np.may_share_memory(target, other):
        raise SharedArrayError(
            f"`{update}` changes in place an array that `{other_name}` also refers to (`{target_name}` was "
            f"bound to it or to a view of it). NumPy would change `{other_name}` too; s2s treats the update as "
            f"making a new array, so `{other_name}` would keep its old value and the results would differ. "
            f"Copy first (`{target_name} = np.copy({other_name})`) if `{other_name}` must keep its value, or "
            f"update `{other_name}` itself.")


def check_rank(x, rank, what):
    """Refuse an argument of another rank where a definition covers one rank only."""
    if np.ndim(x) != rank:
        raise ValueError(f"s2s: {what} is differentiated for arrays of rank {rank} only, not {np.ndim(x)}")


_NUMBERS = (float, int, complex)


def _shape(v) -> tuple:
    """np.shape without its cost on scalars (np.shape(0.5) makes an array: 2 us, paid several
    times per statement of a scalar loop's backward sweep)."""
    if isinstance(v, (np.ndarray, np.generic)):
        return v.shape
    if isinstance(v, _NUMBERS):
        return ()
    return np.shape(v)


_SCALAR_CLASSES = frozenset({float, int, bool, complex, np.float64, np.float32, np.float16, np.int64, np.int32,
                             np.complex128, np.complex64, np.bool_})


def unbroadcast(g, x):
    """Sum g over the axes along which x was broadcast, giving x's shape."""
    if g.__class__ in _SCALAR_CLASSES and x.__class__ in _SCALAR_CLASSES:
        if g.__class__ in _COMPLEX_CLASSES and x.__class__ not in _COMPLEX_CLASSES:
            return g.real   # a real operand of a complex op: its cotangent is the real part
        return g            # (the common case of a scalar loop, decided without a call)
    if _is_complex(g) and not _is_complex(x):
        g = np.real(g)
    shape = _shape(x)
    gshape = _shape(g)
    if gshape == shape:
        return g
    extra = len(gshape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and gshape[extra + i] != 1)
    out = np.sum(g, axis=axes, keepdims=False) if axes else g
    if len(shape) and np.ndim(out) != len(shape):
        out = np.reshape(out, shape)
    return out


_COMPLEX_CLASSES = frozenset({complex, np.complex128, np.complex64})


def _is_complex(v) -> bool:
    return v.__class__ in _COMPLEX_CLASSES or getattr(getattr(v, "dtype", None), "kind", "") == "c"


def broadcast_like(g, x):
    """Broadcast g to x's shape (the adjoint of unbroadcast)."""
    if g.__class__ in _SCALAR_CLASSES and x.__class__ in _SCALAR_CLASSES:
        return g
    shape = _shape(x)
    if _shape(g) == shape:
        return g
    return np.broadcast_to(g, shape)


def _norm_axis(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    return tuple(sorted(a % ndim if ndim else 0 for a in axis))


def expand_reduced(g, x, axis=None, keepdims=False):
    """Broadcast the cotangent of a reduction of x back to x's shape."""
    shape = np.shape(x)
    if not keepdims and len(shape):
        g = np.expand_dims(g, _norm_axis(axis, len(shape)))
    return np.broadcast_to(g, shape)


def reduced_size(x, axis=None):
    shape = np.shape(x)
    n = 1
    for a in _norm_axis(axis, len(shape)):
        n *= shape[a]
    return float(n)


def extremum_weights(x, y, axis=None, keepdims=False):
    """Where x attains its max/min y along axis, weights that split ties evenly."""
    y = np.asarray(y)
    if not keepdims and np.ndim(x):
        y = np.expand_dims(y, _norm_axis(axis, np.ndim(x)))
    hit = (np.asarray(x) == y).astype(np.float64)
    count = np.sum(hit, axis=_norm_axis(axis, np.ndim(x)) or None, keepdims=True)
    return hit / count


def tie_weight(a, b):
    """1 where a > b, 0.5 where a == b, 0 else: the share of max(a, b) owed to a."""
    return np.where(a > b, 1.0, np.where(a == b, 0.5, 0.0))


def inverse_axes(axes):
    if axes is None:
        return None
    return tuple(int(i) for i in np.argsort(axes))


def fft_axes(a, axes):
    """The axes an n-dimensional FFT runs along (np.fft.fftn & co.): all of a's when axes is None."""
    if axes is None:
        return tuple(range(np.ndim(a)))
    return tuple(int(i) for i in axes)


def astype(x, dtype):
    return np.asarray(x).astype(dtype)


def to_float(x):
    """float(x) that keeps arrays of one element differentiable."""
    return float(x)


# ----- adjoint helpers readable (and differentiable) by s2s itself ----------
def matmul_vjp_a(g, a, b):
    """Cotangent of a in y = a @ b."""
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return g * b
    if np.ndim(b) == 1:
        return unbroadcast(np.expand_dims(g, -1) * b, a)
    if np.ndim(a) == 1:
        return unbroadcast(np.matmul(b, np.expand_dims(g, -1))[..., 0], a)
    return unbroadcast(np.matmul(g, np.swapaxes(b, -1, -2)), a)


def matmul_vjp_b(g, a, b):
    """Cotangent of b in y = a @ b."""
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return g * a
    if np.ndim(a) == 1:
        return unbroadcast(np.expand_dims(a, -1) * np.expand_dims(g, -2), b)
    if np.ndim(b) == 1:
        return unbroadcast(np.matmul(np.expand_dims(g, -2), a)[..., 0, :], b)
    return unbroadcast(np.matmul(np.swapaxes(a, -1, -2), g), b)


def dot_vjp_a(g, a, b):
    """Cotangent of a in y = np.dot(a, b) (scalars, vectors, matrices)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    return matmul_vjp_a(g, a, b)


def dot_vjp_b(g, a, b):
    """Cotangent of b in y = np.dot(a, b)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    return matmul_vjp_b(g, a, b)


def getitem_vjp(g, x, index):
    """Cotangent of x in y = x[index], as a new array (a functional scatter-add)."""
    out = zeros_like(x)
    np.add.at(out, index, g)
    return out


def float_dtype_flag(dtype) -> float:
    """1.0 if casting to `dtype` keeps derivatives (a float type), else 0.0."""
    return 1.0 if np.issubdtype(np.dtype(dtype), np.inexact) else 0.0


def _is_basic_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, numbers.Integral)) for p in parts)


def add_at(a, index, v) -> None:
    """a[index] += v in place, accumulating repeated (fancy) indices like np.add.at."""
    if _is_basic_index(index):
        a[index] += v
    else:
        np.add.at(a, index, v)


def choose(index, *options):
    """options[index]: a tuple/list element picked by a run-time index."""
    return options[index]


def pick_cotangent(g, index, k, like):
    """The cotangent of option k of choose(index, ...): g if index picks k, else zeros."""
    if index == k:
        return g
    return zeros_like(like)


# ----- user rules -------------------------------------------------------------
def stop_gradient(x):
    """x itself, treated as a constant by every transform."""
    return x


def custom_vjp_cotangent(f, i, g, *args):
    """Cotangent of argument i of a custom_vjp function, from its fwd/bwd rules."""
    return f.cotangents(g, *args)[i]


def custom_jvp_tangent(f, primals, tangents):
    """Tangent of a custom_jvp function's output, from its jvp rule."""
    tangents = tuple(zeros_like(p) if isinstance(t, float) and t == 0.0 and np.ndim(p) else t
                     for p, t in zip(primals, tangents))
    return f.jvp_rule(tuple(primals), tangents)[1]


def custom_jvp_cotangent(f, i, g, *args):
    """Cotangent of argument i of a custom_jvp function: J_i^T g, one jvp per element of args[i]."""
    x = args[i]
    flat = np.zeros(np.size(x))
    gflat = np.ravel(g)
    for k in range(flat.size):
        e = np.zeros(np.size(x))
        e[k] = 1.0
        tangents = tuple(np.reshape(e, np.shape(x)) if j == i else zeros_like(a) for j, a in enumerate(args))
        if np.ndim(x) == 0:
            tangents = tuple(1.0 if j == i else zeros_like(a) for j, a in enumerate(args))
        out_t = f.jvp_rule(tuple(args), tangents)[1]
        flat[k] = np.sum(np.ravel(out_t) * gflat)
    return flat.reshape(np.shape(x)) if np.ndim(x) else float(flat[0])


def record(cls, **fields):
    """A namedtuple or dataclass instance; in a transformed function, s2s splits it into fields."""
    if issubclass(cls, tuple):
        return cls(**fields)
    return cls(**fields)


def build_record(cls, **fields):
    """Rebuild a namedtuple/dataclass from its fields (generated code)."""
    return cls(**fields)


def setitem_cotangent(g, index, like):
    """Cotangent of v in `a[index] = v` from a's cotangent g: g[index], where a
    slot written more than once (repeated fancy indices) credits only the last write."""
    out = np.array(g[index], dtype=float, copy=True)
    if not _is_basic_index(index):
        idx = index if isinstance(index, tuple) else (index,)
        arrays = [np.asarray(i) for i in idx if not isinstance(i, slice) and i is not None and i is not Ellipsis]
        if len(arrays) == 1 and arrays[0].dtype.kind in "iu" and arrays[0].ndim == 1 and len(idx) == 1:
            flat = arrays[0] % np.shape(g)[0]
            # keep the last occurrence of each slot
            _, last = np.unique(flat[::-1], return_index=True)
            keep = np.zeros(flat.shape[0], dtype=bool)
            keep[flat.shape[0] - 1 - last] = True
            out[~keep] = 0.0
        elif any(a.dtype.kind in "iu" for a in arrays):
            raise NotImplementedError("s2s: writes with several integer-array indices are not supported yet")
    return unbroadcast(out, like)


# ----- batching (vmap) ----------------------------------------------------------
# Batched values carry the batch on axis 0; these helpers keep per-example
# semantics (ranks, axes, shapes) right for arrays with that extra axis.

def batch_size(args, axes, names, axis_size=None) -> int:
    """The common batch size of the batched arguments (clear errors naming them)."""
    size, first = axis_size, None
    for a, ax, nm in zip(args, axes, names):
        if ax is None:
            continue
        nd = np.ndim(a)
        if not -nd <= ax < nd:
            raise ArgumentError(f"vmap: in_axes={ax} is out of range for argument `{nm}` of rank {nd}")
        n = np.shape(a)[ax]
        if size is None:
            size, first = n, nm
        elif n != size:
            other = f"argument `{first}`" if first else f"axis_size={axis_size}"
            raise ArgumentError(f"vmap: argument `{nm}` has size {n} along its batch axis {ax}, but {other} has {size}")
    if size is None:
        raise ArgumentError("vmap: no argument is batched; pass axis_size=")
    return int(size)


def bmove(x, axis):
    """Move the batch axis of an argument to the front."""
    return x if axis == 0 else np.moveaxis(x, axis, 0)


def bout(x, axis):
    """Move the batch axis of a result from the front to `axis`."""
    return x if axis == 0 else np.moveaxis(x, 0, axis)


def bexpand(x, size):
    """An unbatched value repeated along a new batch axis (a new, writable array of the same dtype)."""
    x = np.asarray(x)
    return np.array(np.broadcast_to(x, (size,) + np.shape(x)))


def ex_ndim(x, batched) -> int:
    return np.ndim(x) - 1 if batched else np.ndim(x)


def balign(x, peers, flags):
    """Reshape batched x (B, ...) so it broadcasts per example against peers."""
    r = max([np.ndim(x) - 1] + [ex_ndim(p, f) for p, f in zip(peers, flags)])
    pad = r - (np.ndim(x) - 1)
    if pad <= 0:
        return x
    return np.reshape(x, (np.shape(x)[0],) + (1,) * pad + np.shape(x)[1:])


def baxis(axis, x):
    """A per-example axis argument for batched x (None: every axis but the batch)."""
    nd = np.ndim(x) - 1
    if axis is None:
        return tuple(range(1, nd + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(a % nd + 1 if nd else 1 for a in axis)
    return axis % nd + 1 if nd else 1


def bshape(x):
    return np.shape(x)[1:]


def bsize(x):
    return int(np.prod(np.shape(x)[1:]))


def blen(x):
    return np.shape(x)[1]


def bseed(y):
    """The grad seed for a batch of per-example outputs."""
    if np.ndim(y) != 1:
        raise NonDifferentiableError(
            f"grad requires a scalar output per example, but it returned shape {np.shape(y)[1:]}",
            hint="reduce the output (e.g. np.sum) or use s2s.vjp / s2s.jacrev")
    return 1.0


def bmatmul(a, b, ab, bb):
    """Per-example a @ b for batched (ab/bb) operands."""
    if max(np.ndim(a) - ab, np.ndim(b) - bb) >= 3:
        return _bmatmul_stacks(a, b, ab, bb)
    if ab and not bb:
        if np.ndim(a) == 2 and np.ndim(b) == 1:      # per-example vector @ vector
            return a @ b
        if np.ndim(a) == 2:                           # per-example vector @ matrix
            return a @ b
        return np.matmul(a, b)
    if bb and not ab:
        if np.ndim(b) == 2:                           # per-example vector b
            return np.matmul(a, b[..., None])[..., 0] if np.ndim(a) >= 2 else b @ a
        return np.matmul(a, b)
    # both batched
    if np.ndim(a) == 2 and np.ndim(b) == 2:
        return np.einsum("bi,bi->b", a, b)
    if np.ndim(a) == 2:
        return np.einsum("bi,bij->bj", a, b)
    if np.ndim(b) == 2:
        return np.einsum("bij,bj->bi", a, b)
    return np.matmul(a, b)


def _bmatmul_stacks(a, b, ab, bb):
    """bmatmul where an example holds a stack of matrices: the batch axis first on both operands
    (a new one of size 1 on an unbatched operand), vectors as one-row/one-column matrices, and the
    per-example stack axes aligned from the right (np.matmul would broadcast the batch axis
    against a stack axis)."""
    pa, pb = np.ndim(a) - ab, np.ndim(b) - bb
    a2 = a if ab else np.expand_dims(a, 0)
    b2 = b if bb else np.expand_dims(b, 0)
    if pa == 1:
        a2 = np.expand_dims(a2, -2)
    if pb == 1:
        b2 = np.expand_dims(b2, -1)
    out = np.matmul(balign(a2, (b2,), (True,)), balign(b2, (a2,), (True,)))
    if pb == 1:
        out = out[..., 0]
    if pa == 1:
        out = out[..., 0, :] if pb != 1 else out[..., 0]
    return out


def bgetitem(x, index, xb):
    """x[index] per example, for batched x and an unbatched index (advanced indices keep per-example semantics)."""
    if not xb:
        return x[index]
    if _is_basic_index(index):
        idx = index if isinstance(index, tuple) else (index,)
        return x[(slice(None),) + idx]
    return np.stack([x[b][index] for b in range(np.shape(x)[0])])


def bsetitem(y, index, v, vb):
    """y[index] = v per example, for batched y (v batched or not)."""
    if _is_basic_index(index):
        idx = index if isinstance(index, tuple) else (index,)
        slot = y[(slice(None),) + idx]
        y[(slice(None),) + idx] = balign(v, (slot,), (True,)) if vb else v
        return
    for b in range(np.shape(y)[0]):
        y[b][index] = v[b] if vb else v


def bflatten(x):
    """Each example flattened: (B, ...) -> (B, n)."""
    return np.reshape(x, (np.shape(x)[0], -1))


def breshape(x, shape):
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    return np.reshape(x, (np.shape(x)[0],) + shape)


def btranspose(x, axes=None):
    nd = np.ndim(x) - 1
    if axes is None:
        axes = tuple(range(nd - 1, -1, -1))
    return np.transpose(x, (0,) + tuple(a % nd + 1 for a in axes))


def bdot(a, b, ab, bb):
    """Per-example np.dot: scalars multiply, otherwise as matmul."""
    if (np.ndim(a) - ab) == 0 or (np.ndim(b) - bb) == 0:
        a2 = balign(a, (b,), (bb,)) if ab else a
        b2 = balign(b, (a,), (ab,)) if bb else b
        return a2 * b2
    if np.ndim(b) - bb >= 3:      # np.dot of a stack of matrices is not matmul: one example at a time
        size = np.shape(a)[0] if ab else np.shape(b)[0]
        return np.stack([np.dot(a[i] if ab else a, b[i] if bb else b) for i in range(size)])
    return bmatmul(a, b, ab, bb)


def bmap(fn, args, flags, size, kwargs=None):
    """Per-example loop for one op with no batching rule: stack fn over the batch."""
    kwargs = kwargs or {}
    outs = [fn(*[a[b] if f else a for a, f in zip(args, flags)], **kwargs) for b in range(size)]
    return np.stack([np.asarray(o) for o in outs])


def per_example(fn, args, in_axes, out_axes, size):
    """The whole function as a loop over examples (no array form was found)."""
    results = []
    for b in range(size):
        ex = [np.take(a, b, axis=ax) if ax is not None else a for a, ax in zip(args, in_axes)]
        results.append(fn(*ex))
    return _stack_outputs(results, out_axes)


def _stack_outputs(results, out_axes):
    """Stack per-example results along out_axes, leaf by leaf through tuples and lists."""
    first = results[0]
    if isinstance(first, (tuple, list)):
        axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(first)
        return type(first)(_stack_outputs([r[i] for r in results], ax) for i, ax in enumerate(axes))
    return np.stack([np.asarray(r) for r in results], axis=out_axes) if out_axes is not None else first


def bunbroadcast(g, x, gb, xb):
    """unbroadcast per example."""
    if _is_complex(g) and not _is_complex(x):
        g = np.real(g)
    if not gb:
        r = unbroadcast(g, x[0] if xb else x)
        return bexpand(r, np.shape(x)[0]) if xb else r
    shape = np.shape(x)[1:] if xb else np.shape(x)
    gshape = np.shape(g)[1:]
    if gshape == shape:
        return g
    extra = len(gshape) - len(shape)
    axes = tuple(1 + i for i in range(extra)) + tuple(
        1 + extra + i for i, n in enumerate(shape) if n == 1 and gshape[extra + i] != 1)
    out = np.sum(g, axis=axes) if axes else g
    return np.reshape(out, (np.shape(g)[0],) + tuple(shape))


def bexpand_reduced(g, x, axis, keepdims, gb, xb):
    """expand_reduced per example."""
    size = np.shape(g)[0] if gb else np.shape(x)[0]
    shape = np.shape(x)[1:] if xb else np.shape(x)
    if not gb:
        g = np.broadcast_to(g, (size,) + np.shape(g))
    if not keepdims and len(shape):
        g = np.expand_dims(g, tuple(a + 1 for a in _norm_axis(axis, len(shape))))
    return np.broadcast_to(g, (size,) + tuple(shape))


def bexpand_reduced_vjp(d, g, axis, keepdims, gb):
    """Cotangent of g in bexpand_reduced(g, x, axis, keepdims, gb, xb): the reduction per example
    (summed over the batch too when g is the same for every example)."""
    axes = tuple(a + 1 for a in _norm_axis(axis, np.ndim(d) - 1))
    r = np.sum(d, axis=axes, keepdims=keepdims) if axes else d
    return r if gb else np.sum(r, axis=0)


def breduced_size(x, axis, xb):
    return reduced_size(x[0] if xb else x, axis)


def badd_at(a, index, v, ab, vb, size):
    """add_at per example; a is batched (made so by the pass)."""
    idx = index if isinstance(index, tuple) else (index,)
    if _is_basic_index(index):
        a[(slice(None),) + idx] += v
    else:
        for b in range(size):
            np.add.at(a[b], index, v[b] if vb else v)


def bbroadcast_like(g, x, gb, xb):
    """broadcast_like per example: g to x's per-example shape, with the batch axis leading."""
    if not gb:
        return broadcast_like(g, x)       # x's shape (batched or not) ends with g's axes
    shape = np.shape(x) if xb else (np.shape(g)[0],) + np.shape(x)
    lead = (1,) * (len(shape) - np.ndim(g))
    return np.broadcast_to(np.reshape(g, np.shape(g)[:1] + lead + np.shape(g)[1:]), shape)


def bbroadcast_like_vjp(d, g, gb):
    """Cotangent of g in bbroadcast_like(g, x, gb, xb): summed over what was broadcast (over the
    batch too when g is the same for every example)."""
    return bunbroadcast(d, g, True, True) if gb else unbroadcast(d, g)


def badd_at_vjp_v(g, index, v, vb):
    """Cotangent of v in badd_at(a, index, v, True, vb, size), from a's batched cotangent g:
    the batched slot, summed over the batch when v is the same for every example."""
    r = bunbroadcast(bgetitem(g, index, True), v, True, vb)
    return r if vb else np.sum(r, axis=0)


def bmatmul_vjp_a(g, a, b, ab, bb, keep=False):
    """Cotangent of a in y = bmatmul(a, b, ab, bb): per example with keep=True (vmap of a
    gradient), else summed over the batch when a is unbatched (gradient of a vmap)."""
    pa = np.ndim(a) - (1 if ab else 0)
    pb = np.ndim(b) - (1 if bb else 0)
    if pa == 1 and pb == 1:
        r = np.expand_dims(g, -1) * b
    elif pb == 1:      # (a per-example vector b goes beside g's stack axes, not the batch axis)
        ge = np.expand_dims(g, -1)
        be = np.expand_dims(b, -2)
        r = ge * (balign(be, (ge,), (True,)) if bb else be)
    elif pa == 1:
        r = np.sum(b * np.expand_dims(g, -2), axis=-1)
    else:              # (b's batch axis beside g's: b may have fewer stack axes than a)
        r = np.matmul(g, np.swapaxes(balign(b, (g,), (True,)) if bb else b, -1, -2))
    return _bmatmul_cotangent(r, a, ab, keep)


def bmatmul_vjp_b(g, a, b, ab, bb, keep=False):
    """Cotangent of b in y = bmatmul(a, b, ab, bb) (summed over the batch when b is unbatched)."""
    pa = np.ndim(a) - (1 if ab else 0)
    pb = np.ndim(b) - (1 if bb else 0)
    if pa == 1 and pb == 1:
        r = np.expand_dims(g, -1) * a
    elif pb == 1:
        r = np.sum(np.expand_dims(g, -1) * a, axis=-2)
    elif pa == 1:
        ae = np.expand_dims(a, -1)
        ge = np.expand_dims(g, -2)
        r = (balign(ae, (ge,), (True,)) if ab else ae) * ge
    else:
        r = np.matmul(np.swapaxes(balign(a, (g,), (True,)) if ab else a, -1, -2), g)
    return _bmatmul_cotangent(r, b, bb, keep)


def _bmatmul_cotangent(r, x, xb, keep):
    """r (a batch of per-example products) summed to x's per-example shape: over the stack axes
    the other operand broadcast x along (a vector times a stack of matrices), and over the batch
    when x is unbatched and keep is off."""
    if xb or keep:
        return bunbroadcast(r, x, True, xb)
    return unbroadcast(np.sum(r, axis=0), x)


def bunbroadcast_vjp(d, g, gb, xb):
    """Cotangent of g in bunbroadcast(g, x, gb, xb): broadcast back per example."""
    if not gb:
        return broadcast_like(np.sum(d, axis=0) if xb else d, g)
    return np.broadcast_to(balign(d, (g,), (True,)), np.shape(g))


# ----- fused loops (compiled backends) -------------------------------------------------
def fused_size(arrays, summed=()):
    """Element count of a fused loop over `arrays` (numbers and 0-d arrays broadcast); -1
    unless every other array has one shape (then the unfused code runs), and each group in
    `summed` (what a fused sum reads) holds such an array."""
    if not all(any(isinstance(a, np.ndarray) and a.ndim > 0 for a in group) for group in summed):
        return -1
    shapes = {np.shape(a) for a in arrays if isinstance(a, np.ndarray) and a.ndim > 0}
    if len(shapes) != 1:
        return -1
    return int(np.prod(shapes.pop()))


def _highest_rank_shape(arrays):
    return max((a for a in arrays if isinstance(a, np.ndarray) and a.ndim > 0), key=np.ndim).shape


def fused_empty(arrays):
    """Room for a fused loop's output: the shape of the highest-rank input (the loop runs only
    when every array input has that shape); a number when no input is an array (the unfused
    branch computes a number then, and the loop does not run)."""
    if not any(isinstance(a, np.ndarray) and a.ndim > 0 for a in arrays):
        return 0.0
    return np.empty(_highest_rank_shape(arrays))


def fused_grid(full, trail):
    """(rows, cols) of a two-deep fused loop: every array in `full` has one shape, every array in
    `trail` has that shape's trailing part (cols elements, broadcast along rows), and there is at
    least one element; (-1, 0) otherwise (then the unfused code runs)."""
    arrays = [a for a in full + trail if isinstance(a, np.ndarray)]
    if not full or any(a.ndim == 0 for a in arrays):
        return -1, 0
    shape = np.shape(full[0])
    if any(np.shape(a) != shape for a in full) or not all(isinstance(a, np.ndarray) for a in full):
        return -1, 0
    tail = {np.shape(a) for a in trail if isinstance(a, np.ndarray)}
    if len(tail) != 1:
        return -1, 0
    t = tail.pop()
    if len(t) >= len(shape) or shape[len(shape) - len(t):] != t:
        return -1, 0
    if int(np.prod(shape)) == 0:      # nothing to loop over: the unfused code gives the empty results
        return -1, 0
    cols = int(np.prod(t))
    return int(np.prod(shape)) // cols, cols


def fused_zeros(arrays):
    """A fused loop's accumulator, zeros of the highest-rank input's shape."""
    return np.zeros(_highest_rank_shape(arrays))


def flat_view(x):
    """The elements a fused loop reads: a flat view of an array; a 0-d array's value is a number."""
    if isinstance(x, np.ndarray):
        return np.ravel(x) if x.ndim else x[()]
    return x


def fused_out_view(x):
    """The flat view a fused loop writes an output through.  An output that is a number (every
    input a number: fused_size is -1 and the loop never runs) gets a stand-in, so that the fused
    branch types as the unfused one does under Numba instead of failing to compile."""
    return np.ravel(x) if isinstance(x, np.ndarray) else np.empty(1)


def elem(xf, i):
    return xf[i] if isinstance(xf, np.ndarray) else xf


# ----- fused rows (compiled backends): a per-example dot product, the elementwise chain that
# consumes it and the cotangents it feeds, in one pass over the rows (transforms/fuse_rows.py) ---
def rows_size(a, b, ab, bb, others):
    """Rows of the per-example dot products bmatmul(a, b, ab, bb) (vectors a, b per example) when
    every array in `others` has one element per row, else -1 (the unfused code runs)."""
    batched = [x for x, f in ((a, ab), (b, bb)) if f]
    if not batched or any(np.ndim(x) != 2 for x in batched) or any(np.ndim(x) != 1 for x, f in ((a, ab), (b, bb)) if not f):
        return -1
    n = batched[0].shape[0]
    if any(x.shape[0] != n for x in batched) or np.shape(a)[-1] != np.shape(b)[-1]:
        return -1
    for x in others:
        if isinstance(x, np.ndarray) and np.shape(x) != (n,):
            return -1
    return n


def rows_empty(a, b, ab, bb):
    """Room for the rows' dot products (dtype of a @ b)."""
    n = (a if ab else b).shape[0]
    return np.empty(n, dtype=np.result_type(a, b))


def rows_outer_empty(a, b, ab, bb):
    """Room for one vector per row (a per-example cotangent of a or b): float64, as bmatmul_vjp_*."""
    n = (a if ab else b).shape[0]
    return np.empty((n, np.shape(a)[-1]))


def row_dot(a, b, i, ab, bb):
    """Row i's dot product: (a[i] if ab else a) . (b[i] if bb else b)."""
    return np.dot(a[i] if ab else a, b[i] if bb else b)


def row_times(out, i, c, v, vb):
    """out[i] = c * (v[i] if vb else v): row i of a dot product's cotangent."""
    out[i] = c * (v[i] if vb else v)
