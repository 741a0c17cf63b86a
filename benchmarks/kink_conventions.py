"""Gradient conventions at kinks: s2s's derivative beside JAX's, at the points where the maths
has no derivative (abs at 0, ties of max/min/clip/sort, hypot and norm at 0, std of a constant, ...).

For each case it prints s2s's gradient by every mode (grad, forward mode through jacfwd, jvp along
a ones tangent, jit(grad), vmap(grad) over a batch of two copies of the point, and the hessian
where it is asked for) and JAX's jax.grad (float64) at the same point, then whether s2s's modes
agree with each other and whether s2s agrees with JAX.  docs/conventions.md is this table.

    pip install -e '.[bench]'          # JAX is a reference here, not a dependency of s2s
    python3 benchmarks/kink_conventions.py              # the table in the terminal
    python3 benchmarks/kink_conventions.py --markdown   # the rows of docs/conventions.md
    python3 benchmarks/kink_conventions.py --no-jit     # skip the Numba compiles (faster)

The exit status is 1 when s2s's own modes disagree (a bug), 0 otherwise; a difference from JAX is
reported, not an error (docs/conventions.md says why where s2s differs on purpose), and so is
jacfwd's nan beside an infinite slope (0 * inf, as in JAX: docs/conventions.md, rule 4).
"""
from __future__ import annotations

import os
os.environ.setdefault("S2S_JIT_WAIT", "1")   # (timings of machine code: jit compiles before it answers)

import argparse
import sys
import types
import warnings

import numpy as np

W3 = np.array([1.0, 2.0, 3.0])


# Every case is a function of one float64 array v.  JAX runs the same code with np bound to
# jax.numpy (the function's globals are swapped; s2s reads this source).

def abs_(v):
    return np.sum(np.abs(v))


def fabs_(v):
    return np.sum(np.fabs(v))


def builtin_abs(v):
    return abs(v[0]) + abs(v[1])


def maximum_tie(v):
    return np.maximum(v[0], v[1])


def minimum_tie(v):
    return np.minimum(v[0], v[1])


def relu(v):
    return np.sum(np.maximum(v, 0.0))


def clip_const(v):
    return np.sum(np.clip(v, 0.0, 1.0))


def clip_args(v):
    return np.clip(v[0], v[1], v[2])


def max_ties(v):
    return np.max(v)


def min_ties(v):
    return np.min(v)


def amax_axis(v):
    return np.sum(np.amax(np.reshape(v, (2, 2)), axis=1))


def argmax_pick(v):
    return v[np.argmax(v)]


def sort_ties(v):
    return np.sum(np.sort(v) * W3)


def median_ties(v):
    return np.median(v)


def hypot0(v):
    return np.hypot(v[0], v[1])


def norm0(v):
    return np.linalg.norm(v)


def norm1_0(v):
    return np.linalg.norm(v, 1)


def norminf_ties(v):
    return np.linalg.norm(v, np.inf)


def sqrt0(v):
    return np.sum(np.sqrt(v))


def pow_half(v):
    return np.sum(v ** 0.5)


def pow_zero(v):
    return np.sum(v ** 0.0)


def pow_xy(v):
    return v[0] ** v[1]


def power_base0(v):
    return np.sum(np.power(0.0, v))


def log0(v):
    return np.sum(np.log(v))


def std_const(v):
    return np.std(v)


def var_const(v):
    return np.var(v)


def sign_(v):
    return np.sum(np.sign(v) * v)


def where_edge(v):
    return np.sum(np.where(v > 0.0, v * v, -v))


def round_floor(v):
    return np.sum(np.round(v) + np.floor(v))


