"""Module-level lambdas inlined into a differentiated function get identifier names."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lambda_cases as L  # noqa: E402
import s2s  # noqa: E402
from fd import assert_close, numeric_grad  # noqa: E402


def test_lambda_called_from_a_function_in_every_transform():
    x = np.array([0.3, -0.4, 0.8])
    g = s2s.grad(L.loss)(x)
    assert_close(g, np.cos(x * L.C) * L.C, rtol=1e-12, atol=0.0, what="grad")
    assert_close(g, numeric_grad(L.loss, (x,), 0), rtol=1e-6, atol=1e-8, what="grad vs FD")
    np.testing.assert_allclose(s2s.jit(s2s.grad(L.loss))(x), g, rtol=1e-12, atol=0.0)
    _, t = s2s.jvp(L.loss, (x,), (np.ones(3),))
    assert abs(t - np.sum(g)) < 1e-12
    xs = np.stack([x, 2.0 * x])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(L.loss))(xs), np.stack([s2s.grad(L.loss)(r) for r in xs]),
                               rtol=1e-12, atol=0.0)


def test_grad_of_the_lambda_itself():
    assert s2s.grad(L.scale)(2.0, 3.0) == 3.0
    assert s2s.grad(L.scale, argnums=1)(2.0, 3.0) == 2.0
