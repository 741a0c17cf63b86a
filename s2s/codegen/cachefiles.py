"""The one way s2s writes a file under its cache: a new temporary file beside it, then a rename.

Files in the cache are run (generated modules, Numba's pickled index and machine code) or trusted
(the index, the "did not compile" markers), so a write must never go through something planted
at the target's path:
- the temporary file is created with O_CREAT | O_EXCL | O_NOFOLLOW (a name that exists, a
  symlink included, is an error, never opened), mode 0600, under a random name;
- `os.replace` then renames it over the target: a symlink planted there is replaced, its target
  is never written;
- a failed write (a full disk) removes the temporary file and raises: callers decide whether the
  cache is only an optimisation (it is, everywhere in s2s).
"""
from __future__ import annotations

import contextlib
import os
import secrets

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | \
    getattr(os, "O_BINARY", 0)


@contextlib.contextmanager
def open_atomic(path: str):
    """A binary file to write `path`'s new content into; it replaces `path` when the block ends."""
    tmp = f"{path}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, _FLAGS, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str, data: bytes | str) -> None:
    """Replace `path` with `data` (text is written as UTF-8)."""
    with open_atomic(path) as f:
        f.write(data.encode() if isinstance(data, str) else data)


def is_own_file(path: str) -> bool:
    """`path` is a regular file (not a symlink) of this user that no one else can write."""
    import stat
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022:
        return False
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()
