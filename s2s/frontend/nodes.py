"""Fast primitives over gast trees: copying, name sets, parsed snippets.

Every pass copies and scans trees statement by statement, so these sit on the
transform's hot path: `copy.deepcopy` and `gast.walk` go through Python's
generic protocols (reduce, iter_fields) and made transform time several
milliseconds per user line. These walk `_fields` directly.
"""
from __future__ import annotations

import copy
import functools
from collections import deque
from typing import Any

import gast

_AST = gast.AST
_SHARED = (str, int, float, complex, bool, type(None), bytes, type(Ellipsis))


def clone(value: Any, memo: dict | None = None) -> Any:
    """A deep copy of an AST (or a list of them), as `copy.deepcopy` makes it: node attributes
    s2s adds are copied too, and a node referred to twice (`loop.s2s_inner`) is copied once."""
    if memo is None:
        memo = {}
    return _clone(value, memo)


def _clone(value: Any, memo: dict) -> Any:
    if isinstance(value, _AST):
        got = memo.get(id(value))
        if got is not None:
            return got
        cls = value.__class__
        new = cls.__new__(cls)
        memo[id(value)] = new
        d = new.__dict__
        for k, v in value.__dict__.items():
            if isinstance(v, _SHARED) or callable(v) and not isinstance(v, _AST):
                d[k] = v            # (functions, as deepcopy does, are shared)
            elif isinstance(v, (_AST, list)):
                d[k] = _clone(v, memo)
            else:
                d[k] = copy.deepcopy(v, memo)
        return new
    if isinstance(value, list):
        return [_clone(v, memo) for v in value]
    if isinstance(value, _SHARED):
        return value
    return copy.deepcopy(value, memo)


def iter_nodes(node: Any):
    """Every node under `node` (itself included) in `ast.walk`'s order (breadth first), without
    its per-field generator overhead."""
    todo = deque((node,))
    popleft, append = todo.popleft, todo.append
    while todo:
        n = popleft()
        for f in n._fields:
            v = getattr(n, f, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, _AST):
                        append(x)
            elif isinstance(v, _AST):
                append(v)
        yield n


def child_nodes(node: Any) -> list:
    """The nodes directly under `node`."""
    out = []
    for f in node._fields:
        v = getattr(node, f, None)
        if isinstance(v, list):
            out.extend(x for x in v if isinstance(x, gast.AST))
        elif isinstance(v, gast.AST):
            out.append(v)
    return out


def ends_with(stmts: list, kinds: tuple) -> bool:
    """The last statement of `stmts` is one of `kinds` on every path (through `if` branches and
    `with` bodies): control never falls off the end."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, kinds):
        return True
    if isinstance(last, gast.If):
        return ends_with(last.body, kinds) and ends_with(last.orelse, kinds)
    if isinstance(last, gast.With):
        return ends_with(last.body, kinds)
    return False


def names_in(node: Any) -> set[str]:
    """The identifiers of every `Name` under `node` (read or written)."""
    out = set()
    add = out.add
    Name = gast.Name
    for n in iter_nodes(node):
        if n.__class__ is Name:
            add(n.id)
    return out


def mentions(node: Any, names) -> bool:
    """Some `Name` under `node` is one of `names`."""
    Name = gast.Name
    return any(n.__class__ is Name and n.id in names for n in iter_nodes(node))


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Any:
    return gast.parse(text).body[0].value


def parse_expr(text: str) -> Any:
    """`text` as an expression node (a fresh copy each call: callers may change it)."""
    return clone(_parsed(text))
