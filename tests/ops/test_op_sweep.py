"""Op sweep: every rule of the rule table against finite differences.

For each case of tests/cases/op_cases.py (one small function per op):
- reverse mode: `s2s.grad` w.r.t. every argument vs central finite differences;
- forward mode: `s2s.jvp` vs finite differences along a random direction and
  vs <grad, v>;
- second derivatives: `s2s.hessian` (forward over reverse) and the VJP of
  `s2s.grad` (reverse over reverse), times a random direction, vs finite
  differences of `s2s.grad`.
Plus table-wide checks: adjoint and tangent rules come in pairs, every op of
the coverage list is registered, and every public op helper (s2s/rules/*_helpers.py)
either has a rule or is plain NumPy that s2s can read (so higher derivatives
work through it).
"""
from __future__ import annotations

import builtins
import math
import zlib

import numpy as np
import pytest
import scipy.special as sp


from cases import op_cases
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad
from s2s.frontend.namespace import OP_HELPER_MODULES  # noqa: E402
from s2s.ops.linalg import helpers as lh  # noqa: E402
from s2s.ops.shape import helpers as sh  # noqa: E402
from s2s.rules.table import lookup  # noqa: E402
from s2s.rules.registry import all_rules  # noqa: E402

CASES = op_cases.CASES
IDS = [c.name for c in CASES]


def _rng(case, salt=0):
    """A generator seeded by the case name (stable across runs: no str hash randomization)."""
    return np.random.default_rng([zlib.crc32(case.name.encode()), salt])


def _args(case):
    return case.make(_rng(case))


def _directions(case, args):
    rng = _rng(case, 1)
    out = []
    for a in args:
        v = rng.standard_normal(np.shape(a))
        out.append(float(v) if np.ndim(a) == 0 and not isinstance(a, np.ndarray) else v)
    return tuple(out)


def _shift(args, dirs, eps):
    return tuple(a + eps * v for a, v in zip(args, dirs))


def _mark(case, *reasons):
    for r in reasons:
        if r:
            return pytest.param(case, marks=pytest.mark.xfail(strict=True, reason=r), id=case.name)
    return pytest.param(case, id=case.name)


REV_PARAMS = [_mark(c, c.rev_xfail) for c in CASES]
FWD_PARAMS = [_mark(c, c.fwd_xfail) for c in CASES]
HESS_PARAMS = [_mark(c, c.rev_xfail, c.fwd_xfail, c.hess_xfail) for c in CASES if c.hess is True]
RR_PARAMS = [_mark(c, c.rev_xfail, c.rr_xfail) for c in CASES if c.hess is True]


# ---------------------------------------------------------------------------
# The cases themselves, under plain NumPy
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_runs_under_numpy(case):
    args = _args(case)
    out = case.fn(*args)
    assert np.ndim(out) == 0 and np.isfinite(out)
    for a in args:
        assert np.asarray(a).dtype == np.float64


# ---------------------------------------------------------------------------
# Reverse mode
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", REV_PARAMS)
def test_grad_matches_finite_differences(case):
    args = _args(case)
    nums = tuple(range(len(args)))
    got = s2s.grad(case.fn, argnums=nums)(*args)
    assert isinstance(got, tuple) and len(got) == len(args)
    for n, g in enumerate(got):
        expected = numeric_grad(case.fn, args, n)
        assert_close(g, expected, rtol=case.rtol, atol=1e-6, what=f"grad of {case.name} w.r.t. argument {n}")


# ---------------------------------------------------------------------------
# Forward mode
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", FWD_PARAMS)
def test_jvp_matches_finite_differences_and_grad(case):
    if not hasattr(s2s, "jvp"):
        pytest.skip("forward mode not landed")
    args = _args(case)
    dirs = _directions(case, args)
    out, tan = s2s.jvp(case.fn, args, dirs)
    assert_close(out, case.fn(*args), rtol=1e-12, atol=1e-12, what=f"jvp primal of {case.name}")
    eps = 1e-6
    fd = (case.fn(*_shift(args, dirs, eps)) - case.fn(*_shift(args, dirs, -eps))) / (2 * eps)
    assert_close(tan, fd, rtol=1e-5, atol=1e-6, what=f"jvp of {case.name} vs finite differences")
    if not case.rev_xfail:
        grads = s2s.grad(case.fn, argnums=tuple(range(len(args))))(*args)
        dot = sum(float(np.sum(np.asarray(g) * np.asarray(v))) for g, v in zip(grads, dirs))
        assert_close(tan, dot, rtol=1e-9, atol=1e-9, what=f"jvp of {case.name} vs <grad, v>")


