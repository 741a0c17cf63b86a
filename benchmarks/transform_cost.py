"""What a transform costs as programs grow: time and memory of `grad` (and `jit(grad)`) against
program size and loop depth, and a long scalar loop's gradient against its primal.

    python benchmarks/transform_cost.py [--sizes 50,100,200,500,1000,2000] [--depths 1,2,4,8,12,16,20]
                                        [--jit-sizes 5,10,20] [--loop-steps 1000000] [--quick]

Each measurement runs in a fresh process with an empty cache directory (so nothing is reused
from an earlier one): the time is the first call of the transformed function (generate the
source, load it, run it once), and the memory is how much the process's peak resident size
grew during that call (after importing s2s and NumPy). The growth exponent is the least-squares slope of log(time) on log(size).

The programs (`long_program`, `deep_loops`, `scalar_loop`) are also what tests/frontend/test_transform_cost.py
checks for correctness.
"""
from __future__ import annotations

import os
os.environ.setdefault("S2S_JIT_WAIT", "1")   # (timings of machine code: jit compiles before it answers)

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))


def long_program(lines: int, varied: bool = False) -> str:
    """A straight-line function of `lines` array statements (elementwise maths on a vector
    and a scalar), the kind of code a long physics or loss function has: five statement shapes,
    repeated.  `varied`: every line with coefficients of its own (nothing repeats exactly)."""
    out = ["import numpy as np", "", "", "def f(x, w):", "    a = x * 1.0", "    b = np.sin(x)"]
    for k in range(lines):
        c = 1.0 + k / 1000 if varied else 1.0
        out.append("    " + [f"a = a * {0.9 * c!r} + np.tanh(b) * w",
                             f"b = np.sin(a) - {0.1 * c!r} * b",
                             f"c{k} = np.exp(-a * a) + b",
                             f"a = a + {0.01 * c!r} * c{k - 1}",
                             f"b = b * np.cos(c{k - 2}) + {0.5 * c!r}"][k % 5])
    out.append("    return np.sum(a * b)")
    return "\n".join(out) + "\n"


def varied_program(lines: int) -> str:
    return long_program(lines, varied=True)


def deep_loops(depth: int) -> str:
    """`depth` nested one-trip loops around one update: f(x) = x * x + 1, at any depth."""
    out = ["def f(x):", "    s = x"]
    indent = "    "
    for k in range(depth):
        out.append(f"{indent}for i{k} in range(1):")
        indent += "    "
    out.append(f"{indent}s = s * x + 1.0")
    out.append("    return s")
    return "\n".join(out) + "\n"


def scalar_loop(steps: int) -> str:
    """A scalar recurrence of `steps` iterations, in plain Python floats and np.sin."""
    return textwrap.dedent(f"""\
        import numpy as np


        def f(x):
            s = 0.0
            for i in range({steps}):
                x = np.sin(x) * 0.999 + 0.001
                s = s + x * x
            return s
        """)


_CHILD = r"""
import importlib.util, json, resource, sys, time
import numpy as np
path, mode = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("prog", path)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
import s2s
args = {"size": (np.linspace(0.0, 1.0, 8), 0.3), "depth": (1.5,), "loop": (0.5,)}[sys.argv[3]]
if mode == "loop":
    t = time.perf_counter(); mod.f(*args); primal = time.perf_counter() - t
    g = s2s.grad(mod.f); g(*args)                      # (transform and load once)
    t = time.perf_counter(); g(*args); grad = time.perf_counter() - t
    print(json.dumps({"primal": primal, "grad": grad}))
    sys.exit(0)
transformed = s2s.grad(mod.f) if mode == "grad" else s2s.jit(s2s.grad(mod.f))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter(); transformed(*args); seconds = time.perf_counter() - t
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
lines = len(s2s.show(mod.f).splitlines()) if mode == "grad" else None    # (from the in-memory cache)
print(json.dumps({"seconds": seconds, "peak_mb": peak / 1e6, "generated_lines": lines}))
"""


def measure(source: str, mode: str, kind: str, timeout: float = 1800) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prog.py")
        with open(path, "w") as f:
            f.write(source)
        env = dict(os.environ, S2S_CACHE_DIR=os.path.join(tmp, "cache"), NUMBA_CACHE_DIR=os.path.join(tmp, "numba"))
        p = subprocess.run([sys.executable, "-c", _CHILD, path, mode, kind], env=env, capture_output=True,
                           text=True, timeout=timeout)
        if p.returncode != 0:
            return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
        return json.loads(p.stdout.strip().splitlines()[-1])


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(y) on log(x)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,100,200,500,1000,2000")
    ap.add_argument("--depths", default="1,2,4,8,12,16,20")
    ap.add_argument("--jit-sizes", default="5,10,20")
    ap.add_argument("--loop-steps", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    a = ap.parse_args(argv)
    if a.quick:
        a.sizes, a.depths, a.jit_sizes, a.loop_steps = "20,40", "1,4,8", "", 20_000
    ints = lambda s: [int(v) for v in s.split(",") if v]

    print("grad against program size (straight-line array code)")
    print(f"{'lines':>6} {'seconds':>9} {'+peak MB':>9} {'generated lines':>16}")
    pts = []
    for n in ints(a.sizes):
        r = measure(long_program(n), "grad", "size")
        if "error" in r:
            print(f"{n:>6}  fails: {r['error']}")
            continue
        pts.append((n, r["seconds"]))
        print(f"{n:>6} {r['seconds']:9.2f} {r['peak_mb']:9.1f} {r['generated_lines'] or '':>16}", flush=True)
    if len(pts) > 1:
        print(f"growth exponent (time ~ lines^k): k = {slope(pts):.2f}")

    def table(title, label, values, program, mode, kind):
        print(f"\n{title}")
        print(f"{label:>6} {'seconds':>9} {'+peak MB':>9}")
        for v in values:
            r = measure(program(v), mode, kind)
            print(f"{v:>6} " + (f"{r['seconds']:9.2f} {r['peak_mb']:9.1f}" if "error" not in r else f" fails: {r['error']}"),
                  flush=True)
    table("grad against loop nesting depth", "depth", ints(a.depths), deep_loops, "grad", "depth")
    if ints(a.jit_sizes):
        table("jit(grad) against program size (first call: transform, Numba compile, run)", "lines",
              ints(a.jit_sizes), long_program, "jit", "size")
        table("jit(grad) of the same with a coefficient of its own per line (varied_program)", "lines",
              ints(a.jit_sizes), varied_program, "jit", "size")

    r = measure(scalar_loop(a.loop_steps), "loop", "loop")
    print(f"\nscalar loop of {a.loop_steps} steps: primal {r['primal']:.2f} s, grad {r['grad']:.2f} s, "
          f"ratio {r['grad'] / r['primal']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
