"""Module-level functions for tests/jit/test_jit.py (s2s reads their source from this file).

Plain NumPy, except the two decorated functions at the end, which need s2s at import time.
"""
from __future__ import annotations

import numpy as np

import s2s


# ---------------------------------------------------------------------------
# Transforms under jit
# ---------------------------------------------------------------------------

def two_arg_loss(x, w):
    # scalar loss of two arrays: value_and_grad, grad(argnums=(0, 1)), a second signature
    return np.sum(np.tanh(x * w) ** 2) + np.sum(w * w)


def elementwise(x):
    # per-example function for vmap: elementwise, no reductions
    return np.sin(x) * x + np.exp(-x * x)


def logistic_loss(w, x, y):
    # one example: x a feature vector, y in {-1, +1};
    # vmap(grad) over (None, 0, 0) gives per-example gradients
    z = np.dot(x, w)
    return np.log1p(np.exp(-y * z))


def mixed_loss(x, w):
    # for target="parallel": elementwise work, a reduction and a product
    h = np.tanh(x * w + 0.5)
    return np.sum(h * h) + x @ w


# ---------------------------------------------------------------------------
# s2s transforms these; Numba's nopython mode cannot compile them
# ---------------------------------------------------------------------------

def uses_pad_reflect(x):
    # np.pad has an s2s rule; Numba has no np.pad (nor s2s a stand-in)
    return np.sum(np.pad(x, 1, mode="reflect") ** 2) + np.sum(np.sin(x))


def uses_pad_edge(X):
    # np.pad has an s2s rule; Numba has no np.pad (nor s2s a stand-in)
    return np.sum(np.pad(X, ((1, 0), (0, 0)), mode="edge") ** 2)


# ---------------------------------------------------------------------------
# Decorator use
# ---------------------------------------------------------------------------

@s2s.jit
def decorated_plain(x):
    return np.sum(np.sin(x) ** 2) + np.sum(x)


@s2s.jit(target="cpu", cache=True)
def decorated_with_options(x, y):
    return np.sum(x * y) - np.max(x)


def logistic_loss_matmul(w, x, y):
    return np.log(1.0 + np.exp(-y * (x @ w)))


def hess_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s * 0.9 + np.sin(x[i]) * x[i]
        else:
            s = s * 0.8 - x[i] ** 3
    return s


def mlp_params(params, x):
    h = x
    for W, b in params:
        h = np.tanh(h @ W + b)
    return np.sum(h * h)


def fusable(x):
    return np.sum(np.sin(x) * x ** 2 + np.exp(-x * x))


def fusable_two(a, b):
    return np.sum(np.tanh(a * b) + a * a)


def dot_mv(A, v):
    return np.sum(np.tanh(np.dot(A, v)))


def dot_mm(A, B):
    return np.sum(np.sin(np.dot(A, B)))


def dot_vv(a, b):
    return np.sin(np.dot(a, b))


def dot_vm(a, B):
    return np.sum(np.cos(np.dot(a, B)))


def einsum_full_contraction(x, y):
    # the op's cotangent is a number, not an array (einsum_vjp had no Numba version for it)
    return np.einsum("i,i->", x, np.sin(y)) + np.einsum("ij,j,i", np.outer(x, y), y, x) * 0.5


def squeezes_without_axis(x):
    column = np.expand_dims(x, 1)
    return np.sum(np.squeeze(column) ** 2)
