"""Module-level functions for tests/vmap/test_vmap.py (s2s reads their source).

Each function is written for ONE example; the tests compare
`s2s.vmap(f, in_axes=...)(*batched_args)` with a Python loop over examples.
Nothing here imports s2s at module level except the few functions that call
s2s transforms from inside transformed code (composition tests).
"""
from __future__ import annotations

import numpy as np

import s2s

FANCY = np.array([2, 0, 2, 1])


# ----- elementwise: unary ------------------------------------------------------------
def u_sin(x):
    return np.sin(x)


def u_exp(x):
    return np.exp(x)


def u_log(x):          # positive inputs
    return np.log(x)


def u_tanh(x):
    return np.tanh(x)


def u_abs(x):
    return np.abs(x)


def u_builtin_abs(x):
    return abs(x)


def u_sqrt(x):         # positive inputs
    return np.sqrt(x)


def u_neg_chain(x):
    return -np.cos(x) * 2.0 + 1.0


# ----- elementwise: binary with per-example broadcasting --------------------------------
def b_add(x, y):       # (3, 4) & (4,)
    return x + y


def b_mul(x, y):       # (3, 1) & (1, 4)
    return x * y


def b_const_scalar(x):   # constant scalar & (3,)
    return 2.0 * x - x / 3.0 + 1.0


def b_scalar_vec(s, v):  # per-example scalar & vector
    return s * v + s


def b_sub_div(x, y):   # (3, 4) & (4,)
    return (x - y) / (1.0 + y * y)


def b_pow(x, y):       # positive base
    return x ** y


def b_maximum(x, y):
    return np.maximum(x, y)


def b_arctan2(x, y):
    return np.arctan2(x, y)


def b_compare(x, y):
    return (x > y) * 1.0 + (x <= y) * 2.0


def b_less(x, y):
    return x < y


def b_chain3(x, y, z):   # (3, 4), (4,), ()
    return x * y + z


def e_where(x, y):       # (3, 4) & (4,)
    return np.where(x > y, x, y)


def e_where_scalar(s, v):  # per-example scalar condition, vector branch
    return np.where(s > 0, v, -v)


def e_where_const(x):
    return np.where(x > 0.0, x, 0.0)


def e_clip(x):
    return np.clip(x, -0.5, 0.5)


def e_clip_args(x, lo, hi):   # (3, 4), (4,), ()
    return np.clip(x, lo, hi)


# ----- reductions ---------------------------------------------------------------------
def r_sum_all(x):
    return np.sum(x)


def r_sum_0(x):
    return np.sum(x, axis=0)


def r_sum_neg1(x):
    return np.sum(x, axis=-1)


def r_sum_pos_arg(x):
    return np.sum(x, 1)


def r_sum_tuple(x):     # (2, 3, 4)
    return np.sum(x, axis=(0, 2))


def r_sum_tuple_neg(x):  # (2, 3, 4)
    return np.sum(x, axis=(-1, 0))


def r_sum_keepdims(x):
    return np.sum(x, axis=0, keepdims=True)


def r_sum_keepdims_all(x):
    return np.sum(x, keepdims=True)


def r_mean_all(x):
    return np.mean(x)


def r_mean_neg1(x):
    return np.mean(x, axis=-1)


def r_mean_keepdims(x):
    return x - np.mean(x, axis=-1, keepdims=True)


def r_max_all(x):
    return np.max(x)


def r_max_0(x):
    return np.max(x, axis=0)


def r_min_neg1(x):
    return np.min(x, axis=-1)


def r_min_keepdims(x):
    return np.min(x, axis=1, keepdims=True)


def r_prod_all(x):
    return np.prod(x)


def r_prod_0(x):
    return np.prod(x, axis=0)


def r_std_all(x):
    return np.std(x)


def r_std_neg1(x):
    return np.std(x, axis=-1)


def r_std_ddof(x):
    return np.std(x, axis=0, ddof=1)


def r_var_all(x):
    return np.var(x)


def r_var_0_keep(x):
    return np.var(x, axis=0, keepdims=True)


def r_argmax_all(x):
    return np.argmax(x)