# ---------------------------------------------------------------------------
# Batching: vmap and vmap(grad) against a Python loop over the examples
# ---------------------------------------------------------------------------

def _batched(case, args):
    """Three examples of every float argument (two more drawn as the case draws its inputs; the
    case's own inputs first); other arguments (indices, counts) shared."""
    others = [case.make(_rng(case, salt)) for salt in (5, 6)]
    nums = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
    batched = tuple(np.stack([np.asarray(a, dtype=float)] + [np.asarray(o[i], dtype=float) for o in others])
                    if i in nums else a for i, a in enumerate(args))
    return batched, tuple(0 if i in nums else None for i in range(len(args))), nums


def _loop(fn, batched, axes):
    outs = [fn(*(a[b] if ax == 0 else a for a, ax in zip(batched, axes))) for b in range(3)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return np.stack(outs)


# What vmap cannot batch yet: each one raises (never a wrong answer); strict, so a fix shows.
VMAP_KNOWN: dict[str, str] = {}
VMAP_GRAD_KNOWN: dict[str, str] = {}


def _vmap_params(known, cases):
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=known[c.name])] if c.name in known else [])
            for c in cases]


@pytest.mark.parametrize("case", _vmap_params(VMAP_KNOWN, CASES))
def test_vmap_matches_a_loop(case):
    batched, axes, _ = _batched(case, _args(case))
    got = s2s.vmap(case.fn, in_axes=axes)(*batched)
    assert_close(got, _loop(case.fn, batched, axes), rtol=1e-12, atol=1e-12, what=f"vmap({case.name}) vs a loop")


@pytest.mark.parametrize("case", _vmap_params(VMAP_GRAD_KNOWN, [c for c in CASES if not c.rev_xfail]))
def test_vmap_grad_matches_a_loop(case):
    batched, axes, nums = _batched(case, _args(case))
    g = s2s.grad(case.fn, argnums=tuple(nums))
    got = s2s.vmap(g, in_axes=axes)(*batched)
    expected = _loop(g, batched, axes)
    assert len(got) == len(expected)
    for k, (a, e) in enumerate(zip(got, expected)):
        assert_close(a, e, rtol=1e-10, atol=1e-12, what=f"vmap(grad({case.name})) vs a loop, argument {nums[k]}")


# ---------------------------------------------------------------------------
# Second derivatives
# ---------------------------------------------------------------------------

def _hvp_fd(case, args, v0, eps=1e-5):
    """Finite differences of s2s.grad (w.r.t. argument 0) along v0."""
    g = s2s.grad(case.fn)
    plus = list(args)
    minus = list(args)
    plus[0] = args[0] + eps * v0
    minus[0] = args[0] - eps * v0
    return (np.asarray(g(*plus)) - np.asarray(g(*minus))) / (2 * eps)


@pytest.mark.parametrize("case", HESS_PARAMS)
def test_hessian_matches_finite_differences_of_grad(case):
    if not hasattr(s2s, "hessian"):
        pytest.skip("forward mode not landed")
    args = _args(case)
    v0 = _directions(case, args)[0]
    h = np.asarray(s2s.hessian(case.fn)(*args))
    n = int(np.size(args[0]))
    hv = (h.reshape(n, n) @ np.reshape(v0, n)).reshape(np.shape(args[0]))
    assert_close(hv, _hvp_fd(case, args, v0), rtol=1e-4, atol=1e-5, what=f"hessian of {case.name} times v")


