"""Emit: an ANF gast function -> readable source in a real file -> a live function.

The file lives in the per-user cache directory (`S2S_CACHE_DIR`, default
`$XDG_CACHE_HOME/s2s` or `~/.cache/s2s`), is written atomically, and is
compiled under its own path, so tracebacks, debuggers, IDEs and `inspect`
all see real lines.  Each block of generated statements carries a comment
with the user's source line it came from.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import linecache
import os
import re
import tempfile
import weakref
from typing import Any, Callable

import gast

from ..frontend.annotations import GRAD_OF, SECTION, getanno
from .cachefiles import write_atomic
from .version import s2s_version

_MARK = "__s2s_comment__:"
_MARK_RE = re.compile(r"^(\s*)(\"\"\"|'''|'|\")" + re.escape(_MARK) + r"(.*)\2$", re.M)


class CacheDirWarning(UserWarning):
    """The cache directory cannot be used (unwritable, or someone else could write into it)."""


_USABLE: dict[str, str] = {}        # requested cache directory -> the directory used for it


def requested_cache_dir() -> str:
    path = os.environ.get("S2S_CACHE_DIR")
    if not path:
        home = os.environ.get("HOME") or os.path.expanduser("~")
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
        path = os.path.join(base, "s2s")
    return os.path.abspath(path)


def cache_dir() -> str:
    """The directory generated modules, the index and Numba's machine code go to: the requested
    one when it is ours alone and writable; else (one warning) a private folder for this process,
    removed at exit, so s2s keeps working and leaves nothing behind."""
    path = requested_cache_dir()
    used = _USABLE.get(path)
    if used is None:
        why = _unusable(path)
        used = _USABLE[path] = path if why is None else _fallback(path, why)
    return used


def _unusable(path: str) -> str | None:
    """Why `path` cannot hold s2s's cache, or None.  Files in it are run as code (generated
    modules, pickled machine code), so, as ssh and pip do, a directory another user could write
    into is refused, not only one we cannot write."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as exc:
        return f"it cannot be created ({exc.strerror or exc})"
    why = untrusted(st)
    if why is not None:
        return why
    # folders made inside it earlier (by s2s, or Numba's __pycache__) must be ours too
    for sub in _subfolders(path, depth=2):
        try:
            owner = os.stat(sub).st_uid
        except OSError:
            continue
        if hasattr(os, "getuid") and owner != os.getuid():
            return f"{sub} in it belongs to user id {owner}, not to you ({os.getuid()})"
    try:
        fd, probe = tempfile.mkstemp(dir=path, suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"it is not writable ({exc.strerror or exc})"
    return None


def _subfolders(path: str, depth: int) -> list[str]:
    out = []
    try:
        entries = [e for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return out
    for e in entries:
        out.append(e.path)
        if depth > 1:
            out.extend(_subfolders(e.path, depth - 1))
    return out


def untrusted(st: os.stat_result) -> str | None:
    """Why a cache file or directory with this status must not be trusted, or None."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to user id {st.st_uid}, not to you ({os.getuid()})"
    if st.st_mode & 0o022:
        return f"other users can write into it (mode {st.st_mode & 0o777:o})"
    return None


def _fallback(path: str, why: str) -> str:
    import atexit
    import shutil
    import warnings
    try:
        private = tempfile.mkdtemp(prefix="s2s-cache-")       # (mode 0700, ours)
        atexit.register(shutil.rmtree, private, True)
    except OSError:         # (no room for a folder either: every write fails, and is only a miss)
        private = os.path.join(tempfile.gettempdir(), f"s2s-cache-unwritable-{os.getpid()}")
    warnings.warn(f"s2s does not use the cache directory {path}: {why}. Generated code is kept for "
                  f"this process only. Set S2S_CACHE_DIR to a directory of yours that only you can "
                  f"write to.", CacheDirWarning, stacklevel=4)
    return private


def cache_write_failed(folder: str, exc: OSError) -> None:
    """A write under the cache failed (disk full, made read-only meanwhile): use a private folder
    from now on (one warning); raises `exc` when the private folder is already in use."""
    path = requested_cache_dir()
    if _USABLE.get(path) != path or not os.path.abspath(folder).startswith(path):
        raise exc
    _USABLE[path] = _fallback(path, f"writing to it failed ({exc.strerror or exc})")


def _comment(text: str) -> gast.Expr:
    return gast.Expr(value=gast.Constant(_MARK + text, None))


def _annotate(body: list) -> list:
    """Insert comment markers where the originating user line changes."""
    out: list = []
    last = None
    for s in body:
        section = getanno(s, SECTION)
        if section:
            out.append(_comment(f" --- {section} ---"))
            last = None
        src = getattr(s, "s2s_src", None)
        key = (getattr(s, "lineno", None), getanno(s, GRAD_OF, False), src and src.filename)
        if src is not None and key[0] is not None and key != last:
            text = src.line(key[0]).strip()
            if text:
                prefix = "grad of: " if key[1] else ""
                out.append(_comment(f" {prefix}{text}"))
        last = key
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While, gast.With, gast.Try)):
                setattr(s, field, _annotate(sub))
        out.append(s)
    return out


def to_source(fdef: gast.FunctionDef, comments: bool = True) -> str:
    import copy
    node = copy.copy(fdef)
    if comments:
        node.body = _annotate(list(fdef.body))
    module = gast.Module(body=[node], type_ignores=[])
    tree = gast.gast_to_ast(module)
    ast.fix_missing_locations(tree)
    text = ast.unparse(tree)

    def repl(m):
        body = ast.literal_eval(m.group(2) + _MARK + m.group(3) + m.group(2))[len(_MARK):]
        body = body.replace("\n", " ")
        return f"{m.group(1)}#{body}"
    return _MARK_RE.sub(repl, text) + "\n"


def write_module(source: str, stem: str) -> str:
    """Write `source` to a stable path derived from its hash; return the path."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", stem)[:60]
    # One folder per version of s2s: machine code cached by Numba next to a file never
    # outlives the s2s that generated it.
    for attempt in (0, 1):
        folder = os.path.join(cache_dir(), "v" + s2s_version()[:8])
        path = os.path.join(folder, f"{safe}_{digest}.py")
        if _read(path) == source:
            return path
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            write_atomic(path, source)            # (no partial files left behind, no symlink followed)
            return path
        except OSError as exc:
            if attempt:
                # (the private folder cannot be written either: a full disk. The module is compiled
                # from its text, and Numba keeps the machine code in memory; the fallback warned)
                return path
            try:
                cache_write_failed(folder, exc)
            except OSError:
                return path
    return path


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except (OSError, ValueError):       # (missing, or damaged: not UTF-8)
        return None


def load_function(source: str, path: str, fname: str, namespace: dict[str, Any], register: bool = True):
    """Compile `source` (already written at `path`) as a module and return function `fname`.

    The module is registered in sys.modules under a name derived from its file, so
    tools that look functions up by module (inspect, pickle, Numba's on-disk cache)
    find it, in this process and in the next one that loads the same file.  Wrappers
    s2s writes around a user's function (Jacobians, pytree flattening) are not
    registered: sys.modules would keep the user's function and what it captured alive.
    """
    import sys
    import types
    modname = "s2s_generated_" + re.sub(r"[^A-Za-z0-9_]", "_", os.path.basename(path)[:-3])
    module = types.ModuleType(modname)
    module.__file__ = path
    glb = module.__dict__
    glb.update(namespace)
    glb["__name__"] = modname
    glb["__file__"] = path
    code = compile(source, path, "exec")
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    exec(code, glb)
    if register:
        sys.modules[modname] = module
    else:
        # found by name by the disk cache (a transform of this code binds its globals by module
        # and attribute) while its functions live: the globals keep the module, weakly listed here
        glb["__s2s_module__"] = module
        _UNREGISTERED[modname] = module
    return glb[fname]


_UNREGISTERED: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()


def find_module(name: str):
    """A module by name: imported, or generated code s2s loaded without registering it."""
    import importlib
    module = _UNREGISTERED.get(name)
    return module if module is not None else importlib.import_module(name)


def header(description: str, namespace: dict[str, Any], body_source: str, imports: bool = True) -> str:
    """Module header: provenance plus the imports the body uses."""
    from ..frontend.namespace import HELPER_MODULES
    used = set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", body_source))
    lines = [f"# Generated by s2s: {_one_line(description)}", "# Do not edit: regenerated from the source function."]
    if "np" in used:
        # compiled code sees numpy with stand-ins for what Numba lacks (backends/numba_numpy)
        lines.append("import numpy as np" if imports else
                     "# np: numpy, with Numba versions of the functions Numba lacks (bound at load time)")
    if "math" in used:
        lines.append("import math" if imports else
                     "# math: with Numba versions of the functions Numba lacks (bound at load time)")
    imported: set[str] = set()
    for modname in HELPER_MODULES:
        names = sorted(n for n in used if n in namespace and getattr(namespace[n], "__module__", None) == modname
                       and getattr(namespace[n], "__name__", None) == n)
        if names:
            if imports:
                lines.append(f"from {modname} import {', '.join(names)}")
            else:   # compiled backends bind their own implementations at load time
                lines.append(f"# from {modname} (compiled versions, bound at load time): {', '.join(names)}")
            imported |= set(names)
    backend_helpers: dict[str, list[str]] = {}     # e.g. the Numba kernels of backends/vecmath, prange
    for n in sorted(used - imported):
        modname = getattr(namespace.get(n), "__module__", None) or ""
        if n in namespace and modname.startswith(("s2s.", "numba.")) and getattr(namespace[n], "__name__", None) == n:
            backend_helpers.setdefault("numba" if modname.startswith("numba.") else modname, []).append(n)
    for modname, names in backend_helpers.items():
        lines.append(f"# from {modname} (bound at load time): {', '.join(names)}")
        imported |= set(names)
    injected = sorted(n for n in used if n in namespace and n not in ("np", "math") and n not in imported)
    if injected:
        lines.append(_GLOBALS + ", ".join(injected))
        if not imports:
            # Numba compiles global values into the machine code as constants: name them in the text,
            # so other values (another closure's data, a global set from the command line) make
            # another file, and Numba's cache (kept per file) never hands back code built for old ones
            frozen = _frozen_values(namespace, injected)
            if frozen:
                lines.append(_VALUES + frozen)
    return "\n".join(lines) + "\n\n\n"


def _one_line(text: str) -> str:
    """Text for a comment line: a name can hold a line break (a `__qualname__` set by code), which
    would end the comment and run the rest as code in the generated module."""
    return re.sub(r"[\x00-\x1f\x7f\x85\u2028\u2029]", lambda m: m.group().encode("unicode_escape").decode("ascii"),
                  text)


_GLOBALS = "# Globals of the source function, bound at load time: "
_VALUES = "# Values compiled in: "


def _frozen_values(namespace: dict[str, Any], names) -> str:
    prints = ((n, _fingerprint(namespace[n])) for n in names if n in namespace)   # (hashes each array once)
    return "; ".join(f"{n} = {p}" for n, p in prints if p)


def values_match(source: str, namespace: dict[str, Any]) -> bool:
    """Whether the values a compiled module was generated for (its header) are those in
    `namespace` now (a module global read from the command line may differ in this process)."""
    names: list[str] = []
    stored = ""
    for line in source.splitlines()[:20]:
        if line.startswith(_GLOBALS):
            names = line[len(_GLOBALS):].split(", ")
        elif line.startswith(_VALUES):
            stored = line[len(_VALUES):]
    return _frozen_values(namespace, names) == stored


def _fingerprint(value: Any) -> str | None:
    """What identifies a value Numba freezes (numbers, strings, arrays, tuples of them), as one
    line of text; None for values compiled code does not freeze (functions)."""
    import numpy as np
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None), np.generic)):
        text = repr(value)
        return text if len(text) <= 40 and "\n" not in text else "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:
        digest = hashlib.sha256(np.ascontiguousarray(value).view(np.uint8).ravel().tobytes() if value.size else b"")
        digest.update(repr((value.dtype.str, value.shape)).encode())
        return f"array{value.shape} {value.dtype} sha256:{digest.hexdigest()[:16]}"
    if isinstance(value, (tuple, list)):
        parts = [_fingerprint(v) for v in value]
        if any(p is None for p in parts):
            return None
        text = "(" + ", ".join(parts) + ")"
        return text if len(text) <= 80 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return None


@dataclasses.dataclass(frozen=True)
class Generated:
    fn: Callable          # the compiled generated function
    source: str           # the whole generated module text
    path: str             # where it lives on disk
    origin: str           # "file:line (qualname)" of the source function
    reads: tuple = ()     # the globals, closure cells and helpers it was built from (frontend.reads)
