"""One short check of the CUDA target on a real GPU: results against NumPy, and timings.

    python benchmarks/gpu_check.py            # needs a CUDA GPU and numba-cuda

Prints, per case, the max abs difference from NumPy, the kernel time (best of
5, synchronized, excluding the first call that compiles) and the time of the
same work in NumPy on the host, then exits non-zero if any result disagrees.
"""
from __future__ import annotations

import os
os.environ.setdefault("S2S_JIT_WAIT", "1")   # (timings of machine code: jit compiles before it answers)

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
    bad += pmap_check(x)
    return 1 if bad else 0


def _gpu_shard(x):
    """pmap's per-GPU code: a cuda kernel on this GPU's shard, then sums over the GPUs."""
    import s2s
    import cuda_cases as C
    y = s2s.jit(C.elementwise, target="cuda")(x)
    return s2s.psum(y, "gpus"), s2s.all_gather(np.sum(y), "gpus")


def pmap_check(x) -> int:
    """pmap on the cuda backend: one device per GPU (here, every GPU numba.cuda sees), each running
    its kernel on its shard; psum and all_gather staged through the host."""
    import s2s
    import cuda_cases as C
    n = s2s.device_count("cuda")
    shards = x[: len(x) // n * n].reshape(n, -1)
    f = s2s.pmap(_gpu_shard, axis_name="gpus", backend="cuda")
    total, gathered = f(shards)
    want = C.elementwise(shards)
    err = max(float(np.max(np.abs(total[0] - want.sum(axis=0)))),
              float(np.max(np.abs(gathered[0] - want.sum(axis=1)))))
    ok = err <= 1e-6 * max(1.0, float(np.max(np.abs(want.sum(axis=0)))))
    t = best(lambda: f(shards))
    print(f"{'pmap over ' + str(n) + ' GPU(s): kernel + psum':45s} max|diff| {err:.2e} {'ok' if ok else 'MISMATCH'}  "
          f"time {t * 1e3:8.2f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
