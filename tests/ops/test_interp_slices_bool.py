"""np.interp (an op defined by searchsorted and indexing), slices of tuples and lists, and the
refusal of a boolean output (as JAX refuses it): each through grad, jvp, vmap and jit(grad)."""

import numpy as np
import pytest


import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad
from s2s.errors import NonDifferentiableError  # noqa: E402

XP = np.array([-1.0, 0.0, 1.0, 2.5])
FP = np.array([0.0, 2.0, 1.0, 5.0])


def interp_in_x(x):
    return np.sum(np.interp(x, XP, FP) * np.arange(1.0, x.size + 1.0))


def interp_in_values(fp):
    return np.sum(np.interp(np.array([-2.0, 0.25, 1.5, 3.0, 2.5]), XP, fp) ** 2)


def interp_in_knots(xp):
    return np.sum(np.interp(np.array([0.3, 1.1, 2.0]), np.sort(xp), FP, left=-1.0, right=7.0))


def interp_scalar(x):
    return np.interp(x[0], XP, FP) * x[1]


def tuple_slice(x):
    parts = (x, 2.0 * x, x ** 2, np.sin(x))
    return np.sum(np.stack(parts[1::2])) + np.sum(parts[-1] * parts[0])


def list_slice(x):
    terms = [x[0], x[1] * x[2], x[2] ** 2, x[0] * x[1]]
    return sum(terms[1:3]) + sum(terms[:-3]) * 2.0


CASES = [(interp_in_x, np.array([-1.5, -0.4, 0.3, 1.2, 2.0, 2.9])), (interp_in_values, FP + 0.1),
         (interp_in_knots, np.array([-1.0, 0.1, 1.0, 2.4])), (interp_scalar, np.array([0.7, 1.3])),
         (tuple_slice, np.array([0.3, 1.2, -0.5])), (list_slice, np.array([0.3, 1.2, -0.5]))]




@pytest.mark.parametrize("f,x", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_grad_jvp_vmap_jit_match(f, x):
    want = numeric_grad(f, (x,), 0)
    assert np.abs(want).max() > 0.1
    assert_close(s2s.grad(f)(x), want, rtol=1e-6, atol=1e-8)
    v = np.linspace(0.5, 1.5, x.size)
    assert_close(s2s.jvp(f, (x,), (v,))[1], want @ v, rtol=1e-6, atol=1e-8)
    xs = np.stack([x, x * 0.9])
    assert_close(s2s.vmap(f)(xs), np.array([f(r) for r in xs]), rtol=1e-12, atol=1e-14)
    assert_close(s2s.vmap(s2s.grad(f))(xs), np.stack([s2s.grad(f)(r) for r in xs]), rtol=1e-12, atol=1e-14)
    assert_close(s2s.jit(s2s.grad(f))(x), want, rtol=1e-6, atol=1e-8)


def test_interp_matches_numpy_at_knots_and_beyond_the_ends():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.5, 4.0])
    assert_close(s2s.jit(lambda x: np.interp(x, XP, FP))(x), np.interp(x, XP, FP), rtol=1e-15, atol=0)
    got = s2s.vmap(lambda x: np.interp(x, XP, FP, left=-1.0, right=9.0))(x)
    assert_close(got, np.interp(x, XP, FP, left=-1.0, right=9.0), rtol=1e-15, atol=0)


def test_interp_with_a_period_is_refused():
    with pytest.raises(NotImplementedError, match="period"):
        s2s.grad(lambda x: np.sum(np.interp(x, XP, FP, period=3.0)))(np.array([0.5]))


@pytest.mark.parametrize("transform", [s2s.grad, lambda f: s2s.jit(s2s.grad(f))])
def test_grad_of_a_boolean_output_is_refused(transform):
    with pytest.raises((NonDifferentiableError, s2s.errors.S2SError), match="boolean"):
        transform(lambda x: x[0] > 0.5)(np.array([1.0, 2.0]))


def test_slice_bounds_must_be_constants():
    def f(x, k):
        return np.sum(np.stack((x, x, x)[k:]))
    with pytest.raises(s2s.errors.UnsupportedSyntaxError, match="constant bounds"):
        s2s.grad(f)(np.ones(2), 1)


# np.hstack / vstack / column_stack / concatenate / stack of an array (its rows are the pieces):
# the gradient is an array shaped like it (it was a list of pieces; hstack of a 1-d array crashed)
_ROWS = np.arange(6.0).reshape(2, 3) / 5


@pytest.mark.parametrize("f,x", [
    (lambda x: np.sum(np.hstack(x) ** 2 * np.arange(3.0)), np.array([0.3, 1.2, -0.5])),
    (lambda x: np.sum(np.vstack(x) * np.arange(3.0)[:, None]), np.array([0.3, 1.2, -0.5])),
    (lambda x: np.sum(np.column_stack(x) ** 3), np.array([0.3, 1.2, -0.5])),
    (lambda X: np.sum(np.concatenate(X) ** 2 * np.arange(6.0)), _ROWS),
    (lambda X: np.sum(np.stack(X, axis=1) ** 3), _ROWS),
    (lambda X: np.sum(np.hstack(X) ** 2 * np.arange(6.0)), _ROWS),
    (lambda X: np.sum(np.vstack(X) ** 3), _ROWS)], ids=["hstack", "vstack", "column_stack", "concatenate",
                                                       "stack", "hstack_rows", "vstack_rows"])
def test_stacking_the_rows_of_an_array_gives_an_array_gradient(f, x):
    want = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = 1e-6
        want.flat[i] = (f(x + e) - f(x - e)) / 2e-6
    got = s2s.grad(f)(x)
    assert isinstance(got, np.ndarray) and got.shape == x.shape
    assert_close(got, want, rtol=1e-6, atol=1e-8)
    assert_close(s2s.jvp(f, (x,), (np.ones_like(x),))[1], want.sum(), rtol=1e-6, atol=1e-8)
