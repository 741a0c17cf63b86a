"""scipy.stats distributions (s2s/ops/stats/rules.py): norm, t, multivariate_normal, gamma, beta,
poisson, dirichlet, expon and laplace, defined by NumPy and scipy.special ops and inlined in place
of the scipy method.  Every case: the value against scipy's own (the function run by Python), the
gradient in each differentiable argument against central finite differences of scipy's function.
Then the spellings of the call (`norm.logpdf`, `st.norm.logpdf`, `scipy.stats.norm.logpdf`, an
alias), keyword arguments, jvp/jacfwd, hessian, vmap(grad) against a loop, jit(grad) against grad,
the arguments with no derivative, frozen distributions, and the table's key for bound methods."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats
import scipy.stats as st
from scipy.stats import multivariate_normal as mvn
from scipy.stats import norm

import s2s
from cases.fd import assert_close, numeric_grad

rng = np.random.default_rng(7)
X4 = np.array([-1.3, -0.2, 0.4, 2.1])
W4 = np.array([0.7, -1.1, 0.4, 1.3])
POS4 = np.array([0.3, 0.9, 1.7, 4.2])
UNIT4 = np.array([0.1, 0.35, 0.6, 0.92])
TAILS = np.array([-30.0, -21.0, -6.0, 0.7, 9.0])
_A = rng.normal(size=(3, 3))
COV = _A @ _A.T + np.eye(3)
MEAN = rng.normal(size=3)
PTS = rng.normal(size=(5, 3))
ALPHA = np.array([0.8, 2.0, 3.5])
SIMPLEX = np.array([0.2, 0.3, 0.5])


# ----- the cases: a scalar function of the arguments, with scipy's call inside -----

def norm_logpdf(x, loc, scale):
    return np.sum(W4 * norm.logpdf(x, loc, scale))


def norm_logpdf_broadcast(x, loc, scale):
    return np.sum(np.sin(norm.logpdf(x[:, None], loc=loc, scale=scale)))


def norm_pdf(x, loc, scale):
    return np.sum(W4 * st.norm.pdf(x, loc, scale=scale))


def norm_cdf(x, loc, scale):
    return np.sum(W4 * scipy.stats.norm.cdf(x, loc=loc, scale=scale))


def norm_logcdf_tails(x, loc):
    return np.sum(norm.logcdf(x, loc))


def norm_sf(x, scale):
    return np.sum(W4 * norm.sf(x, scale=scale))


def norm_logsf_tails(x, scale):
    return np.sum(norm.logsf(-x, 0.0, scale))


def t_logpdf(x, df, loc, scale):
    return np.sum(W4 * st.t.logpdf(x, df, loc, scale))


def t_pdf(x, df):
    return np.sum(W4 * st.t.pdf(x, df=df))


def t_cdf(x, loc, scale):
    return np.sum(W4 * st.t.cdf(x, 3.5, loc, scale))


def mvn_logpdf(x, mean, cov):
    return np.sum(mvn.logpdf(x, mean, cov) * np.arange(1.0, 6.0))


def mvn_pdf_one_point(x, mean, cov):
    return mvn.pdf(x, mean=mean, cov=cov)


def mvn_logpdf_diagonal(x, mean, variances):
    return np.sum(st.multivariate_normal.logpdf(x, mean, variances))


def mvn_logpdf_one_variance(x, variance):
    return np.sum(mvn.logpdf(x, cov=variance))


def gamma_logpdf(x, a, loc, scale):
    return np.sum(W4 * st.gamma.logpdf(x, a, loc, scale))


def gamma_pdf(x, a, scale):
    return np.sum(W4 * st.gamma.pdf(x, a, scale=scale))


def gamma_cdf(x, scale):
    return np.sum(W4 * st.gamma.cdf(x, 2.5, scale=scale))


def beta_logpdf(x, a, b, loc, scale):
    return np.sum(W4 * st.beta.logpdf(x, a, b, loc, scale))


def beta_pdf(x, a, b):
    return np.sum(W4 * st.beta.pdf(x, a, b))


def beta_cdf(x, loc):
    return np.sum(W4 * st.beta.cdf(x, 2.0, 3.0, loc=loc))


def poisson_logpmf(mu):
    return np.sum(W4 * st.poisson.logpmf(np.array([0.0, 1.0, 3.0, 7.0]), mu))


def poisson_pmf(mu):
    return np.sum(W4 * st.poisson.pmf(np.array([1.0, 2.0, 4.0, 6.0]), mu, loc=1))


def dirichlet_logpdf(alpha):
    return st.dirichlet.logpdf(SIMPLEX, alpha)


def dirichlet_pdf_short(x, alpha):
    return st.dirichlet.pdf(x, alpha)


def dirichlet_logpdf_points(x, alpha):
    return np.sum(st.dirichlet.logpdf(x, alpha) * np.array([1.0, -2.0, 0.5]))


def expon_logpdf(x, loc, scale):
    return np.sum(W4 * st.expon.logpdf(x, loc, scale))


def expon_pdf_cdf(x, scale):
    return np.sum(W4 * (st.expon.pdf(x, scale=scale) + st.expon.cdf(x, scale=scale)))


def laplace_logpdf(x, loc, scale):
    return np.sum(W4 * st.laplace.logpdf(x, loc, scale))


def laplace_pdf_cdf(x, loc, scale):
    return np.sum(W4 * (st.laplace.pdf(x, loc, scale) + st.laplace.cdf(x, loc=loc, scale=scale)))


CASES = [
    (norm_logpdf, (X4, 0.3, 1.7), (0, 1, 2)),
    (norm_logpdf_broadcast, (X4, np.array([0.1, -0.4, 0.9]), np.array([[[0.8]], [[1.5]]])), (0, 1, 2)),
    (norm_pdf, (X4, np.array([0.2, -0.1, 0.0, 0.5]), 1.3), (0, 1, 2)),
    (norm_cdf, (X4, -0.2, 0.9), (0, 1, 2)),
    (norm_logcdf_tails, (TAILS, 0.4), (0, 1)),
    (norm_sf, (X4, 1.4), (0, 1)),
    (norm_logsf_tails, (TAILS, 1.2), (0, 1)),
    (t_logpdf, (X4, 3.5, 0.2, 1.4), (0, 1, 2, 3)),
    (t_pdf, (X4, np.array([1.5, 2.0, 4.0, 30.0])), (0, 1)),
    (t_cdf, (X4, 0.3, 1.2), (0, 1, 2)),
    (mvn_logpdf, (PTS, MEAN, COV), (0, 1, 2)),
    (mvn_pdf_one_point, (PTS[0], MEAN, COV), (0, 1, 2)),
    (mvn_logpdf_diagonal, (PTS, MEAN, np.array([0.5, 1.2, 2.0])), (0, 1, 2)),
    (mvn_logpdf_one_variance, (X4, 1.8), (0, 1)),
    (gamma_logpdf, (POS4, 2.3, -0.1, 1.6), (0, 1, 2, 3)),
    (gamma_pdf, (POS4, 0.7, 2.0), (0, 1, 2)),
    (gamma_cdf, (POS4, 1.3), (0, 1)),
    (beta_logpdf, (UNIT4, 1.7, 2.4, -0.05, 1.1), (0, 1, 2, 3, 4)),
    (beta_pdf, (UNIT4, np.array([0.6, 1.0, 2.0, 3.0]), 2.5), (0, 1, 2)),
    (beta_cdf, (UNIT4, -0.05), (0, 1)),
    (poisson_logpmf, (2.7,), 0),
    (poisson_pmf, (np.array([0.5, 1.5, 3.0, 6.0]),), 0),
    (dirichlet_logpdf, (ALPHA,), 0),
    (dirichlet_pdf_short, (SIMPLEX[:2], ALPHA), (0, 1)),
    (dirichlet_logpdf_points, (rng.dirichlet(ALPHA, size=3).T[:2], ALPHA), (0, 1)),
    (expon_logpdf, (POS4, 0.1, 1.5), (0, 1, 2)),
    (expon_pdf_cdf, (POS4, 0.8), (0, 1)),
    (laplace_logpdf, (X4, 0.1, 1.5), (0, 1, 2)),
    (laplace_pdf_cdf, (X4, 0.15, 0.7), (0, 1, 2)),
]


@pytest.mark.parametrize("f, args, argnums", CASES, ids=[c[0].__name__ for c in CASES])
def test_value_and_gradient_against_scipy_and_finite_differences(f, args, argnums):
    value, grads = s2s.value_and_grad(f, argnums=argnums)(*args)
    assert_close(value, f(*args), rtol=1e-11, atol=1e-12, what=f"value of {f.__name__}")
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    grads = grads if isinstance(argnums, tuple) else (grads,)
    for n, g in zip(nums, grads):
        assert_close(g, numeric_grad(f, args, n), rtol=1e-5, atol=1e-6, what=f"grad of {f.__name__} in argument {n}")


# ----- values scipy gives at the edges: out of the support, invalid parameters, the far tails -----

def _value(f, *args):
    return s2s.value_and_grad(f)(*args)[0]


def gamma_logpdf_edges(x):
    return st.gamma.logpdf(x, np.array([0.5, 1.0, 2.5, 2.0, -1.0]))


def beta_pdf_edges(x):
    return st.beta.pdf(x, np.array([1.0, 0.5, 2.0, 2.0, 2.0]), 1.0)


def poisson_logpmf_edges(mu):
    return st.poisson.logpmf(np.array([-1.0, 0.0, 2.5, 3.0, 3.0]), mu * np.array([1.0, 0.0, 1.0, 1.0, -1.0]))


def norm_logcdf_edges(x):
    return norm.logcdf(x, 0.0, np.array([1.0, 1.0, 1.0, 1.0, -1.0]))


@pytest.mark.parametrize("f, x", [
    (gamma_logpdf_edges, np.array([-1.0, 0.0, 0.0, 3.0, 1.0])),
    (beta_pdf_edges, np.array([0.0, 1.0, -0.5, 1.5, 0.5])),
    (poisson_logpmf_edges, 2.0),
    (norm_logcdf_edges, np.array([-60.0, -20.0, 0.0, 40.0, 1.0])),
], ids=lambda v: getattr(v, "__name__", ""))
def test_values_at_the_edges_are_scipys(f, x):
    # vjp's primal: the value s2s's definition computes, -inf, 0 and NaN as scipy gives them
    with np.errstate(all="ignore"):
        out, _ = s2s.vjp(f, x)
        expected = f(x)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert out.shape == np.shape(expected)


def mvn_of_points(x):
    return mvn.logpdf(x, MEAN[:1], COV[:1, :1])


@pytest.mark.parametrize("x", [0.4, np.array([0.4, -1.0, 2.0]), np.array([[0.4], [1.0]]), PTS, PTS[:1], PTS[0],
                               PTS.reshape(5, 1, 3)], ids=["number", "vector-1d", "column", "points", "one-row",
                                                           "one-point", "points-3d"])
def test_multivariate_normal_shapes_are_scipys(x):
    if np.shape(x)[-1:] == (3,):
        out, _ = s2s.vjp(lambda x: mvn.logpdf(x, MEAN, COV), x)
        expected = mvn.logpdf(x, MEAN, COV)
    else:
        out, _ = s2s.vjp(mvn_of_points, x)
        expected = mvn_of_points(x)
    assert np.shape(out) == np.shape(expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


# ----- arguments with no derivative -----

def poisson_in_k(k, mu):
    return np.sum(st.poisson.logpmf(k, mu))


def t_cdf_in_df(df):
    return st.t.cdf(0.7, df)


def test_poisson_counts_carry_no_derivative():
    gk, gmu = s2s.grad(poisson_in_k, argnums=(0, 1))(np.array([1.0, 4.0]), 2.0)
    np.testing.assert_array_equal(gk, 0.0)
    assert_close(gmu, numeric_grad(poisson_in_k, (np.array([1.0, 4.0]), 2.0), 1))


def test_a_cdf_shape_parameter_is_refused_not_zero():
    with pytest.raises(s2s.NonDifferentiableError):
        s2s.grad(t_cdf_in_df)(3.0)


def test_dirichlet_gradient_in_x_along_the_simplex():
    # scipy refuses an x off the simplex: compare the derivative along a direction that stays on it
    g = s2s.grad(lambda x, alpha: st.dirichlet.logpdf(x, alpha))(SIMPLEX, ALPHA)
    v = np.array([0.3, -0.5, 0.2])
    h = 1e-6
    fd = (st.dirichlet.logpdf(SIMPLEX + h * v, ALPHA) - st.dirichlet.logpdf(SIMPLEX - h * v, ALPHA)) / (2 * h)
    assert_close(np.dot(g, v), fd)


# ----- the other transforms -----

def norm_pdf_vector(x, scale):
    return norm.pdf(x, 0.5, scale)


def test_jvp_and_jacfwd():
    x, dx = X4, np.array([0.3, -1.0, 0.5, 2.0])
    out, tangent = s2s.jvp(t_logpdf, (x, 3.5, 0.2, 1.4), (dx, 0.7, -0.3, 0.2))
    h = 1e-6
    fd = (t_logpdf(x + h * dx, 3.5 + 0.7 * h, 0.2 - 0.3 * h, 1.4 + 0.2 * h)
          - t_logpdf(x - h * dx, 3.5 - 0.7 * h, 0.2 + 0.3 * h, 1.4 - 0.2 * h)) / (2 * h)
    assert_close(out, t_logpdf(x, 3.5, 0.2, 1.4), rtol=1e-12, atol=1e-12)
    assert_close(tangent, fd)
    jac = s2s.jacfwd(norm_pdf_vector, argnums=(0, 1))(X4, 1.3)
    assert_close(jac[0], np.diag(numeric_grad(lambda x: np.sum(norm_pdf_vector(x, 1.3)), (X4,), 0)))
    assert_close(jac[1], np.array([numeric_grad(lambda s: norm_pdf_vector(X4, s)[i], (1.3,), 0) for i in range(4)]))


def gamma_in_shape(a):
    return np.sum(st.gamma.logpdf(POS4, a, scale=1.5))


def test_hessian():
    hess = s2s.hessian(gamma_in_shape)(2.3)
    assert_close(hess, numeric_grad(s2s.grad(gamma_in_shape), (2.3,), 0), rtol=1e-5)
    hx = s2s.hessian(mvn_logpdf)(PTS, MEAN, COV)
    fd = np.array([numeric_grad(lambda p: s2s.grad(mvn_logpdf)(p, MEAN, COV).ravel()[i], (PTS,), 0)
                   for i in range(PTS.size)]).reshape(PTS.shape + PTS.shape)
    assert_close(hx, fd, rtol=1e-5)


def norm_one(x, loc, scale):
    return norm.logpdf(x, loc, scale)


def beta_one(x, a):
    return st.beta.logpdf(x, a, 2.0)


@pytest.mark.parametrize("f, batch, rest", [
    (norm_one, (X4, np.array([0.1, 0.2, -0.3, 0.0])), (1.3,)),
    (beta_one, (UNIT4, np.array([1.5, 2.0, 0.8, 3.0])), ()),
])
def test_vmap_of_grad_is_a_loop(f, batch, rest):
    g = s2s.grad(f, argnums=(0, 1))
    got = s2s.vmap(g, in_axes=(0, 0) + (None,) * len(rest))(*batch, *rest)
    for k in range(len(batch[0])):
        one = g(*(b[k] for b in batch), *rest)
        for i in range(2):
            assert_close(got[i][k], one[i], rtol=1e-12, atol=1e-12)


def poisson_rate(mu):
    return np.sum(st.poisson.logpmf(np.array([0.0, 2.0, 5.0]), mu))


@pytest.mark.parametrize("f, args, argnums", [
    (norm_logpdf, (X4, 0.3, 1.7), (0, 1, 2)),
    (norm_logcdf_tails, (TAILS, 0.4), (0, 1)),
    (gamma_logpdf, (POS4, 2.3, -0.1, 1.6), (1, 3)),
    (poisson_rate, (np.array([0.7, 2.0, 4.5]),), 0),
    (dirichlet_logpdf, (ALPHA,), 0),
], ids=lambda v: getattr(v, "__name__", ""))
def test_jit_of_grad_is_grad(f, args, argnums):
    g = s2s.grad(f, argnums=argnums)
    want, got = g(*args), s2s.jit(g)(*args)
    for a, b in zip(got if isinstance(argnums, tuple) else (got,), want if isinstance(argnums, tuple) else (want,)):
        assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_multivariate_normal_under_jit_is_refused_clearly_or_falls_back():
    # scipy squeezes the result, so its rank depends on the sizes: Numba cannot type it
    g = s2s.grad(mvn_logpdf, argnums=(1, 2))
    with pytest.raises(s2s.S2SError, match="fallback=True"):
        s2s.jit(g)(PTS, MEAN, COV)
    with pytest.warns(UserWarning, match="running the generated Python instead"):
        got = s2s.jit(g, fallback=True)(PTS, MEAN, COV)
    for a, b in zip(got, g(PTS, MEAN, COV)):
        assert_close(a, b, rtol=1e-12, atol=1e-12)


# ----- frozen distributions, the table's keys, loading -----

def frozen_in_the_function(x):
    return np.sum(norm(0.5, 2.0).logpdf(x))


FROZEN = norm(0.5, 2.0)


def frozen_global(x):
    return np.sum(FROZEN.logpdf(x))


def test_frozen_distribution_made_in_the_function_is_an_s2s_error():
    with pytest.raises(s2s.S2SError):
        s2s.grad(frozen_in_the_function)(X4)


def test_frozen_global_is_an_s2s_error_or_right():
    try:
        got = s2s.grad(frozen_global)(X4)
    except s2s.S2SError:
        return
    assert_close(got, numeric_grad(frozen_global, (X4,), 0))


def test_bound_methods_are_keyed_by_object_and_function():
    from s2s.ops.stats import rules as scipy_stats
    from s2s.rules.registry import composite_of, lookup
    assert norm.logpdf is not norm.logpdf
    assert composite_of(norm.logpdf) is scipy_stats.norm_logpdf
    assert composite_of(st.t.logpdf) is scipy_stats.t_logpdf         # same function, another object
    assert composite_of(FROZEN.logpdf) is None
    assert composite_of(type(norm)().logpdf) is None                 # a norm_gen of the user's own
    assert composite_of(np.sin) is None and lookup(np.sin).name == "np.sin"


def test_importing_s2s_does_not_import_scipy_stats():
    code = "import sys, s2s; assert 'scipy.stats' not in sys.modules, 'scipy.stats imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
