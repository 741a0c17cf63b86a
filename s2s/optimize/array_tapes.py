"""Typed list tapes -> preallocated array tapes, for compiled code.

After specialization the compiled gradient knows the dtype of each scalar it
saves (a float64 `s`, an int64 loop index, a bool branch condition).  Such a
tape becomes a NumPy buffer plus a count held in two local variables:

    tape_v_s = stack()            ->  tape_v_s = np.empty(16, np.float64); tape_v_s_n = 0
    push(tape_v_s, s)             ->  tape_v_s = tape_push(tape_v_s, tape_v_s_n, s); tape_v_s_n += 1
    s = restore(tape_v_s, s)      ->  tape_v_s_n -= 1; s = tape_top(tape_v_s, tape_v_s_n, s)
    v = pop(tape_v_v)             ->  tape_v_v_n -= 1; v = tape_v_v[tape_v_v_n]

and a `for ... in range(...)` loop that pushes onto it reserves room for all its
pushes before it starts (the trip count is known on entry), so the loop body
never reallocates.  Numba compiles these to plain loads and stores, where a
typed List costs a call into its C runtime per push and pop.  Tapes of arrays,
or of values whose dtype the facts leave open, stay typed Lists.
"""
from __future__ import annotations

import builtins

import gast
import numpy as np

from .. import runtime as rt
from ..analysis.resolve import resolve_call
from ..frontend.annotations import GRAD_OF, getanno, setanno
from ..frontend.nodes import iter_nodes, names_in
from ..frontend.ast_build import assign, const, copy_loc, name

_DTYPES = {"f": "float64", "i": "int64", "b": "bool_"}


def _call(fn, func_node, args):
    node = gast.Call(func=func_node, args=args, keywords=[])
    node.s2s_fn = fn
    return node


def _rt(fn, args):
    return _call(fn, name(fn.__name__), args)


