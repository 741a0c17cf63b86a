"""Runtime support called by generated code.

Everything here is either
- registered in the rule table (so generated code stays differentiable at
  higher order), or
- a plain-NumPy Python function that s2s can read and differentiate through
  (the `*_vjp` helpers), so no extra rule is needed for higher orders.
Keep these small: they appear by name in `s2s show` output.

The package holds what generated code calls, each helper module with its Numba version beside it
(loaded only by the Numba backend, so `import s2s` does not import Numba):
- here: the core helpers (tapes, argument checks, seeds and zeros, unbroadcast, add_at, the
  matmul / dot cotangents, ...); their Numba versions in core_numba.py;
- batching.py: the per-example versions for batched code (vmap); batching_numba.py;
- fused.py: the helpers of the compiled backends' fused loops; fused_numba.py;
- effects.py: the side effects generated code keeps (raise, logging, with, try);
- collectives.py: psum & co. under pmap, exchanging through the device groups of devices.py;
  collectives_numba.py.

Generated code imports each helper from its module (`from s2s.runtime.batching import bmatmul`).
This file imports none of them: each imports this one.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import NonDifferentiableError, SharedArrayError

# public for batching.py, yet no helper of generated code: frontend/namespace.py leaves them out of
# the names a generated module sees (so a user's variable of that name keeps it)
NOT_FOR_GENERATED_CODE = ("is_complex", "norm_axis", "is_basic_index")

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
    """np.exp; the Numba backends run a vectorizable float64 kernel instead (ops/elementwise/numba_vecmath.py)."""
    return np.exp(x)


def fast_log(x):
    """np.log; the Numba backends run a vectorizable float64 kernel instead (ops/elementwise/numba_vecmath.py)."""
    return np.log(x)


def fast_sin(x):
    """np.sin; the Numba backends run a vectorizable float64 kernel instead (ops/elementwise/numba_vecmath.py)."""
    return np.sin(x)


def fast_cos(x):
    """np.cos; the Numba backends run a vectorizable float64 kernel instead (ops/elementwise/numba_vecmath.py)."""
    return np.cos(x)


def fast_tanh(x):
    """np.tanh; the Numba backends run a vectorizable float64 kernel instead (ops/elementwise/numba_vecmath.py)."""
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


def check_not_held(target, held, update: str, target_name: str, holder: str) -> None:
    """Refuse an in-place update of an array that is also `holder` (an element of a list or tuple, a
    default argument, a partial's argument): Python holds the object, s2s holds a copy."""
    if isinstance(target, np.ndarray) and isinstance(held, np.ndarray) and np.may_share_memory(target, held):
        raise SharedArrayError(
            f"`{update}` changes in place the array `{target_name}`, which is also {holder}: Python would "
            f"change it there too, s2s keeps the value it had. Write `{target_name} = {target_name} + ...` "
            f"(a new array) if {holder} must keep its value, or copy it where you store it.")


def check_element_view(value, array, read: str) -> None:
    """Refuse a row read by integer index (`r = m[i]`: a view of m) of an array a later indexed
    write changes (analysis/aliasing.with_view_guards): NumPy's row sees the write, the transforms
    take the write for a new array. An element (a number) shares nothing and passes."""
    if isinstance(value, np.ndarray) and isinstance(array, np.ndarray) and np.may_share_memory(value, array):
        raise SharedArrayError(
            f"`{read}` reads a view of an array (a row, not a copy) that an indexed write later in the "
            f"function changes: NumPy's view would see the write, s2s's derivative would not. Copy it "
            f"(`{read.split('=', 1)[-1].strip()}.copy()`, or np.array(...)) if it must keep its value, or "
            f"read it after the write.")


def call_opaque(fn, *args, **kws):
    """A call of code s2s cannot read (no Python source, or a library's) and has no rule for, run as
    written: its result is a constant unless a differentiated value flows in (then refused)."""
    return fn(*args, **kws)


def call_method(obj, method, *args, **kws):
    """`obj.method(*args)` of an object s2s knows nothing about (a random generator, a model from a
    library), run as written, as call_opaque."""
    return getattr(obj, method)(*args, **kws)


def check_nonempty(seq, loop: str) -> None:
    """A loop filling an empty list runs its first step before the others (frontend/loops.py
    `peel_first`): it needs one; Python's loop would leave the list empty."""
    if len(seq) == 0:
        raise ValueError(f"`{loop}` runs no step here, and s2s keeps the list it fills as the rows of an array "
                         "whose shape its first step gives: start the list with a first element, or handle the "
                         "empty case before the loop")


def list_position(index, length):
    """Where element `index` of a list of `length` elements grown in a loop sits in its rows buffer
    (frontend/sequences.py): negative indices count from the end; out of range raises as a list does."""
    if index < -length or index >= length:
        raise IndexError("list index out of range")
    return index + length if index < 0 else index


def check_row(rows, value):
    """A value appended to a list grown in a loop (kept as the rows of one array) has the shape and
    kind of the first element: a list of values of other shapes has no array to live in."""
    if np.shape(value) != np.shape(rows)[1:] or np.result_type(rows, value) != np.asarray(rows).dtype:
        raise ValueError(
            f"s2s keeps a list grown in a loop as the rows of one array, and this value (shape {np.shape(value)}, "
            f"{np.result_type(value)}) does not match its first element (shape {np.shape(rows)[1:]}, "
            f"{np.asarray(rows).dtype}): append values of one shape and type, or use a tuple/list of known length")


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
    if is_complex(g) and not is_complex(x):
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


def is_complex(v) -> bool:
    return v.__class__ in _COMPLEX_CLASSES or getattr(getattr(v, "dtype", None), "kind", "") == "c"


def broadcast_like(g, x):
    """Broadcast g to x's shape (the adjoint of unbroadcast)."""
    if g.__class__ in _SCALAR_CLASSES and x.__class__ in _SCALAR_CLASSES:
        return g
    shape = _shape(x)
    if _shape(g) == shape:
        return g
    return np.broadcast_to(g, shape)


def norm_axis(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    return tuple(sorted(a % ndim if ndim else 0 for a in axis))


def expand_reduced(g, x, axis=None, keepdims=False):
    """Broadcast the cotangent of a reduction of x back to x's shape."""
    shape = np.shape(x)
    if not keepdims and len(shape):
        g = np.expand_dims(g, norm_axis(axis, len(shape)))
    return np.broadcast_to(g, shape)


def reduced_size(x, axis=None):
    shape = np.shape(x)
    n = 1
    for a in norm_axis(axis, len(shape)):
        n *= shape[a]
    return float(n)


def extremum_weights(x, y, axis=None, keepdims=False):
    """Where x attains its max/min y along axis, weights that split ties evenly."""
    y = np.asarray(y)
    if not keepdims and np.ndim(x):
        y = np.expand_dims(y, norm_axis(axis, np.ndim(x)))
    hit = (np.asarray(x) == y).astype(np.float64)
    count = np.sum(hit, axis=norm_axis(axis, np.ndim(x)) or None, keepdims=True)
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


def is_basic_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, numbers.Integral)) for p in parts)


def add_at(a, index, v) -> None:
    """a[index] += v in place, accumulating repeated (fancy) indices like np.add.at."""
    if is_basic_index(index):
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
    if not is_basic_index(index):
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
