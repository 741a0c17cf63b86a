"""Transforms stay cheap as programs grow, and stay right.

Costs are measured in benchmarks/transform_cost.py, not here. These tests check what the
cheaper passes must keep: the answers. The deep and long programs run in a child process with
a time limit, so a pass that blows up again fails the test instead of hanging CI: loop depth 20
took hours before the liveness analysis became a worklist (depth 14: 6.8 s, doubling per level).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
from cases.fd import numeric_grad

from cases import paths
from cases.paths import ROOT
spec = importlib.util.spec_from_file_location("transform_cost", os.path.join(ROOT, "benchmarks", "transform_cost.py"))
transform_cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(transform_cost)


def _load(source: str, tmp_path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


def test_deep_and_long_programs_transform_in_bounded_time(tmp_path):
    """Depth 20 and 1000 lines, in a child process that must finish within 240 s (both take a
    few seconds now; depth 20 alone did not finish in an hour before)."""
    child = textwrap.dedent(f"""
        import importlib.util, sys
        import numpy as np
        spec = importlib.util.spec_from_file_location("tc", {os.path.join(ROOT, 'benchmarks', 'transform_cost.py')!r})
        tc = importlib.util.module_from_spec(spec); spec.loader.exec_module(tc)
        import s2s
        from cases.fd import numeric_grad
        for name, source, args in [("deep", tc.deep_loops(20), (1.5,)),
                                   ("long", tc.long_program(1000), (np.linspace(0.0, 1.0, 5), 0.3))]:
            path = {str(tmp_path)!r} + "/" + name + ".py"
            open(path, "w").write(source)
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
            got = s2s.grad(mod.f)(*args)
            want = numeric_grad(mod.f, args, 0)
            assert np.allclose(got, want, rtol=1e-5, atol=1e-7), (name, got, want)
            print(name, "ok")
        """)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=paths.pythonpath())
    p = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["deep", "ok", "long", "ok"]


@pytest.mark.parametrize("depth", [1, 2, 3, 6])
def test_deep_loops_gradient_is_exact(depth, tmp_path):
    f = _load(transform_cost.deep_loops(depth), tmp_path, f"deep{depth}")
    assert s2s.grad(f)(1.5) == pytest.approx(2 * 1.5)       # f(x) = x * x + 1 at any depth


NESTED = '''
import numpy as np


def f(x, n, m):
    """Values carried across both loop levels, overwritten before they are read, and read after
    the loops: what the liveness analysis must see through."""
    s = 0.0
    t = x
    for i in range(n):
        u = t * 2.0
        for j in range(m):
            v = np.sin(t) + u
            t = t * 0.5 + 0.1 * v
            u = v            # overwrites u: the earlier u is read by the first v only
        s = s + np.sum(t * u)
        w = s * 3.0          # dead: overwritten before any read
        w = s
    return s + np.sum(w * t)
'''


@pytest.mark.parametrize("n,m", [(1, 0), (1, 1), (3, 2), (2, 4)])
def test_nested_loop_carried_values(n, m, tmp_path):
    f = _load(textwrap.dedent(NESTED), tmp_path, f"nested{n}{m}")
    x = np.array([0.3, -0.7, 1.1])
    want = numeric_grad(f, (x, n, m), 0)
    np.testing.assert_allclose(s2s.grad(f)(x, n, m), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(x, n, m), want, rtol=1e-6, atol=1e-8)


def test_scalar_loop_gradient(tmp_path):
    f = _load(transform_cost.scalar_loop(500), tmp_path, "scalar_loop")
    assert s2s.grad(f)(0.5) == pytest.approx(numeric_grad(f, (0.5,), 0), rel=1e-6)
