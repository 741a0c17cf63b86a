"""scipy.special gamma/beta/incomplete/Bessel/inverse-erf functions: derivatives against
closed forms and finite differences, third derivatives, the refused arguments (shape parameters
and Bessel orders), gammasgn as a non-differentiable op, vmap(grad) against a loop, and the
Numba stand-ins (SciPy's own compiled kernels) against SciPy.

The op sweep (tests/cases/op_cases.py: gamma, beta, betainc_gammainc, multigammaln, bessel_jy, bessel_i,
erfinv) checks every transform of each rule against finite differences; this file checks the maths
itself and what the sweep cannot: refusals, exact agreement of the stand-ins, third order.
"""
from __future__ import annotations


import numpy as np
import pytest
import scipy.special as sp


import s2s  # noqa: E402
from cases.fd import numeric_grad
from s2s.errors import NonDifferentiableError  # noqa: E402
from s2s.rules.table import lookup  # noqa: E402

X = np.array([0.35, 0.9, 1.7, 2.6, 3.8])          # in (0, 4): every function here is smooth
U = np.array([0.12, 0.3, 0.55, 0.71, 0.93])       # in (0, 1)


# ---------------------------------------------------------------------------
# Functions under test (module level: s2s reads their source)
# ---------------------------------------------------------------------------

def sum_j0(x):
    return np.sum(sp.j0(x))


def sum_j1(x):
    return np.sum(sp.j1(x))


def sum_y0(x):
    return np.sum(sp.y0(x))


def sum_y1(x):
    return np.sum(sp.y1(x))


def sum_i0(x):
    return np.sum(sp.i0(x))


def sum_i1(x):
    return np.sum(sp.i1(x))


def sum_gamma(x):
    return np.sum(sp.gamma(x))


def sum_rgamma(x):
    return np.sum(sp.rgamma(x))


def sum_erfinv(x):
    return np.sum(sp.erfinv(x))


def sum_erfcinv(x):
    return np.sum(sp.erfcinv(x))


def sum_jv(x):
    return np.sum(sp.jv(2.5, x))


def sum_iv(x):
    return np.sum(sp.iv(1.5, x))


def sum_ive(x):
    return np.sum(sp.ive(1.0, x))


def sum_yn0(x):
    return np.sum(sp.yn(0, x))        # its derivative reads yn(-1, x)


def sum_yn3(x):
    return np.sum(sp.yn(3, x))


def sum_betainc(x):
    return np.sum(sp.betainc(2.5, 1.5, x))


def sum_gammainc(x):
    return np.sum(sp.gammainc(1.7, x))


def sum_gammaincc(x):
    return np.sum(sp.gammaincc(0.6, x))


def sum_multigammaln(a):
    return np.sum(sp.multigammaln(a, 4))


def sum_beta(a, b):
    return np.sum(sp.beta(a, b))


def sum_betaln(a, b):
    return np.sum(sp.betaln(a, b))


def gammasgn_times(x):
    return np.sum(sp.gammasgn(x) * x * x)


def j0_scalar(x):
    return sp.j0(x)


def gamma_scalar(x):
    return sp.gamma(x)


def erfinv_scalar(x):
    return sp.erfinv(x)


def jv_order(v, x):
    return np.sum(sp.jv(v, x))


def iv_order(v, x):
    return np.sum(sp.iv(v, x))


def betainc_a1(x):
    return np.sum(sp.betainc(1.0, 2.0, x))


def betainc_shape(a, x):
    return np.sum(sp.betainc(a, 2.0, x))


def betainc_shape_b(b, x):
    return np.sum(sp.betainc(1.5, b, x))


def gammainc_shape(a, x):
    return np.sum(sp.gammainc(a, x))


def gammaincc_shape(a, x):
    return np.sum(sp.gammaincc(a, x))


def mixed(x, s):
    """Several of the new functions on an array x and a scalar s."""
    u = x / 5.0
    return np.sum(sp.j0(x) * sp.gamma(x) + sp.iv(1.5, x) * s + sp.yn(1, x + s) + sp.betainc(2.0, 3.0, u)
                  + sp.gammainc(1.5, x * s) + sp.erfinv(u) + sp.multigammaln(x + 2.0, 2)) \
        + sp.jv(0.5, s) * sp.rgamma(s) + sp.erfcinv(s / 4.0) + sp.ive(2.0, s) + sp.betaln(s, 1.5)


def mixed_small(x, s):
    return np.sum(sp.j0(x) * sp.gamma(x) + sp.yn(1, x) * s + sp.betainc(2.0, 3.0, x / 5.0)) + \
        sp.multigammaln(s + 2.0, 2) + sp.erfinv(s / 4.0)


