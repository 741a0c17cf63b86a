"""Which s2s made a generated file: a hash of the package's own sources.

Both caches key on it (emit's folder per version, the disk cache's entries), so a change to any
rule or pass invalidates what older code generated.
"""
from __future__ import annotations

import hashlib
import os

_FILE_HASHES: dict[str, tuple[tuple, str]] = {}


def file_hash(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)     # (an edit that keeps the mtime changes the size)
    hit = _FILE_HASHES.get(path)
    if hit and hit[0] == stamp:
        return hit[1]
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    _FILE_HASHES[path] = (stamp, digest)
    return digest


_PKG_VERSION: str | None = None


def s2s_version() -> str:
    """A hash of the package's own sources: any change to rules or passes invalidates the cache."""
    global _PKG_VERSION
    if _PKG_VERSION is not None:
        return _PKG_VERSION
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the s2s package
    h = hashlib.sha256()
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".py"):
                h.update((file_hash(os.path.join(dirpath, name)) or "").encode())
    _PKG_VERSION = h.hexdigest()[:16]
    return _PKG_VERSION
