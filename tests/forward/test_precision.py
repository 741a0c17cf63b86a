"""float32 inputs: every transform (and jit of it) computes in float64 and gives float32 results,
the float64 answer rounded once (s2s/precision.py), so jit and Python paths agree exactly.
Mixed with float64 inputs, results are float64 (NumPy's promotion)."""
import numpy as np
import pytest

import s2s


def loss(x, y):
    z = np.sin(x) * y
    for i in range(2):
        z = z * x + 1.0
    return np.sum(z ** 2)


X = np.linspace(-0.7, 0.9, 5)
X32 = X.astype(np.float32)
Y = 0.75


def smooth(x, y):
    return np.sum(np.tanh(x * y) ** 2) + y * np.sum(x)


def _exact(fn, *args):
    """fn at the float32 point, computed in float64, rounded to float32."""
    out = fn(*[a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args])
    return np.asarray(out).astype(np.float32)


@pytest.mark.parametrize("jit", [False, True], ids=["python", "jit"])
def test_grad_float32_in_float32_out(jit):
    g = s2s.grad(loss)
    got = (s2s.jit(g) if jit else g)(X32, Y)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, _exact(g, X32, Y))


@pytest.mark.parametrize("jit", [False, True], ids=["python", "jit"])
def test_value_and_grad_float32(jit):
    vg = s2s.value_and_grad(loss)
    value, g = (s2s.jit(vg) if jit else vg)(X32, Y)
    assert np.asarray(value).dtype == np.float32 and g.dtype == np.float32
    np.testing.assert_array_equal(value, _exact(loss, X32, Y))


@pytest.mark.parametrize("jit", [False, True], ids=["python", "jit"])
def test_vmap_grad_float32(jit):
    xs = np.stack([X32, X32 * np.float32(0.5)])
    v = s2s.vmap(s2s.grad(smooth), in_axes=(0, None))
    got = (s2s.jit(v) if jit else v)(xs, Y)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.stack([_exact(s2s.grad(smooth), x, Y) for x in xs]), rtol=2.5e-7)


def test_jvp_vjp_hessian_float32():
    out, tan = s2s.jvp(loss, (X32, Y), (np.ones(5, np.float32), 0.0))
    assert np.asarray(out).dtype == np.float32 and np.asarray(tan).dtype == np.float32
    value, back = s2s.vjp(loss, X32, Y)
    cts = back(1.0)
    assert cts[0].dtype == np.float32
    np.testing.assert_array_equal(cts[0], _exact(s2s.grad(loss), X32, Y))
    h = s2s.hessian(loss)(X32, Y)
    assert h.dtype == np.float32
    np.testing.assert_array_equal(s2s.jit(s2s.hessian(loss))(X32, Y), h)


def test_float64_wins_when_mixed():
    g = s2s.grad(loss, argnums=(0, 1))(X32, np.float64(Y))
    assert g[0].dtype == np.float64
