"""What a generated module depends on outside the source function's code, for the disk cache.

Generation reads more than the function's text: the values of the globals, closure cells,
defaults and attributes it (and every helper it inlines) reads.  Some end up in the generated
text (a `bool` global decides an `if` while s2s reads the code; numbers are folded), others are
bound into the generated module's globals when it is loaded.  A second process on a warm cache
must get exactly what generating afresh would give, so:

- `environment_fingerprint(fn)` digests those values (numbers and strings by value, arrays by
  dtype and shape: the code reads them when it runs, and compiled code checks their contents
  through emit.values_match; functions by their code and their own environment, recursively);
  it is part of the disk key, so other values make another entry;
- a bound value is found again by where it was read, never by identity alone: a small int or a
  string is the same object wherever it appears (a closure's `k = 2` *is* a module's `k = 2`), so
  a plain value is stored as the value itself (the key guarantees the live source holds it), and
  an object as the paths from the source function that reach it (`locations`), all of which must
  reach one object again in the next process (`resolve`).
"""
from __future__ import annotations

import functools
import hashlib
import types
from typing import Any, Callable

from ..frontend.reads import attribute_chains, attribute_reads, code_fingerprint, code_names

_LIBRARIES = ("numpy", "scipy", "math", "s2s", "numba", "builtins", "cmath", "operator", "functools")
_BUDGET = 20000          # values visited at most; a larger environment is not persisted
_DEPTH = 12


class _TooBig(Exception):
    pass


def _library(obj) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod.split(".")[0] in _LIBRARIES or mod.startswith("s2s_generated")


def _user_function(value) -> bool:
    return isinstance(value, types.FunctionType) and not _library(value)


# ----- the fingerprint ----------------------------------------------------------------------

class _OneLevel(set):
    """reads_of's `seen` that stops it at the first function: the walk follows helpers itself."""

    def __contains__(self, item) -> bool:
        return len(self) > 0


