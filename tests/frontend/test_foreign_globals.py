"""Globals and closure values that are not plain NumPy arrays.

An np.matrix (or masked array) read from a global, a closure cell or a tuple global is refused at
the line that reads it, naming it (its `*` is a matrix product: computing with it as an array gave
wrong gradients, different ones under jit).  A scipy.sparse matrix or array read from a global or
closure multiplies dense arrays (`A @ x`, `x @ A`, `A.dot(x)`, through a helper): grad, vmap,
jvp and hessian agree with finite differences; any other use of it, a sparse argument, and jit of
such a product are refused with s2s errors at the user's line, never NumPy's errors from inside
generated code.
"""
import os
import sys
import warnings

import numpy as np
import pytest

import s2s
from s2s.errors import ArgumentError, S2SError, TransformError

from cases.fd import numeric_grad

sp = pytest.importorskip("scipy.sparse")

HERE = os.path.abspath(__file__)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)     # (np.matrix is deprecated)
    G = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    PAIR = (np.matrix([[1.0, 2.0], [3.0, 4.0]]), 1.0)
MASKED = np.ma.masked_array([1.0, 2.0], mask=[False, True])
XM = np.array([[0.5], [1.5]])


def matrix_global(x):
    return np.sum(G * x)


def matrix_in_tuple(x):
    return np.sum(PAIR[0] * x)


def masked_global(x):
    return np.sum(MASKED * x)


def _make_closure():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        H = np.asmatrix(np.array([[1.0, 2.0], [3.0, 4.0]]))

    def closure(x):
        return np.sum(H * x)
    return closure


def _line_of(text):
    with open(HERE) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


@pytest.mark.parametrize("fn, name, line", [
    (matrix_global, "G", "return np.sum(G * x)"),
    (matrix_in_tuple, "PAIR", "return np.sum(PAIR[0] * x)"),
    (masked_global, "MASKED", "return np.sum(MASKED * x)"),
    (_make_closure(), "H", "return np.sum(H * x)"),
])
def test_a_matrix_global_or_closure_value_is_refused_at_its_line(fn, name, line):
    for transform in (s2s.grad(fn), s2s.jit(s2s.grad(fn)), s2s.vmap(fn)):
        with pytest.raises(TransformError) as info:
            transform(XM if transform.__class__.__name__ != "Batched" else np.stack([XM, XM]))
        err = info.value
        assert f"`{name}`" in str(err) and "np.asarray" in str(err), str(err)
        assert err.filename == HERE and err.lineno == _line_of(line), (err.filename, err.lineno)


A = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
B = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0], [4.0, 0.0]]))
X = np.array([0.5, 1.5, -1.0])
XS = np.stack([X, 2 * X, -X])


def sparse_left(x):
    return np.sum(np.sin(A @ x))


def sparse_right(x):
    y = x @ B
    return np.sum(y * y)


def sparse_method_transposed(x):
    return np.sum(np.tanh(A.T.dot(np.sin(A @ x))))


def _product(M, x):
    return M @ x


def sparse_through_helper(x):
    return np.sum(np.cos(_product(A, x)) * x[:2])


def _sparse_closure():
    C = sp.csr_array(np.array([[0.0, 1.0, 1.0], [2.0, 0.0, 0.0]]))
    return lambda x: np.sum(np.exp(0.1 * (C @ x)))


@pytest.mark.parametrize("fn", [sparse_left, sparse_right, sparse_method_transposed, sparse_through_helper,
                                _sparse_closure()], ids=lambda f: f.__name__)
def test_a_sparse_matrix_times_a_dense_array_is_differentiated(fn):
    want = numeric_grad(fn, (X,), 0)
    np.testing.assert_allclose(s2s.grad(fn)(X), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(s2s.vmap(fn)(XS), [fn(x) for x in XS], rtol=1e-12)
    np.testing.assert_allclose(s2s.vmap(s2s.grad(fn))(XS), [numeric_grad(fn, (x,), 0) for x in XS],
                               rtol=1e-6, atol=1e-8)
    v = np.array([0.3, -0.2, 0.7])
    _, tangent = s2s.jvp(fn, (X,), (v,))
    np.testing.assert_allclose(tangent, want @ v, rtol=1e-6, atol=1e-9)


def test_the_hessian_through_a_sparse_product():
    dense = A.toarray()
    want = dense.T @ np.diag(-np.sin(dense @ X)) @ dense
    np.testing.assert_allclose(s2s.hessian(sparse_left)(X), want, rtol=1e-10, atol=1e-12)


def sparse_elementwise(x):
    return np.sum(A * x)


def sparse_np_dot(x):
    return np.sum(np.dot(A, x))


def sparse_sum(x):
    return np.sum(x) * np.sum(A)


@pytest.mark.parametrize("fn, line", [
    (sparse_elementwise, "return np.sum(A * x)"),
    (sparse_np_dot, "return np.sum(np.dot(A, x))"),
    (sparse_sum, "return np.sum(x) * np.sum(A)"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_other_uses_of_a_sparse_matrix_are_refused_at_their_line(fn, line):
    with pytest.raises(TransformError) as info:
        s2s.grad(fn)(X)
    err = info.value
    assert "scipy.sparse" in str(err) and "A @ x" in str(err)
    assert err.filename == HERE and err.lineno == _line_of(line), (err.filename, err.lineno)


def test_jit_of_a_sparse_product_is_refused_at_the_users_line_or_falls_back():
    with pytest.raises(TransformError) as info:
        s2s.jit(s2s.grad(sparse_left))(X)
    err = info.value
    assert "scipy.sparse" in str(err) and "fallback=True" in str(err)
    assert err.filename == HERE and err.lineno == _line_of("return np.sum(np.sin(A @ x))")
    with pytest.warns(UserWarning, match="running the generated Python"):
        got = s2s.jit(s2s.grad(sparse_left), fallback=True)(X)
    np.testing.assert_allclose(got, numeric_grad(sparse_left, (X,), 0), rtol=1e-7)


def sparse_argument(M, x):
    return np.sum(np.sin(M @ x))


def test_a_sparse_argument_is_refused_with_an_s2s_error():
    for call in (lambda: s2s.grad(sparse_argument, argnums=1)(A, X),
                 lambda: s2s.grad(sparse_argument)(A, X),
                 lambda: s2s.vmap(sparse_argument, in_axes=(None, 0))(A, XS),
                 lambda: s2s.jvp(sparse_argument, (A, X), (A, X))):
        with pytest.raises(S2SError) as info:
            call()
        assert isinstance(info.value, ArgumentError) and "sparse" in str(info.value), str(info.value)
    # through a closure, as the error says: differentiated
    loss = lambda x: sparse_argument(A, x)  # noqa: E731
    np.testing.assert_allclose(s2s.grad(loss)(X), numeric_grad(loss, (X,), 0), rtol=1e-7)
    assert "scipy" in sys.modules
