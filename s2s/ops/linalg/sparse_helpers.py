"""Products of a dense array with a scipy.sparse matrix the code reads from a global or closure.

`A @ x`, `x @ A` and `A.dot(x)` with `A` a scipy.sparse matrix or array (a constant of the code: it
is never differentiated) become these ops (frontend/foreign.py), each the adjoint of another:
the derivative of `A @ x` with respect to x is `A.T @ g`, of `x @ A` it is `g @ A.T`.  Results are
plain arrays (a sparse matrix times a dense array is dense).  The rules are in ops/linalg/rules.py;
vmap runs them per example.
"""
from __future__ import annotations

import numpy as np


def sparse_matmul(a, x):
    """a @ x, a sparse."""
    return np.asarray(a @ x)


def sparse_matmul_t(a, g):
    """a.T @ g, a sparse (the cotangent of x in a @ x)."""
    return np.asarray(a.T @ g)


def sparse_rmatmul(x, b):
    """x @ b, b sparse."""
    return np.asarray(x @ b)


def sparse_rmatmul_t(g, b):
    """g @ b.T, b sparse (the cotangent of x in x @ b)."""
    return np.asarray(g @ b.T)
