"""jit(vmap(f)) under Numba: the batching helpers' compiled forms.

- op cases (tests/op_cases.py) whose batched code goes through a per-op loop (`bmap`), the
  whole-function loop (`per_example`), or the helpers baxis/btranspose/bgetitem/breshape/
  bmatmul/bdot/balign: jit(vmap(f)) == vmap(f) == a Python loop over the examples, and
  jit(vmap(grad(f))) == vmap(grad(f)) where it compiles;
- the forms of those helpers one at a time (tuple outputs, out_axes, advanced indices, matmul
  ranks, a batch of no examples).
"""
from __future__ import annotations

import itertools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import op_cases  # noqa: E402
import s2s  # noqa: E402
from fd import assert_close  # noqa: E402

BY_NAME = {c.name: c for c in op_cases.CASES}

# cases that compile under jit(vmap(f)) through the per-example loops and batching helpers
VMAP_CASES = [
    # bmap: one op per example
    "sinc", "builtin_max_min", "clip_constants", "norm_matrix", "norm_spectral", "norm_batched", "vdot",
    "outer", "kron", "diag", "det_batched", "inv", "solve", "solve_batched", "cholesky_one_triangle",
    "eigvalsh", "slogdet", "ravel_flatten", "broadcast_to", "tril_triu", "split", "cumsum",
    "swapaxes_moveaxis", "softmax", "log_softmax",
    # per_example: the whole function per example (the compiled primal)
    "comparisons_argfuncs", "logsumexp",
    # baxis (tuple axes), bgetitem, breshape, btranspose, bmatmul/bdot ranks
    "sum", "mean", "max", "math_functions", "reshape", "transpose", "det", "cholesky", "matmul",
    "matmul_batched_vector", "dot", "dot_nd_scalar",
]


def _batched(case):
    args = case.make(np.random.default_rng(0))
    nums = tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")
    bargs = tuple(np.stack([np.asarray(a), np.asarray(a) * 1.1]) if i in nums else a for i, a in enumerate(args))
    axes = tuple(0 if i in nums else None for i in range(len(args)))
    return args, nums, bargs, axes


def _close(a, b, what):
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(b), what
        for x, y in zip(a, b):
            _close(x, y, what)
        return
    assert np.shape(a) == np.shape(b), f"{what}: shape {np.shape(a)} != {np.shape(b)}"
    assert_close(a, b, rtol=1e-12, atol=1e-12, what=what)


