"""jit(grad(f)) keeps its fused loops where broadcasting gives a value another rank.

A fused run's outputs are allocated before the loop; when an input broadcasts (a bias
added to a matrix, a cotangent summed down to the bias) the unfused branch has another
type, and Numba refused the whole function: jit fell back to the unfused code for the
signature (correct, slower). The outputs now take the unfused branch's type. Results are
checked against the unjitted gradient and finite differences.
"""
from __future__ import annotations

import numpy as np

import s2s


def layer(W, b, X):
    h = np.tanh(X @ W + b)
    return np.sum(h * h)


def bias_first(W, b, X):
    h = np.tanh(b + X @ W)
    return np.sum(np.exp(-h))


def two_layers(W1, b1, W2, b2, X):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    return np.mean(z * z)


def data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(6, 5)) / 2, rng.normal(size=5), rng.normal(size=(7, 6))


def fd(f, args, k, eps=1e-6):
    x = np.array(args[k], dtype=float)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for sign in (1, -1):
            y = x.copy()
            y[idx] += sign * eps
            a = list(args)
            a[k] = y
            out[idx] += sign * f(*a) / (2 * eps)
    return out


def test_bias_gradients_compile_fused_and_match():
    for fn in (layer, bias_first):
        W, b, X = data()
        jg = s2s.jit(s2s.grad(fn, argnums=(0, 1)))
        dW, db = jg(W, b, X)
        assert not jg._unfused, "the fused version did not compile"
        want = s2s.grad(fn, argnums=(0, 1))(W, b, X)
        np.testing.assert_allclose(dW, want[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(db, want[1], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(db, fd(fn, (W, b, X), 1), rtol=1e-6, atol=1e-8)
        assert db.shape == b.shape


def test_two_layers_with_transposed_operands():
    rng = np.random.default_rng(1)
    W1, b1, W2, b2 = rng.normal(size=(6, 8)) / 3, rng.normal(size=8), rng.normal(size=(8, 3)) / 3, rng.normal(size=3)
    X = rng.normal(size=(6, 5)).T            # an F-ordered view: the products take it without a copy
    jg = s2s.jit(s2s.grad(two_layers, argnums=(0, 1, 2, 3)))
    got = jg(W1, b1, W2, b2, X)
    assert not jg._unfused
    want = s2s.grad(two_layers, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, X)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[2], fd(two_layers, (W1, b1, W2, b2, X), 2), rtol=1e-6, atol=1e-8)
    Xs = np.random.default_rng(2).normal(size=(10, 12))[::2, ::2]     # neither C nor F: copied
    got = jg(W1, b1, W2, b2, Xs)
    want = s2s.grad(two_layers, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, Xs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# Found timing the random-program tests: a fused run whose inputs are all numbers for these
# argument types (x[-1] of a vector, a scalar argument reassigned) allocated its outputs with
# fused_empty, which has no array to copy the shape of: Numba refused the fused version and jit
# compiled a second, unfused one (correct, twice the compile time).  Such outputs are numbers now.
def element_times_a_row(x, y):
    if np.sum(y / (1.0 + x[::-1] * x[::-1])) > -0.35:
        v = -(x[-1] * np.linspace(0.5, -0.9, 4))
    else:
        x = np.sqrt(1.0 + x * x)
        v = x[::-1]
    return 0.5 * np.sum(v) + 0.5 * np.sum(x)


def scalar_reassigned(x, y):
    x = np.sqrt(1.0 + x * x)
    z = np.tanh(x * y + 0.5)
    return np.sum(z * y) + x


def test_fused_runs_of_numbers_compile_fused_and_match():
    cases = [(element_times_a_row, (np.array([-0.49, 0.59, -0.10, 1.01]), np.float64(0.52))),
             (element_times_a_row, (np.array([1.5, 1.2, 1.1, 1.3]), 1.0)),           # the other branch
             (element_times_a_row, (np.array([-0.49, 0.59, -0.10, 1.01]), np.ones(4))),
             (scalar_reassigned, (0.7, np.array([0.3, -1.2, 0.8]))),
             (scalar_reassigned, (np.float64(-0.4), 1.3))]
    for fn, args in cases:
        for argnums in (0, 1):
            jg = s2s.jit(s2s.grad(fn, argnums=argnums))
            got = jg(*args)
            assert not jg._unfused, f"{fn.__name__}{args}: the fused version did not compile"
            want = s2s.grad(fn, argnums=argnums)(*args)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(got, fd(fn, args, argnums), rtol=1e-6, atol=1e-8)


def _softmax(x, axis=None):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def scaled_forward(pi_, B_, obs):
    # the HMM's scaled forward algorithm (tests/real/hmm.py): c0 is a sum a fused run makes a
    # number, and `alpha = alpha0 / c0` sends a cotangent back to it in a later fused run
    pi = _softmax(pi_)
    B = _softmax(B_, axis=1)
    alpha0 = pi * B[:, obs[0]]
    c0 = alpha0.sum()
    alpha = alpha0 / c0
    loglik = np.log(c0)
    for y in obs[1:]:
        alpha = alpha * B[:, y]
        c = alpha.sum()
        alpha = alpha / c
        loglik = loglik + np.log(c)
    return loglik


def test_unbroadcast_to_a_number_inside_a_fused_run():
    # jit(grad) summed `dc0 = dc0 + unbroadcast(g, c0)` one element per i, a silently wrong
    # gradient (6e-3 off on the HMM), found by tests/real; the fused loop now requires c0 be an array
    rng = np.random.default_rng(0)
    pi, B, obs = rng.standard_normal(3), rng.standard_normal((3, 4)), np.array([1, 3, 0, 2])
    expected = s2s.grad(scaled_forward, argnums=(0, 1))(pi, B, obs)
    got = s2s.jit(s2s.grad(scaled_forward, argnums=(0, 1)))(pi, B, obs)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-13)
    eps = 1e-6
    fd = np.array([(scaled_forward(pi + eps * d, B, obs) - scaled_forward(pi - eps * d, B, obs)) / (2 * eps)
                   for d in np.eye(3)])
    np.testing.assert_allclose(expected[0], fd, rtol=1e-6, atol=1e-9)
