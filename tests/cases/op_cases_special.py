"""Op cases: scipy.special, order statistics and eig, the arguments other cases left constant, and
np.fft (one small function per op; see op_cases.py).

Nothing here imports s2s: the functions run under plain NumPy."""
from __future__ import annotations

from cases.op_cases_base import *  # noqa: F401,F403  (the weights W..., K..., np, math, sp, case)
from cases.op_cases_base import _distinct, _u


# ===========================================================================
# scipy.special
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)), _u(r, 0.5, 2.0, (3, 4))))
def logsumexp_case(x, b):
    return sp.logsumexp(x) + np.sum(sp.logsumexp(x, axis=1) * W3) + \
        np.sum(sp.logsumexp(x, axis=0, keepdims=True) * W4) + np.sum(sp.logsumexp(x, axis=1, b=b) * W3)


@case(lambda r: (r.standard_normal((3, 4)),))
def expit_case(x):
    return np.sum(sp.expit(x) * W)


@case(lambda r: (_u(r, 0.1, 0.9),))
def logit_case(x):
    return np.sum(sp.logit(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def erf_case(x):
    return np.sum(sp.erf(x) * W) + np.sum(sp.erfc(x) * x * W)


@case(lambda r: (_u(r, 0.3, 4.0),))
def gammaln_case(x):
    return np.sum(sp.gammaln(x) * W) + np.sum(sp.digamma(x) * W)


@case(lambda r: (_u(r, 0.3, 2.0), _u(r, 0.3, 3.0, (4,))))
def xlogy_case(x, y):
    return np.sum(sp.xlogy(x, y) * W)


@case(lambda r: (_u(r, 0.1, 2.0),))
def entr_case(x):
    return np.sum(sp.entr(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def softmax_case(x):
    return np.sum(sp.softmax(x, axis=1) * W) + np.sum(sp.softmax(x) * W) + np.sum(sp.softmax(x, axis=0) ** 2 * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def log_softmax_case(x):
    return np.sum(sp.log_softmax(x, axis=1) * W) + np.sum(sp.log_softmax(x) * W)


@case(lambda r: (_u(r, 0.6, 2.8), _u(r, -0.8, -0.2)))
def gamma_case(x, z):
    # gammasgn is piecewise constant (nondiff): -1 on (-1, 0), a constant factor here
    return np.sum(sp.gamma(x) * W) + np.sum(sp.rgamma(x) * W) + np.sum(sp.gamma(z) * sp.gammasgn(z) * W) + \
        np.sum(sp.rgamma(z) * x * W)


@case(lambda r: (_u(r, 0.5, 3.0), _u(r, 0.5, 3.0, (4,))))
def beta_case(a, b):
    return np.sum(sp.beta(a, b) * W) + np.sum(sp.betaln(a, b) * W) + np.sum(sp.betaln(b, 2.5) * W4)


@case(lambda r: (_u(r, 0.1, 0.9),))
def betainc_gammainc_case(x):
    # derivatives in x only: the shape parameters are constants (an array one broadcast against x)
    return np.sum(sp.betainc(2.5, 1.5, x) * W) + np.sum(sp.betainc(np.abs(W4) + 0.5, 0.7, x) * W) + \
        np.sum(sp.gammainc(1.7, 3.0 * x) * W) + np.sum(sp.gammaincc(0.8, x + 0.5) * W) + \
        np.sum(sp.gammainc(1.0, x) * W)


@case(lambda r: (_u(r, 2.0, 4.0),))
def multigammaln_case(a):
    return np.sum(sp.multigammaln(a, 3) * W) + np.sum(sp.multigammaln(a + 1.0, 1) * W) + \
        sp.multigammaln(np.mean(a), 4)


@case(lambda r: (_u(r, 0.5, 3.0),))
def bessel_jy_case(x):
    # integer and half-integer orders as constants (an order array broadcast against x too)
    return np.sum(sp.jv(1.5, x) * W) + np.sum(sp.jv(np.abs(W4), x) * W) + np.sum(sp.yn(2, x) * W) + \
        np.sum(sp.yn(0, x + 0.5) * W) + np.sum(sp.j0(x) * W) + np.sum(sp.j1(x) * W) + \
        np.sum(sp.y0(x) * W) + np.sum(sp.y1(x + 0.5) * W)


@case(lambda r: (_u(r, 0.3, 2.5),))
def bessel_i_case(x):
    return np.sum(sp.iv(0.5, x) * W) + np.sum(sp.iv(np.abs(W4) + 0.5, x) * W) + np.sum(sp.ive(1.5, x) * W) + \
        np.sum(sp.ive(2.0, -x) * W) + np.sum(sp.i0(x) * W) + np.sum(sp.i1(x) * W)


@case(lambda r: (_u(r, -0.8, 0.8),))
def erfinv_case(x):
    return np.sum(sp.erfinv(x) * W) + np.sum(sp.erfcinv(x + 1.0) * W)


# ===========================================================================
# median / percentile / partition / eig
# ===========================================================================
W2114 = W24.reshape(2, 1, 1, 4)
W212 = W24[:, :2].reshape(2, 1, 2)


def _real_eig_matrix(rng, n=3):
    """A non-symmetric matrix with real, well separated eigenvalues (1, 2.5, 4.5)."""
    p = np.eye(n) + 0.3 * rng.standard_normal((n, n))
    return p @ np.diag(np.array([1.0, 2.5, 4.5][:n])) @ np.linalg.inv(p)


@case(lambda r: (_distinct(r),))
def median_case(x):
    return np.median(x) + np.sum(np.median(x, axis=0) * W4) + np.sum(np.median(x, axis=1, keepdims=True) ** 2 * K22)


@case(lambda r: (_distinct(r),))
def quantile_case(x):
    return np.sum(np.quantile(x, 0.3, axis=1) * W3) + np.sum(np.quantile(x, np.array([0.1, 0.9]), axis=0) * W24) + \
        np.quantile(x * x, 0.75)


@case(lambda r: (_distinct(r, (2, 3, 4)),))
def percentile_case(x):
    return np.sum(np.percentile(x, 40.0, axis=(0, 2)) * W3) + \
        np.sum(np.percentile(x, [20.0, 75.0], axis=(0, 1), keepdims=True) * W2114) + \
        np.sum(np.percentile(x, [35.0, 90.0], axis=-2) ** 2 * W212[..., :1] * W4)


@case(lambda r: (_distinct(r),))
def partition_case(x):
    # np.partition fixes the kth values and which values lie on either side, not their order there
    # (nor does this case depend on it)
    p = np.partition(x, 2, axis=1)
    q = np.partition(x, (0, 1), axis=0)
    return np.sum(p[:, 2] * W3) + np.sum(np.sum(p[:, :2] ** 2, axis=1) * W3) + np.sum(q[1] * W4) + \
        np.sum(q[0] ** 2 * W4) + np.partition(x, 5, axis=None)[5]


@case(lambda r: (_real_eig_matrix(r),))
def eigvals_case(a):
    w = np.linalg.eigvals(a)
    return np.sum(np.sort(w) * W3) + np.sum(w ** 2) * 0.1


EIG_SECOND = ("eig's eigenvector helpers (eig_vjp, eig_tangent) are registered without rules, like eigh_vjp: "
              "second derivatives through its v are refused (NoRuleError)")


@case(lambda r: (_real_eig_matrix(r),), hess_xfail=EIG_SECOND, rr_xfail=EIG_SECOND)
def eig_case(a):
    w, v = np.linalg.eig(a)
    o = np.argsort(w)
    vs = np.take(v, o, axis=1)
    return np.sum(np.take(w, o) * W3) + np.sum(vs * vs * W33) + np.sum(np.abs(vs[0]) * W3)


# ===========================================================================
# Arguments the other cases left constant (tests/ops/test_rule_table_coverage.py asks for
# every argument an adjoint differentiates to be varied by some case)
# ===========================================================================

@case(lambda r: (_u(r, 0.2, 0.7, (3,)),))
def math_more_functions_case(x):
    s = 0.0
    for i in range(3):
        v = x[i]
        s = s + math.acos(v) + math.asin(v) * math.cos(v) + math.atanh(v) * math.tan(v) + math.sinh(v) \
            + math.acosh(v + 1.5) + math.asinh(v) + math.cbrt(v) + math.exp2(v) + math.expm1(v) \
            + math.log10(v) * math.log2(v + 1.0) + math.degrees(v) * math.radians(v) \
            + math.atan2(v, 0.5 + v * v) + math.hypot(2.0, v) + math.pow(1.5, v) + float(v) * v
    return s


@case(lambda r: (_distinct(r), np.array([-0.9, -0.3, 0.05, 0.25]) + 0.01, np.array([[0.35], [0.6], [1.0]]) + 0.01))
def clip_keyword_bounds_case(a, lo, hi):
    return np.sum(np.clip(a, min=lo, max=hi) * W)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))))
def diff_append_case(x, p):
    return np.sum(np.diff(x, append=p) * W) + np.sum(np.diff(x, axis=1, prepend=p, append=p) ** 2 * W35)


@case(lambda r: (_u(r, 0.5, 3.0),))
def polygamma_case(x):
    return np.sum(sp.polygamma(1, x) * W) + np.sum(sp.polygamma(2, x) * W) + np.sum(sp.polygamma(0, x) * W)


# ops defined by other ops that were constants or had no rule (tests/ops/test_nondiff_audit.py)
@case(lambda r: (np.eye(3) * 2.0 + 0.3 * r.standard_normal((3, 3)),))
def cond_case(a):
    return np.linalg.cond(a) + np.linalg.cond(a, -2) * 0.5


@case(lambda r: (np.sort(r.uniform(-1.0, 3.0, 6)), np.array([0.0, 2.0, 1.0, 5.0]) + r.uniform(0, 0.3, 4)))
def interp_case(x, fp):
    return np.sum(np.interp(x, np.array([-0.5, 0.4, 1.3, 2.5]), fp) * W12[:6])



# np.fft and complex values inside a function (s2s/ops/fft/rules.py; more forms in tests/ops/test_fft.py)
@case(lambda r: (r.standard_normal((3, 8)),))
def fft_case(x):
    z = np.fft.fft(x)
    return np.sum(np.abs(z) * W38) + np.sum(np.fft.ifft(z * z, axis=1, norm="ortho").real * W38) \
        + np.sum(np.abs(np.fft.rfft(x)) ** 2 * W35) \
        + np.sum(np.fft.irfft(np.fft.rfft(x, n=6) * (1.0 + 0.5j), n=8) * W38)


@case(lambda r: (r.standard_normal((3, 4)),))
def complex_parts_case(a):
    z = a * np.exp(1j * a)
    return np.sum(np.real(z) * W) + np.sum(np.imag(z * z) * W) + np.sum(np.angle(z + 1.5) * W) \
        + np.sum(np.conj(z).imag * a * W)
