"""Tapes of straight-line code -> variables, for compiled code.

Reverse mode saves a value it overwrites on a tape (`push`) and takes it back in the backward
sweep (`restore`, `pop`).  When every push and every read of a tape is a statement of the
function's own body (not inside a loop or a branch), each runs exactly once, in order, and
which saved value each read gets is known here.  The tape becomes one variable per push:

    tape_v_a = stack()                 ->  (dropped)
    push(tape_v_a, a)                  ->  a_1 = a
    ...
    a = restore(tape_v_a, a)           ->  a = a_1        (the value below the newest, or the current one)

A saved array is the same object as before (push stores a reference, not a copy).  Numba
compiles a typed List push and pop as calls into its runtime, ~25 ms of compile time each; a
long straight-line gradient had two per user line.
"""
from __future__ import annotations

import gast

from .. import runtime as rt
from ..analysis.resolve import resolve_call
from ..frontend.nodes import clone, iter_nodes, names_in
from ..frontend.ast_build import Namer, assign, copy_loc, name


def _tape_of(stmt, fn) -> str | None:
    """The tape a statement `push(t, v)`, `x = restore(t, c)` or `x = pop(t)` works on."""
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) and fn(stmt.value) is rt.push:
        call = stmt.value
    elif isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and isinstance(stmt.value, gast.Call) and fn(stmt.value) in (rt.restore, rt.pop):
        call = stmt.value
    else:
        return None
    tape = call.args[0] if call.args else None
    return tape.id if isinstance(tape, gast.Name) and not call.keywords else None


def straight_tapes(fdef: gast.FunctionDef, namespace: dict) -> gast.FunctionDef:
    def fn(call):
        return resolve_call(call, namespace)

    created = {s.targets[0].id: s for s in fdef.body
               if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
               and isinstance(s.value, gast.Call) and fn(s.value) is rt.stack}
    if not created:
        return fdef
    # a tape qualifies when each mention of its name is in one of the top-level statements above
    mentions: dict[str, int] = {}
    for n in iter_nodes(fdef):
        if isinstance(n, gast.Name) and n.id in created:
            mentions[n.id] = mentions.get(n.id, 0) + 1
    uses = [_tape_of(s, fn) for s in fdef.body]       # each statement's tape (or None)
    handled: dict[str, int] = {t: 1 for t in created}
    for t in uses:
        if t in created:
            handled[t] += 1
    tapes = {t for t in created if handled[t] == mentions[t]}
    # a dry run: a pop of an empty tape (an error at run time) keeps its tape as it is
    depth = {t: 0 for t in tapes}
    for s, t in zip(fdef.body, uses):
        if t in tapes:
            if isinstance(s, gast.Expr):
                depth[t] += 1
            elif depth[t] == 0:
                tapes.discard(t)
            else:
                depth[t] -= 1
    if not tapes:
        return fdef
    namer = Namer(names_in(fdef) | set(namespace))
    saved: dict[str, list] = {t: [] for t in tapes}
    creations = {id(s) for s in created.values()}
    body = []
    for s, t in zip(fdef.body, uses):
        if id(s) in creations:
            if s.targets[0].id not in tapes:
                body.append(s)
            continue
        if t not in tapes:
            body.append(s)
            continue
        call = s.value
        if isinstance(s, gast.Expr):                   # push(t, v): v's value, under a name of its own
            value = call.args[1]
            base = value.id if isinstance(value, gast.Name) else t
            keep = namer.fresh(f"{base}_{len(saved[t]) + 1}")
            saved[t].append(keep)
            new = assign(keep, clone(value))
        elif fn(call) is rt.restore:                   # the value below the newest (or the current one)
            saved[t].pop()
            value = name(saved[t][-1]) if saved[t] else clone(call.args[1])
            new = assign(s.targets[0].id, value)
        else:                                          # pop: the newest
            new = assign(s.targets[0].id, name(saved[t].pop()))
        copy_loc(new, s)
        for attr in ("s2s_src", "s2s_grad_of", "s2s_section"):
            if hasattr(s, attr):
                setattr(new, attr, getattr(s, attr))
        body.append(new)
    fdef.body = body
    return fdef
