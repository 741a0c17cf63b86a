"""Cleanup passes over a generated function: dead-code elimination.

Only assignments of pure operations to names that nothing reads are removed;
tape operations, indexed writes and calls made for their effect stay.
"""
from __future__ import annotations

import gast

from .. import runtime as rt

_EFFECTFUL = {id(rt.pop), id(rt.push), id(rt.add_at), id(rt.seed_cotangent), id(print)}


def _reads(stmts, out: set[str]) -> None:
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store):
                out.add(n.id)
            elif isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
                for m in gast.walk(n):
                    if isinstance(m, gast.Name):
                        out.add(m.id)


def _pure(value) -> bool:
    for n in gast.walk(value):
        if isinstance(n, gast.Call) and id(getattr(n, "s2s_fn", None)) in _EFFECTFUL:
            return False
        if isinstance(n, gast.Call) and getattr(n, "s2s_fn", None) is None:
            return False
    return True


def _sweep(stmts: list, read: set[str]) -> tuple[list, bool]:
    out, changed = [], False
    for s in stmts:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                and s.targets[0].id not in read and _pure(s.value):
            changed = True
            continue
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While)):
                new, c = _sweep(sub, read)
                changed |= c
                setattr(s, field, new or ([gast.Pass()] if field == "body" else []))
        out.append(s)
    return out, changed


def dead_code(fdef: gast.FunctionDef) -> gast.FunctionDef:
    while True:
        read: set[str] = set()
        _reads(fdef.body, read)
        fdef.body, changed = _sweep(fdef.body, read)
        if not changed:
            return fdef


def optimize(fdef: gast.FunctionDef) -> gast.FunctionDef:
    return dead_code(fdef)
