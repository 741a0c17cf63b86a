"""Plain-NumPy helpers the rule templates (s2s/rules/*) call.

Every public function here is visible, by name, in generated code (like
s2s.runtime's).  Each one is one of three kinds, and the rule table must keep
it that way, because generated code is itself transformed again for higher
derivatives:

* **bookkeeping** (shapes, axes, index maps, 0/1 masks): registered `nondiff`
  in the rule table; these may use any Python.
* **readable**: plain NumPy that s2s reads and differentiates like a user's
  helper (no comprehensions, lambdas, try/raise, *args; only calls to ops that
  have rules or to other readable helpers).  Most `*_vjp` / `*_tangent`
  helpers are of this kind.
* **ruled**: has its own adjoint and tangent rule (linear scatter/segment
  operations, and the spellings of the scipy.special functions).

The rule modules say which is which; tests/test_op_sweep.py checks that every
public helper either has a rule or normalizes as a readable helper.
"""
from __future__ import annotations

import numbers

import numpy as np

from .runtime import expand_reduced, inverse_axes, reduced_size, unbroadcast

try:  # scipy is optional: its rules register only when it is installed
    import scipy.special as _special
except ImportError:  # pragma: no cover
    _special = None


# =============================================================================
# Bookkeeping (nondiff): axes, shapes, masks
# =============================================================================

