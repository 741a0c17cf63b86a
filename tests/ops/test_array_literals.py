"""np.array of nested list literals: derivatives flow into every element (they were silently zero).

The adjoint of `np.array([[a, b], [c, d]])` distributed its cotangent over one level of the
literal only, and the tangent took only names at the first level: grad, jvp and hessian of a
function building a matrix from differentiated entries returned zeros.  Each case against
finite differences, closed forms, and across grad / jit(grad) / jvp / hessian / vmap(grad).
"""

import numpy as np
import pytest


from cases import array_literal_cases as A
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad

P = np.array([2.0, 0.3, 0.7])
CASES = [(A.rotation_like, P), (A.scalar_matrix, 3.0), (A.nested_three_deep, P)]
IDS = [fn.__name__ for fn, _ in CASES]


def test_closed_forms():
    p0, p1 = P[0], P[1]
    want = np.array([4 * p0 + 6 * p0 * p1 ** 2, 2 * p1 + 6 * p0 ** 2 * p1 + 32 * p1, 0.0])
    np.testing.assert_allclose(s2s.grad(A.rotation_like)(P), want, rtol=1e-12)
    assert s2s.grad(A.scalar_matrix)(3.0) == pytest.approx(9.0, rel=1e-12)     # 1 + 2 + 2x
    np.testing.assert_allclose(s2s.hessian(A.rotation_like)(P)[:2, :2],
                               [[4 + 6 * p1 ** 2, 12 * p0 * p1], [12 * p0 * p1, 2 + 6 * p0 ** 2 + 32]], rtol=1e-12)


@pytest.mark.parametrize("fn, x", CASES, ids=IDS)
def test_grad_and_jvp_match_finite_differences(fn, x):
    fd = numeric_grad(fn, (x,), 0)
    assert_close(s2s.grad(fn)(x), fd, rtol=1e-6, atol=1e-8, what=f"grad({fn.__name__})")
    t = np.linspace(0.5, 1.5, np.size(x)).reshape(np.shape(x)) if np.ndim(x) else 0.7
    _, tangent = s2s.jvp(fn, (x,), (t,))
    assert tangent == pytest.approx(float(np.sum(fd * t)), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("fn, x", CASES, ids=IDS)
def test_jit_grad_equals_grad(fn, x):
    np.testing.assert_allclose(s2s.jit(s2s.grad(fn))(x), s2s.grad(fn)(x), rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("fn, x", [c for c in CASES if np.ndim(c[1])], ids=[i for c, i in zip(CASES, IDS) if np.ndim(c[1])])
def test_hessian_and_vmap_grad(fn, x):
    g = s2s.grad(fn)
    h_fd = np.stack([numeric_grad(lambda y, k=k: g(y)[k], (x,), 0) for k in range(x.size)])
    assert_close(s2s.hessian(fn)(x), h_fd, rtol=1e-5, atol=1e-6, what=f"hessian({fn.__name__})")
    xs = np.stack([x, 0.5 * x, x + 0.25])
    np.testing.assert_allclose(s2s.vmap(g)(xs), np.stack([g(r) for r in xs]), rtol=1e-12, atol=1e-14)
