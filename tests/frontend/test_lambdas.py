"""Module-level lambdas inlined into a differentiated function get identifier names."""
import os
import sys

import numpy as np


from cases import lambda_cases as L
from cases import paths
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad


def test_lambda_called_from_a_function_in_every_transform():
    x = np.array([0.3, -0.4, 0.8])
    g = s2s.grad(L.loss)(x)
    assert_close(g, np.cos(x * L.C) * L.C, rtol=1e-12, atol=0.0, what="grad")
    assert_close(g, numeric_grad(L.loss, (x,), 0), rtol=1e-6, atol=1e-8, what="grad vs FD")
    np.testing.assert_allclose(s2s.jit(s2s.grad(L.loss))(x), g, rtol=1e-12, atol=0.0)
    _, t = s2s.jvp(L.loss, (x,), (np.ones(3),))
    assert abs(t - np.sum(g)) < 1e-12
    xs = np.stack([x, 2.0 * x])
    np.testing.assert_allclose(s2s.vmap(s2s.grad(L.loss))(xs), np.stack([s2s.grad(L.loss)(r) for r in xs]),
                               rtol=1e-12, atol=0.0)


def test_grad_of_the_lambda_itself():
    assert s2s.grad(L.scale)(2.0, 3.0) == 3.0
    assert s2s.grad(L.scale, argnums=1)(2.0, 3.0) == 2.0


def test_two_lambdas_on_one_line_each_get_their_own_gradient(tmp_path, monkeypatch):
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):            # the second round reads what the first wrote to the disk cache
        assert s2s.grad(L.double)(3.0) == 2.0
        assert s2s.grad(L.cube)(3.0) == 27.0
    assert s2s.jit(s2s.grad(L.cube))(2.0) == 12.0
    inner = L.TRANSFORMS["sin"]()
    assert_close(s2s.grad(inner)(0.7), np.cos(0.7) * 0.7 + np.sin(0.7), rtol=1e-12, atol=0.0)


def test_the_disk_cache_keys_two_lambdas_on_one_line_apart(tmp_path):
    import subprocess
    code = ("from cases import lambda_cases as L; import s2s; "
            "print(s2s.grad(L.double)(3.0), s2s.grad(L.cube)(3.0))")
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=paths.pythonpath())
    outs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for res in outs:
        assert res.returncode == 0, res.stderr
        assert res.stdout.split() == ["2.0", "27.0"]
