"""jit(grad) reads back, in the backward sweep, the values the forward sweep had.

The compiled code's typed tapes keep each value after its assignment; an argument's value
before its first reassignment was on no tape, and the backward sweep read the newest value
instead (iterpower: 33.408 where 4 a**3 = -19.652).  Each case: jit(grad) == grad to 1e-12 and
grad == central finite differences, for every differentiable argument and argument type.
"""

import numpy as np
import pytest

pytest.importorskip("numba")

import s2s  # noqa: E402
from cases import tape_cases as T
from cases.fd import assert_close, numeric_grad

CASES = [
    (T.iterpower, (-1.7, 2), 0),
    (T.iterpower, (0.9, 3), 0),
    (T.branch_reassigns_argument, (1.3, 1.0), 0),
    (T.branch_reassigns_argument, (1.3, -1.0), 0),
    (T.nested_loops_overwrite_argument, (0.7,), 0),
    (T.nested_loops_overwrite_argument, (np.float64(0.7),), 0),
    (T.array_argument_overwritten, (np.linspace(-1.0, 1.0, 5), 3), 0),
    (T.second_argument_overwritten, (np.linspace(0.1, 0.9, 4), np.linspace(-0.5, 0.5, 4)), 1),
    (T.second_argument_overwritten, (np.linspace(0.1, 0.9, 4), np.linspace(-0.5, 0.5, 4)), 0),
    (T.while_overwrites_argument, (1.2,), 0),
    (T.break_after_overwrite, (1.0,), 0),
    (T.argument_overwritten_before_and_in_loop, (0.4,), 0),
    (T.self_assignment, (np.array([0.4, -0.7]), 1.5), 0),
    (T.argument_reassigned_twice, (0.3, 0.5), 1),
    (T.argument_reassigned_twice, (np.array([0.3, 0.1]), np.array([0.5, -0.2])), 1),
    (T.scalar_argument_reassigned_in_loop, (0.3,), 0),
]
IDS = [f"{fn.__name__}-{k}" for k, (fn, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("fn, args, argnum", CASES, ids=IDS)
def test_jit_grad_equals_grad_and_finite_differences(fn, args, argnum):
    g = s2s.grad(fn, argnums=argnum)(*args)
    assert_close(g, numeric_grad(fn, args, argnum), rtol=1e-6, atol=1e-8, what=f"grad({fn.__name__})")
    jg = s2s.jit(s2s.grad(fn, argnums=argnum))(*args)
    np.testing.assert_allclose(jg, g, rtol=1e-12, atol=0.0, err_msg=f"jit(grad({fn.__name__}))")


@pytest.mark.parametrize("fn, args, argnum", CASES[:4], ids=IDS[:4])
def test_jit_value_and_grad_equals_value_and_grad(fn, args, argnum):
    v, g = s2s.value_and_grad(fn, argnums=argnum)(*args)
    jv, jg = s2s.jit(s2s.value_and_grad(fn, argnums=argnum))(*args)
    np.testing.assert_allclose(jv, fn(*args), rtol=1e-12, atol=0.0)
    np.testing.assert_allclose(jv, v, rtol=1e-12, atol=0.0)
    np.testing.assert_allclose(jg, g, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("fn, x", [(T.nested_loops_overwrite_argument, 0.7), (T.iterpower, -1.7),
                                   (T.while_overwrites_argument, 1.2)])
def test_jit_grad_of_a_zero_d_array_argument_that_is_reassigned(fn, x):
    """A 0-d array argument reassigned to a number has two types for Numba (it failed to compile:
    `Cannot unify array(float64, 0d, C) and float64`); jit computes with it as a number, as the
    generated Python does (np.float64 results)."""
    args = (np.array(x), 2) if fn is T.iterpower else (np.array(x),)
    g = s2s.grad(fn)(*args)
    jitted = s2s.jit(s2s.grad(fn))
    for _ in range(2):        # the second call takes the remembered path
        jg = jitted(*args)
        np.testing.assert_allclose(jg, g, rtol=1e-12, atol=0.0)
        assert np.ndim(jg) == 0
