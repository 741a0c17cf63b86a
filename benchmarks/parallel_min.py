"""Where a fused loop's parallel twin starts to pay: the elementwise gradient at sizes around
PARALLEL_MIN, serially (1 Numba thread) and as the twin (every thread), in one process.

    python benchmarks/parallel_min.py

The switch is lowered to 256 elements for the run, so the twin runs at every size measured."""
from __future__ import annotations

import os
import sys
import tempfile
import time

os.environ["S2S_JIT_WAIT"] = "1"
os.environ.setdefault("S2S_CACHE_DIR", tempfile.mkdtemp())      # (the switch is compiled in: no reuse)

import numba  # noqa: E402
import numpy as np  # noqa: E402

from s2s.backends.numba_lower import loops  # noqa: E402

loops.PARALLEL_MIN = 256
import s2s  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402


def best(fn, x, budget=0.2):
    fn(x)
    t = time.perf_counter()
    fn(x)
    reps = max(1, int(budget / max(time.perf_counter() - t, 1e-7)))
    times = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            fn(x)
        times.append((time.perf_counter() - t) / reps)
    return min(times)


def main() -> None:
    g = s2s.jit(s2s.grad(cases.elementwise_sum))
    every = numba.config.NUMBA_NUM_THREADS
    print(f"# {every} threads; elementwise grad, us per call: serial, twin, ratio")
    for n in (1024, 4096, 8192, 16384, 32768, 65536, 262144):
        x = np.linspace(-2.0, 2.0, n)
        g(x)
        numba.set_num_threads(1)
        serial = best(g, x)
        numba.set_num_threads(every)
        twin = best(g, x)
        print(f"{n:8d} {serial * 1e6:10.1f} {twin * 1e6:10.1f} {twin / serial:6.2f}", flush=True)


if __name__ == "__main__":
    main()
