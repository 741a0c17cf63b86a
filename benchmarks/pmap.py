"""pmap on this machine's cores: a compute-bound per-device workload (the gradient of an MLP's loss
on a large batch, averaged over the devices with pmean) on 1 and 2 cpu devices, JAX's pmap of the
same maths with 2 host devices side by side, and the mpi backend's allreduce (psum) per MiB against
mpi4py's own Allreduce on the same buffers (2 ranks under mpiexec, launched from here).

    python benchmarks/pmap.py

BLAS runs one thread per device (OPENBLAS_NUM_THREADS=1, as each XLA host device runs its own
work): the speed-up measured is the devices', not BLAS's own threads.
"""
from __future__ import annotations

import os
os.environ.setdefault("S2S_JIT_WAIT", "1")   # (timings of machine code: jit compiles before it answers)

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
os.environ["S2S_CPU_DEVICES"] = "2"

import platform  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import s2s  # noqa: E402


def loss(w1, w2, x, y):
    hidden = np.tanh(x @ w1)
    return np.mean((hidden @ w2 - y) ** 2)


def device_step(w1, w2, x, y):
    g1, g2 = s2s.grad(loss, argnums=(0, 1))(w1, w2, x, y)
    return s2s.pmean(g1, "devices"), s2s.pmean(g2, "devices")


def best(fn, repeat=7, number=3) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def problem(batch: int, features: int, hidden: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((features, hidden)) / np.sqrt(features)
    w2 = rng.standard_normal(hidden) / np.sqrt(hidden)
    x = rng.standard_normal((batch, features))
    y = rng.standard_normal(batch)
    return w1, w2, x, y


def s2s_times(w1, w2, x, y) -> dict:
    step = s2s.pmap(device_step, axis_name="devices", in_axes=(None, None, 0, 0))
    one = lambda: step(w1, w2, x[None], y[None])                           # noqa: E731
    two = lambda: step(w1, w2, x.reshape(2, -1, x.shape[1]), y.reshape(2, -1))  # noqa: E731
    g1, g2 = two()
    r1, r2 = s2s.grad(loss, argnums=(0, 1))(w1, w2, x, y)
    assert np.allclose(g1[0], r1, rtol=1e-10, atol=1e-12) and np.allclose(g2[1], r2, rtol=1e-10, atol=1e-12)
    plain = s2s.jit(s2s.grad(loss, argnums=(0, 1)))
    return {"jit(grad), no pmap": best(lambda: plain(w1, w2, x, y)), "pmap, 1 device": best(one),
            "pmap, 2 devices": best(two)}


def jax_times(w1, w2, x, y) -> dict | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def jloss(w1, w2, x, y):
        return jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)

    def jstep(w1, w2, x, y):
        g1, g2 = jax.grad(jloss, argnums=(0, 1))(w1, w2, x, y)
        return jax.lax.pmean(g1, "devices"), jax.lax.pmean(g2, "devices")

    step = jax.pmap(jstep, axis_name="devices", in_axes=(None, None, 0, 0))
    xs1, ys1 = jnp.asarray(x[None]), jnp.asarray(y[None])
    xs2, ys2 = jnp.asarray(x.reshape(2, -1, x.shape[1])), jnp.asarray(y.reshape(2, -1))
    jw1, jw2 = jnp.asarray(w1), jnp.asarray(w2)
    run = lambda xs, ys: jax.block_until_ready(step(jw1, jw2, xs, ys))    # noqa: E731
    g1, _ = run(xs2, ys2)
    assert np.allclose(np.asarray(g1[0]), s2s.grad(loss)(w1, w2, x, y), rtol=1e-8, atol=1e-10)
    return {"jax.pmap, 1 device": best(lambda: run(xs1, ys1)), "jax.pmap, 2 devices": best(lambda: run(xs2, ys2)),
            "version": jax.__version__, "devices": len(jax.devices())}


# ----- the mpi backend's allreduce, run by each rank under mpiexec ---------------------------------
def reduce_many(x, reps):
    for _ in range(reps):
        x = s2s.psum(x, "ranks") * 0.5
    return x


