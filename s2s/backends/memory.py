"""Freed memory stays with the process for the next call (glibc malloc settings).

Compiled gradients allocate their temporaries and results afresh on every call (a 784-512
MLP's gradient: ~10 arrays of 1-3 MB). glibc serves blocks above its mmap threshold with
fresh mappings, and gives the top of the heap back to the kernel once more than its trim
threshold is free; either way the next call touches new pages, and the kernel faults and
zeroes every one of them. Measured on case 4 of benchmarks/sidebyside.py, one call after
another: 17.6 ms per call with glibc's defaults, 12.3 ms with the settings below (JAX,
whose allocator keeps its memory: 13.4 ms). Best-of timings hid it, because earlier large
frees raise glibc's thresholds.

So when the Numba backend is first used, s2s asks glibc to serve blocks up to 32 MiB from
the heap (the largest threshold glibc's own adaptive policy reaches) and to keep up to
128 MiB of free heap rather than return it: the process keeps its high-water mark of
freed memory, as JAX's and PyTorch's caching allocators do. Set S2S_MALLOC_TUNING=0 to
leave glibc's defaults. Other C libraries: nothing is changed.
"""
from __future__ import annotations

import ctypes
import os
import platform

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD = -1     # mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Apply the settings once; True if glibc accepted them."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if os.environ.get("S2S_MALLOC_TUNING", "1") == "0" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    _applied = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _applied
