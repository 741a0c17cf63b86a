"""Op helpers of the product and diagonal rules of s2s/ops/linalg/rules.py.

Bookkeeping (contraction axes, permutations, einsum specs) and the adjoints of np.tensordot, np.dot,
np.inner, np.outer, np.kron, np.einsum, np.cross, np.trace, np.diagonal and np.diag.  The matrix
functions of np.linalg (det, solve, cholesky, eigh, eig, qr, svd) are in ops/linalg/helpers.py.

Every public function here is called by name from generated code and is bookkeeping, readable or
ruled (the three kinds: rules/__init__.py).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...runtime import unbroadcast


def diag_mask(a, offset=0, axis1=0, axis2=1):
    """1.0 on the offset diagonal of axes (axis1, axis2) of a, shaped to broadcast against a."""
    shape = np.shape(a)
    nd = len(shape)
    ax1, ax2 = int(axis1) % nd, int(axis2) % nd
    m = np.eye(shape[ax1], shape[ax2], k=offset)
    if ax1 > ax2:
        m = m.T
    out_shape = tuple(n if i in (ax1, ax2) else 1 for i, n in enumerate(shape))
    return m.reshape(out_shape)


def sorted_axes_pair(a, axis1, axis2):
    nd = np.ndim(a)
    return tuple(sorted((int(axis1) % nd, int(axis2) % nd)))


def axes_pair(a, axis1, axis2):
    nd = np.ndim(a)
    return (int(axis1) % nd, int(axis2) % nd)


def diag_embedding(a, offset=0, axis1=0, axis2=1):
    """E[j, r, c] = 1 where (r, c) is element j of the offset diagonal of a's (axis1, axis2) plane."""
    shape = np.shape(a)
    nd = len(shape)
    n1, n2 = shape[int(axis1) % nd], shape[int(axis2) % nd]
    r0, c0 = max(-offset, 0), max(offset, 0)
    k = max(0, min(n1 - r0, n2 - c0))
    e = np.zeros((k, n1, n2))
    j = np.arange(k)
    e[j, j + r0, j + c0] = 1.0
    return e


def tensordot_axes(a, b, axes=2):
    """np.tensordot's `axes` as two equal-length lists of non-negative axes."""
    na, nb = np.ndim(a), np.ndim(b)
    if isinstance(axes, numbers.Integral):
        n = int(axes)
        return list(range(na - n, na)), list(range(n))
    xa, xb = axes
    xa = [xa] if isinstance(xa, numbers.Integral) else list(xa)
    xb = [xb] if isinstance(xb, numbers.Integral) else list(xb)
    return [int(i) % na for i in xa], [int(i) % nb for i in xb]


def tensordot_vjp_plan(a, b, axes, which):
    """(contraction axes, output permutation) for the cotangent of a (which=0) or b (1)."""
    xa, xb = tensordot_axes(a, b, axes)
    na, nb = np.ndim(a), np.ndim(b)
    free_a = [i for i in range(na) if i not in xa]
    free_b = [i for i in range(nb) if i not in xb]
    nfa, nfb = len(free_a), len(free_b)
    if which == 0:   # tensordot(g, b, (g's free_b dims, free_b)) -> free_a + (xa paired with sorted xb)
        contract = (tuple(range(nfa, nfa + nfb)), tuple(free_b))
        src = free_a + [xa[xb.index(j)] for j in sorted(xb)]
    else:            # tensordot(a, g, (free_a, g's free_a dims)) -> (xb paired with sorted xa) + free_b
        contract = (tuple(free_a), tuple(range(nfa)))
        src = [xb[xa.index(i)] for i in sorted(xa)] + free_b
    return contract, tuple(int(i) for i in np.argsort(src))


def dot_axes(a, b):
    """np.dot(a, b) as tensordot(a, b, dot_axes(a, b)) (both at least 1-d)."""
    return ([np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)])


def inner_axes(a, b):
    return ([np.ndim(a) - 1], [np.ndim(b) - 1])


def kron_plan(a, b):
    """Shapes for np.kron(a, b): (a promoted, b promoted, interleaved, perm to a-axes then b-axes)."""
    sa, sb = np.shape(a), np.shape(b)
    nd = max(len(sa), len(sb))
    pa = (1,) * (nd - len(sa)) + tuple(sa)
    pb = (1,) * (nd - len(sb)) + tuple(sb)
    inter = []
    for i in range(nd):
        inter += [pa[i], pb[i]]
    perm = tuple(range(0, 2 * nd, 2)) + tuple(range(1, 2 * nd, 2))
    return pa, pb, tuple(inter), perm


