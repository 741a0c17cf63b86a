"""Two fixes to Numba's on-disk cache for code that several processes compile and load.

s2s relies on `cache=True` (a second process must not recompile), and its tests and users
run many processes over one cache directory.  Numba 0.68 has two ways to hand such a
process the wrong machine code, silently:

1. Symbol names.  A compiled function is named `qualname$uid`, with uid counted from 1 in
   every process; closures of one definition (the two sides of one overload's cotangent)
   differ only by that uid.  Cached code keeps the names of the process that compiled it,
   and Numba links dependent functions with ODR linkage: two cached libraries, compiled by
   two processes, that both define `dot_impl$40(<same types>)` with different code, loaded
   into a third, both call whichever came first.  (Seen: vmap's per-example cotangent of x
   computed as that of w.)  Fix: count from a random 48-bit offset in each process.
2. Concurrent saves.  A new cache entry takes the first free data file name (`f.1.nbc`,
   `f.2.nbc`, ...) and the index is written before the data: two processes adding
   different signatures of one function at once pick the same name, and the index can
   point one signature at the other's code.  Fix: each save writes its data under a
   random name first, then adds it to the index (an entry lost to a concurrent index
   write only means a recompile).

3. Unchecked loads.  A machine-code file (`.nbc`) is unpickled and linked as it is found: an
   edited one runs, a damaged one fails every later run (an LLVM bitcode error, not a
   cache problem).  Fix: each save writes the data's SHA-256 beside it (`.nbc.sha256`); a
   load whose data does not match (or has no digest) is a miss, and any failure to load an
   entry is a miss too: the function is compiled again and the entry rewritten.

4. Where the machine code goes.  With NUMBA_CACHE_DIR set (containers often point it at a shared
   /tmp folder), Numba keeps every cached function's index (a pickle, unpickled on load) and
   machine code there, unchecked: a file planted by another user runs in this process.  Fix:
   the code of a file s2s generated is cached beside it, in s2s's checked private cache, and
   that of s2s's own helpers (the overloads' implementations, per signature: a user function's
   compile loads them instead of typing and lowering them again) in that cache too, keyed on
   s2s's source hash (a helper's code holds the helpers it calls, from other files);
   NUMBA_CACHE_DIR and NUMBA_CACHE_LOCATOR_CLASSES apply only to other functions.  An index
   that is not this user's own regular file, or that cannot be read (truncated, garbage), is a
   miss, and the next save rewrites it.
5. Writes.  Numba's own writes (index, machine code, digests) go through s2s's one cache-file
   writer (codegen/cachefiles.py: an exclusive, no-follow temporary file, then a rename); a
   save that fails (a full disk, a cache made read-only) leaves the function compiled in memory,
   with one warning per process, instead of raising from every call of jit.

Importing this module applies them all, once.
"""
from __future__ import annotations

import contextlib
import itertools
import secrets


def _unique_symbols_across_processes() -> None:
    from numba.core import bytecode
    bytecode.FunctionIdentity._unique_ids = itertools.count(secrets.randbits(48) << 12)


def _race_free_saves() -> None:
    from numba.core import caching

    def save(self, key, data):
        overloads = self._load_index()
        data_name = overloads.get(key)
        if data_name is None:
            data_name = self._data_name(secrets.randbits(63))    # never another process's file
        self._save_data(data_name, data)                          # the data first, then the index
        overloads = self._load_index()
        if overloads.get(key) != data_name:
            overloads[key] = data_name
            self._save_index(overloads)

    caching.IndexDataCacheFile.save = save


class DamagedCacheEntry(Exception):
    """A cached machine-code file whose content is not what was saved."""


