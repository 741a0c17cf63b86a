"""The rule table, enumerated: every argument an adjoint differentiates is checked against
finite differences somewhere.

For each op of NumPy, scipy, math, operator and the builtins with a reverse-mode rule, the
parameters its adjoint template writes (`d[x] = ...`) are the float arguments that carry a
derivative.  This test reads the op sweep's cases (tests/cases/op_cases.py, where grad and jvp are
compared with finite differences for every argument) and requires each such parameter to
receive, in at least one case, a value computed from the case's inputs.  Ops checked by a
dedicated file instead are listed in ELSEWHERE with that file (which must exist).  A new rule
without a case fails here, so no derivative enters the table untested.
"""
from __future__ import annotations

import ast
import builtins
import collections
import inspect
import os

import numpy as np
import pytest


from cases import op_cases
import s2s  # noqa: E402,F401  (registers the rules)
from s2s.rules.registry import all_rules  # noqa: E402
from s2s.rules.registry import builtin_rule, user_facing  # noqa: E402

from cases.paths import ROOT  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))

# op -> the test file that checks its differentiated arguments against finite differences
ELSEWHERE = {
    "np.full": "test_constructor_derivatives.py",
    "np.linspace": "test_constructor_derivatives.py",
    "np.full_like": "test_nondiff_audit.py",
    "np.logspace": "test_nondiff_audit.py",
    "np.bincount": "test_nondiff_audit.py",
    "np.heaviside": "test_nondiff_audit.py",
}

def _table() -> dict[int, object]:
    return {id(r.fn): r for r in all_rules()
            if not r.nondiff and r.adjoint is not None and user_facing(r.fn) and builtin_rule(r)}


def _resolve(node, namespace):
    if isinstance(node, ast.Name):
        return namespace.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, namespace)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def _covered(table) -> dict[int, set[str]]:
    """op -> the template parameters some case passes a value computed from its inputs."""
    covered: dict[int, set[str]] = collections.defaultdict(set)
    for case in op_cases.CASES:
        fdef = ast.parse(inspect.getsource(case.fn)).body[0]
        local = {a.arg for a in fdef.args.args}
        local |= {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

        def varies(expr):
            return any(isinstance(n, ast.Name) and n.id in local for n in ast.walk(expr))
        for call in (n for n in ast.walk(fdef) if isinstance(n, ast.Call)):
            rule = table.get(id(_resolve(call.func, case.fn.__globals__)))
            if rule is None:
                continue
            params = rule.adjoint.params[1:]
            for i, arg in enumerate(call.args):
                if i < len(params) and varies(arg):
                    covered[id(rule.fn)].add(params[i])
            for kw in call.keywords:
                if kw.arg and varies(kw.value):
                    covered[id(rule.fn)].add(kw.arg)
    return covered


def test_the_table_has_the_ops_the_issues_list():
    table = _table()
    names = {r.name for r in table.values()}
    assert len(table) > 150
    for expected in ("np.sin", "np.linalg.solve", "np.einsum", "np.clip", "logsumexp", "jv", "math.atan2"):
        assert expected in names, expected


def test_every_differentiated_argument_of_every_op_has_a_finite_difference_case():
    table = _table()
    covered = _covered(table)
    missing = []
    for key, rule in table.items():
        if rule.name in ELSEWHERE:
            assert os.path.exists(os.path.join(_HERE, ELSEWHERE[rule.name])), ELSEWHERE[rule.name]
            continue
        left = [p for p in rule.adjoint.written_params() if p not in covered[key]]
        if left:
            missing.append(f"{rule.name}: {', '.join(left)}")
    assert not missing, ("ops whose differentiated arguments no op-sweep case varies (add a case to "
                         "tests/cases/op_cases.py):\n  " + "\n  ".join(sorted(missing)))


@pytest.mark.parametrize("name", sorted(ELSEWHERE))
def test_ops_checked_elsewhere_are_in_the_table(name):
    assert name in {r.name for r in _table().values()}


def test_docs_op_table_is_current():
    """docs/ops.md is generated from the table: regenerate it (python3 docs/make_op_table.py)."""
    import importlib.util
    path = os.path.join(ROOT, "docs", "make_op_table.py")
    spec = importlib.util.spec_from_file_location("make_op_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(os.path.join(ROOT, "docs", "ops.md")) as f:
        assert f.read() == module.table(), "docs/ops.md is out of date: run python3 docs/make_op_table.py"
