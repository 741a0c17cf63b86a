"""Op locality: everything s2s's code says about one op sits in the folder of its family.

For every op of the rule table that users call (NumPy, scipy, math; Python's builtins are s2s's
own vocabulary and left out), the modules under s2s/ that *name* it in code - the op as a value
(`fn is np.cumsum`, `declare(np.cumsum, ...)`, a key of a table) or its dotted spelling as a string
(`"np.cumsum"`), not calls of it (`np.cumsum(x)` is a use, as in any helper, and so is a pass's
`rule_call(np.cumsum, args)`, which writes a call into generated code) and not comments -
must sit in its family's folder, s2s/ops/<family>/ (the module that registered its rule,
`OpRule.defined_in`, says which), at most 4 of them.  A pass that needs to know something of
particular ops asks their records instead (given with `declare`: batching kind and rule, axis
parameters, methods, operator, reduction kernel, call form, view, CUDA form, Numba rewrite).
"""
from __future__ import annotations

import ast
import builtins
import collections
import importlib
import os

import s2s
from s2s.rules.registry import all_rules, registered_later, user_facing

ROOT = os.path.dirname(s2s.__file__)
MAX_MODULES = 4
# the functions passes write a call of an op with, f(op, args) -> `op(args)` (transforms/common.py,
# frontend/inlining.py, optimize/specialize.py, optimize/array_tapes.py)
CALL_BUILDERS = ("rule_call", "call_rule", "_np_call", "_call")



def _ops() -> dict[int, object]:
    return {id(r.fn): r for r in all_rules()
            if user_facing(r.fn) and type(r.fn).__name__ != "method" and getattr(r.fn, "__module__", None) != "builtins"}


def family(rule) -> str:
    parts = rule.defined_in.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["s2s", "ops"] else rule.defined_in


def _modules():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py") and f != "__main__.py":
                rel = os.path.relpath(os.path.join(folder, f), os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                yield (rel[: -len(".__init__")] if rel.endswith(".__init__") else rel), os.path.join(folder, f)


def _dotted(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def names_in(source: str, namespace: dict, ops: dict) -> set[int]:
    """The ops `source` names: as values (not called) resolved in `namespace`, or dotted spellings."""
    tree = ast.parse(source)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # a pass that writes a call of the op into generated code uses it, as a call does
    called |= {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
               and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) in CALL_BUILDERS}
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    spellings = {r.name: oid for oid, r in ops.items() if "." in r.name}
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Attribute, ast.Name)) and isinstance(n.ctx, ast.Load) \
                and id(n) not in called and id(n) not in inner:
            chain = _dotted(n)
            if chain is None:
                continue
            obj = namespace.get(chain[0], getattr(builtins, chain[0], None))
            for attr in chain[1:]:
                obj = getattr(obj, attr, None)
            if obj is not None and id(obj) in ops:
                found.add(id(obj))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in spellings:
            found.add(spellings[n.value])
    return found


def naming_modules() -> dict[int, set[str]]:
    ops = _ops()
    out = collections.defaultdict(set)
    for module, path in _modules():
        namespace = vars(importlib.import_module(module))
        with open(path) as f:
            for oid in names_in(f.read(), namespace, ops):
                out[oid].add(module)
    return out


NAMING = naming_modules()


def test_ops_are_named_only_in_their_family_folder():
    ops = _ops()
    elsewhere = collections.defaultdict(set)
    for oid, modules in NAMING.items():
        for m in modules:
            if not m.startswith(family(ops[oid])):
                elsewhere[m].add(ops[oid].name)
    assert not elsewhere, ("ops named outside their family's folder (put the fact in the op's record, "
                           f"`declare`): { {m: sorted(v) for m, v in elsewhere.items()} }")


def test_at_most_four_modules_of_a_family_name_an_op():
    ops = _ops()
    crowded = {ops[oid].name: sorted(m for m in modules if m.startswith(family(ops[oid])))
               for oid, modules in NAMING.items()}
    crowded = {k: v for k, v in crowded.items() if len(v) > MAX_MODULES}
    assert not crowded, crowded


def test_every_op_of_s2s_is_registered_from_a_family_folder():
    # (not the ops registered at run time: a user's rules, the pmaps a test built)
    outside = sorted(r.name for r in all_rules() if not registered_later(r.fn)
                     and not r.defined_in.startswith("s2s.ops."))
    assert not outside, outside


def test_the_scan_sees_a_value_a_spelling_and_not_a_call():
    import numpy as np
    ops = _ops()
    src = "a = fn is np.cumsum\nb = 'np.linalg.svd'\nc = np.tanh(x)\n# np.sinh\n"
    found = names_in(src, {"np": np}, ops)
    assert found == {id(np.cumsum), id(np.linalg.svd)}
