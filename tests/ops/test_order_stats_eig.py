"""np.median / np.percentile / np.quantile, np.partition and np.linalg.eig / eigvals:
ops defined by other ops (s2s/ops/composite/rules.py) with helpers in s2s/ops/reductions/helpers.py and ops/linalg/helpers.py.

- quantiles: NumPy's default 'linear' method, the reduced axes sorted, the two order statistics
  around q (n - 1) interpolated; closed forms of the gradient (one-hot at the middle for an odd
  length, 1/2 and 1/2 for an even one, 1 - f and f for a percentile), values against NumPy for
  the axis / keepdims / q forms, refusals (other methods, a differentiated q, weights=);
- np.partition: the permutation np.argpartition finds, so its derivative sends the cotangent back;
- eig / eigvals of real matrices with real eigenvalues: values against eigh on symmetric input
  (and their gradient V diag(c) V^T), derivatives against finite differences on non-symmetric
  matrices (eigenvectors through sign-invariant functions: unit columns have a sign NumPy picks),
  complex eigenvalues refused at run time;
- FFT (they were refused here while s2s had no complex values): closed forms of three gradients;
  tests/ops/test_fft.py has the rest.

The op sweep (tests/ops/test_op_sweep.py, test_op_sweep_jit.py) runs the cases of tests/cases/op_cases.py
for the same ops under every transform; here: closed forms, refusals, and a few jit/vmap checks.
"""
import numpy as np
import pytest

import s2s
from s2s.errors import NoRuleError, NonDifferentiableError, TransformError, UnsupportedSyntaxError
from cases.fd import assert_close, numeric_grad

rng = np.random.default_rng(16)


def _distinct(shape, gap=0.1):
    n = int(np.prod(shape))
    vals = np.cumsum(rng.uniform(gap, 3 * gap, size=n)) - 1.0
    return rng.permutation(vals).reshape(shape)


def _real_eig_matrix(n=3, values=(1.0, 2.5, 4.5)):
    p = np.eye(n) + 0.3 * rng.standard_normal((n, n))
    return p @ np.diag(np.array(values[:n])) @ np.linalg.inv(p)


# ----- quantiles ---------------------------------------------------------------------------------

def median_all(x):
    return np.median(x)


def quantile_at(x, q):
    return np.quantile(x, q)


def percentile_37(x):
    return np.percentile(x, 37.0)


def quantile_nearest(x):
    return np.quantile(x, 0.3, method="nearest")


def percentile_lower(x):
    return np.percentile(x, 30.0, method="lower")


def quantile_weighted(x):
    return np.quantile(x, 0.3, weights=x)


def median_rows(x):
    return np.sum(np.median(x, axis=1) * np.array([1.0, -2.0, 0.5, 3.0]))


def quantiles_mixed(x):
    return np.sum(np.quantile(x, np.array([0.1, 0.5, 0.95]), axis=(0, 2)) ** 2) + \
        np.sum(np.percentile(x, 62.5, axis=-1, keepdims=True) * x)


