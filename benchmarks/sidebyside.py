"""s2s side by side with JAX (CPU), autograd, and gradients written by hand in NumPy and Numba.

Every implementation gets the same float64 inputs (fixed seed) in one run.
Each case first checks that all results agree with the hand-written NumPy
gradient (np.allclose, rtol 1e-8, atol 1e-12 x the largest reference entry),
then times them: best of 5 repeats (3 when one call takes over 0.3 s, 2 over
1 s) of N calls, N chosen so that one repeat lasts about 0.2 s, after a
warm-up call (so compile time is excluded). Ratios are against the
hand-written Numba gradient.

    1. grad of np.sum(np.sin(x) * x**2 + np.exp(-x*x)), 1e7 elements
    2. grad of a branchy scalar recurrence, 1e6 steps (JAX and autograd: 2e4 steps, scaled)
    3. per-example gradients of a logistic-regression loss, 4096 x 256 (autograd: 256 examples, scaled)
    4. grad of a 784-512-10 tanh MLP softmax cross-entropy, batch 256, w.r.t. all parameters
    5. first-call latency of jit(grad(f)) in a fresh process, cold and warm caches, against JAX

An s2s transform that raises is reported as "fails: <reason>" (full text at
the end); the exit status is 1 only when some implementation disagrees.

    pip install -e '.[bench]'
    python benchmarks/sidebyside.py [--quick] [--cases 1,2,3,4,5] [--seed 0] [--threads N] [--rounds R]

--quick makes every size 10x smaller (a smoke test, not a measurement).
--rounds R times every implementation R times in turn and reports the
median of the R best-ofs: on a shared host the load drifts over seconds.
--threads 1 gives steadier numbers on a small or shared machine: with the
default pools, NumPy's OpenBLAS, the separate OpenBLAS that Numba's `@`
calls (SciPy's) and XLA each spin up threads on every core, and matrix
products slow down several-fold when another process, or another pool,
holds a core.
"""
from __future__ import annotations

import os
os.environ.setdefault("S2S_JIT_WAIT", "1")   # (timings of machine code: jit compiles before it answers)

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import timeit
import types
from typing import Any, Callable


def _threads_from_argv(argv: list[str]) -> str | None:
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


# --threads must act before NumPy, Numba's BLAS and XLA start their thread pools.
THREADS = _threads_from_argv(sys.argv[1:]) if __name__ == "__main__" else None
if THREADS is not None and THREADS.isdigit() and int(THREADS) > 0:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = THREADS
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                               f"intra_op_parallelism_threads={THREADS}").strip()
    # XLA's CPU client sizes its thread pool from the cores it may run on and ignores the flags
    # above (measured: a jitted 256x784 @ 784x512 took 1.5 ms with them, 3.0 ms pinned to one
    # core), so pin the whole process (and its children) to N cores: every library gets N.
    if hasattr(os, "sched_setaffinity"):
        _cores = sorted(os.sched_getaffinity(0))[:int(THREADS)]
        os.sched_setaffinity(0, set(_cores))

import numpy as np  # noqa: E402

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
import s2s  # noqa: E402
import cases  # noqa: E402
from cases import numba_grad  # noqa: E402

RTOL = 1e-8
NOT_INSTALLED = "not installed (pip install -e '.[bench]')"


# --------------------------------------------------------------------------- helpers

def rebind_numpy(module) -> types.SimpleNamespace:
    """The functions of benchmarks/cases.py with `np` bound to `module` (jax.numpy, autograd.numpy):
    the same source, run by the other library. Calls between case functions go to the rebound ones."""
    glb = dict(vars(cases))
    glb["np"] = module
    out = {}
    for name, fn in vars(cases).items():
        if isinstance(fn, types.FunctionType) and fn.__module__ == cases.__name__:
            out[name] = glb[name] = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__)
    return types.SimpleNamespace(**out)


def load_jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    return jax, jnp


def load_autograd():
    import autograd
    import autograd.numpy as anp
    return autograd, anp


def to_numpy(out):
    if isinstance(out, (tuple, list)):
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


