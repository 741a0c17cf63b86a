"""s2s.pmap on the cpu backend, derivatives (devices are threads; S2S_CPU_DEVICES=4 here).

Checked against the same maths written with plain NumPy on the stacked (n, ...) input:

1. gradients: pmap(grad(f)) against finite differences / s2s.grad of
   `total(X) = sum_j loss_j(X[j])` (JAX's semantics: a device's gradient is that of every
   device's loss), jvp through collectives, forward-over-reverse, jit(grad) == grad;
2. grad / jvp of a function that calls a pmapped function (in_axes=(0, None): the unmapped
   argument's cotangent is summed over devices).
"""
from __future__ import annotations


import numpy as np
import pytest

import s2s
from cases.fd import assert_close, numeric_grad
from cases.pmap_cases import *  # noqa: F401,F403  (N, run, rng, fd_dir, the per-device functions c_*, r_*)
from cases.pmap_cases import four_cpu_devices  # noqa: F401  (the autouse fixture)


# =================================================================================================
# 1. gradients of each collective: pmap(grad(loss)) against the gradient of the total loss
# =================================================================================================
# loss_j(x_j, c_j) per device; t_<name>(X, C) = sum_j loss_j on the stacked inputs, plain NumPy
def l_pmean(x, c):
    return np.sum(c * s2s.pmean(x * x, "i") * x)


def t_pmean(X, C):
    return np.sum(C * (X * X).mean(axis=0)[None] * X)


def l_pmax(x, c):
    return np.sum(c * s2s.pmax(x, "i") ** 2) + np.sum(np.cos(x))


def t_pmax(X, C):
    return np.sum(C * (X.max(axis=0) ** 2)[None]) + np.sum(np.cos(X))


def l_pmin(x, c):
    return np.sum(c * np.exp(s2s.pmin(x, "i")) * x)


def t_pmin(X, C):
    return np.sum(C * np.exp(X.min(axis=0))[None] * X)


def l_gather(x, c):          # c: (n,) + x.shape
    return np.sum(c * np.tanh(s2s.all_gather(x, "i")))


def t_gather(X, C):
    return sum(np.sum(C[j] * np.tanh(X)) for j in range(X.shape[0]))


def l_gather_tiled(x, c):    # x: (m,), c: (n*m,)
    return np.sum(c * np.tanh(s2s.all_gather(x, "i", tiled=True)) * s2s.all_gather(x, "i", tiled=True))


def t_gather_tiled(X, C):
    flat = X.reshape(-1)
    return sum(np.sum(C[j] * np.tanh(flat) * flat) for j in range(X.shape[0]))


def l_gather_ax1(x, c):      # x: (m,), c: (m, n)
    return np.sum(c * np.sin(s2s.all_gather(x, "i", axis=1)))


def t_gather_ax1(X, C):
    return sum(np.sum(C[j] * np.sin(X.T)) for j in range(X.shape[0]))


def l_ring(x, c):
    return np.sum(c * s2s.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]) * x)


def t_ring(X, C):
    return np.sum(C * np.roll(X, 1, axis=0) * X)


def l_partial(x, c):
    return np.sum(c * np.sin(s2s.ppermute(x, "i", [(0, 2), (1, 0)])) * x)


def t_partial(X, C):
    return np.sum(C * np.sin(r_partial(X)) * X)


def l_a2a_01(x, c):          # x: (n, m), c: (m, n)
    return np.sum(c * np.sin(s2s.all_to_all(x, "i", 0, 1)))


def t_a2a_01(X, C):
    return np.sum(C * np.sin(r_a2a_01(X)))


def l_a2a_10(x, c):          # x: (m, n), c: (n, m)
    return np.sum(c * s2s.all_to_all(x, "i", 1, 0) ** 3)


def t_a2a_10(X, C):
    return np.sum(C * r_a2a_10(X) ** 3)


def l_a2a_tiled(x, c):       # x: (2n,), c: (2n,)
    return np.sum(c * np.sin(s2s.all_to_all(x, "i", 0, 0, tiled=True)))


def t_a2a_tiled(X, C):
    return np.sum(C * np.sin(r_a2a_tiled_00(X)))


def l_pswap(x, c):           # x: (n, m)
    return np.sum(c * np.cos(s2s.pswapaxes(x, "i", 0)) * x)


def t_pswap(X, C):
    return np.sum(C * np.cos(r_a2a_00(X)) * X)


