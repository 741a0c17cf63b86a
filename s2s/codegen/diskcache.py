"""The on-disk index of generated modules, so a new process does not regenerate.

An entry maps a key (the transform, its options, the s2s version of the rule
tables and passes, the source function's identity, and the values it reads
outside its code: environment.environment_fingerprint) to the generated file,
plus what is needed to trust and reload it:
- the hash of every source file the generation read (the user's files and
  any helper modules); a changed file invalidates the entry;
- how to rebind the generated module's injected globals: a number or string as itself, an object
  by the paths from the source function that read it (codegen/environment.py), never by finding
  an equal object somewhere (a closure's `k = 2` is the very object a module's `k = 2` is);
- the generated file's own content hash (its name carries it): a truncated or
  edited file is detected and rebuilt, never run.
Writes are atomic (temporary file + rename), so concurrent writers are safe;
the directory is private to the user (0700).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from typing import Any

from ..frontend.reads import function_fingerprint
from . import emit
from .cachefiles import write_atomic
from .environment import decode_plain, encode_plain, environment_fingerprint, locations, resolve
from .version import file_hash, s2s_version

_VERSION: str | None = None


def key_for(fn: Any, spec: tuple) -> str | None:
    """A stable key for transforming `fn` with `spec`, or None if fn cannot be keyed."""
    global _VERSION
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    # Defaults and closure values are part of what the code means (lambdas made in a loop
    # share their source): key on them when they are plain constants, else do not persist.
    extra = []
    for value in list(fn.__defaults__ or ()) + [c.cell_contents for c in (fn.__closure__ or ())
                                                if _cell_filled(c)]:
        if not _plain(value):
            return None
        extra.append(repr(value))
    # A wrapper s2s wrote (pytree flattening, a Jacobian): its text is the same whatever function it
    # calls, so the key says which one, or the wrapper is not persisted.
    wrapped = getattr(fn, "__s2s_wraps__", None)
    if wrapped is not None:
        inner = key_for(wrapped, ())
        if inner is None:
            return None
        extra.append(inner)
    # the values it reads outside its code (globals, helpers' closures and defaults, attributes):
    # generation bakes some into the text (a bool global decides a branch) and binds the others
    environment = environment_fingerprint(fn)
    if environment is None:
        return None
    if _VERSION is None:
        _VERSION = s2s_version()
    # the code itself, not only where it came from: a body registered in linecache (REPL, doctest)
    # or edited and reloaded with the same file, line and modification time is another body
    ident = (code.co_filename, code.co_firstlineno, _first_column(code), getattr(fn, "__qualname__", ""),
             function_fingerprint(fn), environment, repr(spec), tuple(extra), _VERSION)
    return hashlib.sha256(repr(ident).encode()).hexdigest()[:32]


def _first_column(code) -> int | None:
    """Where the code starts on its line: two lambdas on one line share file, line and name."""
    columns = [p[2] for p in code.co_positions() if p[2] is not None and (p[2], p[3]) != (0, 0)]
    return min(columns) if columns else None


def _cell_filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _plain(value) -> bool:
    if isinstance(value, (int, float, str, bool, type(None))):
        return True
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return False


def _index_path(key: str) -> str:
    d = os.path.join(emit.cache_dir(), "index")
    os.makedirs(d, mode=0o700, exist_ok=True)
    return os.path.join(d, key + ".json")


def _named(obj: Any) -> tuple[str, str] | None:
    """(module, attribute) of a function, class or ufunc defined at a module's top level (or found
    there by identity: a library's alias), which a new process finds again by that name."""
    import numpy as np
    if not (isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, np.ufunc, type))
            or type(obj).__module__.startswith("numba.")):
        return None         # (an array, a container, an instance: only where the function read it)
    mod, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(mod, str) and isinstance(qualname, str) and "." not in qualname and \
            getattr(sys.modules.get(mod), qualname, None) is obj:
        return mod, qualname
    for modname, module in list(sys.modules.items()):
        if module is None or modname.startswith("s2s_generated"):
            continue
        try:
            d = vars(module)
        except TypeError:
            continue
        for attr, val in list(d.items()):
            if val is obj and not attr.startswith("__"):
                return modname, attr
    return None


def store(key: str, path: str, fname: str, namespace: dict[str, Any], base: dict[str, Any],
          deps: list[str], origin: str, src_fn: Any = None) -> None:
    """Record an entry (silently skipped if an injected global cannot be found again).

    How each global is bound again in the next process: a number, string or tuple of them as
    itself (the key holds the values the function read, so a key that matches means the live
    source holds this value; an int found by identity in a module is not where it came from: small
    ints are one object everywhere); an object by every path from `src_fn` that read it
    (environment.locations), checked to reach one object again; a function, class or ufunc with no
    such path by its module and name."""
    bindings: dict[str, list] = {}
    located = None
    for name, obj in namespace.items():
        if name in base and base[name] is obj:
            continue
        plain = encode_plain(obj)
        if plain is not None:
            bindings[name] = ["const", plain]
            continue
        if src_fn is not None:
            if located is None:
                located = locations(src_fn)
            paths = sorted({tuple(p) for p, v in located if v is obj})
            if paths:
                bindings[name] = ["path", [[list(step) for step in p] for p in paths]]
                continue
        where = _named(obj)
        if where is None:
            return
        bindings[name] = ["attr", where[0], where[1]]
    entry = {"path": path, "fname": fname, "origin": origin, "bindings": bindings,
             "deps": {d: file_hash(d) for d in sorted(set(deps)) if d and os.path.exists(d)}}
    try:
        write_atomic(_index_path(key), json.dumps(entry))
    except OSError:         # (disk full, cache made read-only: the entry is only an optimisation)
        pass


def load(key: str, base: dict[str, Any], src_fn: Any = None) -> tuple[str, str, str, dict, str] | None:
    """(source, path, fname, namespace, origin) of a valid entry, or None (missing, stale, corrupt)."""
    try:
        target = _index_path(key)
        with open(target) as f:
            if emit.untrusted(os.fstat(f.fileno())):
                return None
            entry = json.load(f)
        path, fname = entry["path"], entry["fname"]
        # only a generated file of this cache, written by us, is run (a planted entry naming
        # another file, or a file someone else wrote, is not)
        if os.path.dirname(os.path.dirname(os.path.abspath(path))) != os.path.abspath(emit.cache_dir()):
            return None
        for dep, digest in entry["deps"].items():
            if file_hash(dep) != digest:
                return None
        with open(path) as f:
            if emit.untrusted(os.fstat(f.fileno())):
                return None
            source = f.read()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None         # (a damaged or foreign index file is a miss)
    # the file name carries the hash of its contents: a damaged file is rebuilt, never run
    if not os.path.basename(path).endswith(hashlib.sha256(source.encode()).hexdigest()[:16] + ".py"):
        return None
    namespace = dict(base)
    try:
        for name, spec in entry["bindings"].items():
            if spec[0] == "const":
                namespace[name] = decode_plain(spec[1])
            elif spec[0] == "path":
                if src_fn is None:
                    return None
                found = [resolve(src_fn, p) for p in spec[1]]
                if not found or any(v is not found[0] for v in found):
                    return None         # (the paths that reached one object reach several now)
                namespace[name] = found[0]
            else:
                namespace[name] = getattr(emit.find_module(spec[1]), spec[2])
    except (ImportError, AttributeError, LookupError, ValueError, TypeError, IndexError):
        return None
    return source, path, fname, namespace, entry.get("origin", "")