def disagreement(got, ref) -> str | None:
    """None when `got` matches `ref` (arrays or tuples of arrays), else what differs."""
    got, ref = to_numpy(got), to_numpy(ref)
    if isinstance(ref, tuple):
        if not isinstance(got, tuple) or len(got) != len(ref):
            return f"expected a tuple of {len(ref)} arrays, got {type(got).__name__}"
        for k, (g, r) in enumerate(zip(got, ref)):
            d = disagreement(g, r)
            if d:
                return f"output {k}: {d}"
        return None
    if isinstance(got, tuple) or got.shape != ref.shape:
        return f"shape {np.shape(got)} != {ref.shape}"
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    if np.allclose(got, ref, rtol=RTOL, atol=1e-12 * scale):
        return None
    err = np.abs(got - ref) / (np.abs(ref) + 1e-12 * scale + 1e-300)
    return f"max relative error {float(np.nanmax(err)):.3g} (rtol {RTOL:g})"


def plan(call: Callable[[], Any], first_call_s: float) -> tuple[int, int]:
    """(calls per repeat, repeats): N calls so that a repeat lasts about 0.2 s; 5 repeats,
    3 when a call takes over 0.3 s, 2 over 1 s (then the agreement call was the warm-up)."""
    if first_call_s > 1.0:
        return 1, 2
    t = timeit.timeit(call, number=1)   # warm-up (the agreement call compiled) and calibration
    number = max(1, min(1000, int(0.2 / max(t, 1e-9))))
    return number, (2 if t > 1.0 else 3 if t > 0.3 else 5)


def best_of(calls: list[tuple[Callable[[], Any], int, int]]) -> list[float]:
    """Seconds per call for each (call, number, repeats): the best repeat. Each implementation's
    repeats run back to back: interleaving them with the others' (tried) made the generated-NumPy
    rows 2x slower on 1e7 elements, an artifact of the others' large allocations in between."""
    return [min(timeit.repeat(call, number=number, repeat=rep)) / number for call, number, rep in calls]