def _axes_tuple(axis, ndim):
    """`axis` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    return tuple(sorted(int(a) % ndim if ndim else 0 for a in axis))


def tie_share(a, b):
    """1 where a > b, 0.5 where a == b, 0 else (the share of max(a, b) owed to a)."""
    return np.where(a > b, 1.0, np.where(a == b, 0.5, 0.0))


def nan_max_share(a, b):
    """The share of np.fmax(a, b) owed to a: like tie_share, but a NaN loses."""
    return np.where(np.isnan(b), 1.0, np.where(np.isnan(a), 0.0, tie_share(a, b)))


def _clip_bounds(a_min, a_max, min_, max_):
    lo = a_min if a_min is not None else min_
    hi = a_max if a_max is not None else max_
    return lo, hi


def clip_share(a, a_min=None, a_max=None, min=None, max=None, which=0):  # noqa: A002
    """0/1 mask of the elements of np.clip(a, lo, hi) taken from a (which=0),
    from the lower bound (which=1) or from the upper bound (which=2).

    np.clip computes minimum(maximum(a, lo), hi); these masks follow that order.
    """
    lo, hi = _clip_bounds(a_min, a_max, min, max)
    a = np.asarray(a, dtype=float)
    m = a if lo is None else np.maximum(a, lo)
    below_hi = np.ones(np.shape(m), dtype=bool) if hi is None else (m <= hi)
    if which == 2:
        out = ~below_hi
    elif which == 1:
        out = below_hi & (np.zeros(a.shape, dtype=bool) if lo is None else (a < lo))
    else:
        out = below_hi & (np.ones(a.shape, dtype=bool) if lo is None else (a >= lo))
    return out.astype(np.float64)


def var_dof(a, axis=None, ddof=0, correction=None):
    """N - ddof of np.var / np.std (numpy 2 also spells ddof `correction`)."""
    if correction is not None:
        ddof = correction
    return reduced_size(a, axis) - ddof


def kept_shape(x, axis=None):
    """x's shape with the reduced axes set to 1 (the keepdims shape)."""
    shape = np.shape(x)
    axes = _axes_tuple(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def reduce_perm(x, axis=None):
    """Permutation moving the reduced axes of x last (kept axes first, in order)."""
    nd = np.ndim(x)
    axes = _axes_tuple(axis, nd)
    return tuple(i for i in range(nd) if i not in axes) + axes


def reduce_flat_shape(x, axis=None):
    """Shape of x, reduced axes moved last (reduce_perm) and flattened into one."""
    shape = np.shape(x)
    axes = _axes_tuple(axis, len(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes) + (-1,)


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


def eye_like(a):
    """The identity matrix of the last two axes of a (float)."""
    return np.eye(np.shape(a)[-1])


def off_diagonal_inverse(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it (eigh, svd)."""
    w = np.asarray(w)
    diff = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    eye = np.eye(n, dtype=bool)
    safe = np.where(eye, 1.0, diff)
    return np.where(eye, 0.0, 1.0 / safe)


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


def norm_kind(x, ord=None, axis=None):  # noqa: A002
    """Which norm np.linalg.norm(x, ord, axis) computes."""
    nd = np.ndim(x)
    if axis is None:
        if ord is None:
            return "two"
        matrix = nd == 2
    else:
        matrix = not isinstance(axis, numbers.Integral) and len(axis) == 2
    if not matrix:
        if ord is None or ord == 2:
            return "two"
        if ord == np.inf or ord == -np.inf:
            return "vec_inf"
        if ord == 0:
            return "vec_zero"
        if ord == 1:
            return "vec_one"
        return "vec_p"
    if ord is None or ord == "fro":
        return "two"
    if ord == "nuc":
        return "nuc"
    if ord in (1, -1):
        return "mat_col"
    if ord in (np.inf, -np.inf):
        return "mat_row"
    return "spectral"


def norm_matrix_axes(x, axis=None):
    """(row axis, column axis) of a matrix norm, non-negative."""
    nd = np.ndim(x)
    if axis is None:
        return (0, 1)
    return (int(axis[0]) % nd, int(axis[1]) % nd)


def norm_expand_shape(x, axis=None):
    """Shape the norm's output takes when its reduced axes are kept as 1s."""
    if axis is not None and not isinstance(axis, numbers.Integral):
        axis = tuple(axis)
    return kept_shape(x, axis)


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


def cross_plan(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """(axisa, axisb, axisc) of np.cross, with `axis` overriding all three."""
    if axis is not None:
        return axis, axis, axis
    return axisa, axisb, axisc


def cross2_rotation():
    """R with v @ R = (v1, -v0): the derivative of the 2-d cross product a0 b1 - a1 b0 w.r.t. a is b @ R."""
    return np.array([[0.0, -1.0], [1.0, 0.0]])


def sinc_derivative(x):
    """d/dx np.sinc(x) = (cos(pi x) - sinc(x)) / x, 0 at x = 0."""
    zero = x == 0.0
    safe = np.where(zero, 1.0, x)
    return np.where(zero, 0.0, (np.cos(np.pi * safe) - np.sinc(safe)) / safe)


def safe_log(a):
    """log(a) where a > 0, 0 elsewhere (d/db of a ** b where a <= 0 is taken as 0)."""
    return np.log(np.where(a > 0.0, a, 1.0))


# ----- reductions --------------------------------------------------------------

def std_scale(g, y):
    """g / y, and 0 where the standard deviation y is 0: a constant input (one element, or all
    equal), where 0 is the derivative (size 1) or a subgradient, not 0 / 0."""
    return g / np.where(y == 0.0, np.inf, y)


def cumsum_vjp(g, a, axis=None):
    """Cotangent of a in y = np.cumsum(a, axis): reversed cumulative sums."""
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(g))), np.shape(a))
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


def cumprod_vjp(g, a, y, axis=None):
    """Cotangent of a in y = np.cumprod(a, axis) (exact also where a has zeros)."""
    ax = axis
    a1 = a
    if axis is None:
        ax = 0
        a1 = np.ravel(a)
    if np.any(a1 == 0.0):
        out = cumprod_vjp_exact(g, a1, ax)
    else:
        out = np.flip(np.cumsum(np.flip(g * y, ax), axis=ax), ax) / a1
    return np.reshape(out, np.shape(a))


def cumprod_vjp_exact(g, a, axis):
    """Division-free cumprod cotangent: O(n^2) along axis (used only when a has zeros)."""
    am = np.moveaxis(a, axis, -1)
    gm = np.moveaxis(g, axis, -1)
    eye = eye_like(am)
    full = np.where(eye > 0.5, 1.0, np.expand_dims(am, -2))
    p = np.triu(np.cumprod(full, axis=-1))
    out = np.matmul(p, np.expand_dims(gm, -1))[..., 0]
    return np.moveaxis(out, -1, axis)


def cumprod_tangent(ta, a, y, axis=None):
    """Tangent of y = np.cumprod(a, axis), linear in ta (exact also where a has zeros)."""
    ax = axis
    a1 = a
    ta1 = ta
    if axis is None:
        ax = 0
        a1 = np.ravel(a)
        ta1 = np.ravel(ta)
    if np.any(a1 == 0.0):
        am = np.moveaxis(a1, ax, -1)
        tm = np.moveaxis(ta1, ax, -1)
        eye = eye_like(am)
        full = np.where(eye > 0.5, 1.0, np.expand_dims(am, -2))
        p = np.triu(np.cumprod(full, axis=-1))
        out = np.matmul(np.expand_dims(tm, -2), p)[..., 0, :]
        return np.moveaxis(out, -1, ax)
    return y * np.cumsum(ta1 / a1, axis=ax)


def prod_except(x, axis=None):
    """For each element, the product of the others along `axis` (division-free: exact at zeros)."""
    if np.ndim(x) == 0:
        return np.ones_like(x, dtype=float)
    perm = reduce_perm(x, axis)
    xt = np.transpose(x, perm)
    flat = np.reshape(xt, reduce_flat_shape(x, axis))
    width = pad_width_along(flat, -1, 1, 0)
    left = np.cumprod(np.pad(flat[..., :-1], width, constant_values=1.0), axis=-1)
    right = np.flip(np.cumprod(np.pad(np.flip(flat, -1)[..., :-1], width, constant_values=1.0), axis=-1), -1)
    out = np.reshape(left * right, np.shape(xt))
    return np.transpose(out, inverse_axes(perm))


def average_weights(a, weights, axis=None):
    """The weights of np.average(a, axis, weights) broadcast to a's shape (ones when weights is None)."""
    if weights is None:
        return np.ones(np.shape(a))
    return broadcast_weights(a, weights, axis)


def broadcast_weights(a, weights, axis=None):
    """Weights (not None) broadcast to a's shape, 1-d weights lying along axis."""
    return np.broadcast_to(np.reshape(weights, average_weight_shape(a, weights, axis)), np.shape(a))


def average_vjp_a(g, a, weights, axis=None, keepdims=False):
    w = average_weights(a, weights, axis)
    return expand_reduced(g / np.sum(w, axis=axis, keepdims=keepdims), a, axis, keepdims) * w


def average_vjp_w(g, a, weights, y, axis=None, keepdims=False):
    w = average_weights(a, weights, axis)
    s = np.sum(w, axis=axis, keepdims=keepdims)
    dw = expand_reduced(g / s, a, axis, keepdims) * (a - expand_reduced(y, a, axis, keepdims))
    if np.ndim(weights) != np.ndim(a):
        dw = np.sum(dw, axis=average_weight_sum_axes(a, weights, axis))
    return unbroadcast(dw, weights)


def average_tangent_a(ta, a, weights, axis=None, keepdims=False):
    w = average_weights(a, weights, axis)
    return np.sum(ta * w, axis=axis, keepdims=keepdims) / np.sum(w, axis=axis, keepdims=keepdims)


def average_tangent_w(tw, a, weights, y, axis=None, keepdims=False):
    w = average_weights(a, weights, axis)
    tw_full = broadcast_weights(a, tw, axis)
    num = np.sum(tw_full * (a - expand_reduced(y, a, axis, keepdims)), axis=axis, keepdims=keepdims)
    return num / np.sum(w, axis=axis, keepdims=keepdims)


def average_weight_shape(a, weights, axis):
    """Shape putting `weights` against a: as is when it has a's rank, else 1-d along `axis` (np.average)."""
    nd = np.ndim(a)
    wshape = np.shape(weights)
    if len(wshape) == nd:
        return tuple(wshape)
    shape = [1] * nd
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = [int(ax) % nd for ax in axes]
    for ax, n in zip(axes, wshape):
        shape[ax] = n
    return tuple(shape)


def average_weight_sum_axes(a, weights, axis):
    nd = np.ndim(a)
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = {int(ax) % nd for ax in axes}
    return tuple(i for i in range(nd) if i not in axes)


def norm_grad(x, y, ord=None, axis=None, keepdims=False):  # noqa: A002
    """dy/dx of y = np.linalg.norm(x, ord, axis, keepdims), x-shaped (one output per reduced slice)."""
    kind = norm_kind(x, ord, axis)
    ye = np.reshape(y, norm_expand_shape(x, axis))
    if kind == "two":
        return x / ye
    if kind == "vec_one":
        return np.sign(x)
    if kind == "vec_zero":
        return np.zeros(np.shape(x))
    ax = np.abs(x)
    if kind == "vec_inf":
        return np.sign(x) * norm_hits(ax, ye, axis)
    if kind == "vec_p":
        return np.sign(x) * (ax / ye) ** (ord - 1.0)
    rc = norm_matrix_axes(x, axis)
    if kind == "mat_col":
        sums = np.sum(ax, axis=rc[0], keepdims=True)
        return np.sign(x) * norm_hits(sums, ye, rc[1])
    if kind == "mat_row":
        sums = np.sum(ax, axis=rc[1], keepdims=True)
        return np.sign(x) * norm_hits(sums, ye, rc[0])
    return norm_singular_grad(x, ord, rc)


def norm_hits(v, ye, axis):
    """Weights 1/count where v attains ye along `axis` (ties split), else 0 (nondiff)."""
    hit = (v == ye).astype(np.float64)
    return hit / np.sum(hit, axis=axis, keepdims=True)


def norm_singular_grad(x, ord, rc):  # noqa: A002
    """d/dx of the spectral (ord=2, -2) or nuclear norm over the matrix axes rc = (row, col)."""
    xm = np.moveaxis(x, rc, (-2, -1))
    pick = norm_singular_pick(np.linalg.svd(xm, compute_uv=False), ord)
    return np.moveaxis(svdvals_vjp(pick, xm), (-2, -1), rc)


def norm_singular_pick(s, ord):  # noqa: A002
    """Weights of the singular values in the norm: all ones (nuclear), one-hot largest (2) or smallest (-2)."""
    if ord == "nuc":
        return np.ones(np.shape(s))
    idx = 0 if ord == 2 else np.shape(s)[-1] - 1
    out = np.zeros(np.shape(s))
    out[..., idx] = 1.0
    return out


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


def det_vjp(g, a, y):
    return np.expand_dims(g * y, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


def logdet_tangent(ta, a):
    """d log|det a| along ta: trace(a^-1 ta)."""
    return np.trace(np.linalg.solve(a, ta), axis1=-2, axis2=-1)


def slogdet_vjp(g, a):
    """Cotangent of a from the cotangent pair g = (d sign, d logabsdet) of np.linalg.slogdet(a)."""
    glog = g[1]
    return np.expand_dims(glog, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


def slogdet_tangent(ta, a, y):
    """Tangent pair (d sign, d logabsdet) of np.linalg.slogdet(a)."""
    return (np.zeros_like(y[0]), logdet_tangent(ta, a))


def solve_like(a, rhs, b):
    """np.linalg.solve(a, rhs) with rhs read the way np.linalg.solve read b (vector if b is 1-d)."""
    if np.ndim(b) == 1:
        return np.linalg.solve(a, np.expand_dims(rhs, -1))[..., 0]
    return np.linalg.solve(a, rhs)


def solve_vjp_b(g, a, b):
    """Cotangent of b in y = np.linalg.solve(a, b)."""
    return unbroadcast(solve_like(np.swapaxes(a, -1, -2), g, b), b)


def solve_vjp_a(g, a, b, y):
    """Cotangent of a in y = np.linalg.solve(a, b)."""
    gb = solve_like(np.swapaxes(a, -1, -2), g, b)
    if np.ndim(b) == 1:
        return unbroadcast(-np.expand_dims(gb, -1) * np.expand_dims(y, -2), a)
    return unbroadcast(-np.matmul(gb, np.swapaxes(y, -1, -2)), a)


def solve_tangent_a(ta, a, b, y):
    """Tangent of y = np.linalg.solve(a, b) along a's tangent ta."""
    if np.ndim(b) == 1:
        return -solve_like(a, np.matmul(ta, np.expand_dims(y, -1))[..., 0], b)
    return -solve_like(a, np.matmul(ta, y), b)


def cholesky_vjp(g, L, upper=False):
    """Cotangent of a in L = np.linalg.cholesky(a, upper=upper).

    np.linalg.cholesky reads one triangle of a only, so the cotangent lives on
    that triangle: for a symmetric a built from x, chain rule gives the usual
    symmetric result.
    """
    if upper:
        return np.swapaxes(cholesky_vjp_lower(np.swapaxes(g, -1, -2), np.swapaxes(L, -1, -2)), -1, -2)
    return cholesky_vjp_lower(g, L)


def cholesky_vjp_lower(g, L):
    lt = np.swapaxes(L, -1, -2)
    p = np.tril(np.matmul(lt, g)) - 0.5 * np.matmul(lt, g) * eye_like(L)
    x1 = np.linalg.solve(lt, p)
    abar = np.swapaxes(np.linalg.solve(lt, np.swapaxes(x1, -1, -2)), -1, -2)
    return np.tril(abar + np.swapaxes(abar, -1, -2)) - abar * eye_like(L)


def cholesky_tangent(ta, L, upper=False):
    """Tangent of L = np.linalg.cholesky(a, upper=upper) along ta."""
    if upper:
        return np.swapaxes(cholesky_tangent_lower(np.swapaxes(ta, -1, -2), np.swapaxes(L, -1, -2)), -1, -2)
    return cholesky_tangent_lower(ta, L)


def cholesky_tangent_lower(ta, L):
    sym = np.tril(ta) + np.swapaxes(np.tril(ta, -1), -1, -2)
    x1 = np.linalg.solve(L, sym)
    z = np.swapaxes(np.linalg.solve(L, np.swapaxes(x1, -1, -2)), -1, -2)
    return np.matmul(L, np.tril(z) - 0.5 * z * eye_like(L))


def triangle_from_symmetric(s, lower=True):
    """Cotangent of a matrix of which only one triangle is read, from the cotangent s of its symmetric matrix."""
    t = s + np.swapaxes(s, -1, -2)
    if lower:
        return np.tril(t) - s * eye_like(s)
    return np.triu(t) - s * eye_like(s)


def symmetric_from_triangle(ta, lower=True):
    """The symmetric matrix that one triangle of ta stands for."""
    if lower:
        return np.tril(ta) + np.swapaxes(np.tril(ta, -1), -1, -2)
    return np.triu(ta) + np.swapaxes(np.triu(ta, 1), -1, -2)


def eigvalsh_vjp(g, a, UPLO="L"):  # noqa: N803
    """Cotangent of a in w = np.linalg.eigvalsh(a, UPLO): V diag(g) V^T on the triangle read (ruled)."""
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    s = np.matmul(v * np.expand_dims(g, -2), np.swapaxes(v, -1, -2))
    return triangle_from_symmetric(s, UPLO == "L")


def eigvalsh_tangent(ta, a, UPLO="L"):  # noqa: N803
    """Tangent of w = np.linalg.eigvalsh(a, UPLO) along ta: diag(V^T sym(ta) V) (ruled)."""
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    sym = symmetric_from_triangle(ta, UPLO == "L")
    return np.sum(v * np.matmul(sym, v), axis=-2)


def eigvalsh_vjp_tangent_a(ta, g, a, UPLO="L"):  # noqa: N803
    """Tangent of eigvalsh_vjp(g, a, UPLO) along a's tangent ta."""
    wv = np.linalg.eigh(a, UPLO=UPLO)
    v = wv[1]
    dv = eigh_tangent(ta, a, wv, UPLO)[1]
    m = np.matmul(dv * np.expand_dims(g, -2), np.swapaxes(v, -1, -2))
    return triangle_from_symmetric(m + np.swapaxes(m, -1, -2), UPLO == "L")


def eigvalsh_vjp_vjp_a(h, g, a, UPLO="L"):  # noqa: N803
    """Cotangent of a in Y = eigvalsh_vjp(g, a, UPLO) from Y's cotangent h."""
    wv = np.linalg.eigh(a, UPLO=UPLO)
    sym = symmetric_from_triangle(h, UPLO == "L")
    gv = 2.0 * np.matmul(sym, wv[1]) * np.expand_dims(g, -2)
    return eigh_vjp((np.zeros_like(wv[0]), gv), a, wv, UPLO)


def eigvalsh_tangent_tangent_a(tb, ta, a, UPLO="L"):  # noqa: N803
    """Tangent of diag(V^T sym(ta) V) (= eigvalsh_tangent(ta, a, UPLO)) along a's tangent tb."""
    wv = np.linalg.eigh(a, UPLO=UPLO)
    dv = eigh_tangent(tb, a, wv, UPLO)[1]
    sym = symmetric_from_triangle(ta, UPLO == "L")
    return 2.0 * np.sum(dv * np.matmul(sym, wv[1]), axis=-2)


def eigh_vjp(g, a, y, UPLO="L"):  # noqa: N803
    """Cotangent of a from the cotangent pair g = (dw, dv) of (w, v) = np.linalg.eigh(a, UPLO)."""
    gw = g[0]
    gv = g[1]
    w = y[0]
    v = y[1]
    vt = np.swapaxes(v, -1, -2)
    f = off_diagonal_inverse(w)
    inner = np.matmul(vt, gv)
    core = f * inner
    core = 0.5 * (core + np.swapaxes(core, -1, -2))
    mid = core + np.expand_dims(gw, -1) * eye_like(v)
    s = np.matmul(v, np.matmul(mid, vt))
    return triangle_from_symmetric(s, UPLO == "L")


def eigh_tangent(ta, a, y, UPLO="L"):  # noqa: N803
    """Tangent pair (dw, dv) of (w, v) = np.linalg.eigh(a, UPLO)."""
    w = y[0]
    v = y[1]
    vt = np.swapaxes(v, -1, -2)
    m = np.matmul(vt, np.matmul(symmetric_from_triangle(ta, UPLO == "L"), v))
    dw = np.diagonal(m, 0, -2, -1)
    dv = np.matmul(v, off_diagonal_inverse(w) * m)
    return (dw, dv)


# ----- np.linalg.eig / eigvals of real matrices with real eigenvalues (rules/numpy_composite.py) -----
# A = V diag(w) V^-1: dw = diag(V^-1 dA V) (the left eigenvectors are the rows of V^-1); the
# eigenvectors (unit 2-norm columns, as NumPy gives them) move by dV = V (F * V^-1 dA V), less each
# column's component along itself (v_j . dv_j = 0 keeps |v_j| = 1), F_ij = 1 / (w_j - w_i).
# Values and vectors are two ops (one array each, so vmap's per-example loop can stack them), both
# from np.linalg.eig, so that their orders agree (np.linalg.eigvals may order them otherwise).

def _real_eig(a):
    w, v = np.linalg.eig(a)
    if np.iscomplexobj(w):
        raise ValueError("s2s: np.linalg.eig / eigvals gave complex eigenvalues here; s2s differentiates "
                         "real programs only (a matrix with real eigenvalues, e.g. a symmetric one: np.linalg.eigh)")
    return w, v


def eig_values(a):
    """The eigenvalues w of np.linalg.eig(a), a real matrix with real eigenvalues (ruled; complex
    eigenvalues are refused)."""
    return _real_eig(a)[0]


def eig_vectors(a):
    """The eigenvectors v of np.linalg.eig(a) (unit columns), a real matrix with real eigenvalues (ruled)."""
    return _real_eig(a)[1]


def eigvals_vjp(g, a):
    """Cotangent of a in w = eig_values(a): V^-T diag(g) V^T (readable)."""
    vt = np.swapaxes(eig_vectors(a), -1, -2)
    return np.linalg.solve(vt, np.expand_dims(g, -1) * vt)


def eigvals_tangent(ta, a):
    """Tangent of w = eig_values(a) along ta: diag(V^-1 ta V) (readable)."""
    v = eig_vectors(a)
    return np.diagonal(np.linalg.solve(v, np.matmul(ta, v)), 0, -2, -1)


def eig_vectors_vjp(g, a, v):
    """Cotangent of a in v = eig_vectors(a): V^-T (F * V^T (g - V diag(diag(V^T g)))) V^T."""
    w = eig_values(a)
    vt = np.swapaxes(v, -1, -2)
    gp = g - v * np.expand_dims(np.sum(v * g, axis=-2), -2)
    return np.linalg.solve(vt, np.matmul(off_diagonal_inverse(w) * np.matmul(vt, gp), vt))


def eig_vectors_tangent(ta, a, v):
    """Tangent of v = eig_vectors(a) along ta: V (F * V^-1 ta V), less each column's part along itself."""
    w = eig_values(a)
    dv = np.matmul(v, off_diagonal_inverse(w) * np.linalg.solve(v, np.matmul(ta, v)))
    return dv - v * np.expand_dims(np.sum(v * dv, axis=-2), -2)


# ----- np.quantile / np.percentile / np.median (rules/numpy_composite.py) --------------------------

def quantile_weights(q, shape, method="linear"):
    """The weight of each value of a sorted last axis (of an array of this shape) in NumPy's
    'linear' quantile q: 1 - f at floor(q (n - 1)), f at the next; shaped
    np.shape(q) + (1, ...) + (n,) to broadcast against the sorted values.  Ruled with no
    derivative in q: s2s differentiates quantiles in the data only."""
    if method != "linear":
        raise NotImplementedError(f"s2s differentiates np.quantile / np.percentile / np.median with the default "
                                  f"method='linear' only, not method={method!r}")
    qa = np.asarray(q, dtype=np.float64)
    if not np.all((qa >= 0.0) & (qa <= 1.0)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    n = shape[-1]
    pos = qa * (n - 1)
    lo = np.floor(pos)
    frac = np.expand_dims(pos - lo, -1)
    k = np.arange(n)
    lo = np.expand_dims(lo, -1)
    w = np.where(k == lo, 1.0 - frac, 0.0) + np.where(k == lo + 1.0, frac, 0.0)
    return np.reshape(w, np.shape(qa) + (1,) * (len(shape) - 1) + (n,))


def qr_vjp(g, a, y):
    """Cotangent of a from the cotangent pair g = (dq, dr) of (q, r) = np.linalg.qr(a) (reduced, m >= n)."""
    gq = g[0]
    gr = g[1]
    q = y[0]
    r = y[1]
    m = np.matmul(r, np.swapaxes(gr, -1, -2)) - np.matmul(np.swapaxes(gq, -1, -2), q)
    low = np.tril(m, -1)
    copyltu = low + np.swapaxes(low, -1, -2) + m * eye_like(m)
    rhs = gq + np.matmul(q, copyltu)
    return np.swapaxes(np.linalg.solve(r, np.swapaxes(rhs, -1, -2)), -1, -2)


def qr_tangent(ta, a, y):
    """Tangent pair (dq, dr) of (q, r) = np.linalg.qr(a) (reduced, m >= n)."""
    q = y[0]
    r = y[1]
    qt_da = np.matmul(np.swapaxes(q, -1, -2), ta)
    x = np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(qt_da, -1, -2)), -1, -2)
    low = np.tril(x, -1)
    omega = low - np.swapaxes(low, -1, -2)
    rest = ta - np.matmul(q, qt_da)
    dq = np.matmul(q, omega) + np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(rest, -1, -2)), -1, -2)
    dr = np.matmul(x - omega, r)
    return (dq, dr)