def l_index(x, c):
    return np.sum(c * x * x) * (s2s.axis_index("i") + 1.0) / s2s.axis_size("i")


def t_index(X, C):
    n = X.shape[0]
    w = (np.arange(n) + 1.0).reshape((n,) + (1,) * (X.ndim - 1))
    return np.sum(C * X * X * w) / n


# (loss, total, x shape per device, c shape per device)
GRADS = [
    (l_psum, t_psum, (), ()), (l_psum, t_psum, (3,), (3,)),
    (l_pmean, t_pmean, (3,), (3,)),
    (l_pmax, t_pmax, (3,), (3,)), (l_pmin, t_pmin, (2, 2), (2, 2)),
    (l_gather, t_gather, (3,), (N, 3)),
    (l_gather_tiled, t_gather_tiled, (2,), (2 * N,)), (l_gather_ax1, t_gather_ax1, (3,), (3, N)),
    (l_ring, t_ring, (3,), (3,)), (l_partial, t_partial, (3,), (3,)), (l_partial, t_partial, (), ()),
    (l_a2a_01, t_a2a_01, (N, 3), (3, N)), (l_a2a_10, t_a2a_10, (2, N), (N, 2)),
    (l_a2a_tiled, t_a2a_tiled, (2 * N,), (2 * N,)), (l_pswap, t_pswap, (N, 2), (N, 2)),
    (l_index, t_index, (3,), (3,)),
]


def _grad_case_id(case):
    return f"{case[0].__name__[2:]}-{len(case[2])}d"


def _grad_inputs(xshape, cshape, seed):
    r = rng(seed)
    X = r.standard_normal((N,) + xshape)
    C = r.uniform(0.5, 1.5, (N,) + cshape)
    return X, C


@pytest.mark.parametrize("case", GRADS, ids=[_grad_case_id(c) for c in GRADS])
def test_grad_of_each_collective(case):
    loss, total, xshape, cshape = case
    X, C = _grad_inputs(xshape, cshape, 20)
    got = run(s2s.pmap(s2s.grad(loss), axis_name="i"), X, C)
    assert got.shape == X.shape
    assert_close(got, numeric_grad(total, (X, C), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", [GRADS[1], GRADS[3], GRADS[5], GRADS[9], GRADS[11]],
                         ids=["psum", "pmax", "gather", "partial", "a2a01"])
def test_grad_matches_s2s_grad_of_the_total(case):
    loss, total, xshape, cshape = case
    X, C = _grad_inputs(xshape, cshape, 21)
    got = run(s2s.pmap(s2s.grad(loss), axis_name="i"), X, C)
    assert_close(got, s2s.grad(total)(X, C), rtol=1e-12, atol=1e-13)


def test_grad_with_respect_to_both_arguments():
    X, C = _grad_inputs((3,), (3,), 22)
    gx, gc = run(s2s.pmap(s2s.grad(l_psum, argnums=(0, 1)), axis_name="i"), X, C)
    assert_close(gx, numeric_grad(t_psum, (X, C), 0))
    assert_close(gc, numeric_grad(t_psum, (X, C), 1))


def test_value_and_grad_through_pmax():
    X, C = _grad_inputs((3,), (3,), 23)
    v, g = run(s2s.pmap(s2s.value_and_grad(l_pmax), axis_name="i"), X, C)
    expected_v = [np.sum(C[j] * X.max(0) ** 2) + np.sum(np.cos(X[j])) for j in range(N)]
    np.testing.assert_allclose(v, expected_v, rtol=1e-13)
    assert_close(g, numeric_grad(t_pmax, (X, C), 0))


def test_pmax_ties_share_the_cotangent():
    # devices 0 and 2 hold the maximum: like np.max's rule, they share its cotangent
    X = np.array([[3.0, 1.0], [1.0, 1.0], [3.0, 0.0], [2.0, -1.0]])
    C = np.ones((N, 2))
    got = run(s2s.pmap(s2s.grad(l_pmax), axis_name="i"), X, C)
    expected = s2s.grad(t_pmax)(X, C)
    assert_close(got, expected, rtol=1e-13, atol=1e-14)
    # column 1: devices 0, 1 tie at 1.0; column 0: 0 and 2 at 3.0
    assert got[0, 0] == got[2, 0] and got[1, 0] == -np.sin(1.0)


def test_grad_under_jit_equals_unjitted():
    X, C = _grad_inputs((N, 3), (3, N), 24)
    plain = run(s2s.pmap(s2s.grad(l_a2a_01), axis_name="i"), X, C)
    jitted = run(s2s.pmap(s2s.jit(s2s.grad(l_a2a_01)), axis_name="i"), X, C)
    np.testing.assert_allclose(jitted, plain, rtol=1e-14, atol=1e-15)
    X, C = _grad_inputs((3,), (3,), 25)
    plain = run(s2s.pmap(s2s.grad(l_ring), axis_name="i"), X, C)
    jitted = run(s2s.pmap(s2s.jit(s2s.grad(l_ring)), axis_name="i"), X, C)
    np.testing.assert_allclose(jitted, plain, rtol=1e-14, atol=1e-15)


# ----- forward mode -------------------------------------------------------------------------------
def f_psum(x):
    return np.sin(s2s.psum(x, "i")) * x


def f_pmax(x):
    return s2s.pmax(x * x, "i") + x


def f_gather(x):
    return np.cos(s2s.all_gather(x, "i")) * s2s.axis_index("i")


def f_ring(x):
    return s2s.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]) * x


