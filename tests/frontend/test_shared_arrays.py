"""In-place updates of arrays another name reads.

NumPy's `y += e` changes the array itself, so every name bound to it (`y = x`, a view
`y = x[1:]`, `for row in X`) sees the change; s2s's transforms treat it as `y = y + e`. Before
this check `y = x; y += 1.0; return np.sum(x * y)` gave 8.0 where NumPy gives 13.0, and gradients
to match. Now such an update raises SharedArrayError when the arrays do share memory (known only
when the code runs): every transform, compiled or not. Scalars (`s = x; s += 1.0` on floats) share
nothing and keep working, and so do updates of copies and of names nothing else reads.

Indexed writes (`y[i] = v`) stay writes into the array in generated code: the primal follows
NumPy; derivatives refuse writes into arrays that may be shared (reverse mode did; forward mode
answered wrongly: `a = b = np.zeros(3); a[0] = x[0]; np.sum(b * x)` had tangent 1.0, not 2.0).
"""
import numpy as np
import pytest

import s2s
from cases.fd import numeric_grad
from s2s.errors import SharedArrayError


def alias_then_add(x):
    y = x
    y += 1.0
    return np.sum(x * y)


def view_then_scale(x):
    y = x[1:]
    y *= 2.0
    return np.sum(x ** 2)


def rows_updated(X):
    for row in X:
        row += 1.0
    return np.sum(X * X)


def chained_targets(x):
    a = b = np.zeros(3)
    a[0] = x[0]
    return np.sum(b * x)


def index_write_through_alias(x):
    y = x
    y[0] = 5.0
    return np.sum(x * x)


def alias_after(x):
    a = np.zeros(3)
    b = a
    a[0] = x[0]
    return np.sum(b * x)


def view_write(x):
    y = x * 1.0
    r = y[1:]
    r[0] = 7.0 * x[0]
    return np.sum(y * x)


SHARED = [alias_then_add, view_then_scale, rows_updated, chained_targets, index_write_through_alias, alias_after,
          view_write]


def _arg(fn):
    return np.array([[1.0, 2.0], [3.0, 4.0]]) if fn is rows_updated else np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("fn", SHARED, ids=lambda f: f.__name__)
@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jvp", "vmap", "jit_grad", "jit"])
def test_update_of_a_shared_array_is_refused(fn, transform):
    x = _arg(fn)
    if transform == "jit":      # the primal alone: refused, or NumPy's own answer
        try:
            got = s2s.jit(fn)(x.copy())
        except SharedArrayError as exc:
            assert "also refers to" in str(exc)
            return
        assert np.allclose(got, fn(x.copy()))
        return
    if transform == "grad":
        run = lambda: s2s.grad(fn)(x.copy())
    elif transform == "value_and_grad":
        run = lambda: s2s.value_and_grad(fn)(x.copy())
    elif transform == "jvp":
        run = lambda: s2s.jvp(fn, (x.copy(),), (np.ones_like(x),))
    elif transform == "vmap":
        batch = np.stack([x, 2 * x])
        try:
            got = s2s.vmap(fn)(batch.copy())
        except SharedArrayError as exc:
            assert "also refers to" in str(exc)
            return
        # or NumPy's own answers: the per-example loop runs the function itself
        np.testing.assert_allclose(got, [fn(b.copy()) for b in batch])
        return
    elif transform == "jit_grad":
        run = lambda: s2s.jit(s2s.grad(fn))(x.copy())
    with pytest.raises((SharedArrayError, s2s.errors.TransformError)) as info:
        run()
    assert any(m in str(info.value) for m in ("also refers to", "may alias", "refers to (a view of)")), str(info.value)


def scalar_accumulator(x):
    s = x
    s += 1.0
    return s * x


def updated_copy(x):
    y = x.copy()
    y += 1.0
    return np.sum(x * y)


def alias_not_read_again(x):
    y = x
    y += 1.0
    return np.sum(y * y)


def rebound_before_update(x):
    y = x
    y = y * 2.0
    y += 1.0
    return np.sum(x * y)


@pytest.mark.parametrize("fn,arg", [(scalar_accumulator, 2.0), (updated_copy, np.array([1.0, 2.0])),
                                    (alias_not_read_again, np.array([1.0, -2.0])),
                                    (rebound_before_update, np.array([0.5, 3.0]))],
                         ids=lambda v: getattr(v, "__name__", "arg"))
def test_updates_numpy_agrees_with_keep_working(fn, arg):
    want_value = fn(np.copy(arg) if isinstance(arg, np.ndarray) else arg)
    want_grad = numeric_grad(fn, (np.copy(arg) if isinstance(arg, np.ndarray) else arg,), 0)
    value, grad = s2s.value_and_grad(fn)(np.copy(arg) if isinstance(arg, np.ndarray) else arg)
    assert np.allclose(value, want_value)
    assert np.allclose(grad, want_grad, rtol=1e-6, atol=1e-8)
    jitted = s2s.jit(s2s.grad(fn))(np.copy(arg) if isinstance(arg, np.ndarray) else arg)
    assert np.allclose(jitted, want_grad, rtol=1e-6, atol=1e-8)
    if isinstance(arg, np.ndarray):
        batch = np.stack([arg, arg + 1.0])
        per_example = s2s.vmap(s2s.grad(fn))(batch.copy())
        loop = np.stack([numeric_grad(fn, (b.copy(),), 0) for b in batch])
        assert np.allclose(per_example, loop, rtol=1e-6, atol=1e-8)


def test_the_error_names_the_update_and_the_line():
    with pytest.raises(SharedArrayError) as info:
        s2s.grad(alias_then_add)(np.array([1.0, 2.0]))
    message = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "`y += 1.0`" in message and "`x`" in message and "np.copy(x)" in message
    assert "test_shared_arrays.py" in message


def chained_scalar(x):
    a = b = x * 2.0
    return a * b


def chained_mixed_targets(x):
    p = q = (x, 2.0 * x)
    r = np.zeros(2)
    r[0] = m = x * 3.0
    return p[0] * q[1] + r[0] * m


@pytest.mark.parametrize("fn,want", [(chained_scalar, 8.0 * 2.0), (chained_mixed_targets, 22.0 * 2.0)],
                         ids=lambda v: getattr(v, "__name__", "want"))
def test_chained_assignment(fn, want):
    """`a = b = v` (found writing the tests above: 'name `t1` is not defined' before: the value
    was normalized once per target, the second time as a user name)."""
    assert s2s.grad(fn)(2.0) == pytest.approx(want)
    assert s2s.jit(s2s.grad(fn))(2.0) == pytest.approx(want)
    assert s2s.grad(fn)(2.0) == pytest.approx(numeric_grad(fn, (2.0,), 0), rel=1e-6)
