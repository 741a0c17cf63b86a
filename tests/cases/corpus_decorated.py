"""Module-level definitions decorated with ``@s2s.grad``.

Kept apart from ``corpus.py`` because decorating runs s2s at import time, and
the corpus itself must import (and be checked) without the compiler.
"""
import numpy as np

import s2s


@s2s.grad
def d_sum_cubes(x):
    return np.sum(x ** 3)


@s2s.grad
def d_loop_with_branch(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i] ** 2
        else:
            s = s - x[i]
    return s


def plain_sum_cubes(x):
    return np.sum(x ** 3)


def plain_loop_with_branch(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i] ** 2
        else:
            s = s - x[i]
    return s
