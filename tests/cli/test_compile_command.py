"""`s2s compile FILE.py:f --arg-types ...` and `jit(f).compile(*args)`: machine code ahead of a run.

After the command, a new process on the same caches calls jit(grad(f)) on real data and Numba
compiles nothing (its compile events are counted), and the answer is grad's; the command refuses
argument types that do not fit and reports a function Numba cannot compile with exit code 1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

from cases import paths  # noqa: E402

SOURCE = textwrap.dedent("""
    import numpy as np

    def loss(w, X, y, decay=0.01):
        z = np.tanh(X @ w)
        return np.mean((z - y) ** 2) + decay * np.sum(w * w)

    def padded(x):
        return np.sum(np.pad(x, 1, mode="reflect") ** 2)
""")

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core import event
    sys.path.insert(0, {folder!r})
    import model, s2s

    class Count(event.Listener):
        n = 0
        def on_start(self, ev):
            Count.n += 1
        def on_end(self, ev):
            pass
    event.register("numba:compile", Count())
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4)); y = rng.normal(size=30); w = rng.normal(size=4)
    g = s2s.jit(s2s.grad(model.loss), wait=True)(w, X, y)
    print(json.dumps({{"compiles": Count.n, "g": np.asarray(g).tolist(),
                       "expected": np.asarray(s2s.grad(model.loss)(w, X, y)).tolist()}}))
""")


def _env(cache):
    return dict(os.environ, S2S_CACHE_DIR=str(cache), NUMBA_CACHE_DIR=str(cache / "numba"),
                PYTHONPATH=paths.pythonpath(), S2S_QUIET="1")


def _s2s(args, cache, cwd):
    return subprocess.run([sys.executable, "-m", "s2s", *args], cwd=cwd, env=_env(cache),
                          capture_output=True, text=True, timeout=600)


def test_compile_fills_the_caches_for_a_run(tmp_path):
    (tmp_path / "model.py").write_text(SOURCE)
    cache = tmp_path / "cache"
    proc = _s2s(["compile", "model.py:loss", "--of", "grad", "--arg-types", "f8[:],f8[:,:],f8[:]"], cache, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "jit(grad(loss))" in proc.stdout and "array(float64, 2d, C)" in proc.stdout, proc.stdout
    child = subprocess.run([sys.executable, "-c", CHILD.format(folder=str(tmp_path))], env=_env(cache),
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout.strip().splitlines()[-1])
    assert out["compiles"] == 0, f"{out['compiles']} Numba compilations after s2s compile"
    np.testing.assert_allclose(out["g"], out["expected"], rtol=1e-12)


def test_compile_refuses_types_that_do_not_fit_and_reports_numba_failures(tmp_path):
    (tmp_path / "model.py").write_text(SOURCE)
    cache = tmp_path / "cache"
    few = _s2s(["compile", "model.py:loss", "--arg-types", "f8[:]"], cache, tmp_path)
    assert few.returncode == 2 and "loss takes 3 to 4 arguments; 1 type was given" in few.stderr, few.stderr
    bad = _s2s(["compile", "model.py:padded", "--of", "grad", "--arg-types", "f8[:]"], cache, tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "cannot compile jit(grad(padded))" in bad.stderr and "model.py" in bad.stderr


def test_jitted_compile_does_not_run_the_function(tmp_path, capsys):
    import s2s
    def noisy(x):
        print("ran")             # (a side effect generated code keeps: it would print if it ran)
        return np.sum(np.sin(x) ** 2)
    j = s2s.jit(s2s.grad(noisy), wait=False).compile(np.zeros(3))
    assert "ran" not in capsys.readouterr().out
    assert j.ready
    x = np.linspace(0.0, 1.0, 3)
    np.testing.assert_allclose(j(x), 2 * np.sin(x) * np.cos(x), rtol=1e-12)
    assert "ran" in capsys.readouterr().out
