"""s2s gradients on the corpus, against finite differences and closed forms."""
import math

import numpy as np
import pytest


from cases import corpus
import s2s  # noqa: E402
from cases.corpus import (AUX_CASES, CASES, SCALAR_CASES, VJP_CASES,
                    case_ids, case_rng)
from cases.fd import (assert_close, check_grads, check_vjp, copy_args,
                numeric_grad)

CASE_IDS = case_ids(CASES)
AUX_IDS = case_ids(AUX_CASES)
VJP_IDS = case_ids(VJP_CASES)
SCALAR_IDS = case_ids(SCALAR_CASES)

RTOL = 1e-5
ATOL = 1e-6


def _nums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _as_list(grads, argnums):
    return [grads] if isinstance(argnums, int) else list(grads)


def _assert_same_tree(a, b, what="aux"):
    """Structural equality for aux values (tuples/lists of arrays and scalars)."""
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)), f"{what}: expected a sequence, got {type(a)}"
        assert len(a) == len(b), f"{what}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_tree(x, y, f"{what}[{i}]")
    else:
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                   rtol=1e-12, atol=1e-12, err_msg=what)


# ---------------------------------------------------------------------------
# The corpus itself, under plain NumPy (needs no s2s)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(("fn", "factory", "argnums"), CASES, ids=CASE_IDS)
def test_corpus_function_runs_under_numpy(fn, factory, argnums, request):
    args = factory(case_rng(request.node.callspec.id))
    before = copy_args(args)
    out = fn(*args)
    assert np.ndim(out) == 0 and np.isfinite(out)
    for n in _nums(argnums):
        assert np.asarray(args[n]).dtype == np.float64
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


def test_corpus_is_large_enough():
    assert len({c[0] for c in CASES}) >= 90
    assert len(CASE_IDS) == len(set(CASE_IDS))