def f_a2a(x):
    return np.exp(s2s.all_to_all(x, "i", 0, 1)) * 0.5


def F_psum(X):
    return np.sin(X.sum(0))[None] * X


def F_pmax(X):
    return (X * X).max(0)[None] + X


def F_gather(X):
    return np.stack([np.cos(X) * j for j in range(X.shape[0])])


def F_ring(X):
    return np.roll(X, 1, axis=0) * X


def F_a2a(X):
    return np.exp(r_a2a_01(X)) * 0.5


JVPS = [(f_psum, F_psum, (3,)), (f_pmax, F_pmax, (3,)), (f_gather, F_gather, (2,)), (f_ring, F_ring, ()),
        (f_a2a, F_a2a, (N, 2))]


@pytest.mark.parametrize("f,F,xshape", JVPS, ids=["psum", "pmax", "gather", "ring", "a2a"])
def test_jvp_through_collectives(f, F, xshape):
    r = rng(30)
    X = r.standard_normal((N,) + xshape)
    T = r.standard_normal((N,) + xshape)
    out, tan = run(s2s.pmap(s2s.jvp(f, argnums=0), axis_name="i"), X, T)
    np.testing.assert_allclose(out, F(X), rtol=1e-13, atol=1e-14)
    assert_close(tan, fd_dir(F, X, T), rtol=1e-6, atol=1e-7, what="tangent")


def test_forward_over_reverse_through_psum():
    # Hessian-vector product: pmap(jvp(grad(loss))) against differences of pmap(grad(loss))
    X, C = _grad_inputs((3,), (3,), 31)
    T = rng(32).standard_normal(X.shape)
    pg = s2s.pmap(s2s.grad(l_psum), axis_name="i")
    # (Numba does not compile a derivative of a derivative yet: the Python fallback, with a warning)
    with pytest.warns(UserWarning, match="could not compile"):
        g, hv = s2s.pmap(s2s.jvp(s2s.grad(l_psum), argnums=0), axis_name="i")(X, C, T)
    np.testing.assert_allclose(g, pg(X, C), rtol=1e-14)
    expected = fd_dir(lambda Z: s2s.grad(t_psum)(Z, C), X, T)
    assert_close(hv, expected, rtol=1e-6, atol=1e-7, what="hessian-vector product")


# =================================================================================================
# 2. grad of a function that calls pmap
# =================================================================================================
def g_inner(v):
    return np.sin(s2s.psum(v, "j")) * v


pf_inner = s2s.pmap(g_inner, axis_name="j")


def outer(v):
    return np.sum(pf_inner(v) ** 2)


def outer_ref(V):
    return np.sum((np.sin(V.sum(0))[None] * V) ** 2)


def g_shared(v, w):
    return np.tanh(s2s.psum(v * w, "j")) * w + v


pf_shared = s2s.pmap(g_shared, axis_name="j", in_axes=(0, None))


def outer_shared(v, w):
    return np.sum(pf_shared(v, w) ** 2)


def outer_shared_ref(V, w):
    S = (V * w[None]).sum(0)
    return np.sum((np.tanh(S)[None] * w[None] + V) ** 2)


def test_grad_of_function_calling_pmap():
    V = rng(40).standard_normal((N, 3))
    np.testing.assert_allclose(outer(V), outer_ref(V), rtol=1e-14)
    g = s2s.grad(outer)(V)
    assert_close(g, numeric_grad(outer_ref, (V,), 0))


