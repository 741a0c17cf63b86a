"""Op sweep under jit: every op case of tests/cases/op_cases.py compiled by Numba in nopython mode
(`fallback=False`), compared with the unjitted transform on the same inputs.

- `jit(value_and_grad(f))` == `(f, grad(f))`, w.r.t. every float argument;
- `jit(jvp(f, argnums=all))` == `jvp` (the tangent function `(*primals, *tangents)`);
- `jit(vmap(f))` == `vmap(f)`, every float argument batched (two examples, drawn as the case draws);
- `jit(vmap(grad(f)))` == `vmap(grad(f))` and `jit(hessian(f))` == `hessian(f)`.

Every case under every transform is a Numba compilation of seconds: CI takes one transform of
value_and_grad / jvp / vmap per case for 3 cases in 24 (in turn), every 24th case under
vmap(grad) and hessian, and the cases where this sweep found a wrong answer (_FOUND);
S2S_FULL_SWEEP=1 runs them all (about 40 minutes on 2 cores).  The same
rules, helpers and stand-ins run for the other cases in tests/jit/test_jit.py, test_jit_vmap_ops.py,
test_numba_numpy_*.py and the random programs.

The unjitted transforms are checked against finite differences in tests/ops/test_op_sweep.py; here
jit must not change an answer (rtol 1e-12, atol 1e-12 relative to the result's scale).
KNOWN_JIT lists what Numba does not compile yet, as strict xfails naming the reason: remove an entry
when it compiles (the test then fails, on purpose).
"""
from __future__ import annotations

import os
import zlib

import numpy as np
import pytest


from cases import op_cases
import s2s  # noqa: E402
from cases.fd import assert_close

pytest.importorskip("numba")

CASES = op_cases.CASES
FULL = os.environ.get("S2S_FULL_SWEEP") == "1"
RTOL = 1e-12

# (transform, case name) -> why Numba does not compile it yet.  transform: "value_and_grad", "jvp",
# "vmap", "vmap_grad", "hessian".
def _helper(name):
    return f"s2s's helper {name} has no Numba version for these argument types"


KNOWN_JIT: dict[tuple[str, str], str] = {
    # np.squeeze without axis=: the result's rank depends on the shape, which Numba does not type
    # (s2s refuses it at the user's line: tests/jit/test_jit.py::
    # test_squeeze_without_axis_is_refused_at_the_user_line_and_falls_back_right)
    **{(t, "expand_squeeze"): "np.squeeze without axis= (s2s's stand-in refuses it: give axis=)"
       for t in ("value_and_grad", "jvp", "vmap", "vmap_grad", "hessian")},
    # hessian inlines norm_grad and svd_triple_vjp (Python helpers without tangent rules of their own)
    ("hessian", "norm_spectral"): "norm_grad branches on the norm's kind, a run-time string: Numba types every "
                                  "branch (`ord - 1.0` with ord='nuc'); jit(hessian) refuses it at the user's line",
    ("hessian", "svd_values"): "svd_triple_vjp's tangent reads `np.shape(s)[-1]` of a value Numba types as a "
                               "number on one path (tuple index out of range); refused at the user's line",
}

# Cases whose compilation under a transform takes many minutes (LLVM optimizing one large function:
# jit(vmap(grad(var_case))) took 919 s on 2 cores, jit(hessian) 157 s; with NUMBA_OPT=0, 33 s).
# Left to the full sweep (S2S_FULL_SWEEP=1); the same np.var rules run under jit in CI through
# value_and_grad, jvp and vmap of this case and tests/jit/test_jit.py.
_SLOW_COMPILE = {("vmap_grad", "var"), ("hessian", "var")}


def _rng(case, salt=0):
    return np.random.default_rng([zlib.crc32(case.name.encode()), salt])


def _floats(args):
    return tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


def _same(got, expected, what):
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), f"{what}: structure differs"
        for k, (g, e) in enumerate(zip(got, expected)):
            _same(g, e, f"{what}[{k}]")
        return
    scale = max(1.0, float(np.max(np.abs(expected)))) if np.size(expected) else 1.0
    assert np.shape(got) == np.shape(expected), f"{what}: shape {np.shape(got)} for {np.shape(expected)}"
    assert_close(got, expected, rtol=RTOL, atol=RTOL * scale, what=what)