def reason(exc: BaseException) -> str:
    """One line saying why an s2s call failed."""
    msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    lines = [ln.strip() for ln in str(msg).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


@dataclasses.dataclass
class Impl:
    name: str                              # row label
    make: Callable[[], Callable[[], Any]]  # builds a zero-argument call (may raise ImportError)
    ref: Any                               # the hand-written NumPy gradient for the same inputs
    key: str = ""                          # name for ratio lines
    scale: float = 1.0                     # time multiplier for rows measured on a subset
    is_s2s: bool = False
    time: float | None = None              # seconds per call (scaled)
    raw: float | None = None               # seconds per call as measured
    note: str = ""
    call: Callable[[], Any] | None = None  # the timed zero-argument call (after the agreement check)


ROUNDS = 1                                 # --rounds
PAIRED_SECONDS = 4.0                       # per paired ratio (--quick: 0.5)
FAILURES: list[tuple[str, str]] = []       # (case: implementation, full error text) of calls that raised
DISAGREEMENTS: list[str] = []


def run_case(title: str, impls: list[Impl], base_key: str = "numba") -> dict[str, Impl]:
    print(f"\n== {title}")
    runnable = []
    for im in impls:                       # 1. agreement, every implementation, before any timing
        try:
            call = im.make()
            t0 = timeit.default_timer()
            out = call()
            first = timeit.default_timer() - t0
        except Exception as exc:           # noqa: BLE001  (an s2s transform refusing, Numba failing...)
            if isinstance(exc, ImportError) and not im.is_s2s:
                im.note = NOT_INSTALLED
                continue
            im.note = f"fails: {reason(exc)}"
            FAILURES.append((f"{title.split(':')[0]}: {im.name}", f"{type(exc).__name__}: {exc}"))
            continue
        d = disagreement(out, im.ref)
        del out
        if d:
            im.note = f"DISAGREES: {d}"
            DISAGREEMENTS.append(f"{title.split(':')[0]}: {im.name}: {d}")
            continue
        runnable.append((im, call, first))
        im.call = call
    ok = all(not im.note.startswith("DISAGREES") for im in impls)
    print(f"agreement check {'passed' if ok else 'FAILED'}: {len(runnable)} implementations agree with the "
          f"hand-written NumPy gradient (rtol {RTOL:g})"
          + "".join(f"; {im.name}: {im.note}" for im in impls if im.note.startswith("DISAGREES")))
    plans = [(call, *plan(call, first)) for im, call, first in runnable]   # 2. timing
    # --rounds R: every implementation's best-of, R times in turn; the median of the R bests
    # (on a shared host the load drifts over seconds: one round can favour whoever ran in a lull)
    per_round = [best_of(plans) for _ in range(ROUNDS)]
    if ROUNDS > 1:
        print(f"timing: median over {ROUNDS} rounds of each implementation's best-of (--rounds)")
    for k, (im, _, _) in enumerate(runnable):
        t = statistics.median(r[k] for r in per_round)
        im.raw = t
        im.time = t * im.scale
    by_key = {im.key: im for im in impls if im.key}
    base = by_key.get(base_key)
    width = max(len(im.name) for im in impls) + 2
    print(f"{'implementation':{width}s} {'time (ms)':>12s} {'vs Numba':>10s}")
    for im in impls:
        if im.time is None:
            print(f"{im.name:{width}s} {im.note}")
            continue
        rel = f"{im.time / base.time:9.2f}x" if base is not None and base.time else "        -"
        print(f"{im.name:{width}s} {im.time * 1e3:12.3f} {rel:>10s}")
    return by_key


def ratio(by_key: dict[str, Impl], num: str, den: str) -> str:
    a, b = by_key.get(num), by_key.get(den)
    if a is None or b is None or a.time is None or b.time is None:
        missing = [f"{im.name} {(im.note or 'not run').split(':')[0]}"
                   for im in (a, b) if im is not None and im.time is None]
        return "n/a (" + "; ".join(missing) + ", see the table)"
    return f"{a.time / b.time:.2f}"


def paired_ratio(by_key: dict[str, Impl], num: str, den: str) -> str:
    """The two calls alternated (num den, den num, num den, ...) for about PAIRED_SECONDS: the median of the
    per-pair time ratios. Load on a shared host drifts over seconds; the best-ofs above are
    taken seconds apart, a pair a few milliseconds apart, so drift cancels in each pair."""
    a, b = by_key.get(num), by_key.get(den)
    if a is None or b is None or a.call is None or b.call is None or a.raw is None or b.raw is None:
        return "n/a"
    pairs = max(11, min(2000, int(PAIRED_SECONDS / (a.raw + b.raw))))
    clock = timeit.default_timer
    for _ in range(max(2, pairs // 4)):   # warm-up: the rows timed before left their own memory state
        a.call()
        b.call()
    ratios = []
    for k in range(pairs):
        # the order alternates: the second call of a pair runs in the memory state the first left
        first, second = (a.call, b.call) if k % 2 == 0 else (b.call, a.call)
        t0 = clock()
        first()
        t1 = clock()
        second()
        t2 = clock()
        ratios.append((t1 - t0) / (t2 - t1) if k % 2 == 0 else (t2 - t1) / (t1 - t0))
    ratios.sort()
    q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]
    return f"{statistics.median(ratios):.2f} (quartiles {q(0.25):.2f}-{q(0.75):.2f}, {pairs} pairs)"


def s2s_impl(name, key, make, ref, **kw) -> Impl:
    return Impl(name, make, ref, key=key, is_s2s=True, **kw)


# --------------------------------------------------------------------------- cases

def case1(rng, quick):
    n = 10**6 if quick else 10**7
    x = rng.normal(size=n)
    ref = cases.elementwise_sum_grad_numpy(x)
    f = cases.elementwise_sum

    def jax_call():
        jax, jnp = load_jax()
        jf = jax.jit(jax.grad(rebind_numpy(jnp).elementwise_sum))
        jx = jnp.asarray(x)
        return lambda: jf(jx).block_until_ready()

    def autograd_call():
        autograd, anp = load_autograd()
        g = autograd.grad(rebind_numpy(anp).elementwise_sum)
        return lambda: g(x)

    by = run_case(f"case 1: grad of np.sum(np.sin(x) * x**2 + np.exp(-x*x)), {n:.0e} elements, float64", [
        Impl("hand-written Numba gradient (njit loop)", lambda: (lambda g=numba_grad("elementwise_sum"): g(x)),
             ref, key="numba"),
        Impl("hand-written NumPy gradient", lambda: (lambda: cases.elementwise_sum_grad_numpy(x)), ref, key="numpy"),
        s2s_impl("s2s jit(grad(f))", "s2s_jit", lambda: (lambda g=s2s.jit(s2s.grad(f)): g(x)), ref),
        s2s_impl("s2s grad(f) (generated NumPy)", "s2s", lambda: (lambda g=s2s.grad(f): g(x)), ref),
        Impl("JAX jit(grad(f)) (CPU)", jax_call, ref, key="jax"),
        Impl("autograd grad(f)", autograd_call, ref, key="autograd"),
    ])
    print(f"case 1 ratio: s2s jit(grad) / hand-written Numba = {ratio(by, 's2s_jit', 'numba')}; "
          f"s2s jit(grad) / JAX = {ratio(by, 's2s_jit', 'jax')}; "
          f"s2s grad / hand-written NumPy = {ratio(by, 's2s', 'numpy')}")
    print(f"case 1 paired: s2s jit(grad) / JAX = {paired_ratio(by, 's2s_jit', 'jax')}")


def case2(rng, quick):
    n = 10**5 if quick else 10**6
    m = 2 * 10**3 if quick else 2 * 10**4
    x = rng.normal(size=n)
    xs = x[:m].copy()
    ref, ref_s = cases.branchy_recurrence_grad_numpy(x), cases.branchy_recurrence_grad_numpy(xs)
    f = cases.branchy_recurrence
    k = n / m

    def jax_fori(jax, jnp):
        from jax import lax

        def branchy_recurrence_jax(x):
            def body(i, s):
                xi = x[i]
                return jnp.where(xi > 0, s * 0.999 + jnp.sin(xi) * xi, s * 0.998 - xi**2)
            return lax.fori_loop(0, x.shape[0], body, 0.0)
        return jax.jit(jax.grad(branchy_recurrence_jax))

    def jax_call(arr):
        def make():
            jax, jnp = load_jax()
            jf = jax_fori(jax, jnp)
            ja = jnp.asarray(arr)
            return lambda: jf(ja).block_until_ready()
        return make

    def autograd_call():
        autograd, anp = load_autograd()
        g = autograd.grad(rebind_numpy(anp).branchy_recurrence)
        return lambda: g(xs)

    sm = f"{m:.0e}-step version, time x{k:g}"
    by = run_case(f"case 2: grad of a branchy scalar recurrence, {n:.0e} steps, float64 "
                  f"(rows marked '{m:.0e}-step' ran on the first {m} elements; their time is scaled x{k:g}, "
                  f"i.e. time per element x {n:.0e})", [
        Impl("hand-written Numba gradient (njit reverse loop)",
             lambda: (lambda g=numba_grad("branchy_recurrence"): g(x)), ref, key="numba"),
        Impl("hand-written NumPy gradient (reversed cumprod)",
             lambda: (lambda: cases.branchy_recurrence_grad_numpy(x)), ref, key="numpy"),
        s2s_impl("s2s jit(grad(f))", "s2s_jit", lambda: (lambda g=s2s.jit(s2s.grad(f)): g(x)), ref),
        s2s_impl("s2s grad(f) (generated Python loop)", "s2s", lambda: (lambda g=s2s.grad(f): g(x)), ref),
        Impl(f"JAX jit(grad(fori_loop + jnp.where)) (CPU), {sm}", jax_call(xs), ref_s, key="jax_small", scale=k),
        Impl("JAX jit(grad(fori_loop + jnp.where)) (CPU), full size", jax_call(x), ref, key="jax"),
        Impl(f"autograd grad(f), {sm}", autograd_call, ref_s, key="autograd_small", scale=k),
        s2s_impl(f"s2s jit(grad(f)), {sm}", "s2s_jit_small",
                 lambda: (lambda g=s2s.jit(s2s.grad(f)): g(xs)), ref_s, scale=k),
        s2s_impl(f"s2s grad(f), {sm}", "s2s_small", lambda: (lambda g=s2s.grad(f): g(xs)), ref_s, scale=k),
        Impl(f"hand-written Numba gradient, {sm}",
             lambda: (lambda g=numba_grad("branchy_recurrence"): g(xs)), ref_s, key="numba_small", scale=k),
    ])
    print(f"case 2 ratio: s2s jit(grad) / hand-written Numba = {ratio(by, 's2s_jit', 'numba')}; "
          f"s2s jit(grad) / JAX (full size) = {ratio(by, 's2s_jit', 'jax')}")
    # The adjoint of s shrinks by 0.998-0.999 per step and is subnormal (< 2.2e-308) for the
    # last ~25k of the 1e6 backward steps, then 0: subnormal arithmetic costs every CPU-side
    # implementation most of its full-size time (XLA flushes subnormals to zero), so the
    # 2e4-step version is the one that measures the loop itself.
    print(f"case 2 ratio on the {m:.0e}-step version (no subnormals): s2s jit(grad) / hand-written Numba = "
          f"{ratio(by, 's2s_jit_small', 'numba_small')}; s2s jit(grad) / JAX = {ratio(by, 's2s_jit_small', 'jax_small')}")
    r = ratio(by, "autograd_small", "s2s_jit_small")
    r2 = ratio(by, "autograd_small", "s2s_small")
    faster = f" (s2s is {r}x faster; target >= 1000)" if not r.startswith("n/a") else " (target >= 1000)"
    print(f"case 2 s2s vs autograd on the {m:.0e} version: autograd / s2s jit(grad) = {r}{faster}; "
          f"autograd / s2s grad (no jit) = {r2}")


def case3(rng, quick):
    n, d = (410, 256) if quick else (4096, 256)
    m = 26 if quick else 256
    w = rng.normal(size=d) / np.sqrt(d)
    X = rng.normal(size=(n, d))
    y = np.sign(rng.normal(size=n))
    ref = cases.per_example_grads_numpy(w, X, y)
    loss = cases.logistic_loss
    k = n / m

    def jax_call():
        jax, jnp = load_jax()
        jf = jax.jit(jax.vmap(jax.grad(rebind_numpy(jnp).logistic_loss), in_axes=(None, 0, 0)))
        jw, jX, jy = jnp.asarray(w), jnp.asarray(X), jnp.asarray(y)
        return lambda: jf(jw, jX, jy).block_until_ready()

    def autograd_call():
        autograd, anp = load_autograd()
        g = autograd.grad(rebind_numpy(anp).logistic_loss)
        return lambda: np.stack([g(w, X[i], y[i]) for i in range(m)])

    by = run_case(f"case 3: per-example logistic-regression gradients, {n} x {d}, float64", [
        Impl("hand-written Numba per-example loop (njit)",
             lambda: (lambda g=numba_grad("per_example"): g(w, X, y)), ref, key="numba"),
        Impl("hand-written NumPy (-y / (1 + np.exp(y * (X @ w))))[:, None] * X",
             lambda: (lambda: cases.per_example_grads_numpy(w, X, y)), ref, key="numpy"),
        s2s_impl("s2s jit(vmap(grad(loss), in_axes=(None, 0, 0)))", "s2s_jit",
                 lambda: (lambda g=s2s.jit(s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0))): g(w, X, y)), ref),
        s2s_impl("s2s vmap(grad(loss), in_axes=(None, 0, 0)) (generated NumPy)", "s2s",
                 lambda: (lambda g=s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0)): g(w, X, y)), ref),
        Impl("JAX jit(vmap(grad(loss))) (CPU)", jax_call, ref, key="jax"),
        Impl(f"autograd grad(loss), Python loop over {m} examples, time x{k:g}", autograd_call, ref[:m],
             key="autograd", scale=k),
    ])
    print(f"case 3 ratio: s2s jit(vmap(grad)) / hand-written Numba = {ratio(by, 's2s_jit', 'numba')}; "
          f"s2s jit(vmap(grad)) / JAX = {ratio(by, 's2s_jit', 'jax')}; "
          f"s2s vmap(grad) / hand-written Numba = {ratio(by, 's2s', 'numba')}; "
          f"s2s vmap(grad) / hand-written NumPy = {ratio(by, 's2s', 'numpy')}; "
          f"s2s vmap(grad) / JAX = {ratio(by, 's2s', 'jax')}")
    print(f"case 3 paired: s2s jit(vmap(grad)) / JAX = {paired_ratio(by, 's2s_jit', 'jax')}")