def svdvals_vjp(g, a):
    """Cotangent of a in s = np.linalg.svd(a, compute_uv=False): U diag(g) V^T (ruled)."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return np.matmul(u * np.expand_dims(g, -2), vt)


def svdvals_tangent(ta, a):
    """Tangent of s = np.linalg.svd(a, compute_uv=False) along ta: diag(U^T ta V) (ruled)."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return np.sum(u * np.matmul(ta, np.swapaxes(vt, -1, -2)), axis=-2)


def svdvals_tangent_tangent_a(tb, ta, a):
    """Tangent of diag(U^T ta V) (= svdvals_tangent(ta, a)) along a's tangent tb."""
    usv = np.linalg.svd(a, full_matrices=False)
    duv = svd_triple_tangent(tb, usv[0], usv[1], usv[2])
    v = np.swapaxes(usv[2], -1, -2)
    return np.sum(duv[0] * np.matmul(ta, v), axis=-2) + \
        np.sum(usv[0] * np.matmul(ta, np.swapaxes(duv[2], -1, -2)), axis=-2)


def svdvals_vjp_tangent_a(ta, g, a):
    """Tangent of U diag(g) V^T (= svdvals_vjp(g, a)) along a's tangent ta."""
    usv = np.linalg.svd(a, full_matrices=False)
    duv = svd_triple_tangent(ta, usv[0], usv[1], usv[2])
    gm = np.expand_dims(g, -2)
    return np.matmul(duv[0] * gm, usv[2]) + np.matmul(usv[0] * gm, duv[2])