@pytest.mark.parametrize("case", RR_PARAMS)
def test_grad_of_grad_matches_finite_differences(case):
    """Reverse over reverse: the VJP of grad (w.r.t. argument 0) is H v."""
    args = _args(case)
    v0 = _directions(case, args)[0]
    _, vjp_fn = s2s.vjp(s2s.grad(case.fn), *args)
    hv = vjp_fn(np.asarray(v0) if isinstance(args[0], np.ndarray) else v0)[0]
    assert_close(hv, _hvp_fd(case, args, v0), rtol=1e-4, atol=1e-5, what=f"vjp of grad of {case.name}")


# ---------------------------------------------------------------------------
# The tuple-output ops' rules, checked directly (the core cannot run them yet)
# ---------------------------------------------------------------------------

def _fd_vjp(f, a, cts, eps=1e-6):
    """Gradient of sum_k <f(a)[k], cts[k]> by central differences."""
    def scal(x):
        return sum(float(np.sum(np.asarray(o) * c)) for o, c in zip(f(x), cts))
    return numeric_grad(scal, (a,), 0, eps=eps)


def _fd_jvp(f, a, ta, eps=1e-6):
    return [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(f(a + eps * ta), f(a - eps * ta))]


def _tuple_cases():
    rng = np.random.default_rng(7)
    a = op_cases._wellcond(rng)
    s = op_cases._sym_distinct(rng) + 0.05 * rng.standard_normal((3, 3))
    tall = rng.standard_normal((4, 3))
    wide = np.ascontiguousarray(tall.T)   # (fd.numeric_grad needs C-contiguous input)
    x = rng.standard_normal((4, 6))
    return [
        ("slogdet", np.linalg.slogdet, a, lambda g, y: lh.slogdet_vjp(g, a), lambda t, y: lh.slogdet_tangent(t, a, y)),
        ("eigh", np.linalg.eigh, s, lambda g, y: lh.eigh_vjp(g, s, y), lambda t, y: lh.eigh_tangent(t, s, y)),
        ("eigh_upper", lambda m: np.linalg.eigh(m, UPLO="U"), s, lambda g, y: lh.eigh_vjp(g, s, y, "U"),
         lambda t, y: lh.eigh_tangent(t, s, y, "U")),
        ("qr", np.linalg.qr, tall, lambda g, y: lh.qr_vjp(g, tall, y), lambda t, y: lh.qr_tangent(t, tall, y)),
        ("svd", lambda m: np.linalg.svd(m, full_matrices=False), tall,
         lambda g, y: lh.svd_vjp(g, tall, y, False), lambda t, y: lh.svd_tangent(t, tall, y, False)),
        ("svd_wide", lambda m: np.linalg.svd(m, full_matrices=False), wide,
         lambda g, y: lh.svd_vjp(g, wide, y, False), lambda t, y: lh.svd_tangent(t, wide, y, False)),
        ("split", lambda m: np.split(m, [1, 4], axis=1), x,
         lambda g, y: sh.split_vjp(g, x, [1, 4], 1), lambda t, y: np.split(t, [1, 4], axis=1)),
        ("array_split", lambda m: np.array_split(m, 4), x,
         lambda g, y: sh.split_vjp(g, x, 4, 0), lambda t, y: np.array_split(t, 4)),
    ]


@pytest.mark.parametrize("name,f,a,vjp,jvp", _tuple_cases(), ids=[c[0] for c in _tuple_cases()])
def test_tuple_output_rule_maths(name, f, a, vjp, jvp):
    rng = np.random.default_rng(11)
    y = f(a)
    cts = [rng.standard_normal(np.shape(o)) for o in y]
    if name == "slogdet":
        cts[0] = np.zeros_like(cts[0])     # the sign is piecewise constant
    if name.startswith("eigh"):            # eigenvectors are defined up to sign: use sign-invariant outputs
        def f2(m, f=f):
            w, v = f(m)
            return (w, v * np.sign(v[0:1]))
        y = f2(a)
        f = f2
    if name.startswith("svd"):
        def f2(m, f=f):
            u, s, vt = f(m)
            sg = np.sign(u[0:1])
            return (u * sg, s, vt * np.swapaxes(sg, -1, -2))
        y = f2(a)
        f = f2
    got = vjp(tuple(cts), y)
    assert_close(got, _fd_vjp(f, a, cts), rtol=1e-5, atol=1e-6, what=f"vjp of {name}")
    ta = rng.standard_normal(np.shape(a))
    tan = jvp(ta, y)
    for k, (t, e) in enumerate(zip(tan, _fd_jvp(f, a, ta))):
        if name.startswith(("eigh", "svd")) and k in ((1,) if name.startswith("eigh") else (0, 2)):
            continue   # vector tangents checked through the vjp (sign conventions differ per column)
        assert_close(t, e, rtol=1e-5, atol=1e-6, what=f"jvp of {name}, output {k}")


