"""Write docs/ops.md: every NumPy / scipy.special / math / builtin op s2s knows, from the rule table.

    python3 docs/make_op_table.py          # rewrite docs/ops.md
    python3 docs/make_op_table.py --check  # exit 1 if docs/ops.md is out of date (tests run this)

For each op: the arguments its reverse-mode rule differentiates, the float arguments it refuses
(differentiating them raises NonDifferentiableError at the user's line), whether forward mode
has a rule, and how vmap batches it.  Ops defined by other ops (s2s/ops/composite/rules.py), the
scipy.stats distributions (s2s/ops/stats/rules.py) and ops with no derivative are listed after.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import s2s  # noqa: E402,F401  (registers the rules)
from s2s.rules.registry import all_rules  # noqa: E402
from s2s.rules.batch_rules import batch_kind  # noqa: E402
from s2s.rules.registry import COMPOSITES, builtin_rule, user_facing  # noqa: E402

# Arguments that are never values of the maths (sizes, axes, flags, dtypes, methods)
_NOT_VALUES = {"axis", "axes", "keepdims", "dtype", "out", "order", "casting", "kind", "stable", "copy", "ndmin",
               "mode", "UPLO", "upper", "full_matrices", "compute_uv", "hermitian", "optimize", "ord", "offset",
               "axisa", "axisb", "axisc", "axis1", "axis2", "source", "destination", "newshape", "shape", "n",
               "k", "reps", "repeats", "indices_or_sections", "shift", "endpoint", "retstep", "num", "like",
               "correction", "ddof", "side", "subok", "where", "initial", "method", "interpolation", "kth",
               "start_axis", "subscripts", "pad_width", "sorter", "return_sign", "decimals", "bins", "x_ind"}

_BATCH = {"elementwise": "elementwise", "reduce": "axis shift", "matmul": "batched matmul", "same": "as is",
          "axis_args": "axis shift", "shape_query": "per example", "shape_fn": "first example",
          "dot": "batched dot", "reshape": "per-example reshape", "transpose": "per-example transpose"}


def _label(fn, rule_name: str) -> str:
    mod = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__name__", rule_name)
    if isinstance(fn, np.ufunc):
        return rule_name if rule_name.startswith("np.") else f"scipy.special.{rule_name}"
    if mod.startswith("scipy"):
        return f"scipy.special.{name}"
    if mod == "builtins":
        return f"{name} (builtin)"
    if mod in ("_operator", "operator"):
        return f"operator.{name}"
    if mod.startswith("numpy"):
        sub = mod.split(".")[1] if mod.count(".") and mod.split(".")[1] in ("linalg", "fft") else ""
        return f"np.{sub + '.' if sub else ''}{name}"
    return rule_name


def _vmap(fn) -> str:
    kind = batch_kind(fn)
    return _BATCH.get(kind, kind) if kind else "per-example loop"


def table() -> str:
    rows, nondiff, refused_ops, seen = [], [], [], set()
    for rule in all_rules():
        fn = rule.fn
        if not user_facing(fn) or not builtin_rule(rule) or id(fn) in seen:
            continue
        seen.add(id(fn))
        label = _label(fn, rule.name)
        if rule.nondiff:
            nondiff.append(label)
            continue
        if rule.refused:
            refused_ops.append((label, rule.refused))
            continue
        if rule.adjoint is None and rule.tangent is None:
            continue
        tmpl = rule.adjoint or rule.tangent
        diffd = rule.adjoint.written_params() if rule.adjoint else []
        refused = [p for p in tmpl.params[1:] if p not in diffd and p not in tmpl.static_params
                   and p not in _NOT_VALUES]
        rows.append((label, ", ".join(diffd) or "-", ", ".join(refused) or "-",
                     "yes" if rule.adjoint else "refused", "yes" if rule.tangent else "refused", _vmap(fn)))
    composites = sorted({_label(fn, getattr(fn, "__name__", "?")) for fn in _composite_fns()})
    out = ["# The op table",
           "",
           "Generated from the rule table by `python3 docs/make_op_table.py` (a test checks it is current).",
           "Every op here has reverse mode (`grad`, `vjp`, `jacrev`, `hessian`) and forward mode (`jvp`,",
           "`jacfwd`) unless a column says *refused*; *refused arguments* are float arguments whose",
           "derivative has no closed form here: differentiating them raises `NonDifferentiableError` at the",
           "user's line (wrap them in `s2s.stop_gradient` if no gradient is wanted). Integer, axis, shape and",
           "flag arguments carry no derivative and are not listed. *vmap* says how the op is batched (a",
           "per-example loop is correct but slower). Under `jit` every op compiles through Numba except",
           "the (transform, case) pairs listed as strict xfails in `tests/ops/test_op_sweep_jit.py` (`KNOWN_JIT`),",
           "each with its reason. Arguments and outputs are real; complex values may live in between",
           "(`np.fft.*`, `1j * x`, `z.real`, `np.abs(z)`: see rules.md, \"Complex values inside a function\").",
           "Complex eigenvalues are refused with a clear error.",
           "",
           "Outputs: `grad` needs a scalar (a number or a 0-d array). As in JAX, an output of shape `(1,)`",
           "or `(1, 1)` is refused (autograd would accept it): reduce it (`np.sum(y)`, `y[0]`) or take",
           "`jacrev`/`vjp`. A boolean output is refused as JAX refuses it: comparisons have no derivative.",
           "",
           "| op | differentiated arguments | refused arguments | reverse | forward | vmap |",
           "|---|---|---|---|---|---|"]
    out += [f"| `{r[0]}` | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} |" for r in sorted(rows)]
    out += ["", "## Ops defined by other ops", "",
            "Inlined as the NumPy operations that define them, so every mode comes from those ops' rules",
            "(see [rules.md](rules.md#ops-defined-by-other-ops)):", "",
            ", ".join(f"`{c}`" for c in composites), "",
            "## scipy.stats distributions", "",
            "Methods of scipy.stats' distribution objects, defined by the ops above and inlined the same way",
            "(`s2s/ops/stats/rules.py`), called as `norm.logpdf(x, loc, scale)`, `st.norm.logpdf(...)` or",
            "through an alias; arguments positional or by keyword, broadcast as scipy broadcasts them. Values",
            "follow scipy's, -inf/0 outside the support and NaN for invalid parameters included.",
            "*Refused arguments* raise `NonDifferentiableError` if differentiated (betainc's and gammainc's",
            "shape parameters); poisson's `k` and `loc` carry no derivative. `cov`'s cotangent lives on its",
            "lower triangle, the one np.linalg.cholesky (and scipy's eigh) reads. Frozen distributions",
            "(`norm(0, 1).logpdf(x)`) are not supported (an s2s error). Under `jit`, multivariate_normal and",
            "a dirichlet of 2-d `x` are refused (scipy squeezes their result, whose rank then depends on the",
            "sizes): `jit(f, fallback=True)` runs them as Python.", "",
            "| op | differentiated arguments | refused arguments |",
            "|---|---|---|"]
    out += _stats_rows()
    out += ["",
            "## Ops refused when a derivative flows in", "",
            "They run on constants as usual; a differentiated value reaching them raises",
            "`NonDifferentiableError` with the reason:", ""]
    out += [f"- `{name}`: {why}" for name, why in sorted(refused_ops)]
    out += ["", "## Ops with no derivative", "",
            "Comparisons, rounding, argmax-like and constructor ops: their results carry no derivative",
            "(a zero gradient is the right answer for them):", "",
            ", ".join(f"`{n}`" for n in sorted(set(nondiff))), ""]
    return "\n".join(out)


def _stats_rows() -> list[str]:
    """One row per scipy.stats method: its signature, the arguments differentiated and refused."""
    import inspect
    from s2s.ops.stats.rules import DISTRIBUTIONS
    rows = []
    for dist, method, definition, refused, constant in DISTRIBUTIONS:
        params = list(inspect.signature(definition).parameters.values())
        sig = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in params)
        diffd = [p.name for p in params if p.name not in refused and p.name not in constant]
        rows.append(f"| `scipy.stats.{dist}.{method}({sig})` | {', '.join(diffd)} | {', '.join(refused) or '-'} |")
    return rows


def _composite_fns():
    from s2s.rules import registry
    return [fn for fn in registry._KEEPALIVE if id(fn) in COMPOSITES and user_facing(fn)]


def main(argv) -> int:
    path = os.path.join(HERE, "ops.md")
    text = table()
    if "--check" in argv:
        with open(path) as f:
            return 0 if f.read() == text else 1
    with open(path, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
