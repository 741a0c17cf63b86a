"""Parameters named like the helpers generated code imports (`erf`, `push`, `zeros_like`, ...).

Normalization renames such a parameter (`erf` -> `erf_`) so the helper stays reachable; the
transforms once looked the parameter up by its old name and returned a zero gradient.
"""

import numpy as np
import pytest


import s2s  # noqa: E402
from cases.fd import assert_close


def euler_erf(k, erf):
    y = erf
    for _ in range(3):
        y = y + 0.1 * (-k * y + np.sin(y))
    return y


def uses_push(push, zeros_like):
    return np.sum(np.tanh(push) * zeros_like ** 2)


def uses_unbroadcast(unbroadcast, stack):
    return np.sum(np.exp(unbroadcast * stack[0]) + stack)


CASES = [(euler_erf, lambda: (0.5, 0.7)),
         (uses_push, lambda: (np.array([0.3, -0.4]), np.array([1.2, 0.5]))),
         (uses_unbroadcast, lambda: (np.array([0.3, -0.4]), np.array([0.2, 0.9])))]


def fd(f, args, i, eps=1e-6):
    x = np.asarray(args[i], dtype=float)
    g = np.zeros(x.shape)
    for j in range(x.size):
        e = np.zeros(x.shape)
        e.flat[j] = eps
        lo, hi = list(args), list(args)
        hi[i] = x + e if x.ndim else float(x + eps)
        lo[i] = x - e if x.ndim else float(x - eps)
        g.flat[j] = (f(*hi) - f(*lo)) / (2 * eps)
    return g if x.ndim else float(g)


@pytest.mark.parametrize("f,make", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_every_transform_sees_a_parameter_named_like_a_helper(f, make):
    args = make()
    want = [fd(f, args, i) for i in range(2)]
    grads = s2s.grad(f, argnums=(0, 1))(*args)
    for g, w in zip(grads, want):
        assert_close(g, w, rtol=1e-6, atol=1e-8)
    assert np.abs(np.asarray(want[1])).max() > 0.1
    assert_close(s2s.jit(s2s.grad(f, argnums=1))(*args), want[1], rtol=1e-6, atol=1e-8)
    t = np.ones_like(np.asarray(args[1], dtype=float)) if np.ndim(args[1]) else 1.0
    _, tan = s2s.jvp(f, args, (np.zeros_like(np.asarray(args[0], dtype=float)) if np.ndim(args[0]) else 0.0, t))
    assert_close(tan, np.sum(want[1]), rtol=1e-6, atol=1e-8)
    xs = np.stack([np.asarray(args[1], dtype=float), np.asarray(args[1], dtype=float) * 0.5])
    per_example = s2s.vmap(s2s.grad(f, argnums=1), in_axes=(None, 0))(args[0], xs)
    assert_close(per_example, np.stack([fd(f, (args[0], x if x.ndim else float(x)), 1) for x in xs]),
                 rtol=1e-6, atol=1e-8)
