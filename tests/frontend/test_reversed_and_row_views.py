"""Regressions: two silent wrong gradients found by the real-program corpus (tests/real).

1. `for r in reversed(x)` over an array was taken for `reversed(range(...))`: the loop ran over
   the values as if they were numbers and the gradient of x was zero.
2. A row read by integer index (`r = m[0]`, `a, b = m`) is a view of m; an indexed write into m
   afterwards changes it in NumPy, while the transforms took the write for a new array: the
   derivative missed the write. Such reads are now checked when they run (an element, a number,
   passes; a view is refused with a SharedArrayError naming the line and the fix).
"""
from __future__ import annotations


import numpy as np
import pytest


import s2s  # noqa: E402
from s2s.errors import SharedArrayError  # noqa: E402
from cases.fd import assert_close, numeric_grad


def horner_reversed(x):
    s = 0.0
    for r in reversed(x):
        s = s * 0.5 + r
    return s


def enumerate_reversed(x):
    s = 0.0
    for i, r in enumerate(reversed(x)):
        s = s * 0.5 + r * i
    return s


def zip_with_reversed(x, y):
    s = 0.0
    for a, b in zip(x, reversed(y)):
        s = s + a * b
    return s


def reversed_list_of_parts(x):
    parts = [x[0], x[1] * 2.0, x[2] ** 2]
    s = 0.0
    for p in reversed(parts):
        s = s * 0.5 + p
    return s


def reversed_range_object(x):
    r = range(3)
    s = 0.0
    for i in reversed(r):
        s = s * 0.5 + x[i]
    return s


def reversed_rows(m):
    s = 0.0
    for row in reversed(m):
        s = s * 0.5 + np.sum(row ** 2)
    return s


X = np.array([0.3, -0.7, 1.1])
Y = np.array([1.0, 2.0, -0.5])
M = np.arange(6.0).reshape(3, 2) / 5


@pytest.mark.parametrize("fn,args", [
    (horner_reversed, (X,)), (enumerate_reversed, (X,)), (zip_with_reversed, (X, Y)),
    (reversed_list_of_parts, (X,)), (reversed_range_object, (X,)), (reversed_rows, (M,)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_reversed_loops_differentiate_the_sequence(fn, args):
    for k in range(len(args)):
        g = s2s.grad(fn, argnums=k)(*args)
        expected = numeric_grad(fn, args, k)
        assert np.any(expected != 0)
        assert_close(g, expected, rtol=1e-6, atol=1e-9, what=f"grad({fn.__name__})[{k}] vs finite differences")
        assert_close(s2s.jit(s2s.grad(fn, argnums=k))(*args), g, rtol=1e-12, atol=0.0,
                     what=f"jit(grad({fn.__name__}))[{k}]")


def test_horner_over_reversed_closed_form():
    # s = (x2 * 0.5 + x1) * 0.5 + x0 = x0 + 0.5 x1 + 0.25 x2 (the first value seen is the last element)
    assert_close(s2s.grad(horner_reversed)(X), np.array([1.0, 0.5, 0.25]), rtol=1e-14, atol=0.0,
                 what="grad(horner_reversed)")


def test_vmap_grad_of_a_reversed_loop_matches_a_loop():
    xs = np.stack([X, X * 2.0, -X])
    loop = np.stack([s2s.grad(enumerate_reversed)(x) for x in xs])
    assert_close(s2s.vmap(s2s.grad(enumerate_reversed))(xs), loop, rtol=1e-12, atol=0.0,
                 what="vmap(grad(enumerate_reversed))")


def row_read_then_written(x):
    m = np.ones((3, 3))
    r = m[0]                       # a view of row 0
    m[0, 1] = x[0] * x[1]          # NumPy's r sees this
    return np.sum(r * x)


def rows_unpacked_then_written(x):
    m = np.ones((2, 3))
    a, b = m
    m[1, 2] = x[0] ** 2
    return np.sum(a * x) + np.sum(b * x)


def row_read_in_a_loop_then_written(x):
    m = np.ones((3, 3))
    s = 0.0
    for k in range(3):
        r = m[k]
        m[k, 0] = x[k] * 2.0
        s = s + np.sum(r * x)
    return s


def row_copied_then_written(x):
    m = np.ones((3, 3))
    r = m[0].copy()
    m[0, 1] = x[0] * x[1]
    return np.sum(r * x) + np.sum(m)


def element_recurrence(x):
    y = np.zeros(4)
    y[0] = x[0]
    for i in range(1, 4):
        y[i] = y[i - 1] * x[i] + np.sin(y[i - 1])
    return np.sum(y ** 2)


@pytest.mark.parametrize("fn", [row_read_then_written, rows_unpacked_then_written, row_read_in_a_loop_then_written],
                         ids=lambda f: f.__name__)
def test_a_row_view_written_later_is_refused_never_answered_wrong(fn):
    for transform, args in ((s2s.grad(fn), (X,)), (s2s.jit(s2s.grad(fn)), (X,)),
                            (s2s.vmap(s2s.grad(fn)), (np.stack([X, 0.5 * X]),))):
        with pytest.raises(SharedArrayError) as info:
            transform(*args)
        assert "view" in str(info.value) and ".copy()" in str(info.value)
    assert np.isfinite(fn(X))     # (the function itself runs)


@pytest.mark.parametrize("fn,n", [(row_copied_then_written, 3), (element_recurrence, 4)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_copies_and_elements_read_before_a_write_are_differentiated(fn, n):
    x = np.array([0.3, -0.7, 1.1, 0.5])[:n]
    g = s2s.grad(fn)(x)
    assert_close(g, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-9, what=f"grad({fn.__name__}) vs FD")
    assert_close(s2s.jit(s2s.grad(fn))(x), g, rtol=1e-12, atol=0.0, what=f"jit(grad({fn.__name__}))")
    xs = np.stack([x, 0.5 * x])
    assert_close(s2s.vmap(s2s.grad(fn))(xs), np.stack([s2s.grad(fn)(v) for v in xs]), rtol=1e-12, atol=0.0,
                 what=f"vmap(grad({fn.__name__}))")
    assert "check_element_view" not in s2s.show(fn) or fn is row_copied_then_written
