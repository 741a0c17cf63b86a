"""Differentiable test corpus for s2s: plain NumPy functions and their inputs.

Every function is defined at module level (or returned by a module-level
factory, for closures) so that ``inspect.getsource`` finds it. Nothing here
imports s2s: each function must run, and be checked, under plain NumPy.

Registries (each ``args_factory(rng)`` returns a fresh tuple of float64 inputs,
kept away from points where the function is not differentiable, so that central
finite differences with steps of ~1e-6 are valid):

* ``CASES``         ``(fn, args_factory, argnums)``, ``fn`` returns a scalar.
* ``AUX_CASES``     ``(fn, args_factory, argnums)``, ``fn`` returns ``(scalar, aux)``.
* ``VJP_CASES``     ``(fn, args_factory)``, ``fn`` returns an array; checked with ``s2s.vjp``.
* ``SCALAR_CASES``  ``(fn, args_factory, argnum)``, ``args[argnum]`` is a float and
  ``fn`` is smooth in it near the inputs, for second derivatives
  (``grad(grad(f))``); each function also appears in ``CASES``.

The ``@s2s.grad`` decorator case lives in ``corpus_decorated.py``: it needs s2s at
import time, and this module must import without the compiler.
"""
from __future__ import annotations

import numpy as np


# ---------------------------------------------------------------------------
# Input helpers (not under test)
# ---------------------------------------------------------------------------

def _u(rng, lo, hi, shape=None):
    if shape is None:
        return float(rng.uniform(lo, hi))
    return rng.uniform(lo, hi, size=shape)


def _away(rng, lo, hi, shape=None, points=(0.0,), margin=0.1):
    """Uniform samples in [lo, hi] at least ``margin`` away from every point."""
    out = np.asarray(rng.uniform(lo, hi, size=shape), dtype=np.float64)
    for _ in range(1000):
        bad = np.zeros(out.shape, dtype=bool)
        for p in points:
            bad |= np.abs(out - p) < margin
        if not bad.any():
            break
        out = np.where(bad, rng.uniform(lo, hi, size=out.shape), out)
    else:  # pragma: no cover - sampling ranges are chosen so this never happens
        raise RuntimeError("could not sample away from kinks")
    return float(out) if shape is None else out


def _nonzero(rng, shape, lo=0.2, hi=1.5):
    """Entries with random sign and magnitude in [lo, hi] (away from 0)."""
    signs = np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0)
    return signs * rng.uniform(lo, hi, size=shape)


def _distinct(rng, shape, gap=0.05):
    """Random values whose pairwise gaps are all >= ``gap`` (no ties for max/min)."""
    n = int(np.prod(shape))
    steps = rng.uniform(gap, 3 * gap, size=n)
    vals = np.cumsum(steps) - np.sum(steps) / 2.0
    return rng.permutation(vals).reshape(shape)


def _pm1(rng, n):
    return np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)


# ---------------------------------------------------------------------------
# Helper functions called by corpus functions (also module level)
# ---------------------------------------------------------------------------

def _h_square_sum(x):
    return np.sum(x * x)


def _h_affine(x, w, b):
    return x * w + b


def _h_chain(x):
    # a helper calling another helper
    return _h_square_sum(np.sin(x)) + 1.0


def _h_early(v):
    # a helper with an early return
    if v > 0:
        return v * 2.0
    return -v * v


def _h_pair(x):
    # a helper returning a tuple
    return np.sin(x), np.cos(x)


def _h_sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _h_logsumexp_rows(z):
    m = np.max(z, axis=1, keepdims=True)
    return m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))


def _h_step(y, k):
    return -k * y + np.sin(y)


# ---------------------------------------------------------------------------
# Arithmetic, constants, comparisons, augmented assignment, unpacking
# ---------------------------------------------------------------------------

def arith_scalar_two_args(x, y):
    return x * y + x - y / 2.0 + 3.0


def arith_rational(x):
    return x ** 3 / (1.0 + x ** 2)


def arith_unary_minus(x):
    y = -x
    return -np.sum(y * x) + np.sum(-(x ** 2) * 0.5)


def arith_int_constants(x):
    return 3 * x ** 2 + 2 * x + 1 + x / 4 - 7


def arith_reflected_ops(x):
    return np.sum(1.0 / x + (2.0 - x) * 3 + 2 ** x)


def arith_fractional_power(x):
    return np.sum(x ** 1.5 + x ** -0.5)


def arith_array_exponent(x, y):
    return np.sum(x ** y)


def arith_matmul_operator(A, x):
    r = A @ x
    return np.sum(r * r)


def arith_if_sign(x):
    if x > 0:
        return x ** 2 + np.sin(x)
    else:
        return -x ** 3


def arith_augassign_scalar(x):
    s = 1.0
    s += x
    s *= x
    s -= 0.5 * x
    s /= 2.0
    s **= 2
    return s


def arith_augassign_array(x):
    y = x * 1.0
    y += 2.0 * x
    y *= x
    y -= np.sin(x)
    y /= 1.5
    return np.sum(y)


def arith_tuple_unpack_swap(x, y):
    a, b = x * y, x + y
    a, b = b, a
    (c, d), e = (a - b, a * b), 2.0
    return a * b ** 2 + c * d * e


def arith_chained_comparison(x):
    s = 0.0
    for i in range(x.shape[0]):
        if 0.0 < x[i] < 1.0:
            s = s + x[i] ** 2
        elif -1.0 <= x[i] <= 0.0:
            s = s + np.sin(x[i])
        else:
            s = s + 3.0 * x[i]
    return s


def arith_comparison_mask(x):
    m = (x > 0.3) * 1.0
    n = np.where(x < -0.3, 1.0, 0.0)
    return np.sum(m * x ** 2 + n * x ** 3)


def arith_bool_ops(x, y):
    if x > 0 and y > 0:
        return x * y
    elif x > 0 or y > 0:
        return x + y
    return _h_sum_of_squares(x, y)


def _h_sum_of_squares(x, y):
    return x * x + y * y