def _verified_loads() -> None:
    import hashlib
    import pickle

    from numba.core import caching

    def save_data(self, name, data):
        data = self._dump(data)
        path = self._data_path(name)
        with self._open_for_write(path + ".sha256") as f:      # (the digest first: a crash between
            f.write(hashlib.sha256(data).hexdigest().encode())  # the two leaves a miss, not a hit)
        with self._open_for_write(path) as f:
            f.write(data)

    def load_data(self, name):
        path = self._data_path(name)
        with open(path, "rb") as f:
            data = f.read()
        try:
            with open(path + ".sha256", "rb") as f:
                digest = f.read().decode()
        except OSError:
            raise DamagedCacheEntry(f"{path}: no digest") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise DamagedCacheEntry(f"{path}: content differs from what was saved")
        return pickle.loads(data)

    real_load_overload = caching.Cache.load_overload

    def load_overload(self, sig, target_context):
        try:
            return real_load_overload(self, sig, target_context)
        except Exception:           # damaged, edited or unreadable: compile again (and save anew)
            return None

    caching.IndexDataCacheFile._save_data = save_data
    caching.IndexDataCacheFile._load_data = load_data
    caching.Cache.load_overload = load_overload


def _generated(path: str) -> bool:
    """A file s2s generated (in its cache directory, as used or as requested)."""
    import os

    from ..codegen import emit
    return any(path.startswith(os.path.abspath(c) + os.sep) for c in (emit.cache_dir(), emit.requested_cache_dir()))


def _in_package(py_file: str) -> bool:
    """A file of the s2s package itself (its helpers), not one s2s generated."""
    import os
    path = os.path.abspath(py_file)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return path.startswith(package + os.sep) and not _generated(path)


def _own_cache_path(py_file: str) -> str | None:
    """Where the machine code of functions in `py_file` goes, or None for a file that is not s2s's."""
    import os

    from ..codegen import emit
    path = os.path.abspath(py_file)
    if _generated(path):
        return os.path.join(os.path.dirname(path), "__pycache__")
    if not _in_package(path):
        return None
    # s2s's own helpers: in s2s's cache too (not the installed package's folder), so one folder
    # holds all of s2s's machine code: emptying it (`S2S_CACHE_DIR`, a clean machine) is a cold start
    from numba.core.caching import _CacheLocator
    return os.path.join(os.path.abspath(emit.cache_dir()), "numba", _CacheLocator.get_suitable_cache_subpath(path))


_SAVE_FAILED: list = []


def _checked_locations() -> None:
    import inspect
    import os
    import stat
    import sys
    import tempfile

    from numba.core import caching

    from ..codegen import emit

    class CheckedLocator(caching.InTreeCacheLocator):
        """Machine code of one of s2s's files, in a folder of this user's that no one else can write."""

        def __init__(self, py_func, py_file, cache_path):
            super().__init__(py_func, py_file)
            self._cache_path = cache_path

        def ensure_cache_path(self):
            path = self._cache_path
            os.makedirs(path, mode=0o700, exist_ok=True)
            st = os.lstat(path)
            why = "it is not a folder" if not stat.S_ISDIR(st.st_mode) else emit.untrusted(st)
            if why is not None:
                raise PermissionError(f"s2s does not cache machine code in {path}: {why}")
            tempfile.TemporaryFile(dir=path).close()

        def get_source_stamp(self):
            if _in_package(self._py_file):
                # a helper's cached code holds the code of the helpers it calls, from other files:
                # any change to s2s's sources is a miss
                from ..codegen.version import s2s_version
                return ("s2s", s2s_version())
            try:
                return super().get_source_stamp()
            except OSError:     # (a module that could not be written, a full disk: never a hit)
                return ("unwritten", secrets.token_hex(8))

    real_init = caching.CacheImpl.__init__

    def init(self, py_func):
        try:
            source = inspect.getfile(py_func)
        except TypeError:
            source = None
        where = _own_cache_path(source) if source else None
        if where is None:
            return real_init(self, py_func)
        self._lineno = py_func.__code__.co_firstlineno
        qualname = getattr(py_func, "__qualname__", py_func.__name__)
        self._locator = CheckedLocator(py_func, source, where)
        modname = os.path.splitext(os.path.basename(source))[0]
        self._filename_base = self.get_filename_base(f"{modname}.{qualname}", getattr(sys, "abiflags", ""))

    real_load_index = caching.IndexDataCacheFile._load_index

    def load_index(self):
        if os.path.lexists(self._index_path) and not _own_file(self._index_path):
            return {}           # (planted, or a symlink: never unpickled)
        try:
            return real_load_index(self)
        except Exception:       # truncated or garbage: a miss, rewritten by the next save
            return {}

    real_save_overload = caching.Cache.save_overload

    def save_overload(self, sig, data):
        try:
            real_save_overload(self, sig, data)
        except OSError as exc:
            if not isinstance(self._impl.locator, CheckedLocator):
                raise
            _save_failed(self._cache_path, exc)
        except Exception:
            # a helper's implementation whose compiled form does not pickle (it holds a compiled
            # closure, say): it stays compiled in this process, uncached
            if not (isinstance(self._impl.locator, CheckedLocator) and _in_package(self._impl.locator._py_file)):
                raise

    @contextlib.contextmanager
    def open_for_write(self, filepath):
        from ..codegen.cachefiles import open_atomic
        with open_atomic(filepath) as f:
            yield f

    caching.CacheImpl.__init__ = init
    caching.IndexDataCacheFile._load_index = load_index
    caching.IndexDataCacheFile._open_for_write = open_for_write
    caching.Cache.save_overload = save_overload