def case4(rng, quick):
    b, i, h, o = (26 if quick else 256), 784, 512, 10
    params = (rng.normal(size=(i, h)) / np.sqrt(i), 0.1 * rng.normal(size=h),
              rng.normal(size=(h, o)) / np.sqrt(h), 0.1 * rng.normal(size=o))
    X = rng.normal(size=(b, i))
    Y = np.eye(o)[rng.integers(0, o, size=b)]
    ref = cases.mlp_loss_grad_numpy(params, X, Y)
    loss = cases.mlp_loss

    def jax_call():
        jax, jnp = load_jax()
        jf = jax.jit(jax.grad(rebind_numpy(jnp).mlp_loss))
        jp = tuple(jnp.asarray(p) for p in params)
        jX, jY = jnp.asarray(X), jnp.asarray(Y)
        return lambda: jax.block_until_ready(jf(jp, jX, jY))

    def autograd_call():
        autograd, anp = load_autograd()
        g = autograd.grad(rebind_numpy(anp).mlp_loss)
        return lambda: g(params, X, Y)

    by = run_case(f"case 4: grad of a {i}-{h}-{o} tanh MLP softmax cross-entropy w.r.t. (W1, b1, W2, b2), "
                  f"batch {b}, float64", [
        Impl("hand-written Numba gradient (njit)",
             lambda: (lambda g=numba_grad("mlp_loss"): g(*params, X, Y)), ref, key="numba"),
        Impl("hand-written NumPy gradient", lambda: (lambda: cases.mlp_loss_grad_numpy(params, X, Y)), ref,
             key="numpy"),
        s2s_impl("s2s jit(grad(loss)), params as a tuple", "s2s_jit",
                 lambda: (lambda g=s2s.jit(s2s.grad(loss)): g(params, X, Y)), ref),
        s2s_impl("s2s grad(loss), params as a tuple (generated NumPy)", "s2s",
                 lambda: (lambda g=s2s.grad(loss): g(params, X, Y)), ref),
        s2s_impl("s2s jit(grad(loss_flat, argnums=(0, 1, 2, 3))), 4 array args", "s2s_jit_flat",
                 lambda: (lambda g=s2s.jit(s2s.grad(cases.mlp_loss_flat, argnums=(0, 1, 2, 3))): g(*params, X, Y)),
                 ref),
        Impl("JAX jit(grad(loss)) (CPU)", jax_call, ref, key="jax"),
        Impl("autograd grad(loss)", autograd_call, ref, key="autograd"),
    ])
    print(f"case 4 ratio: s2s jit(grad) / hand-written Numba = {ratio(by, 's2s_jit', 'numba')}; "
          f"s2s grad / hand-written Numba = {ratio(by, 's2s', 'numba')}; "
          f"s2s jit(grad) of the 4-array version / hand-written Numba = {ratio(by, 's2s_jit_flat', 'numba')}; "
          f"s2s grad / JAX = {ratio(by, 's2s', 'jax')}; s2s jit(grad) / JAX = {ratio(by, 's2s_jit', 'jax')}; "
          f"s2s jit(grad) of the 4-array version / JAX = {ratio(by, 's2s_jit_flat', 'jax')}")
    flat = paired_ratio(by, 's2s_jit_flat', 'jax')    # (measured first, as in docs/performance.md's 14:23 run)
    print(f"case 4 paired: s2s jit(grad) / JAX = {paired_ratio(by, 's2s_jit', 'jax')}; "
          f"4-array version / JAX = {flat}")


