"""The runtime package (s2s/runtime/): the module names generated code imports helpers by still
resolve in a fresh process, and `import s2s` leaves Numba out (the *_numba modules load with the
Numba backend only)."""
from __future__ import annotations

import os
import subprocess
import sys

from cases.paths import ROOT, pythonpath


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=pythonpath(ROOT))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout


def test_generated_code_module_names_resolve_in_a_fresh_process():
    # a generated file starts with these lines (the names from before s2s/runtime/ was a package)
    out = _run("from s2s.runtime_batching import bmatmul\n"
               "from s2s.runtime_fused import fused_size\n"
               "from s2s.runtime_effects import effect\n"
               "from s2s.runtime_collectives import psum\n"
               "from s2s.runtime import batching, fused, effects, collectives\n"
               "print(bmatmul.__module__, bmatmul is batching.bmatmul, fused_size is fused.fused_size,\n"
               "      effect is effects.effect, psum is collectives.psum)")
    assert out.split() == ["s2s.runtime_batching", "True", "True", "True", "True"]


def test_import_s2s_does_not_import_numba():
    assert _run("import sys, s2s; print('numba' in sys.modules)").strip() == "False"