def _einsum_cotangent_letters(ins, out, k):
    """The letters of operand k's cotangent in np.einsum(",".join(ins) + "->" + out, ...):
    (the other operands' positions, the letters of the output and the other operands, operand
    k's distinct letters in order of first appearance, those of them the others or the output
    hold, and the spec `np.einsum(spec, g, *others)` summing g over everything not in k)."""
    others = [i for i in range(len(ins)) if i != k]
    avail = set(out)
    for i in others:
        avail |= set(ins[i])
    distinct = []
    for ch in ins[k]:
        if ch not in distinct:
            distinct.append(ch)
    result = "".join(ch for ch in distinct if ch in avail)
    spec = ",".join([out] + [ins[i] for i in others]) + "->" + result
    return others, avail, distinct, result, spec


def einsum_plan(subscripts, k, a, b=None, c=None):
    """Spec for the cotangent of operand k of np.einsum(subscripts, a[, b[, c]]).

    Returns (spec, order, shape, mask): `np.einsum(spec, g, *others)` gives the
    sum over everything not in operand k, indexed by k's distinct letters in
    order of first appearance; reshape it to `shape` (1s for repeated letters
    and for letters found only in operand k), broadcast it to operand k's
    shape and multiply by `mask` (the 0/1 diagonal of repeated letters, or None).
    `order` lists the other operands' positions.
    """
    ops = [x for x in (a, b, c) if x is not None]
    ins, out = _einsum_parse(subscripts, [np.ndim(x) for x in ops])
    letters_k = ins[k]
    others, avail, distinct, result, spec = _einsum_cotangent_letters(ins, out, k)
    shape_k = np.shape(ops[k])
    seen = set()
    shape = []
    for ch, n in zip(letters_k, shape_k):
        shape.append(n if (ch in avail and ch not in seen) else 1)
        seen.add(ch)
    mask = None
    if len(distinct) != len(letters_k):
        mask = np.ones(shape_k)
        for ch in distinct:
            pos = [i for i, c2 in enumerate(letters_k) if c2 == ch]
            for p in pos[1:]:
                idx_shape = [1] * len(shape_k)
                idx_shape[pos[0]] = shape_k[pos[0]]
                i0 = np.arange(shape_k[pos[0]]).reshape(idx_shape)
                idx_shape = [1] * len(shape_k)
                idx_shape[p] = shape_k[p]
                i1 = np.arange(shape_k[p]).reshape(idx_shape)
                mask = mask * (i0 == i1)
    return spec, tuple(others), tuple(shape), mask


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def einsum_count(subscripts):
    """How many operands einsum subscripts name."""
    return subscripts.split("->")[0].count(",") + 1


def _einsum_parse(subscripts, ndims):
    """Explicit-output einsum subscripts with '...' replaced by letters."""
    s = subscripts.replace(" ", "")
    if "->" in s:
        lhs, rhs = s.split("->")
    else:
        lhs, rhs = s, None
    ins = lhs.split(",")
    used = set(s) - set(".,->")
    free = [ch for ch in _LETTERS if ch not in used]
    ell_n = 0
    for spec, nd in zip(ins, ndims):
        if "..." in spec:
            ell_n = max(ell_n, nd - (len(spec) - 3))
    ell = "".join(free[:ell_n])
    out_ins = []
    for spec, nd in zip(ins, ndims):
        if "..." in spec:
            n = nd - (len(spec) - 3)
            spec = spec.replace("...", ell[ell_n - n:] if n else "")
        out_ins.append(spec)
    if rhs is None:
        counts: dict[str, int] = {}
        for spec in ins:
            for ch in spec.replace("...", ""):
                counts[ch] = counts.get(ch, 0) + 1
        rhs = ell + "".join(sorted(ch for ch, n in counts.items() if n == 1))
    else:
        rhs = rhs.replace("...", ell)
    return out_ins, rhs