# ---------------------------------------------------------------------------
# The rule table itself
# ---------------------------------------------------------------------------

ISSUE_OPS = {
    "unary": [np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh, np.arcsinh,
              np.arccosh, np.arctanh, np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sqrt,
              np.cbrt, np.square, np.reciprocal, np.abs, np.absolute, np.fabs, np.negative, np.positive,
              np.deg2rad, np.rad2deg, np.degrees, np.radians, np.sinc],
    "binary": [np.add, np.subtract, np.multiply, np.divide, np.true_divide, np.power, np.float_power, np.maximum,
               np.minimum, np.fmax, np.fmin, np.arctan2, np.hypot, np.logaddexp, np.logaddexp2, np.mod,
               np.remainder, np.fmod, np.where, np.clip],
    "reductions": [np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var, np.std, np.cumsum,
                   np.cumprod, np.linalg.norm, np.average],
    "linalg": [np.dot, np.vdot, np.inner, np.outer, np.matmul, np.tensordot, np.einsum, np.kron, np.trace, np.diag,
               np.diagonal, np.linalg.det, np.linalg.slogdet, np.linalg.inv, np.linalg.solve, np.linalg.cholesky,
               np.linalg.eigh, np.linalg.qr, np.linalg.svd, np.cross],
    "shape": [np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.expand_dims, np.squeeze,
              np.broadcast_to, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.tile, np.repeat, np.concatenate,
              np.stack, np.hstack, np.vstack, np.column_stack, np.split, np.array_split, np.flip, np.fliplr,
              np.flipud, np.roll, np.rot90, np.tril, np.triu, np.pad, np.sort, np.diff, np.take,
              np.take_along_axis, np.copy, np.array, np.asarray],
    "scipy": [sp.logsumexp, sp.expit, sp.logit, sp.erf, sp.gammaln, sp.xlogy, sp.softmax, sp.log_softmax, sp.gamma,
              sp.rgamma, sp.beta, sp.betaln, sp.betainc, sp.gammainc, sp.gammaincc, sp.multigammaln, sp.jv, sp.yn,
              sp.iv, sp.ive, sp.j0, sp.j1, sp.y0, sp.y1, sp.i0, sp.i1, sp.erfinv, sp.erfcinv],
    "builtins": [builtins.abs, builtins.max, builtins.min, builtins.float, math.sin, math.exp, math.log,
                 math.sqrt, math.pow],
}
NONDIFF_OPS = [np.sign, np.floor, np.ceil, np.rint, np.trunc, np.greater, np.less, np.equal, np.argmax, np.argmin,
               np.argsort, np.isnan, np.isinf, np.isfinite, np.nonzero]
CONSTRUCTORS = [np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
                np.eye, np.identity]
# constructors whose float arguments carry a derivative: rules, fresh results
# (tests/ops/test_constructor_derivatives.py checks them against finite differences)
DIFFERENTIABLE_CONSTRUCTORS = [np.full, np.linspace, np.full_like, np.logspace]
# constructors whose float arguments s2s does not differentiate: refused when one is differentiated
# (tests/ops/test_nondiff_audit.py)
REFUSED_CONSTRUCTORS = [np.arange]


@pytest.mark.parametrize("family", sorted(ISSUE_OPS))
def test_issue_ops_have_adjoint_and_tangent(family):
    missing = [getattr(f, "__name__", repr(f)) for f in ISSUE_OPS[family]
               if lookup(f) is None or lookup(f).adjoint is None or lookup(f).tangent is None]
    assert not missing, f"{family}: no adjoint/tangent rule for {missing}"


