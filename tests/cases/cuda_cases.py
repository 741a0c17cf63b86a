"""Functions for the CUDA-target tests (module level: s2s reads their source)."""
import numpy as np


def elementwise(x):
    return np.sin(x) * x ** 2 + np.exp(-x * x)


def two_inputs(x, y):
    return np.tanh(x * y) + np.sqrt(y * y + 1.0)


def summed(x):
    return np.sum(np.sin(x) * x ** 2 + np.exp(-x * x))


def scalar_logistic(w, x, y):
    return np.log(1.0 + np.exp(-y * (x * w)))


def branchy(x):
    if x > 0:
        return np.sin(x) * x
    return -x * x


def with_indexing(x):
    return x[0] * 2.0


def looped(x):
    s = x
    for i in range(3):
        s = s * x
    return s
