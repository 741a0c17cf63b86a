"""Errors raised while generated code runs are the user's errors, at the user's line.

Compiled code checks indexes: an index out of range raises IndexError, as NumPy does, under
jit, jit(grad), jit(vmap) and in s2s's compiled helpers (the adjoint of `x[i]` writes at `i`);
before, it read or wrote past the array (garbage, or a crash).  Every such error, compiled or
not, carries a note naming the user's file, line and source line.
"""
import os

import numpy as np
import pytest

import s2s

HERE = os.path.abspath(__file__)


def pick(x, i):
    return x[i] * 2.0 + np.sum(x[1:3])


def running_sum(x, n):
    s = 0.0
    for k in range(n):
        s = s + x[k] ** 2
    return s


def write_at(x, i):
    y = np.zeros(3)
    y[i] = np.sum(x)
    return np.sum(y * y)


def solve_with(a, b):
    return np.sum(np.linalg.solve(a, b))


TRANSFORMS = {
    "python": lambda f: f,
    "grad": s2s.grad,
    "jit": s2s.jit,
    "jit_grad": lambda f: s2s.jit(s2s.grad(f)),
    "value_and_grad": s2s.value_and_grad,
    "jit_value_and_grad": lambda f: s2s.jit(s2s.value_and_grad(f)),
}


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("fn,arg,text", [(pick, 7, "x[i] * 2.0"), (pick, -9, "x[i] * 2.0"),
                                          (running_sum, 6, "x[k] ** 2"), (write_at, 5, "y[i] =")],
                         ids=["read_past_end", "read_before_start", "loop_past_end", "write_past_end"])
def test_an_index_out_of_range_raises_index_error_at_the_users_line(transform, fn, arg, text):
    x = np.arange(4.0)
    with pytest.raises(IndexError, match="out of bounds") as info:
        TRANSFORMS[transform](fn)(x, arg)
    if transform != "python":
        notes = "\n".join(getattr(info.value, "__notes__", []))
        assert f'File "{HERE}", line {_line_of(fn, text)}' in notes, notes
        assert text in notes


@pytest.mark.parametrize("make,each", [
    (lambda f: s2s.vmap(f, in_axes=(0, None)), lambda f: f),
    (lambda f: s2s.jit(s2s.vmap(f, in_axes=(0, None))), lambda f: f),
    (lambda f: s2s.jit(s2s.vmap(s2s.grad(f), in_axes=(0, None))), s2s.grad)],
    ids=["vmap", "jit_vmap", "jit_vmap_grad"])
def test_an_index_out_of_range_per_example_raises(make, each):
    xs = np.arange(8.0).reshape(2, 4)
    with pytest.raises(IndexError):
        make(pick)(xs, 4)
    np.testing.assert_allclose(make(pick)(xs, 3), np.stack([each(pick)(x, 3) for x in xs]), rtol=1e-12)


@pytest.mark.parametrize("transform", ["grad", "jit", "jit_grad"])
def test_a_singular_matrix_raises_lin_alg_error_at_the_users_line(transform):
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError) as info:
        TRANSFORMS[transform](solve_with)(a, np.ones(2))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f'line {_line_of(solve_with, "np.linalg.solve")}' in notes, notes


def test_in_range_indexes_still_give_the_right_gradients():
    x = np.array([0.5, -1.0, 2.0, 3.0])
    want = np.array([0.0, 1.0, 3.0, 0.0])
    for make in (s2s.grad, lambda f: s2s.jit(s2s.grad(f))):
        np.testing.assert_allclose(make(pick)(x, 2), want, rtol=1e-12)
        np.testing.assert_allclose(make(pick)(x, -2), want, rtol=1e-12)
        np.testing.assert_allclose(make(running_sum)(x, 4), 2.0 * x, rtol=1e-12)
