"""A rule for a compiled third-party function (scipy.special.ndtri), as docs/rules.md shows.

(s2s defines scipy.special.ndtr itself now; ndtri, the inverse normal CDF, has no s2s definition.)"""

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad


@s2s.adjoint(sp.ndtri)
def _ndtri_adjoint(y, x):
    d[x] = d[y] * np.sqrt(2.0 * np.pi) * np.exp(0.5 * y * y)  # noqa: F821


@s2s.tangent(sp.ndtri)
def _ndtri_tangent(y, x):
    t[y] = t[x] * np.sqrt(2.0 * np.pi) * np.exp(0.5 * y * y)  # noqa: F821


def probit_scores(w, X, y):
    z = sp.ndtri(sp.expit(X @ w))
    return np.sum((z - y) ** 2)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = rng.normal(size=20)
    return 0.3 * rng.normal(size=3), X, y


def test_reverse_and_forward_use_the_registered_rule():
    w, X, y = _data()
    g = s2s.grad(probit_scores)(w, X, y)
    assert_close(g, numeric_grad(probit_scores, (w, X, y), 0), rtol=1e-6)
    v = np.array([0.3, -1.0, 0.5])
    _, jv = s2s.jvp(probit_scores, (w, X, y), (v, np.zeros_like(X), np.zeros_like(y)))
    assert np.isclose(jv, g @ v, rtol=1e-10)
    assert "np.sqrt(2.0 * np.pi) * np.exp(0.5 * z * z)" in s2s.show(probit_scores)
