"""Which loop temporaries the backward sweep can recompute instead of saving.

A value defined inside a loop normally goes onto a tape in the forward sweep
and comes back off it in the backward sweep.  For a cheap pure expression of
values that are the same in both sweeps -- arrays the function never writes,
variables assigned once outside every loop, the loop's own index -- the
backward sweep can simply evaluate it again (`t = x[i]`, `c = t > 0`,
`u = np.sin(t)`), as JAX's remat and hand-written adjoints do.  That removes
a push and a pop per iteration and often the whole forward loop.

A variable qualifies when
- it is assigned exactly once, inside a loop, by an indexing of a never-written
  array, an arithmetic operator, a comparison or a NumPy ufunc, whose operands
  are constants, invariants (parameters never reassigned; locals assigned once
  outside every loop -- only shape numbers when the function writes into any
  array, since a local may be a view of it), enclosing loop indices or other qualifying
  variables whose definition comes first in the same iteration;
- every read of it comes after its definition in the same block (so it never
  carries a value from one iteration to the next), or outside every loop.
"""
from __future__ import annotations

import gast
import numpy as np

from ..frontend.nodes import iter_nodes, names_in
from ..frontend.ast_build import walk_stmts as _stmts


def _stores(node) -> set[str]:
    return {n.id for n in iter_nodes(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _top_level_reads(body) -> set[int]:
    """ids of Name nodes read outside every loop body."""
    out: set[int] = set()
    for s in body:
        if isinstance(s, (gast.For, gast.While)):
            parts = [s.iter] if isinstance(s, gast.For) else []   # a while test runs every iteration
        elif isinstance(s, gast.If):
            parts = [s.test]
            out |= _top_level_reads(s.body) | _top_level_reads(s.orelse)
        else:
            parts = [s]
        for p in parts:
            out |= {id(n) for n in iter_nodes(p) if isinstance(n, gast.Name)}
    return out


class _Finder:
    def __init__(self, body: list, params: list[str], written: set[str]):
        self.body = body
        self.written = set(written)
        counts: dict[str, int] = {}
        in_loop: set[str] = set()
        defs: dict[str, gast.Assign] = {}
        for s in _stmts(body):
            if isinstance(s, (gast.For, gast.While)):
                in_loop |= {n for b in s.body for n in _stores(b)}
                if isinstance(s, gast.For):
                    counts[s.target.id] = counts.get(s.target.id, 0) + 1
                    in_loop.add(s.target.id)
            elif isinstance(s, gast.Assign):
                for n in _stores(s.targets[0]):
                    counts[n] = counts.get(n, 0) + 1
                if isinstance(s.targets[0], gast.Name):
                    defs[s.targets[0].id] = s
        self.counts, self.in_loop, self.defs = counts, in_loop, defs
        self.params = set(params)
        self.top_reads = _top_level_reads(body)
        self.found: dict[str, gast.Assign] = {}

    def invariant(self, v: str) -> bool:
        if v in self.written or v in self.in_loop:
            return False
        if v in self.params:
            return self.counts.get(v, 0) == 0
        if self.counts.get(v, 0) != 1 or v not in self.defs:
            return False
        if self.written:
            # A local may be a view of an array written later (y[0], np.flip(y), ...), and view
            # detection is best-effort: when anything is written, only shape facts qualify.
            return _shape_fact(self.defs[v].value, self.defs)
        return True

    def operand_ok(self, node, avail: set[str]) -> bool:
        if isinstance(node, gast.Constant):
            return True
        if isinstance(node, gast.Name):
            return node.id in avail or self.invariant(node.id)
        if isinstance(node, gast.Slice):
            return all(p is None or self.operand_ok(p, avail) for p in (node.lower, node.upper, node.step))
        if isinstance(node, gast.Tuple):
            return all(self.operand_ok(e, avail) for e in node.elts)
        return False

    def value_ok(self, value, avail: set[str]) -> bool:
        if isinstance(value, gast.Subscript):
            base = value.value
            return isinstance(base, gast.Name) and self.invariant(base.id) and self.operand_ok(value.slice, avail)
        if isinstance(value, gast.BinOp):
            return self.operand_ok(value.left, avail) and self.operand_ok(value.right, avail)
        if isinstance(value, gast.UnaryOp):
            return self.operand_ok(value.operand, avail)
        if isinstance(value, gast.Compare):
            return len(value.ops) == 1 and self.operand_ok(value.left, avail) and \
                self.operand_ok(value.comparators[0], avail)
        if isinstance(value, gast.Call):
            return isinstance(getattr(value, "s2s_fn", None), np.ufunc) and not value.keywords and \
                all(self.operand_ok(a, avail) for a in value.args)
        return False

    def reads_dominated(self, v: str, later: list) -> bool:
        allowed = {id(n) for s in later for n in iter_nodes(s) if isinstance(n, gast.Name)} | self.top_reads
        for s in _stmts(self.body):
            parts = [s.test] if isinstance(s, (gast.If, gast.While)) else [s.iter] if isinstance(s, gast.For) \
                else [s]
            for p in parts:
                for n in iter_nodes(p):
                    if isinstance(n, gast.Name) and n.id == v and not isinstance(n.ctx, gast.Store) \
                            and id(n) not in allowed:
                        return False
        return True

    def block(self, stmts: list, avail: set[str], in_loop: bool) -> None:
        avail = set(avail)
        for k, s in enumerate(stmts):
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                v = s.targets[0].id
                if in_loop and v not in self.params and self.counts.get(v) == 1 and \
                        v not in _names(s.value) and self.value_ok(s.value, avail) and \
                        self.reads_dominated(v, stmts[k + 1:]):
                    self.found[v] = s
                    avail.add(v)
            elif isinstance(s, gast.For):
                tgt = s.target.id
                inner = set(avail)
                if not any(tgt in _stores(b) for b in s.body):
                    inner.add(tgt)
                self.block(s.body, inner, True)
            elif isinstance(s, gast.While):
                self.block(s.body, avail, True)
            elif isinstance(s, gast.If):
                self.block(s.body, avail, in_loop)
                self.block(s.orelse, avail, in_loop)


def _shape_fact(value, defs, depth: int = 0) -> bool:
    """An integer read off a shape (`x.shape`, `t[0]` of it, `len(x)`, `x.ndim`) or a constant."""
    if depth > 8:
        return False
    if isinstance(value, gast.Constant):
        return isinstance(value.value, (int, float, bool))
    if isinstance(value, gast.Attribute):
        return value.attr in ("shape", "ndim", "size")
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and value.value.id in defs:
        return _shape_fact(defs[value.value.id].value, defs, depth + 1) and \
            isinstance(defs[value.value.id].value, gast.Attribute)
    if isinstance(value, gast.Call) and getattr(value, "s2s_fn", None) is len:
        return True
    if isinstance(value, gast.BinOp):
        return all(isinstance(o, gast.Constant) or (isinstance(o, gast.Name) and o.id in defs
                                                   and _shape_fact(defs[o.id].value, defs, depth + 1))
                   for o in (value.left, value.right))
    return False


def _names(node) -> set[str]:
    return names_in(node)


def rematerializable(body: list, params: list[str], written: set[str]) -> dict[str, gast.Assign]:
    """Variables of `body` the backward sweep recomputes, with their defining statements."""
    finder = _Finder(body, params, written)
    finder.block(body, set(), False)
    return finder.found
