"""Jacobians, Hessians and jvp/vjp consistency.

- jacfwd(f)(x), jacrev(f)(x) and a central finite-difference Jacobian agree,
  with shape out.shape + in.shape (JAX's convention);
- hessian(f)(x) equals finite differences of s2s.grad(f) (and closed forms);
- <u, J v> from jvp equals <J^T u, v> from vjp (autograd's test);
- argnums tuples; integer (non-differentiable) arguments in jvp.

The forward-mode tests need a tangent rule for every op used; until those
land they fail with NoRuleError (these are the acceptance tests for them).
"""

import numpy as np
import pytest


from cases import fixtures_extra as F
import s2s  # noqa: E402
from cases.fd import assert_close

RTOL = 1e-5
ATOL = 1e-6


def fd_jacobian(f, args, argnum=0, eps=1e-6):
    """Central finite-difference Jacobian of f w.r.t. args[argnum]: out.shape + in.shape."""
    args = list(args)
    x0 = np.array(args[argnum], dtype=np.float64, copy=True)
    is_array = isinstance(args[argnum], np.ndarray)
    out0 = np.asarray(f(*args), dtype=np.float64)
    flat = x0.reshape(-1)
    cols = []
    for i in range(flat.size):
        h = eps * max(1.0, abs(flat[i]))
        plus, minus = flat.copy(), flat.copy()
        plus[i] += h
        minus[i] -= h
        h2 = plus[i] - minus[i]
        ap, am = list(args), list(args)
        ap[argnum] = plus.reshape(x0.shape) if is_array else float(plus[0])
        am[argnum] = minus.reshape(x0.shape) if is_array else float(minus[0])
        fp = np.asarray(f(*ap), dtype=np.float64)
        fm = np.asarray(f(*am), dtype=np.float64)
        cols.append((fp - fm) / h2)
    J = np.stack(cols, axis=-1) if cols else np.zeros(out0.shape + (0,))
    return J.reshape(out0.shape + x0.shape)


def _rng(seed):
    return np.random.default_rng(seed)


def _distinct(n, seed):
    r = _rng(seed)
    vals = np.cumsum(r.uniform(0.1, 0.3, n)) - 0.8
    return r.permutation(vals)


def _away(shape, seed, points=(0.0,), lo=-1.5, hi=1.5, margin=0.1):
    r = _rng(seed)
    x = r.uniform(lo, hi, shape)
    for _ in range(100):
        bad = np.zeros(x.shape, dtype=bool)
        for p in points:
            bad |= np.abs(x - p) < margin
        if not bad.any():
            return x
        x = np.where(bad, r.uniform(lo, hi, shape), x)
    raise RuntimeError("sampling failed")


