"""Indexing with list literals (`x[[0, 2]]`, `A[[0, 2], :]`, `y[[0, 2]] = v`) and list variables.

NumPy reads a list index as an index array: s2s builds that array (np.array of the list),
so reads, writes and repeated indices differentiate as advanced indexing does.
"""

import numpy as np
import pytest


import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad


def gather_repeated(x):
    return np.sum(x[[0, 1, 3, 3]] * np.array([1.0, 2.0, 3.0, 4.0]))


def rows_and_columns(A):
    return np.sum(A[[0, 2], :] ** 2) + np.sum(A[:, [1, 0]] * A[[1, 1], :].T)


def scatter_list(x):
    y = np.zeros(5)
    y[[0, 2]] = x[:2] * x[2]
    return np.sum(y * np.arange(1.0, 6.0))


def list_variable_index(x):
    idx = [2, 0]
    w = x[idx]
    return np.sum(np.sin(w) * x[[1]])


def mask_list(x):
    return np.sum(x[[True, False, True, True]] ** 3)


def loop_variable_list(x):
    total = 0.0
    for i in range(2):
        total = total + np.sum(x[[i, i + 1]] ** 2) * (i + 1.0)
    return total


CASES = [(gather_repeated, (4,)), (rows_and_columns, (3, 3)), (scatter_list, (3,)), (list_variable_index, (3,)),
         (mask_list, (4,)), (loop_variable_list, (3,))]




def _x(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.3, 1.5, size=shape)


@pytest.mark.parametrize("f,shape", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_grad_and_jvp_match_finite_differences(f, shape):
    x = _x(shape)
    want = numeric_grad(f, (x,), 0)
    assert np.abs(want).max() > 0.1
    assert_close(s2s.grad(f)(x), want, rtol=1e-6, atol=1e-8)
    v = _x(shape, 1)
    assert_close(s2s.jvp(f, (x,), (v,))[1], np.sum(want * v), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f,shape", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_jit_and_vmap_agree_with_grad(f, shape):
    x = _x(shape)
    assert_close(s2s.jit(s2s.grad(f))(x), s2s.grad(f)(x), rtol=1e-12, atol=1e-14)
    xs = np.stack([x, _x(shape, 2)])
    assert_close(s2s.vmap(f)(xs), np.array([f(r) for r in xs]), rtol=1e-12, atol=1e-14)
    assert_close(s2s.vmap(s2s.grad(f))(xs), np.stack([s2s.grad(f)(r) for r in xs]), rtol=1e-12, atol=1e-14)


def test_tuple_variable_index_is_still_refused_clearly():
    def f(x):
        idx = (0, 1)
        return x[idx]
    with pytest.raises(s2s.errors.S2SError, match="index with a tuple"):
        s2s.grad(f)(np.ones((2, 2)))


def scatter_repeated(x):
    y = np.zeros(4)
    y[[1, 3, 1]] = x * np.array([1.0, 2.0, 3.0])
    return np.sum(y * np.arange(1.0, 5.0))


def gather_rows_repeated(A):
    return np.sum(A[[1, 1, 0], :] * np.arange(9.0).reshape(3, 3)) + np.sum(A[:, [2, 2]] ** 2)


@pytest.mark.parametrize("f,shape", [(scatter_repeated, (3,)), (gather_rows_repeated, (3, 3))],
                         ids=["scatter_repeated", "gather_rows_repeated"])
def test_repeated_positions_accumulate_or_keep_the_last_write_under_jit(f, shape):
    """x[[1, 1]] reads a row twice (its cotangent adds up); y[[1, 3, 1]] = v keeps the last write
    (the first v[0] gets no gradient). The compiled scatter once kept one of the repeats."""
    x = _x(shape)
    want = numeric_grad(f, (x,), 0)
    assert_close(s2s.grad(f)(x), want, rtol=1e-6, atol=1e-8)
    assert_close(s2s.jit(s2s.grad(f))(x), want, rtol=1e-6, atol=1e-8)
