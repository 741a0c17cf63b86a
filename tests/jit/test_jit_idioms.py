"""Everyday idioms that grad differentiates must also compile (issue 39): each through jit(grad),
jit(value_and_grad), jit(vmap(grad)) and jit(hessian) where it means something, against the
unjitted transform and finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import s2s
from cases.fd import numeric_grad


# ----- cross-entropy: logp[np.arange(n), labels] ------------------------------------------------
def cross_entropy(W, X, labels):
    z = X @ W
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    n = X.shape[0]
    return -np.mean(logp[np.arange(n), labels])


def picked_pairs(a, rows, cols):
    # repeated (row, col) pairs: their cotangents accumulate (np.add.at), and negative indices
    return np.sum(a[rows, cols] ** 2)


@pytest.fixture
def classification():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 3)), rng.normal(size=(9, 4)), rng.integers(0, 3, size=9)


def test_cross_entropy_under_jit(classification):
    W, X, labels = classification
    want = s2s.grad(cross_entropy)(W, X, labels)
    np.testing.assert_allclose(want, numeric_grad(cross_entropy, (W, X, labels), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(cross_entropy), wait=True)(W, X, labels), want, rtol=1e-12)
    value, g = s2s.jit(s2s.value_and_grad(cross_entropy), wait=True)(W, X, labels)
    assert value == pytest.approx(cross_entropy(W, X, labels), rel=1e-13)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.hessian(cross_entropy), wait=True)(W, X, labels),
                               s2s.hessian(cross_entropy)(W, X, labels), rtol=1e-10, atol=1e-12)


def test_cross_entropy_per_example_gradients(classification):
    W, X, labels = classification
    Xs, Ls = np.stack([X, X[::-1], 2 * X]), np.stack([labels, labels[::-1], (labels + 1) % 3])
    per = s2s.jit(s2s.vmap(s2s.grad(cross_entropy), in_axes=(None, 0, 0)), wait=True)(W, Xs, Ls)
    for k in range(3):
        np.testing.assert_allclose(per[k], s2s.grad(cross_entropy)(W, Xs[k], Ls[k]), rtol=1e-12)


def test_repeated_pairs_accumulate_as_np_add_at():
    a = np.arange(12.0).reshape(3, 4) / 7
    rows, cols = np.array([0, 2, 0, -1, 1]), np.array([1, 3, 1, 0, -4])       # (0, 1) twice
    want = np.zeros_like(a)
    np.add.at(want, (rows, cols), 2 * a[rows, cols])
    np.testing.assert_allclose(s2s.grad(picked_pairs)(a, rows, cols), want, rtol=1e-14)
    np.testing.assert_allclose(s2s.jit(s2s.grad(picked_pairs), wait=True)(a, rows, cols), want, rtol=1e-14)
    # broadcast index arrays: a column of rows against a row of columns picks a block
    r, c = np.array([[0], [2]]), np.array([[1, 3, 1]])
    want = np.zeros_like(a)
    np.add.at(want, (r, c), 2 * a[r, c])
    np.testing.assert_allclose(s2s.jit(s2s.grad(picked_pairs), wait=True)(a, r, c), want, rtol=1e-14)


# ----- list literals handed to NumPy ------------------------------------------------------------
def diag_of_a_list(a):
    return np.sum(np.diag([0.0, 3.0, 6.0]) @ a * a)


def sum_of_a_list(a, b):
    return np.sum([1.0, np.sum(a * a), 2.0 * b]) + np.max([b, np.mean(a)])


def quantile_band(X):
    lo, hi = np.quantile(X, [0.25, 0.75], axis=0)
    return np.sum((hi - lo) ** 2)


@pytest.mark.parametrize("fun,args", [
    (diag_of_a_list, (np.arange(9.0).reshape(3, 3) / 5,)),
    (sum_of_a_list, (np.linspace(0.1, 1.0, 6), 0.3)),
    (quantile_band, (np.random.default_rng(2).normal(size=(11, 3)),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_list_literals_under_jit(fun, args):
    argnums = tuple(range(len(args)))
    want = s2s.grad(fun, argnums=argnums)(*args)
    for k in argnums:
        np.testing.assert_allclose(want[k], numeric_grad(fun, args, k), rtol=1e-6, atol=1e-8)
    got = s2s.jit(s2s.grad(fun, argnums=argnums), wait=True)(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    value, _ = s2s.jit(s2s.value_and_grad(fun, argnums=argnums), wait=True)(*args)
    assert value == pytest.approx(fun(*args), rel=1e-13)


# ----- np.average with weights ------------------------------------------------------------------
def weighted_mean_squared(x, w):
    m = np.average(x, weights=w)
    return np.average((x - m) ** 2, weights=w) + np.average(np.sin(x))


def test_weighted_average_under_jit():
    rng = np.random.default_rng(6)
    x, w = rng.normal(size=7), rng.uniform(0.5, 2.0, size=7)
    want = s2s.grad(weighted_mean_squared, argnums=(0, 1))(x, w)
    for k in (0, 1):
        np.testing.assert_allclose(want[k], numeric_grad(weighted_mean_squared, (x, w), k), rtol=1e-6, atol=1e-8)
    got = s2s.jit(s2s.grad(weighted_mean_squared, argnums=(0, 1)), wait=True)(x, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    xs = rng.normal(size=(4, 7))
    per = s2s.jit(s2s.vmap(s2s.grad(weighted_mean_squared), in_axes=(0, None)), wait=True)(xs, w)
    for k in range(4):
        np.testing.assert_allclose(per[k], s2s.grad(weighted_mean_squared)(xs[k], w), rtol=1e-12, atol=1e-14)


# ----- random numbers: jit(f) draws what f draws from the same seed -----------------------------
def dropout_loss(w, x):
    keep = np.random.uniform(size=x.shape) > 0.3
    noise = 0.1 * np.random.normal(size=x.shape) + np.random.randn(x.shape[0]) * 0.01
    return np.sum(np.tanh(x * w) * keep + noise * w) + np.random.normal() * w


def minibatch_loss(w, X, y):
    # a minibatch of rows picked by the global state, and Poisson counts as weights
    rows = np.random.randint(0, X.shape[0], size=4)
    counts = np.random.poisson(2.0, size=4)
    return np.sum(counts * (X[rows] @ w - y[rows]) ** 2)


def seeded_loss(w, x, seed):
    rng = np.random.default_rng(seed)
    eps = rng.normal(0.0, 1.0, size=x.shape)
    return np.sum((x * w + 0.1 * eps) ** 2) + rng.uniform() * w


def test_global_random_state_draws_match_numpy():
    x = np.linspace(-1.0, 1.0, 8)
    for fun in (dropout_loss, s2s.grad(dropout_loss)):
        np.random.seed(7)
        want = fun(0.8, x)
        after = np.random.random()
        np.random.seed(7)
        got = s2s.jit(fun, wait=True)(0.8, x)
        assert got == pytest.approx(want, rel=1e-13)
        assert np.random.random() == after          # the global state moved as NumPy's did
    np.random.seed(3)
    want = s2s.value_and_grad(dropout_loss)(0.8, x)
    np.random.seed(3)
    got = s2s.jit(s2s.value_and_grad(dropout_loss), wait=True)(0.8, x)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_integer_draws_of_the_global_state_match_numpy():
    rng = np.random.default_rng(2)
    w, X, y = rng.normal(size=3), rng.normal(size=(10, 3)), rng.normal(size=10)
    for fun in (minibatch_loss, s2s.grad(minibatch_loss), s2s.value_and_grad(minibatch_loss)):
        np.random.seed(5)
        want = fun(w, X, y)
        np.random.seed(5)
        got = s2s.jit(fun, wait=True)(w, X, y)
        for g, v in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, v, rtol=1e-13)
    np.random.seed(5)
    rows, counts = np.random.randint(0, 10, size=4), np.random.poisson(2.0, size=4)
    want = 2 * ((counts * (X[rows] @ w - y[rows]))[:, None] * X[rows]).sum(axis=0)
    np.random.seed(5)
    np.testing.assert_allclose(s2s.jit(s2s.grad(minibatch_loss), wait=True)(w, X, y), want, rtol=1e-12)


def test_generator_draws_match_numpy():
    x = np.linspace(-1.0, 1.0, 8)
    want = s2s.grad(seeded_loss)(0.8, x, 11)
    np.testing.assert_allclose(s2s.jit(s2s.grad(seeded_loss), wait=True)(0.8, x, 11), want, rtol=1e-13)
    assert s2s.jit(seeded_loss, wait=True)(0.8, x, 11) == pytest.approx(seeded_loss(0.8, x, 11), rel=1e-13)
    # the draws are constants: the gradient is the one of the loss with them fixed
    rng = np.random.default_rng(11)
    eps, u = rng.normal(0.0, 1.0, size=x.shape), rng.uniform()
    np.testing.assert_allclose(want, np.sum(2 * (x * 0.8 + 0.1 * eps) * x) + u, rtol=1e-12)


# ----- np.meshgrid ------------------------------------------------------------------------------
def grid_energy(a, b):
    X, Y = np.meshgrid(a, b)
    U, V = np.meshgrid(a, b, indexing="ij")
    return np.sum(np.sin(X) * Y ** 2) + np.sum(U * np.cos(V))


def grid_3d(a, b, c):
    X, Y, Z = np.meshgrid(a, b, c)
    return np.sum(X * Y ** 2 * np.exp(-Z))


def test_meshgrid_gradients_under_jit():
    a, b, c = np.array([0.1, 0.5, 0.9]), np.array([1.0, 2.0]), np.array([0.2, -0.3, 0.4, 0.0])
    want = 5 * np.cos(a) + np.sum(np.cos(b))       # closed form of d/da
    np.testing.assert_allclose(s2s.grad(grid_energy)(a, b), want, rtol=1e-13)
    np.testing.assert_allclose(s2s.jit(s2s.grad(grid_energy), wait=True)(a, b), want, rtol=1e-13)
    want_b = s2s.grad(grid_energy, 1)(a, b)
    np.testing.assert_allclose(want_b, numeric_grad(grid_energy, (a, b), 1), rtol=1e-7)
    np.testing.assert_allclose(s2s.jit(s2s.grad(grid_energy, 1), wait=True)(a, b), want_b, rtol=1e-13)
    # three arrays: refused, saying how (never a wrong grid)
    with pytest.raises(s2s.S2SError, match="cannot unpack|np.meshgrid of three or more arrays"):
        s2s.grad(grid_3d)(a, b, c)


# ----- pytree parameters in jit(vmap(grad)) -----------------------------------------------------
def layer_loss(params, X, Y):
    W, b = params
    return np.sum((np.tanh(X @ W + b) - Y) ** 2)


def test_tuple_parameters_per_example_gradients():
    rng = np.random.default_rng(8)
    params = (rng.normal(size=(3, 2)), 0.1 * rng.normal(size=2))
    Xs, Ys = rng.normal(size=(4, 5, 3)), rng.normal(size=(4, 5, 2))
    per = s2s.jit(s2s.vmap(s2s.grad(layer_loss), in_axes=(None, 0, 0)), wait=True)(params, Xs, Ys)
    assert isinstance(per, tuple) and [p.shape for p in per] == [(4, 3, 2), (4, 2)]
    for k in range(4):
        dW, db = s2s.grad(layer_loss)(params, Xs[k], Ys[k])
        np.testing.assert_allclose(per[0][k], dW, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(per[1][k], db, rtol=1e-12, atol=1e-14)
    # and jit(grad) of the same tuple, its signature read leaf by leaf
    g = s2s.jit(s2s.grad(layer_loss), wait=True)(params, Xs[0], Ys[0])
    np.testing.assert_allclose(g[0], s2s.grad(layer_loss)(params, Xs[0], Ys[0])[0], rtol=1e-12)


def mlp_dict_loss(params, x, y):
    h = np.tanh(x @ params["hidden"]["W"] + params["hidden"]["b"])
    return np.mean((h @ params["out"] - y) ** 2)


def test_dict_parameters_per_example_gradients():
    rng = np.random.default_rng(9)
    params = {"hidden": {"W": rng.normal(size=(3, 4)), "b": np.zeros(4)}, "out": rng.normal(size=4)}
    xs, ys = rng.normal(size=(5, 6, 3)), rng.normal(size=(5, 6))
    per = s2s.jit(s2s.vmap(s2s.grad(mlp_dict_loss), in_axes=(None, 0, 0)), wait=True)(params, xs, ys)
    assert set(per) == {"hidden", "out"} and per["hidden"]["W"].shape == (5, 3, 4)
    for k in range(5):
        want = s2s.grad(mlp_dict_loss)(params, xs[k], ys[k])
        for got_leaf, want_leaf in zip(s2s.tree_leaves({"h": per["hidden"], "o": per["out"]}),
                                       s2s.tree_leaves({"h": want["hidden"], "o": want["out"]})):
            np.testing.assert_allclose(got_leaf[k], want_leaf, rtol=1e-12, atol=1e-14)
    # two differentiated arguments, one of them a dict
    both = s2s.jit(s2s.vmap(s2s.grad(mlp_dict_loss, argnums=(0, 1)), in_axes=(None, 0, 0)), wait=True)
    dp, dx = both(params, xs, ys)
    np.testing.assert_allclose(dx[2], s2s.grad(mlp_dict_loss, argnums=1)(params, xs[2], ys[2]), rtol=1e-12)
    np.testing.assert_allclose(dp["out"][2], s2s.grad(mlp_dict_loss)(params, xs[2], ys[2])["out"], rtol=1e-12)


# ----- second derivatives under jit -------------------------------------------------------------
def cubic_sine(x):
    return np.sin(x) * x ** 3


def coupled(a, w):
    return np.sum(np.sin(a * w) * w) + a ** 2 * np.sum(w)


def test_grad_of_grad_of_a_number_under_jit():
    second = s2s.jit(s2s.grad(s2s.grad(cubic_sine)), wait=True)
    for x in (0.7, -1.3, np.float64(2.0)):
        closed = -np.sin(x) * x ** 3 + 6 * np.cos(x) * x ** 2 + 6 * np.sin(x) * x
        assert second(x) == pytest.approx(closed, rel=1e-12)
        assert second(x) == pytest.approx(s2s.grad(s2s.grad(cubic_sine))(x), rel=1e-13)
    assert s2s.jit(s2s.grad(s2s.grad(np.sin)), wait=True)(0.4) == pytest.approx(-np.sin(0.4), rel=1e-14)
    # mixed: d/dw of df/da, a number and an array
    w = np.linspace(-1.0, 1.0, 5)
    mixed = s2s.jit(s2s.grad(s2s.grad(coupled, argnums=0), argnums=1), wait=True)(0.6, w)
    np.testing.assert_allclose(mixed, s2s.grad(s2s.grad(coupled, argnums=0), argnums=1)(0.6, w), rtol=1e-12)
    np.testing.assert_allclose(mixed, np.cos(0.6 * w) * w - 0.6 * np.sin(0.6 * w) * w * w
                               + np.cos(0.6 * w) * w + 2 * 0.6, rtol=1e-12)
