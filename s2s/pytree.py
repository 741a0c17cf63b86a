"""Pytrees: nested tuples, lists, dicts, namedtuples and dataclasses of arrays.

`tree_flatten` gives the leaves (arrays and numbers, in a fixed order: dicts
by sorted key) and a hashable `TreeDef`; `tree_unflatten` rebuilds.  The
transforms see pytree arguments as their leaves: s2s generates a small
wrapper that rebuilds the containers as variables it can split apart.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

TreeDef = tuple   # ("leaf",) | ("none",) | (kind, meta, children...)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree: Any) -> tuple[list, TreeDef]:
    leaves: list = []

    def go(x) -> TreeDef:
        if x is None:
            return ("none",)
        if _is_namedtuple(x):
            return ("record", type(x), tuple(type(x)._fields), tuple(go(v) for v in x))
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            names = tuple(f.name for f in dataclasses.fields(x))
            return ("record", type(x), names, tuple(go(getattr(x, n)) for n in names))
        if isinstance(x, tuple):
            return ("tuple", None, tuple(go(v) for v in x))
        if isinstance(x, list):
            return ("list", None, tuple(go(v) for v in x))
        if isinstance(x, dict):
            keys = tuple(sorted(x))
            return ("dict", keys, tuple(go(x[k]) for k in keys))
        leaves.append(x)
        return ("leaf",)
    treedef = go(tree)
    return leaves, treedef


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    it = iter(leaves)

    def go(td):
        kind = td[0]
        if kind == "leaf":
            return next(it)
        if kind == "none":
            return None
        if kind == "record":
            cls, names, children = td[1], td[2], td[3]
            values = [go(c) for c in children]
            if _is_namedtuple_cls(cls):
                return cls(*values)
            return cls(**dict(zip(names, values)))
        children = [go(c) for c in td[2]]
        if kind == "tuple":
            return tuple(children)
        if kind == "list":
            return list(children)
        return dict(zip(td[1], children))
    return go(treedef)


def _is_namedtuple_cls(cls) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def tree_leaves(tree: Any) -> list:
    return tree_flatten(tree)[0]


def tree_map(f: Callable, tree: Any, *rest: Any) -> Any:
    """Apply f to the leaves of `tree` (and the matching leaves of `rest`)."""
    leaves, td = tree_flatten(tree)
    others = []
    for r in rest:
        rl, rtd = tree_flatten(r)
        if rtd != td:
            raise ValueError("tree_map: trees have different structures")
        others.append(rl)
    return tree_unflatten(td, [f(*xs) for xs in zip(leaves, *others)])


def is_leaf(treedef: TreeDef) -> bool:
    return treedef == ("leaf",)


def count_leaves(treedef: TreeDef) -> int:
    kind = treedef[0]
    if kind == "leaf":
        return 1
    if kind == "none":
        return 0
    children = treedef[3] if kind == "record" else treedef[2]
    return sum(count_leaves(c) for c in children)
