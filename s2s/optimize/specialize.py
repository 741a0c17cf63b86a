"""Specialize a generated function on the ranks and dtypes of its arguments.

Generated gradients cannot know at generation time whether `x[i]` is a number
or a row, so they keep shape-generic helpers: `unbroadcast(g, t)` (sum g down
to t's shape) and `seed_cotangent(y)` (check y is a real scalar).  Both keep
their second argument alive, and with it tape saves and whole forward loops
that exist only to answer a shape question.  Compiled code is dispatched on
argument types anyway (Numba compiles once per signature), so for each
signature s2s infers ranks and dtype kinds over the ANF and answers the
questions statically:

- `unbroadcast(g, t)` with t and g scalars -> `g`; t scalar, g an array -> `np.sum(g)`;
- `seed_cotangent(y)` with y a real scalar -> `1.0`.

The cleanup passes then drop what became dead (saves, tapes, loops).

The inference is flow-insensitive: a variable's facts are the join of all its
assignments; anything not understood is unknown, and unknown facts never
trigger a rewrite.
"""
from __future__ import annotations

import builtins
import math

import gast
import numpy as np

from .. import runtime as rt
from ..frontend.normalize import const

# Facts: (rank, kind). kind: 'b' bool, 'i' int, 'f' float, 'r' real (int or float), 'c' complex,
# None unknown. UNKNOWN is the top of the lattice, BOTTOM "no assignment seen yet".
UNKNOWN = (None, None)
BOTTOM = ("bottom", None)
SHAPE = ("shape", "i")
_REAL = ("b", "i", "f", "r")
_ORDER = {"b": 0, "i": 1, "r": 2, "f": 3}
_REDUCTIONS = {id(f) for f in (np.sum, np.mean, np.max, np.min, np.prod, np.amax, np.amin)}
_PREDICATES = {id(f) for f in (np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
                               np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.isnan,
                               np.isinf, np.isfinite, np.signbit)}


