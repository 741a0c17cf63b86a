"""What reverse mode's tape keeps: the variables it saves, and the saves nobody reads.

saved_candidates picks, before the sweeps are built, the variables whose old values a backward
sweep may need back: those assigned more than once, in a loop, or parameters reassigned. Reverse
mode marks each save and restore it emits with what it protects (the statement's `s2s_save_key`:
the variable, `for:<loop variable>`, or the written array); once both sweeps are built,
names_read gives the names the backward code reads (marked statements left out) and filter_saves
drops the marked statements of every other key. strip_loops_over leaves a loop variable's own
loops out, so that it is restored only when read outside them.
"""
from __future__ import annotations

import copy

import gast

from ..frontend.annotations import SAVE_KEY, getanno
from ..frontend.nodes import iter_nodes
from ..frontend.ast_build import walk_stmts as _walk_stmts


def saved_candidates(body, params) -> set[str]:
    """The variables the tape saves: assigned more than once, assigned in a loop, or parameters
    (of those assigned at all)."""
    counts: dict[str, int] = {}
    in_loop: set[str] = set()

    def visit(stmts, loop_depth):
        for s in stmts:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                counts[s.targets[0].id] = counts.get(s.targets[0].id, 0) + 1
                if loop_depth:
                    in_loop.add(s.targets[0].id)
            elif isinstance(s, gast.For):
                counts[s.target.id] = counts.get(s.target.id, 0) + 1
                if loop_depth:
                    in_loop.add(s.target.id)
                visit(s.body, loop_depth + 1)
            elif isinstance(s, gast.While):
                visit(s.body, loop_depth + 1)
            elif isinstance(s, gast.If):
                visit(s.body, loop_depth)
                visit(s.orelse, loop_depth)
    visit(body, 0)
    params = set(params)
    return {v for v, c in counts.items() if c > 1 or v in in_loop or (v in params)} | \
        {v for v in counts if v in params}


def names_read(stmts) -> set[str]:
    """The names the statements read, leaving out the saves and restores (marked statements)."""
    out = set()
    for s in _walk_stmts(stmts):
        if getanno(s, SAVE_KEY) is not None:
            continue
        for field in ("value", "test", "iter", "targets"):
            sub = getattr(s, field, None)
            if sub is None:
                continue
            for node in (sub if isinstance(sub, list) else [sub]):
                for n in iter_nodes(node):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                        out.add(n.id)
                if isinstance(node, gast.Subscript):   # d[i] = ... reads d and i
                    for n in iter_nodes(node):
                        if isinstance(n, gast.Name):
                            out.add(n.id)
    return out

def filter_saves(stmts: list, needed: set[str]) -> list:
    """The statements without the saves and restores whose mark is not in `needed`."""
    out = []
    for s in stmts:
        key = getanno(s, SAVE_KEY)
        if key is not None and key not in needed:
            continue
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub:
                new = filter_saves(sub, needed)
                setattr(s, field, new or [gast.Pass()] if field == "body" else new)
        out.append(s)
    return out


def strip_loops_over(stmts: list, target: str) -> list:
    """The statements with every `for target in ...` loop (and its body) left out."""
    out = []
    for s in stmts:
        if isinstance(s, gast.For) and isinstance(s.target, gast.Name) and s.target.id == target:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s = copy.copy(s)
            s.body = strip_loops_over(s.body, target)
            if hasattr(s, "orelse"):
                s.orelse = strip_loops_over(s.orelse, target)
        out.append(s)
    return out
