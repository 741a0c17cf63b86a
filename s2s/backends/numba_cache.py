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

Importing this module applies all three, once.
"""
from __future__ import annotations

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


def apply() -> None:
    from numba.core import caching
    if getattr(caching, "_s2s_patched", False):
        return
    _unique_symbols_across_processes()
    _race_free_saves()
    _verified_loads()
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
    import os
    marker = _failure_marker(path, args)
    return marker is not None and os.path.exists(marker)


def remember_failure(path: str, args) -> None:
    """Record that the generated file at `path` does not compile for these arguments."""
    import os
    marker = _failure_marker(path, args)
    if marker is None:
        return
    try:
        os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
        with open(marker, "w") as f:
            f.write(path + "\n")
    except OSError:             # an unwritable cache only costs the recompile
        pass