def arith_is_none_default(x, scale=None):
    if scale is None:
        scale = 2.0
    return np.sum(scale * x ** 2)


# ---------------------------------------------------------------------------
# Elementwise NumPy functions and broadcasting
# ---------------------------------------------------------------------------

def ew_sin_cos(x):
    return np.sum(np.sin(x) * np.cos(2.0 * x))


def ew_tan(x):
    return np.sum(np.tan(x) ** 2)


def ew_exp_log(x):
    return np.sum(np.exp(-x) * np.log(x))


def ew_sqrt(x):
    return np.sum(np.sqrt(x) / (1.0 + x))


def ew_tanh(x):
    return np.mean(np.tanh(x) ** 2)


def ew_abs(x):
    return np.sum(np.abs(x) * x + np.abs(x - 2.5))


def ew_maximum(x, y):
    return np.sum(np.maximum(x, y) ** 2)


def ew_relu(x):
    return np.sum(np.maximum(x, 0.0) * np.cos(x))


def ew_minimum(x, y):
    return np.sum(np.minimum(x, y) * y)


def ew_where(x):
    return np.sum(np.where(x > 0.0, np.exp(x), x ** 2))


def ew_power(x):
    return np.sum(np.power(x, 3.0) + np.power(x, 0.5))


def ew_power_both(x, y):
    return np.sum(np.power(x, y))


def ew_arctan(x):
    return np.sum(np.arctan(2.0 * x) * x)


def ew_log1p_expm1(x):
    return np.sum(np.log1p(x ** 2) + np.expm1(x))


def ew_square(x):
    return np.sum(np.square(x - 1.0))


def ew_softplus(x):
    return np.sum(np.log1p(np.exp(x)))


def ew_sigmoid_helper(x):
    return np.sum(_h_sigmoid(3.0 * x) * x)


def ew_composite(x):
    return np.sum(np.exp(np.sin(x)) * np.sqrt(1.0 + x * x))


def bc_matrix_row(A, b):
    return np.sum(np.sin(A + b))


def bc_matrix_column(A, c):
    return np.sum((A * c) ** 2)


def bc_scalar(A, s):
    return np.sum((A - s) ** 2 * s)


def bc_row_minus_column(r, c):
    return np.sum(np.exp(-(r - c) ** 2))


def bc_outer_vectors(x, y):
    return np.sum(np.tanh(x[:, None] * y[None, :]))


# ---------------------------------------------------------------------------
# Reductions and array methods
# ---------------------------------------------------------------------------

def red_sum_axis0(X):
    return np.sum(np.sum(X, axis=0) ** 2)


def red_sum_axis1_keepdims(X):
    s = np.sum(X, axis=1, keepdims=True)
    return np.sum((X - s) ** 2)


def red_mean_axis(X):
    m = np.mean(X, axis=0)
    return np.sum(np.sin(m)) + np.mean(X ** 2)


def red_mean_keepdims_variance(X):
    centered = X - np.mean(X, axis=1, keepdims=True)
    return np.sum(np.mean(centered ** 2, axis=1))


def red_max(X):
    return np.max(X) + np.sum(np.max(X, axis=1)) + np.sum(np.max(X, axis=0, keepdims=True) ** 2)


def red_min(X):
    return np.min(X) * 2.0 + np.sum(np.min(X, axis=0) * np.min(X, axis=1, keepdims=True))


def red_prod(x):
    return np.prod(x)


def red_prod_axis(X):
    return np.sum(np.prod(X, axis=0)) + np.sum(np.prod(X, axis=1, keepdims=True) ** 2)


def red_sum_axis_none(X):
    return np.sum(X, axis=None) * np.mean(X, axis=None)


def meth_sum(X):
    return X.sum() * 2.0 + (X ** 2).sum(axis=1).sum() + X.sum(axis=0, keepdims=True).sum()


def meth_mean_max(X):
    return X.mean() + X.max() + X.max(axis=0).sum() + X.min()


def meth_reshape_transpose(X):
    Y = X.reshape(4, 3)
    return np.sum(Y.T * X)


def meth_reshape_flat(X):
    v = X.reshape(-1)
    return v @ v + X.T.sum(axis=1) @ X.sum(axis=0)


def meth_prod(x):
    return x.prod() + np.sin(x).mean()


# ---------------------------------------------------------------------------
# Linear algebra, reshape, transpose
# ---------------------------------------------------------------------------

def la_dot_vv(x, y):
    return np.dot(x, y) * np.dot(x, x)


def la_dot_mv(A, x):
    return np.sum(np.dot(A, x) ** 2)


def la_dot_mm(A, B):
    return np.sum(np.tanh(np.dot(A, B)))


def la_matmul_mm(A, B):
    return np.sum(np.matmul(A, B) ** 2)


def la_matmul_mv(A, x):
    return np.sum(np.sin(np.matmul(A, x)))


def la_at_vv(x, y):
    return (x @ y) ** 2 + x @ x


def la_at_vm(x, A):
    return np.sum(np.sin(x @ A))


def la_at_mm(A, B):
    C = A @ B
    return np.sum(C @ C.T)


def la_quadratic_form(A, x):
    return x @ A @ x


def la_np_reshape(x):
    M = np.reshape(x, (3, 4))
    w = np.arange(4.0)
    return np.sum(np.tanh(M @ w))


def la_np_transpose(A):
    return np.sum(np.transpose(A) @ A)


def la_transpose_axes(T):
    P = np.transpose(T, (2, 0, 1))
    W = np.arange(24.0).reshape(4, 2, 3) / 10.0
    return np.sum(P * W) + np.sum(np.sin(P))


# ---------------------------------------------------------------------------
# Indexing reads
# ---------------------------------------------------------------------------

def idx_int(x):
    return x[2] * x[0] + x[-1] ** 2


def idx_slices(x):
    return np.sum(x[1:3] ** 2) + np.sum(x[::2] * 3.0) + np.sum(x[1::3]) + np.sum(x[:-2] * x[2:])


