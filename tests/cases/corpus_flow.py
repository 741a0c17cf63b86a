"""Corpus programs with control flow: branches, loops, while, break/continue, early returns,
helper calls and closures, tuples and lists, several argnums, closed-form gradients and realistic
losses (regressions, small networks, ODE steps).

Part of the differentiable test corpus (corpus.py holds the registries that pair each program with
its inputs). Module level so that ``inspect.getsource`` finds them; nothing here imports s2s.
"""
from __future__ import annotations

import numpy as np


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
