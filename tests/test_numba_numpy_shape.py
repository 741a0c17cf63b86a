"""Numba stand-ins of the shape / joining / reordering / indexing family (s2s/backends/numba_numpy/
shape.py) against NumPy: values, shapes and dtypes for every form they accept; the adjoint helpers
they give a Numba version (s2s.ophelpers) against the plain helpers; and the op cases they make
compile, under s2s.jit and s2s.jit(s2s.grad)."""
from __future__ import annotations

import os
import sys
import warnings

import numba
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import op_cases  # noqa: E402
import s2s  # noqa: E402
from s2s import ophelpers as oh  # noqa: E402
from s2s import runtime as rt  # noqa: E402
from s2s.backends import numba_cpu  # noqa: E402,F401 - registers the overloads
from s2s.backends.numba_numpy import numba_module  # noqa: E402

nnp = numba_module(np)          # numpy as compiled code sees it

RNG = np.random.default_rng(11)
M = RNG.standard_normal((3, 4))
X3 = RNG.standard_normal((2, 3, 4))
V = RNG.standard_normal(5)
MI = RNG.integers(-5, 5, (3, 4))
VIEWS = {"C": M, "F": np.asfortranarray(M), "T": RNG.standard_normal((4, 3)).T,
         "strided": RNG.standard_normal((3, 8))[:, ::2]}


def check(got, exp, rtol=1e-12):
    if isinstance(exp, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(exp)
        for g, e in zip(got, exp):
            check(g, e, rtol)
        return
    g, e = np.asarray(got), np.asarray(exp)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    if g.dtype.kind in "fc":
        np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-14, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, e)


def compiled(src: str, **glb):
    ns = {"np": nnp, **glb}
    exec(src, ns)
    return numba.njit(ns["f"])


def reference(src: str, **glb):
    ns = {"np": np, **glb}
    exec(src, ns)
    return ns["f"]


def both(src, *argsets, **glb):
    """f of src (numpy as compiled code sees it) on each argument tuple, against NumPy's f."""
    fn = compiled(src, **glb)
    ref = reference(src, **glb)
    for args in argsets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            check(fn(*args), ref(*args))


def helpers(src, *argsets, **glb):
    """f of src calling s2s.ophelpers / s2s.runtime helpers, compiled (their Numba versions) vs plain."""
    ns_c = {"np": nnp, "oh": oh, "rt": rt, **glb}
    exec(src, ns_c)
    fn = numba.njit(ns_c["f"])
    ns_p = {"np": np, "oh": oh, "rt": rt, **glb}
    exec(src, ns_p)
    for args in argsets:
        check(fn(*args), ns_p["f"](*args))


def views(*names):
    return [(VIEWS[n],) for n in (names or VIEWS)]


# ----- reshape / squeeze / expand_dims / atleast ------------------------------------------------
def test_reshape():
    both("""
def f(x):
    return (np.reshape(x, (4, 3)), np.reshape(x, (12,), order="F"), np.reshape(x, (-1, 2), order="F"),
            np.reshape(x, 12), np.reshape(x, (2, -1, 3), order="A"), np.reshape(x, (6, 2), order="C"))
""", *views())
    both("def f(s):\n    return np.reshape(s, (1, 1)), np.reshape(s, (1,), order='F')\n", (2.5,), (np.array(1.5),))


def test_squeeze_expand_dims():
    both("""
def f(x):
    e = np.expand_dims(x, 1)
    return (e, np.squeeze(e, axis=1), np.squeeze(e, 1), np.expand_dims(x, (0, 3)), np.expand_dims(x, -1),
            np.squeeze(np.expand_dims(x, (0, 3)), (0, -1)), np.expand_dims(x, (-1, 0)))
""", *views("C", "T", "strided"))
    with pytest.raises(ValueError):
        compiled("def f(x):\n    return np.squeeze(x, 0)\n")(M)
    with pytest.raises(numba.TypingError, match="without axis"):
        compiled("def f(x):\n    return np.squeeze(x)\n")(M)


def test_atleast():
    src = """
def f(s, v, m):
    return (np.atleast_1d(s), np.atleast_2d(s), np.atleast_3d(s), np.atleast_1d(v), np.atleast_2d(v),
            np.atleast_3d(v), np.atleast_2d(m), np.atleast_3d(m), np.atleast_1d(m), np.atleast_1d(v, m))
"""
    both(src, (1.5, V, M), (np.array(2.0), V[::2], M.T), (3, np.arange(3), MI))


