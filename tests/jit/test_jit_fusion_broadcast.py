"""jit(grad(f)) fuses a run where an operand broadcasts along the trailing axes.

`h = np.tanh(X @ W + b)` and its cotangents `dt = dh * (1 - h*h)`, `db = unbroadcast(dt, b)`
mix a matrix and a vector. With the argument ranks known (jit specializes on them) the fused
run becomes a loop over the rows and, inside it, over b's elements: b is read at the column,
db accumulates over the rows (transforms/fuse.py, `fused_grid`). Any other shape takes the
unfused branch. Results are checked against the unjitted gradient and finite differences.
"""
from __future__ import annotations


import numba
import numpy as np
import pytest

import s2s
from s2s.runtime import fused as rtf
from s2s.runtime import fused_numba  # noqa: F401  (registers the compiled fused helpers)

from cases.fd import numeric_grad


def layer(W, b, X):
    h = np.tanh(X @ W + b)
    return np.sum(h * h)


def sin_bias(x, b):
    return np.sum(np.sin(x + b) * x)


def exp_bias3(x, b):
    return np.mean(np.exp(-(x * b) ** 2) + b)


def check(fn, args, argnums, target="cpu", fd_of=()):
    jg = s2s.jit(s2s.grad(fn, argnums=argnums), target=target)
    got = jg(*args)
    assert not jg._unfused, "the fused version did not compile"
    want = s2s.grad(fn, argnums=argnums)(*args)
    for a, w in zip(got, want):
        assert np.shape(a) == np.shape(w)
        np.testing.assert_allclose(a, w, rtol=1e-11, atol=1e-13)
    for k in fd_of:
        np.testing.assert_allclose(got[argnums.index(k)], numeric_grad(fn, args, k), rtol=1e-6, atol=1e-8)
    return jg


def generated(jg, args) -> str:
    return jg.generated_for_args(*args).source


def test_bias_layer_fuses_over_rows_and_columns():
    rng = np.random.default_rng(0)
    W, b, X = rng.normal(size=(6, 5)) / 2, rng.normal(size=5), rng.normal(size=(7, 6))
    jg = check(layer, (W, b, X), (0, 1), fd_of=(0, 1))
    src = generated(jg, (W, b, X))
    assert "fused_grid((t1,), (b,))" in src and "fused_zeros((b,))" in src
    # the compiled guard takes the two-deep loop for these shapes
    grid = numba.njit(lambda t, b: rtf.fused_grid((t,), (b,)))
    assert grid(X @ W, b) == rtf.fused_grid((X @ W,), (b,)) == (7, 5)


def test_other_shapes_take_the_unfused_branch():
    rng = np.random.default_rng(1)
    W, X = rng.normal(size=(6, 5)) / 2, rng.normal(size=(7, 6))
    for b in (rng.normal(size=1), rng.normal(size=(1, 5)), rng.normal(size=(7, 1)), np.float64(0.3)):
        check(layer, (W, b, X), (0, 1), fd_of=(1,))


def test_three_dimensional_input_with_a_matrix_and_a_vector_operand():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4, 5))
    for b in (rng.normal(size=(4, 5)), rng.normal(size=5)):
        jg = check(exp_bias3, (x, b), (0, 1), fd_of=(1,))
        assert "fused_grid" in generated(jg, (x, b))


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_sin_beyond_the_kernel_range_reruns_and_restarts_the_sums(target):
    # |x + b| > 2**20: the vector sin kernel's count of uncovered arguments is > 0 and the loop
    # reruns with libm; db (accumulated over rows) must start again from zero
    rng = np.random.default_rng(3)
    x, b = rng.normal(size=(6, 4)), rng.normal(size=4)
    x[2, 1] = 3.0e6
    jg = check(sin_bias, (x, b), (0, 1), target=target)
    assert "fused_grid" in generated(jg, (x, b))
    x[2, 1] = 0.5
    check(sin_bias, (x, b), (0, 1), target=target, fd_of=(0, 1))


def test_parallel_target_without_a_sum_over_rows():
    rng = np.random.default_rng(4)
    x, b = rng.normal(size=(9, 4)), rng.normal(size=4)
    check(sin_bias, (x, b), (0,), target="parallel", fd_of=(0,))


@pytest.mark.parametrize("shapes", [((0, 4), (4,)), ((3, 0), (0,)), ((1, 1), (1,)), ((2, 3, 4), (4,)),
                                    ((2, 3, 4), (3, 4)), ((5, 4), (4,))])
def test_fused_grid_compiled_agrees_with_python(shapes):
    full_shape, trail_shape = shapes
    t, b = np.ones(full_shape), np.ones(trail_shape)
    grid = numba.njit(lambda t, b: rtf.fused_grid((t,), (b,)))
    assert grid(t, b) == rtf.fused_grid((t,), (b,))
    rows, cols = grid(t, b)
    if t.size == 0:      # no elements: the unfused code runs
        assert (rows, cols) == (-1, 0)
    else:
        assert rows * cols == t.size and cols == b.size
    assert grid(t, np.ones(trail_shape[:-1] + (7,))) == (-1, 0)
    assert grid(t, np.ones((7,) + trail_shape)) == (-1, 0)


def trail_output(x, b):
    u = np.exp(b)                 # a value of b's shape, read after the run
    h = np.tanh(x * u)
    return np.sum(h) + np.sum(u * u)


def test_output_of_the_broadcast_operands_shape_and_empty_rows():
    rng = np.random.default_rng(6)
    b = rng.normal(size=4) / 2
    for x in (rng.normal(size=(5, 4)), np.zeros((0, 4))):
        check(trail_output, (x, b), (0, 1), fd_of=(1,))


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_value_and_grad_sums_in_the_two_deep_loop(target):
    # the forward sum stays alive (value_and_grad): it accumulates in the two-deep loop, under
    # prange with target="parallel" (no sum over rows: the gradient is of x only)
    rng = np.random.default_rng(7)
    x, b = rng.normal(size=(33, 8)), rng.normal(size=8)
    x[5, 3] = 2.5e6
    jvg = s2s.jit(s2s.value_and_grad(sin_bias), target=target)
    v, dx = jvg(x, b)
    want_v, want_dx = s2s.value_and_grad(sin_bias)(x, b)
    np.testing.assert_allclose(v, want_v, rtol=1e-11)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-11, atol=1e-13)
    assert "fused_grid" in generated(jvg, (x, b))


def test_empty_batch():
    rng = np.random.default_rng(5)
    W, b, X = rng.normal(size=(6, 5)), rng.normal(size=5), np.zeros((0, 6))
    check(layer, (W, b, X), (0, 1))


def relu_bias(x, b):
    return np.sum(np.maximum(x + b, 0.0) * x)


def scaled_square(x, b):
    return np.sum((x - b) ** 2 / (1.0 + b * b))


def where_bias(x, b):
    return np.sum(np.where(x > b, x * b, -x))


def trig_bias(x, b):
    return np.sum(np.sin(x * b) + np.cos(b) * x)


@pytest.mark.parametrize("fn, x_shape, b_shape", [
    (relu_bias, (6, 5), (5,)), (scaled_square, (4, 3, 5), (3, 5)), (where_bias, (7, 3), (3,)),
    (trig_bias, (2, 3, 4), (4,)), (trig_bias, (5, 4), (4,))])
def test_more_functions_with_a_broadcast_operand(fn, x_shape, b_shape):
    rng = np.random.default_rng(8)
    x, b = rng.normal(size=x_shape), rng.normal(size=b_shape)
    check(fn, (x, b), (0, 1), fd_of=(0, 1) if fn is not where_bias else ())
