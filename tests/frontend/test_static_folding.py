"""Constants s2s knows when it reads the code decide branches then (frontend/anf.py `folded`,
statements.py `stmt_If`): `callback is not None` with callback=None, a mode string, a key of an
unrolled loop. Checked against finite differences; a flag the code rebinds keeps its test."""
import numpy as np
import pytest

import s2s
from cases import static_folding_cases as C


def fd(f, args, i, eps=1e-6):
    x = np.array(args[i], dtype=float)
    g = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        hi, lo = list(args), list(args)
        xp, xm = x.copy(), x.copy()
        xp[j] += eps
        xm[j] -= eps
        hi[i], lo[i] = xp, xm
        g[j] = (f(*hi) - f(*lo)) / (2 * eps)
    return g


def test_regression_vmap_grad_of_early_return_on_a_constant_test():
    x = np.array(-0.7411351402108811)
    y = np.array([0.627, 0.655, 0.496, 0.916])
    g = s2s.grad(C.early_return_on_constant)(x, y)
    np.testing.assert_allclose(g, fd(C.early_return_on_constant, (x, y), 0), rtol=1e-6)
    xs = np.array([-0.74, 0.3, 1.1])
    batched = s2s.vmap(s2s.grad(C.early_return_on_constant), in_axes=(0, None))(xs, y)
    np.testing.assert_allclose(batched, [s2s.grad(C.early_return_on_constant)(v, y) for v in xs], rtol=1e-12)


def test_none_callback_and_mode_string_decide_branches_when_read():
    c, u = 0.7, np.array([0.3, -0.5, 0.9, 0.1])
    g = s2s.grad(C.uses_simulate, argnums=(0, 1))(c, u)
    np.testing.assert_allclose(g[0], fd(C.uses_simulate, (c, u), 0), rtol=1e-6)
    np.testing.assert_allclose(g[1], fd(C.uses_simulate, (c, u), 1), rtol=1e-6)
    assert "callback(" not in s2s.show(C.uses_simulate).replace("# ", "")   # the untaken branch is no code
    np.testing.assert_allclose(s2s.jit(s2s.grad(C.uses_simulate))(c, u), g[0], rtol=1e-10)


@pytest.mark.parametrize("x", [np.array([0.3, -0.1]), np.array([-0.3, -0.1])])
def test_a_rebound_flag_keeps_its_test(x):
    np.testing.assert_allclose(s2s.grad(C.flag_reassigned)(x), fd(C.flag_reassigned, (x,), 0), rtol=1e-6)


def test_string_method_on_a_key_of_an_unrolled_loop():
    rng = np.random.default_rng(0)
    params = {"W1": rng.standard_normal((3, 2)), "b1": rng.standard_normal(2), "W2": rng.standard_normal((3, 2))}
    x = rng.standard_normal((4, 3))
    g = s2s.grad(C.keys_by_name)(params, x)
    for k in params:
        def f(v, k=k):
            p = dict(params)
            p[k] = v
            return C.keys_by_name(p, x)
        np.testing.assert_allclose(g[k], fd(f, (params[k],), 0), rtol=1e-6)


def test_recursion_of_a_constant_depth_is_inlined():
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(s2s.grad(C.tree_loss)(x), fd(C.tree_loss, (x,), 0), rtol=1e-6)


def test_recursion_of_a_depth_known_when_it_runs_is_refused_at_the_user_line():
    with pytest.raises(s2s.errors.RecursionNotSupportedError) as info:
        s2s.grad(C.runaway_loss)(np.array([0.3]), 3)
    assert "static_folding_cases.py" in str(info.value) and "runaway" in str(info.value)


@pytest.mark.parametrize("x", [np.array([0.3, 0.2]), np.array([-0.3, -0.2])])
def test_a_folded_return_inside_a_branch_on_data_leaves_only_that_branch(x):
    np.testing.assert_allclose(s2s.grad(C.nested_folded_return)(x), fd(C.nested_folded_return, (x,), 0), rtol=1e-6)
