"""jit errors that point the user the right way.

1. When one of s2s's own helpers (an adjoint in s2s/rules/*_helpers.py, a runtime helper) is what
   Numba cannot compile, the error names the helper and the user's line and says the user's
   code needs no change (not "use operations Numba supports"); that hint stays for the
   user's own NumPy calls.
2. Numba's errors never escape raw from jit(hessian(f)) or jit(vmap(grad(f))): they are
   TransformErrors at the user's line, like jit(grad(f))'s.
3. Every TransformError from jit names the user's file and line (attributes and message),
   never a generated file in the cache.
4. Reverse mode through np.linalg's namedtuple results (slogdet, eigh, qr, svd): indexed,
   unpacked or by field name.

Every function under test is defined at module level in this file (s2s reads its source).
The helpers named in (1) have no Numba version today; when one gets one, pick another (diag,
cumsum, sort, clip, svd's and einsum's (of a full contraction) adjoints compile now; so does np.diff with append=/prepend=, which
(2) used before np.pad).
"""
from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

numba = pytest.importorskip("numba")


import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad
from s2s.codegen import emit  # noqa: E402

THIS_FILE = os.path.abspath(__file__)


# ---------------------------------------------------------------------------
# Functions under test
# ---------------------------------------------------------------------------

def diag_loss(x):
    return np.sum(np.diag(x) ** 2)              # adjoint: diag_vjp (np.tensordot inside)


def cumsum_loss(x):
    return np.sum(np.cumsum(x) ** 2)            # adjoint: cumsum_vjp (np.reshape of a flipped view)


def sort_loss(x):
    return np.sum(np.sort(x) * np.arange(x.shape[0]))    # adjoint: sort_vjp (a stable argsort)


def clip_loss(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2)   # adjoint: clip_share (an internal error of Numba's typing)


def pad_edge_loss(X):
    return np.sum(np.pad(X, ((1, 0), (0, 0)), mode="edge") ** 2)    # the user's own call: Numba has no np.pad


def pad_loss(x):
    y = np.sin(x)
    return np.sum(np.pad(y * x, 2, mode="reflect") ** 2)   # the user's own call: Numba has no np.pad


def pad_example(w, x):
    h = np.tanh(x * w)
    return np.sum(np.pad(h * w, 1, mode="reflect") ** 2)   # per example, for vmap(grad)


def dict_pad_loss(p, x):
    return np.sum(np.pad(p["w"] * x, 1, mode="reflect") ** 2) + p["b"]     # pytree argument: a generated wrapper calls it


def weighted_average(x):
    # adjoint: average_vjp_a, with no Numba version for 1-d weights along an axis of a matrix
    return np.sum(np.average(x * x, axis=0, weights=np.arange(1.0, 4.0)))


@s2s.custom_vjp
def clipped(x):
    return np.minimum(x, 1.0)


def _clipped_fwd(x):
    return np.minimum(x, 1.0), x


def _clipped_bwd(x, g):
    return (g * (x < 1.0),)


clipped.defvjp(_clipped_fwd, _clipped_bwd)


def custom_loss(x):
    y = np.sin(x) * 2.0
    return np.sum(clipped(y) ** 2)              # no forward-mode rule: hessian's jvp refuses it


def slogdet_index(A):
    return np.linalg.slogdet(A)[1]


def slogdet_unpack(A):
    sign, logdet = np.linalg.slogdet(A)
    return sign * logdet


def slogdet_field(A):
    return np.linalg.slogdet(A).logabsdet


def eigh_index(A):
    w = np.linalg.eigh(A + A.T)[0]
    return np.sum(w ** 2)


def eigh_unpack(A):
    w, v = np.linalg.eigh(A + A.T)
    return np.sum(w * np.arange(3.0)) + np.sum(v[:, 0] ** 2 * np.arange(3.0))


def eigh_field(A):
    return np.sum(np.linalg.eigh(A + A.T).eigenvalues ** 3)


def svd_index(A):
    return np.sum(np.linalg.svd(A)[1] ** 2)


def svd_unpack(A):
    u, s, vt = np.linalg.svd(A)
    return np.sum(s * np.arange(1.0, 4.0))


def svd_field(A):
    return np.sum(np.linalg.svd(A).S)


def qr_index(A):
    return np.sum(np.linalg.qr(A)[1] ** 2)


def qr_unpack(A):
    q, r = np.linalg.qr(A)
    return np.sum(r * np.arange(9.0).reshape(3, 3)) + np.sum(q[:, 0] * np.arange(3.0))


