"""Library functions as definitions in other ops (composites): NumPy's statistics, polynomial and
linear-algebra functions whose own source is library plumbing (dtype checks, `__array_wrap__`,
`try`/`except` around axis normalisation, `[slice(None)] * ndim`), and SciPy's test functions
whose source goes through its array-API layer.  Each definition is the function's mathematics for
real arrays, written with ops that have rules, so grad, jvp, vmap and jit all follow; arguments a
definition does not cover are refused when the code runs (check_unset), never ignored.

(NumPy 2's functions are dispatcher objects; frontend/inlining.py reads the function inside one
that has no definition here.)
"""
from __future__ import annotations

import numpy as np

from ...runtime import check_unset
from ...rules.registry import register_composite


def ptp(a, axis=None, out=None, keepdims=False):
    check_unset(out, "np.ptp's out=")
    return np.max(a, axis=axis, keepdims=keepdims) - np.min(a, axis=axis, keepdims=keepdims)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    # variables in rows (rowvar), observations in columns; the centred product over n - ddof
    check_unset(fweights, "np.cov's fweights=")
    check_unset(aweights, "np.cov's aweights=")
    x = np.atleast_2d(m)
    if not rowvar and np.shape(x)[0] != 1:
        x = np.transpose(x)
    if y is not None:
        other = np.atleast_2d(y)
        if not rowvar and np.shape(other)[0] != 1:
            other = np.transpose(other)
        x = np.concatenate((x, other), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    centred = x - np.mean(x, axis=1, keepdims=True)
    c = (centred @ np.transpose(centred)) / (np.shape(x)[1] - ddof)
    return np.squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = np.cov(x, y, rowvar)
    if np.ndim(c) == 0:
        return c / c
    s = np.sqrt(np.diagonal(c))
    return np.clip(c / s[:, None] / s[None, :], -1.0, 1.0)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    # the trapezoid rule along `axis` (moved last): steps dx, or the differences of x (1-d along
    # that axis, or y's shape)
    ym = np.moveaxis(y, axis, -1)
    if x is None:
        steps = dx
    elif np.ndim(x) == 1:
        steps = x[1:] - x[:-1]
    else:
        xm = np.moveaxis(x, axis, -1)
        steps = xm[..., 1:] - xm[..., :-1]
    return np.sum(steps * (ym[..., 1:] + ym[..., :-1]) / 2.0, axis=-1)


def polyval(p, x):
    # Horner's scheme, as NumPy evaluates it (the coefficients highest power first)
    coefficients = np.asarray(p)
    y = np.zeros_like(x) * 1.0
    for k in range(np.shape(coefficients)[0]):
        y = y * x + coefficients[k]
    return y


def vander(x, N=None, increasing=False):
    # columns 1, x, x**2, ... as a running product (no 0 ** 0 whose derivative would be 0 * inf)
    n = np.shape(x)[0]
    columns = n if N is None else N
    repeated = np.repeat(np.reshape(x, (n, 1)) * 1.0, columns - 1, axis=1)
    v = np.cumprod(np.concatenate((np.ones((n, 1)), repeated), axis=1), axis=1)
    if not increasing:
        v = v[:, ::-1]
    return v


def matrix_power(a, n):
    # n products (of the inverse for n < 0), starting from the identity
    if n < 0:
        base = np.linalg.inv(a)
    else:
        base = a
    result = np.broadcast_to(np.eye(np.shape(a)[-1]), np.shape(a)) * 1.0
    for _ in range(abs(n)):
        result = result @ base
    return result


def multi_dot(arrays, *, out=None):
    # left to right (NumPy picks the cheapest order: the same product, rounded differently)
    check_unset(out, "np.linalg.multi_dot's out=")
    result = arrays[0]
    for a in arrays[1:]:
        result = result @ a
    return result


def real_if_close(a, tol=100):
    return a         # (a real array is returned as it is; complex arrays are refused elsewhere)


def convolve(a, v, mode="full"):
    # every product a[i] v[k - i] as a matrix of gathered v (zero outside it) times a, then the
    # part `mode` keeps
    n, m = np.shape(a)[0], np.shape(v)[0]
    lags = np.arange(n + m - 1)[:, None] - np.arange(n)[None, :]
    inside = (lags >= 0) & (lags < m)
    full = np.where(inside, v[np.clip(lags, 0, m - 1)], 0.0) @ a
    if mode == "full":
        return full
    if mode == "same":
        length = max(n, m)
        start = (n + m - 1 - length) // 2
    elif mode == "valid":
        length = max(n, m) - min(n, m) + 1
        start = min(n, m) - 1
    else:
        raise ValueError(f"np.convolve: mode must be 'full', 'same' or 'valid', not {mode!r}")
    return full[start:start + length]


def lstsq(a, b, rcond=None):
    # the minimum-norm solution (the pseudo-inverse's), NumPy's residuals (empty unless a has full
    # column rank and more rows than columns), rank and singular values
    x = np.linalg.pinv(a) @ b
    s = np.linalg.svd(a, compute_uv=False)
    rows, cols = np.shape(a)[0], np.shape(a)[1]
    cutoff = (2.220446049250313e-16 * max(rows, cols) if rcond is None else rcond) * s[0]     # (eps of float64)
    rank = int(np.sum(s > cutoff))
    r = a @ x - b
    residuals = np.reshape(np.sum(r * r, axis=0), (-1,))
    if rank < cols or rows <= cols:
        residuals = residuals[:0]
    return x, residuals, rank, s


def cumulative_sum(x, axis=None, dtype=None, out=None, include_initial=False):
    check_unset(out, "np.cumulative_sum's out=")
    along = 0 if axis is None else axis
    c = np.cumsum(x, axis=along)
    if include_initial:         # (a zero first along the axis)
        moved = np.moveaxis(c, along, 0)
        c = np.moveaxis(np.concatenate((np.zeros_like(moved[:1]), moved), axis=0), 0, along)
    return c


def vecdot(x1, x2, axis=-1):
    return np.sum(x1 * x2, axis=axis)


def vector_norm(x, axis=None, keepdims=False, ord=2):
    # (np.linalg.norm with a pair of axes is a matrix norm: a tuple of axes is refused)
    if isinstance(axis, tuple):
        raise NotImplementedError("s2s: np.linalg.vector_norm over several axes is not supported; "
                                  "reshape them into one")
    if axis is None:
        if keepdims:
            raise NotImplementedError("s2s: np.linalg.vector_norm with axis=None and keepdims=True is not "
                                      "supported")
        return np.linalg.norm(np.reshape(x, (-1,)), ord)
    return np.linalg.norm(x, ord, axis, keepdims)


def matrix_norm(x, keepdims=False, ord="fro"):
    return np.linalg.norm(x, ord, (-2, -1), keepdims)


def linalg_diagonal(x, offset=0):
    return np.diagonal(x, offset, -2, -1)


def linalg_trace(x, offset=0, dtype=None):
    return np.trace(x, offset, -2, -1)


def matrix_transpose(x):
    return np.swapaxes(x, -1, -2)


def asanyarray(a, dtype=None, order=None, *, like=None):
    return np.asarray(a, dtype)


for _fn, _definition in ((np.ptp, ptp), (np.cov, cov), (np.corrcoef, corrcoef), (np.polyval, polyval),
                         (np.vander, vander), (np.linalg.matrix_power, matrix_power),
                         (np.linalg.multi_dot, multi_dot), (np.real_if_close, real_if_close),
                         (np.convolve, convolve), (np.linalg.lstsq, lstsq), (np.asanyarray, asanyarray)):
    register_composite(_fn, _definition)
for _name, _definition in (("trapezoid", trapezoid), ("trapz", trapezoid), ("cumulative_sum", cumulative_sum),
                           ("vecdot", vecdot)):
    if hasattr(np, _name):
        register_composite(getattr(np, _name), _definition)
for _name, _definition in (("vector_norm", vector_norm), ("matrix_norm", matrix_norm), ("vecdot", vecdot),
                           ("diagonal", linalg_diagonal), ("trace", linalg_trace),
                           ("matrix_transpose", matrix_transpose)):
    if hasattr(np.linalg, _name):
        register_composite(getattr(np.linalg, _name), _definition)
