"""Which in-place updates may change an array another name still reads.

NumPy's `y += 1` writes into the array `y` refers to; every name bound to that
array (`y = x`, a view `y = x[1:]`, `y = x.T`, `for row in X`) sees the change.
s2s's transforms treat `y += e` as `y = y + e`, a new value, so the other name
would keep the old one: the primal and every derivative would differ from
NumPy's. (Indexed writes stay writes into the array: see `_updated`.) Whether two names share an array is known only when the
code runs (a float `s = x; s += 1` shares nothing), so normalization puts a
check before each such update (runtime.check_unshared), which raises instead
of answering differently.

`in_place_checks(fdef)` finds the pairs to check: for an update of `y`, each
name `z` that may share y's array through assignments of the function (a
flow-insensitive may-alias relation), that is read somewhere other than as
the source of such an assignment, and that is surely bound when the update
runs (a parameter, or assigned by a top-level statement before the one that
holds the update).
"""
from __future__ import annotations

import gast

from .nodes import child_nodes, iter_nodes

# Methods and numpy functions whose result may be a view of their (first) operand.
VIEW_METHODS = frozenset({"reshape", "ravel", "view", "transpose", "swapaxes", "squeeze", "diagonal",
                          "__array__", "astype"})
VIEW_FUNCTIONS = frozenset({"reshape", "ravel", "transpose", "swapaxes", "squeeze", "asarray", "asanyarray",
                            "atleast_1d", "atleast_2d", "atleast_3d", "expand_dims", "moveaxis", "rollaxis",
                            "diagonal", "broadcast_to", "real", "imag", "flip", "fliplr", "flipud", "rot90"})
VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})


def _sources(expr) -> set[str]:
    """Names whose array the value of `expr` may be (or be a view of)."""
    if isinstance(expr, gast.Name):
        return {expr.id}
    if isinstance(expr, gast.Subscript):
        return _sources(expr.value)
    if isinstance(expr, gast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
        return _sources(expr.value)
    if isinstance(expr, gast.IfExp):
        return _sources(expr.body) | _sources(expr.orelse)
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Attribute):
        func = expr.func
        if func.attr in VIEW_METHODS and not (isinstance(func.value, gast.Name) and func.value.id in ("np", "numpy")):
            return _sources(func.value)
        if func.attr in VIEW_FUNCTIONS and isinstance(func.value, gast.Name) and func.value.id in ("np", "numpy") \
                and expr.args:
            return _sources(expr.args[0])
    return set()


def _own_nodes(fdef):
    """The function's nodes, not those of functions or lambdas defined inside it."""
    todo = list(fdef.body)
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        todo.extend(child_nodes(n))


def _pairs(target, value):
    """(name, value expression) for a simple or unpacking assignment."""
    if isinstance(target, gast.Name):
        yield target.id, value
    elif isinstance(target, (gast.Tuple, gast.List)) and isinstance(value, (gast.Tuple, gast.List)) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _pairs(t, v)


def _updated(s) -> str | None:
    """The name `y += e` updates in place. (Indexed writes, `y[i] = v` and `y[i] += v`, stay
    writes into the array in the generated code, so names sharing it see them as under NumPy; the
    reverse pass saves what they overwrite, and refuses writes into arrays it cannot follow.)"""
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
        return s.target.id
    return None


def in_place_checks(fdef) -> dict[int, list[tuple[str, str]]]:
    """id(update statement) -> [(updated name, other name)] to check when it runs."""
    parent: dict[str, str] = {}

    def find(a):
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    alias_sources: set[int] = set()          # Name nodes read only to make an alias
    updates = []
    for n in _own_nodes(fdef):
        if isinstance(n, gast.Assign):
            names = [t.id for t in n.targets if isinstance(t, gast.Name)]
            for other in names[1:]:          # `a = b = np.zeros(n)`: one array
                union(names[0], other)
            for t in n.targets:
                for v, value in _pairs(t, n.value):
                    for src in _sources(value):
                        union(v, src)
                    if isinstance(value, gast.Name):
                        alias_sources.add(id(value))
        elif isinstance(n, gast.For) and isinstance(n.target, gast.Name):
            for src in _sources(n.iter):     # `for row in X`: each row is a view of X
                union(n.target.id, src)
        if _updated(n) is not None:
            updates.append(n)
    if not updates:
        return {}
    read = {n.id for n in _own_nodes(fdef) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
            and id(n) not in alias_sources}
    members: dict[str, set[str]] = {}
    for v in set(parent) | set(parent.values()):
        members.setdefault(find(v), set()).add(v)

    # names surely bound before each top-level statement
    bound = {a.id for a in fdef.args.args}
    bound_before: dict[int, frozenset] = {}
    for top in fdef.body:
        frozen = frozenset(bound)
        for n in iter_nodes(top) if not isinstance(top, (gast.FunctionDef, gast.ClassDef)) else ():
            bound_before[id(n)] = frozen
        if isinstance(top, (gast.Assign, gast.AnnAssign)):
            for t in (top.targets if isinstance(top, gast.Assign) else [top.target]):
                bound |= {x.id for x in iter_nodes(t) if isinstance(x, gast.Name)}
    out: dict[int, list[tuple[str, str]]] = {}
    for s in updates:
        y = _updated(s)
        others = members.get(find(y), set()) - {y}
        ok = bound_before.get(id(s), frozenset())
        pairs = [(y, z) for z in sorted(others) if z in read and z in ok]
        if pairs:
            out[id(s)] = pairs
    return out
