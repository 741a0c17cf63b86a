"""The runtime package (s2s/runtime/): the module names generated code imports helpers by
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
    # a generated file starts with import lines of this form, from each helper's __module__
    out = _run("from s2s.runtime.batching import bmatmul\n"
               "from s2s.runtime.fused import fused_size\n"
               "from s2s.runtime.effects import effect\n"
               "from s2s.runtime.collectives import psum\n"
               "print(bmatmul.__module__, fused_size.__module__, effect.__module__, psum.__module__)")
    assert out.split() == ["s2s.runtime.batching", "s2s.runtime.fused", "s2s.runtime.effects",
                           "s2s.runtime.collectives"]


def test_import_s2s_does_not_import_numba():
    assert _run("import sys, s2s; print('numba' in sys.modules)").strip() == "False"


def test_import_s2s_does_not_import_scipy_until_the_users_code_does():
    # scipy.special/stats rules register when a lookup misses with scipy.special imported
    out = _run("import sys, numpy as np, s2s\n"
               "print('scipy' in sys.modules)\n"
               "import scipy.special\n"
               "from s2s.rules.table import lookup\n"
               "print(lookup(scipy.special.gammaln) is not None)")
    assert out.split() == ["False", "True"]
