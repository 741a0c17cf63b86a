"""Functions as users hand them over: bound methods, class and static methods,
objects passed to helpers, attributes set after the transform, *args, keyword arguments at call
time, int/complex/float32/empty arguments to the Jacobian transforms.

Each answer is checked against finite differences or against the same maths written as a plain
function of arrays.
"""
import numpy as np
import pytest

import s2s
from cases.fd import numeric_grad
from s2s.errors import ArgumentError, NonDifferentiableError, TransformError, UnsupportedSyntaxError


class Linear:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def predict(self, x):
        return np.tanh(x @ self.w + self.b)

    def loss(self, x, y, scale=1.0):
        return scale * np.mean((self.predict(x) - y) ** 2)

    @classmethod
    def cube_sum(cls, x):
        return cls.FACTOR * np.sum(x ** 3)

    @staticmethod
    def quartic_sum(x):
        return np.sum(x ** 4)

    FACTOR = 2.0


def loss_of_arrays(x, y, w, b, scale=1.0):
    return scale * np.mean((np.tanh(x @ w + b) - y) ** 2)


@pytest.fixture
def model_and_data():
    rng = np.random.default_rng(3)
    return Linear(rng.normal(size=(3, 2)), rng.normal(size=2)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))


def test_grad_of_a_bound_method_follows_the_objects_weights(model_and_data):
    """`self.w` is read when the code runs: after the weights change, the gradient is for the new
    ones (a transform that froze them would answer for the old weights)."""
    m, x, y = model_and_data
    g = s2s.grad(m.loss)
    np.testing.assert_allclose(g(x, y), s2s.grad(loss_of_arrays)(x, y, m.w, m.b), rtol=1e-10)
    m.w = m.w * 2.0 - 0.5
    np.testing.assert_allclose(g(x, y), s2s.grad(loss_of_arrays)(x, y, m.w, m.b), rtol=1e-10)
    np.testing.assert_allclose(g(x, y), numeric_grad(lambda x: m.loss(x, y), (x,), 0), rtol=1e-6, atol=1e-9)


def test_bound_method_under_every_transform(model_and_data):
    m, x, y = model_and_data
    value, gx = s2s.value_and_grad(m.loss, argnums=(0, 1))(x, y, 3.0)
    assert value == pytest.approx(m.loss(x, y, 3.0))
    np.testing.assert_allclose(gx[1], s2s.grad(loss_of_arrays, argnums=1)(x, y, m.w, m.b, 3.0), rtol=1e-10)
    dx = np.ones_like(x)
    out, tangent = s2s.jvp(m.predict, (x,), (dx,))
    np.testing.assert_allclose(out, m.predict(x))
    np.testing.assert_allclose(tangent, (m.predict(x + 1e-6 * dx) - m.predict(x - 1e-6 * dx)) / 2e-6, rtol=1e-5)
    np.testing.assert_allclose(s2s.vmap(m.predict)(x), np.stack([m.predict(r) for r in x]))
    jac = s2s.jacrev(m.predict)(x[0])
    np.testing.assert_allclose(jac, s2s.jacfwd(m.predict)(x[0]), rtol=1e-10)
    assert s2s.grad(m.loss, argnums=2)(x, y, 2.0) == pytest.approx(m.loss(x, y, 1.0))


def test_class_and_static_methods():
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(s2s.grad(Linear.cube_sum)(x), 2.0 * 3 * x ** 2)
    np.testing.assert_allclose(s2s.grad(Linear.quartic_sum)(x), 4 * x ** 3)
    np.testing.assert_allclose(s2s.hessian(Linear.cube_sum)(x), np.diag(2.0 * 6 * x))


def test_jit_of_a_method_reading_its_object_is_refused_clearly(model_and_data):
    m, x, y = model_and_data
    with pytest.raises(TransformError, match="Python object .*Linear.*Numba has no type") as info:
        s2s.jit(s2s.grad(m.loss))(x, y)
    assert "pass the arrays as arguments" in str(info.value)
    ran = s2s.jit(s2s.grad(m.loss), fallback=True)
    with pytest.warns(Warning):
        got = ran(x, y)
    np.testing.assert_allclose(got, s2s.grad(loss_of_arrays)(x, y, m.w, m.b), rtol=1e-10)


class Config:
    def __init__(self, scale):
        self.scale = scale


CONFIG = Config(3.0)


def scaled(cfg, x):
    return cfg.scale * x


def uses_helper_with_object(x):
    return np.sum(scaled(CONFIG, x) ** 2)


def uses_global_attribute(x):
    return np.sum(CONFIG.scale * x ** 2)