# ----- tile / repeat ------------------------------------------------------------------------------
def test_tile():
    both("""
def f(x, v, s):
    return (np.tile(x, (2, 2)), np.tile(v, 3), np.tile(v, (3, 2)), np.tile(x, (2, 1, 3)), np.tile(x, 2),
            np.tile(s, 3), np.tile(x, ()), np.tile(v, (0, 2)))
""", (M, V, 2.0), (M.T, V[::2], 1), (MI, np.arange(3), True))


def test_repeat():
    reps = np.array([1, 0, 2, 3])
    both("""
def f(x, reps):
    return (np.repeat(x, 2, axis=1), np.repeat(x, 2), np.repeat(x, reps, axis=1), np.repeat(x[0], reps),
            np.repeat(x, reps[:3], axis=0), np.repeat(x, np.array([2]), axis=-1), np.repeat(3.0, 2))
""", (M, reps), (VIEWS["strided"], reps), (MI, reps))
    with pytest.raises(ValueError):
        compiled("def f(x):\n    return np.repeat(x, np.array([1, 2]), axis=1)\n")(M)


# ----- joining ------------------------------------------------------------------------------------
def test_concatenate():
    b = RNG.standard_normal((2, 4))
    both("""
def f(a, b, v):
    return (np.concatenate([a, b], axis=0), np.concatenate((a, a * 2.0), axis=1), np.concatenate([v, a[0]]),
            np.concatenate([a, b], axis=None), np.concatenate((a, b, a), axis=-2), np.concatenate((v, a), axis=None),
            np.concatenate([a.T, a.T], axis=1), np.concatenate((a, b.astype(np.int64))), np.concatenate([a]))
""", (M, b, RNG.standard_normal(4)), (VIEWS["F"], b[:, ::-1], V[:4]))
    with pytest.raises(ValueError):
        compiled("def f(a, b):\n    return np.concatenate([a, b], axis=1)\n")(M, b)


def test_stack_family():
    b = RNG.standard_normal((3, 4))
    v = RNG.standard_normal(4)
    both("""
def f(a, b, v, c):
    return (np.stack([a, b]), np.stack((a, b, a), axis=-1), np.stack([v, v], axis=1), np.stack((1.0, 2.0)),
            np.hstack([a, b]), np.hstack((v, v)), np.hstack((v, 2.0)), np.vstack([a, v]), np.vstack((v, v)),
            np.vstack([a, b]), np.column_stack([a[:, 0], c]), np.column_stack((v, v)), np.dstack([a, b]),
            np.dstack((v, v)), np.array([v, v * 2.0, v]), np.array((a, b)), np.array([1.0, 2.0]), np.array(v))
""", (M, b, v, RNG.standard_normal((3, 2))), (VIEWS["T"], b.T.copy().T, v[::-1], RNG.standard_normal((3, 2))))
    with pytest.raises(ValueError):
        compiled("def f(a, b):\n    return np.stack([a, b])\n")(M, M.T)


# ----- flip / roll / rot90 ------------------------------------------------------------------------
def test_flip_roll_rot90():
    both("""
def f(x, k, ax):
    return (np.flip(x), np.flip(x, 1), np.flip(x, (0, 2)), np.flip(x, -1), np.flip(x, ax),
            np.roll(x, 1), np.roll(x, -2, axis=1), np.roll(x, (1, 2), axis=(0, 1)), np.roll(x, 7, axis=(0, 2)),
            np.roll(x, (1, -1), axis=1), np.roll(x, (1, 5)), np.roll(x, k, ax),
            np.rot90(x), np.rot90(x, 2), np.rot90(x, -1, axes=(1, 0)), np.rot90(x, k, (2, 0)), np.rot90(x, 3, (1, 2)))
""", (X3, 1, 0), (X3.transpose(2, 0, 1), -3, 2), (X3[:, ::-1, ::2], 6, -1))
    both("def f(x):\n    return np.flip(x), np.roll(x, 2), np.flip(x, 0)\n", (V,), (np.arange(4),))


def test_negated():
    helpers("def f(a, b):\n    return oh.negated(a), oh.negated((a, b)), oh.negated((1, 2))\n", (1, -2))


# ----- pad ---------------------------------------------------------------------------------------
PAD_MODES = ["constant", "edge", "reflect", "symmetric", "wrap"]


@pytest.mark.parametrize("mode", PAD_MODES)
def test_pad(mode):
    src = f"""
def f(x, w):
    return (np.pad(x, 1, mode="{mode}"), np.pad(x, ((0, 2), (1, 0)), mode="{mode}"), np.pad(x, (2, 3), mode="{mode}"),
            np.pad(x, ((2,), (1,)), mode="{mode}"), np.pad(x, ((1, 7),), mode="{mode}"), np.pad(x, w, mode="{mode}"),
            np.pad(x, ((0, 0), (9, 5)), mode="{mode}"))
"""
    both(src, (M, 2), (VIEWS["strided"], 0), (MI, 3), (M[:1], 1))


