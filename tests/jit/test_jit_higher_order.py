"""Higher-order and composite derivatives under jit (issue 39 item 6): chains of grad of any
length, MAML's gradient through an inner gradient step, Jacobians of an RK4 step, Hessians of
loops; each against closed forms or finite differences and the unjitted transform."""
from __future__ import annotations

import numpy as np
import pytest

import s2s
from cases.fd import numeric_grad


def poly_sin(x):
    return np.sin(x) * x ** 3


def d3_poly_sin(x):      # the third derivative, by hand
    s, c = np.sin(x), np.cos(x)
    return -c * x ** 3 - 9 * s * x ** 2 + 18 * c * x + 6 * s


def d4_poly_sin(x):
    s, c = np.sin(x), np.cos(x)
    return s * x ** 3 - 12 * c * x ** 2 - 36 * s * x + 24 * c


def coupled(x, y, w):
    return np.exp(x * y) * np.sum(np.tanh(w * x))


@pytest.mark.parametrize("x", [0.7, -1.3])
def test_third_and_fourth_derivatives_of_a_number(x):
    g3 = s2s.grad(s2s.grad(s2s.grad(poly_sin)))
    g4 = s2s.grad(g3)
    assert s2s.jit(g3, wait=True)(x) == pytest.approx(d3_poly_sin(x), rel=1e-12)
    assert s2s.jit(g4, wait=True)(x) == pytest.approx(d4_poly_sin(x), rel=1e-12)
    assert s2s.jit(s2s.grad(s2s.grad(s2s.grad(np.sin))), wait=True)(x) == pytest.approx(-np.cos(x), rel=1e-13)
    value, slope = s2s.jit(s2s.value_and_grad(s2s.grad(s2s.grad(poly_sin))), wait=True)(x)
    assert value == pytest.approx(s2s.grad(s2s.grad(poly_sin))(x), rel=1e-12)
    assert slope == pytest.approx(d3_poly_sin(x), rel=1e-12)


def test_mixed_partials_with_an_array_outermost():
    x, y, w = 0.4, -0.6, np.array([0.3, -1.2, 0.8])
    # d/dw of d/dy of d/dx: the outermost argument an array (one forward sweep per element)
    chain = s2s.grad(s2s.grad(s2s.grad(coupled, 0), 1), 2)
    want = chain(x, y, w)
    inner = s2s.grad(s2s.grad(coupled, 0), 1)
    np.testing.assert_allclose(want, numeric_grad(inner, (x, y, w), 2), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(chain, wait=True)(x, y, w), want, rtol=1e-12)
    # d/dx d/dy d/dx: every level a number
    xyx = s2s.grad(s2s.grad(s2s.grad(coupled, 0), 1), 0)
    assert s2s.jit(xyx, wait=True)(x, y, w) == pytest.approx(xyx(x, y, w), rel=1e-12)


# ----- MAML: the gradient of a loss after one inner gradient step, through `@` ---------------
def task_loss(w, x, y):
    return np.mean((np.tanh(x @ w) - y) ** 2)


def maml_loss(w, x, y):
    adapted = w - 0.1 * s2s.grad(task_loss)(w, x, y)
    return task_loss(adapted, x, y)


def matrix_task(W, x):
    return np.sum(np.tanh(x @ W) ** 2)


def maml_matrix(W, x):
    # a matrix parameter and the gradient with respect to the data too (matmul's other cotangent)
    return matrix_task(W - 0.1 * s2s.grad(matrix_task)(W, x), x) + np.sum(s2s.grad(matrix_task, argnums=1)(W, x) ** 2)


@pytest.fixture
def task():
    rng = np.random.default_rng(3)
    return rng.normal(size=3), rng.normal(size=(6, 3)), rng.normal(size=6)


