"""Op helpers of the reduction rules (s2s/ops/reductions/rules.py, and ops/composite/rules.py's quantiles).

Bookkeeping of reduced axes (kept_shape, reduce_perm, reduce_flat_shape), of np.var / np.std
(var_dof), np.average's weights and np.linalg.norm (norm_kind and its axes), and the adjoints and
tangents of np.std, np.cumsum, np.cumprod, np.prod (prod_except), np.average and
np.linalg.norm (norm_grad), and quantile_weights for np.quantile / np.percentile / np.median.

Every public function here is called by name from generated code and is bookkeeping, readable or
ruled (the three kinds: rules/__init__.py).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...runtime import expand_reduced, inverse_axes, reduced_size, unbroadcast
from ..linalg.helpers import eye_like, svdvals_vjp
from ..shape.helpers import pad_width_along


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
    if kind == "two":      # 0 at x = 0, the apex of the cone (as |x|: docs/conventions.md)
        return x / np.where(ye == 0.0, np.inf, ye)
    if kind == "vec_one":
        return np.sign(x)
    if kind == "vec_zero":
        return np.zeros(np.shape(x))
    ax = np.abs(x)
    if kind == "vec_inf":
        return np.sign(x) * norm_hits(ax, ye, axis)
    if kind == "vec_p":
        return np.sign(x) * (ax / np.where(ye == 0.0, np.inf, ye)) ** (ord - 1.0)
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


# ----- np.quantile / np.percentile / np.median (s2s/ops/composite/rules.py) --------------------------

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