class _Tapes:
    def __init__(self, fdef, facts, namespace):
        self.fdef, self.facts, self.namespace = fdef, facts, namespace
        self.taken = names_in(fdef)

    def fn(self, node):
        return resolve_call(node, self.namespace) if isinstance(node, gast.Call) else None

    def candidates(self) -> dict[str, str]:
        """Tape name -> element dtype, for tapes used only in the forms above with scalar elements."""
        created, elem, bad = set(), {}, set()
        for n in iter_nodes(self.fdef):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name) and self.fn(n.value) is rt.stack:
                created.add(n.targets[0].id)
        uses: dict[str, int] = {}
        for n in iter_nodes(self.fdef):
            if isinstance(n, gast.Name) and n.id in created:
                uses[n.id] = uses.get(n.id, 0) + 1
        ok: dict[str, int] = {}
        for n in iter_nodes(self.fdef):
            if isinstance(n, gast.Expr) and self.fn(n.value) is rt.push:
                tape, value = n.value.args
                if isinstance(tape, gast.Name) and tape.id in created:
                    ok[tape.id] = ok.get(tape.id, 0) + 1
                    fact = self.facts.expr(value)
                    kind = fact[1] if fact[0] == 0 else None
                    if kind not in _DTYPES or elem.get(tape.id, kind) != kind:
                        bad.add(tape.id)
                    elem[tape.id] = kind
            elif isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                fn = self.fn(n.value)
                if fn is rt.stack and n.targets[0].id in created:
                    ok[n.targets[0].id] = ok.get(n.targets[0].id, 0) + 1
                elif fn in (rt.restore, rt.pop) and isinstance(n.value.args[0], gast.Name) \
                        and n.value.args[0].id in created:
                    ok[n.value.args[0].id] = ok.get(n.value.args[0].id, 0) + 1
        return {t: _DTYPES[elem[t]] for t in created
                if t in elem and t not in bad and ok.get(t) == uses.get(t)}

    def count_name(self, tape: str) -> str:
        new, k = f"{tape}_n", 1
        while new in self.taken:
            new, k = f"{tape}_n{k}", k + 1
        self.taken.add(new)
        return new

    def rewrite(self, stmts: list, tapes: dict, counts: dict) -> list:
        out = []
        for s in stmts:
            for field in ("body", "orelse"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and isinstance(s, (gast.If, gast.For, gast.While)):
                    setattr(s, field, self.rewrite(sub, tapes, counts))
            if isinstance(s, gast.For):
                out += self.reserve(s, tapes, counts)
                out.append(s)
                continue
            new = self.rewrite_stmt(s, tapes, counts)
            for n in new or []:
                copy_loc(n, s)
                setanno(n, GRAD_OF, getanno(s, GRAD_OF, False))
            out += new if new is not None else [s]
        return out

    def rewrite_stmt(self, s, tapes, counts):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and self.fn(s.value) is rt.stack:
            tape = s.targets[0].id
            if tape in tapes:
                n = counts[tape]
                dtype = gast.Attribute(name("np"), tapes[tape], gast.Load())
                return [assign(tape, _call(np.empty, gast.Attribute(name("np"), "empty", gast.Load()),
                                           [const(16), dtype])), assign(n, const(0))]
        if isinstance(s, gast.Expr) and self.fn(s.value) is rt.push:
            tape = s.value.args[0].id
            if tape in tapes:
                n = counts[tape]
                return [assign(tape, _rt(rt.tape_push, [name(tape), name(n), s.value.args[1]])),
                        assign(n, gast.BinOp(name(n), gast.Add(), const(1)))]
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            fn = self.fn(s.value)
            args = getattr(s.value, "args", [])
            tape = args[0].id if args and isinstance(args[0], gast.Name) else None
            if tape not in tapes:
                return None
            n = counts[tape]
            drop = assign(n, gast.BinOp(name(n), gast.Sub(), const(1)))
            if fn is rt.restore:
                return [drop, assign(s.targets[0].id, _rt(rt.tape_top, [name(tape), name(n), args[1]]))]
            if fn is rt.pop:
                return [drop, assign(s.targets[0].id, gast.Subscript(name(tape), name(n), gast.Load()))]
        return None

    def reserve(self, loop: gast.For, tapes, counts) -> list:
        """Before a range loop: room for every push its body makes (per-path maximum)."""
        if self.fn(loop.iter) is not builtins.range:
            return []
        out = []
        for tape in sorted(tapes):
            k = _pushes(loop.body, tape, counts[tape])
            if k:
                trips = _call(builtins.len, name("len"), [gast.Call(func=name("range"), args=loop.iter.args,
                                                                    keywords=[])])
                trips.args[0].s2s_fn = builtins.range
                extra = gast.BinOp(trips, gast.Mult(), const(k)) if k > 1 else trips
                out.append(copy_loc(assign(tape, _rt(rt.tape_reserve, [name(tape), name(counts[tape]), extra])),
                                    loop))
        return out


def _pushes(stmts, tape: str, count: str) -> int:
    """Pushes onto `tape` on the longest path through one pass of `stmts` (0 if inside a loop)."""
    total = 0
    for s in stmts:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id == tape \
                and getattr(s.value, "s2s_fn", None) is rt.tape_push:
            total += 1
        elif isinstance(s, gast.If):
            total += max(_pushes(s.body, tape, count), _pushes(s.orelse, tape, count))
        elif isinstance(s, (gast.For, gast.While)):
            if any(isinstance(n, gast.Name) and n.id == tape for b in s.body for n in iter_nodes(b)):
                return 0      # nested loops reserve for themselves; the buffer still grows if needed
    return total


def array_tapes(fdef: gast.FunctionDef, facts, namespace: dict) -> gast.FunctionDef:
    """Rewrite the scalar typed tapes of `fdef` into array tapes (see the module docstring)."""
    t = _Tapes(fdef, facts, namespace)
    tapes = t.candidates()
    if not tapes:
        return fdef
    counts = {tape: t.count_name(tape) for tape in tapes}
    fdef.body = t.rewrite(fdef.body, tapes, counts)
    return fdef
