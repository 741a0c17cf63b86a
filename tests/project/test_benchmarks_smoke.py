"""Smoke test of benchmarks/sidebyside.py: the quick sizes of cases 1 and 3 run and every
implementation agrees with the hand-written gradients. Timings are not checked.

Needs the bench extra (`pip install -e '.[bench]'`: jax, autograd); skipped without it.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from cases.paths import ROOT
SCRIPT = os.path.join(ROOT, "benchmarks", "sidebyside.py")

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("jax", "autograd")),
    reason="the benchmark needs jax and autograd (pip install -e '.[bench]')")


def test_sidebyside_quick_cases_1_and_3(tmp_path):
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "s2s"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    p = subprocess.run([sys.executable, SCRIPT, "--quick", "--cases", "1,3"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    out = p.stdout
    assert p.returncode == 0, f"exit status {p.returncode}\n--- stdout\n{out}\n--- stderr\n{p.stderr[-4000:]}"
    assert out.count("agreement check passed") == 2, out
    assert "agreement check FAILED" not in out and "DISAGREES" not in out, out
    assert out.rstrip().endswith("all agreement checks passed"), out
    for case in ("case 1 ratio", "case 3 ratio"):
        assert case in out, out
