"""Activity analysis: which variables need derivatives.

A variable is *varied* if it depends differentiably on an input we
differentiate with respect to, and *useful* if the output depends
differentiably on it; only variables that are both get adjoint code.  The
analysis is flow-insensitive (one fixpoint over all statements), which is
conservative: it may keep an adjoint that is always zero, never drop one
that is not.
"""
from __future__ import annotations

import gast

from ..rules.table import lookup
from .. import runtime as rt
from ..runtime import batching as rtb
from ..frontend.ast_build import walk_stmts as _stmts
from ..frontend.nodes import iter_nodes


def operand_names(value) -> list[str]:
    """Names whose values flow differentiably into `value` (an ANF right-hand side)."""
    if isinstance(value, gast.Name):
        return [value.id]
    if isinstance(value, gast.BinOp):
        return [n.id for n in (value.left, value.right) if isinstance(n, gast.Name)]
    if isinstance(value, gast.UnaryOp):
        if isinstance(value.op, gast.Not):
            return []
        return [value.operand.id] if isinstance(value.operand, gast.Name) else []
    if isinstance(value, gast.Subscript):
        # the index's names too: an index computed from a differentiated value (`obj[x]` of an
        # object whose __getitem__ computes) must be seen, then refused, never taken as constant
        index = [n.id for n in iter_nodes(value.slice) if isinstance(n, gast.Name)]
        return ([value.value.id] if isinstance(value.value, gast.Name) else []) + index
    if isinstance(value, gast.Call):
        rule = lookup(getattr(value, "s2s_fn", None))
        if rule is not None and rule.nondiff:
            return []
        out = []
        for a in list(value.args) + [k.value for k in value.keywords]:
            for n in iter_nodes(a):
                if isinstance(n, gast.Name):
                    out.append(n.id)
        return out
    if isinstance(value, (gast.Tuple, gast.List)):
        return [n.id for n in iter_nodes(value) if isinstance(n, gast.Name)]
    return []  # constants, comparisons, attributes (.shape)


def activity(body: list, wrt: list[str], outputs: list[str]) -> set[str]:
    """Return the set of active variable names (varied and useful)."""
    edges = _edges(body)
    varied = _closure(set(wrt), edges)
    useful = _closure(set(outputs), [(b, a) for a, b in edges])
    return varied & useful


def varied(body: list, wrt: list[str]) -> set[str]:
    """Variables that depend differentiably on `wrt` (what forward mode needs)."""
    return _closure(set(wrt), _edges(body))


# Calls made as statements that write into their first argument (the vmapped forms of
# `x[i] += v` and `x[i] = v` included): what flows into the other arguments flows into it.
WRITES_FIRST_ARGUMENT = (rt.push, rt.add_at, rtb.badd_at, rtb.bsetitem)


def _edges(body: list) -> list[tuple[str, str]]:
    edges: list[tuple[str, str]] = []   # (source, target): target depends on source
    for s in _stmts(body):
        if isinstance(s, gast.Assign):
            t = s.targets[0]
            if isinstance(t, gast.Name):
                for n in operand_names(s.value):
                    edges.append((n, t.id))
            elif isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name):
                for n in operand_names(s.value):
                    edges.append((n, t.value.id))
        elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            fn = getattr(s.value, "s2s_fn", None)
            args = s.value.args
            if fn in WRITES_FIRST_ARGUMENT and args and isinstance(args[0], gast.Name):
                for a in args[1:]:
                    for n in iter_nodes(a):
                        if isinstance(n, gast.Name):
                            edges.append((n.id, args[0].id))
    return edges


def _closure(start: set[str], edges: list[tuple[str, str]]) -> set[str]:
    succ: dict[str, list[str]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    seen = set(start)
    todo = list(start)
    while todo:
        n = todo.pop()
        for m in succ.get(n, ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen
