"""Runtime support for batched code (vmap), called by what transforms/batching.py generates.

Batched values carry the batch on axis 0; these helpers keep per-example semantics (ranks, axes,
shapes) right for arrays with that extra axis: the batch size and axis moves at the boundary, the
per-example versions of indexing, matmul/dot, reshapes and of the adjoint helpers of s2s.runtime
(`bunbroadcast`, `bexpand_reduced`, ...), their cotangents (the `*_vjp` helpers, plain NumPy that
s2s can read and differentiate), and `bmap`/`per_example`, the loops over examples for what has no
array form. Like s2s.runtime's, they appear by name in `s2s show` output.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import ArgumentError, NonDifferentiableError
from . import broadcast_like, is_basic_index, is_complex, norm_axis, reduced_size, unbroadcast



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
    if is_basic_index(index):
        idx = index if isinstance(index, tuple) else (index,)
        return x[(slice(None),) + idx]
    if np.shape(x)[0] == 0:
        return _no_examples(lambda ex: ex[index], (x,), (0,), 0)
    return np.stack([x[b][index] for b in range(np.shape(x)[0])])


def bsetitem(y, index, v, vb):
    """y[index] = v per example, for batched y (v batched or not)."""
    if is_basic_index(index):
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
        if size == 0:       # a stack of no per-example products, shaped as np.dot's would be
            ea, eb = (np.shape(a)[1:] if ab else np.shape(a)), (np.shape(b)[1:] if bb else np.shape(b))
            return np.zeros((0,) + ea[:-1] + eb[:-2] + eb[-1:], np.result_type(a, b))
        return np.stack([np.dot(a[i] if ab else a, b[i] if bb else b) for i in range(size)])
    return bmatmul(a, b, ab, bb)


def bmap(fn, args, flags, size, kwargs=None):
    """Per-example loop for one op with no batching rule: stack fn over the batch."""
    kwargs = kwargs or {}
    if size == 0:
        return _no_examples(lambda *ex: fn(*ex, **kwargs), args, tuple(0 if f else None for f in flags), 0)
    outs = [fn(*[a[b] if f else a for a, f in zip(args, flags)], **kwargs) for b in range(size)]
    return np.stack([np.asarray(o) for o in outs])


def per_example(fn, args, in_axes, out_axes, size):
    """The whole function as a loop over examples (no array form was found)."""
    if size == 0:
        return _no_examples(fn, args, in_axes, out_axes)
    results = []
    for b in range(size):
        ex = [np.take(a, b, axis=ax) if ax is not None else a for a, ax in zip(args, in_axes)]
        results.append(fn(*ex))
    return _stack_outputs(results, out_axes)


def _no_examples(fn, args, in_axes, out_axes):
    """The stacked outputs of a batch of no examples: their shapes and dtypes are those of fn's
    outputs on one example of zeros (JAX traces the function for them; s2s runs it once)."""
    ex = [np.zeros(np.shape(a)[:ax % np.ndim(a)] + np.shape(a)[ax % np.ndim(a) + 1:], np.asarray(a).dtype)
          if ax is not None else a for a, ax in zip(args, in_axes)]
    ex = [e[()] if isinstance(e, np.ndarray) and e.ndim == 0 else e for e in ex]   # (a number, as a[b] is)
    try:
        with np.errstate(all="ignore"):
            probe = fn(*ex)
    except Exception as exc:
        exc.add_note("(vmap of a batch of no examples: s2s ran the function once on an example of zeros to "
                     "find the shape and dtype of its outputs, and it raised there)")
        raise
    return _empty_like_outputs(probe, out_axes)


def _empty_like_outputs(probe, out_axes):
    if isinstance(probe, (tuple, list)):
        axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(probe)
        return type(probe)(_empty_like_outputs(p, ax) for p, ax in zip(probe, axes))
    if out_axes is None:
        return probe
    p = np.asarray(probe)
    return np.moveaxis(np.empty((0,) + p.shape, p.dtype), 0, out_axes)


def _stack_outputs(results, out_axes):
    """Stack per-example results along out_axes, leaf by leaf through tuples and lists."""
    first = results[0]
    if isinstance(first, (tuple, list)):
        axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(first)
        return type(first)(_stack_outputs([r[i] for r in results], ax) for i, ax in enumerate(axes))
    return np.stack([np.asarray(r) for r in results], axis=out_axes) if out_axes is not None else first


def bunbroadcast(g, x, gb, xb):
    """unbroadcast per example."""
    if is_complex(g) and not is_complex(x):
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
        g = np.expand_dims(g, tuple(a + 1 for a in norm_axis(axis, len(shape))))
    return np.broadcast_to(g, (size,) + tuple(shape))


def bexpand_reduced_vjp(d, g, axis, keepdims, gb):
    """Cotangent of g in bexpand_reduced(g, x, axis, keepdims, gb, xb): the reduction per example
    (summed over the batch too when g is the same for every example)."""
    axes = tuple(a + 1 for a in norm_axis(axis, np.ndim(d) - 1))
    r = np.sum(d, axis=axes, keepdims=keepdims) if axes else d
    return r if gb else np.sum(r, axis=0)


def breduced_size(x, axis, xb):
    return reduced_size(x[0] if xb else x, axis)


def badd_at(a, index, v, ab, vb, size):
    """add_at per example; a is batched (made so by the pass)."""
    idx = index if isinstance(index, tuple) else (index,)
    if is_basic_index(index):
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