def idx_reverse(x):
    return x[::-1] @ np.arange(x.shape[0] * 1.0) + x[::-1][0]


def idx_row_loop(X):
    s = 0.0
    for i in range(X.shape[0]):
        s = s + np.sum(X[i, :] * (i + 1.0)) ** 2
    return s


def idx_column(X):
    return X[:, 1] @ X[:, 2] + X[1, 2] * X[0, 0]


def idx_ellipsis(T):
    return np.sum(T[..., 1] ** 2) + np.sum(T[0, ...])


def idx_newaxis(x):
    return np.sum(x[:, None] * x[None, :] ** 2)


def idx_2d_slices(X):
    return np.sum(X[1:, :2] ** 2) + np.sum(X[::2, ::-1] * X[0])


# ---------------------------------------------------------------------------
# Indexing writes on arrays created inside the function
# ---------------------------------------------------------------------------

def iw_zeros_set(x):
    y = np.zeros(3)
    y[0] = x[1] * 2.0
    y[2] = np.sin(x[0])
    return np.sum(y * y) + y[1]


def iw_zeros_add(x):
    y = np.zeros(4)
    for i in range(4):
        y[i] += x[i] ** 2
        y[i] += x[i]
    return np.sum(y * x)


def iw_slice_set(x):
    y = np.zeros(6)
    y[0:3] = x[1:4]
    y[3:6] = x[0:3] ** 2
    return np.sum(np.sin(y))


def iw_zeros_like(x):
    y = np.zeros_like(x)
    y[1:] = x[:-1] * x[1:]
    y[0] = x[0]
    return np.sum(y ** 2)


def iw_copy_overwrite(x):
    y = np.copy(x)
    y[0] = 3.0 * x[1]
    return np.sum(y * x)


def iw_copy_method(x):
    y = x.copy()
    y[1:3] = 0.0
    y[-1] *= 2.0
    return np.sum(y * np.exp(x))


def iw_empty_filled(x):
    n = x.shape[0]
    y = np.empty(n)
    for i in range(n):
        y[i] = x[i] * (i + 1.0)
    return np.sum(y ** 2)


def iw_overwrite_used_value(x):
    y = np.zeros(2)
    y[0] = x[0]
    s = y[0] * y[0]
    y[0] = x[1]
    return s + y[0]


def iw_overwrite_in_loop(x):
    y = np.zeros(2)
    s = 0.0
    for i in range(x.shape[0]):
        y[0] = x[i] * y[1] + x[i]
        y[1] = np.tanh(y[0])
        s = s + y[1] * y[0]
    return s


def iw_rows_of_matrix(x):
    M = np.zeros((3, 4))
    M[0, :] = x
    M[1] = x ** 2
    M[2, 1:3] = x[0:2]
    return np.sum(M @ M.T)


def iw_cumsum_loop(x):
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(n):
        out[i] = np.sum(x[: i + 1])
    return np.sum(out * out)


def iw_derived_array(x):
    y = x * 2.0
    y[0] = 0.0
    y[2] += x[1] * x[3]
    return np.sum(y ** 2)


def iw_matrix_nested_loops(x):
    n = x.shape[0]
    M = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            M[i, j] = x[i] * x[j] + (i - j) * 0.1
    return np.sum(np.sin(M))


def iw_scaled_row_update(X):
    Y = np.zeros_like(X)
    for i in range(X.shape[0]):
        Y[i] = X[i] / np.sum(X[i] ** 2)
    Y[0] *= 3.0
    return np.sum(Y * X)


def iw_accumulate_repeated_index(x):
    y = np.zeros(2)
    for i in range(x.shape[0]):
        y[i % 2] += x[i] * x[i]
    return y[0] * y[1]


# ---------------------------------------------------------------------------
# Control flow
# ---------------------------------------------------------------------------

def cf_if_on_sum(x):
    if np.sum(x) > 0:
        return np.sum(x ** 2)
    else:
        return np.sum(np.sin(x))


def cf_if_on_sum_negative(x):
    if np.sum(x) > 0:
        y = x ** 2
    else:
        y = np.sin(x) * 3.0
    return np.sum(y)


def cf_if_elif_else(x):
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if v < -1.0:
            y = v ** 2
        elif v < 1.0:
            y = np.sin(v)
        else:
            y = np.exp(-v)
        s = s + y * v
    return s


def cf_if_no_else(x):
    y = x * 2.0
    if np.max(x) > 0.5:
        y = y * x
    return np.sum(y)


def cf_for_range(x):
    s = 1.0
    for i in range(x.shape[0]):
        s = s * np.cos(x[i]) + x[i]
    return s


def cf_range_start_stop_step(x):
    s = 0.0
    for i in range(1, x.shape[0], 2):
        s += x[i] * x[i - 1]
    return s


def cf_range_negative_step(x):
    s = 0.0
    for i in range(x.shape[0] - 1, -1, -1):
        s = s * 0.5 + x[i]
    return s * s


def cf_for_rows(X):
    s = 0.0
    for row in X:
        s = s + np.sum(np.tanh(row)) * row[0]
    return s


def cf_for_elements(x):
    s = 0.0
    for v in x:
        s = s * v + 1.0
    return s


def cf_nested_loops(X):
    s = 0.0
    for i in range(3):
        for j in range(4):
            s = s + X[i, j] * X[j % 3, i] * 0.5
    return s


def cf_while_data_dependent(x):
    s = 1.0
    while s < 10.0:
        s = s * 1.5 + x
    return s


def cf_while_counter(x):
    i = 0
    s = 0.0
    while i < x.shape[0]:
        s = s + x[i] ** 2 * (i + 1)
        i += 1
    return s


def cf_while_true_break(x):
    i = 0
    s = x
    while True:
        s = np.sin(s) + 0.5 * x
        i += 1
        if i >= 5:
            break
    return s


def cf_break(x):
    s = 0.0
    for i in range(x.shape[0]):
        if s > 2.0:
            break
        s = s + x[i] ** 2
    return s


