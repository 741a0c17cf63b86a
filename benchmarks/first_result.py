"""Time from process start to the first jit result, and to a trained model, side by side with JAX.

    python benchmarks/first_result.py [--repeats N] [--programs quickstart,mlp,train]

Each measurement is one new Python process, timed by this parent from spawn to exit: the
interpreter's start, the imports, building the data, building the jitted transform, the calls,
and printing the result (checked against the other rows).  Programs:
- quickstart: jit(grad(loss)) of examples/quickstart.py's loss, one call;
- mlp: jit(value_and_grad(loss)) of a 64-128-10 MLP with dict params (softmax cross-entropy,
  256 examples), one call;
- train: 1,000 steps of gradient descent on the quickstart loss (the loop's last loss printed).
Rows:
- s2s cold: empty S2S_CACHE_DIR and NUMBA_CACHE_DIR, jit's default (the first calls run the
  generated Python while Numba compiles on a thread: s2s/transformations/tiers.py);
- s2s cold, S2S_JIT_WAIT=1: the same, but jit compiles before answering (time to native code);
- s2s warm: a fresh process on the caches the waiting run filled (tiered: the first call runs the
  generated Python while the machine code loads; waiting: it loads, then runs);
- s2s new function, helpers cached: S2S_JIT_WAIT=1 on a cache holding only s2s's own helpers'
  machine code (what any earlier program compiled), as for a new function on a machine s2s has
  compiled on before;
- JAX: jax.jit of the same function with jax.numpy as np (CPU, float64, no persistent cache).
The median of the repeats is reported, with the ratio to JAX.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEW_FUNCTION = "s2s new function, helpers cached, WAIT"

DATA = {
    "quickstart": r"""
import quickstart
rng = np.random.default_rng(0)
n, D = 64, 3
X = rng.normal(size=(n, D))
y = (X[:, 0] - 0.5 * X[:, 1] > 0.0).astype(float)
params = 0.3 * rng.normal(size=D * D + D)
loss = quickstart.loss
""",
    "mlp": r"""
def loss(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits, axis=1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(np.sum(logp * y, axis=1))
rng = np.random.default_rng(0)
X = rng.normal(size=(256, 64)); y = np.eye(10)[rng.integers(0, 10, 256)]
params = {"W1": 0.1 * rng.normal(size=(64, 128)), "b1": np.zeros(128),
          "W2": 0.1 * rng.normal(size=(128, 10)), "b2": np.zeros(10)}
""",
}
DATA["train"] = DATA["quickstart"]

RUN = {
    # (transform, how the result is printed)
    "quickstart": "out = f(params, X, y)\nprint(json.dumps(np.asarray(out).tolist()))\n",
    "mlp": "v, g = f(params, X, y)\nprint(json.dumps([float(v)] + [np.asarray(g[k]).tolist() for k in sorted(g)]))\n",
    "train": ("p = params\nfor step in range(1000):\n    p = p - 0.1 * f(p, X, y)\n"
              "print(json.dumps([float(loss(p, X, y))]))\n"),
}

S2S = r"""
import sys, json
import numpy as np
sys.path.insert(0, {examples!r})
{data}
import s2s
f = s2s.jit(s2s.{transform}(loss))
{run}"""

JAX = r"""
import sys, json
import numpy as np
sys.path.insert(0, {examples!r})
{data}
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
loss_np = loss
loss = loss.__class__(loss.__code__, dict(loss.__globals__, np=jnp))
params = jax.tree_util.tree_map(jnp.asarray, params)
X, y = jnp.asarray(X), jnp.asarray(y)
f = jax.jit(jax.{transform}(loss))
{run}"""


def transform_of(program: str) -> str:
    return "value_and_grad" if program == "mlp" else "grad"


def run(kind: str, program: str, env_extra: dict) -> tuple[float, list]:
    template = S2S if kind == "s2s" else JAX
    code = template.format(examples=os.path.join(ROOT, "examples"), data=DATA[program],
                           transform=transform_of(program), run=RUN[program])
    env = dict(os.environ, S2S_QUIET="1", **env_extra)
    if "S2S_JIT_WAIT" not in env_extra:
        env.pop("S2S_JIT_WAIT", None)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, f"first_{program}.py")      # (s2s reads functions from files)
        with open(script, "w") as f:
            f.write(code)
        start = time.perf_counter()
        p = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=900)
        seconds = time.perf_counter() - start
    if p.returncode != 0:
        raise RuntimeError(f"{kind} {program}: {p.stderr.strip().splitlines()[-3:]}")
    return seconds, json.loads(p.stdout.strip().splitlines()[-1])


def flat(x) -> list[float]:
    if isinstance(x, list):
        return [v for e in x for v in flat(e)]
    return [float(x)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--programs", default="quickstart,mlp,train")
    opts = ap.parse_args()
    import numpy as np
    print(f"process start to result, median of {opts.repeats} fresh processes, {os.cpu_count()} cores")
    print(f"{'program':11s} {'row':40s} {'median (s)':>10s} {'runs (s)':>20s} {'vs JAX':>7s}")
    for program in opts.programs.split(","):
        rows: dict[str, list[float]] = {"s2s cold (tiered)": [], "s2s cold, S2S_JIT_WAIT=1": [],
                                        "s2s warm (tiered)": [], "s2s warm, S2S_JIT_WAIT=1": [], NEW_FUNCTION: [],
                                        "JAX (CPU)": []}
        results = []
        for _ in range(opts.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                def dirs(name):
                    return {"S2S_CACHE_DIR": os.path.join(tmp, name, "s2s"),
                            "NUMBA_CACHE_DIR": os.path.join(tmp, name, "numba")}
                # (the tiered cold run may leave part of the caches behind: the waiting one starts
                # empty too, and the warm rows read what it filled)
                for label, env in (("s2s cold (tiered)", dirs("tiered")),
                                   ("s2s cold, S2S_JIT_WAIT=1", dict(dirs("wait"), S2S_JIT_WAIT="1")),
                                   ("s2s warm, S2S_JIT_WAIT=1", dict(dirs("wait"), S2S_JIT_WAIT="1")),
                                   ("s2s warm (tiered)", dirs("wait"))):
                    seconds, out = run("s2s", program, env)
                    rows[label].append(seconds)
                    results.append(flat(out))
                # a new function on a machine where s2s compiled before: only s2s's helpers (their
                # machine code per signature, S2S_CACHE_DIR/numba) are in the cache
                shutil.copytree(os.path.join(tmp, "wait", "s2s", "numba"), os.path.join(tmp, "newfn", "s2s", "numba"))
                seconds, out = run("s2s", program, dict(dirs("newfn"), S2S_JIT_WAIT="1"))
                rows[NEW_FUNCTION].append(seconds)
                results.append(flat(out))
            try:
                seconds, out = run("jax", program, {})
                rows["JAX (CPU)"].append(seconds)
                results.append(flat(out))
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"JAX not run: {exc}")
        agree = all(np.allclose(r, results[0], rtol=1e-8, atol=1e-10) for r in results)
        jax = statistics.median(rows["JAX (CPU)"]) if rows["JAX (CPU)"] else None
        for label, times in rows.items():
            if not times:
                continue
            med = statistics.median(times)
            vs = f"{med / jax:.2f}x" if jax else "n/a"
            print(f"{program:11s} {label:40s} {med:10.2f} {' '.join(f'{t:.2f}' for t in times):>20s} {vs:>7s}")
        print(f"{program:11s} results agree across rows: {agree}")


if __name__ == "__main__":
    main()
