"""A second process on a warm cache neither regenerates nor recompiles, and gets the same answers.

Each child process counts Numba's compilations (its `numba:compile` events) while it runs the
quickstart or every case of tests/cases/warm_cases.py through jit; the second process over the same
cache must compile nothing (machine code loaded from Numba's cache, failed variants remembered;
the object-mode blocks of collectives, which Numba rebuilds on each load, are not counted) and
return bit-for-bit the first process's results.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

from cases import paths
from cases.paths import ROOT

COUNTER = textwrap.dedent("""
    import json, sys, time
    from numba.core import event

    class Count(event.Listener):
        def __init__(self):
            self.top = 0          # compilations not nested in another one
            self.depth = 0
        def on_start(self, ev):
            # (not counted: the object-mode blocks of code loaded from the cache, which Numba lifts
            # and builds again on each load: a collective's exchange, all arguments Python objects)
            lifted = all(str(a) == "ffi_forced_object" for a in (ev.data.get("args") or ("-",)))
            self.top += self.depth == 0 and not lifted
            self.depth += 1
        def on_end(self, ev):
            self.depth -= 1

    compiles = Count()
    event.register("numba:compile", compiles)

    def leaves(out):          # a result's arrays and numbers, as JSON lists, in order
        import numpy as np
        if isinstance(out, (tuple, list)):
            return [leaf for o in out for leaf in leaves(o)]
        return [np.asarray(out).tolist()]
""")

CASES_CHILD = COUNTER + textwrap.dedent("""
    import numpy as np
    import s2s, s2s.pipeline
    from cases import warm_cases
    results = {{name: leaves(fn(*args)) for name, fn, args in warm_cases.cases(s2s)}}
    print(json.dumps({{"compiles": compiles.top, "stats": s2s.pipeline.STATS, "results": results}}))
""")

QUICKSTART_CHILD = COUNTER + textwrap.dedent("""
    import runpy
    sys.argv = [{script!r}]
    start = time.perf_counter()
    runpy.run_path({script!r}, run_name="__main__")
    import s2s.pipeline
    print(json.dumps({{"compiles": compiles.top, "stats": s2s.pipeline.STATS, "seconds": time.perf_counter() - start}}))