def test_non_differentiable_ops_and_constructors_are_nondiff():
    bad = [f.__name__ for f in NONDIFF_OPS + CONSTRUCTORS if lookup(f) is None or not lookup(f).nondiff]
    assert not bad, f"not registered nondiff: {bad}"
    assert all(lookup(f).fresh for f in CONSTRUCTORS)
    for f in DIFFERENTIABLE_CONSTRUCTORS:
        rule = lookup(f)
        assert rule.fresh and not rule.nondiff and rule.adjoint is not None and rule.tangent is not None, f
    for f in REFUSED_CONSTRUCTORS:
        rule = lookup(f)
        assert rule.fresh and not rule.nondiff and rule.refused, f


def test_methods_map_to_registered_ops():
    from s2s.rules.registry import method_op
    methods = {m: rule.fn for rule in all_rules() for m in rule.methods}
    assert {"sum", "mean", "reshape", "astype", "flatten", "conj", "cumsum", "diagonal"} <= set(methods)
    missing = [m for m, f in methods.items() if lookup(f) is None or
               not (lookup(f).nondiff or (lookup(f).adjoint and lookup(f).tangent))]
    assert not missing, f"methods without both rules: {missing}"
    assert all(method_op(m) is f for m, f in methods.items())
    assert all(hasattr(np.ndarray, m) for m in methods), "a method name ndarray does not have"
    x = np.arange(6.0).reshape(2, 3) - 2.5
    for m in ("sum", "mean", "max", "min", "prod", "std", "var", "cumsum", "cumprod", "argmax", "any", "ravel",
              "copy", "trace", "diagonal", "conj", "round", "transpose"):
        assert np.array_equal(getattr(x, m)(), methods[m](x)), m


def _rule_module(rule):
    tmpl = rule.adjoint or rule.tangent
    return getattr(getattr(tmpl, "fn", None), "__module__", "") if tmpl else ""


_OP_MODULES = ("s2s.ops.elementwise.rules", "s2s.ops.reductions.rules", "s2s.ops.linalg.rules",
               "s2s.ops.shape.rules", "s2s.ops.special.rules")


def test_every_op_rule_has_both_adjoint_and_tangent():
    """Adjoint and tangent come in pairs for every differentiable op of the NumPy/scipy tables."""
    unpaired = []
    for rule in all_rules():
        if rule.nondiff or not (rule.adjoint or rule.tangent):
            continue
        if _rule_module(rule) in _OP_MODULES and (rule.adjoint is None or rule.tangent is None):
            unpaired.append(rule.name)
    assert not unpaired, f"rules with only one of adjoint/tangent: {sorted(unpaired)}"


def test_every_rule_has_both_adjoint_and_tangent():
    """The same, for the whole table (runtime helpers included) once forward mode has landed."""
    if not hasattr(s2s, "jvp"):
        pytest.skip("forward mode not landed")
    def own(rule):   # s2s's own tables, not rules a user (or another test) registered
        tmpl = rule.adjoint or rule.tangent
        return getattr(getattr(tmpl, "fn", None), "__module__", "").startswith("s2s.")
    unpaired = sorted({r.name for r in all_rules()
                       if not r.nondiff and own(r) and (r.adjoint is None) != (r.tangent is None)})
    assert not unpaired, f"rules with only one of adjoint/tangent: {unpaired}"


def _public_helpers():
    """{name: function} of the public functions of the op helper modules (no name is in two)."""
    import importlib
    out = {}
    for modname in OP_HELPER_MODULES:
        mod = importlib.import_module(modname)
        for n in sorted(dir(mod)):
            f = getattr(mod, n)
            if not n.startswith("_") and callable(f) and getattr(f, "__module__", "") == mod.__name__:
                assert n not in out, f"op helper {n} defined in {out[n].__module__} and {modname}"
                out[n] = f
    return out


@pytest.mark.parametrize("helper", sorted(_public_helpers()))
def test_ophelper_has_rule_or_is_readable(helper):
    """Generated code calls these; transforming it again needs a rule or readable source."""
    fn = _public_helpers()[helper]
    if lookup(fn) is not None:
        return
    from s2s.frontend.normalize import normalize
    from s2s.frontend.parse import parse_function
    normalize(parse_function(fn))