def mixed_x(x):
    return np.sum(sp.j1(x) * sp.y0(x) + sp.i0(x) * sp.beta(x, 2.0) + sp.gammaincc(1.5, x) + sp.y1(x)
                  + sp.i1(x) * sp.gammasgn(x - 2.0) + sp.multigammaln(x + 3.0, 3))


# ---------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------

CLOSED_FORMS = [
    (sum_j0, X, lambda x: -sp.j1(x)),
    (sum_j1, X, lambda x: (sp.j0(x) - sp.jv(2, x)) / 2),
    (sum_y0, X, lambda x: -sp.y1(x)),
    (sum_y1, X, lambda x: (sp.y0(x) - sp.yn(2, x)) / 2),
    (sum_i0, X, lambda x: sp.i1(x)),
    (sum_i1, X, lambda x: (sp.i0(x) + sp.iv(2, x)) / 2),
    (sum_gamma, X, lambda x: sp.gamma(x) * sp.digamma(x)),
    (sum_gamma, -X[:3] - 0.2, lambda x: sp.gamma(x) * sp.digamma(x)),
    (sum_rgamma, X, lambda x: -sp.digamma(x) / sp.gamma(x)),
    # erfinv is the inverse of erf: its derivative is 1 / erf'(erfinv(x))
    (sum_erfinv, 2 * U - 1, lambda x: np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(x) ** 2)),
    (sum_erfcinv, 2 * U, lambda x: -np.sqrt(np.pi) / 2 * np.exp(sp.erfcinv(x) ** 2)),
    (sum_jv, X, lambda x: (sp.jv(1.5, x) - sp.jv(3.5, x)) / 2),
    (sum_iv, X, lambda x: (sp.iv(0.5, x) + sp.iv(2.5, x)) / 2),
    (sum_ive, X - 2.0, lambda x: (sp.iv(0, x) + sp.iv(2, x)) / 2 * np.exp(-np.abs(x))
     - np.sign(x) * sp.iv(1, x) * np.exp(-np.abs(x))),
    (sum_yn0, X, lambda x: -sp.y1(x)),
    (sum_yn3, X, lambda x: sp.yn(2, x) - 3 * sp.yn(3, x) / x),
    # the regularized incomplete functions: derivatives are the densities
    (sum_betainc, U, lambda x: x ** 1.5 * (1 - x) ** 0.5 / sp.beta(2.5, 1.5)),
    (sum_gammainc, X, lambda x: np.exp(-x) * x ** 0.7 / sp.gamma(1.7)),
    (sum_gammaincc, X, lambda x: -np.exp(-x) * x ** -0.4 / sp.gamma(0.6)),
    (sum_multigammaln, X + 2.0, lambda a: sum(sp.digamma(a - j / 2) for j in range(4))),
]


@pytest.mark.parametrize("f, x, expected", CLOSED_FORMS, ids=[f"{c[0].__name__}{k}" for k, c in enumerate(CLOSED_FORMS)])
def test_grad_and_jvp_match_closed_form(f, x, expected):
    np.testing.assert_allclose(s2s.grad(f)(x), expected(x), rtol=1e-12, atol=1e-14)
    v = np.linspace(-1.0, 1.0, x.size)
    _, tan = s2s.jvp(f, (x,), (v,))
    np.testing.assert_allclose(tan, np.sum(expected(x) * v), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s2s.grad(f)(x), numeric_grad(f, (x,), 0), rtol=1e-6, atol=1e-8)


def test_beta_and_betaln_derivatives_are_digamma_differences():
    a, b = X, X[::-1] + 0.5
    ga, gb = s2s.grad(sum_beta, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, sp.beta(a, b) * (sp.digamma(a) - sp.digamma(a + b)), rtol=1e-12)
    np.testing.assert_allclose(gb, sp.beta(a, b) * (sp.digamma(b) - sp.digamma(a + b)), rtol=1e-12)
    ga, gb = s2s.grad(sum_betaln, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, sp.digamma(a) - sp.digamma(a + b), rtol=1e-12)
    np.testing.assert_allclose(gb, sp.digamma(b) - sp.digamma(a + b), rtol=1e-12)


