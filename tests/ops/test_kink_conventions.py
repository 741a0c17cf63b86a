"""Derivatives at kinks follow the conventions of docs/conventions.md, in every mode.

Where the maths has no derivative (|x| at 0, a tie of np.maximum or of np.clip with its bound,
hypot and the 2-norm at 0, the std of a constant, ...) s2s returns one fixed value, the same as
JAX's unless docs/conventions.md says why not.  Each test evaluates one function holding several
kinks at once and checks that value entry by entry for grad, forward mode (jacfwd, and jvp along a
tangent) and vmap(grad) (one batch row on the kinks, one away from them, that one against finite
differences).  jit(grad) is checked on one function holding the kinks whose compiled helpers
differ from the plain ones (one Numba compile), on every group in a slow test, and the CUDA
target's per-example gradient at hypot's apex under Numba's simulator.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import s2s
from cases.fd import assert_close, numeric_grad

W3 = np.array([1.0, 2.0, 3.0])


def cones(v):
    """Functions whose graph is a cone at 0: the derivative at the apex is taken to be 0."""
    return (np.abs(v[0]) + np.fabs(v[1]) + abs(v[2])
            + np.hypot(v[3], v[4])
            + np.linalg.norm(v[5:8])
            + np.std(v[8:11]) + np.var(v[11:14]))


# At the apex of every cone (the std and var of a constant vector), the gradient is 0 everywhere.
CONES_AT = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
CONES_AWAY = np.array([-0.5, 0.7, -1.3, 3.0, -4.0, 1.0, 2.0, -2.0, 1.0, 2.0, 4.0, 0.5, -1.0, 2.5])


def ties(v):
    """Ties of np.maximum / np.minimum / np.clip / max and min reductions."""
    return (np.maximum(v[0], v[1]) + 2.0 * np.minimum(v[2], v[3])
            + np.sum(np.maximum(v[4:6], 0.0))                  # relu at 0 and at 1
            + np.clip(v[6], v[7], v[8])                         # x == lo
            + np.clip(v[9], v[10], v[11])                       # x == hi
            + np.clip(v[12], v[13], v[14])                      # x == lo == hi
            + np.sum(np.clip(v[15:17], 0.0, 1.0) * W3[1:])      # constant bounds, on each
            + np.max(v[17:20]) + np.min(v[20:23])               # two tied of three
            + np.sum(np.amax(np.reshape(v[23:27], (2, 2)), axis=1)))


TIES_AT = np.array([1.0, 1.0, 2.0, 2.0, 0.0, 1.0,
                    0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0,
                    0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 2.0])
# Ties split evenly, np.clip(x, lo, hi) being np.minimum(np.maximum(x, lo), hi) (JAX's values).
TIES_GRAD = np.array([0.5, 0.5, 1.0, 1.0, 0.5, 1.0,
                      0.5, 0.5, 0.0, 0.5, 0.0, 0.5, 0.25, 0.25, 0.5,
                      1.0, 1.5, 0.5, 0.5, 0.0, 0.5, 0.0, 0.5, 0.5, 0.5, 0.0, 1.0])
TIES_AWAY = np.array([1.0, 2.0, 2.5, 2.0, -0.5, 1.0,
                      0.5, 0.0, 1.0, 1.5, 0.0, 1.0, 0.3, 0.0, 1.0,
                      0.5, 1.5, 1.0, 3.0, 0.0, 0.0, 1.0, -1.0, 1.0, 4.0, 0.0, 2.0])


def picks(v):
    """Elements picked by comparison: argmax (first of ties), a stable sort, the median."""
    return v[np.argmax(v[0:3])] + np.sum(np.sort(v[3:6]) * W3) + np.median(v[6:9]) + np.median(v[9:13])


PICKS_AT = np.array([1.0, 3.0, 3.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 2.0])
PICKS_GRAD = np.array([0.0, 1.0, 0.0, 2.0, 3.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.5, 0.0, 0.0])
PICKS_AWAY = np.array([1.0, 3.0, 2.0, 1.0, 2.0, 0.0, 1.0, 3.0, 2.0, 1.0, 1.5, 0.0, 2.0])


def steep(v):
    """Infinite slopes at the edge of the domain, and flat steps."""
    return (np.sqrt(v[0]) + v[1] ** 0.5 + np.log(v[2])
            + np.sum(np.sign(v[3:5]) * v[3:5]) + np.sum(np.where(v[5:7] > 0.0, v[5:7] * v[5:7], -v[5:7]))
            + np.round(v[7]) + np.floor(v[8]))


STEEP_AT = np.array([0.0, 0.0, 0.0, 0.0, -2.0, 0.0, 1.0, 0.5, 1.0])
STEEP_GRAD = np.array([np.inf, np.inf, np.inf, 0.0, -1.0, -1.0, 2.0, 0.0, 0.0])


def compiled_kinks(v):
    """The kinks whose compiled (Numba) helpers are not the plain ones: |x|, hypot, the 2-norm,
    np.maximum and np.clip's shares with scalar and array bounds."""
    return (np.abs(v[0]) + np.hypot(v[1], v[2]) + np.linalg.norm(v[3:5]) + np.maximum(v[5], v[6])
            + np.clip(v[7], v[8], v[9]) + np.clip(v[10], v[11], v[12])
            + np.sum(np.clip(v[13:16], 0.0, 1.0) * W3))


