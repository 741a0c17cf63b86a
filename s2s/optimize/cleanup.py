"""Cleanup passes over a generated function: copy propagation and dead code.

- copy propagation: `a = b` where both names are assigned once (or b is an
  unassigned parameter) makes every read of `a` a read of `b`;
- dead code: assignments of pure operations to names nothing reads go;
  tape operations, indexed writes and calls made for their effect stay.
"""
from __future__ import annotations

import gast

from .. import runtime as rt
from ..frontend.normalize import walk_stmts as _all_stmts

_EFFECTFUL = {id(rt.pop), id(rt.push), id(rt.add_at), id(rt.seed_cotangent), id(rt.bseed), id(rt.batch_size),
              id(print)}


def _names(node) -> set[str]:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _pure(value) -> bool:
    for n in gast.walk(value):
        if isinstance(n, gast.Call) and id(getattr(n, "s2s_fn", None)) in _EFFECTFUL:
            return False
        if isinstance(n, gast.Call) and getattr(n, "s2s_fn", None) is None:
            return False
    return True


def _pops_live_tape(value, live: set[str]) -> bool:
    """`v = restore(tape, ...)` drops the tape's newest value: while the tape is read later (by
    earlier assignments' restores) it must stay, even if v itself is dead, or the later reads
    get the wrong entries (`y = x * 3.0; y = x * 2.0` under jit(grad) restored y wrongly)."""
    return isinstance(value, gast.Call) and getattr(value, "s2s_fn", None) is rt.restore and bool(value.args) \
        and isinstance(value.args[0], gast.Name) and value.args[0].id in live


def _live_names(body: list) -> set[str]:
    """Mark and sweep: names read by statements that matter (returns, effects, control
    flow, and assignments/writes to names that are themselves live)."""
    live: set[str] = set()
    stmts = list(_all_stmts(body))
    changed = True
    while changed:
        changed = False
        for s in stmts:
            reads: set[str] = set()
            if isinstance(s, gast.Assign):
                tgt = s.targets[0]
                if isinstance(tgt, gast.Name):
                    if tgt.id in live or not _pure(s.value) or _pops_live_tape(s.value, live):
                        reads = _names(s.value)
                else:   # y[i] = v matters if y does
                    if tgt.value.id in live:
                        reads = _names(s.value) | _names(tgt.slice)
            elif isinstance(s, gast.Expr):
                call = s.value
                fn = getattr(call, "s2s_fn", None)
                if fn in (rt.add_at, rt.push) and call.args and isinstance(call.args[0], gast.Name):
                    # an accumulation or a tape push matters if its target is read later
                    if call.args[0].id in live:
                        reads = _names(call)
                else:
                    reads = _names(call)
            elif isinstance(s, gast.If):
                reads = _names(s.test)
            elif isinstance(s, gast.While):
                reads = _names(s.test)
            elif isinstance(s, gast.For):
                reads = _names(s.iter)
            elif isinstance(s, (gast.Return, gast.Assert)):
                reads = _names(s)
            new = reads - live
            if new:
                live |= new
                changed = True
    return live


def _empty(s) -> bool:
    return isinstance(s, (gast.If, gast.For)) and all(isinstance(b, gast.Pass) for b in s.body) and \
        all(isinstance(b, gast.Pass) for b in getattr(s, "orelse", []))


def _reads_outside_loops_over(stmts: list, target: str, inside: bool = False) -> bool:
    """`target` is read somewhere other than in the body of a `for target in ...` loop."""
    for s in stmts:
        if isinstance(s, gast.For) and isinstance(s.target, gast.Name) and s.target.id == target:
            if target in _names(s.iter):
                return True
            continue
        parts = [s.test] if isinstance(s, (gast.If, gast.While)) else [s.iter] if isinstance(s, gast.For) else [s]
        for p in parts:
            if any(isinstance(n, gast.Name) and n.id == target and not isinstance(n.ctx, gast.Store)
                   for n in gast.walk(p)):
                return True
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and isinstance(s, (gast.If, gast.For, gast.While)) \
                    and _reads_outside_loops_over(sub, target):
                return True
    return False


def _sweep(stmts: list, live: set[str], loop_free_reads: set[str] = frozenset()) -> tuple[list, bool]:
    out, changed = [], False
    for s in stmts:
        if isinstance(s, gast.Assign):
            tgt = s.targets[0]
            dead_name = isinstance(tgt, gast.Name) and tgt.id not in live and _pure(s.value) \
                and not _pops_live_tape(s.value, live)
            dead_write = isinstance(tgt, gast.Subscript) and tgt.value.id not in live and _pure(s.value)
            if dead_name or dead_write:
                changed = True
                continue
        if isinstance(s, gast.Expr) and getattr(s.value, "s2s_fn", None) in (rt.add_at, rt.push) \
                and isinstance(s.value.args[0], gast.Name) and s.value.args[0].id not in live:
            changed = True
            continue
        if _empty(s) and (isinstance(s, gast.If) and isinstance(s.test, gast.Name) or
                          isinstance(s, gast.For) and s.target.id not in loop_free_reads and _pure(s.iter)):
            changed = True
            continue
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While)):
                new, c = _sweep(sub, live, loop_free_reads)
                changed |= c
                setattr(s, field, new or ([gast.Pass()] if field == "body" else []))
        out.append(s)
    return out, changed


