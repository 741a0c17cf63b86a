"""Ops defined by other ops: a short NumPy definition s2s inlines as it inlines the user's helpers.

Each function below computes what the NumPy (or builtin, or `operator`) function it stands for
computes, with operations that have rules.  Their derivatives, tangents, batching rules and
Numba lowering follow from that definition: nothing else to write, nothing to get out of step.
A definition is only right for the argument forms it accepts; the others fail in NumPy itself
(the same error the user's call would give) or are refused by the ops it uses.

Helpers take positional-or-keyword parameters only (the inliner binds them by signature).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ...runtime import check_rank, check_unset
from ..linalg.helpers import eig_values, eig_vectors
from ..reductions.helpers import kept_shape, quantile_weights, reduce_flat_shape, reduce_perm
from ...rules.registry import adjoint, register_composite, tangent


def append(arr, values, axis=None):
    if axis is None:
        out = np.concatenate((np.ravel(arr), np.ravel(values)))
    else:
        out = np.concatenate((arr, values), axis=axis)
    return out


def rollaxis(a, axis, start=0):
    n = np.ndim(a)
    if axis < 0:
        axis = axis + n
    if start < 0:
        start = start + n
    if start > axis:
        start = start - 1
    return np.moveaxis(a, axis, start)


def row_stack(tup):
    return np.vstack(tup)


def vsplit(ary, indices_or_sections):
    return np.split(ary, indices_or_sections, axis=0)


def hsplit(ary, indices_or_sections):
    return np.split(ary, indices_or_sections, axis=min(np.ndim(ary) - 1, 1))


def dsplit(ary, indices_or_sections):
    return np.split(ary, indices_or_sections, axis=2)


def meshgrid(x, y, z=None, copy=True, sparse=False, indexing="xy"):
    # (two coordinate vectors, dense grids: the grids are copies of broadcasts, so the cotangent of
    # each vector is its grid's cotangent summed over the other axis. Three vectors would return a
    # tuple of another length from the same definition, which s2s cannot type: refused.)
    check_unset(z, "np.meshgrid of three or more arrays (two are; build a 3-D grid with broadcasting)")
    if sparse:
        check_unset(sparse, "np.meshgrid with sparse=True")
    xr = np.ravel(x)
    yr = np.ravel(y)
    if indexing == "xy":
        shape = (yr.shape[0], xr.shape[0])
        return np.copy(np.broadcast_to(xr[np.newaxis, :], shape)), np.copy(np.broadcast_to(yr[:, np.newaxis], shape))
    shape = (xr.shape[0], yr.shape[0])
    return np.copy(np.broadcast_to(xr[:, np.newaxis], shape)), np.copy(np.broadcast_to(yr[np.newaxis, :], shape))


_LARGEST = float(np.finfo(np.float64).max)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    # the derivative is 1 where x is finite and 0 where it was replaced (a constant)
    big = _LARGEST
    if posinf is not None:
        big = posinf
    small = -_LARGEST
    if neginf is not None:
        small = neginf
    return np.where(np.isnan(x), nan, np.where(x == np.inf, big, np.where(x == -np.inf, small, x)))


def fftshift(x, axes=None):
    # (one axis as an int; several as a tuple are refused by np.shape(x)[axes])
    if axes is None:
        for ax in range(np.ndim(x)):
            x = np.roll(x, np.shape(x)[ax] // 2, axis=ax)
    else:
        x = np.roll(x, np.shape(x)[axes] // 2, axis=axes)
    return x


def ifftshift(x, axes=None):
    if axes is None:
        for ax in range(np.ndim(x)):
            x = np.roll(x, -(np.shape(x)[ax] // 2), axis=ax)
    else:
        x = np.roll(x, -(np.shape(x)[axes] // 2), axis=axes)
    return x


def select(condlist, choicelist, default=0):
    # the first condition that holds picks its choice: apply them from the last to the first
    n = len(condlist)
    out = np.where(condlist[n - 1], choicelist[n - 1], default)
    for k in range(n - 2, -1, -1):
        out = np.where(condlist[k], choicelist[k], out)
    return out


def pinv(a, rcond=None, hermitian=False):
    # np.linalg.pinv through the SVD (its own definition): singular values at most rcond * the
    # largest count as zero, and so do their derivatives
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    cut = 1e-15 * max(np.shape(a)[-2:])
    if rcond is not None:
        cut = rcond
    keep = s > cut * np.max(s, axis=-1, keepdims=True)
    s_inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    return np.matmul(np.swapaxes(vt, -1, -2) * s_inv[..., None, :], np.swapaxes(u, -1, -2))


def gradient(f, spacing=1.0):
    # np.gradient of a 1-d array with edge_order=1 (its default), spacing a number (uniform) or the
    # points' coordinates (a 1-d array as long as f): NumPy's second-order differences for uneven
    # steps inside, one-sided at the ends; other ranks and options are refused.  (No branch on
    # spacing's rank: compiled code types both sides of one.)
    check_rank(f, 1, "np.gradient")
    x = np.broadcast_to(spacing, np.shape(f)) * 1.0
    dx = np.where(np.ndim(spacing) == 0, x[:-1], x[1:] - x[:-1])
    d1 = dx[:-1]
    d2 = dx[1:]
    inner = (-d2 / (d1 * (d1 + d2))) * f[:-2] + ((d2 - d1) / (d1 * d2)) * f[1:-1] + (d1 / (d2 * (d1 + d2))) * f[2:]
    first = (f[1:2] - f[0:1]) / dx[0:1]
    last = (f[-1:] - f[-2:-1]) / dx[-1:]
    return np.concatenate((first, inner, last))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    # NumPy's default ('linear') method: the reduced axes moved last and flattened into one, sorted;
    # the two order statistics around q (n - 1) interpolated (quantile_weights: 1 - f and f, and no
    # derivative in q).  A NaN sorts last and makes the quantile NaN, as in NumPy.  (weights= fails
    # to bind: refused at the call.)
    s = np.sort(np.reshape(np.transpose(a, reduce_perm(a, axis)), reduce_flat_shape(a, axis)), axis=-1)
    w = quantile_weights(q, np.shape(s), method)
    parts = np.where(w != 0.0, s * w, 0.0)
    total = np.reshape(np.sum(parts, axis=-1, keepdims=True), np.shape(parts)[:-1])
    y = total + np.where(np.isnan(s[..., -1]), np.nan, 0.0)
    shape = np.shape(y)
    if keepdims:
        shape = np.shape(q) + kept_shape(a, axis)
    return np.reshape(y, shape)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return np.quantile(a, np.asarray(q) / 100.0, axis, None, overwrite_input, method, keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return np.quantile(a, 0.5, axis, None, overwrite_input, "linear", keepdims)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    # the permutation np.argpartition finds, applied to a (its derivative sends the cotangent back)
    return np.take_along_axis(a, np.argpartition(a, kth, axis=axis, kind=kind, order=order), axis=axis)


def eig(a):
    # real matrices with real eigenvalues only (complex ones are refused at run time); a tuple of
    # two ops of one array each: the values' second derivatives stay exact, vmap stacks each
    return (eig_values(a), eig_vectors(a))


def eigvals(a):
    return eig_values(a)


def sum_(iterable, start=0):
    # builtin sum of an array adds its rows; of a list, its elements (np.sum stacks them first)
    return np.sum(iterable, axis=0) + start


def pow_(base, exp, mod=None):
    out = base ** exp
    if mod is not None:
        out = np.mod(out, mod)
    return out


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def truediv(a, b):
    return a / b


def mod(a, b):
    return a % b


def neg(a):
    return -a


def pos(a):
    return +a


def matmul(a, b):
    return a @ b


register_composite(np.append, append)
register_composite(np.meshgrid, meshgrid)
register_composite(np.rollaxis, rollaxis)
if hasattr(np, "row_stack"):
    register_composite(np.row_stack, row_stack)
register_composite(np.vsplit, vsplit)
register_composite(np.hsplit, hsplit)
register_composite(np.dsplit, dsplit)
register_composite(np.nan_to_num, nan_to_num)
register_composite(np.select, select)
register_composite(np.linalg.pinv, pinv)
register_composite(np.gradient, gradient)
register_composite(np.quantile, quantile)
register_composite(np.percentile, percentile)
register_composite(np.median, median)
register_composite(np.partition, partition)
register_composite(np.linalg.eig, eig)
register_composite(np.linalg.eigvals, eigvals)
register_composite(np.fft.fftshift, fftshift)
register_composite(np.fft.ifftshift, ifftshift)
register_composite(builtins.pow, pow_)
register_composite(builtins.sum, sum_)
for _fn, _impl in ((operator.add, add), (operator.sub, sub), (operator.mul, mul), (operator.truediv, truediv),
                   (operator.mod, mod), (operator.neg, neg), (operator.pos, pos), (operator.pow, pow_),
                   (operator.matmul, matmul)):
    register_composite(_fn, _impl)


# np.quantile's weights: no derivative in q (quantiles are differentiated in the data only).
@adjoint(quantile_weights, "quantile_weights", shape_only=("shape", "method"))
def quantile_weights_rule(y, q, shape, method="linear"):
    """q is not differentiated: an active q is refused (NonDifferentiableError)."""


@tangent(quantile_weights, shape_only=("shape", "method"))
def quantile_weights_rule_(y, q, shape, method="linear"):
    """q is not differentiated: an active q is refused (NonDifferentiableError)."""


def cond(x, p=None):
    """np.linalg.cond: the ratio of extreme singular values (p None, 2, -2), else ||x|| ||x^-1||."""
    # (one return: a cotangent defined on every path, as Numba needs)
    if p is None or p == 2 or p == -2:
        s = np.linalg.svd(x, compute_uv=False)
        if p == -2:
            out = s[..., -1] / s[..., 0]
        else:
            out = s[..., 0] / s[..., -1]
    else:
        out = np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1))
    return out


register_composite(np.linalg.cond, cond)


def interp(x, xp, fp, left=None, right=None, period=None):
    """np.interp (increasing xp, no period): the segment holding x, found by searchsorted (no
    derivative), then its line through (xp[i-1], fp[i-1]) and (xp[i], fp[i]): derivatives in x
    (the slope), xp and fp (the line's ends); left/right beyond the ends (fp's first and last)."""
    check_unset(period, "np.interp with period=")
    i = np.clip(np.searchsorted(xp, x, side="right"), 1, len(xp) - 1)
    x0 = xp[i - 1]
    f0 = fp[i - 1]
    y = f0 + (x - x0) * ((fp[i] - f0) / (xp[i] - x0))
    low = fp[0] if left is None else left
    high = fp[-1] if right is None else right
    return np.where(x < xp[0], low, np.where(x > xp[-1], high, y))


register_composite(np.interp, interp)     # (was registered without a derivative: a silent zero)