COMPILED_AT = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0,
                        0.0, 1.0, 0.5])
COMPILED_GRAD = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.0, 0.5, 0.25, 0.25, 0.5,
                          0.5, 1.0, 3.0])
COMPILED_AWAY = np.array([-0.5, 3.0, -4.0, 1.0, 2.0, 1.0, 2.0, 0.5, 0.0, 1.0, 0.3, 0.0, 1.0,
                          -0.5, 1.5, 0.5])


def _quiet(thunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # 1/0 at the domain's edge is the point
        return np.asarray(thunk(), dtype=float)


def _same(actual, expected, what):
    """Equal to 1e-12, shape and dtype float too; an infinite entry must be the same infinity."""
    actual = np.asarray(actual)
    assert actual.dtype == np.float64 and actual.shape == np.shape(expected), (what, actual)
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12, err_msg=what)


def _check_modes(fn, at, expected, away, jit=False, jacfwd=True):
    """grad, jacfwd, jvp, vmap(grad) (and jit(grad) if asked) of fn give `expected` at `at`; at
    `away` (no kink) grad matches finite differences and the other modes match grad."""
    g = _quiet(lambda: s2s.grad(fn)(at.copy()))
    _same(g, expected, "grad")
    g_away = s2s.grad(fn)(away.copy())
    assert_close(g_away, numeric_grad(fn, (away,), 0), rtol=1e-5, atol=1e-6, what="grad away from kinks")
    if jacfwd:
        _same(_quiet(lambda: s2s.jacfwd(fn)(at.copy())), expected, "jacfwd")
    if np.all(np.isfinite(expected)):
        tangent = np.linspace(-1.0, 2.0, at.size)
        _, jv = s2s.jvp(fn, (at.copy(),), (tangent,))
        _same(jv, expected @ tangent, "jvp")
    else:   # an infinite slope: along ones, +inf (0 * inf in another direction is nan, as in JAX)
        jv = _quiet(lambda: s2s.jvp(fn, (at.copy(),), (np.ones_like(at),))[1])
        assert jv == np.sum(expected)
    vg = _quiet(lambda: s2s.vmap(s2s.grad(fn))(np.stack([at, away])))
    _same(vg[0], expected, "vmap(grad) on the kinks")
    _same(vg[1], g_away, "vmap(grad) away from them")
    if jit:
        jg = s2s.jit(s2s.grad(fn))
        _same(_quiet(lambda: jg(at.copy())), expected, "jit(grad)")
        _same(jg(away.copy()), g_away, "jit(grad) away from kinks")


def test_cone_apexes_have_zero_gradient():
    """|x| (np.abs, np.fabs, abs), hypot(x, y), the 2-norm and the std at 0 (a constant vector
    for std): gradient 0 in every mode; the var of a constant too (a true 0)."""
    _check_modes(cones, CONES_AT, np.zeros(CONES_AT.size), CONES_AWAY)


def test_cone_apexes_second_order_and_scalar_norm():
    """The hessian of |x| at 0 is 0, and the norm of a scalar (|x|) has gradient 0 at 0."""
    assert_close(s2s.hessian(lambda x: np.sum(np.abs(x)))(np.zeros(2)), np.zeros((2, 2)), what="hessian")
    assert s2s.grad(lambda x: np.linalg.norm(x))(0.0) == 0.0
    assert s2s.grad(lambda x: np.linalg.norm(x))(-2.0) == -1.0