# (label, function, point, hessian too?)
CASES = [
    ("abs(x) at x = 0", abs_, [0.0, -1.0, 2.0], True),
    ("np.fabs(x) at x = 0", fabs_, [0.0, -1.0, 2.0], False),
    ("builtin abs(x) at x = 0", builtin_abs, [0.0, -1.0], False),
    ("np.maximum(x, y) at x == y", maximum_tie, [1.0, 1.0], True),
    ("np.minimum(x, y) at x == y", minimum_tie, [1.0, 1.0], False),
    ("relu np.maximum(x, 0) at 0", relu, [0.0, 1.0, -1.0], True),
    ("np.clip(x, 0, 1) at x = 0, 1", clip_const, [0.0, 1.0, 0.5, 2.0, -1.0], False),
    ("np.clip(x, lo, hi) at x == lo: d(x, lo, hi)", clip_args, [0.0, 0.0, 1.0], True),
    ("np.clip(x, lo, hi) at x == hi: d(x, lo, hi)", clip_args, [1.0, 0.0, 1.0], False),
    ("np.clip(x, lo, hi) at x == lo == hi", clip_args, [1.0, 1.0, 1.0], False),
    ("np.max(v), two tied maxima", max_ties, [1.0, 1.0, 0.0], True),
    ("np.max(v), all equal", max_ties, [2.0, 2.0, 2.0], False),
    ("np.min(v), two tied minima", min_ties, [0.0, 1.0, 0.0], False),
    ("np.amax(m, axis=1), a tied row", amax_axis, [1.0, 1.0, 0.0, 2.0], False),
    ("v[np.argmax(v)], tied", argmax_pick, [1.0, 3.0, 3.0], False),
    ("np.sort(v) @ [1, 2, 3], ties", sort_ties, [1.0, 1.0, 0.0], False),
    ("np.median(v), odd n, ties", median_ties, [1.0, 1.0, 1.0], False),
    ("np.median(v), even n, ties", median_ties, [1.0, 1.0, 0.0, 2.0], False),
    ("np.hypot(x, y) at (0, 0)", hypot0, [0.0, 0.0], False),
    ("np.linalg.norm(v) at v = 0", norm0, [0.0, 0.0, 0.0], False),
    ("np.linalg.norm(v, 1) at v = 0", norm1_0, [0.0, 0.0], False),
    ("np.linalg.norm(v, inf), tied magnitudes", norminf_ties, [1.0, -1.0], False),
    ("np.sqrt(x) at 0", sqrt0, [0.0, 1.0], False),
    ("x ** 0.5 at 0", pow_half, [0.0, 1.0], False),
    ("x ** 0.0 at 0", pow_zero, [0.0, 1.0], False),
    ("x ** y at (0, 2): d(x, y)", pow_xy, [0.0, 2.0], False),
    ("x ** y at (0, 0): d(x, y)", pow_xy, [0.0, 0.0], False),
    ("np.power(0, y) at y = 2, 0.5", power_base0, [2.0, 0.5], False),
    ("np.log(x) at 0", log0, [0.0, 1.0], False),
    ("np.std(v) of a constant", std_const, [2.0, 2.0, 2.0], False),
    ("np.var(v) of a constant", var_const, [2.0, 2.0, 2.0], False),
    ("np.sign(x) * x at 0", sign_, [0.0, -2.0], False),
    ("np.where(x > 0, x*x, -x) at 0", where_edge, [0.0, 1.0], False),
    ("np.round(x) + np.floor(x)", round_floor, [0.5, 1.0], False),
]


# Why s2s differs from JAX where it does (docs/conventions.md says more).
APEX = "cone apex: 0 (rule 3)"
WHY = {"abs(x) at x = 0": APEX, "np.fabs(x) at x = 0": APEX, "builtin abs(x) at x = 0": APEX,
       "np.hypot(x, y) at (0, 0)": APEX, "np.linalg.norm(v) at v = 0": APEX, "np.std(v) of a constant": APEX,
       "np.linalg.norm(v, 1) at v = 0": "follows abs (rule 3)",
       "np.linalg.norm(v, inf), tied magnitudes": "follows abs (rule 3)"}


def _fmt(a):
    if isinstance(a, str):
        return a
    a = np.asarray(a, dtype=float)
    with np.printoptions(precision=4, suppress=True):
        return np.array2string(a.ravel(), separator=", ") if a.ndim else f"{float(a):.4g}"


def _same(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))