def _live_in(stmts: list, live: set[str], dead: set[int]) -> set[str]:
    """Flow-sensitive liveness, backwards over structured code; records in `dead` the pure
    assignments whose value is overwritten (or never read) before any read."""
    live = set(live)
    for s in reversed(stmts):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            v = s.targets[0].id
            if v not in live and _pure(s.value) and not _pops_live_tape(s.value, live):
                dead.add(id(s))
                continue
            dead.discard(id(s))
            live = (live - {v}) | _names(s.value)
        elif isinstance(s, gast.If):
            live = _names(s.test) | _live_in(s.body, live, dead) | _live_in(s.orelse, live, dead)
        elif isinstance(s, (gast.For, gast.While)):
            head = _names(s.iter if isinstance(s, gast.For) else s.test)
            loop_live = live | head
            for _ in range(50):     # fixpoint: what the body needs at its start is live at its end
                inner = _live_in(s.body, loop_live, set())
                new = live | head | inner
                if new == loop_live:
                    break
                loop_live = new
            _live_in(s.body, loop_live, dead)
            live = loop_live
        else:
            live |= _names(s)
    return live


def dead_stores(fdef: gast.FunctionDef) -> bool:
    """Drop pure assignments no read can see (e.g. forward-sweep values the backward sweep
    recomputes). Returns whether anything changed."""
    dead: set[int] = set()
    _live_in(fdef.body, set(), dead)
    if not dead:
        return False

    def drop(stmts):
        out = []
        for s in stmts:
            if id(s) in dead:
                continue
            for field in ("body", "orelse"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While)):
                    setattr(s, field, drop(sub) or ([gast.Pass()] if field == "body" else []))
            out.append(s)
        return out
    fdef.body = drop(fdef.body)
    return True


def dead_code(fdef: gast.FunctionDef) -> gast.FunctionDef:
    while True:
        changed_stores = dead_stores(fdef)
        targets = {s.target.id for s in _all_stmts(fdef.body) if isinstance(s, gast.For)
                   and isinstance(s.target, gast.Name)}
        # loop variables whose value after their loops matters (an empty loop over them must stay)
        loop_free_reads = {t for t in targets if _reads_outside_loops_over(fdef.body, t)} | \
            {a.id for a in fdef.args.args}
        fdef.body, changed = _sweep(fdef.body, _live_names(fdef.body), loop_free_reads)
        if not changed and not changed_stores:
            return fdef


def _assign_counts(fdef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in gast.walk(fdef):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(n, (gast.For,)) and isinstance(n.target, gast.Name):
            pass
    return counts


def _assigned_in_loops(body, inside=False, out=None) -> set[str]:
    out = set() if out is None else out
    for s in body:
        if inside:
            for n in gast.walk(s):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    out.add(n.id)
        if isinstance(s, (gast.For, gast.While)):
            if isinstance(s, gast.For):
                out.add(s.target.id)
            _assigned_in_loops(s.body, True, out)
        elif isinstance(s, gast.If):
            _assigned_in_loops(s.body, inside, out)
            _assigned_in_loops(s.orelse, inside, out)
    return out


def copy_propagation(fdef: gast.FunctionDef) -> gast.FunctionDef:
    """`a = b` -> reads of a become reads of b, when b holds one value for the whole function
    (a single definition, parameters included, outside every loop) and a is defined once."""
    params = {a.id for a in fdef.args.args}
    counts = _assign_counts(fdef)
    for p in params:
        counts[p] = counts.get(p, 0) + 1
    looped = _assigned_in_loops(fdef.body)
    mapping: dict[str, str] = {}
    for s in _all_stmts(fdef.body):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name):
            a, b = s.targets[0].id, s.value.id
            if counts.get(a) == 1 and counts.get(b) == 1 and b not in looped and a != b:
                mapping[a] = b
    if not mapping:
        return fdef

    def resolve(n):
        seen = set()
        while n in mapping and n not in seen:
            seen.add(n)
            n = mapping[n]
        return n
    for n in gast.walk(fdef):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store) and n.id in mapping:
            n.id = resolve(n.id)
    fdef.body = _drop_copies(fdef.body, set(mapping))
    return fdef


def _drop_copies(body, names):
    out = []
    for s in body:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id in names \
                and isinstance(s.value, gast.Name):
            continue
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While)):
                setattr(s, field, _drop_copies(sub, names) or ([gast.Pass()] if field == "body" else []))
        out.append(s)
    return out


def optimize(fdef: gast.FunctionDef) -> gast.FunctionDef:
    return dead_code(copy_propagation(fdef))
