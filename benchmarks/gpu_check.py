"""One short check of the CUDA target on a real GPU: results against NumPy, and timings.

    python benchmarks/gpu_check.py            # needs a CUDA GPU and numba-cuda

Prints, per case, the max abs difference from NumPy, the kernel time (best of
5, synchronized, excluding the first call that compiles) and the time of the
same work in NumPy on the host, then exits non-zero if any result disagrees.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "cudasim"))


def best(fn, repeat=5):
    from numba import cuda
    fn()
    cuda.synchronize()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(n=10_000_000):
    from numba import cuda
    import s2s
    import cuda_cases as C
    dev = cuda.get_current_device()
    print(f"device: {getattr(dev, 'name', 'CUDA simulator')}")
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, n)
    ys = np.sign(rng.normal(size=n))
    cases = [
        ("elementwise sin(x)*x**2 + exp(-x*x)", s2s.jit(C.elementwise, target="cuda"), (x,), lambda: C.elementwise(x)),
        ("sum of the same (atomics)", s2s.jit(C.summed, target="cuda"), (x,), lambda: C.summed(x)),
        ("per-example logistic grads (vmap(grad))",
         s2s.jit(s2s.vmap(s2s.grad(C.scalar_logistic), in_axes=(None, 0, 0)), target="cuda"), (0.3, x, ys),
         lambda: -ys * x / (1.0 + np.exp(ys * x * 0.3))),
    ]
    bad = 0
    for label, fn, args, ref in cases:
        got = fn(*args)
        want = ref()
        err = float(np.max(np.abs(np.asarray(got) - want)))
        tol = 1e-6 * max(1.0, float(np.max(np.abs(want))))
        ok = err <= tol
        bad += not ok
        t_gpu = best(lambda: fn(*args))
        t0 = time.perf_counter()
        ref()
        t_np = time.perf_counter() - t0
        transfers = fn.generated_for(len(args)).fn.transfers
        print(f"{label:45s} max|diff| {err:.2e} {'ok' if ok else 'MISMATCH'}  "
              f"gpu (incl. transfers) {t_gpu * 1e3:8.2f} ms  numpy {t_np * 1e3:8.2f} ms  "
              f"bytes h->d {transfers['to_device_bytes']} d->h {transfers['to_host_bytes']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
