"""Time against threads: each implementation in a process of its own, at 1, 2, 4, ... threads.

    python benchmarks/threads.py [--threads 1,2,4,8,13] [--cases elementwise_1e7,...] [--json OUT]
    python benchmarks/threads.py --plot OUT.json docs/threads.png

Thread pools (OpenBLAS, Numba's workqueue, XLA's Eigen pool) fight when two implementations run
back to back in one process on many cores, so each (case, implementation, thread count) here is a
fresh Python process pinned to that many cores (its CPU affinity: XLA's pool ignores the
variables) with every pool limited to that count before NumPy, Numba or JAX is imported:
OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS, NUMBA_NUM_THREADS and XLA's Eigen
flag. The child checks its answer against the hand-written NumPy gradient, then reports the
best of 5 repeats of N calls (N chosen so a repeat takes ~0.2 s), after warm-up calls (compile
time excluded; s2s's disk cache is shared between the children, so only the first compiles).

Cases (benchmarks/cases.py, float64):
- elementwise_1e7 / 1e5 / 1e3: grad of np.sum(np.sin(x) * x**2 + np.exp(-x*x));
- mlp_tuple / mlp_arrays: grad of a 784-512-10 tanh MLP softmax cross-entropy (batch 256) with the
  parameters as one tuple argument / as four array arguments;
- exp_1e6, tanh_1e6, log_1e6, sin_1e6, cos_1e6: `0.5 * np.<op>(x) + x` on 1e6 elements (jit of the
  function itself: one transcendental per element in a fused loop).
Implementations: s2s jit (default target), s2s jit(target="parallel"), JAX jit (CPU), and the
hand-written NumPy and Numba gradients (Numba: njit(parallel=True, fastmath=True) for the
elementwise case).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))

SETUP = {
    "elementwise": "x = np.linspace(-2.0, 2.0, {n}); args = (x,); ref = cases.elementwise_sum_grad_numpy(x)",
    "mlp": ("rng = np.random.default_rng(0)\n"
            "b, i, h, o = 256, 784, 512, 10\n"
            "params = (rng.normal(size=(i, h)) / np.sqrt(i), 0.1 * rng.normal(size=h),\n"
            "          rng.normal(size=(h, o)) / np.sqrt(h), 0.1 * rng.normal(size=o))\n"
            "X = rng.normal(size=(b, i)); Y = np.eye(o)[rng.integers(0, o, size=b)]\n"
            "ref = cases.mlp_loss_grad_numpy(params, X, Y)"),
}
# one transcendental in a fused loop (time per element: the vector kernels against XLA's)
UNARY = ("exp", "tanh", "log", "sin", "cos")
SETUP["unary"] = ("x = np.linspace(0.1, 3.0, {n}); args = (x,)\n"
                  "def unary(x):\n    return 0.5 * np.{op}(x) + x\n"
                  "ref = unary(x)")
CASES = {
    "elementwise_1e7": ("elementwise", 10_000_000),
    "elementwise_1e5": ("elementwise", 100_000),
    "elementwise_1e3": ("elementwise", 1_000),
    "mlp_tuple": ("mlp", "tuple"),
    "mlp_arrays": ("mlp", "arrays"),
    **{f"{op}_1e6": ("unary", op) for op in UNARY},
}
# (imports, the function to time as an expression of the setup's names)
IMPLS = {
    "s2s jit": ("import s2s", {
        "elementwise": "lambda g=s2s.jit(s2s.grad(cases.elementwise_sum)): g(x)",
        "unary": "lambda g=s2s.jit(unary): g(x)",
        "tuple": "lambda g=s2s.jit(s2s.grad(cases.mlp_loss)): g(params, X, Y)",
        "arrays": "lambda g=s2s.jit(s2s.grad(cases.mlp_loss_flat, argnums=(0, 1, 2, 3))): g(*params, X, Y)"}),
    "s2s jit parallel": ("import s2s", {
        "elementwise": "lambda g=s2s.jit(s2s.grad(cases.elementwise_sum), target='parallel'): g(x)",
        "tuple": "lambda g=s2s.jit(s2s.grad(cases.mlp_loss), target='parallel'): g(params, X, Y)",
        "arrays": ("lambda g=s2s.jit(s2s.grad(cases.mlp_loss_flat, argnums=(0, 1, 2, 3)), target='parallel'): "
                   "g(*params, X, Y)")}),
    "JAX": ("import jax\njax.config.update('jax_enable_x64', True)\nimport jax.numpy as jnp\n"
            "import types\nglb = dict(vars(cases), np=jnp)\n"
            "for k, v in vars(cases).items():\n"
            "    if isinstance(v, types.FunctionType) and v.__module__ == cases.__name__:\n"
            "        glb[k] = types.FunctionType(v.__code__, glb, v.__name__, v.__defaults__)\n"
            "def jaxed(fn): return glb[fn.__name__]", {
                "elementwise": ("lambda g=jax.jit(jax.grad(jaxed(cases.elementwise_sum))), a=jnp.asarray(x): "
                                "jax.block_until_ready(g(a))"),
                "unary": ("lambda g=jax.jit(types.FunctionType(unary.__code__, dict(globals(), np=jnp))), "
                          "a=jnp.asarray(x): jax.block_until_ready(g(a))"),
                "tuple": ("lambda g=jax.jit(jax.grad(jaxed(cases.mlp_loss))), p=tuple(map(jnp.asarray, params)), "
                          "a=jnp.asarray(X), b=jnp.asarray(Y): jax.block_until_ready(g(p, a, b))"),
                "arrays": ("lambda g=jax.jit(jax.grad(jaxed(cases.mlp_loss_flat), argnums=(0, 1, 2, 3))), "
                           "p=tuple(map(jnp.asarray, params)), a=jnp.asarray(X), b=jnp.asarray(Y): "
                           "jax.block_until_ready(g(*p, a, b))")}),
    "hand NumPy": ("", {
        "elementwise": "lambda: cases.elementwise_sum_grad_numpy(x)",
        "unary": "lambda: unary(x)",
        "tuple": "lambda: cases.mlp_loss_grad_numpy(params, X, Y)",
        "arrays": "lambda: cases.mlp_loss_grad_numpy(params, X, Y)"}),
    "hand Numba": ("import numba\n"
                   "@numba.njit(parallel=True, fastmath=True, cache=True)\n"
                   "def hand(x):\n"
                   "    out = np.empty_like(x)\n"
                   "    for k in numba.prange(x.size):\n"
                   "        v = x[k]\n"
                   "        out[k] = np.cos(v) * v * v + 2.0 * v * np.sin(v) - 2.0 * v * np.exp(-v * v)\n"
                   "    return out", {
                       "elementwise": "lambda: hand(x)"}),
}

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
import cases
{imports}
{setup}
fn = {fn}
out = fn(); out = fn()
got = out if isinstance(out, tuple) else (out,)
want = ref if isinstance(ref, tuple) else (ref,)
agree = len(got) == len(want) and all(
    np.allclose(np.asarray(g), w, rtol=1e-8, atol=1e-12 * np.max(np.abs(w))) for g, w in zip(got, want))
t = time.perf_counter(); fn(); one = time.perf_counter() - t
n = max(1, int(0.2 / max(one, 1e-7)))


def repeat():
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return time.perf_counter() - t0


best = min(repeat() for _ in range(5)) / n
print(json.dumps({{"seconds": best, "agree": bool(agree)}}))
"""