def qr_field(A):
    return np.sum(np.linalg.qr(A).R ** 2)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _line_of(fn, needle):
    """The number of the line of fn's source containing `needle`."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + k for k, ln in enumerate(lines) if needle in ln]
    assert len(hits) == 1, (fn.__name__, needle, hits)
    return hits[0]


def _assert_at_user_line(exc, fn, needle):
    """exc names this file and fn's line with `needle`, in its attributes and its message, and
    no generated file."""
    msg = str(exc)
    assert exc.filename is not None and os.path.samefile(exc.filename, THIS_FILE), exc.filename
    assert exc.lineno == _line_of(fn, needle), (exc.lineno, msg)
    assert msg.startswith(f'File "{exc.filename}", line {exc.lineno}'), msg
    assert exc.source_line and needle in exc.source_line, exc.source_line
    assert emit.cache_dir() not in msg, msg
    assert not re.search(r"_[0-9a-f]{16}\.py", msg), msg     # a generated file (emit.write_module)


X4 = np.array([-0.9, -0.3, 0.4, 1.2])
M34 = np.arange(12.0).reshape(3, 4) / 7.0 - 0.5
A33 = np.eye(3) + 0.1 * np.arange(9.0).reshape(3, 3) / 9.0 + 0.05 * np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0.0]])


# ---------------------------------------------------------------------------
# 1. an s2s helper Numba cannot compile: not the user's fault
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(("fn", "arg", "helper", "needle"), [
    (weighted_average, M34, "average_vjp_a", "np.average("),
], ids=["average_weights"])
def test_helper_failure_names_the_helper_and_the_users_line(fn, arg, helper, needle):
    with pytest.raises(s2s.TransformError) as info:
        s2s.jit(s2s.grad(fn))(arg)
    exc = info.value
    msg = str(exc)
    assert f"s2s has no compiled version of its helper `{helper}` for these argument types" in msg, msg
    assert "your code needs no change" in msg, msg
    assert "use operations Numba supports" not in msg, msg
    assert "fallback=True" in exc.hint and "without jit" in exc.hint, exc.hint
    _assert_at_user_line(exc, fn, needle)


def test_helper_failure_still_falls_back():
    j = s2s.jit(s2s.grad(weighted_average), fallback=True)
    with pytest.warns(UserWarning, match="Numba could not compile"):
        got = j(M34)
    assert_close(got, s2s.grad(weighted_average)(M34), what="jit(grad(weighted_average), fallback=True)")


@pytest.mark.parametrize(("fn", "arg", "needle"), [
    (pad_edge_loss, M34, "np.pad(X"),
    (pad_loss, X4, "np.pad(y * x"),
], ids=["pad_edge", "pad_reflect"])
def test_users_own_numpy_call_keeps_the_numba_hint(fn, arg, needle):
    with pytest.raises(s2s.TransformError) as info:
        s2s.jit(s2s.grad(fn))(arg)
    exc = info.value
    assert "s2s has no compiled version" not in str(exc), str(exc)
    assert "Numba cannot compile" in str(exc) and "nopython" in str(exc)
    assert exc.hint.startswith("use operations Numba supports"), exc.hint
    _assert_at_user_line(exc, fn, needle)


# ---------------------------------------------------------------------------
# 2. no raw Numba errors from jit(hessian(f)) and jit(vmap(grad(f)))
# ---------------------------------------------------------------------------

def _assert_pad_refused_at_user_line(call, fn, what):
    """`call()` raises an s2s TransformError (never a raw Numba error) at fn's np.pad line."""
    try:
        call()
    except s2s.TransformError as exc:
        assert "Numba cannot compile" in str(exc) and "pad" in str(exc), str(exc)
        _assert_at_user_line(exc, fn, "np.pad(")
        return exc
    except Exception as exc:   # noqa: BLE001
        pytest.fail(f"{what} raised {type(exc).__module__}.{type(exc).__name__}: {exc}")
    pytest.fail("Numba compiled np.pad(mode=): pick another op it cannot compile")


def test_jit_hessian_numba_error_is_a_transform_error_at_the_user_line():
    _assert_pad_refused_at_user_line(lambda: s2s.jit(s2s.hessian(pad_loss))(X4), pad_loss,
                                        "jit(hessian(f))")


def test_jit_hessian_of_svd_compiles_and_matches_hessian():
    # (it was refused: svd's tangent helper branched on a run-time string Numba could not type; the
    # branch is decided when s2s reads the helper now, the constant being known)
    assert_close(s2s.jit(s2s.hessian(svd_unpack))(A33), s2s.hessian(svd_unpack)(A33), what="jit(hessian(svd))")


def test_jit_hessian_fallback_still_runs():
    got = s2s.jit(s2s.hessian(pad_loss), fallback=True)(X4)
    assert_close(got, s2s.hessian(pad_loss)(X4), what="jit(hessian, fallback=True)")


def test_jit_vmap_grad_numba_error_is_a_transform_error_at_the_user_line():
    w, xs = np.linspace(0.2, 0.8, 4), np.arange(12.0).reshape(3, 4) / 10.0
    exc = _assert_pad_refused_at_user_line(
        lambda: s2s.jit(s2s.vmap(s2s.grad(pad_example), in_axes=(None, 0)))(w, xs), pad_example,
        "jit(vmap(grad(f)))")
    assert exc.hint.startswith("use operations Numba supports"), exc.hint