def test_maml_gradient_under_jit(task):
    w, x, y = task
    want = s2s.grad(maml_loss)(w, x, y)
    np.testing.assert_allclose(want, numeric_grad(maml_loss, (w, x, y), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(s2s.grad(maml_loss), wait=True)(w, x, y), want, rtol=1e-12, atol=1e-15)
    value, g = s2s.jit(s2s.value_and_grad(maml_loss), wait=True)(w, x, y)
    assert value == pytest.approx(maml_loss(w, x, y), rel=1e-13)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)
    W = np.random.default_rng(4).normal(size=(3, 2))
    want = s2s.grad(maml_matrix)(W, x)
    np.testing.assert_allclose(want, numeric_grad(maml_matrix, (W, x), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(s2s.grad(maml_matrix), wait=True)(W, x), want, rtol=1e-12, atol=1e-15)


def test_maml_per_task_gradients(task):
    w, x, y = task
    xs, ys = np.stack([x, -x, 2 * x]), np.stack([y, y[::-1], -y])
    per = s2s.jit(s2s.vmap(s2s.grad(maml_loss), in_axes=(None, 0, 0)), wait=True)(w, xs, ys)
    for k in range(3):
        np.testing.assert_allclose(per[k], s2s.grad(maml_loss)(w, xs[k], ys[k]), rtol=1e-12, atol=1e-15)


def test_jvp_of_a_second_derivative_through_matmul(task):
    # forward over reverse through matmul_vjp_a / _b's tangent rules
    w, x, y = task
    t = np.array([0.5, -1.0, 2.0])
    _, got = s2s.jvp(s2s.grad(task_loss), (w, x, y), (t, np.zeros_like(x), np.zeros_like(y)))
    np.testing.assert_allclose(got, s2s.hessian(task_loss)(w, x, y) @ t, rtol=1e-10, atol=1e-13)


# ----- an RK4 step and a loop -----------------------------------------------------------------
def rk4_step(state, h):
    def pendulum(s):
        return np.array([s[1], -np.sin(s[0])])
    k1 = pendulum(state)
    k2 = pendulum(state + h / 2 * k1)
    k3 = pendulum(state + h / 2 * k2)
    k4 = pendulum(state + h * k3)
    return state + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def recurrence(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.tanh(x[i] * s + x[i])
    return s


def test_jacobians_of_an_rk4_step_under_jit():
    state, h = np.array([0.3, -0.2]), 0.1
    want = s2s.jacrev(rk4_step)(state, h)
    fd = np.stack([numeric_grad(lambda s, h: rk4_step(s, h)[k], (state, h), 0) for k in range(2)])
    np.testing.assert_allclose(want, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(s2s.jacrev(rk4_step), wait=True)(state, h), want, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(rk4_step), wait=True)(state, h), want, rtol=1e-12)


def test_hessian_of_a_loop_under_jit():
    x = np.array([0.3, -0.5, 0.9, 0.1])
    want = s2s.hessian(recurrence)(x)
    fd = np.stack([numeric_grad(lambda v: s2s.grad(recurrence)(v)[k], (x,), 0) for k in range(4)])
    np.testing.assert_allclose(want, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(recurrence), wait=True)(x), want, rtol=1e-11, atol=1e-14)


def with_default(x, y, scale=0.7):
    return np.sum(np.sin(x) * y) * scale + np.sum(x ** 3)


def test_second_derivatives_of_a_function_with_a_default_parameter():
    # (the compiled jvp takes every primal, the defaults too; the random programs found it)
    x = np.array([0.3, 0.5])
    np.testing.assert_allclose(s2s.jit(s2s.hessian(with_default), wait=True)(x, 0.4),
                               np.diag(-np.sin(x) * 0.4 * 0.7 + 6 * x), rtol=1e-13)
    assert s2s.jit(s2s.grad(s2s.grad(with_default)), wait=True)(0.3, 0.4) == pytest.approx(
        -np.sin(0.3) * 0.4 * 0.7 + 6 * 0.3, rel=1e-13)
