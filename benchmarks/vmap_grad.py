"""Per-example gradients of a logistic-regression loss, 4096 examples x 256 features.

s2s `vmap(grad(loss), in_axes=(None, 0, 0))` against the hand-written NumPy
expression and JAX's `jit(vmap(grad))` on CPU, same inputs, one run.

    python benchmarks/vmap_grad.py
"""
from __future__ import annotations

import os
os.environ.setdefault("S2S_JIT_WAIT", "1")   # (timings of machine code: jit compiles before it answers)

import os
import platform
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import s2s  # noqa: E402
from cases import logistic_loss, per_example_grads_numpy  # noqa: E402


def best(fn, number=20, repeat=7):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main(n=4096, d=256, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d) / np.sqrt(d)
    X = rng.normal(size=(n, d))
    y = np.sign(rng.normal(size=n))

    per_example = s2s.vmap(s2s.grad(logistic_loss), in_axes=(None, 0, 0))
    ours = per_example(w, X, y)
    ref = per_example_grads_numpy(w, X, y)
    assert np.allclose(ours, ref, rtol=1e-10, atol=1e-12), "s2s disagrees with the hand-written gradients"
    source = per_example.generated_for(3).source
    body = source.split("def ", 1)[1]
    assert "for " not in body and "while " not in body and "per_example(" not in body, \
        "the batched source has a Python-level loop"

    rows = [("hand-written NumPy", best(lambda: per_example_grads_numpy(w, X, y))),
            ("s2s vmap(grad)", best(lambda: per_example(w, X, y)))]
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def jloss(w, x, y):
            return jnp.log(1.0 + jnp.exp(-y * (x @ w)))
        jfn = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
        jw, jX, jy = jnp.asarray(w), jnp.asarray(X), jnp.asarray(y)
        out = np.asarray(jfn(jw, jX, jy))
        assert np.allclose(out, ref, rtol=1e-10, atol=1e-12), "JAX disagrees"
        rows.append((f"JAX {jax.__version__} jit(vmap(grad)) (CPU)",
                     best(lambda: jfn(jw, jX, jy).block_until_ready())))
    except ImportError:
        rows.append(("JAX (not installed: pip install -e .[bench])", float("nan")))

    base = rows[0][1]
    print(f"per-example logistic-regression gradients, {n} x {d}, float64; "
          f"{platform.processor() or platform.machine()}, numpy {np.__version__}")
    print(f"{'implementation':45s} {'time (ms)':>10s} {'vs NumPy':>9s}")
    for name, t in rows:
        print(f"{name:45s} {t * 1e3:10.3f} {t / base:9.2f}x")
    s2s_t = rows[1][1]
    print(f"ratio s2s / hand-written NumPy: {s2s_t / base:.2f} (target <= 1.5)")
    if len(rows) > 2 and rows[2][1] == rows[2][1]:
        print(f"ratio s2s / JAX: {s2s_t / rows[2][1]:.2f}")


if __name__ == "__main__":
    main()