def test_pad_constant_values():
    both("""
def f(x, c):
    return np.pad(x, ((1, 1), (0, 0)), constant_values=c), np.pad(x, 2), np.pad(x, 1, "constant", constant_values=2)
""", (M, 0.5), (MI, 0.7), (V, -1.5))


@pytest.mark.parametrize("mode", PAD_MODES)
def test_pad_vjp(mode):
    g1 = RNG.standard_normal((5, 6))
    g2 = RNG.standard_normal((13, 9))
    helpers(f"""
def f(g1, g2, x):
    return (oh.pad_vjp(g1, x, 1, "{mode}"), oh.pad_vjp(g1, x, ((2, 0), (1, 1)), "{mode}"),
            oh.pad_vjp(g2, x, ((4, 6), (2, 3)), "{mode}"), oh.pad_value_vjp(g1, x, ((1, 1), (0, 2))))
""", (g1, g2, M))


# ----- sort / argsort / take / take_along_axis ------------------------------------------------
def test_sort_argsort():
    both("""
def f(x, ax):
    return (np.sort(x), np.sort(x, axis=0), np.sort(x, axis=None), np.sort(x, ax), np.sort(x, -1, kind="stable"),
            np.argsort(x), np.argsort(x, axis=0), np.argsort(x, axis=None), np.argsort(x, ax, kind="stable"))
""", (M, 0), (VIEWS["T"], 1), (MI, 1), (X3, 2))


def test_sort_vjp():
    g = RNG.standard_normal((3, 4))
    helpers("""
def f(g, x, gf):
    return oh.sort_vjp(g, x, 0), oh.sort_vjp(g, x, -1), oh.sort_vjp(gf, x, None), oh.sort_vjp(g, x)
""", (g, M, RNG.standard_normal(12)), (g, np.round(M), RNG.standard_normal(12)))


def test_take():
    idx = np.array([2, 0, 3, 3, 1])
    idx2 = np.array([[0, 2], [1, 1], [2, -1]])
    both("""
def f(x, idx, idx2):
    return (np.take(x, idx), np.take(x, idx, axis=1), np.take(x, idx2, axis=1), np.take(x, 5),
            np.take(x, 2, axis=0), np.take(x, -1, axis=1), np.take(x, idx2), np.take(x, idx2, axis=0),
            np.take(x, idx * 3, axis=1, mode="wrap"), np.take(x, idx - 4, mode="clip"), np.take(x[0], 2))
""", (M, idx, idx2), (VIEWS["strided"], idx, idx2), (X3, idx % 3, idx2))
    with pytest.raises(IndexError):
        compiled("def f(x):\n    return np.take(x, 12)\n")(M)


def test_take_vjps():
    idx = np.array([2, 0, 3, 3, 1])
    idx2 = np.array([[0, 2], [1, 1], [3, 0]])
    helpers("""
def f(x, idx, idx2, g1, g2, g3, g4):
    return (oh.take_vjp(g1, x, idx, None, "raise"), oh.take_vjp(g2, x, idx, 1, "raise"),
            oh.take_vjp(g3, x, idx2, 1, "raise"), oh.take_vjp(2.0, x, 5, None, "raise"),
            oh.take_vjp(g4, x, 1, 1, "raise"), oh.take_vjp(g2, x, idx - 7, 1, "wrap"),
            oh.take_along_axis_vjp(g4.reshape(3, 1) * np.ones((3, 2)), x, idx2[:, :1] * np.ones((3, 2), np.int64), 1),
            oh.take_along_axis_vjp(x * 2.0, x, np.argsort(x, axis=0), 0), oh.take_along_axis_vjp(g1, x, idx, None))
""", (M, idx, idx2, RNG.standard_normal(5), RNG.standard_normal((3, 5)), RNG.standard_normal((3, 3, 2)),
      RNG.standard_normal(3)))


# ----- diff ---------------------------------------------------------------------------------------
def test_diff():
    both("""
def f(x, p, n):
    return (np.diff(x), np.diff(x, n=2, axis=1), np.diff(x, axis=0), np.diff(x, prepend=p), np.diff(x, append=1.0),
            np.diff(x, 3, 0, prepend=x[:1], append=2), np.diff(x, n), np.diff(x, 0), np.diff(x > 0))
""", (M, RNG.standard_normal((3, 1)), 2), (VIEWS["T"], RNG.standard_normal((3, 1)), 1), (MI, MI[:, :2], 0))