# (fn, input factory) for R^n -> R^m functions
JAC_CASES = [
    pytest.param(F.j_sin, lambda: _rng(1).standard_normal(4), id="sin"),
    pytest.param(F.j_exp_times_x, lambda: _rng(2).standard_normal(3), id="exp_times_x"),
    pytest.param(F.j_poly, lambda: _rng(3).standard_normal(5), id="poly"),
    pytest.param(F.j_tanh_chain, lambda: _rng(4).standard_normal(4), id="tanh_chain"),
    pytest.param(F.j_matvec, lambda: _rng(5).standard_normal(3), id="matvec"),
    pytest.param(F.j_gram, lambda: _rng(6).standard_normal((3, 2)), id="gram_matrix"),
    pytest.param(F.j_sum_axis0, lambda: _rng(7).standard_normal((3, 4)), id="sum_axis0"),
    pytest.param(F.j_mean_axis1, lambda: _rng(8).standard_normal((3, 4)), id="mean_axis1"),
    pytest.param(F.j_max_axis0, lambda: _distinct(12, 9).reshape(3, 4), id="max_axis0"),
    pytest.param(F.j_prod_axis1, lambda: _away((2, 3), 10), id="prod_axis1"),
    pytest.param(F.j_softmax, lambda: _distinct(5, 11), id="softmax"),
    pytest.param(F.j_normalize, lambda: _away(4, 12), id="normalize"),
    pytest.param(F.j_loop, lambda: _rng(13).standard_normal(3), id="for_loop"),
    pytest.param(F.j_loop_selfmul, lambda: _rng(14).standard_normal(3), id="for_loop_selfmul"),
    pytest.param(F.j_while, lambda: _rng(15).standard_normal(3), id="while_loop"),
    pytest.param(F.j_branch, lambda: np.abs(_rng(16).standard_normal(3)) + 0.1, id="branch_if"),
    pytest.param(F.j_branch, lambda: -np.abs(_rng(17).standard_normal(3)) - 0.1, id="branch_else"),
    pytest.param(F.j_index_write, lambda: _rng(18).standard_normal(3), id="index_write"),
    pytest.param(F.j_index_accumulate, lambda: _rng(19).standard_normal(4), id="index_accumulate"),
    pytest.param(F.j_slices, lambda: _rng(20).standard_normal(6), id="strided_slices"),
    pytest.param(F.j_where, lambda: _away(5, 21), id="where"),
    pytest.param(F.j_maximum, lambda: _away(5, 22, points=(0.5,)), id="maximum"),
    pytest.param(F.j_reshape_transpose, lambda: _rng(23).standard_normal(6),
                 id="reshape_transpose"),
    pytest.param(F.j_scalar_out, lambda: _rng(24).standard_normal(4), id="scalar_out"),
    pytest.param(F.j_log_sqrt, lambda: _rng(25).uniform(0.5, 2.0, 4), id="log_sqrt"),
    pytest.param(F.j_dot_scale, lambda: _rng(26).standard_normal(3), id="dot_scale"),
    pytest.param(F.j_matrix_in_vector_out, lambda: _rng(27).standard_normal((3, 2)),
                 id="matrix_in"),
    pytest.param(F.j_array_literal, lambda: _rng(28).standard_normal(3), id="array_literal"),
]


def _expected_shape(f, x):
    return np.shape(f(x)) + np.shape(x)


@pytest.mark.parametrize(("fn", "make"), JAC_CASES)
def test_jacrev_matches_finite_differences(fn, make):
    x = make()
    J = s2s.jacrev(fn)(x)
    assert np.shape(J) == _expected_shape(fn, x)
    assert_close(J, fd_jacobian(fn, (x,)), rtol=RTOL, atol=ATOL, what=f"jacrev({fn.__name__})")


@pytest.mark.parametrize(("fn", "make"), JAC_CASES)
def test_jacfwd_matches_finite_differences(fn, make):
    x = make()
    J = s2s.jacfwd(fn)(x)
    assert np.shape(J) == _expected_shape(fn, x)
    assert_close(J, fd_jacobian(fn, (x,)), rtol=RTOL, atol=ATOL, what=f"jacfwd({fn.__name__})")


@pytest.mark.parametrize(("fn", "make"), JAC_CASES)
def test_jacfwd_equals_jacrev(fn, make):
    x = make()
    assert_close(s2s.jacfwd(fn)(x), s2s.jacrev(fn)(x), rtol=1e-10, atol=1e-12,
                 what=f"jacfwd vs jacrev ({fn.__name__})")


@pytest.mark.parametrize(("fn", "make"), JAC_CASES)
def test_jvp_vjp_inner_product(fn, make):
    """<u, J v> (forward) == <J^T u, v> (reverse), for random u, v."""
    x = make()
    r = _rng(99)
    v = r.standard_normal(np.shape(x))
    out, tout = s2s.jvp(fn, (x,), (v,))
    assert_close(out, fn(x), rtol=1e-12, atol=1e-12, what="jvp primal")
    assert np.shape(tout) == np.shape(out)
    out2, vjp_fn = s2s.vjp(fn, x)
    u = r.standard_normal(np.shape(out2))
    if np.ndim(out2) == 0:
        u = float(u)
    (ct,) = vjp_fn(u)
    lhs = float(np.sum(u * np.asarray(tout)))
    rhs = float(np.sum(np.asarray(ct) * v))
    assert_close(lhs, rhs, rtol=1e-9, atol=1e-10, what=f"<u, Jv> vs <J^T u, v> ({fn.__name__})")


# ---------------------------------------------------------------------------
# argnums tuples and integer arguments
# ---------------------------------------------------------------------------