def mpi_allreduce(reps: int = 20) -> None:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    step = s2s.pmap(reduce_many, axis_name="ranks", backend="mpi", static_broadcasted_argnums=(1,))
    for mib in (1, 4, 16):
        x = np.full((1, mib * 2 ** 20 // 8), 1.0 + comm.Get_rank())
        step(x, 1)                                  # (compiled once)
        comm.Barrier()
        t0 = time.perf_counter()
        step(x, reps)
        ours = (time.perf_counter() - t0) / reps
        buf, out = x[0].copy(), np.empty_like(x[0])
        comm.Allreduce(buf, out)
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(reps):              # into one buffer, allocated before
            comm.Allreduce(buf, out)
            buf = out * 0.5
        into_buffer = (time.perf_counter() - t0) / reps
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(reps):              # a new result each time, as psum returns
            out = np.empty_like(buf)
            comm.Allreduce(buf, out)
            buf = out * 0.5
        new_result = (time.perf_counter() - t0) / reps
        if comm.Get_rank() == 0:
            print(f"MPI {mib} {ours * 1e3 / mib:.3f} {into_buffer * 1e3 / mib:.3f} {new_result * 1e3 / mib:.3f}",
                  flush=True)


def mpi_times() -> list | None:
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    mpiexec = mpiexec if os.path.exists(mpiexec) else shutil.which("mpiexec")
    if mpiexec is None:
        return None
    env = dict(os.environ)
    env.pop("S2S_CPU_DEVICES", None)
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, os.path.abspath(__file__), "--mpi-allreduce"],
                          capture_output=True, text=True, timeout=600, env=env)
    rows = [ln.split()[1:] for ln in proc.stdout.splitlines() if ln.startswith("MPI ")]
    if proc.returncode != 0 or not rows:
        print(proc.stdout + proc.stderr, file=sys.stderr)
        return None
    return [(int(m), float(a), float(b), float(c)) for m, a, b, c in rows]


def main(batch: int = 8192, features: int = 256, hidden: int = 256) -> None:
    w1, w2, x, y = problem(batch, features, hidden)
    print(f"# pmap: grad of a {features}-{hidden}-1 tanh MLP's mean squared error on {batch} examples, "
          f"averaged over the devices (pmean)")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    ours = s2s_times(w1, w2, x, y)
    theirs = jax_times(w1, w2, x, y)
    print("| workload | time (ms) | speed-up over 1 device |")
    print("|---|---|---|")
    print(f"| s2s jit(grad), whole batch, no pmap | {ours['jit(grad), no pmap'] * 1e3:.1f} | |")
    print(f"| s2s pmap, 1 device | {ours['pmap, 1 device'] * 1e3:.1f} | 1.00 |")
    print(f"| s2s pmap, 2 devices | {ours['pmap, 2 devices'] * 1e3:.1f} | "
          f"{ours['pmap, 1 device'] / ours['pmap, 2 devices']:.2f} |")
    if theirs is not None:
        print(f"| JAX {theirs['version']} pmap, 1 device | {theirs['jax.pmap, 1 device'] * 1e3:.1f} | 1.00 |")
        print(f"| JAX {theirs['version']} pmap, 2 devices | {theirs['jax.pmap, 2 devices'] * 1e3:.1f} | "
              f"{theirs['jax.pmap, 1 device'] / theirs['jax.pmap, 2 devices']:.2f} |")
        print(f"\ns2s 2 devices / JAX 2 devices: {ours['pmap, 2 devices'] / theirs['jax.pmap, 2 devices']:.2f}x the time")
    else:
        print("\n(JAX not installed: pip install -e '.[bench]')")
    rows = mpi_times()
    if rows:
        print("\n| allreduce, 2 MPI ranks | s2s psum in compiled code | mpi4py Allreduce into a preallocated "
              "buffer | ratio | mpi4py Allreduce into a new array | ratio |")
        print("|---|---|---|---|---|---|")
        for mib, a, b, c in rows:
            print(f"| {mib} MiB | {a:.3f} ms/MiB | {b:.3f} ms/MiB | {a / b:.2f} | {c:.3f} ms/MiB | {a / c:.2f} |")
    else:
        print("\n(mpiexec / mpi4py not found: pip install -e '.[mpi]')")


if __name__ == "__main__":
    if "--mpi-allreduce" in sys.argv:
        mpi_allreduce()
    else:
        main()