# ---------------------------------------------------------------------------
# 3. the user's file and line, never a generated file
# ---------------------------------------------------------------------------

def test_transform_refusal_inside_jit_hessian_names_the_user_line():
    # hessian(f) transforms the generated gradient: its refusal named the generated file
    with pytest.raises(s2s.NoRuleError) as info:
        s2s.jit(s2s.hessian(custom_loss))(X4)
    exc = info.value
    assert "clipped" in str(exc)
    _assert_at_user_line(exc, custom_loss, "clipped(y)")


def test_jit_grad_of_pytree_arguments_names_the_user_line():
    with pytest.raises(s2s.TransformError) as info:
        s2s.jit(s2s.grad(dict_pad_loss))({"w": X4, "b": 1.0}, X4)
    _assert_at_user_line(info.value, dict_pad_loss, "np.pad(")


@pytest.mark.parametrize(("make", "fn", "needle"), [
    (lambda: s2s.jit(s2s.grad(weighted_average))(M34), weighted_average, "np.average("),
    (lambda: s2s.jit(s2s.value_and_grad(weighted_average))(M34), weighted_average, "np.average("),
    (lambda: s2s.jit(s2s.hessian(pad_loss))(X4), pad_loss, "np.pad("),
], ids=["grad", "value_and_grad", "hessian"])
# (jit(vmap(grad)) of svd_unpack compiles now: each example calls svd's compiled cotangent; its Numba
# errors are named at the user's line by test_jit_vmap_grad_numba_error_is_a_transform_error_at_the_user_line)
def test_every_jit_error_names_the_user_file(make, fn, needle):
    with pytest.raises(s2s.TransformError) as info:
        make()
    _assert_at_user_line(info.value, fn, needle)


# ---------------------------------------------------------------------------
# 4. np.linalg's namedtuple results under grad
# ---------------------------------------------------------------------------

def test_slogdet_grad_is_inverse_transpose():
    for fn in (slogdet_index, slogdet_unpack, slogdet_field):
        got = s2s.grad(fn)(A33)
        assert_close(got, np.linalg.inv(A33).T, rtol=1e-10, atol=1e-12, what=f"grad({fn.__name__})")
        assert_close(got, numeric_grad(fn, (A33,), 0), what=f"grad({fn.__name__}) vs finite differences")
        assert_close(s2s.jit(s2s.grad(fn))(A33), got, rtol=1e-12, atol=1e-12, what=f"jit(grad({fn.__name__}))")


@pytest.mark.parametrize("fn", [eigh_index, eigh_unpack, eigh_field, svd_index, svd_unpack, svd_field,
                                qr_index, qr_unpack, qr_field], ids=lambda f: f.__name__)
def test_linalg_result_tuples_under_grad(fn):
    ref = s2s.grad(fn)(A33)
    assert_close(ref, numeric_grad(fn, (A33,), 0), rtol=1e-5, atol=1e-6,
                 what=f"grad({fn.__name__}) vs finite differences")
    # compiled: the cotangent of the tuple result is a tuple (Numba's tuples do not change in place)
    if not fn.__name__.startswith("svd"):        # svd_vjp has no Numba version yet (tests above)
        assert_close(s2s.jit(s2s.grad(fn))(A33), ref, rtol=1e-12, atol=1e-12, what=f"jit(grad({fn.__name__}))")


def test_unpacking_an_array_shape():
    def check(X):
        n, m = X.shape
        return np.sum(X ** 2) * n + m
    # (a nested function: s2s reads it from this file too)
    assert_close(s2s.grad(check)(M34), 2 * M34 * 3, what="grad through `n, m = X.shape`")



def eigh_weighted(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * np.array([0.3, -1.2, 0.7])) + np.sum(np.abs(v[0]) * np.array([0.5, 0.1, -0.4]))


_V = np.arange(9.0).reshape(3, 3) / 9.0


def eigh_grad_along_v(a):
    return np.sum(s2s.grad(eigh_weighted)(a) * _V)


@pytest.mark.parametrize("transform", ["hessian", "grad_of_grad", "jacfwd_of_grad"])
def test_second_derivatives_through_eigh_are_refused_not_wrong(transform):
    """hessian of a function of eigh's eigenvectors was off by 0.3 from finite differences of its
    (correct) gradient once reverse mode accepted eigh's tuple result: now refused."""
    a = np.array([[2.0, 0.3, -0.2], [0.3, 1.0, 0.4], [-0.2, 0.4, -1.5]])
    assert_close(s2s.grad(eigh_weighted)(a), numeric_grad(eigh_weighted, (a,), 0), rtol=1e-6, atol=1e-7)
    build = {"hessian": lambda: s2s.hessian(eigh_weighted),
             "grad_of_grad": lambda: s2s.grad(eigh_grad_along_v),
             "jacfwd_of_grad": lambda: s2s.jacfwd(s2s.grad(eigh_weighted))}[transform]
    with pytest.raises(s2s.NoRuleError, match="eigh_vjp"):
        build()(a)
