"""Tuple and list arithmetic in user code: `(n,) + x.shape`, `(a, b) + (c,)`.

A literal added to a runtime tuple once lost the literal (NameError in the generated code);
two literals concatenate at transform time, their elements staying separate values.
"""

import numpy as np
import pytest


import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad




def literal_plus_shape(x):
    n = np.size(x)
    b = np.reshape(x, (n,) + np.shape(x)[1:])
    return np.sum(b ** 2 * np.arange(1.0, n + 1.0))


def shape_plus_literal(x):
    return np.sum(np.reshape(x, x.shape + (1,)) ** 3)


def literal_plus_literal_of_arrays(x):
    t = (x, 2.0 * x) + (x ** 2,)
    return np.sum(np.stack(t) * np.arange(3.0)[:, None])


def list_plus_list(x):
    parts = [np.sin(x)] + [x * x, x]
    total = 0.0
    for p in parts:
        total = total + np.sum(p * p)
    return total


CASES = [literal_plus_shape, shape_plus_literal, literal_plus_literal_of_arrays, list_plus_list]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_grad_matches_finite_differences(f):
    x = np.array([0.3, 1.2, -0.5])
    assert_close(s2s.grad(f)(x), numeric_grad(f, (x,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jit_grad_and_vmap_agree(f):
    x = np.array([0.3, 1.2, -0.5])
    assert_close(s2s.jit(s2s.grad(f))(x), s2s.grad(f)(x), rtol=1e-12, atol=1e-14)
    xs = np.stack([x, x - 1.0])
    assert_close(s2s.vmap(s2s.grad(f))(xs), np.stack([s2s.grad(f)(r) for r in xs]), rtol=1e-12, atol=1e-14)


def test_dicts_do_not_concatenate():
    def bad(x):
        d = {"a": x}
        e = {"b": x}
        return np.sum((d + e)["a"])
    with pytest.raises(Exception):
        s2s.grad(bad)(np.ones(2))
