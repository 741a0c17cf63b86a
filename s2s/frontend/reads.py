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
    # code s2s generated (a wrapper, an inner transform): nobody rebinds its globals, but the user
    # functions it calls are followed; not holding its globals lets its cache entry be dropped
    generated = (getattr(fn, "__module__", None) or "").startswith("s2s_generated")
    for name in sorted(_names(code)):
        value = glb.get(name, _MISSING)
        if value is _MISSING or isinstance(value, types.ModuleType):
            continue
        if not generated:
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


def code_fingerprint(code: types.CodeType) -> str:
    """A digest of what a code object does (its bytecode, names, constants and nested code, line
    table): two bodies with one file name and line (a REPL or doctest source registered in
    linecache, a module edited and reloaded) differ here.  (Not marshal.dumps: its output depends
    on reference counts, so it differs between processes for the same code.)"""
    import hashlib
    h = hashlib.sha256()

    def feed(c: types.CodeType) -> None:
        h.update(c.co_code)
        h.update(c.co_linetable)
        h.update(repr((c.co_name, c.co_names, c.co_varnames, c.co_freevars, c.co_cellvars, c.co_argcount,
                       c.co_posonlyargcount, c.co_kwonlyargcount, c.co_flags)).encode())
        for const in c.co_consts:
            if isinstance(const, types.CodeType):
                feed(const)
            else:
                h.update(repr((type(const).__name__, const)).encode())
    feed(code)
    return h.hexdigest()[:32]


def function_fingerprint(fn: Callable) -> str:
    """code_fingerprint of `fn` and of every Python helper function it reads (their bodies are
    inlined into the generated code, so an edit to one is an edit to the derivative)."""
    import hashlib
    codes = [fn.__code__] + [value.__code__ for _, _, value in reads_of(fn)
                             if isinstance(value, types.FunctionType)]
    return hashlib.sha256("".join(code_fingerprint(c) for c in codes).encode()).hexdigest()[:32]
