"""How the shape stand-ins build their implementations (numba.py, numba_joins.py, numba_reorder.py, numba_pad_diff.py).

Most are generated as source per argument types (literal axes, tuple lengths, ranks): an axis
becomes a fixed index expression such as `out[:, p:q]`.  Here: reading constant arguments
(`const_value`, `axis_value`, `axes_value`, `int_parts`), index and permutation text, and `make_impl`,
which defines a generated `impl` with numpy and the small compiled kernels generated sources
call (`_check_dims`, `_prod`, `_fix_index`, `_pad_map`, `_split_bounds`).
"""
from __future__ import annotations

import numba
import numba.extending
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.np.numpy_support import as_dtype

from ... import runtime as rt
from ...backends.numba_lower.common import is_array, is_none
from ...backends.numba_numpy.common import literal_value


NOT_CONSTANT = object()       # an argument that is not a compile-time constant


def refuse(msg):
    raise TypingError("s2s (jit): " + msg)


def const_value(t):
    return literal_value(t, NOT_CONSTANT)


def is_number(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean))


def is_int(t) -> bool:
    """An int argument: an integer type, an int literal, or an omitted int default (a Python int)."""
    if isinstance(t, types.Omitted):
        t = t.value
    if isinstance(t, int):
        return not isinstance(t, bool)
    return isinstance(t, types.Integer) or (isinstance(t, types.Literal) and isinstance(t.literal_value, int)
                                           and not isinstance(t.literal_value, bool))


def ndim(t) -> int:
    return t.ndim if is_array(t) else 0


def np_dtype(t):
    if is_array(t):
        return as_dtype(t.dtype)
    if isinstance(t, types.Literal):
        return np.asarray(t.literal_value).dtype
    return as_dtype(t)


def _omitted_none(t) -> bool:
    return is_none(t)


@numba.njit(cache=True, error_model="numpy")
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


def make_impl(src: str, **extra):
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


def index_text(nd: int, ax: int, part: str) -> str:
    """`x[...]` index text: `part` at position ax, full slices elsewhere."""
    return ", ".join(part if d == ax else ":" for d in range(nd)) if nd else "()"


def axis_value(t, nd: int, what: str):
    """A literal int axis normalized against nd; None for None; NOT_CONSTANT for a run-time int."""
    if is_none(t):
        return None
    v = const_value(t)
    if v is NOT_CONSTANT:
        if isinstance(t, types.Integer):
            return NOT_CONSTANT
        refuse(f"{what}: axis must be None or an int (got {t})")
    if isinstance(v, bool) or not isinstance(v, int):
        refuse(f"{what}: axis must be an int (got {v!r})")
    if not -nd <= v < nd:
        refuse(f"{what}: axis {v} is out of bounds for an array of dimension {nd}")
    return v % nd


def axes_value(t, nd: int, what: str):
    """A literal int or tuple of ints axis, normalized: a tuple; None for None; NOT_CONSTANT otherwise."""
    if is_none(t):
        return None
    v = const_value(t)
    if v is NOT_CONSTANT:
        return NOT_CONSTANT
    vals = v if isinstance(v, tuple) else (v,)
    out = []
    for a in vals:
        if isinstance(a, bool) or not isinstance(a, int):
            refuse(f"{what}: axis entries must be ints (got {v!r})")
        if not -nd <= a < nd:
            refuse(f"{what}: axis {a} is out of bounds for an array of dimension {nd}")
        out.append(a % nd)
    if len(set(out)) != len(out):
        refuse(f"{what}: repeated axis in {v!r}")
    return tuple(out)


def dispatch_axis(axis_src: str, nd: int, body, what: str) -> str:
    """Source choosing body(ax) by the run-time value of an int axis (each body returns)."""
    src = (f"    if {axis_src} < -{nd} or {axis_src} >= {nd}:\n"
           f"        raise ValueError('{what}: axis is out of bounds')\n"
           f"    ax_ = {axis_src} % {nd}\n")
    for k in range(nd):
        src += f"    {'if' if k == 0 else 'elif'} ax_ == {k}:\n"
        src += "".join("    " + ln + "\n" for ln in body(k).splitlines())
    src += "    raise ValueError('unreachable')\n"
    return src


def perm_last(nd: int, ax: int):
    """(permutation moving ax last, its inverse)."""
    perm = tuple(d for d in range(nd) if d != ax) + (ax,)
    return perm, tuple(int(i) for i in np.argsort(perm))


def perm_first(nd: int, ax: int):
    perm = (ax,) + tuple(d for d in range(nd) if d != ax)
    return perm, tuple(int(i) for i in np.argsort(perm))


def int_parts(t, name):
    """Source expressions of the integers in argument `name` of type t (an int, or a tuple of
    ints), or None for any other type."""
    if is_int(t):
        return [name]
    if isinstance(t, types.BaseTuple) and all(is_int(e) for e in t.types):
        return [f"{name}[{k}]" for k in range(len(t.types))]
    return None


def tuple_text(items) -> str:
    items = list(items)
    return "(" + "".join(f"{i}, " for i in items) + ")"


# ===== kernels generated sources call by name (make_impl binds them): pad's and take's index maps, split's bounds
@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def _split_bounds_int(n, k):
    if k <= 0:
        raise ValueError("number sections must be larger than 0.")
    base, extra = n // k, n % k
    out = np.empty(k + 1, dtype=np.int64)
    out[0] = 0
    for i in range(k):
        out[i + 1] = out[i] + (base + 1 if i < extra else base)
    return out


@numba.njit(cache=True, error_model="numpy")
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
    if is_int(ios):
        return lambda n, ios: _split_bounds_int(n, ios)
    return lambda n, ios: _split_bounds_seq(n, ios)