def cf_continue(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        s = s + np.log(1.0 + x[i]) * x[i]
    return s


def cf_early_return_branch(x):
    if x[0] > 0:
        return np.sum(x ** 3)
    y = np.exp(x)
    return np.sum(y)


def cf_early_return_in_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        if s > 1.5:
            return s * s
    return -s


def cf_rnn(W, U, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def cf_branchy_recurrence(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s * 0.999 + np.sin(x[i]) * x[i]
        else:
            s = s * 0.998 - x[i] ** 2
    return s


def cf_overwrite_in_loop(x):
    y = x
    for _ in range(5):
        y = y * 0.5 + np.sin(y)
    return np.sum(y)


def cf_loop_scalar_branch(x):
    s = 1.0
    for _ in range(4):
        if x > 0.5:
            s = s * x
        else:
            s = s + x ** 2
    return s


def cf_loop_powers(x):
    s = 0.0
    for k in range(6):
        s = s + x ** k / (k + 1.0)
    return s


def cf_loop_bound_from_data(x):
    # the trip count depends on a value, not on a shape
    n = int(np.sum(x > 0.0))
    s = 0.0
    for i in range(n):
        s = s + x[i] * x[i + 1]
    return s


# ---------------------------------------------------------------------------
# Helper calls and closures
# ---------------------------------------------------------------------------

def helper_simple(x):
    return _h_square_sum(x) * 0.5


def helper_nested(x):
    return _h_chain(x * 2.0) * np.sum(x)


def helper_early_return(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + _h_early(x[i]) * x[i]
    return s


def helper_tuple_return(x):
    a, b = _h_pair(x)
    return np.sum(a * b + b)


def helper_multiple_args(x, w):
    return np.sum(_h_affine(x, w, 1.0) ** 2)


def helper_keyword_args(x, w):
    return np.sum(np.tanh(_h_affine(x, w=w, b=0.5)))


def helper_called_twice(x):
    return _h_square_sum(x) * _h_square_sum(np.sin(x))


def helper_scalar_early(x):
    return _h_early(x) + _h_early(x - 1.0) * x


def _make_scaled(c):
    def closure_scaled_sum(x):
        return np.sum(c * x ** 2)
    return closure_scaled_sum


def _make_weighted(w):
    def closure_weighted(x):
        return np.sum(np.sin(w * x)) + _h_square_sum(w * x)
    return closure_weighted


closure_scaled_sum = _make_scaled(3.0)
closure_weighted = _make_weighted(np.linspace(0.5, 1.5, 5))


# ---------------------------------------------------------------------------
# Tuples and lists inside the function
# ---------------------------------------------------------------------------

def list_parts(x):
    parts = [x, 2 * x]
    return np.sum(parts[0] * parts[1])


def tuple_build_unpack(x, y):
    t = (x * y, x + y, x - y)
    a, b, c = t
    return np.sum(a * b * c)


def list_index_loop(x):
    ws = [x, x ** 2, np.sin(x)]
    s = 0.0
    for i in range(3):
        s = s + np.sum(ws[i]) * (i + 1.0)
    return s


def tuple_index(x):
    t = (np.sum(x), np.prod(x), x[0])
    return t[0] * t[1] + t[-1]


# ---------------------------------------------------------------------------
# Multiple argnums
# ---------------------------------------------------------------------------

def multi_weighted_norm(x, w):
    return np.sum(w * x ** 2) + np.sum(np.exp(w))


def multi_three_args(a, b, c):
    return np.sum(a * np.sin(b)) * c + c ** 2


def multi_reversed_order(x, y):
    return np.sum(x * y ** 2 + np.cos(x))


def multi_unused_argument(x, y):
    return np.sum(x ** 2)


# ---------------------------------------------------------------------------
# Functions with a known closed-form gradient (also in CASES)
# ---------------------------------------------------------------------------

def closed_sum_squares(x):
    return np.sum(x ** 2)


def closed_sum_sin(x):
    return np.sum(np.sin(x))


def closed_max(x):
    return np.max(x)


def closed_abs(x):
    return np.sum(np.abs(x))


def poly_quartic(x):
    return 2.0 * x ** 4 - 3.0 * x ** 3 + x ** 2 - 5.0 * x + 1.0


# ---------------------------------------------------------------------------
# Realistic functions
# ---------------------------------------------------------------------------

def logistic_regression_loss(w, X, y):
    z = X @ w
    return np.mean(np.log1p(np.exp(-y * z)))


def logistic_regression_bias(w, b, X, y):
    p = _h_sigmoid(X @ w + b)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def softmax_cross_entropy(W, X, Y):
    logits = X @ W
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * (z - lse), axis=1))


def softmax_cross_entropy_helper(W, X, Y):
    logits = X @ W
    return np.mean(_h_logsumexp_rows(logits)[:, 0] - np.sum(Y * logits, axis=1))


def mlp_tanh_loss(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def least_squares(A, x, b):
    r = A @ x - b
    return 0.5 * r @ r


def ridge_regression(w, lam, X, y):
    r = X @ w - y
    return np.sum(r ** 2) + lam * (w @ w)


def logsumexp_stable(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_loop(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def gaussian_log_likelihood(mu, log_sigma, x):
    sigma = np.exp(log_sigma)
    n = x.shape[0]
    z = (x - mu) / sigma
    return -0.5 * np.sum(z ** 2) - n * log_sigma - 0.5 * n * np.log(2.0 * np.pi)


def horner_polynomial(c, x):
    p = 0.0
    for i in range(c.shape[0]):
        p = p * x + c[i]
    return p


def cumulative_product_loop(x):
    p = 1.0
    out = 0.0
    for i in range(x.shape[0]):
        p = p * x[i]
        out = out + p
    return out


def euler_ode(k, y0):
    y = y0
    dt = 0.05
    for _ in range(40):
        y = y + dt * _h_step(y, k)
    return y


def euler_ode_linear_system(A, y0):
    y = y0
    dt = 0.02
    for _ in range(50):
        y = y + dt * (A @ y)
    return np.sum(y ** 2)


def huber_loss(r):
    a = np.abs(r)
    return np.sum(np.where(a < 1.0, 0.5 * r ** 2, a - 0.5))


def layer_norm(x, g):
    mu = np.mean(x)
    var = np.mean((x - mu) ** 2)
    xhat = (x - mu) / np.sqrt(var + 1e-5)
    return np.sum(np.tanh(g * xhat))


def cosine_similarity(x, y):
    return (x @ y) / (np.sqrt(x @ x) * np.sqrt(y @ y))


def attention_scores(Q, K, V):
    s = Q @ K.T / np.sqrt(Q.shape[1] * 1.0)
    s = s - np.max(s, axis=1, keepdims=True)
    w = np.exp(s)
    w = w / np.sum(w, axis=1, keepdims=True)
    return np.sum((w @ V) ** 2)


def kl_divergence_softmax(a, b):
    p = np.exp(a - logsumexp_stable(a))
    logq = b - logsumexp_stable(b)
    return np.sum(p * (np.log(p) - logq))


def gradient_descent_unrolled(w0, X, y):
    w = w0
    for _ in range(5):
        r = X @ w - y
        w = w - 0.05 * (X.T @ r)
    r = X @ w - y
    return r @ r


def smooth_scalar_mix(x):
    return np.sin(x) * np.exp(-x * x) + np.log(1.0 + x * x) + np.tanh(x) / (2.0 + np.cos(x))


# ---------------------------------------------------------------------------
# Special-purpose input factories
# ---------------------------------------------------------------------------

def _softmax_inputs(rng):
    return (rng.standard_normal((4, 3)), rng.standard_normal((6, 4)),
            np.eye(3)[rng.integers(0, 3, size=6)])


def _two_apart(rng, n, gap=0.1):
    x = rng.standard_normal(n)
    d = _nonzero(rng, n, gap, 1.0)
    return x, x + d


def _shifted(rng, n, sign):
    """Normal samples with the sum clearly of the given sign."""
    x = rng.standard_normal(n)
    return x - np.mean(x) + sign * rng.uniform(0.3, 1.0)


def _first_sign(rng, n, sign):
    x = rng.standard_normal(n)
    x[0] = sign * rng.uniform(0.3, 1.5)
    return x


def _while_input(rng):
    # iterate s <- 1.5 s + x from s = 1 until s >= 10; keep the final s away from 10
    for _ in range(1000):
        x = float(rng.uniform(0.1, 2.0))
        s = 1.0
        prev = s
        while s < 10.0:
            prev = s
            s = s * 1.5 + x
        if s > 10.05 and prev < 9.95:
            return x
    raise RuntimeError("no input for cf_while_data_dependent")


def _break_input(rng):
    # partial sums of squares must stay away from the threshold 2.0
    for _ in range(1000):
        x = rng.uniform(-1.2, 1.2, size=8)
        c = np.cumsum(x ** 2)
        if np.all(np.abs(c - 2.0) > 0.05) and c[-1] > 2.5:
            return x
    raise RuntimeError("no input for cf_break")


def _early_loop_input(rng):
    for _ in range(1000):
        x = rng.uniform(-0.5, 1.0, size=6)
        c = np.cumsum(x)
        if np.all(np.abs(c - 1.5) > 0.05) and np.any(c > 1.5):
            return x
    raise RuntimeError("no input for cf_early_return_in_loop")


def _loop_bound_input(rng):
    x = _nonzero(rng, 6)
    x[:4] = np.abs(x[:4])  # at least 4 positives, at most 6 -> i + 1 may reach 6
    x[-1] = -abs(x[-1])   # so at most 5 positives and x[i + 1] stays in range
    return x


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

CASES = [
    # arithmetic
    (arith_scalar_two_args, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), (0, 1)),
    (arith_rational, lambda r: (_u(r, -2, 2),), 0),
    (arith_unary_minus, lambda r: (r.standard_normal(5),), 0),
    (arith_int_constants, lambda r: (_u(r, -2, 2),), 0),
    (arith_reflected_ops, lambda r: (_u(r, 0.5, 2.0, 5),), 0),
    (arith_fractional_power, lambda r: (_u(r, 0.5, 2.0, 5),), 0),
    (arith_array_exponent, lambda r: (_u(r, 0.5, 2.0, 4), _u(r, -1.5, 2.5, 4)), (0, 1)),
    (arith_matmul_operator, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (arith_if_sign, lambda r: (_away(r, -2, 2),), 0),
    (arith_augassign_scalar, lambda r: (_u(r, -2, 2),), 0),
    (arith_augassign_array, lambda r: (r.standard_normal(6),), 0),
    (arith_tuple_unpack_swap, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), (0, 1)),
    (arith_chained_comparison,
     lambda r: (_away(r, -2.0, 2.0, 12, points=(-1.0, 0.0, 1.0)),), 0),
    (arith_comparison_mask, lambda r: (_away(r, -1.5, 1.5, 8, points=(-0.3, 0.3)),), 0),
    (arith_bool_ops, lambda r: (_away(r, -2, 2), _away(r, -2, 2)), (0, 1)),
    (arith_is_none_default, lambda r: (r.standard_normal(4),), 0),
    # elementwise
    (ew_sin_cos, lambda r: (r.standard_normal(6),), 0),
    (ew_tan, lambda r: (_u(r, -1.0, 1.0, 6),), 0),
    (ew_exp_log, lambda r: (_u(r, 0.3, 3.0, 6),), 0),
    (ew_sqrt, lambda r: (_u(r, 0.3, 3.0, 6),), 0),
    (ew_tanh, lambda r: (r.standard_normal((2, 3)),), 0),
    (ew_abs, lambda r: (_away(r, -3, 3, 7, points=(0.0, 2.5)),), 0),
    (ew_maximum, lambda r: _two_apart(r, 6), (0, 1)),
    (ew_relu, lambda r: (_nonzero(r, 7),), 0),
    (ew_minimum, lambda r: _two_apart(r, 6), (0, 1)),
    (ew_where, lambda r: (_nonzero(r, 7),), 0),
    (ew_power, lambda r: (_u(r, 0.3, 2.0, 5),), 0),
    (ew_power_both, lambda r: (_u(r, 0.5, 2.0, 5), _u(r, -1.0, 2.0, 5)), (0, 1)),
    (ew_arctan, lambda r: (r.standard_normal(5),), 0),
    (ew_log1p_expm1, lambda r: (r.standard_normal(5),), 0),
    (ew_square, lambda r: (r.standard_normal((2, 2)),), 0),
    (ew_softplus, lambda r: (r.standard_normal(5),), 0),
    (ew_sigmoid_helper, lambda r: (r.standard_normal(5),), 0),
    (ew_composite, lambda r: (r.standard_normal(5),), 0),
    (bc_matrix_row, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (bc_matrix_column, lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))), (0, 1)),
    (bc_scalar, lambda r: (r.standard_normal((3, 4)), _u(r, 0.5, 1.5)), (0, 1)),
    (bc_row_minus_column, lambda r: (r.standard_normal((1, 4)), r.standard_normal((3, 1))),
     (0, 1)),
    (bc_outer_vectors, lambda r: (r.standard_normal(3), r.standard_normal(4)), (0, 1)),
    # reductions and methods
    (red_sum_axis0, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_sum_axis1_keepdims, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_mean_axis, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_mean_keepdims_variance, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_max, lambda r: (_distinct(r, (3, 4)),), 0),
    (red_min, lambda r: (_distinct(r, (3, 4)),), 0),
    (red_prod, lambda r: (_nonzero(r, 5, 0.5, 1.5),), 0),
    (red_prod_axis, lambda r: (_nonzero(r, (3, 4), 0.5, 1.5),), 0),
    (red_sum_axis_none, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_sum, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_mean_max, lambda r: (_distinct(r, (3, 4)),), 0),
    (meth_reshape_transpose, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_reshape_flat, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_prod, lambda r: (_nonzero(r, 5, 0.5, 1.5),), 0),
    # linear algebra
    (la_dot_vv, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (la_dot_mv, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (la_dot_mm, lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2))), (0, 1)),
    (la_matmul_mm, lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2))), (0, 1)),
    (la_matmul_mv, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (la_at_vv, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (la_at_vm, lambda r: (r.standard_normal(3), r.standard_normal((3, 4))), (0, 1)),
    (la_at_mm, lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2))), (0, 1)),
    (la_quadratic_form, lambda r: (r.standard_normal((4, 4)), r.standard_normal(4)), (0, 1)),
    (la_np_reshape, lambda r: (r.standard_normal(12),), 0),
    (la_np_transpose, lambda r: (r.standard_normal((3, 4)),), 0),
    (la_transpose_axes, lambda r: (r.standard_normal((2, 3, 4)),), 0),
    # indexing reads
    (idx_int, lambda r: (r.standard_normal(5),), 0),
    (idx_slices, lambda r: (r.standard_normal(8),), 0),
    (idx_reverse, lambda r: (r.standard_normal(6),), 0),
    (idx_row_loop, lambda r: (r.standard_normal((3, 4)),), 0),
    (idx_column, lambda r: (r.standard_normal((3, 4)),), 0),
    (idx_ellipsis, lambda r: (r.standard_normal((2, 3, 4)),), 0),
    (idx_newaxis, lambda r: (r.standard_normal(4),), 0),
    (idx_2d_slices, lambda r: (r.standard_normal((3, 4)),), 0),
    # indexing writes
    (iw_zeros_set, lambda r: (r.standard_normal(3),), 0),
    (iw_zeros_add, lambda r: (r.standard_normal(4),), 0),
    (iw_slice_set, lambda r: (r.standard_normal(5),), 0),
    (iw_zeros_like, lambda r: (r.standard_normal(5),), 0),
    (iw_copy_overwrite, lambda r: (r.standard_normal(4),), 0),
    (iw_copy_method, lambda r: (r.standard_normal(5),), 0),
    (iw_empty_filled, lambda r: (r.standard_normal(5),), 0),
    (iw_overwrite_used_value, lambda r: (r.standard_normal(2),), 0),
    (iw_overwrite_in_loop, lambda r: (_u(r, -1.0, 1.0, 6),), 0),
    (iw_rows_of_matrix, lambda r: (r.standard_normal(4),), 0),
    (iw_cumsum_loop, lambda r: (r.standard_normal(6),), 0),
    (iw_derived_array, lambda r: (r.standard_normal(5),), 0),
    (iw_matrix_nested_loops, lambda r: (r.standard_normal(4),), 0),
    (iw_scaled_row_update, lambda r: (_u(r, 0.5, 1.5, (3, 4)),), 0),
    (iw_accumulate_repeated_index, lambda r: (r.standard_normal(6),), 0),
    # control flow
    (cf_if_on_sum, lambda r: (_shifted(r, 5, +1.0),), 0),
    (cf_if_on_sum_negative, lambda r: (_shifted(r, 5, -1.0),), 0),
    (cf_if_elif_else, lambda r: (_away(r, -2.5, 2.5, 10, points=(-1.0, 1.0)),), 0),
    (cf_if_no_else, lambda r: (_away(r, -1.0, 1.5, 5, points=(0.5,)),), 0),
    (cf_for_range, lambda r: (r.standard_normal(6),), 0),
    (cf_range_start_stop_step, lambda r: (r.standard_normal(7),), 0),
    (cf_range_negative_step, lambda r: (r.standard_normal(6),), 0),
    (cf_for_rows, lambda r: (r.standard_normal((4, 3)),), 0),
    (cf_for_elements, lambda r: (_u(r, -1.5, 1.5, 5),), 0),
    (cf_nested_loops, lambda r: (r.standard_normal((4, 4)),), 0),
    (cf_while_data_dependent, lambda r: (_while_input(r),), 0),
    (cf_while_counter, lambda r: (r.standard_normal(5),), 0),
    (cf_while_true_break, lambda r: (_u(r, -2, 2),), 0),
    (cf_break, lambda r: (_break_input(r),), 0),
    (cf_continue, lambda r: (_nonzero(r, 8),), 0),
    (cf_early_return_branch, lambda r: (_first_sign(r, 5, +1.0),), 0),
    (cf_early_return_branch, lambda r: (_first_sign(r, 5, -1.0),), 0),
    (cf_early_return_in_loop, lambda r: (_early_loop_input(r),), 0),
    (cf_rnn, lambda r: (0.5 * r.standard_normal((4, 4)), r.standard_normal((4, 3)),
                        r.standard_normal((6, 3))), (0, 1, 2)),
    (cf_branchy_recurrence, lambda r: (_nonzero(r, 20, 0.05, 2.0),), 0),
    (cf_overwrite_in_loop, lambda r: (r.standard_normal(4),), 0),
    (cf_loop_scalar_branch, lambda r: (_away(r, 0.0, 1.5, points=(0.5,)),), 0),
    (cf_loop_powers, lambda r: (_u(r, -1.5, 1.5),), 0),
    (cf_loop_bound_from_data, lambda r: (_loop_bound_input(r),), 0),
    # helpers and closures
    (helper_simple, lambda r: (r.standard_normal(5),), 0),
    (helper_nested, lambda r: (r.standard_normal(5),), 0),
    (helper_early_return, lambda r: (_nonzero(r, 6),), 0),
    (helper_tuple_return, lambda r: (r.standard_normal(5),), 0),
    (helper_multiple_args, lambda r: (r.standard_normal(4), r.standard_normal(4)), (0, 1)),
    (helper_keyword_args, lambda r: (r.standard_normal(4), r.standard_normal(4)), (0, 1)),
    (helper_called_twice, lambda r: (r.standard_normal(4),), 0),
    (helper_scalar_early, lambda r: (_away(r, -1.0, 2.5, points=(0.0, 1.0)),), 0),
    (closure_scaled_sum, lambda r: (r.standard_normal(5),), 0),
    (closure_weighted, lambda r: (r.standard_normal(5),), 0),
    # lists and tuples
    (list_parts, lambda r: (r.standard_normal(5),), 0),
    (tuple_build_unpack, lambda r: (r.standard_normal(4), r.standard_normal(4)), (0, 1)),
    (list_index_loop, lambda r: (r.standard_normal(4),), 0),
    (tuple_index, lambda r: (_nonzero(r, 4, 0.5, 1.5),), 0),
    # argnums variants
    (multi_weighted_norm, lambda r: (r.standard_normal(4), r.standard_normal(4)), 1),
    (multi_weighted_norm, lambda r: (r.standard_normal(4), r.standard_normal(4)), 0),
    (multi_three_args, lambda r: (r.standard_normal(3), r.standard_normal(3), _u(r, -1, 1)),
     (0, 2)),
    (multi_three_args, lambda r: (r.standard_normal(3), r.standard_normal(3), _u(r, -1, 1)),
     (1, 2)),
    (multi_reversed_order, lambda r: (r.standard_normal(4), r.standard_normal(4)), (1, 0)),
    (multi_unused_argument, lambda r: (r.standard_normal(3), r.standard_normal((2, 2))), (0, 1)),
    # closed forms
    (closed_sum_squares, lambda r: (r.standard_normal(5),), 0),
    (closed_sum_sin, lambda r: (r.standard_normal(5),), 0),
    (closed_max, lambda r: (_distinct(r, (6,)),), 0),
    (closed_abs, lambda r: (_nonzero(r, 6),), 0),
    (poly_quartic, lambda r: (_u(r, -2, 2),), 0),
    # scalar inputs given as a 0-d array and as a NumPy float
    (arith_rational, lambda r: (np.array(_u(r, -2, 2)),), 0),
    (smooth_scalar_mix, lambda r: (np.float64(_u(r, -2, 2)),), 0),
    # realistic
    (logistic_regression_loss, lambda r: (r.standard_normal(3), r.standard_normal((10, 3)),
                                          _pm1(r, 10)), (0, 1)),
    (logistic_regression_bias, lambda r: (r.standard_normal(3), _u(r, -0.5, 0.5),
                                          r.standard_normal((10, 3)),
                                          (r.uniform(size=10) < 0.5) * 1.0), (0, 1, 2)),
    (softmax_cross_entropy, _softmax_inputs, (0, 1)),
    (softmax_cross_entropy_helper, _softmax_inputs, (0, 1)),
    (mlp_tanh_loss, lambda r: (0.5 * r.standard_normal((3, 5)), 0.1 * r.standard_normal(5),
                               0.5 * r.standard_normal(5), _u(r, -0.2, 0.2),
                               r.standard_normal((8, 3)), r.standard_normal(8)),
     (0, 1, 2, 3)),
    (least_squares, lambda r: (r.standard_normal((6, 3)), r.standard_normal(3),
                               r.standard_normal(6)), (0, 1, 2)),
    (ridge_regression, lambda r: (r.standard_normal(3), _u(r, 0.1, 1.0),
                                  r.standard_normal((6, 3)), r.standard_normal(6)), (0, 1)),
    (logsumexp_stable, lambda r: (_distinct(r, (6,), 0.1) * 5.0,), 0),
    (rosenbrock, lambda r: (_u(r, -1.5, 1.5, 5),), 0),
    (rosenbrock_loop, lambda r: (_u(r, -1.5, 1.5, 5),), 0),
    (gaussian_log_likelihood, lambda r: (_u(r, -1, 1), _u(r, -0.5, 0.5),
                                         r.standard_normal(10)), (0, 1, 2)),
    (horner_polynomial, lambda r: (r.standard_normal(5), _u(r, -1.5, 1.5)), (0, 1)),
    (cumulative_product_loop, lambda r: (_u(r, -1.5, 1.5, 6),), 0),
    (euler_ode, lambda r: (_u(r, 0.5, 2.0), _u(r, -1.0, 1.0)), (0, 1)),
    (euler_ode_linear_system, lambda r: (0.5 * r.standard_normal((3, 3)),
                                         r.standard_normal(3)), (0, 1)),
    (huber_loss, lambda r: (_away(r, -3, 3, 8, points=(-1.0, 1.0, 0.0)),), 0),
    (layer_norm, lambda r: (r.standard_normal(6), r.standard_normal(6)), (0, 1)),
    (cosine_similarity, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (attention_scores, lambda r: (r.standard_normal((3, 4)), r.standard_normal((5, 4)),
                                  r.standard_normal((5, 2))), (0, 1, 2)),
    (kl_divergence_softmax, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (gradient_descent_unrolled, lambda r: (r.standard_normal(3), 0.5 * r.standard_normal((6, 3)),
                                           r.standard_normal(6)), (0, 1, 2)),
    (smooth_scalar_mix, lambda r: (_u(r, -2, 2),), 0),
]


# ---------------------------------------------------------------------------
# has_aux functions: return (scalar loss, aux)
# ---------------------------------------------------------------------------

def aux_loss_and_predictions(w, X, y):
    pred = X @ w
    loss = np.mean((pred - y) ** 2)
    return loss, pred


def aux_loss_and_tuple(x):
    loss = np.sum(np.sin(x) ** 2)
    return loss, (np.max(x), x * 2.0)


def aux_loss_with_loop(x):
    s = 0.0
    count = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i] ** 2
            count += 1
    return s, count