_TURN = {"value_and_grad": 4, "jvp": 12, "vmap": 20}     # CI: one case in 24 per transform
# what this sweep found wrong or refused (now fixed): always in CI.  (hessian, einsum) compiles since
# einsum_vjp has its own tangent and cotangent rules (before, hessian inlined its Python plan)
_FOUND = {("hessian", "einsum"), ("vmap_grad", "hypot"), ("vmap_grad", "copy_astype"), ("hessian", "copy_astype"),
          ("value_and_grad", "copy_astype"), ("value_and_grad", "cross"), ("vmap_grad", "matmul_batched_vector"),
          ("value_and_grad", "split")}


def _in_ci(transform, k):
    if (transform, CASES[k].name) in _FOUND:
        return True
    if (transform, CASES[k].name) in _SLOW_COMPILE:
        return False
    if transform in _TURN:
        return k % 24 == _TURN[transform]
    return k % 24 == 0


def _params(transform):
    out = []
    for k, c in enumerate(CASES):
        if transform in ("value_and_grad", "vmap_grad", "hessian") and c.rev_xfail:
            continue
        if transform in ("jvp", "hessian") and c.fwd_xfail:
            continue
        if transform == "hessian" and (c.hess is not True or c.hess_xfail):
            continue
        if not FULL and not _in_ci(transform, k):
            continue
        reason = KNOWN_JIT.get((transform, c.name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(c, marks=marks, id=c.name))
    return out


def _batch(case, args):
    """Two examples of every float argument (the second drawn as the case draws its inputs);
    other arguments (indices, counts) shared."""
    other = case.make(_rng(case, 5))
    nums = _floats(args)
    batched = tuple(np.stack([np.asarray(a, dtype=float), np.asarray(b, dtype=float)]) if i in nums else a
                    for i, (a, b) in enumerate(zip(args, other)))
    return batched, tuple(0 if i in nums else None for i in range(len(args)))


@pytest.mark.parametrize("case", _params("value_and_grad"))
def test_jit_value_and_grad(case):
    args = case.make(_rng(case))
    nums = _floats(args)
    vg = s2s.value_and_grad(case.fn, argnums=nums)
    value, grads = s2s.jit(vg, fallback=False)(*args)
    _same(value, case.fn(*args), f"jit(value_and_grad({case.name})) value vs f")
    _same(grads, vg(*args)[1], f"jit(value_and_grad({case.name})) vs grad")


@pytest.mark.parametrize("case", _params("jvp"))
def test_jit_jvp(case):
    args = case.make(_rng(case))
    nums = _floats(args)
    rng = _rng(case, 1)
    tangents = tuple(rng.standard_normal(np.shape(args[i])) if np.ndim(args[i]) else float(rng.standard_normal())
                     for i in nums)
    t = s2s.jvp(case.fn, argnums=nums)
    _same(s2s.jit(t, fallback=False)(*args, *tangents), t(*args, *tangents), f"jit(jvp({case.name})) vs jvp")


@pytest.mark.parametrize("case", _params("vmap"))
def test_jit_vmap(case):
    batched, axes = _batch(case, case.make(_rng(case)))
    v = s2s.vmap(case.fn, in_axes=axes)
    _same(s2s.jit(v, fallback=False)(*batched), v(*batched), f"jit(vmap({case.name})) vs vmap")


@pytest.mark.parametrize("case", _params("vmap_grad"))
def test_jit_vmap_grad(case):
    args = case.make(_rng(case))
    batched, axes = _batch(case, args)
    v = s2s.vmap(s2s.grad(case.fn, argnums=_floats(args)), in_axes=axes)
    _same(s2s.jit(v, fallback=False)(*batched), v(*batched), f"jit(vmap(grad({case.name}))) vs vmap(grad)")


@pytest.mark.parametrize("case", _params("hessian"))
def test_jit_hessian(case):
    args = case.make(_rng(case))
    h = s2s.hessian(case.fn, argnums=_floats(args)[0])
    _same(s2s.jit(h, fallback=False)(*args), h(*args), f"jit(hessian({case.name})) vs hessian")


def test_known_entries_name_cases():
    names = {c.name for c in CASES}
    assert not [k for k in KNOWN_JIT if k[1] not in names or k[0] not in
                ("value_and_grad", "jvp", "vmap", "vmap_grad", "hessian")]
