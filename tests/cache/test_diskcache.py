"""The on-disk cache across processes: no regeneration, no recompilation, corruption rebuilt."""
import glob
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from cases import paths

pytest.importorskip("numba")

USER_MODULE = textwrap.dedent("""
    import numpy as np

    def loss(x):
        s = 0.0
        for i in range(x.shape[0]):
            if x[i] > 0:
                s = s * 0.999 + np.sin(x[i]) * x[i]
            else:
                s = s * 0.998 - x[i] ** 2
        return s
""")

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import s2s, s2s.pipeline
    import usermod
    x = np.linspace(-1.0, 1.0, 9)
    g = s2s.jit(s2s.grad(usermod.loss))
    out = g(x)
    ref = s2s.grad(usermod.loss)(x)
    fn = g.generated_for_args(x).fn
    print(json.dumps({{"stats": s2s.pipeline.STATS, "ok": bool(np.allclose(out, ref, rtol=1e-12)),
                      "hits": sum(fn.stats.cache_hits.values()), "misses": sum(fn.stats.cache_misses.values()),
                      "path": g.generated_for_args(x).path}}))
""")


def _run(tmp_path, env):
    code = CHILD.format()
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "usermod.py").write_text(USER_MODULE)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=paths.pythonpath(str(tmp_path / "mod")))     # the child imports its module from there
    return tmp_path, env


def test_second_process_neither_regenerates_nor_recompiles(setup):
    tmp_path, env = setup
    first = _run(tmp_path, env)
    assert first["ok"] and first["stats"]["generated"] >= 1
    second = _run(tmp_path, env)
    assert second["ok"]
    assert second["stats"]["generated"] == 0, second      # source came from the disk index
    assert second["stats"]["loaded"] >= 1
    assert second["hits"] >= 1 and second["misses"] == 0, second   # Numba loaded machine code
    mode = stat.S_IMODE(os.stat(tmp_path / "cache").st_mode)
    assert mode == 0o700


def test_truncated_generated_file_is_rebuilt_not_run(setup):
    tmp_path, env = setup
    first = _run(tmp_path, env)
    path = first["path"]
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text[: len(text) // 2])            # a torn write
    again = _run(tmp_path, env)
    assert again["ok"]
    assert again["stats"]["generated"] >= 1       # detected by its content hash, rebuilt


def test_corrupt_index_entry_is_rebuilt(setup):
    tmp_path, env = setup
    _run(tmp_path, env)
    for entry in glob.glob(str(tmp_path / "cache" / "index" / "*.json")):
        with open(entry, "w") as f:
            f.write("{not json")
    again = _run(tmp_path, env)
    assert again["ok"] and again["stats"]["generated"] >= 1
    after = _run(tmp_path, env)
    assert after["stats"]["generated"] == 0


def test_changed_source_invalidates_the_entry(setup):
    tmp_path, env = setup
    _run(tmp_path, env)
    (tmp_path / "mod" / "usermod.py").write_text(USER_MODULE.replace("0.999", "0.995"))
    again = _run(tmp_path, env)
    assert again["ok"] and again["stats"]["generated"] >= 1


def test_concurrent_writers(setup):
    tmp_path, env = setup
    code = CHILD.format()
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["ok"]
    for entry in glob.glob(str(tmp_path / "cache" / "index" / "*.json")):
        with open(entry) as f:
            json.load(f)                           # every entry is whole
    assert _run(tmp_path, env)["stats"]["generated"] == 0


SYMBOLS_MODULE = textwrap.dedent("""
    import numpy as np

    def squared_error(w, x, y):
        r = x @ w - y
        return 0.5 * r * r

    def tanh_margin(w, x, y):
        return np.tanh(y * (x @ w)) + 0.1 * np.sum(w * w)
""")

SYMBOLS_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import s2s
    import usermod2
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=11) / 3, rng.normal(size=(37, 11)), np.sign(rng.normal(size=37))
    for name, argnums in {jobs!r}:
        fn = getattr(usermod2, name)
        got = s2s.jit(s2s.vmap(s2s.grad(fn, argnums=argnums), in_axes=(None, 0, 0)))(w, x, y)
        want = s2s.vmap(s2s.grad(fn, argnums=argnums), in_axes=(None, 0, 0))(w, x, y)
        for a, b in zip(got if isinstance(argnums, tuple) else [got], want if isinstance(argnums, tuple) else [want]):
            assert np.allclose(a, b, rtol=1e-11, atol=1e-13), (name, argnums, float(np.abs(a - b).max()))
""")


def test_cached_code_of_two_processes_runs_together_in_a_third(tmp_path):
    # code cached by two processes, loaded together by a third, must each run their own
    # helpers (Numba links helpers by name; see s2s/backends/numba_cache.py)
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "usermod2.py").write_text(SYMBOLS_MODULE)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=paths.pythonpath(str(tmp_path / "mod")))     # the child imports its module from there
    jobs = [[("squared_error", 0)], [("tanh_margin", (0, 1))], [("squared_error", 0), ("tanh_margin", (0, 1))]]
    for job in jobs:
        code = SYMBOLS_CHILD.format(jobs=job)
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]


def test_numba_function_ids_differ_between_processes():
    # the names of compiled closures (qualname$uid) must not repeat across processes: two cached
    # libraries defining dot_impl$40 with different code made one run the other's
    code = ("import s2s.backends.numba_cpu\nfrom numba.core import bytecode\n"
            "print(next(bytecode.FunctionIdentity._unique_ids))")
    ids = [int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              check=True).stdout.split()[-1]) for _ in range(2)]
    assert ids[0] != ids[1] and min(ids) > 2 ** 12


def test_concurrent_numba_cache_saves_never_cross_entries(tmp_path):
    # Two processes add different signatures of one function at once: B's whole save runs
    # while A is between its index and its data (Numba's order). Each entry must still
    # point at its own code; an entry may be lost (a recompile later), never crossed.
    import s2s.backends.numba_cache  # noqa: F401 - applies the fix
    from numba.core import caching
    a, b = (caching.IndexDataCacheFile(str(tmp_path), "mod.f-1.py311", source_stamp=(1.0, 10)) for _ in range(2))
    stale = b._load_index()
    b_load = b._load_index
    b_reads = [stale]
    b._load_index = lambda: b_reads.pop() if b_reads else b_load()   # B read the index before A saved
    a_save_data = a._save_data
    interleaved = []

    def a_save_data_with_b_in_between(name, data):
        if not interleaved:
            interleaved.append(True)
            b.save("sig-b", b"code of b")
        a_save_data(name, data)
    a._save_data = a_save_data_with_b_in_between
    a.save("sig-a", b"code of a")
    assert interleaved
    final = caching.IndexDataCacheFile(str(tmp_path), "mod.f-1.py311", source_stamp=(1.0, 10))
    entries = final._load_index()
    assert entries and len(set(entries.values())) == len(entries)
    for key, want in (("sig-a", b"code of a"), ("sig-b", b"code of b")):
        if key in entries:
            assert final.load(key) == want