def aux_loss_and_float(a, b):
    loss = a * b ** 2 + np.sin(a)
    return loss, a + b


AUX_CASES = [
    (aux_loss_and_predictions, lambda r: (r.standard_normal(3), r.standard_normal((6, 3)),
                                          r.standard_normal(6)), 0),
    (aux_loss_and_tuple, lambda r: (r.standard_normal(5),), 0),
    (aux_loss_with_loop, lambda r: (_nonzero(r, 6),), 0),
    (aux_loss_and_float, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), (0, 1)),
]


# ---------------------------------------------------------------------------
# Non-scalar outputs, checked with vjp
# ---------------------------------------------------------------------------

def vjp_sin_times_x(x):
    return np.sin(x) * x


def vjp_matvec(A, x):
    return A @ x


def vjp_softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def vjp_outer(x, y):
    return x[:, None] * y[None, :]


def vjp_cumsum_loop(x):
    out = np.zeros_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        out[i] = s
    return out


def vjp_rnn_final_state(W, x):
    h = np.zeros(W.shape[0])
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t])
    return h


def vjp_row_normalize(X):
    return X / np.sum(X, axis=1, keepdims=True)


def vjp_branch(x):
    if np.sum(x) > 0:
        return x ** 2
    return np.exp(x)


VJP_CASES = [
    (vjp_sin_times_x, lambda r: (r.standard_normal(5),)),
    (vjp_matvec, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4))),
    (vjp_softmax, lambda r: (_distinct(r, (5,), 0.1),)),
    (vjp_outer, lambda r: (r.standard_normal(3), r.standard_normal(4))),
    (vjp_cumsum_loop, lambda r: (r.standard_normal(5),)),
    (vjp_rnn_final_state, lambda r: (0.5 * r.standard_normal((3, 3)), r.standard_normal((4, 3)))),
    (vjp_row_normalize, lambda r: (_u(r, 0.5, 1.5, (3, 4)),)),
    (vjp_branch, lambda r: (_shifted(r, 4, +1.0),)),
    (vjp_branch, lambda r: (_shifted(r, 4, -1.0),)),
]