def cross_plan(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """(axisa, axisb, axisc) of np.cross, with `axis` overriding all three."""
    if axis is not None:
        return axis, axis, axis
    return axisa, axisb, axisc


def cross2_rotation():
    """R with v @ R = (v1, -v0): the derivative of the 2-d cross product a0 b1 - a1 b0 w.r.t. a is b @ R."""
    return np.array([[0.0, -1.0], [1.0, 0.0]])


# ----- linear algebra ----------------------------------------------------------

def tensordot_vjp_a(g, a, b, axes=2):
    plan = tensordot_vjp_plan(a, b, axes, 0)
    return np.transpose(np.tensordot(g, b, axes=plan[0]), plan[1])


def tensordot_vjp_b(g, a, b, axes=2):
    plan = tensordot_vjp_plan(a, b, axes, 1)
    return np.transpose(np.tensordot(a, g, axes=plan[0]), plan[1])


def dot_vjp_any_a(g, a, b):
    """Cotangent of a in y = np.dot(a, b), any dimensions."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    return tensordot_vjp_a(g, a, b, dot_axes(a, b))


def dot_vjp_any_b(g, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    return tensordot_vjp_b(g, a, b, dot_axes(a, b))


def inner_vjp_a(g, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    return tensordot_vjp_a(g, a, b, inner_axes(a, b))


def inner_vjp_b(g, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    return tensordot_vjp_b(g, a, b, inner_axes(a, b))


def outer_vjp_a(g, a, b):
    return np.reshape(np.matmul(g, np.ravel(b)), np.shape(a))


def outer_vjp_b(g, a, b):
    return np.reshape(np.matmul(np.ravel(a), g), np.shape(b))


def kron_vjp_a(g, a, b):
    plan = kron_plan(a, b)
    gt = np.transpose(np.reshape(g, plan[2]), plan[3])
    return np.reshape(np.tensordot(gt, np.reshape(b, plan[1]), axes=np.ndim(gt) // 2), np.shape(a))


def kron_vjp_b(g, a, b):
    plan = kron_plan(a, b)
    gt = np.transpose(np.reshape(g, plan[2]), plan[3])
    return np.reshape(np.tensordot(np.reshape(a, plan[0]), gt, axes=np.ndim(gt) // 2), np.shape(b))


def einsum_vjp(g, subscripts, k, a, b=None, c=None):
    """Cotangent of operand k (0, 1, 2) of y = np.einsum(subscripts, a[, b[, c]])."""
    plan = einsum_plan(subscripts, k, a, b, c)
    spec = plan[0]
    others = plan[1]
    mask = plan[3]
    x = a
    if k == 1:
        x = b
    if k == 2:
        x = c
    if len(others) == 0:
        r = np.einsum(spec, g)
    elif len(others) == 1:
        r = np.einsum(spec, g, einsum_pick(others[0], a, b, c))
    else:
        r = np.einsum(spec, g, einsum_pick(others[0], a, b, c), einsum_pick(others[1], a, b, c))
    r = np.broadcast_to(np.reshape(r, plan[2]), np.shape(x))
    if mask is not None:
        r = r * mask
    return r


def einsum_with(subscripts, k, x, a, b=None, c=None):
    """np.einsum(subscripts, a[, b[, c]]) with operand k replaced by x (the transpose of
    einsum_vjp's map g -> cotangent of operand k)."""
    if k == 0:
        return einsum_operands(subscripts, x, b, c)
    if k == 1:
        return einsum_operands(subscripts, a, x, c)
    return einsum_operands(subscripts, a, b, x)


def einsum_vjp_swap(g, subscripts, k, j, x, a, b=None, c=None):
    """einsum_vjp(g, subscripts, k, ...) with operand j replaced by x: linear in x, and 0 when
    j == k (einsum_vjp reads only operand k's shape).  The terms of einsum_vjp's own rules."""
    if j == k:
        return 0.0 * einsum_vjp(g, subscripts, k, a, b, c)
    if j == 0:
        return einsum_vjp(g, subscripts, k, x, b, c)
    if j == 1:
        return einsum_vjp(g, subscripts, k, a, x, c)
    return einsum_vjp(g, subscripts, k, a, b, x)


def einsum_pick(i, a, b, c):
    if i == 0:
        return a
    if i == 1:
        return b
    return c


def einsum_operands(subscripts, a, b=None, c=None):
    """np.einsum(subscripts, a[, b[, c]]): the op with its optional operands left out."""
    n = einsum_count(subscripts)
    if n == 1:
        return np.einsum(subscripts, a)
    if n == 2:
        return np.einsum(subscripts, a, b)
    return np.einsum(subscripts, a, b, c)


def trace_vjp(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of a in y = np.trace(a, offset, axis1, axis2): g on the diagonal."""
    return np.expand_dims(g, sorted_axes_pair(a, axis1, axis2)) * diag_mask(a, offset, axis1, axis2)


def diagonal_vjp(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of a in y = np.diagonal(a, offset, axis1, axis2)."""
    full = np.tensordot(g, diag_embedding(a, offset, axis1, axis2), axes=1)
    return np.moveaxis(full, (-2, -1), axes_pair(a, axis1, axis2))


def diag_vjp(g, v, k=0):
    if np.ndim(v) == 1:
        return np.diag(g, k)
    return diagonal_vjp(g, v, k, 0, 1)


def cross_vjp_a(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangent of a in y = np.cross(a, b, ...) (3-vectors, or 2-vectors on both sides)."""
    axes = cross_plan(a, b, axisa, axisb, axisc, axis)
    am = np.moveaxis(a, axes[0], -1)
    bm = np.moveaxis(b, axes[1], -1)
    if np.shape(am)[-1] == 2:
        da = np.expand_dims(g, -1) * np.matmul(bm, cross2_rotation())
    else:
        da = np.cross(bm, np.moveaxis(g, axes[2], -1))
    return unbroadcast(np.moveaxis(da, -1, axes[0]), a)


def cross_vjp_b(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    axes = cross_plan(a, b, axisa, axisb, axisc, axis)
    am = np.moveaxis(a, axes[0], -1)
    bm = np.moveaxis(b, axes[1], -1)
    if np.shape(bm)[-1] == 2:
        db = -np.expand_dims(g, -1) * np.matmul(am, cross2_rotation())
    else:
        db = np.cross(np.moveaxis(g, axes[2], -1), am)
    return unbroadcast(np.moveaxis(db, -1, axes[1]), b)
