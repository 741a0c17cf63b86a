"""The on-disk index of generated modules, so a new process does not regenerate.

An entry maps a key (the transform, its options, the s2s version of the rule
tables and passes, and the source function's identity) to the generated file,
plus what is needed to trust and reload it:
- the hash of every source file the generation read (the user's files and
  any helper modules); a changed file invalidates the entry;
- how to rebind the generated module's injected globals (module + attribute);
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
import tempfile
from typing import Any

from ..frontend.reads import function_fingerprint
from . import emit
from .version import file_hash, s2s_version

_MISSING = object()


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
    if _VERSION is None:
        _VERSION = s2s_version()
    # the code itself, not only where it came from: a body registered in linecache (REPL, doctest)
    # or edited and reloaded with the same file, line and modification time is another body
    ident = (code.co_filename, code.co_firstlineno, _first_column(code), getattr(fn, "__qualname__", ""),
             function_fingerprint(fn), repr(spec), tuple(extra), _VERSION)
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


def _module_attr(obj: Any) -> tuple[str, str] | None:
    """Where a global object can be found again in a new process (module, attribute)."""
    for modname, mod in list(sys.modules.items()):
        if mod is None or modname.startswith("s2s_generated"):
            continue
        try:
            d = vars(mod)
        except TypeError:
            continue
        for attr, val in d.items():
            if val is obj and not attr.startswith("__"):
                return modname, attr
    return None


def store(key: str, path: str, fname: str, namespace: dict[str, Any], base: dict[str, Any],
          deps: list[str], origin: str, home_module: str | None = None) -> None:
    """Record an entry (silently skipped if an injected global cannot be found again)."""
    bindings = {}
    home = (sys.modules.get(home_module) or emit._UNREGISTERED.get(home_module)) if home_module else None
    for name, obj in namespace.items():
        if name in base and base[name] is obj:
            continue
        if home is not None and getattr(home, name, _MISSING) is obj:   # the usual case: same name, same module
            bindings[name] = ["attr", home_module, name]
            continue
        where = None if isinstance(obj, (int, float, str, bool, type(None))) else _module_attr(obj)
        if where is None:
            return
        bindings[name] = ["attr", where[0], where[1]]
    entry = {"path": path, "fname": fname, "origin": origin, "bindings": bindings,
             "deps": {d: file_hash(d) for d in sorted(set(deps)) if d and os.path.exists(d)}}
    tmp = None
    try:
        target = _index_path(key)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, target)
    except OSError:         # (disk full, cache made read-only: the entry is only an optimisation)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def load(key: str, base: dict[str, Any]) -> tuple[str, str, str, dict, str] | None:
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
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # the file name carries the hash of its contents: a damaged file is rebuilt, never run
    if not os.path.basename(path).endswith(hashlib.sha256(source.encode()).hexdigest()[:16] + ".py"):
        return None
    namespace = dict(base)
    try:
        for name, spec in entry["bindings"].items():
            if spec[0] == "const":
                namespace[name] = spec[1]
            else:
                namespace[name] = getattr(emit.find_module(spec[1]), spec[2])
    except (ImportError, AttributeError):
        return None
    return source, path, fname, namespace, entry.get("origin", "")