class _Walk:
    def __init__(self):
        self.seen: dict[int, int] = {}
        self.left = _BUDGET
        self.keep: list = []        # (objects stay alive while walked: ids are not reused)

    def function(self, fn: Callable) -> str:
        if id(fn) in self.seen:
            return f"@{self.seen[id(fn)]}"
        self.seen[id(fn)] = len(self.seen)
        self.keep.append(fn)
        parts = [code_fingerprint(fn.__code__), fn.__qualname__]
        parts += ["d=" + self.value(d, 1) for d in fn.__defaults__ or ()]
        parts += [f"k:{k}=" + self.value(v, 1) for k, v in sorted((fn.__kwdefaults__ or {}).items())]
        glb = getattr(fn, "__globals__", {})
        parts.append("module=" + str(glb.get("__name__")))
        code = fn.__code__
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                parts.append(f"cell:{name}=" + self.value(cell.cell_contents, 1))
            except ValueError:
                parts.append(f"cell:{name}=<empty>")
        # every global its code names (reads_of leaves out those of code s2s generated: a vmap of a
        # grad reads the grad's generated function, whose globals are the user's values)
        for name in sorted(code_names(code)):
            if name in glb:
                parts.append(f"global:{name}=" + self.value(glb[name], 1))
        stop = _OneLevel({0})           # (helpers: walked by self.value, not by reads_of)
        cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        for kind, root, path in sorted(attribute_chains(code)):
            try:
                obj = cells[root].cell_contents if kind == "LOAD_DEREF" else glb[root]
            except (KeyError, ValueError):
                continue
            for _, name, value in attribute_reads(obj, path, stop):
                parts.append(f"attr:{root}.{name}=" + self.value(value, 1))
        return "fn(" + ";".join(parts) + ")"

    def value(self, value: Any, depth: int) -> str:
        import numpy as np
        self.left -= 1
        if self.left < 0 or depth > _DEPTH:
            raise _TooBig
        if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
            text = f"{type(value).__name__}:{value!r}"
            return text if len(text) < 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        if isinstance(value, np.generic):
            return f"np.{value.dtype.str}:{value!r}"
        if isinstance(value, np.ndarray):
            return f"ndarray:{value.dtype.str}:{value.shape}:{value.flags.writeable}"
        if isinstance(value, (tuple, list)):
            name = type(value).__qualname__
            if len(value) > 4096:
                raise _TooBig
            return f"{name}(" + ",".join(self.value(v, depth + 1) for v in value) + ")"
        if isinstance(value, dict):
            if len(value) > 4096:
                raise _TooBig
            # (a snapshot: reading a value can import a module lazily, adding to the dict being read)
            items = sorted((self.value(k, depth + 1), self.value(v, depth + 1)) for k, v in list(value.items()))
            return f"{type(value).__qualname__}{{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
        if isinstance(value, (set, frozenset)):
            return f"{type(value).__qualname__}{{" + ",".join(sorted(self.value(v, depth + 1) for v in list(value))) + "}"
        if isinstance(value, types.ModuleType):
            return "module:" + value.__name__
        if isinstance(value, types.FunctionType):
            return self.function(value) if not _library(value) else f"lib:{value.__module__}.{value.__qualname__}"
        if isinstance(value, types.MethodType):
            return f"method({self.value(value.__func__, depth + 1)},{self.value(value.__self__, depth + 1)})"
        if isinstance(value, functools.partial):
            return (f"partial({self.value(value.func, depth + 1)},{self.value(value.args, depth + 1)},"
                    f"{self.value(value.keywords, depth + 1)})")
        if isinstance(value, type):
            return self.cls(value, depth)
        return self.instance(value, depth)

    def cls(self, cls: type, depth: int) -> str:
        name = f"type:{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', '')}"
        if _library(cls) or id(cls) in self.seen:
            return name
        self.seen[id(cls)] = len(self.seen)
        self.keep.append(cls)
        parts = [name]
        for klass in cls.__mro__:
            if klass is object or _library(klass):
                continue
            for attr, v in sorted(vars(klass).items()):
                if attr.startswith("__") and attr not in ("__init__", "__call__"):
                    continue
                if isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if isinstance(v, property):
                    v = v.fget
                parts.append(f"{klass.__qualname__}.{attr}=" + self.value(v, depth + 1))
        return "(" + ";".join(parts) + ")"

    def instance(self, obj: Any, depth: int) -> str:
        t = type(obj)
        name = f"obj:{t.__module__}.{t.__qualname__}"
        if id(obj) in self.seen:
            return f"@{self.seen[id(obj)]}"
        self.seen[id(obj)] = len(self.seen)
        self.keep.append(obj)
        py_func = getattr(obj, "py_func", None) if t.__module__.startswith("numba") else None
        if isinstance(py_func, types.FunctionType):        # a Numba dispatcher: what it runs
            return name + "(" + self.value(py_func, depth + 1) + ")"
        if _library(t) and not hasattr(obj, "wrapper_kind"):
            return name
        try:
            state = vars(obj)
        except TypeError:
            return name
        public = {k: v for k, v in state.items() if not k.startswith("_")}
        return name + "(" + self.cls(t, depth + 1) + "," + self.value(public, depth + 1) + ")"


