"""Blocks: statements of the user's function that run as written, compiled into small Python
functions; and what effects.py needs to know about the function's source around them.

`compile_block` turns statements of the user's source into a function of the locals they read,
compiled in the user's file and lines (a traceback through it shows the user's code) with the
function's globals (read when s2s transformed it, as the generated code's are). Its forms:
"exec" (run the statements), "value" (return an expression: an f-string, a context manager) and
"handler" (`try: raise exc` followed by the user's `except` clauses and `finally`: the except
path of a `try` around differentiated code).

`SourceScan` answers questions about one function's source by position (line, column): whether a
name is read after a statement (or anywhere in a loop around it), whether it is bound outside a
statement, and whether it may hold a view of another array.
"""
from __future__ import annotations

import ast
import copy
from typing import Any

import gast

from .ast_build import copy_loc
from .nodes import ends_with, iter_nodes

EXC_PARAM = "__s2s_exc"
VALUES_PARAM = "__s2s_values"


def compile_block(namespace: dict[str, Any], filename: str, body: list, params: list[str], fname: str,
                  mode: str = "exec", handlers: list | None = None, finalbody: list | None = None):
    """A Python function made of the user's statements (see the module docstring)."""
    loc = body[0] if body else (handlers or finalbody)[0]
    stmts = [copy.deepcopy(s) for s in body]
    if mode == "value":
        stmts = [copy_loc(gast.Return(value=stmts[0]), loc)]
    if mode == "handler":
        args = [gast.Name(EXC_PARAM, gast.Param(), None, None), gast.Name(VALUES_PARAM, gast.Param(), None, None)]
        binds = []
        for p in params:
            key = gast.Constant(p, None)
            test = gast.Compare(key, [gast.In()], [gast.Name(VALUES_PARAM, gast.Load(), None, None)])
            value = gast.Subscript(gast.Name(VALUES_PARAM, gast.Load(), None, None), gast.Constant(p, None),
                                   gast.Load())
            binds.append(gast.If(test=test, body=[gast.Assign(targets=[gast.Name(p, gast.Store(), None, None)],
                                                              value=value, type_comment=None)], orelse=[]))
        trying = gast.Try(body=[gast.Raise(exc=gast.Name(EXC_PARAM, gast.Load(), None, None), cause=None)],
                          handlers=[copy.deepcopy(h) for h in handlers or []], orelse=[],
                          finalbody=[copy.deepcopy(s) for s in finalbody or []])
        stmts = binds + [trying]
        for n in binds + [trying, trying.body[0]]:
            _locate(n, loc)
    else:
        args = [gast.Name(p, gast.Param(), None, None) for p in params]
    fdef = gast.FunctionDef(name=fname, args=gast.arguments(args=args, posonlyargs=[], vararg=None, kwonlyargs=[],
                                                            kw_defaults=[], kwarg=None, defaults=[]),
                            body=stmts or [gast.Pass()], decorator_list=[], returns=None, type_comment=None,
                            type_params=[])
    _locate(fdef, loc)
    for n in iter_nodes(fdef):
        if isinstance(n, (gast.stmt, gast.expr)) and not hasattr(n, "lineno"):
            _locate(n, loc)
    tree = gast.gast_to_ast(gast.Module(body=[fdef], type_ignores=[]))
    ast.fix_missing_locations(tree)
    code = compile(tree, filename, "exec")
    scope = dict(namespace)
    exec(code, scope)
    fn = scope[fname]
    fn.__qualname__ = fname
    return fn


def _locate(node, like) -> None:
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        if getattr(like, attr, None) is not None:
            setattr(node, attr, getattr(like, attr))


# ----- questions about the source ------------------------------------------------------------------
def _pos(node) -> tuple[int, int]:
    return (getattr(node, "lineno", 0) or 0, getattr(node, "col_offset", 0) or 0)


def _end(node) -> tuple[int, int]:
    return (getattr(node, "end_lineno", None) or getattr(node, "lineno", 0) or 0,
            getattr(node, "end_col_offset", None) or 10 ** 6)


def _inside(node, outer) -> bool:
    return _pos(outer) <= _pos(node) and _end(node) <= _end(outer)


def contains(outer, node) -> bool:
    """`node` lies inside `outer` in the source (by their positions)."""
    return _inside(node, outer)