@pytest.mark.parametrize("fn", [uses_helper_with_object, uses_global_attribute], ids=lambda f: f.__name__)
def test_an_attribute_set_after_the_transform_is_seen(fn):
    x = np.array([1.0, 2.0])
    g = s2s.grad(fn)
    before = g(x)
    try:
        CONFIG.scale = 5.0
        np.testing.assert_allclose(g(x), numeric_grad(fn, (x,), 0), rtol=1e-6)
        assert not np.allclose(g(x), before)
        if fn is uses_global_attribute:     # (jit freezes it, and makes new code when it changes)
            np.testing.assert_allclose(s2s.jit(s2s.grad(fn))(x), numeric_grad(fn, (x,), 0), rtol=1e-6)
    finally:
        CONFIG.scale = 3.0


def star_args(*xs):
    return np.sum(xs[0] * xs[1])


def test_star_args_of_the_transformed_function():
    # (it was refused; *args is passed through a generated wrapper now: transformations/sources.py)
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    np.testing.assert_allclose(s2s.grad(star_args, argnums=1)(a, b), a)
    np.testing.assert_allclose(s2s.grad(star_args)(a, b), b)


def with_keyword(x, a=1.0):
    return np.sum(a * x ** 2)


def test_keyword_arguments_at_call_time():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2s.grad(with_keyword)(x, a=2.0), 4 * x)
    np.testing.assert_allclose(s2s.jit(s2s.grad(with_keyword))(x, a=2.0), 4 * x)
    np.testing.assert_allclose(s2s.jacrev(with_keyword)(x, a=3.0), 6 * x)
    np.testing.assert_allclose(s2s.hessian(with_keyword)(x, a=2.0), 4 * np.eye(2))


def square(x):
    return x ** 2


@pytest.mark.parametrize("make,want", [(s2s.jacfwd, np.diag([2.0, 4.0])), (s2s.jacrev, np.diag([2.0, 4.0])),
                                       (lambda f: s2s.hessian(lambda x: np.sum(f(x))), 2.0 * np.eye(2))],
                         ids=["jacfwd", "jacrev", "hessian"])
def test_jacobians_refuse_what_grad_refuses_and_keep_float32(make, want):
    with pytest.raises(NonDifferentiableError, match="integer"):
        make(square)(np.array([1, 2]))
    with pytest.raises(NonDifferentiableError, match="complex"):
        make(square)(np.array([1j, 2.0]))
    with pytest.raises(ArgumentError, match="out of range"):
        s2s.jacfwd(square, argnums=3)(np.ones(2))
    out = make(square)(np.array([1.0, 2.0], dtype=np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want)
    assert make(square)(np.zeros(0)).shape == (0, 0)


def polynomial(x, c=2.0, p=3.0):
    return np.sum(c * x ** p)


def test_forward_mode_with_defaults_left_out():
    """jvp, jacfwd and hessian of a function whose call leaves parameters to their defaults
    (refused before: the tangents followed the parameters, so a default could not stay one)."""
    x = np.array([0.5, 2.0])
    out, tangent = s2s.jvp(polynomial, (x,), (np.ones(2),))
    assert tangent == pytest.approx(np.sum(6 * x ** 2))
    np.testing.assert_allclose(s2s.jacfwd(s2s.grad(polynomial))(x), np.diag(12 * x))
    np.testing.assert_allclose(s2s.hessian(polynomial)(x), np.diag(12 * x))
    np.testing.assert_allclose(s2s.hessian(polynomial)(x, 1.0), np.diag(6 * x))
    np.testing.assert_allclose(s2s.hessian(polynomial)(x, p=2.0), np.diag([4.0, 4.0]))


def _scale_by(a, factors=None):
    if factors is None:
        return a
    if factors is not None:
        a = a * factors[0] + factors[1]
    return a


def tuple_argument_tested_against_none(x):
    return np.sum(_scale_by(x, (2.0, 3.0)) ** 2) + np.sum(_scale_by(x))


def test_a_tuple_argument_compared_with_none():
    """`if factors is None:` on a tuple s2s splits into its elements crashed the generated code
    (NameError: the tuple has no single variable); a tuple is not None."""
    x = np.array([0.5, -1.0])
    g = s2s.grad(tuple_argument_tested_against_none)(x)
    np.testing.assert_allclose(g, 4.0 * (2.0 * x + 3.0) + 1.0, rtol=1e-12)
    np.testing.assert_allclose(g, numeric_grad(tuple_argument_tested_against_none, (x,), 0), rtol=1e-6)