def test_betainc_derivative_at_x_zero_with_a_one():
    # xlogy keeps (a - 1) log(x) at a == 1, x == 0 finite: d/dx betainc(1, 2, x) = 2 (1 - x)
    x = np.array([0.0, 0.25, 0.5])
    np.testing.assert_allclose(s2s.grad(betainc_a1)(x), 2 * (1 - x), rtol=1e-12)
    np.testing.assert_allclose(s2s.hessian(betainc_a1)(x[1:]), np.diag(-2.0 * np.ones(2)), rtol=1e-12)


# ---------------------------------------------------------------------------
# Higher orders
# ---------------------------------------------------------------------------

def _third(f):
    return s2s.grad(s2s.grad(s2s.grad(f)))


@pytest.mark.parametrize("f, x", [(j0_scalar, 1.3), (j0_scalar, 4.1), (gamma_scalar, 1.7), (gamma_scalar, -0.4),
                                  (erfinv_scalar, 0.45)])
def test_third_derivative_matches_finite_differences_of_the_second(f, x):
    second = s2s.grad(s2s.grad(f))
    eps = 1e-5
    fd = (second(x + eps) - second(x - eps)) / (2 * eps)
    got = _third(f)(x)
    np.testing.assert_allclose(got, fd, rtol=1e-6)
    if f is j0_scalar:
        # j0''' = (3 j1 - j3) / 4
        np.testing.assert_allclose(got, (3 * sp.j1(x) - sp.jv(3, x)) / 4, rtol=1e-12)


def test_hessian_of_multigammaln_is_the_trigamma_sum():
    h = s2s.hessian(sum_multigammaln)(X + 2.0)
    np.testing.assert_allclose(h, np.diag(sum(sp.polygamma(1, X + 2.0 - j / 2) for j in range(4))), rtol=1e-12)


# ---------------------------------------------------------------------------
# Refused arguments: the orders and shape parameters have no rule
# ---------------------------------------------------------------------------

REFUSED = [
    (jv_order, "jv", "v", 1.5, X),
    (iv_order, "iv", "v", 1.5, X),
    (betainc_shape, "betainc", "a", 2.5, U),
    (betainc_shape_b, "betainc", "b", 2.5, U),
    (gammainc_shape, "gammainc", "a", 1.5, X),
    (gammaincc_shape, "gammaincc", "a", 1.5, X),
]


@pytest.mark.parametrize("f, op, param, p, x", REFUSED, ids=[f"{r[1]}-{r[2]}" for r in REFUSED])
def test_order_and_shape_parameters_are_refused(f, op, param, p, x):
    msg = f"s2s does not differentiate `{op}` with respect to its argument `{param}`"
    with pytest.raises(NonDifferentiableError, match=msg):
        s2s.grad(f, argnums=0)(p, x)
    with pytest.raises(NonDifferentiableError, match=msg):
        s2s.grad(f, argnums=(0, 1))(p, x)
    with pytest.raises(NonDifferentiableError, match=msg):
        s2s.jvp(f, argnums=(0, 1))(p, x, 1.0, np.ones_like(x))
    # the other argument alone is differentiated
    np.testing.assert_allclose(s2s.grad(f, argnums=1)(p, x), numeric_grad(f, (p, x), 1), rtol=1e-6, atol=1e-8)


def test_gammasgn_is_nondiff():
    assert lookup(sp.gammasgn).nondiff
    x = np.array([-2.5, -1.5, -0.5, 0.5, 2.5])
    np.testing.assert_array_equal(s2s.grad(gammasgn_times)(x), 2 * x * sp.gammasgn(x))
    _, tan = s2s.jvp(gammasgn_times, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tan, np.sum(2 * x * sp.gammasgn(x)), rtol=1e-12)


# ---------------------------------------------------------------------------
# vmap and jit
# ---------------------------------------------------------------------------

XB = np.stack([X, X[::-1] + 0.25, X * 0.5 + 0.3])