def stored_names(nodes) -> set[str]:
    """Names the statements bind: assignments, loop and `with` targets, imports, except-as names."""
    out = set()
    for s in nodes:
        for n in iter_nodes(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                out.add(n.id)
            elif isinstance(n, gast.alias):
                out.add((n.asname or n.name).split(".")[0])
    return out


def loaded_names(nodes) -> list[str]:
    """Names the statements read, in order of first appearance."""
    out: dict[str, None] = {}
    for s in nodes:
        for n in iter_nodes(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                out.setdefault(n.id, None)
    return list(out)


def always_raises(stmts: list) -> bool:
    """Control never leaves `stmts` normally: its last statement raises on every path."""
    return ends_with(stmts, (gast.Raise,))


def leaves(stmts: list, loops: bool = False) -> gast.AST | None:
    """The first `return`, or `break`/`continue` of a loop around `stmts`, inside them."""
    for s in stmts:
        if isinstance(s, gast.Return) or (isinstance(s, (gast.Break, gast.Continue)) and not loops):
            return s
        if isinstance(s, (gast.For, gast.While)):
            found = leaves(s.body, True) or leaves(s.orelse, loops)
        elif isinstance(s, gast.If):
            found = leaves(s.body, loops) or leaves(s.orelse, loops)
        elif isinstance(s, gast.With):
            found = leaves(s.body, loops)
        elif isinstance(s, gast.Try):
            found = leaves(s.body, loops) or leaves(s.orelse, loops) or leaves(s.finalbody, loops) or \
                next((x for h in s.handlers for x in [leaves(h.body, loops)] if x is not None), None)
        else:
            found = None
        if found is not None:
            return found
    return None


class SourceScan:
    """Positions of the statements and names of one function's source."""

    def __init__(self, fdef):
        self.fdef = fdef
        self.params = {a.id for a in fdef.args.args if isinstance(a, gast.Name)}
        self.names: dict[str, list] = {}       # name -> its Name nodes (loads and stores)
        self.loops: list = []
        self.assigned: dict[str, list] = {}     # name -> values assigned to it
        for n in iter_nodes(fdef):
            if isinstance(n, gast.ExceptHandler) and isinstance(n.name, gast.Name) \
                    and getattr(n.name, "lineno", None) is None:
                _locate(n.name, n)         # (gast gives the except-as name no position)
        for n in iter_nodes(fdef):
            if isinstance(n, gast.Name):
                self.names.setdefault(n.id, []).append(n)
            elif isinstance(n, (gast.For, gast.While)):
                self.loops.append(n)
            if isinstance(n, (gast.Assign, gast.AnnAssign, gast.AugAssign, gast.NamedExpr)):
                targets = n.targets if isinstance(n, gast.Assign) else [n.target]
                for t in targets:
                    for x in iter_nodes(t):
                        if isinstance(x, gast.Name) and isinstance(x.ctx, gast.Store):
                            self.assigned.setdefault(x.id, []).append(
                                None if isinstance(t, (gast.Tuple, gast.List)) else n.value)

    def loops_around(self, node) -> list:
        return [lp for lp in self.loops if lp is not node and _inside(node, lp)]

    def read_after(self, ident: str, stmt) -> bool:
        """`ident` is read after `stmt`, or in a loop around it (outside `stmt` itself)."""
        loops = self.loops_around(stmt)
        for n in self.names.get(ident, ()):
            if not isinstance(n.ctx, gast.Load) or _inside(n, stmt):
                continue
            if _pos(n) >= _end(stmt) or any(_inside(n, lp) for lp in loops):
                return True
        return False

    def bound_outside(self, ident: str, stmt) -> bool:
        """`ident` is a parameter, or bound somewhere outside `stmt`."""
        if ident in self.params:
            return True
        return any(isinstance(n.ctx, gast.Store) and not _inside(n, stmt) for n in self.names.get(ident, ()))

    def may_view(self, ident: str) -> bool:
        """`ident` is a parameter or may be bound to another array (or a view of one): any value
        that is not arithmetic, a comparison, a constant or a ufunc of values."""
        if ident in self.params:
            return True
        for value in self.assigned.get(ident, [None]):
            if value is None or not _fresh(value):
                return True
        return False

    def first_use_after(self, ident: str, stmt) -> gast.Name | None:
        """The first Name `ident` (load or store) after `stmt`, in source order."""
        after = sorted((n for n in self.names.get(ident, ()) if _pos(n) >= _end(stmt)), key=_pos)
        return after[0] if after else None

    def first_use_in_loop(self, ident: str, stmt) -> gast.Name | None:
        """The first Name `ident` in the innermost loop around `stmt`, from the loop's start (the
        next iteration's first use)."""
        loops = self.loops_around(stmt)
        if not loops:
            return None
        inner = max(loops, key=_pos)
        inside = sorted((n for n in self.names.get(ident, ()) if _inside(n, inner) and not _inside(n, stmt)),
                        key=_pos)
        return inside[0] if inside else None


def _fresh(value) -> bool:
    if isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant, gast.BoolOp, gast.JoinedStr)):
        return True
    return False
