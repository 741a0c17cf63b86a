"""Writes into argument arrays (`x[0] = a * b` on an argument): the derivative works on a copy.

The user's function changes the caller's array when it runs; its derivatives (grad, vjp, jvp,
hessian, jit and vmap of them) run on a copy, so the caller's array is the same after the call
and the derivative is that of the function on the array it was given.  A helper writing into its
argument writes into the caller's array (the same variable after inlining), as Python does.
"""

import numpy as np
import pytest


import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad


def pin_first(x, a):
    x[0] = a * x[1]
    return np.sum(x ** 2)


def running_product(x, n):
    for i in range(1, n):
        x[i] = x[i - 1] * x[i]
    return x[n - 1] + 0.5 * np.sum(x)


def set_first(buf, v):
    buf[0] = v


def through_helper(x):
    set_first(x, x[1] * 2.0)
    return np.sum(x ** 3)


def helper_into_local(x):
    y = np.zeros(3)
    set_first(y, x[1] * 2.0)
    y[2] += x[0]
    return np.sum(y ** 3) + np.sum(x)


def tuple_leaf_written(ps):
    w, b = ps
    w[1] = b * 2.0
    return np.sum(w * w) + b


def both_arguments_written(x, y):
    y[0] = np.sin(x[0])
    x[2] = y[0] * x[1]
    return np.sum(x * y)


def written_after_rebinding(x, y):
    x = y
    x[0] = 2.0
    return np.sum(x * y)


CASES = [
    (pin_first, lambda: (np.array([1.0, 2.0, 3.0]), 2.0), (0, 1)),
    (running_product, lambda: (np.array([1.5, 2.0, 3.0, -0.5]), 4), (0,)),
    (through_helper, lambda: (np.array([1.0, 2.0, 3.0]),), (0,)),
    (helper_into_local, lambda: (np.array([0.3, -1.2, 0.7]),), (0,)),
    (both_arguments_written, lambda: (np.array([0.3, -1.2, 0.7]), np.array([1.1, 0.4, -0.6])), (0, 1)),
]
IDS = [c[0].__name__ for c in CASES]


def _unchanged(args, before):
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn, make, argnums", CASES, ids=IDS)
def test_grad_matches_fd_and_leaves_arguments_alone(fn, make, argnums):
    for n in argnums:
        args = make()
        before = [np.copy(a) for a in args]
        g = s2s.grad(fn, argnums=n)(*args)
        _unchanged(args, before)
        assert_close(g, numeric_grad(fn, make(), n), rtol=1e-6, atol=1e-8)
        value, g2 = s2s.value_and_grad(fn, argnums=n)(*args)
        _unchanged(args, before)
        assert np.isclose(value, fn(*make()))
        assert_close(g2, g, rtol=1e-12)


@pytest.mark.parametrize("fn, make, argnums", CASES, ids=IDS)
def test_jvp_matches_grad(fn, make, argnums):
    args = make()
    before = [np.copy(a) for a in args]
    rng = np.random.default_rng(0)
    tangents = tuple(rng.standard_normal(np.shape(a)) if i in argnums else 0.0 * a
                     for i, a in enumerate(args))
    if fn is running_product:
        tangents = (tangents[0], 0)
    value, tangent = s2s.jvp(fn, args, tangents)
    _unchanged(args, before)
    assert np.isclose(value, fn(*make()))
    expected = sum(np.sum(s2s.grad(fn, argnums=n)(*make()) * tangents[n]) for n in argnums)
    assert np.isclose(tangent, expected, rtol=1e-10)


@pytest.mark.parametrize("fn, make, argnums", CASES, ids=IDS)
def test_jit_grad_equals_grad(fn, make, argnums):
    args = make()
    before = [np.copy(a) for a in args]
    g = s2s.jit(s2s.grad(fn, argnums=argnums[0]))(*args)
    _unchanged(args, before)
    assert_close(g, s2s.grad(fn, argnums=argnums[0])(*make()), rtol=1e-10)


@pytest.mark.parametrize("fn, make, argnums", [c for c in CASES if c[0] is not running_product],
                         ids=[i for i in IDS if i != "running_product"])
def test_vmap_grad_equals_loop(fn, make, argnums):
    args = make()
    batch = tuple(np.stack([a, a * 1.5 - 0.25]) if isinstance(a, np.ndarray) else a for a in args)
    before = [np.copy(b) for b in batch]
    in_axes = tuple(0 if isinstance(a, np.ndarray) else None for a in args)
    got = s2s.vmap(s2s.grad(fn), in_axes=in_axes)(*batch)
    _unchanged(batch, before)
    loop = [s2s.grad(fn)(*(b[k].copy() if ax == 0 else b for b, ax in zip(batch, in_axes))) for k in range(2)]
    assert_close(got, np.stack(loop), rtol=1e-10)


def test_hessian_of_a_written_argument():
    x = np.array([1.0, 2.0, 3.0])
    h = s2s.hessian(through_helper)(x)
    # through_helper(x) = (2 x1)^3 + x1^3 + x2^3 = 9 x1^3 + x2^3
    assert_close(h, np.diag([0.0, 54.0 * x[1], 6.0 * x[2]]), rtol=1e-12)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_tuple_leaf_written_is_copied():
    ps = (np.array([1.0, 2.0]), 3.0)
    dw, db = s2s.grad(tuple_leaf_written)(ps)
    np.testing.assert_array_equal(ps[0], [1.0, 2.0])
    assert_close(dw, np.array([2.0, 0.0]), rtol=1e-12)
    assert np.isclose(db, 2 * (2 * 3.0) * 2 + 1)


def test_the_function_itself_still_writes_into_its_argument():
    # (only derivatives work on a copy: jit of the function runs it as written)
    x = np.array([1.0, 2.0, 3.0])
    s2s.jit(pin_first)(x, 2.0)
    np.testing.assert_array_equal(x, [4.0, 2.0, 3.0])


def test_write_after_rebinding_an_argument_is_refused_at_the_line():
    with pytest.raises(s2s.UnsupportedSyntaxError, match="may alias another array") as info:
        s2s.grad(written_after_rebinding)(np.ones(2), np.ones(2))
    assert "test_argument_writes.py" in str(info.value) and "x[0] = 2.0" in str(info.value)