def _loop(fn, bargs, axes):
    outs = [fn(*[a[b] if ax is not None else a for a, ax in zip(bargs, axes)]) for b in range(2)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


@pytest.mark.parametrize("name", VMAP_CASES)
def test_jit_vmap_case(name):
    case = BY_NAME[name]
    _, nums, bargs, axes = _batched(case)
    v = s2s.vmap(case.fn, in_axes=axes)
    want = _loop(case.fn, bargs, axes)
    _close(v(*bargs), want, "vmap vs loop")
    _close(s2s.jit(v)(*bargs), want, "jit(vmap) vs loop")


# jit(vmap(grad(f))) of the cases above that compile (others: the grad's own ops, e.g.
# adjoint helpers with no Numba form yet)
VGRAD_CASES = ["sinc", "clip_constants", "vdot", "outer", "inv", "solve", "slogdet", "ravel_flatten",
               "tril_triu", "sum", "mean", "reshape", "transpose", "matmul", "dot", "logsumexp"]


@pytest.mark.parametrize("name", VGRAD_CASES)
def test_jit_vmap_grad_case(name):
    case = BY_NAME[name]
    _, nums, bargs, axes = _batched(case)
    v = s2s.vmap(s2s.grad(case.fn, argnums=nums), in_axes=axes)
    _close(s2s.jit(v)(*bargs), v(*bargs), "jit(vmap(grad)) vs vmap(grad)")


# ----- helper forms -----------------------------------------------------------------------
def tuple_out(x, y):
    if np.sum(x) > 0.0:        # a branch on a batched condition with an effect: per_example
        print("")
    return np.sum(x * y), x * 2.0


def int_out(x):
    return np.argmax(np.sin(x))


def scalar_tuple_op(x):
    return np.sum(np.linalg.slogdet(x)[1] * 2.0)


def fancy(x, idx):
    return x[idx] * 2.0


def transposes(x):
    return np.sum(np.transpose(x, (1, -1, 0)) * 1.5) + np.sum(x.T[0])


def tuple_axes(x):
    return np.sum(np.max(x, axis=(0, -1)) ** 2) + np.sum(np.sum(x, axis=(-2,), keepdims=True))


def mm(a, b):
    return np.matmul(a, b)


def dd(a, b):
    return np.dot(a, b)


def test_per_example_tuple_outputs_and_out_axes(capsys):
    x = np.random.default_rng(1).standard_normal((3, 4, 2))
    y = np.random.default_rng(2).standard_normal((4, 2))
    for out_axes in (0, (0, 1), (None, -1)):
        v = s2s.vmap(tuple_out, in_axes=(0, None), out_axes=out_axes)
        assert "per_example" in v.show(2)
        _close(s2s.jit(v)(x, y), v(x, y), f"out_axes={out_axes}")
    # in_axes not 0: the example is x[:, b] (x[..., b] for a negative axis)
    for ax in (1, -1):
        v = s2s.vmap(tuple_out, in_axes=(ax, None))
        xx = np.moveaxis(x, 0, ax)
        _close(s2s.jit(v)(xx, y), v(xx, y), f"in_axes={ax}")
    capsys.readouterr()


def test_bmap_dtypes_and_scalar_tuples():
    x = np.random.default_rng(3).standard_normal((3, 5))
    v = s2s.vmap(int_out)
    got = s2s.jit(v)(x)
    assert got.dtype == v(x).dtype and np.array_equal(got, v(x))
    a = np.random.default_rng(4).standard_normal((2, 3, 3)) + 3.0 * np.eye(3)
    v = s2s.vmap(scalar_tuple_op)
    _close(s2s.jit(v)(a), v(a), "slogdet")


def test_bgetitem_advanced_and_basic():
    x = np.random.default_rng(5).standard_normal((3, 6, 2))
    for idx in (np.array([4, 0, 4]), 1, slice(1, 5, 2)):
        v = s2s.vmap(fancy, in_axes=(0, None))
        _close(s2s.jit(v)(x, idx), _loop(fancy, (x, idx), (0, None)), f"index {idx!r}")
    xt = x.transpose(0, 2, 1).copy()[:, :, ::2]       # a non-contiguous batch
    v = s2s.vmap(fancy, in_axes=(0, None))
    _close(s2s.jit(v)(xt, np.array([1, 0])), _loop(fancy, (xt, np.array([1, 0])), (0, None)), "view")


def test_btranspose_and_tuple_axes():
    x = np.random.default_rng(6).standard_normal((2, 3, 4, 5))
    for fn in (transposes, tuple_axes):
        v = s2s.vmap(fn)
        _close(s2s.jit(v)(x), _loop(fn, (x,), (0,)), fn.__name__)
        _close(v(x), _loop(fn, (x,), (0,)), fn.__name__)


A_SHAPES = {1: (4,), 2: (3, 4), 3: (2, 3, 4), 4: (2, 2, 3, 4)}
B_SHAPES = {1: (4,), 2: (4, 5), 3: (2, 4, 5), 4: (3, 2, 4, 5)}


@pytest.mark.parametrize("fn", [mm, dd])
def test_matmul_dot_ranks(fn):
    """Per-example matmul/dot of every rank pair: vmap (Python) always equals the loop (the batch
    axis must not broadcast against a per-example stack axis of the same size); jit equals it
    where it compiles (a stack of matrices on the right is refused, not guessed)."""
    rng = np.random.default_rng(7)
    j_checked = 0
    for pa, pb in itertools.product((1, 2, 3, 4), repeat=2):
        for ab, bb in ((True, True), (True, False), (False, True)):
            size = 2
            a = rng.standard_normal(((size,) if ab else ()) + A_SHAPES[pa])
            b = rng.standard_normal(((size,) if bb else ()) + B_SHAPES[pb])
            axes = (0 if ab else None, 0 if bb else None)
            try:
                want = _loop(fn, (a, b), axes)
            except ValueError:
                continue
            v = s2s.vmap(fn, in_axes=axes)
            _close(v(a, b), want, f"vmap {fn.__name__} {pa} {pb} {ab} {bb}")
            if pb <= 2:
                _close(s2s.jit(v)(a, b), want, f"jit(vmap) {fn.__name__} {pa} {pb} {ab} {bb}")
                j_checked += 1
    assert j_checked > 0


def test_empty_batch_refused_in_per_example_loop():
    v = s2s.jit(s2s.vmap(int_out))
    with pytest.raises(ValueError):
        v(np.zeros((0, 3)))


def test_tuple_of_different_ranks_refused():
    a = np.random.default_rng(8).standard_normal((2, 3, 3))
    a = a + a.transpose(0, 2, 1)
    with pytest.raises(Exception, match="bmap_empty|stack"):
        s2s.jit(s2s.vmap(BY_NAME["eigh"].fn))(a)
