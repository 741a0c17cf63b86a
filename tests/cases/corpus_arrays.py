"""Corpus programs on arrays: arithmetic, elementwise functions and broadcasting, reductions and
array methods, linear algebra and reshapes, indexing reads and writes.

Part of the differentiable test corpus (corpus.py holds the registries that pair each program with
its inputs). Module level so that ``inspect.getsource`` finds them; nothing here imports s2s.
"""
from __future__ import annotations

import numpy as np

from cases.corpus_flow import _h_sigmoid


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
