"""Op helpers of the shape rules (s2s/ops/shape/rules.py, and batch_rules.py's kinds of them).

Bookkeeping (index maps, segment bounds, pad widths, interleaved shapes) of np.pad, np.diff,
np.tile, np.repeat, np.sort, np.split, np.linspace and np.roll, and the adjoints and tangents of
those ops and of the joins (concatenate, stack, hstack, vstack, column_stack), np.take,
np.take_along_axis and np.array of a list.  pad_width_along also serves ops/reductions/helpers.py.

Every public function here is called by name from generated code and is bookkeeping, readable or
ruled (the three kinds: rules/__init__.py).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...runtime import unbroadcast


def pad_width_along(x, axis, before, after):
    """np.pad widths padding only `axis` of x (before, after)."""
    nd = np.ndim(x)
    ax = int(axis) % nd
    return tuple((before, after) if i == ax else (0, 0) for i in range(nd))


def linspace_weights(y, num, endpoint=True, retstep=False, axis=0):
    """The weights w of np.linspace(start, stop, num) = start * (1 - w) + stop * w along axis 0,
    shaped to broadcast against its result y."""
    if retstep or axis != 0:
        raise NotImplementedError("s2s differentiates np.linspace only with retstep=False and axis=0")
    n = int(num)
    w = np.arange(n) / max(n - 1 if endpoint else n, 1)
    return np.reshape(w, (n,) + (1,) * (np.ndim(y) - 1))


def negated(v):
    """-v for an int or a tuple of ints (np.roll shifts)."""
    if isinstance(v, (tuple, list)):
        return tuple(-int(s) for s in v)
    return -v


def tile_plan(A, reps):
    """(interleaved shape (r0, a0, r1, a1, ...), the rep axes) of np.tile(A, reps)."""
    reps = (reps,) if isinstance(reps, numbers.Integral) else tuple(reps)
    sa = np.shape(A)
    nd = max(len(sa), len(reps))
    pa = (1,) * (nd - len(sa)) + tuple(sa)
    pr = (1,) * (nd - len(reps)) + tuple(int(r) for r in reps)
    inter = []
    for i in range(nd):
        inter += [pr[i], pa[i]]
    return tuple(inter), tuple(range(0, 2 * nd, 2))


def sort_inverse(a, axis=-1):
    """The permutation undoing np.sort(a, axis) (argsort of argsort; flat when axis is None)."""
    if axis is None:
        return np.argsort(np.argsort(np.ravel(a), kind="stable"), kind="stable")
    return np.argsort(np.argsort(a, axis=axis, kind="stable"), axis=axis, kind="stable")


def sort_order(a, axis=-1):
    if axis is None:
        return np.argsort(np.ravel(a), kind="stable")
    return np.argsort(a, axis=axis, kind="stable")


def repeat_segments(a, repeats, axis=None):
    """(axis, starts) of the output segments of np.repeat(a, repeats, axis), flat when axis is None."""
    n = np.size(a) if axis is None else np.shape(a)[axis]
    r = np.broadcast_to(np.asarray(repeats), (n,))
    ends = np.cumsum(r)
    return ends - r, r


def split_plan(ary, indices_or_sections, axis=0):
    """The (start, stop) of every piece of np.split / np.array_split along axis."""
    n = np.shape(ary)[axis]
    if isinstance(indices_or_sections, numbers.Integral):
        k = int(indices_or_sections)
        base, extra = divmod(n, k)
        sizes = [base + 1] * extra + [base] * (k - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
    else:
        bounds = np.concatenate([[0], np.asarray(indices_or_sections, dtype=int), [n]])
        bounds = np.clip(bounds, 0, n)
        bounds = np.maximum.accumulate(bounds)
    return [(int(bounds[i]), int(bounds[i + 1])) for i in range(len(bounds) - 1)]


def diff_plan(a, axis=-1, prepend=None, append=None):
    """Sizes along axis of (prepend, a, append) in np.diff's concatenation, and the axis."""
    nd = np.ndim(a)
    ax = int(axis) % nd
    n = np.shape(a)[ax]

    def size(v):
        if v is None:
            return 0
        return 1 if np.ndim(v) == 0 else np.shape(v)[ax]
    return size(prepend), n, size(append), ax


def diff_part_shape(a, axis, v):
    """The shape np.diff broadcasts prepend/append value v to (a's shape, 1 along axis)."""
    shape = list(np.shape(a))
    ax = int(axis) % len(shape)
    if np.ndim(v) == 0:
        shape[ax] = 1
    else:
        shape[ax] = np.shape(v)[ax]
    return tuple(shape)


def diff_part_range(a, axis, prepend, append, which):
    """Positions along axis of part `which` (0 prepend, 1 a, 2 append) in np.diff's concatenation."""
    pre, n, app, ax = diff_plan(a, axis, prepend, append)
    start = (0, pre, pre + n)[which]
    return np.arange(start, start + (pre, n, app)[which])


