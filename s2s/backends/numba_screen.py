"""Screening generated code for Numba before it compiles: a global value Numba has no type for.

Numba reports an untyped global (`rs = np.random.RandomState(0)`, a scikit-learn object, a dict
of settings, a library function it has no implementation for) only once it types the function,
after compiling the helpers that function calls, and the fused version's failure is followed by
the unfused one's: seconds to half a minute for a long program.  The name is in the generated
text, so the refusal can come while the code is generated, at the user's line, before any
compile starts (`first_untyped_global`, called by pipeline.py's "screen globals" stage).
"""
from __future__ import annotations

import types as pytypes
from typing import Any

import gast

_TYPE_OF: dict[int, bool] = {}       # id(value) -> Numba types it (values kept alive by their module)


def numba_types(value: Any) -> bool:
    """Numba's CPU typing context has a type for `value` (as a global of compiled code)."""
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None), pytypes.ModuleType)):
        return True
    known = _TYPE_OF.get(id(value))
    if known is not None:
        return known
    from numba.core.registry import cpu_target
    try:
        cpu_target.typing_context.resolve_value_type(value)
        ok = True
    except Exception:       # noqa: BLE001 - Numba says "no type" by raising (TypingError, ValueError, ...)
        ok = False
    try:
        hash(value)
    except TypeError:
        return ok           # (unhashable values may change: not remembered)
    _TYPE_OF[id(value)] = ok
    return ok


def _locals(fdef: gast.FunctionDef) -> set[str]:
    names = {a.id for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs if isinstance(a, gast.Name)}
    for extra in (fdef.args.vararg, fdef.args.kwarg):
        if isinstance(extra, gast.Name):
            names.add(extra.id)
    for node in gast.walk(fdef):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del, gast.Param)):
            names.add(node.id)
        elif isinstance(node, (gast.FunctionDef, gast.ClassDef)) and node is not fdef:
            names.add(node.name)
    return names


def _attribute_value(node, namespace: dict[str, Any]):
    """The value of `mod.sub.name` (a chain of attributes from a global module); None otherwise."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name) or not isinstance(namespace.get(node.id), pytypes.ModuleType):
        return None
    value = namespace[node.id]
    for attr in reversed(parts):
        if not isinstance(value, pytypes.ModuleType) or not hasattr(value, attr):
            return None
        value = getattr(value, attr)
    return value, ".".join([node.id, *reversed(parts)])


def first_untyped_global(fdefs: list[gast.FunctionDef], namespace: dict[str, Any]):
    """(statement, name, value) of the first global read in fdefs (compiled in nopython mode, with
    `namespace` as globals) that Numba has no type for; None when it types them all."""
    from numba.core.registry import cpu_target
    cpu_target.typing_context.refresh()       # (overloads registered since the last compile)
    for fdef in fdefs:
        local = _locals(fdef)
        for stmt, parts in _statements(fdef.body):
            for node in (n for part in parts for n in gast.walk(part)):
                if isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load):
                    found = _attribute_value(node, namespace)
                    if found is not None and not isinstance(found[0], pytypes.ModuleType) \
                            and not numba_types(found[0]):
                        return stmt, found[1], found[0]
                elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id not in local \
                        and node.id in namespace and not numba_types(namespace[node.id]):
                    return stmt, node.id, namespace[node.id]
    return None


_HEADS = {gast.If: ("test",), gast.While: ("test",), gast.For: ("iter",), gast.With: ("items",), gast.Try: ()}


def _statements(body: list):
    """(statement, the nodes it evaluates itself) for each statement of body and of the blocks in
    it, in order: a compound statement's test or iterator, a simple statement whole."""
    for stmt in body:
        heads = _HEADS.get(type(stmt))
        if heads is None:
            if not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                yield stmt, [stmt]
            continue
        yield stmt, [p for h in heads for p in (getattr(stmt, h) if h == "items" else [getattr(stmt, h)])]
        for block in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, block, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _statements(handler.body)


def describe(value) -> str:
    """What the value is, for a refusal: `(a class)`, `(a dict)`, `(a function of sklearn.metrics)`."""
    if isinstance(value, type):
        return "(a class)"
    if callable(value) and hasattr(value, "__qualname__"):
        module = getattr(value, "__module__", None)
        return f"(a function{' of ' + module if module else ''})"
    return f"(a {type(value).__qualname__} object)"
