"""Ops defined by other ops (s2s/ops/composite/rules.py): np.append,
np.rollaxis, np.vsplit/hsplit/dsplit, np.nan_to_num, np.select, np.linalg.pinv, np.gradient (1-d), np.fft.fftshift/ifftshift, builtin sum and
pow, and the `operator` module's arithmetic.  Before, each was a NoRuleError.  Every case:
grad vs finite differences, jvp vs grad, vmap(grad) vs a loop; a few under jit.  And unpacking
a value whose length s2s does not see being built (`a, b = np.split(x, 2)`, `r0, r1 = X`):
checked when the code runs, as Python checks it."""
import operator

import numpy as np
import pytest

import s2s
from cases.fd import assert_close, numeric_grad

rng = np.random.default_rng(3)
M = rng.normal(size=(2, 3))
V = rng.normal(size=4)
W34 = rng.normal(size=(3, 4))


def append_flat(x):
    return np.sum(np.append(x, 2.0 * x) ** 2)


def append_along_rows(x):
    return np.sum(np.sin(np.append(x, x * x, axis=0)))


def append_a_number(x):
    return np.sum(np.append(x, 1.5) * np.arange(5.0))


def rollaxis_last_to_front(x):
    return np.sum(np.rollaxis(x, 2, 0) ** 3 * np.arange(4.0)[:, None, None])


def vsplit_halves(x):
    top, bottom = np.vsplit(x, 2)
    return np.sum(top * np.sin(bottom))


def hsplit_of_a_matrix(x):
    return np.sum(np.hsplit(x, 2)[1] ** 2 - np.hsplit(x, 2)[0])


def dsplit_pieces(x):
    parts = np.dsplit(x, 2)
    return np.sum(parts[0] * parts[1])


def nan_to_num_of_a_clean_array(x):
    return np.sum(np.nan_to_num(x * x) * np.cos(x))


def fftshift_weighted(x):
    return np.sum(np.fft.fftshift(x) * np.arange(x.size).reshape(x.shape))


def ifftshift_one_axis(x):
    return np.sum(np.fft.ifftshift(x, axes=1) ** 2 * M)


def select_with_a_default(x):
    return np.sum(np.select([x > 0.5, x < -0.5], [x ** 2, np.sin(x)], default=x * 3.0))


def select_of_one_condition(x):
    return np.sum(np.select([x > 0.0], [x * x]))


def pinv_weighted(a):
    return np.sum(np.linalg.pinv(a) * W34)


def gradient_of_a_vector(x):
    return np.sum(np.gradient(x) ** 2 * np.arange(5.0)) + np.sum(np.gradient(x, 0.5) ** 3)


X_COORDS = np.array([0.0, 0.3, 0.5, 1.2, 1.4])
X3_COORDS = np.array([1.0, 1.5, 2.5])


def gradient_at_uneven_points(x):
    return np.sum(np.sin(np.gradient(x, X_COORDS)))


def gradient_at_three_uneven_points(x):
    return np.sum(np.gradient(x, X3_COORDS) ** 2)


def builtin_sum_of_a_vector(x):
    return sum(x) ** 2


def builtin_sum_of_rows_with_start(x):
    return np.sum(np.tanh(sum(x, 1.0)))


def builtin_sum_of_a_list(x):
    return np.sum(sum([x, 2.0 * x, x * x]))


def builtin_pow(x):
    return np.sum(pow(x, 3) + pow(2.0, x))


def operator_arithmetic(x):
    y = operator.mul(operator.add(x, 1.0), operator.neg(x))
    return np.sum(operator.truediv(y, 2.0) + operator.pow(x, 2) - operator.sub(x, 0.5))


CASES = [
    (append_flat, V), (append_along_rows, M), (append_a_number, V), (rollaxis_last_to_front, rng.normal(size=(2, 3, 4))),
    (vsplit_halves, rng.normal(size=(4, 3))), (hsplit_of_a_matrix, rng.normal(size=(3, 4))),
    (dsplit_pieces, rng.normal(size=(2, 2, 4))), (nan_to_num_of_a_clean_array, V),
    (fftshift_weighted, rng.normal(size=(3, 4))), (ifftshift_one_axis, M),
    (select_with_a_default, np.array([-1.0, -0.2, 0.3, 0.9, 2.0])), (select_of_one_condition, V),
    (gradient_of_a_vector, rng.normal(size=5)), (gradient_at_uneven_points, rng.normal(size=5)),
    (builtin_sum_of_a_vector, V), (builtin_sum_of_rows_with_start, M), (builtin_sum_of_a_list, V),
    (builtin_pow, np.abs(V) + 0.5), (operator_arithmetic, V),
]
IDS = [fn.__name__ for fn, _ in CASES]


@pytest.mark.parametrize("fn, x", CASES, ids=IDS)
def test_grad_matches_finite_differences(fn, x):
    g = s2s.grad(fn)(x)
    assert_close(g, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-8, what=fn.__name__)