""")


def _child(code: str, cache) -> dict:
    env = dict(os.environ, S2S_CACHE_DIR=str(cache), PYTHONPATH=paths.pythonpath())
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stdout


def test_warm_cache_runs_every_case_without_compiling_and_answers_the_same(tmp_path):
    code = CASES_CHILD.format()
    first, _ = _child(code, tmp_path / "cache")
    assert first["compiles"] > 0 and first["stats"]["generated"] > 0
    second, _ = _child(code, tmp_path / "cache")
    assert second["stats"]["generated"] == 0, second["stats"]
    assert second["compiles"] == 0, f"{second['compiles']} Numba compilations in the warm process"
    assert set(second["results"]) == set(first["results"])
    for name, leaves in first["results"].items():
        for a, b in zip(leaves, second["results"][name]):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=name)


def test_warm_quickstart_compiles_nothing(tmp_path):
    code = QUICKSTART_CHILD.format(script=os.path.join(ROOT, "examples", "quickstart.py"))
    first, out1 = _child(code, tmp_path / "cache")
    assert first["compiles"] > 0
    second, out2 = _child(code, tmp_path / "cache")
    assert second["compiles"] == 0, f"{second['compiles']} Numba compilations in the warm quickstart"
    assert second["stats"]["generated"] == 0
    # the same printed results (the generated source's header names the cache file: same cache, same
    # text), but for the seconds the demo reports jit took
    def results(out):
        return [re.sub(r"\d+\.\d+ s\b", "<t> s", line) for line in out.splitlines()[:-1]]
    assert results(out1) == results(out2)


def test_no_helper_numba_compiles_as_is_calls_itself():
    """Numba's cached machine code of a caller of a recursive function crashes the process that
    loads it (the recursive call's address is patched in at compile time only: the second run of
    `jit(grad(f))` of `np.array([p[1], -p[0]])` died in array_vjp).  Helpers Numba compiles from
    their Python bodies (those without an overload) must not recurse; give them an overload."""
    import dis
    import importlib
    import types

    from s2s import runtime
    from s2s.backends import numba_cpu
    from s2s.frontend.namespace import OP_HELPER_MODULES

    recursive = []
    for module in (*map(importlib.import_module, OP_HELPER_MODULES), runtime):
        for attr, fn in vars(module).items():
            if isinstance(fn, types.FunctionType) and numba_cpu._jittable(fn):
                calls_itself = any(ins.opname == "LOAD_GLOBAL" and ins.argval == attr
                                   for ins in dis.get_instructions(fn))
                if calls_itself:
                    recursive.append(f"{module.__name__}.{attr}")
    assert not recursive, f"recursive helpers compiled by Numba as they are: {recursive}"


CORPUS_CHILD = COUNTER + textwrap.dedent("""
    import numpy as np
    import s2s
    from numba.core.registry import CPUDispatcher
    from cases.corpus import CASES, case_ids, case_rng
    from cases.fd import assert_close
    results, mismatches = {{}}, []
    for k, (cid, (fn, factory, argnums)) in enumerate(zip(case_ids(CASES), CASES)):
        if k % {shards} != {shard}:
            continue
        args = factory(case_rng(cid))
        before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        jitted = s2s.jit(s2s.grad(fn, argnums=argnums))
        try:
            got = jitted(*args)
        except s2s.S2SError as exc:          # refused the same way in both processes
            results[cid] = ["refused: " + type(exc).__name__]
            continue
        results[cid] = leaves(got)
        for i, (a, b) in enumerate(zip(args, before)):
            if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True):
                mismatches.append(f"{{cid}}: jit(grad) modified argument {{i}}")
        compiled = [g.fn for key, g in jitted._gens.items() if key[0] == len(args)]
        if compiled and not all(isinstance(c, CPUDispatcher) and c.targetoptions.get("nopython") is True
                                and c.nopython_signatures for c in compiled):
            mismatches.append(f"{{cid}}: jit(grad) is not nopython machine code: {{compiled}}")
        want = s2s.grad(fn, argnums=argnums)(*args)       # the generated Python, unjitted
        try:
            for g, w in zip(leaves(got), leaves(want), strict=True):
                assert_close(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12, what=cid)
        except (AssertionError, ValueError) as exc:
            mismatches.append(f"{{cid}}: jit(grad) != grad: {{exc}}")
    print(json.dumps({{"compiles": compiles.top, "results": results, "mismatches": mismatches}}))
""")

SHARDS = 3     # (each process compiles s2s's helpers again: fewer, longer shards)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_warm_cache_whole_corpus_jit_grad(tmp_path, shard):
    """Every corpus case's jit(grad) twice, in two processes on one cache: each equals the
    unjitted grad (1e-12), leaves its arguments as they were, is nopython machine code, and the
    second process loads every compiled function (no compilation, no crash) and gives
    bit-identical gradients.  (This is the corpus's jit(grad) == grad test: one compilation of each
    case serves all the checks; tests/jit/test_jit.py checks jit(f) of the corpus.)"""
    code = CORPUS_CHILD.format(shards=SHARDS, shard=shard)
    first, _ = _child(code, tmp_path / "cache")
    assert not first["mismatches"], "\n".join(first["mismatches"])
    assert sum(not str(v[0]).startswith("refused") for v in first["results"].values()) >= len(first["results"]) - 2
    second, _ = _child(code, tmp_path / "cache")
    assert not second["mismatches"], "\n".join(second["mismatches"])
    assert second["compiles"] == 0, f"{second['compiles']} Numba compilations in the warm process"
    assert set(second["results"]) == set(first["results"])
    for cid, leaves in first["results"].items():
        assert len(leaves) == len(second["results"][cid]), cid
        for a, b in zip(leaves, second["results"][cid]):
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=cid)