def test_grad_of_function_calling_pmap_with_unmapped_argument():
    r = rng(41)
    V, w = r.standard_normal((N, 3)), r.standard_normal(3)
    np.testing.assert_allclose(outer_shared(V, w), outer_shared_ref(V, w), rtol=1e-14)
    gv, gw = s2s.grad(outer_shared, argnums=(0, 1))(V, w)
    assert gv.shape == V.shape and gw.shape == w.shape
    assert_close(gv, numeric_grad(outer_shared_ref, (V, w), 0))
    # w is every device's: its cotangent is the sum of the devices' cotangents
    assert_close(gw, numeric_grad(outer_shared_ref, (V, w), 1))


pf_out1 = s2s.pmap(g_inner, axis_name="j", out_axes=1)
pf_in1 = s2s.pmap(g_inner, axis_name="j", in_axes=1)


def outer_out1(v):
    return np.sum(pf_out1(v) * np.arange(1.0, v.shape[0] + 1.0))


def outer_out1_ref(V):
    return np.sum((np.sin(V.sum(0))[None] * V).T * np.arange(1.0, V.shape[0] + 1.0))


def outer_in1(w):
    return np.sum(pf_in1(w) ** 2)


def test_grad_of_function_calling_pmap_with_other_axes():
    V = rng(44).standard_normal((N, 3))
    assert_close(s2s.grad(outer_out1)(V), numeric_grad(outer_out1_ref, (V,), 0))
    W = np.ascontiguousarray(V.T)                  # mapped along axis 1
    g = s2s.grad(outer_in1)(W)
    assert g.shape == W.shape
    assert_close(g, numeric_grad(outer_ref, (V,), 0).T)


def g_replicated(v):
    return s2s.psum(v * v, "j")


pf_replicated = s2s.pmap(g_replicated, axis_name="j", out_axes=None)


def outer_replicated(v):
    return np.sum(np.sin(pf_replicated(v)))


def outer_replicated_ref(V):
    return np.sum(np.sin((V * V).sum(0)))


def test_grad_of_function_calling_pmap_out_axes_none():
    V = rng(45).standard_normal((N, 3))
    np.testing.assert_allclose(outer_replicated(V), outer_replicated_ref(V), rtol=1e-14)
    assert_close(s2s.grad(outer_replicated)(V), numeric_grad(outer_replicated_ref, (V,), 0))


def g_pair(v):
    return s2s.psum(v, "j"), v * 2.0


pf_pair = s2s.pmap(g_pair, axis_name="j")


def outer_pair(v):
    a, b = pf_pair(v)
    return np.sum(a * b)


def outer_pair_ref(V):
    return np.sum(V.sum(0)[None] * 2.0 * V)


def test_grad_of_function_calling_pmap_with_tuple_output():
    V = rng(46).standard_normal((N, 3))
    np.testing.assert_allclose(outer_pair(V), outer_pair_ref(V), rtol=1e-14)
    assert_close(s2s.grad(outer_pair)(V), numeric_grad(outer_pair_ref, (V,), 0))


def test_jacobians_of_pmap():
    V = rng(47).standard_normal((N, 2))

    def ref(Z):
        return np.sin(Z.sum(0))[None] * Z
    expected = np.stack([numeric_grad(lambda Z, a=a, b=b: ref(Z)[a, b], (V,), 0)
                         for a in range(N) for b in range(2)]).reshape(N, 2, N, 2)
    assert_close(s2s.jacrev(pf_inner)(V), expected)
    assert_close(s2s.jacfwd(pf_inner)(V), expected)


def test_jvp_of_function_calling_pmap():
    r = rng(42)
    V, T = r.standard_normal((N, 3)), r.standard_normal((N, 3))
    out, tan = s2s.jvp(outer, (V,), (T,))
    np.testing.assert_allclose(out, outer_ref(V), rtol=1e-14)
    assert_close(tan, fd_dir(outer_ref, V, T), what="tangent")


def test_value_and_grad_of_function_calling_pmap_twice():
    V = rng(43).standard_normal((N, 2))
    v1, g1 = s2s.value_and_grad(outer)(V)
    v2, g2 = s2s.value_and_grad(outer)(V * 2.0)
    np.testing.assert_allclose(v1, outer_ref(V), rtol=1e-14)
    assert_close(g1, numeric_grad(outer_ref, (V,), 0))
    assert_close(g2, numeric_grad(outer_ref, (V * 2.0,), 0))