def diff_part_pad(a, axis, prepend, append, which):
    """np.pad widths placing part `which` in the concatenation along axis (zeros elsewhere)."""
    pre, n, app, ax = diff_plan(a, axis, prepend, append)
    before = (0, pre, pre + n)[which]
    after = (n + app, app, 0)[which]
    return pad_width_along(a, ax, before, after)


def pad_index_map(array, pad_width, mode="constant"):
    """Flat source index of every element of np.pad(array, pad_width, mode) (-1: the constant)."""
    n = np.size(array)
    idx = np.arange(n).reshape(np.shape(array))
    if mode == "constant":
        return np.pad(idx, pad_width, mode="constant", constant_values=-1)
    if mode in ("edge", "reflect", "symmetric", "wrap"):
        return np.pad(idx, pad_width, mode=mode)
    raise NotImplementedError(f"s2s differentiates np.pad only in modes constant, edge, reflect, "
                              f"symmetric and wrap, not {mode!r}")


def pad_border_mask(array, pad_width):
    """1.0 where np.pad(array, pad_width) holds the constant, 0.0 where it holds array."""
    return (pad_index_map(array, pad_width, "constant") < 0).astype(np.float64)


# ----- shape -------------------------------------------------------------------

def tile_vjp(g, A, reps):
    """Cotangent of A in y = np.tile(A, reps): the sum over the copies."""
    plan = tile_plan(A, reps)
    return np.reshape(np.sum(np.reshape(g, plan[0]), axis=plan[1]), np.shape(A))


def sort_vjp(g, a, axis=-1):
    """Cotangent of a in y = np.sort(a, axis): g sent back through the inverse permutation."""
    inv = sort_inverse(a, axis)
    if axis is None:
        return np.reshape(np.take(g, inv), np.shape(a))
    return np.take_along_axis(g, inv, axis)


def sort_tangent(ta, a, axis=-1):
    order = sort_order(a, axis)
    if axis is None:
        return np.take(np.ravel(ta), order)
    return np.take_along_axis(ta, order, axis)


def diff_vjp(g, a, n=1, axis=-1, prepend=None, append=None, which=1):
    """Cotangent of part `which` (0 prepend, 1 a, 2 append) in y = np.diff(a, n, axis, prepend, append)."""
    full = g
    for _ in range(n):
        full = -np.diff(np.pad(full, pad_width_along(full, axis, 1, 1)), axis=axis)
    part = np.take(full, diff_part_range(a, axis, prepend, append, which), axis=axis)
    target = a
    if which == 0:
        target = prepend
    if which == 2:
        target = append
    return unbroadcast(part, target)


def diff_tangent(tv, a, n=1, axis=-1, prepend=None, append=None, which=1):
    """Tangent of y = np.diff(a, n, axis, prepend, append) along the tangent tv of part `which`."""
    v = a
    if which == 0:
        v = prepend
    if which == 2:
        v = append
    part = np.broadcast_to(tv, diff_part_shape(a, axis, v))
    return np.diff(np.pad(part, diff_part_pad(a, axis, prepend, append, which)), n=n, axis=axis)


def pad_vjp(g, array, pad_width, mode="constant"):
    """Cotangent of array in y = np.pad(array, pad_width, mode): scatter-add through the index map."""
    idx = np.ravel(pad_index_map(array, pad_width, mode))
    keep = idx >= 0
    out = np.bincount(idx[keep], weights=np.ravel(g)[keep], minlength=np.size(array))
    return out.reshape(np.shape(array))


def pad_value_vjp(g, array, pad_width):
    """Cotangent of a scalar constant_values in y = np.pad(array, pad_width, constant_values=c)."""
    return np.sum(g * pad_border_mask(array, pad_width))


def pad_value_tangent(tc, array, pad_width):
    """Tangent of y = np.pad(array, pad_width, constant_values=c) along a scalar tangent tc of c."""
    return tc * pad_border_mask(array, pad_width)


def repeat_vjp(g, a, repeats, axis=None):
    """Cotangent of a in y = np.repeat(a, repeats, axis): sums over each repeated segment."""
    seg = repeat_segments(a, repeats, axis)
    ax = 0 if axis is None else int(axis) % np.ndim(a)
    gm = np.ravel(g) if axis is None else np.asarray(g, dtype=float)
    # One trailing zero along ax so that every segment start is a valid index.
    gm = np.concatenate([gm, np.zeros(tuple(1 if i == ax else n for i, n in enumerate(gm.shape)))], axis=ax)
    sums = np.add.reduceat(gm, seg[0], axis=ax)
    shape = [1] * sums.ndim
    shape[ax] = -1
    sums = sums * (seg[1] > 0).reshape(shape)
    return np.reshape(sums, np.shape(a))