def thread_env(threads: int) -> dict:
    env = dict(os.environ, S2S_JIT_WAIT="1", S2S_QUIET="1")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = str(threads)
    env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}"
    env["JAX_PLATFORMS"] = "cpu"
    return env


def pin(threads: int) -> None:
    """The child runs on `threads` cores only (its CPU affinity): a pool that sizes itself from the
    machine, or ignores its variable (XLA's), cannot use more."""
    cores = sorted(os.sched_getaffinity(0))
    if threads < len(cores):
        os.sched_setaffinity(0, cores[:threads])


def run_one(case: str, impl: str, threads: int, cache: str) -> dict:
    kind, variant = CASES[case]         # (variant: the size, the MLP's parameter form, or the op)
    imports, fns = IMPLS[impl]
    key = variant if kind == "mlp" else kind
    if key not in fns:
        return {"skipped": True}
    setup = SETUP[kind].format(n=1_000_000, op=variant) if kind == "unary" else SETUP[kind].format(n=variant)
    code = CHILD.format(bench=BENCH, imports=imports, setup=setup, fn=fns[key])
    env = dict(thread_env(threads), S2S_CACHE_DIR=os.path.join(cache, "s2s"), NUMBA_CACHE_DIR=os.path.join(cache, "nb"))
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "child.py")       # (s2s reads functions from files: cases.py)
        with open(script, "w") as f:
            f.write(code)
        p = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=900,
                           preexec_fn=lambda: pin(threads))
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        return {"error": lines[-1] if lines else f"exit status {p.returncode}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(threads: list[int], cases: list[str], impls: list[str], cache: str) -> dict:
    results: dict = {}
    for case in cases:
        for impl in impls:
            for t in threads:
                r = run_one(case, impl, t, cache)
                if r.get("skipped"):
                    break
                results.setdefault(case, {}).setdefault(impl, {})[str(t)] = r
                shown = f"{r['seconds'] * 1e3:10.3f} ms" + ("" if r.get("agree") else "  DISAGREES") \
                    if "seconds" in r else f"fails: {r['error'][:80]}"
                print(f"{case:16s} {impl:18s} {t:3d} threads {shown}", flush=True)
    return results


def table(results: dict, threads: list[int]) -> str:
    lines = []
    for case, by_impl in results.items():
        lines.append(f"\n{case} (ms; ratio to JAX at the same threads)")
        lines.append(f"{'implementation':18s}" + "".join(f"{t:>16d}" for t in threads))
        jax = by_impl.get("JAX", {})
        for impl, by_t in by_impl.items():
            row = f"{impl:18s}"
            for t in threads:
                r = by_t.get(str(t), {})
                if "seconds" not in r:
                    row += f"{'-':>16s}"
                    continue
                j = jax.get(str(t), {}).get("seconds")
                cell = f"{r['seconds'] * 1e3:.3f}" + (f" ({r['seconds'] / j:.2f}x)" if j else "")
                row += f"{cell:>16s}"
            lines.append(row)
    return "\n".join(lines)


def plot(path: str, out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(path) as f:
        data = json.load(f)
    results, machine = data["results"], data.get("machine", "")
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.8), squeeze=False)
    for ax, (case, by_impl) in zip(axes[0], results.items()):
        for impl, by_t in by_impl.items():
            pts = sorted((int(t), r["seconds"] * 1e3) for t, r in by_t.items() if "seconds" in r)
            if pts:
                ax.plot(*zip(*pts), marker="o", label=impl, color=f"C{list(IMPLS).index(impl)}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(case)
        ax.set_xlabel("threads")
        ax.set_ylabel("ms per call")
    handles = {h.get_label(): h for ax in axes[0] for h in ax.get_lines()}
    axes[0][0].legend(handles.values(), handles.keys(), fontsize=7)
    fig.suptitle(f"time per call against threads, each in its own process ({machine})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--json")
    ap.add_argument("--machine", default="")
    ap.add_argument("--plot", nargs=2, metavar=("JSON", "PNG"))
    opts = ap.parse_args()
    if opts.plot:
        plot(*opts.plot)
        return
    threads = [int(t) for t in opts.threads.split(",")]
    with tempfile.TemporaryDirectory() as cache:
        results = measure(threads, opts.cases.split(","), opts.impls.split(","), cache)
    print(table(results, threads))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"machine": opts.machine, "cores": os.cpu_count(), "threads": threads, "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