CHILD = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
sys.path.insert(0, {bench!r})
import cases
x = np.linspace(-2.0, 2.0, 1000)
g = {build}
out = np.asarray({call})
t2 = time.perf_counter()
ref = cases.elementwise_sum_grad_numpy(x)
ok = bool(out.shape == ref.shape and np.allclose(out, ref, rtol=1e-8, atol=1e-12))
err = float(np.max(np.abs(out - ref))) if out.shape == ref.shape else float("nan")
print(json.dumps({{"import": t1 - t0, "first_call": t2 - t1, "agree": ok, "max_abs_err": err,
                  "shape": list(out.shape)}}))
"""

CHILDREN = {
    "s2s_jit": ("import s2s", "s2s.jit(s2s.grad(cases.elementwise_sum))", "g(x)"),
    "s2s": ("import s2s", "s2s.grad(cases.elementwise_sum)", "g(x)"),
    "jax": ("import jax\njax.config.update('jax_enable_x64', True)\nimport jax.numpy as jnp",
            "jax.jit(jax.grad(cases.elementwise_sum.__class__(cases.elementwise_sum.__code__, "
            "dict(vars(cases), np=jnp))))", "g(jnp.asarray(x)).block_until_ready()"),
}


def child(kind: str, env_dirs: tuple[str, str] | None) -> dict:
    imports, build, call = CHILDREN[kind]
    code = CHILD.format(imports=imports, bench=BENCH_DIR, build=build, call=call)
    env = dict(os.environ)
    if env_dirs is not None:
        env["S2S_CACHE_DIR"], env["NUMBA_CACHE_DIR"] = env_dirs
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        tail = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        raise RuntimeError(tail[-1] if tail else f"exit status {p.returncode}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def case5(rng, quick):
    repeats = 1 if quick else 3
    print("\n== case 5: first-call latency in a fresh process: import + build grad(f) for case 1's function + one "
          "call on 1000 elements (timed inside the child; best of "
          f"{repeats}; cold = fresh empty S2S_CACHE_DIR and NUMBA_CACHE_DIR, warm = a second process with the same "
          "cache dirs)")
    rows = {"s2s_jit_cold": [], "s2s_jit_warm": [], "s2s_cold": [], "jax": []}
    errors: dict[str, str] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="s2s-bench-") as tmp:
            dirs = (os.path.join(tmp, "s2s"), os.path.join(tmp, "numba"))
            for key, kind in (("s2s_jit_cold", "s2s_jit"), ("s2s_jit_warm", "s2s_jit")):
                try:
                    rows[key].append(child(kind, dirs))
                except Exception as exc:   # noqa: BLE001
                    errors[key] = f"fails: {reason(exc)}"
        with tempfile.TemporaryDirectory(prefix="s2s-bench-") as tmp:
            try:
                rows["s2s_cold"].append(child("s2s", (os.path.join(tmp, "s2s"), os.path.join(tmp, "numba"))))
            except Exception as exc:       # noqa: BLE001
                errors["s2s_cold"] = f"fails: {reason(exc)}"
        try:
            import jax  # noqa: F401
        except ImportError:
            errors["jax"] = NOT_INSTALLED
        else:
            try:
                rows["jax"].append(child("jax", None))
            except Exception as exc:       # noqa: BLE001
                errors["jax"] = f"fails: {reason(exc)}"
    for key, msg in errors.items():
        if key.startswith("s2s"):
            FAILURES.append((f"case 5: {key}", msg))
    bad = [k for k, rs in rows.items() if any(not r["agree"] for r in rs)]
    for k in bad:
        for n, r in enumerate(rows[k]):
            if not r["agree"]:
                DISAGREEMENTS.append(f"case 5: {k}, repeat {n + 1} of {len(rows[k])}: the child's gradient differs "
                                     f"from the hand-written NumPy one (shape {tuple(r['shape'])}, max abs error "
                                     f"{r['max_abs_err']:.3g})")
    print(f"agreement check {'passed' if not bad else 'FAILED'}: every child's gradient agrees with the "
          f"hand-written NumPy gradient (rtol {RTOL:g})" + (f"; differ: {bad}" if bad else ""))
    names = {"s2s_jit_cold": "s2s jit(grad(f)), cold caches", "s2s_jit_warm": "s2s jit(grad(f)), warm caches",
             "s2s_cold": "s2s grad(f) (no jit), cold cache", "jax": "JAX jit(grad(f)) (CPU)"}
    best_of = {}
    for k, rs in rows.items():
        if rs and k not in errors:
            best_of[k] = min(rs, key=lambda r: r["import"] + r["first_call"])
    jt = best_of.get("jax")
    print(f"{'implementation':36s} {'import (ms)':>12s} {'first call (ms)':>16s} {'total (ms)':>11s} {'vs JAX':>8s}")
    for k, label in names.items():
        r = best_of.get(k)
        if r is None:
            print(f"{label:36s} {errors.get(k, 'not run')}")
            continue
        tot = r["import"] + r["first_call"]
        rel = f"{tot / (jt['import'] + jt['first_call']):7.2f}x" if jt else "       -"
        print(f"{label:36s} {r['import'] * 1e3:12.1f} {r['first_call'] * 1e3:16.1f} {tot * 1e3:11.1f} {rel:>8s}")

    def tot(k):
        r = best_of.get(k)
        return None if r is None else r["import"] + r["first_call"]
    if jt:
        parts = [f"{lab} / JAX = {tot(k) / tot('jax'):.2f}" if tot(k) else f"{lab}: {errors.get(k, 'not run')}"
                 for k, lab in (("s2s_jit_cold", "s2s jit cold"), ("s2s_jit_warm", "s2s jit warm"))]
        print("case 5 ratio (import + first call): " + "; ".join(parts))
    else:
        print(f"case 5 ratio: n/a (JAX {errors.get('jax', 'not run')})")


# --------------------------------------------------------------------------- main

def versions() -> str:
    out = [f"numpy {np.__version__}"]
    try:
        import numba
        out.append(f"numba {numba.__version__}")
    except ImportError:
        out.append("numba missing")
    for mod in ("jax", "jaxlib", "autograd"):
        try:
            from importlib.metadata import version
            out.append(f"{mod} {version(mod)}")
        except Exception:                  # noqa: BLE001
            out.append(f"{mod} not installed")
    return ", ".join(out)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def loadavg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg()) + " (1, 5, 15 min)"
    except OSError:
        return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="every size 10x smaller (smoke test)")
    ap.add_argument("--cases", default="1,2,3,4,5", help="comma-separated case numbers (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None,
                    help="limit BLAS (NumPy's and the one Numba calls), OpenMP and XLA to N threads each; "
                         "default: the libraries' own defaults")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every implementation R times in turn and report the median of the R "
                         "best-ofs (steadier ratios on a shared machine)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds takes a positive number")
    global ROUNDS, PAIRED_SECONDS
    ROUNDS = args.rounds
    PAIRED_SECONDS = 0.5 if args.quick else PAIRED_SECONDS
    try:
        chosen = [int(c) for c in args.cases.split(",") if c.strip()]
    except ValueError:
        ap.error(f"--cases takes comma-separated numbers from 1 to 5, got {args.cases!r}")
    if not chosen or any(c not in range(1, 6) for c in chosen):
        ap.error(f"--cases takes comma-separated numbers from 1 to 5, got {args.cases!r}")
    print(f"s2s side-by-side benchmark{' (--quick: sizes 10x smaller, not a measurement)' if args.quick else ''}; "
          f"{datetime.datetime.now().isoformat(timespec='seconds')}")
    print(f"machine: {os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.machine()}; "
          f"Python {platform.python_version()}; s2s {s2s.__version__} "
          f"({os.path.dirname(os.path.dirname(os.path.abspath(s2s.__file__)))}); {versions()}")
    if args.threads is not None and args.threads < 1:
        ap.error("--threads takes a positive number")
    print("threads: " + (f"BLAS, OpenMP and XLA limited to {args.threads}, process pinned to {args.threads} core(s) (--threads)" if args.threads else
                         "library defaults (NumPy's OpenBLAS, the OpenBLAS Numba calls, XLA: one pool each)"))
    print(f"load average at start: {loadavg()} (other processes on the machine skew the timings)")
    funcs = {1: case1, 2: case2, 3: case3, 4: case4, 5: case5}
    t0 = timeit.default_timer()
    for c in chosen:
        funcs[c](np.random.default_rng(args.seed + c), args.quick)
    print(f"\ntotal benchmark time {timeit.default_timer() - t0:.0f} s; load average at the end: {loadavg()}")
    if FAILURES:
        print("\ncalls that failed (full text):")
        for where, text in FAILURES:
            print(f"- {where}:\n    " + "\n    ".join(text.splitlines()))
    if DISAGREEMENTS:
        print("\nAGREEMENT CHECK FAILED:\n" + "\n".join(f"- {d}" for d in DISAGREEMENTS))
        return 1
    print("all agreement checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
