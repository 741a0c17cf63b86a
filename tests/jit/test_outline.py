"""Long compiled functions: fused regions outlined (and shared when alike), straight-line tapes
as variables, loops without an unfused branch where every array surely has one shape.

These change only what Numba is given to compile (jit(grad) of 500 lines: > 600 s before, see
docs/performance.md); each test compares the compiled answer with the uncompiled transform.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
from s2s.backends import outline
from s2s.transforms import fuse
from cases.fd import numeric_grad

from cases.paths import ROOT
spec = importlib.util.spec_from_file_location("transform_cost", os.path.join(ROOT, "benchmarks", "transform_cost.py"))
transform_cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(transform_cost)


@pytest.fixture
def outline_everything(monkeypatch):
    """Outline every fused region, and give a loop to every lone array operation, as long
    functions get: the small programs below then take the long-function path."""
    monkeypatch.setattr(outline, "MIN_REGIONS", 1)
    monkeypatch.setattr(fuse, "LONE_OPS_PAST", 0)


# ----- programs (module level: s2s reads their source) -------------------------------------
def loop_of_regions(x, w):
    s = 0.0
    for i in range(3):
        h = np.tanh(x * w + 0.1 * i)
        s = s + np.sum(h * h)
        x = x * 0.5 + h
    return s


def branch_of_regions(x, w):
    y = np.sin(x) * w
    if np.sum(y) > 0:
        z = np.exp(-y * y) + x
    else:
        z = np.cos(y) * x - 1.0
    return np.sum(z * z)


def broadcast_pair(x, y):
    # x and y both vectors, of shapes (4,) and (1,): one rank, two shapes, the unfused branch
    a = np.sin(x) * y + x
    b = a * a - y
    return np.sum(b * x)


def grows_in_a_loop(x):
    h = x * 1.0
    s = 0.0
    for i in range(2):
        g = h * 2.0 + 1.0          # h's shape changes: g must not be taken for x's shape
        h = np.concatenate([h, x])
        s = s + np.sum(g * g)
    return s + np.sum(h * h)


def reassigned_straight(x, w):
    a = x * w
    a = np.sin(a) + a
    b = a * a
    a = np.exp(-b) * a
    if np.sum(a) > -1e9:
        a = a + b
    return np.sum(a * b)


CASES = [
    (loop_of_regions, lambda r: (r.normal(size=5), r.normal(size=5))),
    (branch_of_regions, lambda r: (r.normal(size=6), 0.7)),
    (broadcast_pair, lambda r: (r.normal(size=4), r.normal(size=1))),
    (grows_in_a_loop, lambda r: (r.normal(size=3),)),
    (reassigned_straight, lambda r: (r.normal(size=5), 0.4)),
    (reassigned_straight, lambda r: (r.normal(size=5), np.array(0.4))),     # a 0-d array: a number in the loop
]


@pytest.mark.parametrize("fn,make", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_outlined_code_answers_as_grad_and_finite_differences(outline_everything, fn, make):
    args = make(np.random.default_rng(3))
    want = s2s.grad(fn)(*args)
    got = s2s.jit(s2s.grad(fn), cache=False)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(want, numeric_grad(fn, args, 0), rtol=1e-5, atol=1e-7)


def test_parallel_target_outlined(outline_everything):
    args = (np.random.default_rng(4).normal(size=7), np.random.default_rng(5).normal(size=7))
    got = s2s.jit(s2s.grad(loop_of_regions), target="parallel", cache=False)(*args)
    np.testing.assert_allclose(got, s2s.grad(loop_of_regions)(*args), rtol=1e-12)


def test_unfused_branch_kept_where_shapes_may_differ(outline_everything):
    """Two vectors of different lengths reach the same code: the loop guard fails and the unfused
    statements (kept for it) broadcast; one-shape code raises instead of computing garbage."""
    src = s2s.show(s2s.jit(s2s.grad(broadcast_pair)), example_args=(np.ones(4), np.ones(1)))
    assert "AssertionError" not in src
    src = s2s.show(s2s.jit(s2s.grad(reassigned_straight)), example_args=(np.ones(4), 0.5))
    assert "AssertionError" in src     # every array there has x's shape: no unfused copy


def test_long_program_compiles_its_alike_regions_once_and_reloads_from_disk(tmp_path):
    """A 20-line program of five statement shapes, each line with coefficients of its own: its
    fused regions are outlined, the alike ones share a function (coefficients as parameters),
    its tapes are variables; the answer equals grad's, and a second process loads the compiled
    code from disk with the same answer, without compiling."""
    path = tmp_path / "longprog.py"
    path.write_text(transform_cost.varied_program(20))
    child = textwrap.dedent(f"""
        import importlib.util, json, sys, time
        import numpy as np
        spec = importlib.util.spec_from_file_location("longprog", {str(path)!r})
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
        import s2s
        x = np.linspace(0.0, 1.0, 9)
        j = s2s.jit(s2s.grad(mod.f))
        t = time.perf_counter(); got = j(x, 0.3); took = time.perf_counter() - t
        want = s2s.grad(mod.f)(x, 0.3)
        print(json.dumps({{"got": got.tolist(), "want": want.tolist(), "took": took,
                          "source": s2s.show(j, example_args=(x, 0.3))}}))
        """)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        import json
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    first, second = runs
    np.testing.assert_allclose(first["got"], first["want"], rtol=1e-12)
    assert second["got"] == first["got"]                      # the disk cache: the same bits
    assert second["took"] < first["took"] / 3, (first["took"], second["took"])
    src = first["source"]
    defined = re.findall(r"^def (fused_loop\d*)\(", src, re.M)
    called = re.findall(r"= (fused_loop\d*)\(", src)
    assert defined and len(called) > len(defined)             # alike regions share a function
    assert re.search(r"^def fused_loop\d*\(.*coef", src, re.M)  # ... taking their coefficients
    assert "List()" not in src                                # straight-line tapes are variables
    assert "AssertionError" in src                            # one shape: no unfused copies


def test_error_inside_an_outlined_loop_names_the_users_line(outline_everything):
    """Vectors of lengths 3 and 4 do not broadcast: the error, raised in an outlined function's
    unfused branch, still points at the user's line."""
    import traceback
    with pytest.raises(ValueError) as info:
        s2s.jit(s2s.grad(broadcast_pair), cache=False)(np.ones(3), np.ones(4))
    text = "".join(traceback.format_exception(info.value))
    assert "test_outline.py" in text, text
