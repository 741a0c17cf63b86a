"""Op helpers of the scipy.special rules (s2s/ops/special/rules.py).

The same-named spellings of the scipy.special functions that generated code calls (`expit(x)`),
which carry the scipy functions' rules (ruled), and the readable helpers of their adjoints
(logsumexp_weights, logsumexp_vjp_b, softmax_vjp, multigammaln_grad).

Every public function here is called by name from generated code and is bookkeeping, readable or
ruled (the three kinds: rules/__init__.py).
"""
from __future__ import annotations

import numpy as np

from ...runtime import expand_reduced, unbroadcast

try:  # scipy is optional: its rules register only when it is installed
    import scipy.special as _special
except ImportError:  # pragma: no cover
    _special = None


# =============================================================================
# Spellings of scipy.special functions in generated code (ruled)
# =============================================================================

def expit(x):
    return _special.expit(x)


def logit(x):
    return _special.logit(x)


def erf(x):
    return _special.erf(x)


def erfc(x):
    return _special.erfc(x)


def gammaln(x):
    return _special.gammaln(x)


def digamma(x):
    return _special.digamma(x)


def polygamma(n, x):
    return _special.polygamma(n, x)


def xlogy(x, y):
    return _special.xlogy(x, y)


def entr(x):
    return _special.entr(x)


def logsumexp(a, axis=None, b=None, keepdims=False):
    return _special.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


def softmax(x, axis=None):
    return _special.softmax(x, axis=axis)


def log_softmax(x, axis=None):
    return _special.log_softmax(x, axis=axis)


def beta(a, b):
    return _special.beta(a, b)


def betaln(a, b):
    return _special.betaln(a, b)


def betainc(a, b, x):
    return _special.betainc(a, b, x)


def gamma(x):
    return _special.gamma(x)


def gammasgn(x):
    return _special.gammasgn(x)


def rgamma(x):
    return _special.rgamma(x)


def gammainc(a, x):
    return _special.gammainc(a, x)


def gammaincc(a, x):
    return _special.gammaincc(a, x)


def multigammaln(a, d):
    return _special.multigammaln(a, d)


def jv(v, x):
    return _special.jv(v, x)


def yn(n, x):
    return _special.yn(n, x)


def j0(x):
    return _special.j0(x)


def j1(x):
    return _special.j1(x)


def y0(x):
    return _special.y0(x)


def y1(x):
    return _special.y1(x)


def i0(x):
    return _special.i0(x)


def i1(x):
    return _special.i1(x)


def iv(v, x):
    return _special.iv(v, x)


def ive(v, x):
    return _special.ive(v, x)


def erfinv(x):
    return _special.erfinv(x)


def erfcinv(x):
    return _special.erfcinv(x)


def logsumexp_weights(a, y, axis=None, b=None, keepdims=False):
    """d logsumexp / da: b * exp(a - y) with y expanded back over the reduced axes."""
    e = np.exp(a - expand_reduced(y, a, axis, keepdims))
    if b is None:
        return e
    return b * e


def logsumexp_vjp_b(g, a, y, axis=None, b=None, keepdims=False):
    e = np.exp(a - expand_reduced(y, a, axis, keepdims))
    return unbroadcast(expand_reduced(g, a, axis, keepdims) * e, b)


def softmax_vjp(g, y, axis=None):
    return y * (g - np.sum(g * y, axis=axis, keepdims=True))


def multigammaln_grad(a, d):
    """d multigammaln(a, d) / da: the sum of digamma(a - j / 2) over j = 0 .. d - 1 (elementwise in a)."""
    g = digamma(a)
    for j in range(1, d):
        g = g + digamma(a - 0.5 * j)
    return g
