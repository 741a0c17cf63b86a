"""jit(grad(f)) of a function called without its default arguments: the defaults are constants for
such calls, so the compiled code specializes on them as on passed arguments (array tapes, not
Numba typed lists, which ran a 1,000-step loop's gradient 18x slower) and answers the same."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import s2s  # noqa: E402
from cases.fd import numeric_grad  # noqa: E402


def simulate(c, x0=1.0, steps=200):
    x = x0
    for i in range(steps):
        x = x + 0.01 * (-c * x + np.sin(x))
    return x


def weighted(w, X, scale=2.0, power=2):
    return np.sum(scale * np.tanh(X @ w) ** power)


@pytest.mark.parametrize("args", [(0.5,), (0.5, 1.0), (0.5, 1.0, 200), (0.5, 2.0, 50)],
                         ids=["both_left_out", "steps_left_out", "none_left_out", "other_values"])
def test_defaults_left_out_specialize_and_agree(args):
    jg = s2s.jit(s2s.grad(simulate), wait=True)
    got = jg(*args)
    np.testing.assert_allclose(got, s2s.grad(simulate)(*args), rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(simulate, args, 0), rtol=1e-6)
    source = jg.generated_for_args(*args).source
    assert "List()" not in source, source         # every tape preallocated: the trip count is known


def test_array_arguments_with_defaults():
    rng = np.random.default_rng(0)
    w, X = rng.normal(size=3), rng.normal(size=(7, 3))
    jg = s2s.jit(s2s.grad(weighted), wait=True)
    for args in ((w, X), (w, X, 0.5), (w, X, 0.5, 3)):
        np.testing.assert_allclose(jg(*args), s2s.grad(weighted)(*args), rtol=1e-12)
