"""A rule for a compiled third-party function (scipy.special.ndtr), as docs/rules.md shows."""

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad


@s2s.adjoint(sp.ndtr)
def _ndtr_adjoint(y, x):
    d[x] = d[y] * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)  # noqa: F821


@s2s.tangent(sp.ndtr)
def _ndtr_tangent(y, x):
    t[y] = t[x] * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)  # noqa: F821


def probit_loss(w, X, y):
    p = sp.ndtr(X @ w)
    return -np.sum(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = (rng.uniform(size=20) > 0.5).astype(float)
    return 0.3 * rng.normal(size=3), X, y


def test_reverse_and_forward_use_the_registered_rule():
    w, X, y = _data()
    g = s2s.grad(probit_loss)(w, X, y)
    assert_close(g, numeric_grad(probit_loss, (w, X, y), 0), rtol=1e-6)
    v = np.array([0.3, -1.0, 0.5])
    _, jv = s2s.jvp(probit_loss, (w, X, y), (v, np.zeros_like(X), np.zeros_like(y)))
    assert np.isclose(jv, g @ v, rtol=1e-10)
    assert "np.exp(-0.5 * t1 * t1) / np.sqrt(2.0 * np.pi)" in s2s.show(probit_loss)