def r_argmax_0(x):
    return np.argmax(x, axis=0)


def r_argmax_neg1(x):
    return np.argmax(x, axis=-1)


def r_argmin_1(x):
    return np.argmin(x, axis=1)


def r_amax_amin(x):
    return np.amax(x, axis=0) - np.amin(x, axis=1).sum()


def r_method_sum(x):
    return x.sum(axis=0) + x.mean()


def r_method_max(x):
    return x.max(axis=-1) * x.min()


def r_axis_from_ndim(x):
    ax = x.ndim - 1
    return np.sum(x, axis=ax)


def r_logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[..., 0]


def r_softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def r_any_all(x):
    return np.any(x > 0.5, axis=0) * 1.0 + np.all(x > -2.0) * 1.0


# ----- matmul / dot ----------------------------------------------------------------
def m_matmul(a, b):
    return a @ b


def m_dot(a, b):
    return np.dot(a, b)


def m_npmatmul(a, b):
    return np.matmul(a, b)


def m_method_dot(a, b):
    return a.dot(b)


def m_dot_scalar(s, v):     # per-example scalar & vector: np.dot is multiplication
    return np.dot(s, v)


def m_quadratic(A, x):      # x^T A x
    return x @ A @ x


def m_mlp_layer(W, b, x):
    return np.tanh(W @ x + b)


# ----- indexing ---------------------------------------------------------------------
def i_int(x):
    return x[1]


def i_neg(x):
    return x[-1]


def i_slice(x):
    return x[1:3]


def i_step_slice(x):
    return x[::-1] + x[::2].sum()


def i_row_all(x):
    return x[1, :]


def i_col(x):
    return x[:, 2]


def i_ellipsis(x):
    return x[..., 1]


def i_none(x):
    return x[None]


def i_none_mid(x):
    return x[:, None] * x[None, :]


def i_two_ints(x):
    return x[1, 2] + x[-1, -1]


def i_fancy_const(x):
    return x[FANCY]


def i_fancy_col(x):      # (3, 4)
    return x[:, FANCY]


def i_fancy_arg(x, idx):  # idx unbatched int array
    return x[idx]


def i_fancy_int_slice(x):   # (2, 3, 4): int and array separated by a slice
    return x[0, :, FANCY]


def i_fancy_two(x):      # (3, 4): two index arrays
    return x[FANCY[:3], FANCY[1:]]


def i_bool_mask(x):      # (4,): boolean mask (per example a fixed count here)
    return np.sum(x[x > 0.0])


def i_arg_int(x, i):     # i: an unbatched int
    return x[i] * 2.0


def i_dyn_slice(x, n):   # n: an unbatched int bound
    return x[1:n] * 2.0


def i_batched_int(x, i):  # i: a per-example int (batched)
    return x[i]


# ----- indexed writes into arrays made in the function -----------------------------------
def w_zeros_set(v, n):   # n unbatched
    y = np.zeros(n)
    y[1] = v
    return y


def w_zeros_set_vec(v):  # v: (3,)
    y = np.zeros((2, 3))
    y[1] = v
    y[0, 1] = 5.0
    return y


def w_copy_slice(x):
    y = np.copy(x)
    y[1:3] = x[:2] * 2.0
    y[0] = 0.0
    return y


def w_loop_fill(x):      # (4,)
    y = np.zeros(4)
    for i in range(4):
        y[i] = x[i] * (i + 1.0)
    return y


def w_broadcast_scalar(s):   # per-example scalar into a whole slice
    y = np.ones(5)
    y[1:4] = s
    return y


def w_zeros_like(x):
    y = np.zeros_like(x)
    y[0] = np.sum(x)
    return y + x


def w_accumulate(x):    # (4,)
    y = np.zeros(2)
    y[0] += x[0]
    y[0] += x[1]
    y[1] -= x[3]
    return y


def w_fancy_write(x):    # (4,): write through an unbatched index array
    y = np.zeros(5)
    y[FANCY[1:]] = x[:3]
    return y


def w_col_write(x):      # (3, 4): write a column
    y = np.ones((3, 4))
    y[:, 1] = x[:, 0]
    return y * x


