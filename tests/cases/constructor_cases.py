"""Constructors whose float arguments carry a derivative (s2s reads these sources)."""
import numpy as np

K = np.arange(5.0)


def linspace_endpoints(a, b):
    # grad w.r.t. (a, b) was once (0, 0); right: (2.5, 7.5)
    return np.sum(np.linspace(a, b, 5) * K)


def linspace_open(a, b):
    return np.sum(np.sin(np.linspace(a, b, 5, endpoint=False)) * K)


def linspace_of_vectors(v):
    return np.sum(np.linspace(v, 2.0 * v, 4) ** 2)


def full_of_scalar(x):
    return np.sum(np.full((2, 3), x) * np.arange(6.0).reshape(2, 3))


def full_then_written(x):
    y = np.full(3, x)
    y[1] = x * x
    return np.sum(y * y)


def full_of_row(r):
    return np.sum(np.tanh(np.full((3, 2), r)) * np.arange(6.0).reshape(3, 2))


def r_of_values(x):
    # grad was once [0, 0]; right: [0, 1]
    return np.sum(np.r_[x, np.ones(2)] * np.arange(4.0))


def r_of_scalars(a, b):
    return np.sum(np.r_[a, 2.0 * b, a * b] ** 2)


def c_of_columns(x):
    return np.sum(np.c_[x, x * x])


def std_of(x):
    return np.std(x)


def var_of(x):
    return np.var(x)


def std_weighted(x):
    return np.std(x) * 3.0 + np.std(x * x)