def svdvals_vjp_vjp_a(h, g, a):
    """Cotangent of a in Y = U diag(g) V^T (= svdvals_vjp(g, a)) from Y's cotangent h."""
    usv = np.linalg.svd(a, full_matrices=False)
    gu = np.matmul(h, np.swapaxes(usv[2], -1, -2)) * np.expand_dims(g, -2)
    gvt = np.expand_dims(g, -1) * np.matmul(np.swapaxes(usv[0], -1, -2), h)
    return svd_triple_vjp(gu, np.zeros_like(usv[1]), gvt, usv[0], usv[1], usv[2])


def svd_vjp(g, a, y, full_matrices=True, compute_uv=True, hermitian=False):
    """Cotangent of a in y = np.linalg.svd(a, ...): singular values only, or the (u, s, vt) triple."""
    if not compute_uv:
        return svdvals_vjp(g, a)
    return svd_triple_vjp(g[0], g[1], g[2], y[0], y[1], y[2])


def svd_tangent(ta, a, y, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return svdvals_tangent(ta, a)
    return svd_triple_tangent(ta, y[0], y[1], y[2])


def svd_triple_vjp(gu, gs, gvt, u, s, vt):
    """Cotangent of a from (du, ds, dvt) of (u, s, vt) = np.linalg.svd(a) (Townsend's formula).

    Uses the first k = min(m, n) singular vectors (the cotangent of any extra
    columns of a full u or vt is ignored: those columns are not unique).
    """
    k = np.shape(s)[-1]
    u = u[..., :k]
    vt = vt[..., :k, :]
    gu = gu[..., :k]
    gvt = gvt[..., :k, :]
    v = np.swapaxes(vt, -1, -2)
    ut = np.swapaxes(u, -1, -2)
    eye = eye_like(np.expand_dims(s, -1) * np.expand_dims(s, -2))
    f = off_diagonal_inverse(s * s)
    utgu = np.matmul(ut, gu)
    vtgv = np.matmul(gvt, v)
    j = f * (utgu - np.swapaxes(utgu, -1, -2))
    kk = f * (np.swapaxes(vtgv, -1, -2) - vtgv)
    inner = j * np.expand_dims(s, -2) + np.expand_dims(gs, -1) * eye + np.expand_dims(s, -1) * kk
    out = np.matmul(u, np.matmul(inner, vt))
    sinv = 1.0 / s
    out = out + np.matmul(gu - np.matmul(u, utgu), np.expand_dims(sinv, -1) * vt)
    out = out + np.matmul(u * np.expand_dims(sinv, -2), gvt - np.matmul(np.matmul(gvt, v), vt))
    return out


def svd_triple_tangent(ta, u, s, vt):
    """Tangent triple (du, ds, dvt) of np.linalg.svd(a, full_matrices=False) along ta."""
    v = np.swapaxes(vt, -1, -2)
    ut = np.swapaxes(u, -1, -2)
    dp = np.matmul(ut, np.matmul(ta, v))
    ds = np.diagonal(dp, 0, -2, -1)
    cols = np.expand_dims(s, -2)
    rows = np.expand_dims(s, -1)
    f = off_diagonal_inverse(s * s)
    dpt = np.swapaxes(dp, -1, -2)
    su = f * (dp * cols + rows * dpt)
    sv = f * (rows * dp + dpt * cols)
    sinv = np.expand_dims(1.0 / s, -2)
    tat = np.swapaxes(ta, -1, -2)
    du = np.matmul(u, su) + np.matmul(ta - np.matmul(u, np.matmul(ut, ta)), v * sinv)
    dv = np.matmul(v, sv) + np.matmul(tat - np.matmul(v, np.matmul(vt, tat)), u * sinv)
    return (du, ds, np.swapaxes(dv, -1, -2))


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


# =============================================================================
# Spellings of scipy.special functions in generated code (ruled)
# =============================================================================

def expit(x):
    return _special.expit(x)


def logit(x):
    return _special.logit(x)


def erf(x):
    return _special.erf(x)


def erfc(x):
    return _special.erfc(x)


def gammaln(x):
    return _special.gammaln(x)


def digamma(x):
    return _special.digamma(x)


def polygamma(n, x):
    return _special.polygamma(n, x)


def xlogy(x, y):
    return _special.xlogy(x, y)


def logsumexp(a, axis=None, b=None, keepdims=False):
    return _special.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


def softmax(x, axis=None):
    return _special.softmax(x, axis=axis)


def log_softmax(x, axis=None):
    return _special.log_softmax(x, axis=axis)


def beta(a, b):
    return _special.beta(a, b)


def betaln(a, b):
    return _special.betaln(a, b)


def betainc(a, b, x):
    return _special.betainc(a, b, x)


def gamma(x):
    return _special.gamma(x)


def gammasgn(x):
    return _special.gammasgn(x)


def rgamma(x):
    return _special.rgamma(x)


def gammainc(a, x):
    return _special.gammainc(a, x)


def gammaincc(a, x):
    return _special.gammaincc(a, x)


def multigammaln(a, d):
    return _special.multigammaln(a, d)


def jv(v, x):
    return _special.jv(v, x)


def yn(n, x):
    return _special.yn(n, x)


def j0(x):
    return _special.j0(x)


def j1(x):
    return _special.j1(x)


def y0(x):
    return _special.y0(x)


def y1(x):
    return _special.y1(x)


def i0(x):
    return _special.i0(x)


def i1(x):
    return _special.i1(x)


def iv(v, x):
    return _special.iv(v, x)


def ive(v, x):
    return _special.ive(v, x)


def erfinv(x):
    return _special.erfinv(x)


def erfcinv(x):
    return _special.erfcinv(x)


def logsumexp_weights(a, y, axis=None, b=None, keepdims=False):
    """d logsumexp / da: b * exp(a - y) with y expanded back over the reduced axes."""
    e = np.exp(a - expand_reduced(y, a, axis, keepdims))
    if b is None:
        return e
    return b * e


def logsumexp_vjp_b(g, a, y, axis=None, b=None, keepdims=False):
    e = np.exp(a - expand_reduced(y, a, axis, keepdims))
    return unbroadcast(expand_reduced(g, a, axis, keepdims) * e, b)


def softmax_vjp(g, y, axis=None):
    return y * (g - np.sum(g * y, axis=axis, keepdims=True))


def multigammaln_grad(a, d):
    """d multigammaln(a, d) / da: the sum of digamma(a - j / 2) over j = 0 .. d - 1 (elementwise in a)."""
    g = digamma(a)
    for j in range(1, d):
        g = g + digamma(a - 0.5 * j)
    return g


# ----- complex values inside a function, and np.fft (rules/numpy_fft.py) ------------------------
# A function's inputs and outputs are real; complex values may live in between (an FFT, `1j * x`).
# Cotangents follow JAX's convention: the transpose of each op's derivative, paired with dz by
# Re(ct * dz) (no conjugate), so holomorphic rules (`d[a] = d[y] * b`) hold as written and a real
# value's cotangent is the real part of what reaches it.

def cotangent_kind(v, like):
    """v as a cotangent (or tangent) of `like`: its real part for a real `like`, complex for a complex
    one (under jit a variable keeps one dtype).  Ruled."""
    if np.iscomplexobj(like):
        if np.iscomplexobj(v):
            return v
        return v * (1.0 + 0.0j)
    return np.real(v)


def abs_slope(x):
    """The cotangent factor of |x|: np.sign(x) for a real x, s = conj(x) / |x| (0 at 0) for a complex
    x.  Ruled (abs_slope_tangent, abs_slope_vjp): its derivative is 0 for a real x, not for a
    complex one."""
    if np.iscomplexobj(x):
        return np.conj(x) / (np.abs(x) + (x == 0))
    return np.sign(x)


def abs_slope_tangent(x, tx):
    """d abs_slope(x): 0 for a real x; (conj(dz) - s Re(s dz)) / |z| for a complex z (0 at z = 0).
    (Both branches give an array of tx's shape: under jit they must unify.)"""
    if np.iscomplexobj(x):
        s = abs_slope(x)
        return (x != 0) * (np.conj(tx) - s * np.real(s * tx)) / (np.abs(x) + (x == 0))
    return 0.0 * tx


def abs_slope_vjp(g, x):
    """The transpose of abs_slope_tangent (paired by Re(ct * dz)): (conj(g) - Re(g s) s) / |z|."""
    if np.iscomplexobj(x):
        s = abs_slope(x)
        return (x != 0) * (np.conj(g) - np.real(g * s) * s) / (np.abs(x) + (x == 0))
    return 0.0 * g


def angle_slope(z, deg=False):
    """The cotangent factor of np.angle: -1j / z (0 at z = 0), in degrees if deg."""
    zero = z == 0
    s = np.where(zero, 0.0, -1j / np.where(zero, 1.0, z))
    if deg:
        return s * (180.0 / np.pi)
    return s


def fit_axis(x, m, axis):
    """x cut or zero-padded to m entries along axis (what np.fft's n= does to its input).  Ruled
    (linear: its transpose pads or cuts back)."""
    n = np.shape(x)[axis]
    if n == m:
        return x
    moved = np.moveaxis(x, axis, -1)
    if n > m:
        out = moved[..., :m]
    else:
        out = np.concatenate((moved, np.zeros(np.shape(moved)[:-1] + (m - n,), dtype=moved.dtype)), axis=-1)
    return np.moveaxis(out, -1, axis)


def fft_vjp(g, a, n=None, axis=-1, norm=None):
    """Cotangent of a in np.fft.fft(a, n, axis, norm): the DFT matrix is symmetric, so it is the same
    transform of g (n entries), fitted back to a's length."""
    ct = np.fft.fft(g, None, axis, norm)
    return cotangent_kind(fit_axis(ct, np.shape(a)[axis], axis), a)


def ifft_vjp(g, a, n=None, axis=-1, norm=None):
    ct = np.fft.ifft(g, None, axis, norm)
    return cotangent_kind(fit_axis(ct, np.shape(a)[axis], axis), a)


def rfft_vjp(g, a, n=None, axis=-1, norm=None):
    """Cotangent of (real) a in np.fft.rfft: rfft is the first n // 2 + 1 rows of fft, so g padded
    with zeros to n entries, transformed by fft (its n= pads), real part, fitted to a's length."""
    m = np.shape(a)[axis]
    full = m if n is None else n
    ct = np.fft.fft(g, full, axis, norm)
    return np.real(fit_axis(ct, m, axis))


def irfft_weights(n):
    """How often each of the n // 2 + 1 half-spectrum entries counts in np.fft.irfft of length n:
    twice (itself and its conjugate mirror), once for entry 0 and, n even, entry n / 2."""
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[n // 2] = 1.0
    return w


def irfft_vjp(g, a, n=None, axis=-1, norm=None):
    """Cotangent of a in np.fft.irfft(a, n, axis, norm): y_j = scale * sum_k w_k Re(a_k e^(2 pi i jk/n)),
    so ct_k = w_k * ifft(g)_k (same scale); the imaginary parts of entries 0 and n / 2 do not count."""
    m = np.shape(a)[axis]
    full = 2 * (m - 1) if n is None else n
    ct = fit_axis(np.fft.ifft(g, None, axis, norm), full // 2 + 1, axis)
    ct = np.moveaxis(np.moveaxis(ct, axis, -1) * irfft_weights(full), -1, axis)
    return cotangent_kind(fit_axis(ct, m, axis), a)
