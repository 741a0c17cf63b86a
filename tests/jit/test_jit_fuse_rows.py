"""jit(vmap(grad(f))) of f reading a per-example dot product: fuse_rows makes the dot
products, the fused loop over them and their cotangents one pass over the rows.

Every result is checked against the Python loop over examples (and closed forms where
there is one); the generated source is checked to have taken the row path, and the
shapes the row path cannot take fall back to the unfused code with the same results.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2s
from s2s.runtime import fused as rtf


def logistic_loss(w, x, y):
    return np.log(1.0 + np.exp(-y * (x @ w)))


def logistic_loss_w_first(w, x, y):          # the dot product the other way round
    return np.log(1.0 + np.exp(-y * (w @ x)))


def squared_error(w, x, y):
    r = x @ w - y
    return 0.5 * r * r


def tanh_margin(w, x, y):
    # the penalty's gradient (of the shared w) sits between the forward loop and the cotangent
    # loop: two loops, no row path - the results must still match
    return np.tanh(y * (x @ w)) + 0.1 * np.sum(w * w)


def loop_grads(fn, argnums, args, in_axes):
    n = next(np.shape(a)[0] for a, ax in zip(args, in_axes) if ax is not None)
    g = s2s.grad(fn, argnums=argnums)
    outs = [g(*[a[b] if ax is not None else a for a, ax in zip(args, in_axes)]) for b in range(n)]
    if isinstance(argnums, tuple):
        return tuple(np.stack([o[k] for o in outs]) for k in range(len(argnums)))
    return np.stack(outs)


def data(n=37, d=11, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=d).astype(dtype) / 3, rng.normal(size=(n, d)).astype(dtype),
            np.sign(rng.normal(size=n)).astype(dtype))


def row_path_taken(jg, args) -> bool:
    src = s2s.show(jg, example_args=args)
    return "rows_size(" in src and "row_dot(" in src and "row_times(" in src


@pytest.mark.parametrize("fn", [logistic_loss, logistic_loss_w_first, squared_error, tanh_margin])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_per_example_gradients_match_the_loop(fn, argnums):
    w, X, y = data()
    in_axes = (None, 0, 0)
    g = s2s.vmap(s2s.grad(fn, argnums=argnums), in_axes=in_axes)
    jg = s2s.jit(g)
    got, want = jg(w, X, y), loop_grads(fn, argnums, (w, X, y), in_axes)
    for a, b in zip(got if isinstance(argnums, tuple) else [got], want if isinstance(argnums, tuple) else [want]):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)
    penalty_between = fn is tanh_margin and argnums != 1     # (the penalty has no x-derivative)
    assert row_path_taken(jg, (w, X, y)) == (not penalty_between)


def test_closed_form_logistic():
    w, X, y = data(n=200, d=64, seed=1)
    jg = s2s.jit(s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0)))
    want = (-y / (1 + np.exp(y * (X @ w))))[:, None] * X
    np.testing.assert_allclose(jg(w, X, y), want, rtol=1e-12, atol=1e-14)


def test_both_vectors_batched():
    w, X, y = data(seed=2)
    W = np.random.default_rng(5).normal(size=X.shape) / 3
    for argnums in (0, 1):
        jg = s2s.jit(s2s.vmap(s2s.grad(logistic_loss, argnums=argnums), in_axes=(0, 0, 0)))
        np.testing.assert_allclose(jg(W, X, y), loop_grads(logistic_loss, argnums, (W, X, y), (0, 0, 0)),
                                   rtol=1e-11, atol=1e-13)
        assert row_path_taken(jg, (W, X, y))


def test_value_and_grad_keeps_the_dot_products():
    # the forward value reads the dot products after the loop: they are still written
    w, X, y = data(seed=3)
    vg = s2s.vmap(s2s.value_and_grad(logistic_loss), in_axes=(None, 0, 0))
    val, grad = s2s.jit(vg)(w, X, y)
    np.testing.assert_allclose(val, np.log1p(np.exp(-y * (X @ w))), rtol=1e-12)
    np.testing.assert_allclose(grad, loop_grads(logistic_loss, 0, (w, X, y), (None, 0, 0)), rtol=1e-11)


def test_shared_label_broadcasts():
    # y unbatched (a scalar): the loop's other input is a number, the rows still fuse
    w, X, _ = data(seed=4)
    jg = s2s.jit(s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, None)))
    np.testing.assert_allclose(jg(w, X, -1.0), loop_grads(logistic_loss, 0, (w, X, -1.0), (None, 0, None)),
                               rtol=1e-11, atol=1e-13)


def test_float32_inputs():
    w, X, y = data(seed=5, dtype=np.float32)
    g = s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0))
    got = s2s.jit(g)(w, X, y)
    np.testing.assert_allclose(got, g(w, X, y), rtol=2e-5, atol=1e-6)


def test_mismatched_shapes_fail_as_unjitted():
    # x's rows have 11 entries, w has 10: the row path declines and the unfused code raises
    w, X, y = data(seed=6)
    g = s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0))
    with pytest.raises(Exception):
        g(w[:10], X, y)
    with pytest.raises(Exception):
        s2s.jit(g)(w[:10], X, y)


def test_non_contiguous_rows():
    w, X, y = data(n=40, d=22, seed=7)
    Xs, w = X[::2, ::2], w[::2]                   # a strided view: same values as a copy
    jg = s2s.jit(s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0)))
    np.testing.assert_allclose(jg(w, Xs, y[::2]), jg(w, np.ascontiguousarray(Xs), y[::2]), rtol=1e-13)
    np.testing.assert_allclose(jg(w, Xs, y[::2]), loop_grads(logistic_loss, 0, (w, Xs, y[::2]), (None, 0, 0)),
                               rtol=1e-11)


def test_parallel_target_runs_the_rows_in_prange():
    w, X, y = data(n=300, d=17, seed=8)
    jg = s2s.jit(s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0)), target="parallel")
    np.testing.assert_allclose(jg(w, X, y), loop_grads(logistic_loss, 0, (w, X, y), (None, 0, 0)), rtol=1e-11)
    src = s2s.show(jg, example_args=(w, X, y))
    rows = src.split("fused rows", 1)[1].split("else:", 1)[0]
    assert "prange(" in rows


def test_without_rank_facts_nothing_changes():
    # a batched matrix per example (rank 3): per-example matrix-vector products, no row path
    rng = np.random.default_rng(9)
    w, X, y = rng.normal(size=4), rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 3))

    def loss(w, x, y):
        return np.sum(np.log(1.0 + np.exp(-y * (x @ w))))
    jg = s2s.jit(s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0)))
    np.testing.assert_allclose(jg(w, X, y), loop_grads(loss, 0, (w, X, y), (None, 0, 0)), rtol=1e-11)
    assert "row_dot(" not in s2s.show(jg, example_args=(w, X, y))


def test_python_helpers_match_their_meaning():
    w, X, y = data(n=6, d=4, seed=10)
    assert rtf.rows_size(X, w, True, False, (y, 2.0)) == 6
    assert rtf.rows_size(X, w, True, False, (y[:5],)) == -1
    assert rtf.rows_size(X, w[:3], True, False, ()) == -1
    assert rtf.rows_size(X[0], w, False, False, ()) == -1
    assert rtf.row_dot(X, w, 2, True, False) == pytest.approx(X[2] @ w)
    out = rtf.rows_outer_empty(X, w, True, False)
    for i in range(6):
        rtf.row_times(out, i, y[i], X, True)
    np.testing.assert_allclose(out, y[:, None] * X)
    assert rtf.rows_empty(X, w, True, False).shape == (6,)
