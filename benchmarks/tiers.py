"""Tiered jit: what a background compile costs the caller, a thread against a forked process.

    python benchmarks/tiers.py [--program quickstart|mlp] [--seconds-busy 0]

Each row is a fresh process with empty caches.  The caller trains: it calls the gradient in a
loop (the Python tier until native code is ready) and we record:
- first: the first result, from the jit's construction;
- native: when native code answered (the compile's length as the caller sees it);
- caller: the median time of one Python-tier call while the compile ran, against the same call
  with nothing compiling (the baseline, measured first in the same process);
- worst: the longest single call (a hiccup: the switch to native, a load from the disk cache).
Modes:
- wait: jit(..., wait=True): the first call compiles (as before tiers);
- process: jit's default: a forked child compiles and fills the disk caches while the caller runs
  the generated Python; the call that finds the child done loads the machine code;
- thread: S2S_JIT_TIER=thread: the compile on a daemon thread of the caller's process;
  thread-1: the same with Python's switch interval at 1 ms instead of 5.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from first_result import DATA, ROOT     # (the same programs and data)

CHILD = r"""
import os, sys, time, json, statistics
import numpy as np
sys.path.insert(0, {examples!r})
import s2s
mode = {mode!r}
{data}
plain = s2s.grad(loss)
plain(params, X, y)
base = []
t = time.perf_counter()
while time.perf_counter() - t < 1.0:
    s = time.perf_counter(); plain(params, X, y); base.append(time.perf_counter() - s)
start = time.perf_counter()
calls, first, native = [], None, None
if mode.startswith("thread-"):     # thread-0.5: Python's switch interval in ms while compiling
    sys.setswitchinterval(float(mode.split("-")[1]) / 1e3)
fn = s2s.jit(s2s.grad(loss), wait=(mode == "wait"))
while native is None:
    s = time.perf_counter(); fn(params, X, y); e = time.perf_counter()
    first = first if first is not None else e - start
    done = fn.ready and bool(fn._fast or any(j._fast for j in fn._inner_jits.values()))
    calls.append(e - s)
    if done:
        native = e - start
print(json.dumps(dict(first=first, native=native, base=statistics.median(base),
                      caller=statistics.median(calls[:-1]) if len(calls) > 1 else None, worst=max(calls) if calls else None,
                      ncalls=len(calls))))
"""


def run(mode: str, program: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, S2S_CACHE_DIR=os.path.join(tmp, "s2s"), NUMBA_CACHE_DIR=os.path.join(tmp, "nb"),
                   S2S_QUIET="1")
        env.pop("S2S_JIT_WAIT", None)
        if mode.startswith("thread"):
            env["S2S_JIT_TIER"] = "thread"
        script = os.path.join(tmp, f"tiers_{program}.py")      # (s2s reads functions from files)
        with open(script, "w") as f:
            f.write(CHILD.format(examples=os.path.join(ROOT, "examples"), mode=mode, data=DATA[program]))
        p = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default="quickstart", choices=("quickstart", "mlp"))
    ap.add_argument("--modes", default="wait,process,thread")
    opts = ap.parse_args()
    print(f"{opts.program}: fresh process, empty caches; a training loop calls the gradient until native code answers; "
          f"{os.cpu_count()} cores")
    print(f"{'mode':8s} {'first (s)':>9s} {'native (s)':>10s} {'call alone (ms)':>15s} "
          f"{'call while compiling (ms)':>25s} {'worst call (s)':>14s} {'calls':>7s}")
    for mode in opts.modes.split(","):
        r = run(mode, opts.program)
        caller = f"{1e3 * r['caller']:.3f}" if r["caller"] is not None else "-"
        worst = f"{r['worst']:.2f}" if r["worst"] is not None else "-"
        print(f"{mode:8s} {r['first']:9.2f} {r['native']:10.2f} {1e3 * r['base']:15.3f} {caller:>25s} "
              f"{worst:>14s} {r['ncalls']:7d}")


if __name__ == "__main__":
    main()