def test_vmap_grad_matches_a_loop():
    s = np.array([1.2, 2.1, 0.7])
    got = s2s.vmap(s2s.grad(mixed, argnums=(0, 1)))(XB, s)
    for k in range(3):
        gx, gs = s2s.grad(mixed, argnums=(0, 1))(XB[k], s[k])
        np.testing.assert_allclose(got[0][k], gx, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(got[1][k], gs, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(s2s.vmap(mixed)(XB, s), [mixed(XB[k], s[k]) for k in range(3)], rtol=1e-14)
    np.testing.assert_allclose(s2s.vmap(sum_multigammaln)(XB + 2.0), [sum_multigammaln(r + 2.0) for r in XB],
                               rtol=1e-14)


def test_grad_of_mixed_matches_finite_differences():
    s = 1.3
    gx, gs = s2s.grad(mixed, argnums=(0, 1))(X, s)
    np.testing.assert_allclose(gx, numeric_grad(mixed, (X, s), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gs, numeric_grad(mixed, (X, s), 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.grad(mixed_x)(XB), numeric_grad(mixed_x, (XB,), 0), rtol=1e-6, atol=1e-8)


def test_jit_grad_equals_grad():
    pytest.importorskip("numba")
    s = 1.3
    g = s2s.value_and_grad(mixed_small, argnums=(0, 1))
    v, (gx, gs) = s2s.jit(g, fallback=False)(XB, s)
    v0, (gx0, gs0) = g(XB, s)
    np.testing.assert_allclose(v, v0, rtol=1e-13)
    np.testing.assert_allclose(gx, gx0, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(gs, gs0, rtol=1e-13, atol=1e-14)


def _standins_on_arrays(x, u, n):
    return (sp.gamma(x), sp.rgamma(-x), sp.gammasgn(-x), sp.beta(x, 1.5), sp.betaln(x, x), sp.betainc(x, 2.0, u),
            sp.gammainc(x, 2.0), sp.gammaincc(1.5, x), sp.multigammaln(x + 3.5, 3), sp.jv(1.5, x), sp.yn(n, x),
            sp.iv(x, 1.5), sp.ive(0.5, -x), sp.j0(x), sp.j1(x), sp.y0(x), sp.y1(x), sp.i0(x), sp.i1(x),
            sp.erfinv(2 * u - 1), sp.erfcinv(2 * u), sp.yn(n, 2.5), sp.jv(1.5, 2.5), sp.multigammaln(4.5, n + 2))


def test_numba_standins_give_scipys_results():
    """SciPy's compiled kernels, called from Numba: the same bits as SciPy (NaN where SciPy gives NaN)."""
    numba = pytest.importorskip("numba")
    from s2s.backends.numba_numpy.namespace import compiled_globals
    glb = compiled_globals({"sp": sp, "np": np})
    fn = type(_standins_on_arrays)(_standins_on_arrays.__code__, {**_standins_on_arrays.__globals__, **glb})
    jf = numba.njit(fn)
    x = np.concatenate([X, [0.0, -1.0, 7.5]]).reshape(2, 4)[:, ::-1]      # a strided view
    u = np.concatenate([U, [0.0, 1.0, 0.5]]).reshape(2, 4)
    for n in (-1, 0, 2):
        with np.errstate(all="ignore"):
            got, expected = jf(x, u, n), _standins_on_arrays(x, u, n)
        for k, (g, e) in enumerate(zip(got, expected)):
            assert np.shape(g) == np.shape(e), k
            np.testing.assert_array_equal(g, e, err_msg=f"output {k}, n={n}")
    with pytest.raises(ValueError):
        jf(x, u, 8)          # multigammaln(4.5, 10): a <= (d - 1) / 2, as SciPy refuses


# ---------------------------------------------------------------------------
# entr: the slope at the edges of its domain, in every mode and under jit
# ---------------------------------------------------------------------------

def entr_weighted(x):
    return np.sum(sp.entr(x) * np.arange(1.0, 1.0 + x.size))


def test_entr_slope_is_minus_log_plus_one_inf_at_zero_and_zero_below():
    x = np.array([-1.5, 0.0, 0.4, 1.0, 2.5])
    w = np.arange(1.0, 6.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = w * np.where(x < 0, 0.0, -(np.log(x) + 1.0))
        g = s2s.grad(entr_weighted)(x)
        jg = s2s.jit(s2s.grad(entr_weighted))(x)
    np.testing.assert_array_equal(g[:2], [0.0, np.inf])
    np.testing.assert_allclose(g, want, rtol=1e-14)
    np.testing.assert_allclose(jg, g, rtol=1e-12)
    # (a tangent 0 at x = 0 meets the slope inf there: nan, as in JAX (docs/conventions.md), so
    # the forward mode is checked away from 0, the negative side included)
    x4 = np.delete(x, 1)
    t = [s2s.jvp(entr_weighted)(x4, e)[1] for e in np.eye(4)]
    np.testing.assert_allclose(t, s2s.grad(entr_weighted)(x4), rtol=1e-14)
    inside = np.array([0.3, 0.8, 1.9])
    np.testing.assert_allclose(s2s.grad(entr_weighted)(inside), numeric_grad(entr_weighted, (inside,), 0), rtol=1e-6)
    np.testing.assert_allclose(s2s.jit(entr_weighted)(x), entr_weighted(x), rtol=1e-14)   # -inf below 0, as SciPy
