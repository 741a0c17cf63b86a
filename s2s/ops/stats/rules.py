"""scipy.stats: the densities of norm, t, multivariate_normal, gamma, beta, poisson, dirichlet, expon
and laplace, as ops defined by other ops (as autograd's autograd/scipy/stats/*.py writes them).

Each function below computes what the scipy.stats method it stands for computes (`norm.logpdf(x,
loc=0, scale=1)`), with NumPy and scipy.special operations that have rules, so every transform
(grad, jvp, vmap, jit, hessian) follows from the definition, as for s2s/ops/composite/rules.py.
The methods are bound methods of scipy's distribution objects: the table keys them by (object,
function) (registry._key), so `norm.logpdf`, `scipy.stats.norm.logpdf` and `st.norm.logpdf` are
one op, and a method of another object (a frozen `norm(0, 1)`, a distribution built by the user)
is not this op.  scipy.stats takes as long to import as s2s, so the table registers these only when
a call first needs them (registry.defer_composites): normalization looks the method up, the user
having imported scipy.stats already.

What the definitions follow of scipy: the arguments by the same names, positional or keyword;
broadcasting; -inf (log) and 0 outside the support (gamma and expon on x >= 0, beta on [0, 1],
poisson on the integers >= loc); NaN for invalid parameters (scale, df, a, b <= 0, mu < 0); the
layouts of multivariate_normal (the last axis of x holds a point's components; cov a matrix, a
vector of variances or one variance; the output squeezed) and dirichlet (the first axis of x holds
the components, the last one may be left out).  What they do not: the values scipy refuses with
an error (an x off the simplex for dirichlet, a singular cov: np.linalg.cholesky raises LinAlgError
there, allow_singular=True included).  Derivatives: in x, loc, scale and every shape parameter, and
in mean and cov (which, as np.linalg.cholesky and scipy's eigh, reads cov's lower triangle only:
the cotangent of cov lives there).  No derivative in poisson's integer k (its pmf is a step
function of it), and none in the shape parameters of the cdfs written with betainc or gammainc
(t.cdf's df, gamma.cdf's a, beta.cdf's a and b): those ops refuse such a derivative with an error.
"""
from __future__ import annotations

import numpy as np

from ...runtime import stop_gradient
from ...rules.registry import defer_composites, register_composite

try:
    from scipy.special import betainc, betaln, erfc, gammainc, gammaln, xlogy
    HAVE_SCIPY = True
except ImportError:  # pragma: no cover
    HAVE_SCIPY = False

_LOG_2PI = float(np.log(2.0 * np.pi))
_HALF_LOG_2PI = 0.5 * _LOG_2PI
_LOG_2 = float(np.log(2.0))
_SQRT_HALF = float(np.sqrt(0.5))


# ----- helpers -----

def _valid(value, ok):
    # NaN where a parameter is out of its range, as scipy gives
    return np.where(ok, value, np.nan)


def _log_ndtr(y):
    # log Phi(y) in both tails, as scipy.special.log_ndtr computes it: log1p of minus the upper tail
    # above 0, log of the lower tail down to -20, and below that the asymptotic series of
    # Phi(y) phi(y)^-1 |y| (each piece reads y only where it is chosen: no inf times a zero cotangent)
    upper = y > 0.0
    far = y < -20.0
    yu = np.where(upper, y, 1.0)
    ym = np.where(upper, 0.0, np.where(far, -20.0, y))
    yf = np.where(far, y, -30.0)
    z = 1.0 / (yf * yf)
    series = 1.0 + z * (-1.0 + z * (3.0 + z * (-15.0 + z * (105.0 + z * (-945.0 + z * (10395.0 + z * (
        -135135.0 + z * 2027025.0)))))))
    far_log = -0.5 * yf * yf - np.log(-yf) - _HALF_LOG_2PI + np.log(series)
    upper_log = np.log1p(-0.5 * erfc(yu * _SQRT_HALF))
    middle_log = np.log(0.5 * erfc(-ym * _SQRT_HALF))
    return np.where(upper, upper_log, np.where(far, far_log, middle_log))


# ----- norm -----