# ---------------------------------------------------------------------------
# grad and value_and_grad against finite differences
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(("fn", "factory", "argnums"), CASES, ids=CASE_IDS)
def test_grad_matches_finite_differences(fn, factory, argnums, request):
    args = factory(case_rng(request.node.callspec.id))
    check_grads(fn, args, argnums=argnums, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(("fn", "factory", "argnums"), CASES, ids=CASE_IDS)
def test_value_and_grad(fn, factory, argnums, request):
    args = factory(case_rng(request.node.callspec.id))
    expected_value = fn(*copy_args(args))
    value, grads = s2s.value_and_grad(fn, argnums=argnums)(*args)
    assert_close(value, expected_value, rtol=1e-10, atol=1e-12, what="value")
    plain = s2s.grad(fn, argnums=argnums)(*args)
    if not isinstance(argnums, int):
        assert isinstance(grads, tuple) and len(grads) == len(argnums)
    for g, p in zip(_as_list(grads, argnums), _as_list(plain, argnums)):
        assert_close(g, p, rtol=1e-10, atol=1e-12, what="value_and_grad vs grad")


@pytest.mark.parametrize(("fn", "factory", "argnums"), CASES, ids=CASE_IDS)
def test_grad_function_is_reusable(fn, factory, argnums, request):
    """One transformed function, called on several inputs: no state leaks between calls."""
    cid = request.node.callspec.id
    args1 = factory(case_rng(cid))
    args2 = factory(case_rng(cid, salt="second"))
    g = s2s.grad(fn, argnums=argnums)
    first = _as_list(g(*args1), argnums)
    second = _as_list(g(*args2), argnums)
    again = _as_list(g(*args1), argnums)
    for a, b in zip(first, again):
        assert_close(b, a, rtol=1e-12, atol=1e-14, what="repeated call")
    for n, s in zip(_nums(argnums), second):
        assert_close(s, numeric_grad(fn, args2, n), rtol=RTOL, atol=ATOL,
                     what=f"second input, argument {n}")


@pytest.mark.parametrize(("fn", "factory", "argnums"), CASES, ids=CASE_IDS)
def test_vjp_of_scalar_function_matches_grad(fn, factory, argnums, request):
    args = factory(case_rng(request.node.callspec.id))
    out, vjp_fn = s2s.vjp(fn, *args)
    assert_close(out, fn(*copy_args(args)), rtol=1e-10, atol=1e-12, what="vjp output")
    cts = vjp_fn(1.0)
    assert isinstance(cts, tuple) and len(cts) == len(args)
    grads = _as_list(s2s.grad(fn, argnums=argnums)(*args), argnums)
    for n, g in zip(_nums(argnums), grads):
        assert_close(cts[n], g, rtol=1e-10, atol=1e-12, what=f"vjp cotangent {n}")


@pytest.mark.parametrize(("fn", "factory", "argnums"), CASES, ids=CASE_IDS)
def test_show_gives_valid_deterministic_source(fn, factory, argnums):
    src = s2s.show(fn, transform="grad", argnums=argnums)
    assert isinstance(src, str) and src.strip()
    compile(src, "<s2s.show>", "exec")
    assert s2s.show(fn, transform="grad", argnums=argnums) == src


# ---------------------------------------------------------------------------
# has_aux
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(("fn", "factory", "argnums"), AUX_CASES, ids=AUX_IDS)
def test_grad_has_aux(fn, factory, argnums, request):
    args = factory(case_rng(request.node.callspec.id))
    expected_loss, expected_aux = fn(*copy_args(args))
    result = s2s.grad(fn, argnums=argnums, has_aux=True)(*args)
    assert isinstance(result, tuple) and len(result) == 2
    grads, aux = result
    _assert_same_tree(aux, expected_aux)

    def loss_only(*a):
        return fn(*a)[0]

    for n, g in zip(_nums(argnums), _as_list(grads, argnums)):
        assert_close(g, numeric_grad(loss_only, args, n), rtol=RTOL, atol=ATOL,
                     what=f"has_aux grad, argument {n}")

    (value, aux2), grads2 = s2s.value_and_grad(fn, argnums=argnums, has_aux=True)(*args)
    assert_close(value, expected_loss, rtol=1e-10, atol=1e-12, what="has_aux value")
    _assert_same_tree(aux2, expected_aux)
    for g, g2 in zip(_as_list(grads, argnums), _as_list(grads2, argnums)):
        assert_close(g2, g, rtol=1e-10, atol=1e-12, what="value_and_grad has_aux")


# ---------------------------------------------------------------------------
# vjp on non-scalar outputs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(("fn", "factory"), VJP_CASES, ids=VJP_IDS)
def test_vjp_random_cotangent(fn, factory, request):
    cid = request.node.callspec.id
    args = factory(case_rng(cid))
    check_vjp(fn, args, rng=case_rng(cid, salt="cotangent"), rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------

def test_closed_form_sum_squares():
    x = np.array([0.5, -1.25, 2.0, 3.5])
    np.testing.assert_allclose(s2s.grad(corpus.closed_sum_squares)(x), 2.0 * x, rtol=1e-12)


def test_closed_form_sum_sin():
    x = np.linspace(-2.0, 2.0, 7)
    np.testing.assert_allclose(s2s.grad(corpus.closed_sum_sin)(x), np.cos(x), rtol=1e-12)


def test_closed_form_max_is_one_hot():
    x = np.array([0.3, 2.5, -1.0, 1.7])
    np.testing.assert_allclose(s2s.grad(corpus.closed_max)(x), [0.0, 1.0, 0.0, 0.0])


def test_closed_form_abs_is_sign():
    x = np.array([0.3, -2.5, -1.0, 1.7])
    np.testing.assert_allclose(s2s.grad(corpus.closed_abs)(x), np.sign(x))


def test_closed_form_logistic_regression():
    rng = np.random.default_rng(7)
    w = rng.standard_normal(3)
    X = rng.standard_normal((10, 3))
    y = np.where(rng.uniform(size=10) < 0.5, -1.0, 1.0)
    z = X @ w
    sig = 1.0 / (1.0 + np.exp(y * z))  # sigmoid(-y z)
    expected_w = -X.T @ (y * sig) / X.shape[0]
    expected_X = -np.outer(y * sig, w) / X.shape[0]
    gw, gX = s2s.grad(corpus.logistic_regression_loss, argnums=(0, 1))(w, X, y)
    np.testing.assert_allclose(gw, expected_w, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(gX, expected_X, rtol=1e-9, atol=1e-14)


def test_closed_form_softmax_cross_entropy():
    rng = np.random.default_rng(8)
    W = rng.standard_normal((4, 3))
    X = rng.standard_normal((6, 4))
    Y = np.eye(3)[rng.integers(0, 3, size=6)]
    logits = X @ W
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    expected = X.T @ (p - Y) / X.shape[0]
    np.testing.assert_allclose(s2s.grad(corpus.softmax_cross_entropy)(W, X, Y), expected,
                               rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(s2s.grad(corpus.softmax_cross_entropy_helper)(W, X, Y), expected,
                               rtol=1e-9, atol=1e-14)


def test_closed_form_least_squares():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((6, 3))
    x = rng.standard_normal(3)
    b = rng.standard_normal(6)
    r = A @ x - b
    gA, gx, gb = s2s.grad(corpus.least_squares, argnums=(0, 1, 2))(A, x, b)
    np.testing.assert_allclose(gA, np.outer(r, x), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(gx, A.T @ r, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(gb, -r, rtol=1e-9, atol=1e-14)


def test_closed_form_quadratic_form():
    rng = np.random.default_rng(10)
    A = rng.standard_normal((4, 4))
    x = rng.standard_normal(4)
    gA, gx = s2s.grad(corpus.la_quadratic_form, argnums=(0, 1))(A, x)
    np.testing.assert_allclose(gA, np.outer(x, x), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(gx, (A + A.T) @ x, rtol=1e-9, atol=1e-14)


def test_closed_form_gaussian_log_likelihood():
    x = np.array([0.3, -1.2, 2.2, 0.9, -0.1])
    mu, log_sigma = 0.4, -0.3
    sigma = math.exp(log_sigma)
    gmu, gls = s2s.grad(corpus.gaussian_log_likelihood, argnums=(0, 1))(mu, log_sigma, x)
    np.testing.assert_allclose(gmu, np.sum(x - mu) / sigma ** 2, rtol=1e-10)
    np.testing.assert_allclose(gls, np.sum((x - mu) ** 2) / sigma ** 2 - x.shape[0], rtol=1e-10)


def test_closed_form_rosenbrock():
    x = np.array([-1.2, 1.0, 0.5, 0.8])
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    np.testing.assert_allclose(s2s.grad(corpus.rosenbrock)(x), g, rtol=1e-10)
    np.testing.assert_allclose(s2s.grad(corpus.rosenbrock_loop)(x), g, rtol=1e-10)


def test_closed_form_horner_coefficients():
    c = np.array([1.0, -2.0, 0.5, 3.0])
    x = 1.3
    gc, gx = s2s.grad(corpus.horner_polynomial, argnums=(0, 1))(c, x)
    np.testing.assert_allclose(gc, x ** np.arange(3, -1, -1), rtol=1e-12)
    np.testing.assert_allclose(gx, np.polyval(np.polyder(c), x), rtol=1e-12)


def test_closed_form_overwritten_value_is_saved():
    # y[0] = x[0]; s = y[0]**2; y[0] = x[1]; return s + y[0]
    x = np.array([1.5, -0.7])
    np.testing.assert_allclose(s2s.grad(corpus.iw_overwrite_used_value)(x), [3.0, 1.0])


def test_closed_form_copy_then_overwrite():
    # sum(y * x) with y = copy(x) except y[0] = 3 x[1]
    x = np.array([0.5, -1.0, 2.0, 0.25])
    expected = 2.0 * x
    expected[0] = 3.0 * x[1]
    expected[1] = 3.0 * x[0] + 2.0 * x[1]
    np.testing.assert_allclose(s2s.grad(corpus.iw_copy_overwrite)(x), expected, rtol=1e-12)


def test_closed_form_while_loop():
    # s_n = 1.5**n + 2 x (1.5**n - 1) after n data-dependent iterations
    x = 0.7
    n = 0
    s = 1.0
    while s < 10.0:
        s = s * 1.5 + x
        n += 1
    np.testing.assert_allclose(s2s.grad(corpus.cf_while_data_dependent)(x),
                               2.0 * (1.5 ** n - 1.0), rtol=1e-10)


def test_closed_form_unused_argument_is_zero():
    x = np.array([1.0, 2.0, 3.0])
    y = np.ones((2, 2))
    gx, gy = s2s.grad(corpus.multi_unused_argument, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 2.0 * x)
    assert np.shape(gy) == (2, 2)
    np.testing.assert_array_equal(gy, np.zeros((2, 2)))


def test_argnums_order_is_respected():
    x = np.array([0.5, -1.0])
    y = np.array([2.0, 0.3])
    gy, gx = s2s.grad(corpus.multi_reversed_order, argnums=(1, 0))(x, y)
    np.testing.assert_allclose(gy, 2.0 * x * y, rtol=1e-12)
    np.testing.assert_allclose(gx, y ** 2 - np.sin(x), rtol=1e-12)


def test_scalar_argument_gives_scalar_gradient():
    g = s2s.grad(corpus.poly_quartic)(1.5)
    assert np.ndim(g) == 0
    np.testing.assert_allclose(g, 8.0 * 1.5 ** 3 - 9.0 * 1.5 ** 2 + 2.0 * 1.5 - 5.0, rtol=1e-12)


# ---------------------------------------------------------------------------
# Higher order
# ---------------------------------------------------------------------------

def test_third_derivative_of_sin_primitive():
    d3 = s2s.grad(s2s.grad(s2s.grad(np.sin)))
    np.testing.assert_allclose(d3(1.0), -math.cos(1.0), rtol=1e-10)


@pytest.mark.parametrize(("prim", "d1", "d2"), [
    (np.sin, np.cos, lambda x: -np.sin(x)),
    (np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x)),
    (np.exp, np.exp, np.exp),
    (np.tanh, lambda x: 1.0 - np.tanh(x) ** 2,
     lambda x: -2.0 * np.tanh(x) * (1.0 - np.tanh(x) ** 2)),
    (np.log, lambda x: 1.0 / x, lambda x: -1.0 / x ** 2),
], ids=["sin", "cos", "exp", "tanh", "log"])
def test_first_and_second_derivative_of_primitives(prim, d1, d2):
    x = 0.8
    np.testing.assert_allclose(s2s.grad(prim)(x), d1(x), rtol=1e-10)
    np.testing.assert_allclose(s2s.grad(s2s.grad(prim))(x), d2(x), rtol=1e-10)


@pytest.mark.parametrize(("fn", "factory", "argnum"), SCALAR_CASES, ids=SCALAR_IDS)
def test_second_derivative_matches_fd_of_first(fn, factory, argnum, request):
    args = factory(case_rng(request.node.callspec.id, salt="hess"))
    d1 = s2s.grad(fn, argnums=argnum)
    d2 = s2s.grad(d1, argnums=argnum)
    # the first derivative itself must be right before its derivative means anything
    assert_close(d1(*args), numeric_grad(fn, args, argnum), rtol=RTOL, atol=ATOL,
                 what="first derivative")
    assert_close(d2(*args), numeric_grad(d1, args, argnum), rtol=RTOL, atol=ATOL,
                 what="second derivative")


def test_mixed_second_derivative():
    # f = a b^2 + c d e with a = x+y, b = x y, c = a - b, d = a b, e = 2
    x, y = 0.7, -1.3
    fn = corpus.arith_tuple_unpack_swap
    dxy = s2s.grad(s2s.grad(fn, argnums=0), argnums=1)
    dx = s2s.grad(fn, argnums=0)
    assert_close(dxy(x, y), numeric_grad(dx, (x, y), 1), rtol=RTOL, atol=ATOL,
                 what="d2f/dxdy")


def test_third_derivative_of_polynomial():
    x = 1.3
    d3 = s2s.grad(s2s.grad(s2s.grad(corpus.poly_quartic)))
    np.testing.assert_allclose(d3(x), 48.0 * x - 18.0, rtol=1e-10)


def test_third_derivative_of_horner_loop():
    c = np.array([2.0, -3.0, 1.0, -5.0, 1.0])  # same polynomial as poly_quartic
    x = -0.6
    d3 = s2s.grad(s2s.grad(s2s.grad(corpus.horner_polynomial, argnums=1), argnums=1), argnums=1)
    np.testing.assert_allclose(d3(c, x), 48.0 * x - 18.0, rtol=1e-10)


# ---------------------------------------------------------------------------
# Decorator
# ---------------------------------------------------------------------------

def test_decorator_on_module_level_definition():
    from cases import corpus_decorated as cd

    x = np.array([0.5, -1.5, 2.0])
    np.testing.assert_allclose(cd.d_sum_cubes(x), 3.0 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(cd.d_loop_with_branch(x), np.where(x > 0, 2.0 * x, -1.0),
                               rtol=1e-12)
    np.testing.assert_allclose(cd.d_loop_with_branch(x),
                               s2s.grad(cd.plain_loop_with_branch)(x), rtol=1e-12)


def _scalar_argument_cases():
    out = []
    for fn, factory, argnums in CASES:
        a = argnums if isinstance(argnums, int) else argnums[0]
        if np.ndim(factory(np.random.default_rng(1))[a]) == 0:
            out.append(pytest.param(fn, factory, a, id=fn.__name__))
    return out


@pytest.mark.parametrize(("fn", "factory", "argnum"), _scalar_argument_cases())
def test_second_derivative_of_every_scalar_argument_case(fn, factory, argnum):
    # grad of the generated derivative works for every corpus function with a scalar argument
    args = factory(np.random.default_rng(1))
    first = s2s.grad(fn, argnums=argnum)
    second = s2s.grad(first, argnums=argnum)(*args)
    eps = 1e-5
    hi, lo = list(args), list(args)
    hi[argnum], lo[argnum] = args[argnum] + eps, args[argnum] - eps
    numeric = (first(*hi) - first(*lo)) / (2 * eps)
    assert_close(second, numeric, rtol=1e-4, atol=1e-6, what=f"second derivative of {fn.__name__}")