def _own_file(path: str) -> bool:
    from ..codegen.cachefiles import is_own_file
    return is_own_file(path)


def _save_failed(folder: str, exc: OSError) -> None:
    """The machine code stays in memory (compiled again by the next process), with one warning per
    process: the cache moves to a private folder for the rest of the process (emit's warning), or,
    if that folder fails too, this one."""
    from ..codegen import emit
    try:
        emit.cache_write_failed(folder, exc)
        return
    except OSError:
        pass
    requested = emit.requested_cache_dir()
    if _SAVE_FAILED or emit._USABLE.get(requested, requested) != requested:
        return          # (warned already: here, or when the cache moved to a private folder)
    _SAVE_FAILED.append(exc)
    import warnings

    from ..codegen.emit import CacheDirWarning
    warnings.warn(f"s2s could not save compiled machine code in {folder} ({exc.strerror or exc}); it is "
                  f"kept in memory for this process, and compiled again by the next. Free space there or "
                  f"set S2S_CACHE_DIR to another directory of yours.", CacheDirWarning, stacklevel=2)


def apply() -> None:
    from numba.core import caching
    if getattr(caching, "_s2s_patched", False):
        return
    _unique_symbols_across_processes()
    _race_free_saves()
    _verified_loads()
    _checked_locations()
    caching._s2s_patched = True


apply()


# ----- variants known not to compile -------------------------------------------------------
# jit tries the fused version of a function first and falls back to the unfused one for
# argument types the fused loops cannot type (scalars, mixed ranks).  The failure is a fact
# about the generated file and the Numba types of the call: kept on disk beside the cache, so a
# later process goes straight to the version that compiles (and loads its cached machine code)
# instead of spending seconds compiling the fused one again only to see it fail.

def _failure_marker(path: str, args) -> str | None:
    import hashlib
    import os

    import numba

    from ..codegen import emit
    try:
        sig = repr(tuple(numba.typeof(a) for a in args))
    except ValueError:          # a value Numba has no type for: nothing to remember
        return None
    key = hashlib.sha256(repr((os.path.basename(path), sig, numba.__version__)).encode()).hexdigest()[:32]
    return os.path.join(emit.cache_dir(), "failed", key)


def known_to_fail(path: str, args) -> bool:
    """Whether compiling the generated file at `path` for these arguments failed before."""
    marker = _failure_marker(path, args)
    return marker is not None and _own_file(marker)


def remember_failure(path: str, args) -> None:
    """Record that the generated file at `path` does not compile for these arguments."""
    import os
    marker = _failure_marker(path, args)
    if marker is None:
        return
    from ..codegen.cachefiles import write_atomic
    try:
        os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
        write_atomic(marker, path + "\n")      # (a symlink planted at the marker is replaced, not followed)
    except OSError:             # an unwritable cache only costs the recompile
        pass