@pytest.mark.parametrize("n", [5, 7, 6, 8])
def test_median_gradient_closed_form(n):
    """Odd length: 1 at the middle value; even: 1/2 at each of the two middle values."""
    x = _distinct((n,))
    order = np.argsort(x)
    expected = np.zeros(n)
    if n % 2:
        expected[order[n // 2]] = 1.0
    else:
        expected[order[n // 2 - 1]] = expected[order[n // 2]] = 0.5
    value, g = s2s.value_and_grad(median_all)(x)
    assert value == pytest.approx(np.median(x), rel=1e-15)
    assert_close(g, expected, rtol=0, atol=1e-15)
    assert_close(s2s.jvp(median_all, (x,), (np.arange(n) + 1.0,))[1], np.sum(expected * (np.arange(n) + 1.0)),
                 rtol=1e-14, atol=1e-14)


def test_percentile_weights_closed_form():
    """q = 37% of 6 values: position 0.37 * 5 = 1.85 between the 2nd and 3rd smallest: 0.15, 0.85."""
    x = _distinct((6,))
    order = np.argsort(x)
    expected = np.zeros(6)
    expected[order[1]] = 0.15
    expected[order[2]] = 0.85
    value, g = s2s.value_and_grad(percentile_37)(x)
    assert value == pytest.approx(np.percentile(x, 37.0), rel=1e-14)
    assert_close(g, expected, rtol=1e-12, atol=1e-14)
    # q = 0 and q = 1: the smallest and the largest value
    assert_close(s2s.grad(quantile_at)(x, 0.0), np.eye(6)[order[0]], rtol=0, atol=0)
    assert_close(s2s.grad(quantile_at)(x, 1.0), np.eye(6)[order[-1]], rtol=0, atol=0)


@pytest.mark.parametrize("kw", [
    dict(), dict(axis=0), dict(axis=1), dict(axis=-1, keepdims=True), dict(axis=(0, 2)), dict(axis=(2, 0)),
    dict(keepdims=True), dict(axis=(0, 1), keepdims=True),
])
@pytest.mark.parametrize("q", [0.5, 0.0, 1.0, 0.37, [0.1, 0.9], np.array([[0.2], [0.75]])])
def test_quantile_values_match_numpy(kw, q):
    x = _distinct((3, 4, 5))
    axis = kw.get("axis")
    keepdims = kw.get("keepdims", False)

    def f(x):
        return np.quantile(x, q, axis=axis, keepdims=keepdims)
    got = s2s.vmap(f, in_axes=0)(x[None])[0]
    expected = np.quantile(x, q, **kw)
    assert got.shape == expected.shape
    assert_close(got, expected, rtol=1e-14, atol=1e-14, what="np.quantile")
    from s2s.ops.composite.rules import median, percentile, quantile
    assert_close(quantile(x, q, **kw), expected, rtol=1e-14, atol=1e-14, what="np.quantile")
    assert_close(percentile(x, np.asarray(q) * 100.0, **kw), np.percentile(x, np.asarray(q) * 100.0, **kw),
                 rtol=1e-14, atol=1e-14, what="np.percentile")
    assert_close(median(x, **kw), np.median(x, **kw), rtol=1e-14, atol=1e-14, what="np.median")


def test_quantile_of_data_with_nan_is_nan_as_in_numpy():
    from s2s.ops.composite.rules import median, quantile
    x = _distinct((3, 5))
    x[1, 2] = np.nan
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(median(x, axis=1), np.median(x, axis=1), rtol=1e-14)   # (NaN where NumPy's is)
        assert np.isnan(quantile(x, 0.1))
        x[0, 0] = np.inf     # (a weight-0 inf takes no part: 0 * inf is not let in)
        np.testing.assert_allclose(quantile(x, 0.1, axis=1), np.quantile(x, 0.1, axis=1), rtol=1e-14)


def test_quantile_gradients_match_finite_differences_jvp_and_vmap():
    x = _distinct((3, 4, 5))
    for f in (median_rows, quantiles_mixed):
        xx = x[0] if f is median_rows else x
        g = s2s.grad(f)(xx)
        assert_close(g, numeric_grad(f, (xx,), 0), rtol=1e-6, atol=1e-8)
        t = rng.standard_normal(xx.shape)
        assert_close(s2s.jvp(f, (xx,), (t,))[1], np.sum(g * t), rtol=1e-12, atol=1e-12)
    xs = np.stack([x, x[:, ::-1] * 1.5, -x])
    assert_close(s2s.vmap(s2s.grad(quantiles_mixed))(xs), np.stack([s2s.grad(quantiles_mixed)(e) for e in xs]),
                 rtol=1e-13, atol=1e-13, what="vmap(grad) vs a loop")


def test_other_quantile_methods_are_refused():
    x = _distinct((7,))
    for f in (quantile_nearest, percentile_lower):
        with pytest.raises(NotImplementedError, match="method='linear' only"):
            s2s.grad(f)(x)
        with pytest.raises(NotImplementedError, match="method='linear' only"):
            s2s.jvp(f, (x,), (x,))
    with pytest.raises(TransformError, match="weights"):
        s2s.grad(quantile_weighted)(x)
    with pytest.raises(ValueError, match=r"range \[0, 1\]"):
        s2s.grad(quantile_at)(x, 1.5)


def nanmedian_all(x):
    return np.nanmedian(x)


def test_nanmedian_is_refused():
    with pytest.raises((NoRuleError, UnsupportedSyntaxError), match="np.nanmedian"):   # (its source is read: NumPy 2)
        s2s.grad(nanmedian_all)(_distinct((5,)))


def test_differentiating_q_is_refused():
    x = _distinct((7,))
    with pytest.raises(NonDifferentiableError, match="with respect to its argument `q`"):
        s2s.grad(quantile_at, argnums=1)(x, 0.3)
    with pytest.raises(NonDifferentiableError, match="with respect to its argument `q`"):
        s2s.jvp(quantile_at, (x, 0.3), (x, 1.0))
    # q as a non-differentiated argument is fine
    assert_close(s2s.grad(quantile_at)(x, 0.3), numeric_grad(quantile_at, (x, 0.3), 0), rtol=1e-6, atol=1e-8)


# ----- partition ---------------------------------------------------------------------------------

def partition_kth(x):
    return np.partition(x, 3)[3] + np.sum(np.partition(x, 3)[:3] ** 2)


def partition_rows(x):
    p = np.partition(x, (1, 3), axis=1)
    return np.sum(p[:, 1] * np.array([1.0, 2.0, -1.0])) + np.sum(p[:, 3] ** 3)


def test_partition_values_and_gradient():
    x = _distinct((7,))
    from s2s.ops.composite.rules import partition
    for kth, axis in ((3, -1), ((0, 5), 0), (6, None)):
        assert np.array_equal(partition(x, kth, axis=axis), np.partition(x, kth, axis=axis))
    order = np.argsort(x)
    expected = np.zeros(7)
    expected[order[3]] = 1.0
    expected[order[:3]] = 2.0 * x[order[:3]]
    assert_close(s2s.grad(partition_kth)(x), expected, rtol=1e-15, atol=0)
    m = _distinct((3, 6))
    g = s2s.grad(partition_rows)(m)
    assert_close(g, numeric_grad(partition_rows, (m,), 0), rtol=1e-6, atol=1e-8)
    t = rng.standard_normal(m.shape)
    assert_close(s2s.jvp(partition_rows, (m,), (t,))[1], np.sum(g * t), rtol=1e-12, atol=1e-12)
    ms = np.stack([m, -m, m[::-1]])
    assert_close(s2s.vmap(s2s.grad(partition_rows))(ms), np.stack([s2s.grad(partition_rows)(e) for e in ms]),
                 rtol=1e-14, atol=1e-14, what="vmap(grad) vs a loop")


# ----- eig / eigvals -----------------------------------------------------------------------------
C3 = np.array([0.7, -1.3, 2.1])
C33 = rng.standard_normal((3, 3))


def eigvals_sorted(a):
    return np.sum(np.sort(np.linalg.eigvals(a)) * C3)


def eig_values_sorted(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.sort(w) * C3)


def eig_vectors_sign_free(a):
    # the eigenvectors in the order of the eigenvalues, through functions of v_j that do not change
    # when v_j changes sign (NumPy picks the sign)
    res = np.linalg.eig(a)
    o = np.argsort(res[0])
    v = np.take(res[1], o, axis=1)
    return np.sum(v * v * C33) + np.sum(np.abs(v[1]) * C3) + np.sum(v[0] * v[2] * C3)


def eig_column_norms(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.sqrt(np.sum(v * v, axis=0)) * C3)


def eigvals_stack(a):
    return np.sum(np.sort(np.linalg.eigvals(a), axis=-1) ** 2 * C3)


def test_eig_values_match_eigh_on_symmetric_input():
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    s = (q * np.array([1.0, 2.5, 4.5])) @ q.T
    from s2s.ops.linalg.helpers import eig_values, eig_vectors
    assert_close(np.sort(eig_values(s)), np.linalg.eigh(s)[0], rtol=1e-12, atol=1e-12, what="eigenvalues")
    v = eig_vectors(s)
    assert_close(np.sum(v * v, axis=0), np.ones(3), rtol=1e-14, atol=1e-14, what="unit eigenvectors")
    # d/dA sum_i c_i w_i (w sorted) = V diag(c) V^T (eigh's sorted eigenvectors), on the full matrix
    w, vh = np.linalg.eigh(s)
    expected = (vh * C3) @ vh.T
    for f in (eigvals_sorted, eig_values_sorted):
        value, g = s2s.value_and_grad(f)(s)
        assert value == pytest.approx(np.sum(w * C3), rel=1e-12)
        assert_close(g, expected, rtol=1e-10, atol=1e-12)


def test_eigvals_derivatives_on_a_non_symmetric_matrix():
    a = _real_eig_matrix()
    assert np.max(np.abs(a - a.T)) > 0.1
    for f in (eigvals_sorted, eig_values_sorted):
        g = s2s.grad(f)(a)
        assert_close(g, numeric_grad(f, (a,), 0), rtol=1e-6, atol=1e-8)
        t = rng.standard_normal(a.shape)
        assert_close(s2s.jvp(f, (a,), (t,))[1], np.sum(g * t), rtol=1e-10, atol=1e-12)
    # second derivatives of the values (through the eigenvectors' rules)
    t = rng.standard_normal(a.shape)
    hv = s2s.jvp(s2s.grad(eigvals_sorted), (a,), (t,))[1]
    eps = 1e-5
    fd = (s2s.grad(eigvals_sorted)(a + eps * t) - s2s.grad(eigvals_sorted)(a - eps * t)) / (2 * eps)
    assert_close(hv, fd, rtol=1e-5, atol=1e-7, what="hessian-vector product")


def test_eigenvector_derivatives_match_finite_differences():
    a = _real_eig_matrix()
    g = s2s.grad(eig_vectors_sign_free)(a)
    assert_close(g, numeric_grad(eig_vectors_sign_free, (a,), 0), rtol=1e-6, atol=1e-8)
    t = rng.standard_normal(a.shape)
    assert_close(s2s.jvp(eig_vectors_sign_free, (a,), (t,))[1], np.sum(g * t), rtol=1e-10, atol=1e-12)
    # the columns stay unit vectors: their norms have no derivative
    assert_close(s2s.grad(eig_column_norms)(a), np.zeros((3, 3)), rtol=0, atol=1e-12)
    # second derivatives through v are refused, never wrong
    with pytest.raises(NoRuleError):
        s2s.hessian(eig_vectors_sign_free)(a)


def test_eig_of_a_stack_and_vmap():
    stack = np.stack([_real_eig_matrix(), _real_eig_matrix(values=(-1.0, 0.5, 3.0))])
    g = s2s.grad(eigvals_stack)(stack)
    assert_close(g, numeric_grad(eigvals_stack, (stack,), 0), rtol=1e-6, atol=1e-8)
    assert_close(s2s.vmap(s2s.grad(eig_vectors_sign_free))(stack),
                 np.stack([s2s.grad(eig_vectors_sign_free)(m) for m in stack]), rtol=1e-12, atol=1e-12,
                 what="vmap(grad) vs a loop")


def test_complex_eigenvalues_are_refused_at_run_time():
    # eigenvalues 0.1 +- 1j and 0.1: NumPy returns complex arrays; s2s refuses them
    rot = np.kron(np.eye(2), np.array([[0.0, -1.0], [1.0, 0.0]]) + 0.1 * np.eye(2))[:3, :3]
    for f in (eigvals_sorted, eig_values_sorted, eig_vectors_sign_free):
        with pytest.raises(ValueError, match="complex eigenvalues"):
            s2s.grad(f)(rot)
        with pytest.raises(ValueError, match="complex eigenvalues"):
            s2s.jvp(f, (rot,), (rot,))
    with pytest.raises(ValueError, match="complex eigenvalues"):
        s2s.vmap(eigvals_sorted)(np.stack([_real_eig_matrix(), rot]))


# ----- FFT: closed forms ------------------------------------------------------------------------

def rfft_power(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


def fft_real_part(x):
    return np.sum(np.real(np.fft.fft(x)))


def irfft_sum(x):
    return np.sum(np.fft.irfft(x))


def test_fft_gradients_have_their_closed_forms():
    x = rng.standard_normal(8)
    n = x.size
    alternating = (-1.0) ** np.arange(n)
    # Parseval: the half spectrum holds half of n * sum(x^2), plus half of |X_0|^2 and |X_{n/2}|^2
    expected = n * x + np.sum(x) + np.sum(alternating * x) * alternating
    for mode in (s2s.grad(rfft_power), s2s.jit(s2s.grad(rfft_power), fallback=False)):
        assert_close(mode(x), expected, rtol=1e-12, atol=1e-12)
    # sum_k Re(X_k) = n x_0; the sum of irfft's output is Re(c_0)
    assert_close(s2s.grad(fft_real_part)(x), n * (np.arange(n) == 0), rtol=1e-12, atol=1e-12)
    assert_close(s2s.grad(irfft_sum)(x), 1.0 * (np.arange(n) == 0), rtol=1e-12, atol=1e-12)
    _, tangent = s2s.jvp(irfft_sum, (x,), (x,))
    assert_close(tangent, x[0], rtol=1e-12)


# ----- jit ---------------------------------------------------------------------------------------

def test_jit_grad_matches_grad():
    pytest.importorskip("numba")
    x = _distinct((3, 4, 5))
    for f, arg in ((quantiles_mixed, x), (eig_vectors_sign_free, _real_eig_matrix()),
                   (partition_rows, _distinct((3, 6)))):
        jg = s2s.jit(s2s.grad(f), fallback=False)(arg)
        assert_close(jg, s2s.grad(f)(arg), rtol=1e-12, atol=1e-12, what=f"jit(grad({f.__name__}))")


def test_jit_refusals():
    pytest.importorskip("numba")
    with pytest.raises(NotImplementedError, match="method='linear' only"):
        s2s.jit(s2s.grad(quantile_nearest), fallback=False)(_distinct((7,)))
    rot = np.kron(np.eye(2), np.array([[0.0, -1.0], [1.0, 0.0]]) + 0.1 * np.eye(2))[:3, :3]
    # Numba's np.linalg.eig refuses complex eigenvalues itself ("must not cause a domain change"),
    # which s2s reports as a TransformError at the user's line
    with pytest.raises((ValueError, TransformError), match="domain change|complex eigenvalues"):
        s2s.jit(s2s.grad(eigvals_sorted), fallback=False)(rot)
