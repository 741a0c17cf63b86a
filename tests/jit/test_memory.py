"""The Numba backend keeps freed memory for the next call (s2s/backends/memory.py).

A compiled gradient allocates its temporaries on every call; with glibc's defaults the
freed top of the heap went back to the kernel and every call faulted its pages in again
(case 4 of the side-by-side benchmark: 17.6 ms per call against 12.3 ms). The check is
the page faults of a loop that allocates and frees like such a call, in a fresh process,
with the setting and without it.
"""
import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the settings are glibc's")

CHILD = textwrap.dedent("""
    import resource, numpy as np
    import s2s.backends.numba_cpu
    def one_call():                                  # six 2 MiB temporaries, freed together
        arrays = [np.ones(2 << 17) for _ in range(6)]
        return sum(a[0] for a in arrays)
    one_call(); one_call()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        one_call()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def faults(**env) -> int:
    res = subprocess.run([sys.executable, "-c", CHILD], env=dict(os.environ, **env), capture_output=True,
                         text=True, timeout=120, check=True)
    return int(res.stdout.split()[-1])


def test_freed_memory_is_reused_without_page_faults():
    pages = 20 * 6 * (2 << 20) // 4096                # what faulting every page in again costs
    assert faults() < pages // 20
    assert faults(S2S_MALLOC_TUNING="0") > pages // 2  # glibc's defaults: the pages come back each time