XA = np.array([0.4, -1.1, 0.8])
YA = np.array([1.3, -0.6])


@pytest.mark.parametrize("jac", [s2s.jacrev, s2s.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_argnums_tuple(jac):
    Jx, Jy = jac(F.j_two_args, argnums=(0, 1))(XA, YA)
    assert Jx.shape == (3, 3) and Jy.shape == (3, 2)
    assert_close(Jx, fd_jacobian(F.j_two_args, (XA, YA), 0), what="d/dx")
    assert_close(Jy, fd_jacobian(F.j_two_args, (XA, YA), 1), what="d/dy")
    # closed form
    assert_close(Jx, np.diag(np.cos(XA) * YA[0] + YA[1]), what="d/dx closed form")
    assert_close(Jy, np.stack([np.sin(XA), XA], axis=1), what="d/dy closed form")


@pytest.mark.parametrize("jac", [s2s.jacrev, s2s.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_single_argnum_second_argument(jac):
    Jy = jac(F.j_two_args, argnums=1)(XA, YA)
    assert_close(Jy, np.stack([np.sin(XA), XA], axis=1), what="d/dy")


def test_jvp_two_tangents():
    tx = np.array([1.0, 0.0, -1.0])
    ty = np.array([0.5, 2.0])
    out, tout = s2s.jvp(F.j_two_args, (XA, YA), (tx, ty))
    assert_close(out, F.j_two_args(XA, YA), what="primal")
    expected = (np.cos(XA) * YA[0] + YA[1]) * tx + np.sin(XA) * ty[0] + XA * ty[1]
    assert_close(tout, expected, what="tangent")


def test_jvp_integer_argument_has_zero_tangent():
    t = np.array([1.0, -2.0, 0.5])
    out, tout = s2s.jvp(F.j_int_power, (XA, 3), (t, 0))
    assert_close(out, XA ** 3 * 2.0, what="primal")
    assert_close(tout, 6.0 * XA ** 2 * t, what="tangent")


def test_jvp_integer_loop_count():
    t = np.array([1.0, 1.0, 1.0])
    out, tout = s2s.jvp(F.j_int_loop, (XA, 3), (t, 0))
    assert_close(out, XA ** 4, what="primal")
    assert_close(tout, 4.0 * XA ** 3, what="tangent")


def test_jvp_integer_argument_nonzero_tangent_rejected():
    with pytest.raises(s2s.NonDifferentiableError):
        s2s.jvp(F.j_int_power, (XA, 3), (np.ones(3), 1))


def test_jacfwd_with_integer_argument():
    J = s2s.jacfwd(F.j_int_power)(XA, 3)
    assert_close(J, np.diag(6.0 * XA ** 2), what="jacfwd with an int argument")


def test_jacrev_argnums0_with_integer_argument():
    # argnums=0 must not require the (integer) second argument to be differentiable
    J = s2s.jacrev(F.j_int_power, argnums=0)(XA, 3)
    assert_close(J, np.diag(6.0 * XA ** 2), what="jacrev with an int argument")


# ---------------------------------------------------------------------------
# Hessians
# ---------------------------------------------------------------------------

HESS_CASES = [
    pytest.param(F.h_quadratic, lambda: _rng(31).standard_normal(3), id="quadratic"),
    pytest.param(F.h_sum_cube, lambda: _rng(32).standard_normal(4), id="sum_cube"),
    pytest.param(F.h_logsumexp, lambda: _distinct(4, 33), id="logsumexp"),
    pytest.param(F.h_rosenbrock, lambda: _rng(34).uniform(-1.0, 1.0, 4), id="rosenbrock"),
    pytest.param(F.h_loop, lambda: _rng(35).standard_normal(3), id="for_loop"),
    pytest.param(F.h_branch, lambda: np.abs(_rng(36).standard_normal(3)) + 0.1, id="branch_if"),
    pytest.param(F.h_branch, lambda: -np.abs(_rng(37).standard_normal(3)) - 0.1, id="branch_else"),
    pytest.param(F.h_while, lambda: _rng(38).standard_normal(3), id="while_loop"),
    pytest.param(F.h_softplus, lambda: _rng(39).standard_normal(4), id="softplus"),
    pytest.param(F.h_norm, lambda: _rng(40).standard_normal(3), id="norm"),
    pytest.param(F.h_product, lambda: _rng(41).standard_normal(3), id="product"),
    pytest.param(F.h_mlp, lambda: _rng(42).standard_normal(3), id="mlp"),
]


@pytest.mark.parametrize(("fn", "make"), HESS_CASES)
def test_hessian_matches_fd_of_grad(fn, make):
    x = make()
    H = s2s.hessian(fn)(x)
    n = x.size
    assert H.shape == (n, n)
    g = s2s.grad(fn)
    expected = fd_jacobian(lambda z: g(z), (x,))
    assert_close(H, expected, rtol=1e-5, atol=1e-5, what=f"hessian({fn.__name__})")
    assert_close(H, H.T, rtol=1e-8, atol=1e-8, what="hessian symmetry")


def test_hessian_closed_form_quadratic():
    x = _rng(51).standard_normal(3)
    H = s2s.hessian(F.h_quadratic)(x)
    assert_close(H, 0.5 * (F.H_MAT + F.H_MAT.T), rtol=1e-12, atol=1e-12, what="(A + A^T) / 2")


def test_hessian_closed_form_sum_cube():
    x = _rng(52).standard_normal(4)
    H = s2s.hessian(F.h_sum_cube)(x)
    assert_close(H, np.diag(6.0 * x), rtol=1e-12, atol=1e-12, what="diag(6 x)")


def test_hessian_closed_form_product():
    x = _rng(53).standard_normal(3)
    H = s2s.hessian(F.h_product)(x)
    a, b, c = x
    expected = np.array([[2.0, c, b], [c, 0.0, a], [b, a, 0.0]])
    assert_close(H, expected, rtol=1e-12, atol=1e-12, what="hessian of x0 x1 x2 + x0^2")


def test_hessian_of_matrix_input_shape():
    X = _rng(54).standard_normal((2, 2))
    H = s2s.hessian(F.h_sum_cube)(X)
    assert H.shape == (2, 2, 2, 2)
    expected = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            expected[i, j, i, j] = 6.0 * X[i, j]
    assert_close(H, expected, rtol=1e-12, atol=1e-12, what="hessian of sum(X^3)")


def test_hessian_argnums_tuple():
    x = _rng(55).standard_normal(3)
    y = _rng(56).standard_normal(3)
    H = s2s.hessian(F.h_two_args, argnums=(0, 1))(x, y)
    assert len(H) == 2 and all(len(row) == 2 for row in H)
    gx = s2s.grad(F.h_two_args, argnums=0)
    gy = s2s.grad(F.h_two_args, argnums=1)
    assert_close(H[0][0], fd_jacobian(gx, (x, y), 0), rtol=1e-5, atol=1e-5, what="H_xx")
    assert_close(H[0][1], fd_jacobian(gx, (x, y), 1), rtol=1e-5, atol=1e-5, what="H_xy")
    assert_close(H[1][0], fd_jacobian(gy, (x, y), 0), rtol=1e-5, atol=1e-5, what="H_yx")
    assert_close(H[1][1], fd_jacobian(gy, (x, y), 1), rtol=1e-5, atol=1e-5, what="H_yy")
    # closed forms: d2/dx2 = diag(-sin x y^2 + 2 y), d2/dxdy = diag(2 cos x y + 2 x)
    assert_close(H[0][0], np.diag(-np.sin(x) * y * y + 2.0 * y), rtol=1e-10, atol=1e-10,
                 what="H_xx closed")
    assert_close(H[0][1], np.diag(2.0 * np.cos(x) * y + 2.0 * x), rtol=1e-10, atol=1e-10,
                 what="H_xy closed")
    assert_close(H[1][1], np.diag(2.0 * np.sin(x)), rtol=1e-10, atol=1e-10, what="H_yy closed")


# ----- Jacobians are source: s2s transforms them again ---------------------------------

def nested_f(x):
    return np.sin(x) * x[0] + np.tanh(x) ** 2


def nested_g(x, y):
    return np.exp(x * y[0]) + y[1] * x ** 3


def nested_scalar(x):
    return np.sum(nested_f(x))


def two_outputs(x):
    return np.sin(x), np.cos(x)


_X3 = np.array([0.3, 1.2, -0.5])
_Y2 = np.array([0.7, -0.4])


@pytest.mark.parametrize("outer,inner", [(s2s.jacrev, s2s.jacrev), (s2s.jacfwd, s2s.jacrev),
                                         (s2s.jacrev, s2s.jacfwd), (s2s.jacfwd, s2s.jacfwd)])
def test_nested_jacobians_match_finite_differences_of_the_jacobian(outer, inner):
    second = outer(inner(nested_f))(_X3)
    assert second.shape == (3, 3, 3)
    assert_close(second, fd_jacobian(s2s.jacrev(nested_f), (_X3,)), rtol=1e-5, atol=1e-7)


def test_jacobian_of_jacobian_of_scalar_is_the_hessian():
    H = s2s.hessian(nested_scalar)(_X3)
    assert_close(s2s.jacrev(s2s.jacrev(nested_scalar))(_X3), H, rtol=1e-10, atol=1e-12)
    assert_close(s2s.jacfwd(s2s.jacrev(nested_scalar))(_X3), H, rtol=1e-10, atol=1e-12)


def test_jacobian_over_another_argument_of_a_jacobian():
    """d/dx of the Jacobian in y: the outer vjp runs through a vmapped vjp whose index writes
    (per-example add_at) once gave a silent zero."""
    J_y = s2s.jacrev(nested_g, argnums=1)
    mixed = s2s.jacrev(J_y, argnums=0)(_X3, _Y2)
    assert mixed.shape == (3, 2, 3)
    assert np.abs(mixed).max() > 1.0
    assert_close(mixed, fd_jacobian(lambda x: J_y(x, _Y2), (_X3,)), rtol=1e-5, atol=1e-7)
    assert_close(s2s.jacfwd(J_y, argnums=0)(_X3, _Y2), mixed, rtol=1e-10, atol=1e-12)


def test_jacobian_of_a_hessian():
    third = s2s.jacrev(s2s.hessian(nested_scalar))(_X3)
    assert_close(third, fd_jacobian(s2s.hessian(nested_scalar), (_X3,)), rtol=1e-5, atol=1e-7)


def jacobian_norm(x):
    return np.sum(s2s.jacrev(nested_f)(x) ** 2)


def test_grad_through_a_jacobian_called_in_transformed_code():
    assert_close(s2s.grad(jacobian_norm)(_X3), fd_jacobian(jacobian_norm, (_X3,)), rtol=1e-5, atol=1e-7)


def test_vmap_of_a_jacobian_matches_a_loop():
    xs = np.stack([_X3, 2.0 * _X3, _X3 - 1.0])
    batched = s2s.vmap(s2s.jacrev(nested_f))(xs)
    assert_close(batched, np.stack([s2s.jacrev(nested_f)(x) for x in xs]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("jac", [s2s.jacrev, s2s.jacfwd])
def test_jacobian_of_a_tuple_output_is_refused_clearly(jac):
    from s2s.errors import S2SError
    with pytest.raises((ValueError, S2SError), match="tuple"):
        jac(two_outputs)(_X3)


def test_grad_of_vmapped_vjp_with_index_writes_matches_finite_differences():
    """grad through vmap(vjp): the vmapped vjp writes cotangents per example (badd_at)."""
    vjp_rows = s2s.vmap(s2s.api.Transformed(nested_g, "vjp", (1,)).generated().fn, (0, None, None), 0)
    W = np.arange(6.0).reshape(3, 2)

    def weighted(x, y):
        return np.sum(vjp_rows(np.eye(3), x, y)[0] * W)
    assert_close(s2s.grad(weighted)(_X3, _Y2), fd_jacobian(lambda x: weighted(x, _Y2), (_X3,)),
                 rtol=1e-5, atol=1e-7)
    assert_close(s2s.jvp(weighted, (_X3, _Y2), (np.ones(3), np.zeros(2)))[1],
                 np.sum(fd_jacobian(lambda x: weighted(x, _Y2), (_X3,))), rtol=1e-5, atol=1e-7)
