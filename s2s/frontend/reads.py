"""What a transformed function reads from outside itself, so a call can tell it changed.

s2s generates code from a function's source and binds the globals, closure values and helper
functions it reads at that time.  When the user rebinds one of them later in the process
(`LR = 0.1` after `LR = 0.01`, a helper redefined in a notebook), the generated code is stale.
`reads_of(fn)` lists each name the function (and, recursively, each Python helper function it
reads) takes from its module globals or closure cells, with the object it found; `changed(reads)`
says whether any of those names now holds another object.  The check is a dict lookup per name
(identity, not equality: arrays changed in place are the same object, and the Python code reads
them live).
"""
from __future__ import annotations

import types
from typing import Any, Callable

_MISSING = object()


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):     # comprehensions, lambdas, nested defs
            names |= _names(const)
    return names


def reads_of(fn: Callable, _seen: set | None = None) -> tuple:
    """((namespace, name, object) for module globals, (cell, None, object) for closure cells)."""
    seen = _seen if _seen is not None else set()
    code = getattr(fn, "__code__", None)
    if code is None or id(fn) in seen:
        return ()
    seen.add(id(fn))
    out: list = []
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        out.append((cell, None, value))
        out.extend(_helper_reads(value, seen))
    glb = getattr(fn, "__globals__", {})
    for name in sorted(_names(code)):
        value = glb.get(name, _MISSING)
        if value is _MISSING or isinstance(value, types.ModuleType):
            continue
        out.append((glb, name, value))
        out.extend(_helper_reads(value, seen))
    return tuple(out)


def _helper_reads(value: Any, seen: set) -> list:
    # a helper function defined by the user (not NumPy's or s2s's own): its body is inlined
    if isinstance(value, types.FunctionType) and not value.__module__.startswith(("numpy", "s2s.", "scipy")):
        return list(reads_of(value, seen))
    return []


def changed(reads: tuple) -> bool:
    for where, name, value in reads:
        if name is None:
            try:
                if where.cell_contents is not value:
                    return True
            except ValueError:
                return True
        elif where.get(name, _MISSING) is not value:
            return True
    return False
