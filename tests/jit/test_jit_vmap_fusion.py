"""jit(vmap(...)): the fusion pass fuses vmap's `balign` (a no-op when every peer is batched
and of the same shape, or a scalar constant) into the elementwise loop.

The dangerous case is an unbatched array peer whose shape happens to equal the batched
operand's: `balign` gives the batched operand a new axis there (the result is a matrix), and
the run's shape guard alone would pass. Every test compares against the Python loop over
examples or the unjitted vmap.
"""
from __future__ import annotations


import numpy as np
import pytest


import s2s  # noqa: E402
from cases import vmap_cases as V


def scale_by_shared(s, v):        # per-example scalar s, shared vector v
    return np.sin(s) * v + s * 2.0


def shared_chain(x, v):           # per-example vector x, shared vector v of x's shape
    t = np.exp(-x * x)
    return t * v - np.cos(x)


def logistic_loss(w, x, y):
    return np.log(1.0 + np.exp(-y * (x @ w)))


def seeded_chain(x):
    return np.sum(np.tanh(x) * x + 1.0)


def loop(fn, args, in_axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [fn(*[np.take(a, b, axis=ax) if ax is not None else a for a, ax in zip(args, in_axes)])
            for b in range(n)]
    return np.stack([np.asarray(o) for o in outs])


def check(fn, args, in_axes):
    got = s2s.jit(s2s.vmap(fn, in_axes=in_axes))(*args)
    want = loop(fn, args, in_axes)
    assert np.shape(got) == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_unbatched_peer_with_the_batch_length_is_not_fused_as_a_view():
    rng = np.random.default_rng(0)
    s, v = rng.normal(size=5), rng.normal(size=5)     # batch 5, shared vector of length 5
    check(scale_by_shared, (s, v), (0, None))
    assert np.shape(s2s.jit(s2s.vmap(scale_by_shared, in_axes=(0, None)))(s, v)) == (5, 5)


@pytest.mark.parametrize("n", [3, 4])
def test_batched_vector_against_shared_vector(n):
    rng = np.random.default_rng(n)
    x, v = rng.normal(size=(4, n)), rng.normal(size=n)    # n == 4: the batch has v's length
    check(shared_chain, (x, v), (0, None))
    check(shared_chain, (x, x[0] * 0.5 + 1.0), (0, None))


def test_per_example_gradients_fuse_into_one_loop_and_match():
    rng = np.random.default_rng(3)
    n = d = 16                                              # batch size equal to the feature count
    w, X, y = rng.normal(size=d) / 4, rng.normal(size=(n, d)), np.sign(rng.normal(size=n))
    g = s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0))
    jg = s2s.jit(g)
    np.testing.assert_allclose(jg(w, X, y), g(w, X, y), rtol=1e-12, atol=1e-14)
    want = np.stack([(-y[i] / (1.0 + np.exp(y[i] * (X[i] @ w)))) * X[i] for i in range(n)])
    np.testing.assert_allclose(jg(w, X, y), want, rtol=1e-12)
    src = s2s.show(jg, example_args=(w, X, y))
    fused = src.split("fused_size(", 1)[1].split("else:", 1)[0]
    assert "dt2_out" in fused or "_out[i]" in fused
    assert src.count("fused_size(") == 1, src      # the forward chain and the cotangents: one loop


def test_seed_constant_is_a_scalar_not_a_fused_array():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6, 3))
    g = s2s.vmap(s2s.grad(seeded_chain))
    np.testing.assert_allclose(s2s.jit(g)(X), g(X), rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(g)(X), np.tanh(X) + X * (1.0 - np.tanh(X) ** 2), rtol=1e-12)


@pytest.mark.parametrize("fn,shapes,in_axes", [
    (V.b_add, [(4, 3, 4), (4, 4)], (0, 0)),
    (V.b_add, [(4, 3, 4), (4,)], (0, None)),
    (V.b_mul, [(4, 3, 1), (4, 1, 4)], (0, 0)),
    (V.b_scalar_vec, [(4,), (4, 4)], (0, 0)),
    (V.b_scalar_vec, [(4,), (4,)], (0, None)),
    (V.b_chain3, [(4, 3, 4), (4, 4), (4,)], (0, 0, 0)),
    (V.b_chain3, [(4, 3, 4), (4,), (4,)], (0, None, 0)),
    (V.u_neg_chain, [(4,)], (0,)),
    (V.e_where, [(4, 3, 4), (4,)], (0, None)),
], ids=lambda p: getattr(p, "__name__", None) or str(p).replace(" ", ""))
def test_broadcasting_cases_match_the_loop(fn, shapes, in_axes):
    rng = np.random.default_rng(len(shapes))
    args = tuple(rng.normal(size=s) for s in shapes)
    check(fn, args, in_axes)


def test_numba_bexpand_reduced_matches_the_runtime():
    import numba
    from s2s.runtime import batching as rtb

    @numba.njit
    def three(g, x):
        return (rtb.bexpand_reduced(g, x, None, False, True, False), rtb.bexpand_reduced(g, x, None, False, True, True),
                rtb.bexpand_reduced(2.0, x, None, False, False, True))
    g, x = np.array([1.0, -2.0, 3.0]), np.arange(6.0).reshape(3, 2)
    for got, want in zip(three(g, x), (rtb.bexpand_reduced(g, x, None, False, True, False),
                                       rtb.bexpand_reduced(g, x, None, False, True, True),
                                       rtb.bexpand_reduced(2.0, x, None, False, False, True))):
        assert got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)


def column_energy(x, w):          # per-example column x (batched along axis 1), shared weights w
    return np.sum(np.tanh(x * w) ** 2)


def test_jit_vmap_over_axis_1_moves_the_batch_axis_in_compiled_code():
    # in_axes=1 calls the bmove helper (s2s.runtime.batching): its compiled version must be found when
    # the helpers live outside s2s.runtime (a regression of the module split: "no compiled version
    # of its helper `bmove`")
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(4, 6)), rng.normal(size=4)
    loop = np.array([column_energy(x[:, b], w) for b in range(x.shape[1])])
    batched = s2s.vmap(column_energy, in_axes=(1, None))(x, w)
    np.testing.assert_allclose(batched, loop, rtol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.vmap(column_energy, in_axes=(1, None)))(x, w), loop, rtol=1e-12)
    grads = np.array([s2s.grad(column_energy)(x[:, b], w) for b in range(x.shape[1])]).T
    np.testing.assert_allclose(s2s.jit(s2s.vmap(s2s.grad(column_energy), in_axes=(1, None), out_axes=1))(x, w),
                               grads, rtol=1e-12)
