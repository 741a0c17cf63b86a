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