# ---------------------------------------------------------------------------
# Scalar-in, scalar-out functions for grad(grad(f)) (argnum, all args scalar)
# ---------------------------------------------------------------------------

SCALAR_CASES = [
    (arith_rational, lambda r: (_u(r, -2, 2),), 0),
    (arith_int_constants, lambda r: (_u(r, -2, 2),), 0),
    (arith_if_sign, lambda r: (_away(r, -2, 2, points=(0.0,), margin=0.2),), 0),
    (arith_augassign_scalar, lambda r: (_u(r, -2, 2),), 0),
    (arith_tuple_unpack_swap, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), 1),
    (cf_while_true_break, lambda r: (_u(r, -2, 2),), 0),
    (cf_loop_scalar_branch, lambda r: (_away(r, 0.0, 1.5, points=(0.5,), margin=0.2),), 0),
    (cf_loop_powers, lambda r: (_u(r, -1.5, 1.5),), 0),
    (helper_scalar_early, lambda r: (_away(r, -1.0, 2.5, points=(0.0, 1.0), margin=0.2),), 0),
    (euler_ode, lambda r: (_u(r, 0.5, 2.0), _u(r, -1.0, 1.0)), 0),
    (euler_ode, lambda r: (_u(r, 0.5, 2.0), _u(r, -1.0, 1.0)), 1),
    (smooth_scalar_mix, lambda r: (_u(r, -2, 2),), 0),
    (cf_while_data_dependent, lambda r: (_while_input(r),), 0),
    (poly_quartic, lambda r: (_u(r, -2, 2),), 0),
    (horner_polynomial, lambda r: (r.standard_normal(5), _u(r, -1.5, 1.5)), 1),
]


# ---------------------------------------------------------------------------
# Stable test ids and seeds
# ---------------------------------------------------------------------------

def case_ids(cases):
    """Function names, with ``-2``, ``-3``, ... appended to repeated names."""
    seen = {}
    ids = []
    for case in cases:
        name = case[0].__name__
        seen[name] = seen.get(name, 0) + 1
        ids.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return ids


def case_rng(case_id, salt=""):
    """A generator seeded from the case id, so inputs are the same on every run."""
    import zlib
    return np.random.default_rng(zlib.crc32(f"{salt}{case_id}".encode()))
