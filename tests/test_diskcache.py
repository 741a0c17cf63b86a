"""The on-disk cache across processes: no regeneration, no recompilation, corruption rebuilt."""
import glob
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

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
    sys.path.insert(0, {moddir!r})
    import s2s, s2s.api
    import usermod
    x = np.linspace(-1.0, 1.0, 9)
    g = s2s.jit(s2s.grad(usermod.loss))
    out = g(x)
    ref = s2s.grad(usermod.loss)(x)
    fn = g.generated_for_args(x).fn
    print(json.dumps({{"stats": s2s.api.STATS, "ok": bool(np.allclose(out, ref, rtol=1e-12)),
                      "hits": sum(fn.stats.cache_hits.values()), "misses": sum(fn.stats.cache_misses.values()),
                      "path": g.generated_for_args(x).path}}))
""")


def _run(tmp_path, env):
    code = CHILD.format(moddir=str(tmp_path / "mod"))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "usermod.py").write_text(USER_MODULE)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
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
    code = CHILD.format(moddir=str(tmp_path / "mod"))
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
