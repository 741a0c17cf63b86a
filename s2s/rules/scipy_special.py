"""scipy.special: expit logit erf erfc gammaln digamma polygamma xlogy logsumexp softmax log_softmax.

Rules are registered for the scipy functions themselves (by object, so
`scipy.special.expit(x)` and `from scipy.special import expit` both resolve
here).  Generated code spells them by the same-named wrappers in
s2s.ophelpers (`expit(x)`), which carry the same rules, so code s2s emits can
be transformed again.  Nothing registers when scipy is not installed.
"""
import numpy as np

from .. import ophelpers as oh
from .registry import adjoint, tangent

try:
    import scipy.special as sp
except ImportError:  # pragma: no cover
    sp = None


def _op(name, broadcasts=False, shape_only=()):
    """Register the decorated adjoint (or tangent) for scipy.special.<name> and its ophelpers spelling."""
    def adj(template):
        for fn in (getattr(sp, name), getattr(oh, name)):
            adjoint(fn, name, broadcasts=broadcasts, shape_only=shape_only)(template)
        return template

    def tan(template):
        for fn in (getattr(sp, name), getattr(oh, name)):
            tangent(fn, name, broadcasts=broadcasts, shape_only=shape_only)(template)
        return template
    return adj, tan


if sp is not None:
    _adj, _tan = _op("expit")

    @_adj
    def expit_rule(y, x):
        d[x] = d[y] * y * (1.0 - y)

    @_tan
    def expit_rule_(y, x):
        t[y] = t[x] * y * (1.0 - y)

    _adj, _tan = _op("logit")

    @_adj
    def logit_rule(y, x):
        d[x] = d[y] / (x * (1.0 - x))

    @_tan
    def logit_rule_(y, x):
        t[y] = t[x] / (x * (1.0 - x))

    _adj, _tan = _op("erf")

    @_adj
    def erf_rule(y, x):
        d[x] = d[y] * 1.1283791670955126 * np.exp(-x * x)

    @_tan
    def erf_rule_(y, x):
        t[y] = t[x] * 1.1283791670955126 * np.exp(-x * x)

    _adj, _tan = _op("erfc")

    @_adj
    def erfc_rule(y, x):
        d[x] = -d[y] * 1.1283791670955126 * np.exp(-x * x)

    @_tan
    def erfc_rule_(y, x):
        t[y] = -t[x] * 1.1283791670955126 * np.exp(-x * x)

    _adj, _tan = _op("gammaln")

    @_adj
    def gammaln_rule(y, x):
        d[x] = d[y] * digamma(x)

    @_tan
    def gammaln_rule_(y, x):
        t[y] = t[x] * digamma(x)

    _adj, _tan = _op("digamma")

    @_adj
    def digamma_rule(y, x):
        d[x] = d[y] * polygamma(1, x)

    @_tan
    def digamma_rule_(y, x):
        t[y] = t[x] * polygamma(1, x)

    _adj, _tan = _op("polygamma", broadcasts=True, shape_only=("n",))

    @_adj
    def polygamma_rule(y, n, x):
        d[x] = d[y] * polygamma(n + 1, x)

    @_tan
    def polygamma_rule_(y, n, x):
        t[y] = t[x] * polygamma(n + 1, x)

    _adj, _tan = _op("xlogy", broadcasts=True)

    @_adj
    def xlogy_rule(z, x, y):
        d[x] = d[z] * np.log(y)
        d[y] = d[z] * x / y

    @_tan
    def xlogy_rule_(z, x, y):
        t[z] = t[x] * np.log(y) + t[y] * x / y

    _adj, _tan = _op("logsumexp")

    @_adj
    def logsumexp_rule(y, a, axis=None, b=None, keepdims=False):
        d[a] = expand_reduced(d[y], a, axis, keepdims) * logsumexp_weights(a, y, axis, b, keepdims)
        d[b] = logsumexp_vjp_b(d[y], a, y, axis, b, keepdims)

    @_tan
    def logsumexp_rule_(y, a, axis=None, b=None, keepdims=False):
        t[y] = (np.sum(t[a] * logsumexp_weights(a, y, axis, b, keepdims), axis=axis, keepdims=keepdims)
                + np.sum(t[b] * logsumexp_weights(a, y, axis, None, keepdims), axis=axis, keepdims=keepdims))

    _adj, _tan = _op("softmax")

    @_adj
    def softmax_rule(y, x, axis=None):
        d[x] = softmax_vjp(d[y], y, axis)

    @_tan
    def softmax_rule_(y, x, axis=None):
        t[y] = y * t[x] - y * np.sum(t[x] * y, axis=axis, keepdims=True)

    _adj, _tan = _op("log_softmax")

    @_adj
    def log_softmax_rule(y, x, axis=None):
        d[x] = d[y] - np.exp(y) * np.sum(d[y], axis=axis, keepdims=True)

    @_tan
    def log_softmax_rule_(y, x, axis=None):
        t[y] = t[x] - np.sum(t[x] * np.exp(y), axis=axis, keepdims=True)

# Readable (differentiated through): logsumexp_weights logsumexp_vjp_b softmax_vjp.