def test_ties_split_evenly():
    """np.maximum / np.minimum / relu ties give each side 0.5; np.clip at a bound splits as
    np.minimum(np.maximum(x, lo), hi) does (0.5 to x and 0.5 to the bound; 0.25, 0.25, 0.5 when
    x == lo == hi); a max or min reduction splits among the tied elements; the hessian is 0."""
    _check_modes(ties, TIES_AT, TIES_GRAD, TIES_AWAY)
    assert_close(s2s.hessian(ties)(TIES_AT.copy()), np.zeros((TIES_AT.size,) * 2), what="hessian at the ties")


def test_clip_shares_broadcast_bounds():
    """np.clip with array bounds broadcast against x: each element's share follows its own tie."""
    def f(x, lo, hi):
        return np.sum(np.clip(x, lo, hi) * np.array([[1.0], [2.0]]))

    x = np.array([[0.0, 0.5, 1.0], [0.0, 2.0, -1.0]])
    lo = np.array([0.0, 0.0, 0.0])
    hi = np.array([[1.0], [2.0]])
    gx, glo, ghi = s2s.grad(f, argnums=(0, 1, 2))(x, lo, hi)
    assert_close(gx, [[0.5, 1.0, 0.5], [1.0, 1.0, 0.0]])
    assert_close(glo, [0.5 + 1.0, 0.0, 2.0])
    assert_close(ghi, [[0.5], [1.0]])


def test_picks_take_the_first_or_stable_element():
    """v[np.argmax(v)] takes the first maximum; np.sort of ties keeps their order (stable, as
    JAX's); np.median of ties takes the stable sort's middle element(s)."""
    _check_modes(picks, PICKS_AT, PICKS_GRAD, PICKS_AWAY)


def test_infinite_slopes_and_steps():
    """sqrt, x ** 0.5 and log at 0 have slope inf (as JAX); sign, round and floor have 0; np.where
    at its boundary takes the branch its condition picks."""
    _check_modes(steep, STEEP_AT, STEEP_GRAD, STEEP_AT + 0.25, jacfwd=False)


def test_jit_grad_at_kinks():
    """jit(grad) gives the conventions of grad, vmap(grad) and forward mode for the kinks whose
    compiled helpers are Numba's own (the cone apexes, np.maximum and np.clip ties)."""
    _check_modes(compiled_kinks, COMPILED_AT, COMPILED_GRAD, COMPILED_AWAY, jit=True)


_CUDA_HYPOT = textwrap.dedent("""
    import numpy as np
    import s2s


    def f(x, y):
        return np.hypot(x, y)


    x = np.array([0.0, 3.0, -1.0])
    y = np.array([0.0, 4.0, 0.0])
    got = s2s.jit(s2s.vmap(s2s.grad(f, argnums=(0, 1))), target="cuda")(x, y)
    ref = s2s.vmap(s2s.grad(f, argnums=(0, 1)))(x, y)
    print(repr((np.asarray(got).tolist(), np.asarray(ref).tolist())))
""")


def test_cuda_kernel_at_the_apex(tmp_path):
    """Under the CUDA target (Numba's simulator, its own process) the per-example gradient of
    np.hypot is 0 at (0, 0) too, as on the cpu."""
    pytest.importorskip("numba.cuda")
    (tmp_path / "hyp.py").write_text(_CUDA_HYPOT, encoding="utf-8")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "S2S_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(tmp_path / "hyp.py")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got, ref = eval(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got, [[0.0, 0.6, -1.0], [0.0, 0.8, 0.0]], rtol=1e-12, atol=0)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["cones", "ties", "picks", "steep"])
def test_jit_grad_every_kink(case):
    """jit(grad) of every group above gives the same conventions (a Numba compile of 20-60 s each;
    test_jit_grad_at_kinks covers the compiled helpers that differ from the plain ones)."""
    fn, at, expected, away = {"cones": (cones, CONES_AT, np.zeros(CONES_AT.size), CONES_AWAY),
                              "ties": (ties, TIES_AT, TIES_GRAD, TIES_AWAY),
                              "picks": (picks, PICKS_AT, PICKS_GRAD, PICKS_AWAY),
                              "steep": (steep, STEEP_AT, STEEP_GRAD, STEEP_AT + 0.25)}[case]
    _check_modes(fn, at, expected, away, jit=True, jacfwd=case != "steep")