def norm_logpdf(x, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    return _valid(-0.5 * y * y - _HALF_LOG_2PI - np.log(scale), scale > 0.0)


def norm_pdf(x, loc=0.0, scale=1.0):
    return np.exp(norm_logpdf(x, loc, scale))


def norm_cdf(x, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    return _valid(0.5 * erfc(-y * _SQRT_HALF), scale > 0.0)


def norm_logcdf(x, loc=0.0, scale=1.0):
    return _valid(_log_ndtr((x - loc) / scale), scale > 0.0)


def norm_sf(x, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    return _valid(0.5 * erfc(y * _SQRT_HALF), scale > 0.0)


def norm_logsf(x, loc=0.0, scale=1.0):
    return _valid(_log_ndtr((loc - x) / scale), scale > 0.0)


# ----- t -----

def t_logpdf(x, df, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    logp = (gammaln(0.5 * (df + 1.0)) - gammaln(0.5 * df) - 0.5 * np.log(df * np.pi) - np.log(scale)
            - 0.5 * (df + 1.0) * np.log1p(y * y / df))
    return _valid(logp, np.logical_and(df > 0.0, scale > 0.0))


def t_pdf(x, df, loc=0.0, scale=1.0):
    return np.exp(t_logpdf(x, df, loc, scale))


def t_cdf(x, df, loc=0.0, scale=1.0):
    # one tail is I(df / (df + y^2); df/2, 1/2) / 2 (no derivative in df: betainc's a)
    y = (x - loc) / scale
    tail = 0.5 * betainc(0.5 * df, 0.5, df / (df + y * y))
    return _valid(np.where(y < 0.0, tail, 1.0 - tail), np.logical_and(df > 0.0, scale > 0.0))


# ----- multivariate_normal -----

def multivariate_normal_logpdf(x, mean=None, cov=1, allow_singular=False):
    # cov: a matrix, a vector (the variances) or a number (times the identity); written without a
    # branch on its rank, which Numba would type both ways
    dim = np.shape(np.atleast_1d(cov))[0]
    if mean is not None:
        dim = np.size(mean)
    L = np.linalg.cholesky(np.where(np.ndim(cov) == 2, cov, np.eye(dim) * cov))
    center = np.zeros(dim)
    if mean is not None:
        center = center + mean
    # the last axis of x holds a point's components; a number, or a vector when the dimension is 1,
    # holds points of one component (scipy's _process_quantiles); the result squeezed as scipy's.
    # One shape for both (no branch: compiled code types a shape tuple of one length): the -1 is
    # 1 for points of `dim` components, and the vector's length for points of one
    points = np.shape(x)[:-1] + (-1,)
    z = np.linalg.solve(L, np.transpose(np.reshape(x - center, (-1, dim))))
    maha = np.sum(z * z, axis=0)
    logp = -0.5 * (dim * _LOG_2PI + maha) - np.sum(np.log(np.diagonal(L)))
    return np.squeeze(np.reshape(logp, points))


def multivariate_normal_pdf(x, mean=None, cov=1, allow_singular=False):
    return np.exp(multivariate_normal_logpdf(x, mean, cov, allow_singular))


# ----- gamma -----

def gamma_logpdf(x, a, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    inside = y >= 0.0
    ys = np.where(inside, y, 1.0)
    logp = np.where(inside, xlogy(a - 1.0, ys) - ys - gammaln(a), -np.inf) - np.log(scale)
    return _valid(logp, np.logical_and(a > 0.0, scale > 0.0))


def gamma_pdf(x, a, loc=0.0, scale=1.0):
    return np.exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x, a, loc=0.0, scale=1.0):
    # the regularized lower incomplete gamma function (no derivative in a: gammainc's a)
    y = (x - loc) / scale
    inside = y > 0.0
    return _valid(np.where(inside, gammainc(a, np.where(inside, y, 1.0)), 0.0), np.logical_and(a > 0.0, scale > 0.0))


# ----- beta -----

def beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    inside = np.logical_and(y >= 0.0, y <= 1.0)
    ys = np.where(inside, y, 0.5)
    logp = np.where(inside, xlogy(a - 1.0, ys) + xlogy(b - 1.0, 1.0 - ys) - betaln(a, b), -np.inf) - np.log(scale)
    return _valid(logp, np.logical_and(np.logical_and(a > 0.0, b > 0.0), scale > 0.0))


def beta_pdf(x, a, b, loc=0.0, scale=1.0):
    return np.exp(beta_logpdf(x, a, b, loc, scale))


def beta_cdf(x, a, b, loc=0.0, scale=1.0):
    # the regularized incomplete beta function (no derivative in a, b: betainc's)
    y = (x - loc) / scale
    inside = np.logical_and(y > 0.0, y < 1.0)
    inner = betainc(a, b, np.where(inside, y, 0.5))
    return _valid(np.where(inside, inner, np.where(y <= 0.0, 0.0, 1.0)),
                  np.logical_and(np.logical_and(a > 0.0, b > 0.0), scale > 0.0))


# ----- poisson -----

def poisson_logpmf(k, mu, loc=0):
    # k counts (no derivative: the pmf is a step function of it); -inf off the integers >= loc
    n = stop_gradient(k - loc)
    inside = np.logical_and(n >= 0.0, n == np.floor(n))
    ns = np.where(inside, n, 0.0)
    return _valid(np.where(inside, xlogy(ns, mu) - gammaln(ns + 1.0) - mu, -np.inf), mu >= 0.0)


def poisson_pmf(k, mu, loc=0):
    return np.exp(poisson_logpmf(k, mu, loc))


# ----- dirichlet -----

def dirichlet_logpdf(x, alpha):
    # scipy's layout: the components on x's first axis (x of shape (k,) or (k, n)); the last one may
    # be left out (1 minus the others' sum)
    if np.shape(x)[0] + 1 == np.shape(alpha)[0]:
        x = np.concatenate((x, 1.0 - np.sum(x, axis=0, keepdims=True)), axis=0)
    log_b = np.sum(gammaln(alpha)) - gammaln(np.sum(alpha))
    logp = np.sum(np.transpose(xlogy(alpha - 1.0, np.transpose(x))), axis=0) - log_b
    return np.squeeze(_valid(logp, np.all(alpha > 0.0)))


def dirichlet_pdf(x, alpha):
    return np.exp(dirichlet_logpdf(x, alpha))


# ----- expon, laplace -----

def expon_logpdf(x, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    return _valid(np.where(y >= 0.0, -y, -np.inf) - np.log(scale), scale > 0.0)


def expon_pdf(x, loc=0.0, scale=1.0):
    return np.exp(expon_logpdf(x, loc, scale))


def expon_cdf(x, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    return _valid(np.where(y > 0.0, -np.expm1(-np.where(y > 0.0, y, 0.0)), 0.0), scale > 0.0)


def laplace_logpdf(x, loc=0.0, scale=1.0):
    return _valid(-np.abs((x - loc) / scale) - _LOG_2 - np.log(scale), scale > 0.0)


def laplace_pdf(x, loc=0.0, scale=1.0):
    return np.exp(laplace_logpdf(x, loc, scale))


def laplace_cdf(x, loc=0.0, scale=1.0):
    y = (x - loc) / scale
    half = 0.5 * np.exp(-np.abs(y))
    return _valid(np.where(y < 0.0, half, 1.0 - half), scale > 0.0)


# ----- the table -----

# (distribution, method, definition, arguments refused (an error if differentiated), arguments with
# no derivative (counts, flags)): docs/make_op_table.py lists them
DISTRIBUTIONS = (
    ("norm", "logpdf", norm_logpdf, (), ()),
    ("norm", "pdf", norm_pdf, (), ()),
    ("norm", "cdf", norm_cdf, (), ()),
    ("norm", "logcdf", norm_logcdf, (), ()),
    ("norm", "sf", norm_sf, (), ()),
    ("norm", "logsf", norm_logsf, (), ()),
    ("t", "logpdf", t_logpdf, (), ()),
    ("t", "pdf", t_pdf, (), ()),
    ("t", "cdf", t_cdf, ("df",), ()),
    ("multivariate_normal", "logpdf", multivariate_normal_logpdf, (), ("allow_singular",)),
    ("multivariate_normal", "pdf", multivariate_normal_pdf, (), ("allow_singular",)),
    ("gamma", "logpdf", gamma_logpdf, (), ()),
    ("gamma", "pdf", gamma_pdf, (), ()),
    ("gamma", "cdf", gamma_cdf, ("a",), ()),
    ("beta", "logpdf", beta_logpdf, (), ()),
    ("beta", "pdf", beta_pdf, (), ()),
    ("beta", "cdf", beta_cdf, ("a", "b"), ()),
    ("poisson", "logpmf", poisson_logpmf, (), ("k", "loc")),
    ("poisson", "pmf", poisson_pmf, (), ("k", "loc")),
    ("dirichlet", "logpdf", dirichlet_logpdf, (), ()),
    ("dirichlet", "pdf", dirichlet_pdf, (), ()),
    ("expon", "logpdf", expon_logpdf, (), ()),
    ("expon", "pdf", expon_pdf, (), ()),
    ("expon", "cdf", expon_cdf, (), ()),
    ("laplace", "logpdf", laplace_logpdf, (), ()),
    ("laplace", "pdf", laplace_pdf, (), ()),
    ("laplace", "cdf", laplace_cdf, (), ()),
)


def _install() -> None:
    import scipy.stats as st
    for dist, method, definition, _, _ in DISTRIBUTIONS:
        register_composite(getattr(getattr(st, dist), method), definition)


if HAVE_SCIPY:
    defer_composites("scipy.stats", _install)


def ndtr(x):
    # the standard normal CDF, as cephes computes it away from 0: erfc of -x / sqrt(2), halved
    return 0.5 * erfc(-x * _SQRT_HALF)


if HAVE_SCIPY:       # (this module loads once the user's code imported scipy.special: rules/table.py)
    import scipy.special as _sp
    register_composite(_sp.ndtr, ndtr)
    register_composite(_sp.log_ndtr, _log_ndtr)
