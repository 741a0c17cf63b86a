"""Building blocks for every pass that writes gast code: node constructors, statement walks, fresh names.

Normalization, the transforms, the optimizations and the backends all build statements with these:
`name`, `const`, `call_named` and `assign` make nodes; `copy_loc` carries the user's line
(`lineno`, columns) and source file (`s2s_src`) over from the node a new one replaces;
`walk_stmts` and `assigned_names` read a statement list; a `Namer` hands out names nothing else
uses (temporaries `t1`, `t2`, ...; `fresh("x")` keeps `x` readable: `x1`, `x_1`, ...).

Invariant left for the passes that use them: a node built with `like=` (or passed through
`copy_loc`) points at the user's line it stands for, so errors and generated comments do too;
a name a `Namer` returns is none of the names it was told are taken (the function's own names,
its module's globals, the builtins: `namer_for`) nor one it returned before.
"""
from __future__ import annotations

import builtins
from typing import Any

import gast

from .nodes import child_nodes, iter_nodes, names_in


def name(id_: str, ctx=None) -> gast.Name:
    return gast.Name(id_, ctx or gast.Load(), None, None)


def const(v: Any) -> gast.Constant:
    return gast.Constant(v, None)


def constant_value(node) -> Any:
    """The value of a constant node; for any other node a fresh object, equal to no value (so
    `constant_value(n) is None` and `== "C"` hold only for those literals)."""
    return node.value if isinstance(node, gast.Constant) else object()


def call_named(fname: str, args: list) -> gast.Call:
    """`fname(*args)`: a call of a helper the generated module binds by name."""
    return gast.Call(func=name(fname), args=args, keywords=[])


def assign(target: str | Any, value: Any, like: Any = None) -> gast.Assign:
    tgt = name(target, gast.Store()) if isinstance(target, str) else target
    node = gast.Assign(targets=[tgt], value=value, type_comment=None)
    if like is not None:
        copy_loc(node, like)
    return node


def copy_loc(node: Any, like: Any) -> Any:
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset", "s2s_src"):
        if hasattr(like, attr):
            setattr(node, attr, getattr(like, attr))
    return node


def is_atom(node: Any) -> bool:
    return isinstance(node, (gast.Name, gast.Constant))


def walk_stmts(body: list):
    """Every statement of `body`, nested ones (if/for/while bodies) included, in program order."""
    for s in body:
        yield s
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and isinstance(s, (gast.If, gast.For, gast.While)):
                yield from walk_stmts(sub)


def assigned_names(stmts: list) -> set[str]:
    out = set()
    for s in stmts:
        for n in iter_nodes(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                out.add(n.id)
    return out


# A value s2s does not know when it reads the code (the constant-propagation lattice's top).
UNKNOWN = object()


def scope_locals(stmts: list) -> set[str]:
    """The names a function body binds in its own scope: assigned names and nested `def` names, not
    the names bound inside nested functions, lambdas or comprehensions (their own scopes)."""
    out: set[str] = set()
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            out.add(n.id)
        if isinstance(n, gast.FunctionDef):
            out.add(n.name)
            todo.extend(n.args.defaults)
            todo.extend(d for d in n.args.kw_defaults if d is not None)
            continue
        if isinstance(n, gast.Lambda):
            todo.extend(n.args.defaults)
            continue
        if isinstance(n, (gast.ListComp, gast.SetComp, gast.GeneratorExp, gast.DictComp)):
            todo.append(n.generators[0].iter)      # evaluated in the enclosing scope
            continue
        todo.extend(child_nodes(n))
    return out


class Namer:
    """Fresh, readable names: user names stay, temporaries are t1, t2, ..."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        self.counter = 0

    def temp(self) -> str:
        while True:
            self.counter += 1
            cand = f"t{self.counter}"
            if cand not in self.taken:
                self.taken.add(cand)
                return cand

    def fresh(self, base: str) -> str:
        cand, i = base, 0
        while cand in self.taken:
            i += 1
            cand = f"{base}{i}" if not base[-1].isdigit() else f"{base}_{i}"
        self.taken.add(cand)
        return cand


def namer_for(fdef, namespace: dict[str, Any]) -> "Namer":
    """A Namer that avoids every name a function uses and every global its module has."""
    taken = set(namespace) | set(dir(builtins))
    taken |= names_in(fdef)
    return Namer(taken)
