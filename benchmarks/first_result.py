"""Time from process start to the first jit result: the quickstart's loss, fresh processes.

    python benchmarks/first_result.py [--repeats N]

Each measurement is one new Python process, timed by this parent from spawn to exit: the
interpreter's start, the imports, building the data, building jit(grad(loss)), one call, and
the check of the gradient against the unjitted one.  Rows:
- s2s cold: empty S2S_CACHE_DIR and NUMBA_CACHE_DIR (generates the source, Numba compiles);
- s2s warm: a second process on the same cache directories (loads source and machine code);
- JAX: jax.jit(jax.grad(loss)) of the same function with jax.numpy as np (CPU, float64), JAX's
  defaults (no persistent compilation cache).
The median of the repeats is reported, with the ratio to JAX.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMMON = r"""
import sys
import numpy as np
sys.path.insert(0, {examples!r})
import quickstart
rng = np.random.default_rng(0)
n, D = 64, 3
X = rng.normal(size=(n, D))
y = (X[:, 0] - 0.5 * X[:, 1] > 0.0).astype(float)
w = 0.3 * rng.normal(size=D * D + D)
"""

CHILDREN = {
    "s2s": COMMON + r"""
import s2s
g = np.asarray(s2s.jit(s2s.grad(quickstart.loss))(w, X, y))
print(g.tolist())
""",
    "jax": COMMON + r"""
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
loss = quickstart.loss.__class__(quickstart.loss.__code__, dict(vars(quickstart), np=jnp))
g = np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(w), jnp.asarray(X), jnp.asarray(y)))
print(g.tolist())
""",
}


def run(kind: str, env_extra: dict) -> tuple[float, list]:
    code = CHILDREN[kind].format(examples=os.path.join(ROOT, "examples"))
    env = dict(os.environ, **env_extra)
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        raise RuntimeError(f"{kind}: {p.stderr.strip().splitlines()[-1:]}")
    return seconds, json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    opts = ap.parse_args()
    rows: dict[str, list[float]] = {"s2s jit(grad), cold caches": [], "s2s jit(grad), warm caches": [],
                                    "JAX jit(grad) (CPU)": []}
    grads = []
    for _ in range(opts.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            dirs = {"S2S_CACHE_DIR": os.path.join(tmp, "s2s"), "NUMBA_CACHE_DIR": os.path.join(tmp, "numba")}
            for label in ("s2s jit(grad), cold caches", "s2s jit(grad), warm caches"):
                seconds, g = run("s2s", dirs)
                rows[label].append(seconds)
                grads.append(g)
        try:
            seconds, g = run("jax", {})
            rows["JAX jit(grad) (CPU)"].append(seconds)
            grads.append(g)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"JAX not run: {exc}")
    import numpy as np
    agree = all(np.allclose(g, grads[0], rtol=1e-10, atol=1e-12) for g in grads)
    jax = statistics.median(rows["JAX jit(grad) (CPU)"]) if rows["JAX jit(grad) (CPU)"] else None
    print(f"process start to first jit(grad(loss)) result, examples/quickstart.py's loss, median of "
          f"{opts.repeats} fresh processes; gradients agree: {agree}")
    print(f"{'implementation':32s} {'median (s)':>10s} {'runs (s)':>24s} {'vs JAX':>7s}")
    for label, times in rows.items():
        if not times:
            continue
        med = statistics.median(times)
        vs = f"{med / jax:.2f}x" if jax else "n/a"
        print(f"{label:32s} {med:10.2f} {' '.join(f'{t:.2f}' for t in times):>24s} {vs:>7s}")


if __name__ == "__main__":
    main()
