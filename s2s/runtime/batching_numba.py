"""Numba lowering of batching.py's helpers (vmap's batched operations).

badd_at, balign, batch_size, baxis, btranspose, breshape, bgetitem, bseed, bmatmul, bdot,
bunbroadcast, bbroadcast_like, bexpand_reduced, bexpand, bmatmul_vjp_a / bmatmul_vjp_b.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types

from .. import runtime as rt
from . import batching as rtb
from ..backends.numba_lower.common import (blas_operand, impl_from_source, is_array, is_complex, is_none,
                                           np_dtype, overload)
from ..backends.numba_lower.loops import bmap_empty, bmap_put, zero_example


def _basic_index_type(index) -> bool:
    parts = index.types if isinstance(index, types.BaseTuple) else (index,)
    return all(isinstance(p, (types.Integer, types.SliceType, types.NoneType)) for p in parts)


@overload(rtb.badd_at, prefer_literal=True)
def _badd_at(a, index, v, ab, vb, size):
    """add_at per example (vmapped `x[i] += v`): a is batched; v batched when vb."""
    if isinstance(a, types.BaseTuple) and isinstance(index, types.IntegerLiteral) \
            and -len(a) <= index.literal_value < len(a) and is_array(a.types[index.literal_value]):
        # a pytree argument's cotangent (a tuple of batched arrays): its element accumulates in place
        return impl_from_source("def impl(a, index, v, ab, vb, size):\n"
                                f"    part = a[{index.literal_value}]\n"
                                "    part += v\n")
    if not is_array(a) or not isinstance(vb, types.BooleanLiteral):
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


@overload(rtb.balign)
def _balign(x, peers, flags):
    # static: ranks and flags are known when Numba types the call
    if not is_array(x):
        return lambda x, peers, flags: x
    flag_values = [getattr(f, "literal_value", None) for f in getattr(flags, "types", ())]
    if any(v is None for v in flag_values):
        return None
    ranks = [x.ndim - 1]
    for p, f in zip(peers.types, flag_values):
        nd = p.ndim if is_array(p) else 0
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
    return impl_from_source(src)


@overload(rtb.baxis)
def _baxis(axis, x):
    nd = (x.ndim - 1) if is_array(x) else 0
    if is_none(axis):
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
        return impl_from_source("def impl(axis, x):\n    return (%s,)\n"
                                % ", ".join(f"axis[{k}] % {nd} + 1" for k in range(n)))
    return None


@overload(rtb.btranspose)
def _btranspose(x, axes=None):
    if not is_array(x) or x.ndim < 1:
        return None
    nd = x.ndim - 1
    if is_none(axes):
        perm = (0,) + tuple(range(nd, 0, -1))
        return lambda x, axes=None: np.transpose(x, perm)
    if isinstance(axes, types.BaseTuple) and all(isinstance(a, types.Integer) for a in axes.types):
        if len(axes.types) != nd:
            raise numba.core.errors.TypingError(f"s2s: np.transpose axes of length {len(axes.types)} do not match "
                                                f"an array of rank {nd} (per example)")
        if nd == 0:
            return lambda x, axes=None: x
        perm = ", ".join(["0"] + [f"axes[{k}] % {nd} + 1" for k in range(nd)])
        return impl_from_source("import numpy as np\ndef impl(x, axes=None):\n"
                                "    return np.transpose(x, (%s,))\n" % perm)
    return None


@overload(rtb.breshape)
def _breshape(x, shape):
    if not is_array(x):
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
    if not is_array(x):
        return None
    parts = list(index.types) if isinstance(index, types.BaseTuple) else [index]
    if all(_basic_index_part(t) for t in parts):
        if isinstance(index, types.BaseTuple):
            src = "def impl(x, index, xb):\n    return x[:%s]\n" % "".join(f", index[{k}]" for k in range(len(parts)))
            return impl_from_source(src)
        return lambda x, index, xb: x[:, index]

    def per_example(x, index, xb):       # advanced indexing: per example, stacked (np.stack)
        n = x.shape[0]
        if n < 1:           # (no examples: the shape of an example of zeros indexed)
            return bmap_empty(zero_example(x, 0)[index], 0)
        first = x[0][index]
        out = bmap_empty(first, n)
        bmap_put(out, 0, first)
        for b in range(1, n):
            bmap_put(out, b, x[b][index])
        return out
    return per_example


@overload(rtb.bbroadcast_like, prefer_literal=True)
def _bbroadcast_like(g, x, gb, xb):
    """bbroadcast_like with its flags known: one shape tuple per case (the Python version's
    conditional mixes tuples of two lengths, which Numba cannot unify)."""
    fg, fx = getattr(gb, "literal_value", None), getattr(xb, "literal_value", None)
    if fg is None or fx is None:
        return None
    if not fg:
        return lambda g, x, gb, xb: rt.broadcast_like(g, x)
    xnd = x.ndim if is_array(x) else 0
    if not is_array(g) or g.ndim < 1 or not (is_array(x) or isinstance(x, (types.Number, types.Boolean))):
        return None
    shape = "x.shape" if fx else "(g.shape[0],)" + (" + x.shape" if xnd else "")
    lead = (xnd if fx else xnd + 1) - g.ndim
    if lead < 0:
        return None
    inner = "g.shape[:1] + " + repr((1,) * lead) + " + g.shape[1:]"
    return impl_from_source("import numpy as np\ndef impl(g, x, gb, xb):\n"
                            f"    return np.broadcast_to(np.ascontiguousarray(g).reshape({inner}), {shape})\n")


@overload(rtb.bseed)
def _bseed(y):
    return lambda y: 1.0


@overload(rtb.bmatmul)
def _bmatmul(a, b, ab, bb):
    fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
    if fa is None or fb is None or not (is_array(a) and is_array(b)):
        return None
    pa, pb = a.ndim - int(fa), b.ndim - int(fb)
    if fa and not fb:
        if pa == 1 and pb == 1:
            return lambda a, b, ab, bb: np.dot(blas_operand(a), blas_operand(b))
        if pa == 1 and pb == 2:
            return lambda a, b, ab, bb: np.dot(blas_operand(a), blas_operand(b))
        if pa == 2 and pb == 1:      # per-example matrix @ shared vector: one product of all rows
            def rows_times_vector(a, b, ab, bb):
                n, m, k = a.shape
                return np.dot(np.ascontiguousarray(a).reshape((n * m, k)), np.ascontiguousarray(b)).reshape((n, m))
            return rows_times_vector
    if fb and not fa:
        if pa == 1 and pb == 1:
            return lambda a, b, ab, bb: np.dot(blas_operand(b), blas_operand(a))
        if pa == 2 and pb == 1:
            return lambda a, b, ab, bb: np.dot(blas_operand(b), blas_operand(a.T))
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
    if not (is_array(x) and is_array(y)) or y.ndim > 2 or x.ndim < 1:
        return None
    if x.ndim <= 2:
        return lambda x, y: np.dot(blas_operand(x), blas_operand(y))
    if y.ndim == 1:
        def stack_times_vector(x, y):
            k = x.shape[-1]
            return np.dot(np.ascontiguousarray(x).reshape((x.size // k if k else 0, k)), blas_operand(y)) \
                .reshape(x.shape[:-1])
        return stack_times_vector

    def stack_times_matrix(x, y):      # (..., m, k) @ (k, n): the rows of every matrix at once
        k = x.shape[-1]
        return np.dot(np.ascontiguousarray(x).reshape((x.size // k if k else 0, k)), blas_operand(y)) \
            .reshape(x.shape[:-1] + (y.shape[1],))
    return stack_times_matrix


def _bmatmul_per_example(a, b, fa, fb, pa, pb):
    """bmatmul as one product per example: a stack of matrices (or a vector, or a matrix) times a
    vector or a matrix; the product of a vector or matrix with a stack of matrices is refused."""
    if pb > 2 or pa < 1 or pb < 1 or not (fa or fb):
        return None
    if not all(isinstance(t.dtype, types.Float) for t in (a, b)):
        return None
    dtype = np.result_type(np_dtype(a.dtype), np_dtype(b.dtype))
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
    return impl_from_source(src, {"np": np, "dtype": dtype, "_example_matmul": _example_matmul})


@overload(rtb.bdot)
def _bdot(a, b, ab, bb):
    """Per-example np.dot of vectors/matrices is the per-example matmul; a scalar side multiplies."""
    fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
    if fa is None or fb is None:
        return None
    pa = (a.ndim if is_array(a) else 0) - int(fa)
    pb = (b.ndim if is_array(b) else 0) - int(fb)
    if pa >= 1 and pb >= 1:
        if pb > 2:       # np.dot of a stack of matrices is not matmul's product
            return None
        return lambda a, b, ab, bb: rtb.bmatmul(a, b, ab, bb)
    if pa == 0 or pb == 0:
        # the flags are constants: align at typing time (a conditional expression would have to
        # unify an aligned array with the unaligned one)
        src = "def impl(a, b, ab, bb):\n    return %s * %s\n" % (
            "rtb.balign(a, (b,), (bb,))" if fa else "a", "rtb.balign(b, (a,), (ab,))" if fb else "b")
        return impl_from_source(src, {"rtb": rtb})
    return None


@overload(rtb.bunbroadcast)
def _bunbroadcast(g, x, gb, xb):
    if is_complex(g) and not is_complex(x):
        return lambda g, x, gb, xb: rtb.bunbroadcast(np.real(g), x, gb, xb)
    fg, fx = getattr(gb, "literal_value", None), getattr(xb, "literal_value", None)
    if fg is None or fx is None:
        return None
    if not fg:       # one cotangent for the batch: unbroadcast it once, repeated per example of x
        if not fx:
            return lambda g, x, gb, xb: rt.unbroadcast(g, x)
        if not is_array(x):
            return None
        return lambda g, x, gb, xb: rtb.bexpand(rt.unbroadcast(g, x[0]), x.shape[0])
    if not is_array(g):
        return lambda g, x, gb, xb: g
    xr = (x.ndim - (1 if fx else 0)) if is_array(x) else 0
    gr = g.ndim - (1 if fg else 0)
    if fg and gr == xr and not is_array(x):
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
        return impl_from_source("\n".join(lines) + "\n", {"np": np})
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
    if not is_array(x) or (fg and not is_array(g)):
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
    if is_array(g) and g.ndim != pos:
        return None
    read = "g" if not is_array(g) else (f"g[{', '.join(gidx)}]" if gidx else "g[()]")
    lines = ["def impl(g, x, axis, keepdims, gb, xb):",
             f"    size = {'g' if fg else 'x'}.shape[0]",
             f"    xs = x.shape{'[1:]' if fx else ''}",
             f"    out = np.empty((size,) + xs, {'g.dtype' if is_array(g) else 'np.float64'})",
             "    for b in range(size):"]
    for k in range(nd):
        lines.append("    " * (k + 2) + f"for i{k} in range(xs[{k}]):")
    lines.append("    " * (nd + 2) + f"out[b, {', '.join(f'i{k}' for k in range(nd))}] = {read}")
    lines.append("    return out")
    return impl_from_source("\n".join(lines) + "\n", {"np": np})


@overload(rtb.bexpand_reduced)
def _bexpand_reduced(g, x, axis, keepdims, gb, xb):
    """The cotangent of a full reduction per example (axis None): each example's value g[b]
    (or the shared g) fills that example's shape. Other axes: no Numba version (the generic
    runtime function is refused by Numba, and the error says so)."""
    fg, fx = getattr(gb, "literal_value", None), getattr(xb, "literal_value", None)
    if fg is None or fx is None or not (fg or fx):
        return None
    if not is_none(axis):
        return _bexpand_reduced_axes(g, x, axis, keepdims, fg, fx)
    if fg != is_array(g):       # batched: an array of per-example values; shared: a number
        return None
    if not is_array(x):
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
    if isinstance(x, types.BaseTuple):      # a pytree's zeros: each part repeated along the batch
        parts = "".join(f"rtb.bexpand(x[{j}], size), " for j in range(len(x)))
        return impl_from_source(f"def impl(x, size):\n    return ({parts})\n", {"rtb": rtb})
    if is_array(x):
        return lambda x, size: np.ascontiguousarray(np.broadcast_to(x, (size,) + x.shape))
    return lambda x, size: np.full(size, x)


def _bmatmul_vjp_lower(side):
    per_example = rt.matmul_vjp_a if side == "a" else rt.matmul_vjp_b

    def lower(g, a, b, ab, bb, keep=False):
        fa, fb = getattr(ab, "literal_value", None), getattr(bb, "literal_value", None)
        fk = getattr(keep, "literal_value", None)
        if fa is None or fb is None or not fk or not (is_array(a) and is_array(b) and is_array(g)):
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
