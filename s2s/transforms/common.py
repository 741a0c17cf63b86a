"""What the derivative and batching transforms share: operators as ufuncs, the rule of a
right-hand side, the symbolic states of derivatives, and the calls they emit.

- BINOP_FN / UNARY_FN: `a OP b` and `-a` as the ufuncs whose rules they share (`+` is np.add).
- op_rule: the rule, arguments and keywords of an ANF right-hand side; refuses (at the user's line)
  an op with no rule of the mode asked for.
- ZERO, OWNED, SHARED, MAYBE: the state of an adjoint (reverse mode) or tangent (forward mode):
  nothing flowed into it yet (no code), an array only it refers to (safe to update in place), a
  value that may alias another, a materialized scalar 0.0 that may have to become an array;
  join_states meets two states at a control-flow join, make_owned emits what makes one OWNED.
- same_shape_as: whether an elementwise op's cotangent needs no unbroadcast.
- rule_call, expr_stmt, index_expr, renamed: calls spelled by their rule's name (so the emitted
  code can be transformed again), call statements, indices as call arguments, renamed copies.
"""
from __future__ import annotations

import builtins
from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from ..errors import NoRuleError, NonDifferentiableError, UnsupportedSyntaxError
from ..frontend.nodes import clone, iter_nodes, parse_expr
from ..frontend.ast_build import assign, const, name, namer_for, walk_stmts
from ..rules.table import lookup, operator_ops

ZERO, OWNED, SHARED, MAYBE = "zero", "owned", "shared", "maybe"

# Operators as the ufuncs whose rules they share (OpRule.operator): gast.Add -> np.add
BINOP_FN: dict[type, Any] = operator_ops(gast.operator)
UNARY_FN: dict[type, Any] = operator_ops(gast.unaryop)


def join_states(a: str, b: str) -> str:
    if a == b:
        return a
    if MAYBE in (a, b):
        return MAYBE
    return SHARED


MISSING_RULE = {
    "adjoint": ("reverse-mode", "register one with @s2s.custom_vjp or s2s.adjoint, or use an op s2s knows"),
    "tangent": ("forward-mode", "register one with @s2s.custom_jvp or s2s.tangent, or use an op s2s knows"),
}


def op_rule(builder, value, s, which: str):
    """The rule, arguments and keywords of an ANF right-hand side (an operator or a call),
    or None when it carries no derivative.  `which` is "adjoint" or "tangent": a rule
    without that template is refused at the user's line."""
    if isinstance(value, gast.BinOp):
        fn, args, kws = BINOP_FN.get(type(value.op)), [value.left, value.right], {}
    elif isinstance(value, gast.UnaryOp):
        if isinstance(value.op, gast.Not):
            return None
        fn, args, kws = UNARY_FN.get(type(value.op)), [value.operand], {}
    elif isinstance(value, gast.Call):
        fn = getattr(value, "s2s_fn", None)
        args, kws = list(value.args), {k.arg: k.value for k in value.keywords}
    else:
        raise builder.error(UnsupportedSyntaxError, f"cannot differentiate a `{type(value).__name__}` expression", s)
    rule = lookup(fn)
    if fn is rt.call_opaque or fn is rt.call_method:
        # code s2s runs as written (frontend/inlining.py), reached by a differentiated value
        callee = getattr(args[0], "id", "this function") if fn is rt.call_opaque else f".{getattr(args[1], 'value', '?')}()"
        held = getattr(getattr(builder, "nf", None), "namespace", {}).get(callee) if fn is rt.call_opaque else None
        callee = getattr(held, "__qualname__", None) or getattr(held, "__name__", None) or callee   # (`dict`, not `dict1`)
        raise builder.error(NoRuleError, f"s2s has no derivative rule for `{callee}` and cannot read its source, "
                            "and a value that depends on the differentiated arguments flows into it", value,
                            "register a rule (@s2s.custom_vjp with f.defvjp, or @s2s.adjoint), rewrite it with "
                            "NumPy operations s2s knows, or wrap its arguments in s2s.stop_gradient(...)")
    if rule is not None and rule.refused:
        raise builder.error(NonDifferentiableError, f"s2s does not differentiate `{rule.name}`: {rule.refused}", s,
                            "wrap its arguments in s2s.stop_gradient(...) if no gradient is wanted")
    if rule is None or (getattr(rule, which) is None and not rule.nondiff):
        opname = rule.name if rule else type(getattr(value, "op", value)).__name__
        mode, hint = MISSING_RULE[which]
        raise builder.error(NoRuleError, f"s2s has no {mode} rule for `{opname}`", s, hint)
    if rule.nondiff:
        return None
    return rule, args, kws


