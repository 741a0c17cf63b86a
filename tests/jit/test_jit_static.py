"""jit's static arguments, as JAX's `static_argnums` / `static_argnames` (issue 39 item 5): the
value is part of the code (a branch on a mode string decided, a step count unrolled, a function
inlined), each distinct value its own compiled version, every answer the unjitted transform's."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
from cases.fd import numeric_grad


def layers(w, x, mode, steps=3):
    y = x
    for _ in range(steps):
        y = np.tanh(y @ w)
    if mode == "train":
        return np.sum(y ** 2)
    elif mode == "eval":
        return np.sum(y)
    raise ValueError(f"unknown mode {mode}")


def apply(act, x, scale):
    return np.sum(act(x * scale))


def smooth_relu(z):
    return np.log1p(np.exp(z))


@pytest.fixture
def wx():
    rng = np.random.default_rng(1)
    return rng.normal(size=(3, 3)) / 2, rng.normal(size=(2, 3))


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_a_static_mode_decides_the_branch(wx, mode):
    w, x = wx
    jitted = s2s.jit(s2s.grad(layers), static_argnums=2, wait=True)
    want = s2s.grad(layers)(w, x, mode)
    np.testing.assert_allclose(want, numeric_grad(layers, (w, x, mode), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jitted(w, x, mode), want, rtol=1e-12)
    # the compiled code has the branch decided: no string reaches Numba
    assert "train" not in jitted.source or mode == "train"


def test_static_argnames_by_keyword_and_position(wx):
    w, x = wx
    jitted = s2s.jit(s2s.value_and_grad(layers), static_argnames=("mode", "steps"), wait=True)
    for call, args in [(lambda: jitted(w, x, mode="eval", steps=5), (w, x, "eval", 5)),
                       (lambda: jitted(w, x, "train", steps=2), (w, x, "train", 2)),
                       (lambda: jitted(w, x, "train"), (w, x, "train"))]:
        value, g = call()
        want_value, want_g = s2s.value_and_grad(layers)(*args)
        assert value == pytest.approx(want_value, rel=1e-13)
        assert type(value) is type(want_value)
        np.testing.assert_allclose(g, want_g, rtol=1e-12)
    # three distinct static values: three compiled versions, each called again without a compile
    assert len([k for k in jitted._inner_jits if k[0] == "static"]) == 3


def test_a_static_function_is_inlined(wx):
    _, x = wx
    jitted = s2s.jit(s2s.grad(apply, argnums=1), static_argnums=0, wait=True)
    np.testing.assert_allclose(jitted(np.sin, x, 2.0), 2.0 * np.cos(2.0 * x), rtol=1e-13)
    np.testing.assert_allclose(jitted(smooth_relu, x, 0.5), 0.5 / (1 + np.exp(-0.5 * x)), rtol=1e-12)
    np.testing.assert_allclose(jitted(np.tanh, x, 1.0), 1 - np.tanh(x) ** 2, rtol=1e-12)


def test_static_arguments_under_vmap_of_grad(wx):
    w, _ = wx
    xs = np.random.default_rng(2).normal(size=(4, 2, 3))
    jitted = s2s.jit(s2s.vmap(s2s.grad(layers), in_axes=(None, 0, None)), static_argnums=2, wait=True)
    per = jitted(w, xs, "train")
    for k in range(4):
        np.testing.assert_allclose(per[k], s2s.grad(layers)(w, xs[k], "train"), rtol=1e-12)


def test_static_arguments_of_a_hessian(wx):
    w, x = wx
    jitted = s2s.jit(s2s.hessian(layers), static_argnums=(2, 3), wait=True)
    np.testing.assert_allclose(jitted(w, x, "eval", 2), s2s.hessian(layers)(w, x, "eval", 2), rtol=1e-10, atol=1e-12)


def test_refusals_say_what_to_do(wx):
    w, x = wx
    with pytest.raises(s2s.ArgumentError, match="unhashable list.*pass a tuple"):
        s2s.jit(layers, static_argnums=2)(w, x, ["train"])
    with pytest.raises(s2s.ArgumentError, match="static.*cannot be differentiated"):
        s2s.jit(s2s.grad(apply, argnums=2), static_argnums=2)(np.sin, x, 2.0)
    with pytest.raises(s2s.ArgumentError, match="not a parameter"):
        s2s.jit(layers, static_argnames="mood")(w, x, "train")
    # a branch the static value reaches raises as the function does
    with pytest.raises(ValueError, match="unknown mode test"):
        s2s.jit(layers, static_argnums=2, wait=True)(w, x, "test")


def test_two_processes_with_static_functions_of_one_name_do_not_share_code(tmp_path):
    # the disk cache keys the wrapper by the bound function's code: `act` means sin in one
    # process and tanh in the other, at the same file and line
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import s2s

        if sys.argv[1] == "sin":
            def act(z):
                return np.sin(z)
        else:
            def act(z):
                return np.tanh(z)

        def apply(f, x):
            return np.sum(f(x))

        print(float(s2s.jit(s2s.grad(apply, argnums=1), static_argnums=0, wait=True)(act, np.array([0.5]))[0]))
        """)
    path = tmp_path / "static_cache.py"
    path.write_text(script)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    out = {}
    for which in ("sin", "tanh", "sin"):
        run = subprocess.run([sys.executable, str(path), which], capture_output=True, text=True, env=env,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        out.setdefault(which, []).append(float(run.stdout.split()[-1]))
    assert out["sin"] == [pytest.approx(np.cos(0.5), rel=1e-14)] * 2
    assert out["tanh"] == [pytest.approx(1 - np.tanh(0.5) ** 2, rel=1e-14)]


def test_results_are_numpy_numbers_in_every_tier():
    def simulate(c, x0=1.0, steps=100):
        x = x0
        for _ in range(steps):
            x = x + 0.01 * (-c * x)
        return x
    assert type(s2s.grad(simulate)(0.5)) is np.float64
    assert type(s2s.value_and_grad(simulate)(0.5)[0]) is np.float64
    assert type(s2s.jit(s2s.grad(simulate), wait=False)(0.5)) is np.float64       # the Python tier
    assert type(s2s.jit(s2s.grad(simulate), wait=True)(0.5)) is np.float64        # the compiled code
