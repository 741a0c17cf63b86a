"""scipy.special: expit logit erf erfc gammaln digamma polygamma xlogy entr logsumexp softmax log_softmax,
gamma rgamma gammasgn (nondiff) beta betaln betainc gammainc gammaincc multigammaln, the Bessel functions
jv yn iv ive j0 j1 y0 y1 i0 i1, erfinv erfcinv.

Rules are registered for the scipy functions themselves (by object, so
`scipy.special.expit(x)` and `from scipy.special import expit` both resolve
here).  Generated code spells them by the same-named wrappers in
ops/special/helpers.py (`expit(x)`), which carry the same rules, so code s2s emits can
be transformed again.  Nothing registers when scipy is not installed.
"""
import numpy as np

from . import helpers as xh
from ...rules.registry import adjoint, nondiff, tangent

try:
    import scipy.special as sp
except ImportError:  # pragma: no cover
    sp = None


def _op(name, broadcasts=False, shape_only=()):
    """Register the decorated adjoint (or tangent) for scipy.special.<name> and its special/helpers.py spelling."""
    def adj(template):
        for fn in (getattr(sp, name), getattr(xh, name)):
            adjoint(fn, name, broadcasts=broadcasts, shape_only=shape_only)(template)
        return template

    def tan(template):
        for fn in (getattr(sp, name), getattr(xh, name)):
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

    # entr(x) = -x log x, 0 at 0, -inf below: the slope -(log x + 1) is +inf at 0, and 0 below,
    # where entr is the constant -inf (JAX's convention too)
    _adj, _tan = _op("entr")

    @_adj
    def entr_rule(y, x):
        d[x] = d[y] * np.where(x < 0.0, 0.0, -(np.log(x) + 1.0))

    @_tan
    def entr_rule_(y, x):
        t[y] = t[x] * np.where(x < 0.0, 0.0, -(np.log(x) + 1.0))

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

    # ----- gamma and beta functions ---------------------------------------------------------------
    _adj, _tan = _op("gamma")

    @_adj
    def gamma_rule(y, x):
        d[x] = d[y] * y * digamma(x)

    @_tan
    def gamma_rule_(y, x):
        t[y] = t[x] * y * digamma(x)

    _adj, _tan = _op("rgamma")

    @_adj
    def rgamma_rule(y, x):
        d[x] = -d[y] * y * digamma(x)

    @_tan
    def rgamma_rule_(y, x):
        t[y] = -t[x] * y * digamma(x)

    # the sign of gamma: piecewise constant, like np.sign
    for _fn in (sp.gammasgn, xh.gammasgn):
        nondiff(_fn, "gammasgn")

    _adj, _tan = _op("beta", broadcasts=True)

    @_adj
    def beta_rule(y, a, b):
        s = digamma(a + b)
        d[a] = d[y] * y * (digamma(a) - s)
        d[b] = d[y] * y * (digamma(b) - s)

    @_tan
    def beta_rule_(y, a, b):
        s = digamma(a + b)
        t[y] = y * (t[a] * (digamma(a) - s) + t[b] * (digamma(b) - s))

    _adj, _tan = _op("betaln", broadcasts=True)

    @_adj
    def betaln_rule(y, a, b):
        s = digamma(a + b)
        d[a] = d[y] * (digamma(a) - s)
        d[b] = d[y] * (digamma(b) - s)

    @_tan
    def betaln_rule_(y, a, b):
        s = digamma(a + b)
        t[y] = t[a] * (digamma(a) - s) + t[b] * (digamma(b) - s)

    # Regularized incomplete beta and gamma functions: derivatives in x only (the densities); the
    # shape parameters a, b have no d[...] line, so differentiating them is refused.
    _adj, _tan = _op("betainc", broadcasts=True)

    @_adj
    def betainc_rule(y, a, b, x):
        d[x] = d[y] * np.exp(xlogy(a - 1.0, x) + xlogy(b - 1.0, 1.0 - x) - betaln(a, b))

    @_tan
    def betainc_rule_(y, a, b, x):
        t[y] = t[x] * np.exp(xlogy(a - 1.0, x) + xlogy(b - 1.0, 1.0 - x) - betaln(a, b))

    _adj, _tan = _op("gammainc", broadcasts=True)

    @_adj
    def gammainc_rule(y, a, x):
        d[x] = d[y] * np.exp(xlogy(a - 1.0, x) - x - gammaln(a))

    @_tan
    def gammainc_rule_(y, a, x):
        t[y] = t[x] * np.exp(xlogy(a - 1.0, x) - x - gammaln(a))

    _adj, _tan = _op("gammaincc", broadcasts=True)

    @_adj
    def gammaincc_rule(y, a, x):
        d[x] = -d[y] * np.exp(xlogy(a - 1.0, x) - x - gammaln(a))

    @_tan
    def gammaincc_rule_(y, a, x):
        t[y] = -t[x] * np.exp(xlogy(a - 1.0, x) - x - gammaln(a))

    # multigammaln(a, d): d, the (integer) dimension, carries no derivative.  (The adjoint template
    # reads the parameter d as a value; d[...] is its cotangent notation.)
    _adj, _tan = _op("multigammaln", shape_only=("d",))

    @_adj
    def multigammaln_rule(y, a, d):
        d[a] = d[y] * multigammaln_grad(a, d)

    @_tan
    def multigammaln_rule_(y, a, d):
        t[y] = t[a] * multigammaln_grad(a, d)

    # ----- Bessel functions: derivatives in x only (an order v has no d[...] line: refused) -----------
    _adj, _tan = _op("jv", broadcasts=True)

    @_adj
    def jv_rule(y, v, x):
        d[x] = d[y] * 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x))

    @_tan
    def jv_rule_(y, v, x):
        t[y] = t[x] * 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x))

    _adj, _tan = _op("yn", broadcasts=True, shape_only=("n",))

    @_adj
    def yn_rule(y, n, x):
        d[x] = d[y] * 0.5 * (yn(n - 1, x) - yn(n + 1, x))

    @_tan
    def yn_rule_(y, n, x):
        t[y] = t[x] * 0.5 * (yn(n - 1, x) - yn(n + 1, x))

    _adj, _tan = _op("iv", broadcasts=True)

    @_adj
    def iv_rule(y, v, x):
        d[x] = d[y] * 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x))

    @_tan
    def iv_rule_(y, v, x):
        t[y] = t[x] * 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x))

    _adj, _tan = _op("ive", broadcasts=True)

    @_adj
    def ive_rule(y, v, x):
        d[x] = d[y] * (0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - np.sign(x) * y)

    @_tan
    def ive_rule_(y, v, x):
        t[y] = t[x] * (0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - np.sign(x) * y)

    _adj, _tan = _op("j0")

    @_adj
    def j0_rule(y, x):
        d[x] = -d[y] * j1(x)

    @_tan
    def j0_rule_(y, x):
        t[y] = -t[x] * j1(x)

    _adj, _tan = _op("j1")

    @_adj
    def j1_rule(y, x):
        d[x] = d[y] * 0.5 * (j0(x) - jv(2.0, x))

    @_tan
    def j1_rule_(y, x):
        t[y] = t[x] * 0.5 * (j0(x) - jv(2.0, x))

    _adj, _tan = _op("y0")

    @_adj
    def y0_rule(y, x):
        d[x] = -d[y] * y1(x)

    @_tan
    def y0_rule_(y, x):
        t[y] = -t[x] * y1(x)

    _adj, _tan = _op("y1")

    @_adj
    def y1_rule(y, x):
        d[x] = d[y] * 0.5 * (y0(x) - yn(2, x))

    @_tan
    def y1_rule_(y, x):
        t[y] = t[x] * 0.5 * (y0(x) - yn(2, x))

    _adj, _tan = _op("i0")

    @_adj
    def i0_rule(y, x):
        d[x] = d[y] * i1(x)

    @_tan
    def i0_rule_(y, x):
        t[y] = t[x] * i1(x)

    _adj, _tan = _op("i1")

    @_adj
    def i1_rule(y, x):
        d[x] = d[y] * 0.5 * (i0(x) + iv(2.0, x))

    @_tan
    def i1_rule_(y, x):
        t[y] = t[x] * 0.5 * (i0(x) + iv(2.0, x))

    # ----- inverse error functions: from the result y -------------------------------------------
    _adj, _tan = _op("erfinv")

    @_adj
    def erfinv_rule(y, x):
        d[x] = d[y] * 0.8862269254527579 * np.exp(y * y)

    @_tan
    def erfinv_rule_(y, x):
        t[y] = t[x] * 0.8862269254527579 * np.exp(y * y)

    _adj, _tan = _op("erfcinv")

    @_adj
    def erfcinv_rule(y, x):
        d[x] = -d[y] * 0.8862269254527579 * np.exp(y * y)

    @_tan
    def erfcinv_rule_(y, x):
        t[y] = -t[x] * 0.8862269254527579 * np.exp(y * y)

# Readable (differentiated through): logsumexp_weights logsumexp_vjp_b softmax_vjp multigammaln_grad.
