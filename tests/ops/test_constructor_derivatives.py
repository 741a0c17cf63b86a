"""np.linspace's endpoints and np.full's fill value carry derivatives (they were constants: zeros)."""

import numpy as np
import pytest


from cases import constructor_cases as C
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad

CASES = [
    (C.linspace_endpoints, (0.0, 1.0), (0, 1)),
    (C.linspace_open, (0.2, 1.1), (0, 1)),
    (C.linspace_of_vectors, (np.array([0.5, 1.0]),), 0),
    (C.full_of_scalar, (2.0,), 0),
    (C.full_then_written, (1.5,), 0),
    (C.full_of_row, (np.array([0.3, -0.6]),), 0),
    (C.r_of_values, (np.array([0.4, -0.2]),), 0),
    (C.r_of_scalars, (1.5, 0.5), (0, 1)),
]
IDS = [fn.__name__ for fn, _, _ in CASES]


def test_closed_forms():
    assert s2s.grad(C.linspace_endpoints, argnums=(0, 1))(0.0, 1.0) == pytest.approx((2.5, 7.5), rel=1e-12)
    assert s2s.grad(C.full_of_scalar)(2.0) == pytest.approx(15.0, rel=1e-12)
    assert s2s.grad(C.full_then_written)(1.5) == pytest.approx(2 * 1.5 * 2 + 4 * 1.5 ** 3, rel=1e-12)
    np.testing.assert_allclose(s2s.grad(C.r_of_values)(np.zeros(2)), [0.0, 1.0], rtol=1e-12)
    a, b = 1.5, 0.5
    assert s2s.grad(C.r_of_scalars, argnums=(0, 1))(a, b) == pytest.approx((2 * a + 2 * a * b * b, 8 * b + 2 * a * a * b))


def test_np_c_is_refused_not_zero():
    with pytest.raises(s2s.UnsupportedSyntaxError, match="np.c_"):
        s2s.grad(C.c_of_columns)(np.ones(3))


def _as_tuple(g, argnums):
    return g if isinstance(argnums, tuple) else (g,)


@pytest.mark.parametrize("fn, args, argnums", CASES, ids=IDS)
def test_grad_and_jvp_match_finite_differences(fn, args, argnums):
    got = _as_tuple(s2s.grad(fn, argnums=argnums)(*args), argnums)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for g, k in zip(got, nums):
        fd = numeric_grad(fn, args, k)
        assert_close(g, fd, rtol=1e-6, atol=1e-8, what=f"grad({fn.__name__}) arg {k}")
        tangents = tuple(np.ones_like(np.asarray(a, float)) if j == k else np.zeros_like(np.asarray(a, float))
                         for j, a in enumerate(args))
        _, t = s2s.jvp(fn, args, tangents)
        assert t == pytest.approx(float(np.sum(fd)), rel=1e-6, abs=1e-8)


# Numba compiles np.linspace without keywords and np.full with a scalar fill value only
COMPILED = (C.linspace_endpoints, C.full_of_scalar, C.full_then_written, C.r_of_values)   # (np.atleast_1d of a float: not in Numba)


@pytest.mark.parametrize("fn, args, argnums", [c for c in CASES if c[0] in COMPILED],
                         ids=[i for c, i in zip(CASES, IDS) if c[0] in COMPILED])
def test_jit_grad_equals_grad(fn, args, argnums):
    want = _as_tuple(s2s.grad(fn, argnums=argnums)(*args), argnums)
    got = _as_tuple(s2s.jit(s2s.grad(fn, argnums=argnums))(*args), argnums)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("fn, args", [(C.linspace_of_vectors, (np.array([0.5, 1.0]),)),
                                      (C.full_of_row, (np.array([0.3, -0.6]),))])
def test_what_numba_cannot_compile_is_refused_at_the_users_line(fn, args):
    with pytest.raises(s2s.TransformError, match="Numba cannot compile") as info:
        s2s.jit(s2s.grad(fn))(*args)
    assert info.value.filename == C.__file__ and info.value.lineno == fn.__code__.co_firstlineno + 1


@pytest.mark.parametrize("fn", [C.std_of, C.var_of, C.std_weighted])
@pytest.mark.parametrize("x", [3.5, np.array([2.0]), np.ones((1, 2)), np.full(3, 0.5)], ids=["float", "1", "1x2", "equal"])
def test_std_and_var_of_a_constant_input_have_zero_derivative(fn, x):
    """np.std of one element (or of equal ones) is constant: derivative 0 (autograd's answer;
    0 is a subgradient for equal elements), where the rule divided 0 by 0 (s2s.grad(np.std)(3.5)
    was nan)."""
    grads = [s2s.grad(fn)(x)]
    if np.ndim(x):        # (Numba has no np.std / np.var of a float)
        grads.append(s2s.jit(s2s.grad(fn))(x))
    for g in grads:
        np.testing.assert_array_equal(g, np.zeros_like(np.asarray(x, float)))
    _, t = s2s.jvp(fn, (x,), (np.ones_like(np.asarray(x, float)),))
    assert t == 0.0


def test_std_second_derivatives_match_finite_differences():
    x = np.array([1.0, 2.0, 4.0])
    g = s2s.grad(C.std_of)
    h_fd = np.stack([numeric_grad(lambda y, k=k: g(y)[k], (x,), 0) for k in range(3)])
    assert_close(s2s.hessian(C.std_of)(x), h_fd, rtol=1e-5, atol=1e-7, what="hessian(std)")
    assert_close(g(x), numeric_grad(C.std_of, (x,), 0), rtol=1e-6, atol=1e-8, what="grad(std)")
