"""The loop forms compiled code calls: numba_cpu.lower rewrites generated code to them.

reversed_range (reversed(range(...)), which Numba does not compile), parallel_worth (a fused
loop's switch to its parallel twin), and the per-example loops of
bmap and per_example (bmap_empty, bmap_put, stack_empty, stack_put, stack_finish, and zero_example
for a batch of no examples), each with its Numba implementation.
"""
from __future__ import annotations

import os

import numba
import numpy as np
from numba import types

from .common import impl_from_source, is_array, is_none, np_dtype, overload


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


# ----- the switch to a fused loop's parallel twin (backends/parallel_twins.py) ---------------
# elements; the twin of the elementwise gradient took 0.58x the serial time at 16384 elements on 2
# cores and 0.48x on 13, and broke even near 4096 and 6000 (a parallel loop's start: ~35 us on 13
# threads): benchmarks/parallel_min.py, docs/performance.md
PARALLEL_MIN = 1 << 14


def parallel_worth(n):
    """Run a fused loop of n elements as its prange twin: many elements, and more than one of
    Numba's threads for this thread (pmap's device threads share them: backends/devices.py)."""
    return n >= PARALLEL_MIN and numba.get_num_threads() > 1


try:    # Numba's own intrinsic: numba.get_num_threads() in compiled code holds a ctypes pointer,
    # which Numba does not cache ("uses dynamic globals"); the intrinsic calls the symbol by name
    from numba.np.ufunc.parallel import _iget_num_threads as _num_threads, _launch_threads
except ImportError:      # pragma: no cover - a Numba without it: correct, not cached
    _num_threads = numba.get_num_threads
    _launch_threads = numba.get_num_threads



def _serial_in_child() -> None:
    """A forked child runs its fused loops serially: OpenMP's thread pool does not survive fork()
    (Numba terminates a child that starts a parallel loop on its parent's pool)."""
    from numba.np.ufunc import parallel
    if getattr(parallel, "_is_initialized", True):
        numba.set_num_threads(1)


os.register_at_fork(after_in_child=_serial_in_child)


def launch_numba_threads() -> None:
    """Start Numba's threads: the symbol parallel_worth's machine code calls exists from then on
    (numba_cpu.compile_function calls this before code with the switch can run)."""
    _launch_threads()


@overload(parallel_worth)
def _parallel_worth(n):
    _launch_threads()       # (before this helper's machine code, maybe from the disk cache, is linked)

    def impl(n):
        return n >= PARALLEL_MIN and _num_threads() > 1
    return impl


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


def zero_example(a, axis):
    """An example of zeros of batched `a` (its batch on `axis`): what a batch of no examples runs
    its per-example code on, once, to size its (empty) stacked outputs."""
    shape = np.shape(a)[:axis % np.ndim(a)] + np.shape(a)[axis % np.ndim(a) + 1:]
    out = np.zeros(shape, np.asarray(a).dtype)
    return out[()] if out.ndim == 0 else out


@overload(zero_example, prefer_literal=True)
def _zero_example(a, axis):
    k = getattr(axis, "literal_value", None)
    if not is_array(a) or not isinstance(k, int) or not -a.ndim <= k < a.ndim:
        return None
    k %= a.ndim
    dtype = np_dtype(a.dtype)
    if a.ndim == 1:
        return lambda a, axis: np.zeros(1, dtype)[0]
    shape = "".join(f"a.shape[{i}], " for i in range(a.ndim) if i != k)
    return impl_from_source(f"import numpy as np\ndef impl(a, axis):\n    return np.zeros(({shape}), dtype)\n",
                            {"dtype": dtype})


def _refuse(msg):
    raise numba.core.errors.TypingError(msg)


def _stacked_parts(t):
    """(kind, dtype, ndim of a part) of a value np.asarray stacks: 'scalar', 'array', or
    'tuple'/'list' of scalars or of arrays of one type; None for anything else."""
    if isinstance(t, (types.Number, types.Boolean)):
        return "scalar", np_dtype(t), 0
    if is_array(t):
        return "array", np_dtype(t.dtype), t.ndim
    if isinstance(t, types.BaseTuple) and len(t.types) > 0:
        if all(isinstance(e, (types.Number, types.Boolean)) for e in t.types):
            return "tuple", np.result_type(*[np_dtype(e) for e in t.types]), 0
        if all(is_array(e) for e in t.types) and len({(e.ndim, e.dtype) for e in t.types}) == 1:
            return "tuple", np_dtype(t.types[0].dtype), t.types[0].ndim
        return None
    if isinstance(t, (types.List, types.ListType)):
        e = t.dtype
        if isinstance(e, (types.Number, types.Boolean)):
            return "list", np_dtype(e), 0
        if is_array(e):
            return "list", np_dtype(e.dtype), e.ndim
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
    if parts is None or not is_array(out):
        return None
    kind, _, ndim = parts
    n = len(value.types) if kind == "tuple" else 0
    return impl_from_source(_put_source(kind, ndim, n))


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
        return impl_from_source(src, {"bmap_empty": bmap_empty})
    return lambda first, size: bmap_empty(first, size)


@overload(stack_put)
def _stack_put(out, b, value):
    if isinstance(out, types.BaseTuple):
        if not isinstance(value, types.BaseTuple) or len(value.types) != len(out.types):
            return None
        src = "def impl(out, b, value):\n" + "".join(
            f"    bmap_put(out[{k}], b, value[{k}])\n" for k in range(len(out.types)))
        return impl_from_source(src, {"bmap_put": bmap_put})
    return lambda out, b, value: bmap_put(out, b, value)


def _literal_axes(t):
    """The Python value of a constant out_axes type (an int, None, or a tuple of those), or
    a sentinel when it is not a constant."""
    if is_none(t):
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
        return impl_from_source("import numpy as np\ndef impl(out, first, out_axes):\n    return (%s,)\n"
                                % ", ".join(parts))
    if isinstance(axes, tuple):
        _refuse("s2s: vmap out_axes is a tuple but the function returns one value")
    if axes is None:
        return lambda out, first, out_axes: first
    return impl_from_source("import numpy as np\ndef impl(out, first, out_axes):\n    return %s\n"
                            % _move_batch_source("out", out.ndim, axes))