@pytest.mark.parametrize("fn, x", CASES, ids=IDS)
def test_jvp_agrees_with_grad_and_the_value(fn, x):
    t = rng.normal(size=np.shape(x))
    value, tangent = s2s.jvp(fn, (x,), (t,))
    assert_close(value, fn(x), rtol=1e-12, atol=1e-12)
    assert_close(tangent, np.sum(s2s.grad(fn)(x) * t), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fn, x", CASES, ids=IDS)
def test_vmap_of_grad_matches_a_loop(fn, x):
    batch = np.stack([x, 0.5 * x + 0.1, -x])
    got = s2s.vmap(s2s.grad(fn))(batch)
    assert_close(got, np.stack([s2s.grad(fn)(b) for b in batch]), rtol=1e-12, atol=1e-12)


JIT_CASES = [CASES[0], CASES[3], CASES[7], CASES[10], CASES[16]]


@pytest.mark.parametrize("fn, x", JIT_CASES, ids=[fn.__name__ for fn, _ in JIT_CASES])
def test_jit_grad_equals_grad(fn, x):
    assert_close(s2s.jit(s2s.grad(fn))(x), s2s.grad(fn)(x), rtol=1e-12, atol=1e-12)


def test_regression_gradient_at_coordinates_is_numpys():
    """np.gradient(x, coords) with coords a 1-d array of the points (uneven steps) was computed as if
    the array were one step: three points gave a value of 3.72 for NumPy's 6.60, and wrong
    gradients, silently (found by the library-calls survey)."""
    x = np.array([-0.84733513, 0.10066402, 0.90765091])
    for fn, arg in ((gradient_at_three_uneven_points, x), (gradient_at_uneven_points, rng.normal(size=5))):
        assert_close(s2s.value_and_grad(fn)(arg)[0], fn(arg), rtol=1e-12, atol=1e-12)
        assert_close(s2s.jit(fn)(arg), fn(arg), rtol=1e-12, atol=1e-12)
        assert_close(s2s.grad(fn)(arg), numeric_grad(fn, (arg,), 0), rtol=1e-6, atol=1e-8, what=fn.__name__)
        assert_close(s2s.jit(s2s.grad(fn))(arg), s2s.grad(fn)(arg), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        s2s.grad(gradient_at_uneven_points)(np.ones(4))      # (coordinates of another length, as NumPy)


def nan_to_num_of_inf_and_nan(x):
    return np.sum(np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0) * np.arange(4.0))


def test_nan_to_num_replaced_entries_are_constants():
    x = np.array([0.5, np.nan, np.inf, -np.inf])
    assert nan_to_num_of_inf_and_nan(x) == 0.0 + 1.0 + 4.0 - 6.0
    assert_close(s2s.grad(nan_to_num_of_inf_and_nan)(x), np.array([0.0, 0.0, 0.0, 0.0]), rtol=0, atol=0)
    y = np.array([0.5, -1.0, 2.0, 3.0])
    assert_close(s2s.grad(nan_to_num_of_inf_and_nan)(y), np.arange(4.0), rtol=0, atol=0)


def rows_unpacked(x):
    r0, r1, r2 = x
    return np.sum(r0 * r1 + np.sin(r2))


def split_unpacked(x):
    a, b = np.split(x, 2)
    return np.sum(a * b)


def split_unpacked_into_too_few_names(x):
    a, b = np.split(x, 3)
    return np.sum(a * b)


@pytest.mark.parametrize("fn, x", [(rows_unpacked, rng.normal(size=(3, 2))), (split_unpacked, V)],
                         ids=["rows", "split"])
def test_unpacking_a_value_of_unseen_length(fn, x):
    g = s2s.grad(fn)(x)
    assert_close(g, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-8)
    batch = np.stack([x, x + 1.0])
    assert_close(s2s.vmap(s2s.grad(fn))(batch), np.stack([s2s.grad(fn)(b) for b in batch]), rtol=1e-12, atol=1e-12)


def test_unpacking_into_the_wrong_number_of_names_fails_as_python_does():
    x = rng.normal(size=6)
    with pytest.raises(ValueError):
        split_unpacked_into_too_few_names(x)
    with pytest.raises(ValueError, match="unpack"):
        s2s.grad(split_unpacked_into_too_few_names)(x)


def test_pinv_matches_numpy_and_finite_differences():
    for a in (rng.normal(size=(4, 3)), rng.normal(size=(3, 4)).T.copy()):
        from s2s.ops.composite.rules import pinv
        assert_close(pinv(a), np.linalg.pinv(a), rtol=1e-12, atol=1e-14)
        g = s2s.grad(pinv_weighted)(a)
        assert_close(g, numeric_grad(pinv_weighted, (a,), 0), rtol=1e-6, atol=1e-8)
        t = rng.normal(size=a.shape)
        assert_close(s2s.jvp(pinv_weighted, (a,), (t,))[1], np.sum(g * t), rtol=1e-9, atol=1e-9)


def test_gradient_of_a_matrix_is_refused():
    with pytest.raises(ValueError, match="rank 1 only"):
        s2s.grad(gradient_of_a_vector)(np.ones((2, 5)))