def s2s_modes(fn, x, jit=True, hess=False):
    """s2s's gradient of fn at x by each mode: {mode: array or 'error: ...'}."""
    import s2s

    out = {}

    def attempt(name, thunk):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out[name] = np.asarray(thunk(), dtype=float)
        except Exception as exc:   # a mode that refuses is reported, not fatal
            out[name] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"

    attempt("grad", lambda: s2s.grad(fn)(x.copy()))
    attempt("jacfwd", lambda: s2s.jacfwd(fn)(x.copy()))
    attempt("jvp.1", lambda: s2s.jvp(fn, (x.copy(),), (np.ones_like(x),))[1])
    if jit:
        attempt("jit(grad)", lambda: s2s.jit(s2s.grad(fn))(x.copy()))
    attempt("vmap(grad)", lambda: s2s.vmap(s2s.grad(fn))(np.stack([x, x]))[1])
    if hess:
        attempt("hessian", lambda: s2s.hessian(fn)(x.copy()))
    return out


def modes_agree(modes):
    """The modes that disagree with grad (jvp.1 against grad . ones), as a list of names."""
    g = modes.get("grad")
    if isinstance(g, str):
        return [m for m, v in modes.items() if m not in ("grad", "hessian") and not isinstance(v, str)]
    bad = []
    for m, v in modes.items():
        if m in ("grad", "hessian"):
            continue
        ref = np.sum(g) if m == "jvp.1" else g
        if isinstance(v, str) or not _same(v, ref):
            bad.append(m)
    return bad


def jax_grad(fn, x, hess=False):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return "JAX not installed", None
    jax.config.update("jax_enable_x64", True)
    jfn = types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__)
    g = np.asarray(jax.grad(jfn)(jnp.asarray(x)))
    h = np.asarray(jax.hessian(jfn)(jnp.asarray(x))) if hess else None
    return g, h


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--markdown", action="store_true", help="print the table rows of docs/conventions.md")
    p.add_argument("--no-jit", action="store_true", help="skip jit(grad) (no Numba compiles)")
    args = p.parse_args(argv)
    status = 0
    rows = []
    for label, fn, point, hess in CASES:
        x = np.array(point)
        modes = s2s_modes(fn, x, jit=not args.no_jit, hess=hess)
        jg, jh = jax_grad(fn, x, hess)
        bad = modes_agree(modes)
        g = modes["grad"]
        if bad == ["jacfwd"] and not isinstance(g, str) and not np.all(np.isfinite(g)):
            # jacfwd's column of a finite entry pushes a zero tangent through the infinite slope of
            # another: 0 * inf = nan, as in JAX (docs/conventions.md, rule 4), not a disagreement
            bad = ["jacfwd: nan beside an inf, rule 4"]
        elif bad:
            status = 1
        same_jax = None if isinstance(jg, str) else _same(g, jg)
        rows.append((label, point, modes, jg, jh, bad, same_jax))
        if not args.markdown:
            print(f"{label}   at {point}")
            for m, v in modes.items():
                print(f"    s2s {m:11s} {_fmt(v)}")
            print(f"    jax grad        {_fmt(jg)}")
            if jh is not None:
                print(f"    jax hessian     {_fmt(jh)}")
            print(f"    modes agree: {'yes' if not bad else 'NO: ' + ', '.join(bad)};"
                  f"  s2s == JAX: {'?' if same_jax is None else 'yes' if same_jax else 'NO'}")
    if args.markdown:
        print("| case | point | s2s (grad = jvp = jit(grad) = vmap(grad)) | JAX | same | why not |")
        print("|---|---|---|---|---|---|")
        for label, point, modes, jg, jh, bad, same_jax in rows:
            s = _fmt(modes["grad"])
            if bad:
                s += f" ({bad[0]})" if bad[0].endswith("rule 4") else " (modes differ: " + ", ".join(bad) + ")"
            same = "?" if same_jax is None else "yes" if same_jax else "**no**"
            why = WHY.get(label, "") if not same_jax else ""
            print(f"| {label} | {_fmt(point)} | {s} | {_fmt(jg)} | {same} | {why} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
