"""How many threads compiled code uses: `s2s.set_num_threads(n)`, or S2S_NUM_THREADS=n.

Compiled code runs on two thread pools: Numba's (the parallel twins of fused loops under the
default target, every fused loop under target="parallel") and the BLAS library behind `@` and
np.linalg (OpenBLAS, MKL).  One setting limits both: Numba's count for the calling thread (Numba
keeps it per thread; pmap's device threads share it out, backends/devices.py) and BLAS's through
threadpoolctl, which finds the library NumPy and SciPy loaded.  Set before NumPy and Numba are
imported, S2S_NUM_THREADS becomes their own variables (NUMBA_NUM_THREADS, OPENBLAS_NUM_THREADS,
OMP_NUM_THREADS, MKL_NUM_THREADS), so every thread starts with it.
"""
from __future__ import annotations

import os
import sys

from ..errors import ArgumentError

_POOL_VARIABLES = ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _count(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ArgumentError(f"a thread count is a positive int, not {n!r}")
    return n


def set_num_threads(n: int) -> None:
    """Limit compiled code to n threads: Numba's (for the calling thread) and BLAS's, at most
    the cores Numba started with (NUMBA_NUM_THREADS)."""
    n = _count(n)
    import numba
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    import scipy.linalg.cython_blas   # noqa: F401 - the BLAS Numba's compiled matmul calls: loaded, so limited
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> int:
    """The threads Numba's parallel loops use from the calling thread."""
    import numba
    return numba.get_num_threads()


def apply_environment() -> None:
    """S2S_NUM_THREADS at import: the pools' variables where their libraries are not loaded yet,
    set_num_threads for those already loaded."""
    given = os.environ.get("S2S_NUM_THREADS")
    if not given:
        return
    try:
        n = _count(int(given))
    except (ValueError, ArgumentError):
        raise ArgumentError(f"S2S_NUM_THREADS={given!r}: a thread count is a positive integer") from None
    if "numpy" not in sys.modules and "numba" not in sys.modules:
        for name in _POOL_VARIABLES:
            os.environ[name] = str(n)
        return
    if "numba" not in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = str(n)
    set_num_threads(n)