def w_batched_index(x, i):  # write at a per-example index (fallback allowed)
    y = np.zeros(4)
    y[i] = x
    return y


# ----- shape queries used to build other values ----------------------------------------
def s_shape0(x):        # (3, 4)
    n = x.shape[0]
    return np.sum(x) / n


def s_zeros_shape(x):
    y = np.zeros(x.shape)
    return y + x * 2.0


def s_len(x):
    return np.arange(len(x)) * x


def s_len_rows(x):       # (3, 4)
    return np.arange(len(x))[:, None] * x


def s_ndim(x):
    return x * np.ndim(x) + x.ndim


def s_size(x):
    return np.sum(x) / x.size + np.size(x)


def s_ones_len(x):       # (3, 4)
    m = x.shape[-1]
    w = np.ones(m) / m
    return x @ w


def s_eye(x):            # (4,)
    n = len(x)
    return np.eye(n) * x


def s_shape_tuple(x):    # (3, 4)
    r = x.shape[0]
    c = x.shape[1]
    return np.full((c, r), 1.0) @ x[:, :1] + r * c


# ----- shape functions (may fall back to per-example loops) ------------------------------
def sh_reshape(x):       # (3, 4)
    return np.reshape(x, (4, 3))


def sh_reshape_method(x):
    return x.reshape(-1)


def sh_reshape_shape(x):
    return x.reshape(x.shape[1], x.shape[0])


def sh_transpose(x):
    return np.transpose(x)


def sh_T(x):
    return x.T @ x


def sh_transpose_axes(x):   # (2, 3, 4)
    return np.transpose(x, (2, 0, 1))


def sh_swapaxes(x):       # (2, 3, 4)
    return np.swapaxes(x, 0, 2)


def sh_expand_dims(x):
    return np.expand_dims(x, 0) + np.expand_dims(x, -1)[..., 0][None]


def sh_concat(x, y):     # (3, 4) & (2, 4)
    return np.concatenate([x, y])


def sh_concat_axis1(x, y):   # (3, 4) & (3, 2)
    return np.concatenate((x, y), axis=1)


def sh_stack(x, y):      # (4,) & (4,)
    return np.stack([x, y])


def sh_stack_axis1(x, y):   # (4,) & (4,)
    return np.stack([x, y * 2.0], axis=1)


def sh_ravel(x):
    return np.ravel(x) * 2.0


def sh_flip(x):
    return np.flip(x, axis=0)


def sh_outer(x, y):
    return np.outer(x, y)


def sh_cumsum(x):
    return np.cumsum(x)


def sh_squeeze(x):        # (3, 1)
    return np.squeeze(x) + 1.0


# ----- control flow ---------------------------------------------------------------
def cf_if_pure(x):
    if np.sum(x) > 0:
        y = x * 2.0
        z = np.sum(y)
    else:
        y = -x
        z = 1.0
    return y + z


def cf_if_scalar(s, v):
    if s > 0.0:
        out = v * s
    else:
        out = v - s
    return out


def cf_if_nested_pure(x):    # scalar x
    if x > 0.0:
        if x > 1.0:
            y = 1.0
        else:
            y = x * x
    else:
        y = -x
    return y * 3.0


def cf_if_impure(x):         # (3,): an indexed write in a branch on a batched condition
    y = np.zeros(3)
    if np.sum(x) > 0:
        y[0] = np.sum(x)
    else:
        y[2] = x[1]
    return y + x


def cf_if_one_sided(x):
    y = x * 1.0
    if np.sum(x) > 0:
        y = y * 2.0
    return y


def cf_while_vec(x):         # (3,): halve until every entry is small
    k = 0.0
    while np.max(np.abs(x)) > 1.0:
        x = x / 2.0
        k = k + 1.0
    return x, k


def cf_for_len(x):           # range(len(x)) with x batched: the length is per example but equal
    acc = 0.0
    for i in range(len(x)):
        acc = acc * 0.5 + x[i]
    return acc