def make_owned(deriv: str, var: str, state: dict, code: list) -> None:
    """Make `deriv` (the adjoint or tangent of `var`) an array only it refers to, so it can be
    updated in place: zeros if it is symbolic, a copy if it may alias, an array if a scalar 0."""
    st = state.get(var, ZERO)
    if st == ZERO:
        code.append(assign(deriv, rule_call(rt.zeros_like, [name(var)])))
    elif st == SHARED:
        code.append(assign(deriv, rule_call(rt.copy_value, [name(deriv)])))
    elif st == MAYBE:
        code.append(assign(deriv, gast.BinOp(name(deriv), gast.Add(), rule_call(rt.zeros_like, [name(var)]))))
    state[var] = OWNED


def copy_written_arguments(fdef: gast.FunctionDef, namespace: dict) -> None:
    """Prepend `x_copy = np.copy(x)` (and read x_copy after it) for each argument the function writes into (`x[0] = a * b`,
    np.add.at(x, ..)): a derivative runs the forward sweep on an array of its own, so the caller's
    array is not changed by grad/jvp (and may be read again by its backward sweep), and the copy is
    a fresh array forward and reverse mode can write into.  Written only after a rebinding
    (`x = y; x[0] = ..`) stays refused where it is written."""
    params = [a.id for a in fdef.args.args]
    written = set()
    for s in walk_stmts(fdef.body):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript) \
                and isinstance(s.targets[0].value, gast.Name):
            written.add(s.targets[0].value.id)
        elif isinstance(s, gast.Expr) and getattr(s.value, "s2s_fn", None) is rt.add_at \
                and isinstance(s.value.args[0], gast.Name):
            written.add(s.value.args[0].id)
    # (`w, b = params` binds `w_p = params_0` once: a write into w_p is a write into the argument)
    bindings: dict[str, list] = {}
    for s in walk_stmts(fdef.body):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            bindings.setdefault(s.targets[0].id, []).append(s.value)
    for var in list(written):
        seen = {var}
        while var not in params and len(bindings.get(var, ())) == 1 and isinstance(bindings[var][0], gast.Name) \
                and bindings[var][0].id not in seen:
            var = bindings[var][0].id
            seen.add(var)
        written.add(var)
    namer = namer_for(fdef, namespace)
    copies = []
    for p in params:
        if p in written:      # the body reads the copy only: `x_copy = np.copy(x)` is x's one use
            copy = namer.fresh(p + "_copy")
            for n in iter_nodes(gast.Module(body=fdef.body, type_ignores=[])):
                if isinstance(n, gast.Name) and n.id == p:
                    n.id = copy
            copies.append(assign(copy, rule_call(np.copy, [name(p)])))
    for st in copies:
        if fdef.body:
            gast.copy_location(st, fdef.body[0])
    fdef.body[:0] = copies


def rule_call(fn: Any, args: list, kws: dict | None = None) -> gast.Call:
    """A call of `fn` spelled by its rule (or, for a plain helper of s2s.runtime, by its name)."""
    rule = lookup(fn)
    spelling = rule.name if rule is not None else fn.__name__
    call = gast.Call(func=parse_expr(spelling), args=args,
                     keywords=[gast.keyword(k, v) for k, v in (kws or {}).items()])
    call.s2s_fn = fn
    return call


def same_shape_as(var: str, operands: list) -> bool:
    """An elementwise op's result has `var`'s shape when every other argument is a literal (a
    number, a flag: no shape of its own) or `var` itself (`x * 0.5`, `x * x`, `np.clip(x, 0.0, 1.0)`):
    its cotangent needs no unbroadcast, and the backward sweep no saved value to read a shape from
    (a scalar loop's pushes and pops halve)."""
    return all(isinstance(n, gast.Name) and n.id == var or isinstance(n, gast.Constant)
               and not isinstance(n.value, complex) for n in operands)   # (x * 1j: the real part is x's)


def expr_stmt(call) -> gast.Expr:
    return gast.Expr(value=call)


def index_expr(index):
    """An index node as an expression usable as a call argument (slices -> slice())."""
    if isinstance(index, gast.Slice):
        parts = [p if p is not None else const(None) for p in (index.lower, index.upper, index.step)]
        call = gast.Call(func=name("slice"), args=[clone(p) for p in parts], keywords=[])
        call.s2s_fn = builtins.slice
        return call
    if isinstance(index, gast.Tuple):
        return gast.Tuple([index_expr(e) for e in index.elts], gast.Load())
    return clone(index)


def renamed(node, mapping: dict[str, str]):
    if node is None:
        return None
    node = clone(node)
    for n in iter_nodes(node):
        if isinstance(n, gast.Name) and n.id in mapping:
            n.id = mapping[n.id]
    return node
