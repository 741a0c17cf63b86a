"""s2s's own helpers are compiled once per signature and kept in s2s's disk cache.

A user function's compile then loads a helper's machine code (unbroadcast, add_at, the matmul
cotangents, ...) instead of typing and lowering it again: a new function on a machine where s2s
has compiled before starts from those.  Each process here is new; the second one compiles a
function it has never seen, on a cache holding only what the first left, and must load every
helper it needs from there, with the answers of the unjitted transform.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core import caching, event
    import s2s

    def first(w, X, y):
        W = np.reshape(w[:4], (2, 2))
        h = np.tanh(X @ W) + w[4:]
        return np.mean((np.sum(h, axis=1) - y) ** 2)

    def second(w, X, y):              # another function: the same helpers, new generated code
        W = np.reshape(w[:4], (2, 2))
        h = np.sin(X @ W) * w[4:]
        return np.sum(np.abs(np.sum(h, axis=1) - y))

    compiled, loaded = set(), set()

    class Compiles(event.Listener):          # (the event fires only for a compile, not a load)
        def on_start(self, e):
            disp = e.data["dispatcher"]
            if getattr(disp.py_func, "__module__", "").startswith("s2s."):
                compiled.add(f"{disp.py_func.__qualname__}{e.data['args']}")

        def on_end(self, e):
            pass

    event.register("numba:compile", Compiles())
    real_load = caching.Cache.load_overload

    def load(self, sig, target_context):
        cres = real_load(self, sig, target_context)
        if cres is not None and getattr(self._py_func, "__module__", "").startswith("s2s."):
            loaded.add(f"{self._py_func.__qualname__}{tuple(sig)}")
        return cres
    caching.Cache.load_overload = load
    fn = first if sys.argv[1] == "first" else second
    rng = np.random.default_rng(0)
    w, X, y = rng.normal(size=6), rng.normal(size=(5, 2)), rng.normal(size=5)
    got = s2s.jit(s2s.grad(fn), wait=True)(w, X, y)
    want = s2s.grad(fn)(w, X, y)
    print(json.dumps({"got": got.tolist(), "want": want.tolist(), "loaded": sorted(loaded),
                      "compiled": sorted(compiled)}))
""")


def _run(tmp_path, which):
    script = tmp_path / "helpers_script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"), S2S_QUIET="1")
    p = subprocess.run([sys.executable, str(script), which], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_new_function_loads_the_helpers_an_earlier_process_compiled(tmp_path):
    first = _run(tmp_path, "first")
    np.testing.assert_allclose(first["got"], first["want"], rtol=1e-12, atol=1e-12)
    assert first["compiled"] and not first["loaded"], "the first process compiles s2s's helpers"
    assert os.listdir(tmp_path / "cache" / "numba"), "their machine code is in s2s's own cache"
    second = _run(tmp_path, "second")
    np.testing.assert_allclose(second["got"], second["want"], rtol=1e-12, atol=1e-12)
    assert second["loaded"], second
    # the slice cotangents, the broadcast's and the matmul's come from the disk (helpers whose
    # implementation closes over a function are not cached: Numba keys the cache on pickled closures)
    for helper in ("_add_at.", "_unbroadcast.", "_matmul_vjp_b."):
        assert any(name.startswith(helper) for name in second["loaded"]), (helper, second["loaded"])
        assert not any(name.startswith(helper) for name in second["compiled"]), (helper, second["compiled"])
    assert len(second["compiled"]) < len(first["compiled"])


def _machine_code_files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.nbc"))


def _forget_generated_code(cache):
    """Everything but s2s's helpers' machine code: the next process generates and compiles the
    user's function again, typing every helper call (a load from the helper cache, or a compile)."""
    for entry in cache.iterdir():
        if entry.name != "numba":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def test_helpers_are_found_again_and_nothing_new_is_written(tmp_path):
    """Each cached helper is found again by the next process that compiles a function calling it:
    none is compiled and written anew (an implementation closing over a compiled function would
    pickle with an id of its process, so its cache entry would never be found, and each process
    would add a file: np.tanh's and np.sin's array implementations did)."""
    cache = tmp_path / "cache"
    _run(tmp_path, "first")
    _forget_generated_code(cache)
    _run(tmp_path, "second")
    before = _machine_code_files(cache / "numba")
    _forget_generated_code(cache)
    again = _run(tmp_path, "second")
    np.testing.assert_allclose(again["got"], again["want"], rtol=1e-12, atol=1e-12)
    assert again["loaded"]
    assert before and _machine_code_files(cache / "numba") == before