def arg_facts(args) -> tuple:
    """(rank, kind) of each actual argument, as a hashable key for the generated code."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            kind = a.dtype.kind
            out.append((a.ndim, "i" if kind == "u" else kind if kind in "bifc" else None))
        elif isinstance(a, (bool, np.bool_)):
            out.append((0, "b"))
        elif isinstance(a, (int, np.integer)):
            out.append((0, "i"))
        elif isinstance(a, (float, np.floating)):
            out.append((0, "f"))
        elif isinstance(a, (complex, np.complexfloating)):
            out.append((0, "c"))
        else:
            out.append(UNKNOWN)
    return tuple(out)


def _kind(*kinds):
    if any(k not in _REAL for k in kinds):
        return "c" if "c" in kinds and all(k in _REAL + ("c",) for k in kinds) else None
    best = max(kinds, key=lambda k: _ORDER[k])
    return "i" if best == "b" else best


def _join(a, b):
    if a == BOTTOM:
        return b
    if b == BOTTOM or a == b:
        return a
    if a[0] == b[0] and a[0] not in (None, "shape") and a[1] in _REAL and b[1] in _REAL:
        return (a[0], "f" if "f" in (a[1], b[1]) else "r")
    return UNKNOWN


class _Facts:
    def __init__(self, fdef: gast.FunctionDef, params: dict[str, tuple]):
        self.env: dict[str, tuple] = dict(params)
        self.fdef = fdef

    def infer(self) -> dict[str, tuple]:
        for _ in range(10):
            before = dict(self.env)
            self.block(self.fdef.body)
            if self.env == before:
                break
        return self.env

    def assign(self, var: str, fact) -> None:
        self.env[var] = _join(self.env.get(var, BOTTOM), fact)

    def block(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, gast.Assign):
                tgt = s.targets[0]
                if isinstance(tgt, gast.Name):
                    self.assign(tgt.id, self.expr(s.value))
                else:
                    for n in gast.walk(tgt):
                        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                            self.env[n.id] = UNKNOWN
            elif isinstance(s, gast.For):
                fn = getattr(s.iter, "s2s_fn", None)
                ranged = fn is builtins.range or (fn is builtins.reversed and
                                                  getattr(s.iter.args[0], "s2s_fn", None) is builtins.range)
                if isinstance(s.target, gast.Name):
                    self.assign(s.target.id, (0, "i") if ranged else UNKNOWN)
                else:
                    for n in gast.walk(s.target):
                        if isinstance(n, gast.Name):
                            self.env[n.id] = UNKNOWN
                self.block(s.body)
            elif isinstance(s, (gast.If, gast.While)):
                self.block(s.body)
                self.block(s.orelse)

    def expr(self, node):
        if isinstance(node, gast.Constant):
            v = node.value
            if isinstance(v, bool):
                return (0, "b")
            if isinstance(v, int):
                return (0, "i")
            if isinstance(v, float):
                return (0, "f")
            if isinstance(v, complex):
                return (0, "c")
            return UNKNOWN
        if isinstance(node, gast.Name):
            return self.env.get(node.id, BOTTOM)
        if isinstance(node, gast.BinOp):
            return self.binop(node)
        if isinstance(node, gast.UnaryOp):
            f = self.expr(node.operand)
            return (f[0], "b") if isinstance(node.op, gast.Not) and f[0] == 0 else f if f != SHAPE else UNKNOWN
        if isinstance(node, gast.Compare):
            facts = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
            return self.elementwise(facts, "b")
        if isinstance(node, gast.Subscript):
            return self.subscript(node)
        if isinstance(node, gast.Attribute):
            base = self.expr(node.value)
            if base in (BOTTOM,) or base[0] in (None, "shape"):
                return base if base == BOTTOM else UNKNOWN
            if node.attr == "shape":
                return SHAPE
            if node.attr in ("ndim", "size"):
                return (0, "i")
            if node.attr == "T":
                return base
            return UNKNOWN
        if isinstance(node, gast.Call):
            return self.call(node)
        return UNKNOWN

    def elementwise(self, facts, kind=None):
        if BOTTOM in facts:
            return BOTTOM
        if any(f[0] in (None, "shape") for f in facts):
            return UNKNOWN
        rank = max(f[0] for f in facts)
        if kind is None:
            kind = _kind(*[f[1] for f in facts])
        elif any(f[1] not in _REAL for f in facts) and kind != "b":
            kind = None
        return (rank, kind)

    def binop(self, node):
        left, right = self.expr(node.left), self.expr(node.right)
        if isinstance(node.op, gast.MatMult):
            if BOTTOM in (left, right):
                return BOTTOM
            if left[0] in (None, "shape") or right[0] in (None, "shape") or 0 in (left[0], right[0]):
                return UNKNOWN
            a, b = left[0], right[0]
            rank = 0 if a == b == 1 else b - 1 if a == 1 else a - 1 if b == 1 else max(a, b)
            return (rank, _kind(left[1], right[1]) if left[1] in _REAL and right[1] in _REAL else None)
        fact = self.elementwise([left, right])
        if fact in (BOTTOM, UNKNOWN):
            return fact
        if isinstance(node.op, gast.Div) and fact[1] in _REAL:
            return (fact[0], "f")
        if isinstance(node.op, gast.Pow) and fact[1] in _REAL:
            return (fact[0], "r")
        return fact

    def subscript(self, node):
        base = self.expr(node.value)
        if base == BOTTOM:
            return BOTTOM
        parts = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        if base == SHAPE:
            if len(parts) == 1 and isinstance(parts[0], gast.Constant) and isinstance(parts[0].value, int):
                return (0, "i")
            return UNKNOWN
        if base[0] is None:
            return UNKNOWN
        rank = base[0]
        for p in parts:
            if isinstance(p, gast.Slice):
                continue
            if isinstance(p, gast.Constant) and p.value is None:
                rank += 1
                continue
            if isinstance(p, gast.Constant) and isinstance(p.value, int) and not isinstance(p.value, bool):
                rank -= 1
                continue
            f = self.expr(p)
            if f == BOTTOM:
                return BOTTOM
            if f != (0, "i"):
                return UNKNOWN
            rank -= 1
        consumed = sum(1 for p in parts if not (isinstance(p, gast.Constant) and p.value is None))
        if consumed > base[0]:
            return UNKNOWN
        return (rank, base[1])

    def call(self, node):
        fn = getattr(node, "s2s_fn", None)
        args = [self.expr(a) for a in node.args]
        if fn is rt.unbroadcast and len(args) == 2:
            return args[1] if args[1] != SHAPE else UNKNOWN
        if fn in (rt.restore, ) and len(args) == 2:
            return args[1]
        if fn in (rt.copy_value, rt.zeros_like) and len(args) == 1 and not node.keywords:
            f = args[0]
            return f if fn is rt.copy_value or f in (BOTTOM, UNKNOWN) else (f[0], "f" if f[1] in _REAL else None)
        if fn is rt.seed_cotangent:
            return (0, "f")
        if node.keywords:
            return UNKNOWN
        if isinstance(fn, np.ufunc) and len(args) == fn.nin:
            return self.elementwise(args, "b" if id(fn) in _PREDICATES else None)
        if id(fn) in _REDUCTIONS and len(args) == 1:
            f = args[0]
            return BOTTOM if f == BOTTOM else (0, f[1] if f[1] in _REAL else None) if f[0] not in (None, "shape") \
                else UNKNOWN
        if fn is builtins.len and len(args) == 1:
            return (0, "i")
        if fn in (builtins.float, np.float64) and len(args) == 1:
            return (0, "f")
        if fn is builtins.int and len(args) == 1:
            return (0, "i")
        if getattr(fn, "__module__", None) == "math" and callable(fn) and \
                all(a[0] == 0 and a[1] in _REAL for a in args):
            return (0, "i" if fn in (math.floor, math.ceil, math.trunc) else "f")
        return UNKNOWN


class _Rewrite(gast.NodeTransformer):
    def __init__(self, facts: _Facts):
        self.facts = facts

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = getattr(node, "s2s_fn", None)
        if fn is rt.unbroadcast and len(node.args) == 2 and not node.keywords:
            g, t = (self.facts.expr(a) for a in node.args)
            if t[0] == 0 and g[0] == 0:
                return node.args[0]
            if t[0] == 0 and isinstance(g[0], int) and g[0] > 0:
                new = gast.Call(func=gast.Attribute(gast.Name("np", gast.Load(), None, None), "sum", gast.Load()),
                                args=[node.args[0]], keywords=[])
                new.s2s_fn = np.sum
                return new
        if fn is rt.seed_cotangent and len(node.args) == 1:
            y = self.facts.expr(node.args[0])
            if y[0] == 0 and y[1] in _REAL:
                return const(1.0)
        return node


def specialize(fdef: gast.FunctionDef, params: dict[str, tuple]) -> gast.FunctionDef:
    """Rewrite shape-generic helpers whose answers the argument facts decide."""
    facts = _Facts(fdef, params)
    facts.infer()
    return _Rewrite(facts).visit(fdef)
