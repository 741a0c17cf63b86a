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


def code_names(code: types.CodeType) -> set[str]:
    """The global names the code (and code nested in it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):     # comprehensions, lambdas, nested defs
            names |= code_names(const)
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
    for name in sorted(code_names(code)):
        value = glb.get(name, _MISSING)
        if value is _MISSING or isinstance(value, types.ModuleType):
            continue
        if not generated:
            out.append((glb, name, value))
        out.extend(_helper_reads(value, seen))
    cells = dict(zip(code.co_freevars, getattr(fn, "__closure__", None) or ()))
    for kind, root, path in sorted(attribute_chains(code)):
        if kind == "LOAD_DEREF":
            try:
                obj = cells[root].cell_contents
            except (KeyError, ValueError):
                continue
        else:
            obj = glb.get(root, _MISSING)
            if obj is _MISSING:
                continue
        out.extend(attribute_reads(obj, path, seen))
    return tuple(out)


class Attr:
    """`where` of a read of an attribute (`cfg.scale`, `config.LR`): generated code holds the value
    the attribute had, so setting the attribute later makes it stale like rebinding a global."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


_LIBRARIES = ("numpy", "scipy", "math", "s2s", "numba", "builtins", "cmath", "operator", "functools")


def attribute_chains(code: types.CodeType) -> set:
    """(opcode, root name, attribute path) for each `root.a.b` the code (and code nested in it)
    reads, from its bytecode: a global or closure variable followed by attribute loads."""
    import dis
    out = set()
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_DEREF"):
            path = []
            for nxt in instructions[i + 1:]:
                if nxt.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
                    break
                path.append(nxt.argval)
            if path:
                out.add((ins.opname, ins.argval, tuple(path)))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= attribute_chains(const)
    return out


def attribute_reads(obj: Any, path: tuple, seen: set) -> list:
    """(Attr(owner), name, value) along `obj.a.b...`, for owners whose attributes a user sets (their
    objects, their modules); NumPy's and s2s's modules, arrays and numbers end the walk."""
    import numpy as np
    out: list = []
    for attr in path:
        if isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] in _LIBRARIES:
            break
        if isinstance(obj, (np.ndarray, np.generic, int, float, complex, str, bytes, bool)) or obj is None:
            break
        if isinstance(getattr(type(obj), attr, None), property):
            break           # (computed when read: a new object each time, never "the same")
        value = getattr(obj, attr, _MISSING)
        if value is _MISSING:
            break
        if isinstance(value, types.MethodType):
            out.extend(_helper_reads(value.__func__, seen))
            break           # (a new bound-method object on every read)
        if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) and \
                not isinstance(getattr(value, "__self__", None), types.ModuleType):
            break           # (`rng.normal`: the same, for methods written in C)
        out.append((Attr(obj), attr, value))
        out.extend(_helper_reads(value, seen))
        obj = value
    return out


def _helper_reads(value: Any, seen: set) -> list:
    # a helper function defined by the user (not NumPy's or s2s's own): its body is inlined
    if isinstance(value, types.FunctionType) and not value.__module__.startswith(("numpy", "s2s.", "scipy")):
        return list(reads_of(value, seen))
    return []


def changed(reads: tuple) -> bool:
    for where, name, value in reads:
        if where.__class__ is Attr:
            now = getattr(where.obj, name, _MISSING)
            if now is not value and not (now.__class__ is value.__class__ and isinstance(value, (int, float, str))
                                         and now == value):
                return True
            continue
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
