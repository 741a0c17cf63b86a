"""The caches answer for the code and the arguments they were given, nothing else.

- A body registered in linecache (REPL, doctest) under a name another body had, and a
  module edited and reloaded without its modification time changing, get their own
  derivatives: the disk key holds the code, not only where it came from.
- An edited `@s2s.adjoint` template module is another derivative in the next process.
- Array subclasses whose operators mean something else (np.matrix, masked arrays) are refused,
  not differentiated three different ways.
- A dropped function frees what it captured: the in-memory cache holds source functions weakly.
"""
import gc
import importlib
import linecache
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import s2s
import s2s.pipeline


@pytest.fixture
def fresh_caches(monkeypatch, tmp_path):
    """An empty in-memory cache over an empty disk cache; `new_process()` empties the in-memory
    one again (what a second process starts with), keeping the disk."""
    monkeypatch.setattr(s2s.pipeline, "_CACHE", type(s2s.pipeline._CACHE)())
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))

    def new_process():
        monkeypatch.setattr(s2s.pipeline, "_CACHE", type(s2s.pipeline._CACHE)())
    return new_process


def _from_linecache(text: str, filename: str):
    """A function whose source lives only in linecache, as in a REPL or a doctest."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    glb = {"np": np}
    exec(compile(text, filename, "exec"), glb)
    return glb["f"]


@pytest.mark.parametrize("transform", ["grad", "jit_grad"])
def test_two_bodies_with_one_name_in_linecache_get_their_own_derivatives(fresh_caches, transform):
    x = np.array([0.5, -1.5])
    make = (lambda f: s2s.grad(f)) if transform == "grad" else (lambda f: s2s.jit(s2s.grad(f)))
    name = "<doctest s2s_identity[0]>"
    f1 = _from_linecache("def f(x):\n    return np.sum(x ** 2)\n", name)
    np.testing.assert_allclose(make(f1)(x), 2.0 * x, rtol=1e-12)
    fresh_caches()
    f2 = _from_linecache("def f(x):\n    return np.sum(np.sin(x))\n", name)
    np.testing.assert_allclose(make(f2)(x), np.cos(x), rtol=1e-12)


def test_an_edit_that_keeps_the_modification_time_is_seen_after_reload(fresh_caches, tmp_path, monkeypatch):
    path = tmp_path / "same_mtime_mod.py"
    path.write_text("import numpy as np\n\ndef loss(x):\n    return np.sum(x ** 2)\n")
    stamp = os.stat(path).st_mtime_ns
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    mod = importlib.import_module("same_mtime_mod")
    try:
        x = np.array([0.5, -1.5])
        np.testing.assert_allclose(s2s.grad(mod.loss)(x), 2.0 * x, rtol=1e-12)
        path.write_text("import numpy as np\n\ndef loss(x):\n    return np.sum(3.0 * x ** 2 + x)\n")
        os.utime(path, ns=(stamp, stamp))          # (a checkout, a copy with -p, a coarse clock)
        mod = importlib.reload(mod)
        np.testing.assert_allclose(s2s.grad(mod.loss)(x), 6.0 * x + 1.0, rtol=1e-12)
    finally:
        sys.modules.pop("same_mtime_mod", None)


RULES_MODULE = """
import numpy as np
import s2s

def cube(x):
    return x * x * x

@s2s.adjoint(cube)
def cube_adjoint(y, x):
    d[x] = d[y] * {factor} * x * x
"""

USER_SCRIPT = """
import json, sys
import numpy as np
import s2s
from cube_rules import cube

def loss(x):
    return np.sum(cube(x))

x = np.array([1.0, 2.0])
print(json.dumps([s2s.grad(loss)(x).tolist(), s2s.value_and_grad(loss)(x)[1].tolist()]))
"""


def test_an_edited_adjoint_template_is_seen_by_the_next_process(tmp_path):
    (tmp_path / "user_script.py").write_text(USER_SCRIPT)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    x = np.array([1.0, 2.0])
    for factor in ("3.0", "30.0"):       # (the second "template" is wrong on purpose: it must show)
        (tmp_path / "cube_rules.py").write_text(RULES_MODULE.format(factor=factor))
        res = subprocess.run([sys.executable, str(tmp_path / "user_script.py")], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        import json
        for got in json.loads(res.stdout.strip().splitlines()[-1]):
            np.testing.assert_allclose(got, float(factor) * x * x, rtol=1e-12, err_msg=f"template factor {factor}")


# ----- array subclasses -------------------------------------------------------------------------

def sum_of_squares(x):
    return np.sum(x * x)


@pytest.mark.parametrize("make", [s2s.grad, s2s.jit, s2s.vmap, s2s.jacfwd, s2s.hessian,
                                  lambda f: s2s.jit(s2s.grad(f))],
                         ids=["grad", "jit", "vmap", "jacfwd", "hessian", "jit_grad"])
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
@pytest.mark.parametrize("build", [lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]),
                                   lambda: np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])],
                         ids=["matrix", "masked"])
def test_array_subclasses_that_change_operators_are_refused(make, build):
    value = build()
    with pytest.raises(s2s.ArgumentError, match="subclass of np.ndarray.*np.asarray"):
        make(sum_of_squares)(value)
    with pytest.raises(s2s.ArgumentError, match="subclass of np.ndarray"):
        s2s.grad(lambda p: sum_of_squares(p["w"]))({"w": value})       # inside a pytree too


def test_a_memmap_is_an_array(tmp_path):
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=(3,))
    mm[:] = [1.0, -2.0, 0.5]
    for make in (s2s.grad, lambda f: s2s.jit(s2s.grad(f))):
        got = make(sum_of_squares)(mm)
        assert type(got) is np.ndarray
        np.testing.assert_allclose(got, 2.0 * np.asarray(mm), rtol=1e-12)


# ----- a dropped function frees what it captured --------------------------------------------

def _closure_over(X):
    def loss(w):
        return np.sum((X @ w) ** 2)
    return loss


def _tree_closure_over(X):
    def loss(p):
        return np.sum((X @ p["w"]) ** 2) + p["b"] ** 2
    return loss


def _use_and_drop(make, tree=False, batched=False):
    X = np.random.default_rng(0).standard_normal((4, 3))
    captured = weakref.ref(X)
    f = (_tree_closure_over if tree else _closure_over)(X)
    w = np.ones((2, 3)) if batched else np.ones(3)
    make(f)({"w": w, "b": 1.0} if tree else w)
    return captured


@pytest.mark.parametrize("make,tree,batched", [
    (s2s.grad, False, False), (s2s.value_and_grad, False, False), (s2s.vmap, False, True),
    (s2s.jacfwd, False, False), (s2s.jacrev, False, False), (s2s.hessian, False, False),
    (s2s.grad, True, False)], ids=["grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian", "pytree_grad"])
def test_a_dropped_closure_frees_the_arrays_it_captured(fresh_caches, make, tree, batched):
    captured = _use_and_drop(make, tree, batched)
    for _ in range(4):            # (weak references let go one generation at a time)
        gc.collect()
    assert captured() is None, "the transformed closure's captured array is still alive"


def test_the_cache_still_serves_a_function_that_lives(fresh_caches, monkeypatch):
    calls = []
    real = s2s.pipeline.generate
    monkeypatch.setattr(s2s.pipeline, "generate", lambda *a, **k: calls.append(a) or real(*a, **k))
    f = _closure_over(np.eye(3))
    for _ in range(3):
        s2s.grad(f)(np.ones(3))            # a new transform object each time, one generation
        gc.collect()
    assert len(calls) == 1