def take_vjp(g, a, indices, axis=None, mode="raise"):
    """Cotangent of a in y = np.take(a, indices, axis, mode=mode): scatter-add."""
    if axis is None:
        n = np.size(a)
        idx = np.take(np.arange(n), indices, mode=mode)
        out = np.bincount(np.ravel(idx), weights=np.ravel(g), minlength=n)
        return out.reshape(np.shape(a))
    nd = np.ndim(a)
    ax = int(axis) % nd
    n = np.shape(a)[ax]
    idx = np.take(np.arange(n), indices, mode=mode)
    gm = np.moveaxis(np.asarray(g), tuple(range(ax, ax + np.ndim(idx))), tuple(range(np.ndim(idx))))
    flat = gm.reshape((np.size(idx),) + gm.shape[np.ndim(idx):])
    out = np.zeros((n,) + flat.shape[1:])
    np.add.at(out, np.ravel(idx), flat)
    return np.moveaxis(out, 0, ax)


def take_along_axis_vjp(g, arr, indices, axis=-1):
    """Cotangent of arr in y = np.take_along_axis(arr, indices, axis): scatter-add."""
    if axis is None:
        out = np.bincount(np.ravel(indices) % np.size(arr), weights=np.ravel(g), minlength=np.size(arr))
        return out.reshape(np.shape(arr))
    nd = np.ndim(arr)
    ax = int(axis) % nd
    gb = np.broadcast_to(g, np.broadcast_shapes(np.shape(indices), np.shape(g)))
    idx = np.broadcast_to(indices, gb.shape)
    grids = list(np.indices(idx.shape, sparse=True))
    grids[ax] = idx
    shape = list(np.broadcast_shapes(np.shape(arr), tuple(1 if i == ax else n for i, n in enumerate(idx.shape))))
    shape[ax] = np.shape(arr)[ax]
    out = np.zeros(shape)
    np.add.at(out, tuple(grids), gb)
    return unbroadcast(out, arr)


def pieces_like(parts, seq):
    """Piece cotangents as the pieces were given: a list for a list (or tuple), one array shaped
    like `seq` when the pieces were the rows of an array (np.hstack(x) of a 1-d x)."""
    if isinstance(seq, np.ndarray):
        return np.reshape(np.stack(parts), np.shape(seq))
    return parts


def concatenate_vjp(g, arrays, axis=0):
    """Cotangents of the pieces in y = np.concatenate(arrays, axis) (a list)."""
    ax = 0 if axis is None else axis
    gm = g if axis is not None else g
    out = []
    start = 0
    for x in arrays:
        n = np.size(x) if axis is None else np.shape(x)[ax]
        if axis is None:
            out.append(np.reshape(gm[start:start + n], np.shape(x)))
        else:
            out.append(np.take(gm, np.arange(start, start + n), axis=ax))
        start += n
    return pieces_like(out, arrays)


def stack_vjp(g, arrays, axis=0):
    """Cotangents of the pieces in y = np.stack(arrays, axis) (a list)."""
    out = []
    for i in range(len(arrays)):
        out.append(np.take(g, i, axis=axis))
    return pieces_like(out, arrays)


def hstack_vjp(g, tup):
    """Cotangents of the pieces in y = np.hstack(tup) (a list; numbers are 1-element pieces)."""
    if np.ndim(tup[0]) <= 1:
        out = []
        for x, gx in zip(tup, concatenate_vjp(g, [np.atleast_1d(x) for x in tup], 0)):
            out.append(np.reshape(gx, np.shape(x)))
        return pieces_like(out, tup)
    return concatenate_vjp(g, tup, 1)


def vstack_vjp(g, tup):
    """Cotangents of the pieces in y = np.vstack(tup) (a list)."""
    out = []
    for x, gx in zip(tup, concatenate_vjp(g, [np.atleast_2d(x) for x in tup], 0)):
        out.append(np.reshape(gx, np.shape(x)))
    return pieces_like(out, tup)


def column_stack_vjp(g, tup):
    """Cotangents of the pieces in y = np.column_stack(tup) (a list)."""
    cols = [np.reshape(x, (-1, 1)) if np.ndim(x) < 2 else x for x in tup]
    out = []
    for x, gx in zip(tup, concatenate_vjp(g, cols, 1)):
        out.append(np.reshape(gx, np.shape(x)))
    return pieces_like(out, tup)


def split_vjp(g, ary, indices_or_sections, axis=0):
    """Cotangent of ary from the list of piece cotangents of np.split / np.array_split."""
    pieces = []
    for (start, stop), gi in zip(split_plan(ary, indices_or_sections, axis), g):
        shape = list(np.shape(ary))
        shape[axis] = stop - start
        pieces.append(np.broadcast_to(gi, tuple(shape)))
    return np.concatenate(pieces, axis=axis)


def array_vjp(g, obj):
    """Cotangent of np.array(obj): g itself, or (for a list literal) one cotangent per element."""
    if isinstance(obj, (list, tuple)):
        out = []
        for i in range(len(obj)):
            out.append(array_vjp(g[i], obj[i]))
        return out
    return g
