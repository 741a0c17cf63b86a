"""The generated source of a program is the same in every process.

Two processes with different string-hash seeds (PYTHONHASHSEED) and fresh caches print s2s.show for
programs whose derivatives meet at control-flow joins (the zeros materialized there were emitted in
a set's order) and for a jit whose fused loops are outlined (they were taken in id() order, which
follows memory addresses).  Different text for one program means different cache entries, golden
files that flake, and a debugger session that does not match the last `s2s show`.
"""
import os
import subprocess
import sys

from cases.paths import ROOT, pythonpath

CHILD = r"""
import numpy as np
import s2s
from cases import corpus_arrays, corpus_flow, op_cases

out = []
for fn, argnums in [(corpus_arrays.arith_bool_ops, (0, 1)), (corpus_flow.cf_rnn, (0, 1, 2)),
                    (corpus_flow.list_index_loop, 0), (corpus_flow.horner_polynomial, (0, 1)),
                    (corpus_flow.cumulative_product_loop, 0)]:
    out.append(s2s.show(fn, "grad", argnums=argnums))
    out.append(s2s.show(fn, "jvp", argnums=argnums))
cond = next(c for c in op_cases.CASES if c.name == "cond")
out.append(s2s.show(s2s.jit(s2s.grad(cond.fn)), example_args=cond.make(np.random.default_rng(0))))
print("\n#####\n".join(out))
"""


def _generated(seed: str, cache: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed, S2S_CACHE_DIR=cache, PYTHONPATH=pythonpath(ROOT))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_generated_source_does_not_depend_on_the_process(tmp_path):
    first = _generated("1", str(tmp_path / "a"))
    second = _generated("2", str(tmp_path / "b"))
    assert first.count("#####") == 10
    assert first == second
