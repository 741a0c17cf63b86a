"""Numba lowering of fused.py's helpers: fused loops and fused rows.

fused_size, fused_empty / fused_zeros, fused_grid, flat_view, fused_out_view, elem (transforms/fuse.py);
rows_size, rows_empty, rows_outer_empty, row_dot, row_times (transforms/fuse_rows.py).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types

from . import fused as rtf
from ..backends.numba_lower.common import impl_from_source, is_array, overload


# ----- fused loops ------------------------------------------------------------------------
def _array_positions(tup):
    return [k for k, t in enumerate(getattr(tup, "types", ())) if is_array(t) and t.ndim > 0]


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
    return impl_from_source(src)


def _fused_alloc(zeroed: bool):
    """fused_empty / fused_zeros: an array shaped like the highest-rank input (the rank of the
    broadcast result, the unfused branch's type), whichever input comes first; a number when
    no input is an array (the unfused branch's type then; fused_size is -1, the loop never runs)."""
    def typer(arrays):
        pos = _array_positions(arrays)
        if not pos:
            kinds = getattr(arrays, "types", ())
            if all(isinstance(t, (types.Integer, types.Boolean)) for t in kinds) and kinds:
                # (an int: the unfused branch's int result keeps its type; a float one still
                # unifies to float)
                return lambda arrays: 0
            if all(isinstance(t, (types.Number, types.Boolean)) for t in kinds):
                return lambda arrays: 0.0
            return None
        first = max(pos, key=lambda k: arrays.types[k].ndim)
        if zeroed:
            return lambda arrays: np.zeros(arrays[first].shape)
        return lambda arrays: np.empty(arrays[first].shape)
    return typer


overload(rtf.fused_empty)(_fused_alloc(zeroed=False))
overload(rtf.fused_zeros)(_fused_alloc(zeroed=True))


@overload(rtf.fused_grid)
def _fused_grid(full, trail):
    fpos, tpos = _array_positions(full), _array_positions(trail)
    zero_d = any(is_array(t) and t.ndim == 0 for t in tuple(full.types) + tuple(trail.types))
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
    return impl_from_source(src)


@overload(rtf.flat_view, inline="always")
def _flat_view(x):
    if is_array(x) and x.ndim == 0:
        return lambda x: x[()]
    if is_array(x) and x.layout == "C":
        # inlined, so that parallel=True's alias analysis sees a view: a call's result is taken to be
        # a new array, and the fused loop's writes to an output's flat view were removed as dead
        return lambda x: x.reshape(x.size)
    if is_array(x):
        return lambda x: np.ascontiguousarray(x).ravel()
    return lambda x: x


@overload(rtf.fused_out_view, inline="always")
def _fused_out_view(x):
    if is_array(x):
        return _flat_view(x)
    if isinstance(x, types.Number):
        return lambda x: np.empty(1)      # a number output: its loop never runs (rtf.fused_out_view)
    return None


@overload(rtf.elem, inline="always")
def _elem(xf, i):
    if is_array(xf):
        return lambda xf, i: xf[i]
    return lambda xf, i: xf


# ----- fused rows (transforms/fuse_rows.py) ------------------------------------------------
def _rows_flags(ab, bb):
    fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
    return (None, None) if fa is None or fb is None else (bool(fa), bool(fb))


@overload(rtf.rows_size)
def _rows_size(a, b, ab, bb, others):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (fa or fb) or not (is_array(a) and is_array(b)):
        return None
    if a.ndim != (2 if fa else 1) or b.ndim != (2 if fb else 1) or \
            any(is_array(t) and t.ndim != 1 for t in others.types):
        return lambda a, b, ab, bb, others: -1     # other ranks: the unfused code runs
    arrays = [k for k, t in enumerate(others.types) if is_array(t)]
    src = "def impl(a, b, ab, bb, others):\n"
    src += "    n = a.shape[0]\n" if fa else "    n = b.shape[0]\n"
    if fa and fb:
        src += "    if b.shape[0] != n:\n        return -1\n"
    src += "    if a.shape[-1] != b.shape[-1]:\n        return -1\n"
    for k in arrays:
        src += "    if others[%d].shape[0] != n:\n        return -1\n" % k
    src += "    return n\n"
    return impl_from_source(src)


@overload(rtf.rows_empty)
def _rows_empty(a, b, ab, bb):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (is_array(a) and is_array(b)):
        return None
    dtype = numba.np.numpy_support.from_dtype(np.result_type(numba.np.numpy_support.as_dtype(a.dtype),
                                                             numba.np.numpy_support.as_dtype(b.dtype)))
    if fa:
        return lambda a, b, ab, bb: np.empty(a.shape[0], dtype=dtype)
    return lambda a, b, ab, bb: np.empty(b.shape[0], dtype=dtype)


@overload(rtf.rows_outer_empty)
def _rows_outer_empty(a, b, ab, bb):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (is_array(a) and is_array(b)):
        return None
    if fa:
        return lambda a, b, ab, bb: np.empty((a.shape[0], a.shape[-1]))
    return lambda a, b, ab, bb: np.empty((b.shape[0], a.shape[-1]))


# the dot product may sum in any order (as BLAS does): that is what lets LLVM vectorize it
@overload(rtf.row_dot, jit_options={"fastmath": {"reassoc", "nsz", "contract"}})
def _row_dot(a, b, i, ab, bb):
    fa, fb = _rows_flags(ab, bb)
    if fa is None or not (is_array(a) and is_array(b)):
        return None

    src = ("def impl(a, b, i, ab, bb):\n    s = 0.0\n    for k in range(a.shape[-1]):\n"
           "        s += %s * %s\n    return s\n" % ("a[i, k]" if fa else "a[k]", "b[i, k]" if fb else "b[k]"))
    return impl_from_source(src)


@overload(rtf.row_times, inline="always")
def _row_times(out, i, c, v, vb):
    fv = getattr(vb, "literal_value", None)
    if fv is None or not is_array(v):
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
