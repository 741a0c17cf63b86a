"""A warm disk cache gives what generating afresh gives, whatever the module globals are.

Two processes share one cache; the second runs with other values of the module globals (read from
an environment variable), and its answers are compared with a third process that has the second's
values and an empty cache.  The globals reach the generated code every way they can: a closure
variable with the name of a module global (the same small int object in the first process), a
helper's closure, a helper's default, a bool, string, None, tuple or dict global deciding a branch
or folded when s2s reads the code, an array, an object's attribute, another module's global and
helper, a functools.partial.  A last test runs programs of tests/real with every float global of
their modules scaled in the second process.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cases import paths
from cases.paths import ROOT

ENVMOD = textwrap.dedent('''
    import functools
    import os

    import numpy as np

    import envother

    K = int(os.environ["S2S_TEST_K"])
    k = K                       # 2 in the first process: the same object as the closure's k below
    c = K                       # the name of a helper's closure variable
    FLAG = K == 2
    SCALE = float(K)
    NAME = "square" if K == 2 else "cube"
    PAIR = (K, 1.0)
    TABLE = {"a": float(K), "b": 1.0}
    W = np.arange(1.0, 4.0) * K
    NOTHING = None if K == 2 else 1.5


    def make(k):
        def inner(x):
            return np.sum(k * x * x)
        return inner


    closure_same_name = make(2)


    def make_helper(c):
        def helper(x):
            return c * x
        return helper


    helper = make_helper(2 if K == 2 else 7)


    def uses_helper_closure(x):
        return np.sum(helper(x) * x) + c * np.sum(x)


    def scaled(x, s=SCALE):
        return s * x


    def uses_helper_default(x):
        return np.sum(scaled(x) * x)


    def branch_on_bool(x):
        if FLAG:
            return np.sum(x * x)
        return np.sum(3.0 * x * x)


    def branch_on_string(x):
        if NAME == "square":
            return np.sum(x * x)
        return np.sum(x * x * x)


    def folded_tuple_and_dict(x):
        return np.sum(PAIR[0] * x * x) + TABLE["a"] * np.sum(x)


    def global_array(x):
        return np.sum(W * x * x)


    def none_check(x):
        if NOTHING is None:
            return np.sum(x * x)
        return np.sum(NOTHING * x * x)


    class Config:
        pass


    cfg = Config()
    cfg.scale = float(K)


    def object_attribute(x):
        return np.sum(cfg.scale * x * x)


    def other_module_helper(x):
        return np.sum(envother.times_k(x) * x)


    def other_module_attribute(x):
        return np.sum(envother.k * x * x)


    partial_scaled = functools.partial(scaled, s=float(K) + 0.5)


    def uses_partial(x):
        return np.sum(partial_scaled(x) * x)
''')

ENVOTHER = textwrap.dedent('''
    import os
    k = int(os.environ["S2S_TEST_K"])     # 2 in the first process: the same object as envmod.k


    def times_k(x):
        return k * x
''')

CHILD = textwrap.dedent('''
    import json, sys
    import numpy as np
    import s2s, s2s.pipeline as pipeline
    import envmod
    x = np.array([1.0, 2.0, 3.0])
    xs = np.stack([x, 2 * x])
    out = {{}}
    for name in {names!r}:
        f = getattr(envmod, name)
        runs = [("grad", lambda: s2s.grad(f)(x)), ("vmap", lambda: s2s.vmap(s2s.grad(f))(xs))]
        if name in {jitted!r}:
            runs.append(("jit", lambda: s2s.jit(s2s.grad(f))(x)))
        for what, run in runs:
            loaded = pipeline.STATS["loaded"]
            out[name + ":" + what] = [np.asarray(run()).tolist(), pipeline.STATS["loaded"] - loaded]
    print(json.dumps(out))
''')

NAMES = ["closure_same_name", "uses_helper_closure", "uses_helper_default", "branch_on_bool", "branch_on_string",
         "folded_tuple_and_dict", "global_array", "none_check", "object_attribute", "other_module_helper",
         "other_module_attribute", "uses_partial"]
JITTED = ["closure_same_name"]


def _run(code: str, cache, **env) -> dict:
    res = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, S2S_CACHE_DIR=str(cache), **env),
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_warm_cache_answers_as_a_fresh_one_when_module_globals_differ(tmp_path):
    """Process 1 (K=2) fills the cache; process 2 (K=5) on it must answer as process 3 (K=5, empty
    cache): grad, vmap(grad) and jit(grad) of functions reading the globals every way they can."""
    (tmp_path / "envmod.py").write_text(ENVMOD)
    (tmp_path / "envother.py").write_text(ENVOTHER)
    code = CHILD.format(names=NAMES, jitted=JITTED)
    path = paths.pythonpath(str(tmp_path))     # the child imports envmod from there
    first = _run(code, tmp_path / "cache", S2S_TEST_K="2", PYTHONPATH=path)
    second = _run(code, tmp_path / "cache", S2S_TEST_K="5", PYTHONPATH=path)
    fresh = _run(code, tmp_path / "fresh", S2S_TEST_K="5", PYTHONPATH=path)
    for case in fresh:
        assert second[case][0] == fresh[case][0], (case, "warm cache", second[case][0], "fresh", fresh[case][0])
    # not vacuous: the globals change the answers of every function but the closure's, and the warm
    # cache was used (the closure's code is the same in both processes and is loaded, not regenerated)
    changed = {case.split(":")[0] for case in fresh if first[case][0] != fresh[case][0]}
    assert changed == set(NAMES) - {"closure_same_name"}, changed
    for what in ("grad", "vmap", "jit"):
        assert second["closure_same_name:" + what] == [first["closure_same_name:" + what][0], 1]


REAL_CHILD = textwrap.dedent('''
    import importlib, json, sys, types
    import numpy as np
    import s2s, s2s.pipeline as pipeline
    from real.harness import batch_args
    scale = float(sys.argv[1])
    out = {{}}
    modules = {{}}
    for case_id, checks in {cases!r}:
        modname, _, name = case_id.partition(".")
        if modname not in modules:
            mod = modules[modname] = importlib.import_module("real." + modname)
            def scaled(value):
                if isinstance(value, float) or (isinstance(value, np.ndarray) and value.dtype.kind == "f"):
                    return value * scale
                return value
            # every float global of the module, and every float default of its functions, scaled
            for attr, value in list(vars(mod).items()):
                if isinstance(value, types.FunctionType) and value.__module__ == mod.__name__:
                    if value.__defaults__:
                        value.__defaults__ = tuple(scaled(v) for v in value.__defaults__)
                    if value.__kwdefaults__:
                        value.__kwdefaults__ = {{k: scaled(v) for k, v in value.__kwdefaults__.items()}}
                elif not attr.startswith("_") and not isinstance(value, bool):
                    setattr(mod, attr, scaled(value))
        mod = modules[modname]
        case = next(c for c in mod.CASES if c["name"] == name)
        args, argnums, kwargs = case["args"](0), case.get("argnums", 0), case.get("kwargs", {{}})
        fn = case["fn"]
        res = {{}}
        for check in checks:
            try:
                if check == "grad":
                    got = s2s.grad(fn, argnums)(*args, **kwargs)
                elif check == "jit":
                    got = s2s.jit(s2s.grad(fn, argnums))(*args, **kwargs)
                else:
                    batched, _ = batch_args(case["args"], case["in_axes"], 3)
                    got = s2s.vmap(s2s.grad(fn, argnums), in_axes=case["in_axes"])(*batched, **kwargs)
                leaves = []
                def walk(t):
                    if isinstance(t, dict):
                        [walk(t[k]) for k in sorted(t)]
                    elif isinstance(t, (list, tuple)):
                        [walk(v) for v in t]
                    else:
                        leaves.append(np.asarray(t, dtype=float).tolist())
                walk(got)
                res[check] = leaves
            except Exception as exc:
                res[check] = "error: " + type(exc).__name__
        out[case_id] = res
    print(json.dumps(out))
''')

# a few fast programs whose module globals reach the generated code, for CI; the sweep is slow
QUICK_REAL = [("gp.gp_objective_lambda", ["grad"]), ("logreg.logistic_nll", ["grad", "vmap"])]


def _real_cases() -> list:
    import importlib
    cases = []
    for modname in ["rnn", "lstm", "neural_net", "mixtures", "hmm", "ica", "fluidsim", "logreg", "gp", "vi",
                    "models", "idioms", "comprehensions", "numerics", "plain_style", "views"]:
        mod = importlib.import_module("real." + modname)
        for case in mod.CASES:
            checks = [c for c in ("grad", "jit", "vmap") if c in case.get("checks", ("grad",))]
            cases.append((f"{modname}.{case['name']}", checks))
    return cases


def _differential_real(tmp_path, cases) -> None:
    code = REAL_CHILD.format(cases=cases)
    res = {}
    for label, cache, scale in (("first", "cache", "1.0"), ("second", "cache", "1.5"), ("fresh", "fresh", "1.5")):
        env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / cache), PYTHONPATH=paths.pythonpath())
        r = subprocess.run([sys.executable, "-c", code, scale], env=env,
                           capture_output=True, text=True, timeout=3000, cwd=ROOT)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        res[label] = json.loads(r.stdout.strip().splitlines()[-1])
    differ = 0
    for case_id, checks in res["fresh"].items():
        for check, value in checks.items():
            got = res["second"][case_id][check]
            assert isinstance(got, str) == isinstance(value, str), (case_id, check, got, value)
            if isinstance(value, str):
                continue
            assert len(got) == len(value), (case_id, check)
            for a, b in zip(got, value):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=f"{case_id} {check}")
            differ += res["first"][case_id][check] != value
    assert differ, "the scaled globals changed no answer: the comparison proves nothing"


def test_real_programs_with_scaled_globals_answer_as_a_fresh_cache(tmp_path):
    """A few programs of tests/real, their modules' float globals and defaults scaled in the second
    process: grad and vmap(grad) on the warm cache equal a fresh cache's."""
    _differential_real(tmp_path, QUICK_REAL)


@pytest.mark.slow
def test_every_real_program_with_scaled_globals_answers_as_a_fresh_cache(tmp_path):
    """Every program of tests/real, grad / jit(grad) / vmap(grad), as above."""
    _differential_real(tmp_path, _real_cases())