def environment_fingerprint(fn: Callable) -> str | None:
    """A digest of the values generating code for `fn` reads outside its code, or None when they
    are too many to digest (such a function is not persisted)."""
    try:
        text = _Walk().function(fn)
    except (_TooBig, RecursionError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# ----- plain values, stored as themselves ----------------------------------------------------

def encode_plain(value: Any) -> list | None:
    """A JSON form of a number, string, None, NumPy scalar or tuple of them; None for anything else."""
    import numpy as np
    if value is None:
        return ["none"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", value.hex()]
    if isinstance(value, complex):
        return ["complex", value.real.hex(), value.imag.hex()]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, np.generic) and not value.dtype.hasobject:
        return ["np", value.dtype.str, value.tobytes().hex()]
    if type(value) is tuple:
        parts = [encode_plain(v) for v in value]
        return None if any(p is None for p in parts) else ["tuple", parts]
    return None


def decode_plain(spec: list) -> Any:
    import numpy as np
    kind = spec[0]
    if kind == "none":
        return None
    if kind == "bool":
        return bool(spec[1])
    if kind == "int":
        return int(spec[1])
    if kind == "float":
        return float.fromhex(spec[1])
    if kind == "complex":
        return complex(float.fromhex(spec[1]), float.fromhex(spec[2]))
    if kind == "str":
        return str(spec[1])
    if kind == "np":
        return np.frombuffer(bytes.fromhex(spec[2]), dtype=np.dtype(spec[1]))[0]
    if kind == "tuple":
        return tuple(decode_plain(p) for p in spec[1])
    raise ValueError(f"unknown constant kind {kind!r}")


# ----- objects, found again by where they were read --------------------------------------------

def locations(fn: Callable) -> list[tuple[tuple, Any]]:
    """(path, object) for what `fn` reads outside its code, paths from `fn` (see `resolve`)."""
    out: list = [((), fn)]
    seen: set = set()
    try:
        _locate(fn, (), out, seen, 0)
    except RecursionError:
        pass
    return out


def _locate(fn, path: tuple, out: list, seen: set, depth: int) -> None:
    if id(fn) in seen or depth > _DEPTH or len(out) > _BUDGET:
        return
    seen.add(id(fn))
    code = fn.__code__

    def found(p, value):
        out.append((p, value))
        _follow(value, p, out, seen, depth + 1)

    cells = {}
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:
            continue
        found(path + (("c", name),), cells[name])
    for i, d in enumerate(fn.__defaults__ or ()):
        found(path + (("d", i),), d)
    for k, d in sorted((fn.__kwdefaults__ or {}).items()):
        found(path + (("k", k),), d)
    glb = getattr(fn, "__globals__", {})
    for name in sorted(code_names(code)):
        if name in glb and name not in cells:
            found(path + (("g", name),), glb[name])
    for kind, root, attrs in sorted(attribute_chains(code)):
        if kind == "LOAD_DEREF":
            if root not in cells:
                continue
            obj, p = cells[root], path + (("c", root),)
        else:
            if root not in glb:
                continue
            obj, p = glb[root], path + (("g", root),)
        for attr in attrs:
            if isinstance(obj, types.ModuleType) and _library(obj) and obj.__name__.split(".")[0] != "numpy":
                break
            try:
                obj = getattr(obj, attr)
            except Exception:
                break
            p = p + (("a", attr),)
            found(p, obj)


def _follow(value, path: tuple, out: list, seen: set, depth: int) -> None:
    """Into what a helper brings along: a function's reads, a method's function, a class's
    methods, a transform's function, a partial's function."""
    if _user_function(value):
        _locate(value, path, out, seen, depth)
    elif isinstance(value, types.MethodType):
        out.append((path + (("f",),), value.__func__))
        _follow(value.__func__, path + (("f",),), out, seen, depth + 1)
    elif isinstance(value, functools.partial):
        out.append((path + (("a", "func"),), value.func))
        _follow(value.func, path + (("a", "func"),), out, seen, depth + 1)
    elif isinstance(value, type) and not _library(value) and id(value) not in seen:
        seen.add(id(value))
        for klass in value.__mro__:
            if klass is object or _library(klass):
                continue
            for attr, v in vars(klass).items():
                if isinstance(v, (staticmethod, classmethod)):
                    v = v.__func__
                if _user_function(v) and klass is value:
                    out.append((path + (("v", attr),), v))
                    _follow(v, path + (("v", attr),), out, seen, depth + 1)
    elif hasattr(value, "wrapper_kind") and hasattr(value, "fun") and id(value) not in seen:
        seen.add(id(value))
        out.append((path + (("a", "fun"),), value.fun))
        _follow(value.fun, path + (("a", "fun"),), out, seen, depth + 1)


def resolve(fn: Callable, path) -> Any:
    """The object at `path` from `fn` now; raises LookupError when the path leads nowhere."""
    obj = fn
    for step in path:
        kind = step[0]
        try:
            if kind == "c":
                code = obj.__code__
                obj = obj.__closure__[code.co_freevars.index(step[1])].cell_contents
            elif kind == "g":
                obj = obj.__globals__[step[1]]
            elif kind == "a":
                obj = getattr(obj, step[1])
            elif kind == "d":
                obj = obj.__defaults__[step[1]]
            elif kind == "k":
                obj = obj.__kwdefaults__[step[1]]
            elif kind == "f":
                obj = obj.__func__
            elif kind == "v":
                obj = vars(obj)[step[1]]
                if isinstance(obj, (staticmethod, classmethod)):
                    obj = obj.__func__
            else:
                raise LookupError(kind)
        except LookupError:
            raise
        except Exception as exc:        # (no such attribute, empty cell, not a function)
            raise LookupError(str(exc)) from None
    return obj