def cf_for_batched_n(x, n):  # a per-example trip count in a for loop (fallback allowed)
    acc = 0.0
    for i in range(n):
        acc = acc + x[i]
    return acc


def cf_for_break(x):         # (5,): break on a per-example condition
    total = 0.0
    for i in range(5):
        if x[i] < 0.0:
            break
        total = total + x[i]
    return total


def cf_while(x):             # scalar x > 0: per-example trip counts
    n = 0.0
    while x < 10.0:
        x = x * 2.0
        n = n + 1.0
    return x + n


def cf_while_tuple(x, target):   # x: (2,) both positive; target: scalar
    k = 0
    total = np.sum(x)
    while total < target:
        x = x * 1.5
        total = np.sum(x)
        k = k + 1
    return x, k


def cf_for_range(x, n):      # n unbatched int
    acc = np.zeros_like(x)
    for i in range(n):
        acc = acc + x ** (i + 1.0)
    return acc


def cf_for_range_if(x, n):   # a batched if inside an unbatched loop
    acc = 0.0
    for i in range(n):
        if x[i] > 0.0:
            acc = acc + x[i]
        else:
            acc = acc - 0.5 * x[i]
    return acc


def _early_helper(x):
    if x > 1.0:
        return 1.0
    return x * x


def cf_early_return(x):      # scalar x
    return _early_helper(x) + 2.0 * _early_helper(-x)


def _early_helper_arr(v):
    if np.max(v) > 2.0:
        return v / np.max(v)
    return v


def cf_early_return_arr(v):
    w = _early_helper_arr(v)
    return w * 2.0


def cf_if_unbatched(x, flag):     # condition on an unbatched argument
    if flag > 0:
        y = np.sin(x)
    else:
        y = np.cos(x)
    return y


# ----- in_axes / out_axes ------------------------------------------------------------
def two_outputs(x, y):
    return x + y, np.sum(x * y)


def const_output(x, c):
    return np.sum(x) + c, c * 2.0


def no_batch_fn(x):
    return np.sin(x) + 1.0


def pair_dot(a, b):
    return np.dot(a, b)


def scaled(x, w):
    return np.tanh(x * w) + np.sum(w)


# ----- composition ---------------------------------------------------------------
def logistic_loss(w, x, y):       # x: (d,), y: scalar label in {-1, 1}
    z = x @ w
    return np.log(1.0 + np.exp(-y * z))


def mlp_loss(W1, b1, w2, x, y):   # one example
    h = np.tanh(W1 @ x + b1)
    pred = h @ w2
    return 0.5 * (pred - y) ** 2


def loop_loss(w, x, y):           # a loop in the loss
    h = x
    for k in range(3):
        h = np.tanh(h * w + 0.1 * k)
    return np.sum((h - y) ** 2)


def per_example_loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2)


def batch_loss(w, xs):
    return np.sum(s2s.vmap(per_example_loss, in_axes=(None, 0))(w, xs))


def batch_loss_mean(W, xs):
    per = s2s.vmap(mlp_example, in_axes=(None, 0))(W, xs)
    return np.mean(per)


def mlp_example(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


LOGISTIC_GRAD = s2s.grad(logistic_loss)


def inner_grad_batch(w, xs, ys):    # vmap(grad) inside transformed code
    g = s2s.vmap(LOGISTIC_GRAD, in_axes=(None, 0, 0))(w, xs, ys)
    return np.sum(g ** 2)


# functions for jacobians
def jac_sin_mul(x):
    return np.sin(x) * x[0]


def jac_matvec(x, A):
    return np.tanh(A @ x)


def jac_softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def jac_cumprod_like(x):
    y = np.zeros(3)
    y[0] = x[0]
    y[1] = x[0] * x[1]
    y[2] = x[1] * x[2] + np.sum(x ** 2)
    return y


def jac_norm_scale(x):
    return x / np.sqrt(np.sum(x * x)) + np.log(1.0 + x ** 2)


def jac_matrix_in(M):           # (2, 3) -> (3,)
    return np.sum(np.exp(M), axis=0) * M[1]


def scaled_swap(w, x):
    return np.sum(np.tanh(w * x)) + w[0] * x[-1]