def test_diff_vjp():
    p = RNG.standard_normal((3, 1))
    helpers("""
def f(x, p, g1, g2, g3, g4):
    return (oh.diff_vjp(g1, x, 1, -1, None, 1.0, 1), oh.diff_vjp(g1, x, 1, -1, None, 1.0, 2),
            oh.diff_vjp(g4, x, 1, -1, p, None, 1), oh.diff_vjp(g4, x, 1, -1, p, None, 0),
            oh.diff_vjp(g2, x, 1, 0, None, None, 1), oh.diff_vjp(g3, x, 2, 1, None, None, 1))
""", (M, p, RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4)), RNG.standard_normal((3, 2)),
      RNG.standard_normal((3, 4))))


# ----- adjoints of tile / repeat / joins / split ------------------------------------------------
def test_tile_repeat_vjp():
    reps = np.array([1, 0, 2, 3])
    helpers("""
def f(x, v, reps, g1, g2, g3, g4, g5):
    return (oh.tile_vjp(g1, x, (2, 2)), oh.tile_vjp(g2, v, 3), oh.tile_vjp(g3, v, (3, 2)),
            oh.repeat_vjp(g4, x, 2, 1), oh.repeat_vjp(g4.ravel(), x, 2, None), oh.repeat_vjp(g5, x, reps, 1),
            oh.repeat_vjp(g5[0], x[0], reps, None))
""", (M, V[:2], reps, RNG.standard_normal((6, 8)), RNG.standard_normal(6), RNG.standard_normal((3, 4)),
      RNG.standard_normal((3, 8)), RNG.standard_normal((3, 6))))


def test_join_vjps():
    a, b, v = M, RNG.standard_normal((2, 4)), RNG.standard_normal(4)
    g = RNG.standard_normal((5, 4))
    helpers("""
def f(a, b, v, g, c):
    return (oh.concatenate_vjp(g, [a, b], 0), oh.concatenate_vjp(g.ravel(), [a, b], None),
            oh.concatenate_vjp(g[:3].ravel(), (v, a[1], v), 0), oh.concatenate_vjp(np.hstack((a, a)), (a, a), 1),
            oh.stack_vjp(np.stack((a, a, a), axis=-1), (a, a, a), -1), oh.stack_vjp(np.stack([a, a]), [a, a], 0),
            oh.hstack_vjp(np.hstack([a, c]), [a, c]), oh.hstack_vjp(np.hstack((v, v)), (v, v)),
            oh.vstack_vjp(np.vstack([a, v]), [a, v]), oh.vstack_vjp(np.vstack((v, v)), (v, v)),
            oh.column_stack_vjp(np.column_stack([a[:, 0], c]), [a[:, 0], c]),
            oh.column_stack_vjp(np.column_stack((v, v)), (v, v)))
""", (a, b, v, g, RNG.standard_normal((3, 2))))


def test_split_vjp():
    x = RNG.standard_normal((3, 5))
    helpers("""
def f(x, g0, g1, g2):
    return (oh.split_vjp([g0, g1 * 0.0, g2], x, 3, 1), oh.split_vjp((g0, g1, g2), x, 3, 1),
            oh.split_vjp([x[:1], x[1:]], x, [1], 0), oh.split_vjp([x[:, :2], x[:, 2:4], x[:, 4:]], x, np.array([2, 4]), 1))
""", (x, RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2)), RNG.standard_normal((3, 1))))


def test_astype():
    helpers("""
def f(x, s):
    return (rt.astype(x, int), rt.astype(x, np.float64), rt.astype(x, float), rt.astype(x, np.int32),
            rt.astype(x > 0, float), rt.astype(s, int), rt.astype(x, bool))
""", (M * 3, 2.7))


# ----- the op cases, under s2s.jit and s2s.jit(s2s.grad) ---------------------------------------
JIT_CASES = ["reshape", "atleast", "tile", "repeat", "concatenate", "stack", "hstack_vstack", "column_stack",
             "flip", "roll", "rot90", "pad", "sort", "diff", "take", "take_along_axis", "copy_astype", "array_of_list"]
GRAD_CASES = JIT_CASES


def _case(name):
    return next(c for c in op_cases.CASES if c.name == name)


def _float_nums(args):
    return tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


def _close(a, b):
    if isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", JIT_CASES)
def test_case_jit(name):
    case = _case(name)
    args = case.make(np.random.default_rng(0))
    _close(s2s.jit(case.fn)(*args), case.fn(*args))


@pytest.mark.parametrize("name", GRAD_CASES)
def test_case_jit_grad(name):
    case = _case(name)
    args = case.make(np.random.default_rng(0))
    g = s2s.grad(case.fn, argnums=_float_nums(args))
    _close(s2s.jit(g)(*args), g(*args))
