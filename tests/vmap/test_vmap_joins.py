"""vmap of joins of list literals with batched elements (np.stack, np.array, np.asarray,
np.concatenate) and of their cotangents: one array operation along the next axis, no per-example
loop, equal to a Python loop, under jit and under vmap(grad)."""
from __future__ import annotations

import numpy as np
import pytest

import s2s


def stacked_last(x, c):
    return np.stack([x[0], np.sin(x[1]), c], axis=-1) * 2


def array_literal(x, c):
    return np.array([x[0], np.sin(x[1]), c]) * 2


def concatenated(x, c):
    return np.concatenate([x, np.sin(x), np.ones(2) * c])


def asarray_literal(x, c):
    return np.asarray([x[0] * c, x[1]]) ** 2


def stacked_rows(x, c):
    return np.stack([x, x * c], axis=1)


def pendulum(s, c):
    return np.array([s[1], -c * np.sin(s[0])])


JOINS = [stacked_last, array_literal, concatenated, asarray_literal, stacked_rows, pendulum]


def loss_of(fn):
    def loss(x, c):
        return np.sum(np.tanh(fn(x, c)) ** 2)
    loss.__name__ = f"loss_{fn.__name__}"
    return loss


@pytest.fixture
def xs():
    return np.random.default_rng(5).normal(size=(4, 2))


@pytest.mark.parametrize("fn", JOINS, ids=lambda f: f.__name__)
def test_batched_join_equals_a_loop(fn, xs):
    batched = s2s.vmap(fn, in_axes=(0, None))
    want = np.stack([fn(x, 0.7) for x in xs])
    got = batched(xs, 0.7)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert "per_example(" not in batched.show(2)
    np.testing.assert_allclose(s2s.jit(batched, wait=True)(xs, 0.7), want, rtol=1e-14)


@pytest.mark.parametrize("fn", JOINS, ids=lambda f: f.__name__)
def test_per_example_gradients_through_a_join(fn, xs):
    loss = loss_of(fn)
    want = np.stack([s2s.grad(loss)(x, 0.7) for x in xs])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(loss), in_axes=(0, None))(xs, 0.7), want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("fn", [pendulum, stacked_last], ids=lambda f: f.__name__)
def test_the_join_and_its_cotangent_are_array_operations(fn):
    gen = s2s.vmap(s2s.grad(loss_of(fn)), in_axes=(0, None))
    xs = np.random.default_rng(6).normal(size=(3, 2))
    np.testing.assert_allclose(gen(xs, 0.5), np.stack([s2s.grad(loss_of(fn))(x, 0.5) for x in xs]), rtol=1e-13)
    source = gen.show(2)
    assert "per_example(" not in source and "np.stack(" in source
    # the stack's cotangent: the batch's axis 2 (the example's -1) moved to the pieces' axis 1
    assert fn is pendulum or "= np.moveaxis(dt4, -1, 1)" in source


def test_jacfwd_of_a_state_update_under_jit():
    # jacfwd vmaps the jvp over a basis of tangents: the state's np.array joins batched values
    s = np.array([0.3, -0.4])
    want = np.array([[0.0, 1.0], [-0.9 * np.cos(0.3), 0.0]])
    np.testing.assert_allclose(s2s.jacfwd(pendulum)(s, 0.9), want, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(s2s.jit(s2s.jacfwd(pendulum), wait=True)(s, 0.9), want, rtol=1e-14, atol=1e-15)


def optional_probabilities(p, q=None):
    probs = q if p is None else p
    if probs is not None:
        probs = np.stack((1.0 - probs, probs), axis=1)
    return np.sum(np.log(probs) * np.arange(2.0))


def test_regression_is_none_of_a_batched_value_is_one_answer_for_the_batch():
    """`x is None` of a batched argument was taken as a per-example condition: its branches were
    merged with np.where of an unbatched bool (IndexError in balign, or a bad broadcast), as in
    scikit-learn's log_loss (`y_proba if y_pred is None ...`). Identity has one answer for all the
    examples: the branch is taken as in Python."""
    batch = np.array([[0.2, 0.7, 0.6], [0.3, 0.5, 0.9]])
    got = s2s.vmap(s2s.grad(optional_probabilities))(batch)
    want = np.stack([s2s.grad(optional_probabilities)(b) for b in batch])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2s.vmap(optional_probabilities)(batch),
                               [optional_probabilities(b) for b in batch], rtol=1e-12)
