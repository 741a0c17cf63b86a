"""s2s's caches under hostile or broken conditions: nothing planted runs, nothing damaged stops jit.

- NUMBA_CACHE_DIR pointing at a shared folder: the machine code of s2s's functions stays in s2s's
  checked private cache, and an index pickle planted in the shared folder is never unpickled;
- a symlink planted where s2s writes a cache file (a "did not compile" marker, an index entry, a
  generated module): the file is replaced, the symlink's target never written;
- a truncated or garbage Numba index (.nbi) or s2s index entry: a miss, rebuilt, in every process;
- a full disk under the cache (simulated: every file or folder created there fails with ENOSPC):
  jit compiles in memory, with one warning, in every process.
Where a cache is involved, two processes share it (subprocesses on one S2S_CACHE_DIR).
"""
import glob
import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

from cases.paths import ROOT

# one small function: jit(grad(f)) against grad(f) (the generated Python) and NumPy's derivative
CHILD = textwrap.dedent('''
    import json, sys, warnings
    import numpy as np
    {prelude}
    import s2s

    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.1, 1.0, 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = s2s.jit(s2s.grad(f))(x)
    expected = np.sin(x) + x * np.cos(x)
    print(json.dumps({{"ok": bool(np.allclose(got, expected, rtol=1e-12, atol=0)) and
                               bool(np.allclose(got, s2s.grad(f)(x), rtol=1e-12, atol=0)),
                      "warnings": [str(w.message) for w in caught if "s2s" in str(w.message)]}}))
''')


def _child(cache, prelude: str = "", **env) -> dict:
    script = os.path.join(os.path.dirname(str(cache)), "child_full.py" if prelude else "child.py")
    with open(script, "w") as f:
        f.write(CHILD.format(prelude=prelude))
    res = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=600, cwd=ROOT,
                         env=dict(os.environ, S2S_CACHE_DIR=str(cache), **env))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


class _Payload:
    """Unpickling this creates a folder: the proof that a planted pickle ran."""

    def __init__(self, proof):
        self.proof = proof

    def __reduce__(self):
        return (os.mkdir, (self.proof,))


def test_numba_cache_dir_is_not_used_for_s2s_code_and_a_planted_index_never_runs(tmp_path):
    """With NUMBA_CACHE_DIR set to a shared folder, s2s's machine code goes to its own cache (the
    shared folder gets none of it); an index planted in the shared folder where Numba would look
    for the generated function is not unpickled by a second process."""
    from numba.core.caching import _CacheLocator
    shared, cache, proof = tmp_path / "shared", tmp_path / "cache", tmp_path / "planted-pickle-ran"
    shared.mkdir()
    first = _child(cache, NUMBA_CACHE_DIR=str(shared))
    assert first["ok"]
    assert not glob.glob(str(shared / "**" / "*.nb*"), recursive=True)
    indexes = glob.glob(str(cache / "v*" / "__pycache__" / "*.nbi"))
    assert indexes                        # (s2s's machine code is in its own cache)
    for index in indexes:                 # where Numba's NUMBA_CACHE_DIR locator looks for it
        module = os.path.dirname(os.path.dirname(index))
        target = shared / _CacheLocator.get_suitable_cache_subpath(os.path.join(module, "x.py"))
        target.mkdir(parents=True, exist_ok=True)
        (target / os.path.basename(index)).write_bytes(pickle.dumps(_Payload(str(proof))))
    second = _child(cache, NUMBA_CACHE_DIR=str(shared))
    assert second["ok"] and not proof.exists()


def test_a_failure_marker_replaces_a_planted_symlink_and_never_writes_its_target(tmp_path, monkeypatch):
    """remember_failure (jit's "this variant did not compile" record) where a symlink to another
    file was planted: the other file keeps its content, and the marker is a file of ours."""
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    from s2s.backends import numba_cache
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    generated, args = str(tmp_path / "cache" / "v0" / "f_grad_numba_0123.py"), (np.ones(3),)
    marker = numba_cache._failure_marker(generated, args)
    os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
    os.symlink(victim, marker)
    assert not numba_cache.known_to_fail(generated, args)      # (a planted marker is not trusted)
    numba_cache.remember_failure(generated, args)
    assert victim.read_text() == "precious"
    assert not os.path.islink(marker) and numba_cache.known_to_fail(generated, args)


def test_index_entries_and_generated_modules_replace_planted_symlinks(tmp_path, monkeypatch):
    """The disk cache's index entry and a generated module written where a symlink was planted:
    the symlinks' targets keep their content."""
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    import hashlib

    from s2s.codegen import diskcache, emit
    from s2s.codegen.version import s2s_version
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    source = "def g(x):\n    return x\n"
    folder = os.path.join(emit.cache_dir(), "v" + s2s_version()[:8])
    os.makedirs(folder, mode=0o700, exist_ok=True)
    planted = os.path.join(folder, f"g_{hashlib.sha256(source.encode()).hexdigest()[:16]}.py")
    os.symlink(victim, planted)
    path = emit.write_module(source, "g")
    assert path == planted and not os.path.islink(path) and open(path).read() == source
    key = "0" * 32
    os.symlink(victim, diskcache._index_path(key))
    diskcache.store(key, path, "g", {}, {}, [], "g")
    assert victim.read_text() == "precious"
    assert json.load(open(diskcache._index_path(key)))["fname"] == "g"


def test_damaged_numba_and_s2s_index_files_are_misses_in_every_later_process(tmp_path):
    """A truncated Numba index, a garbage one, and garbage s2s index entries left by a first process:
    the next process treats them as misses, compiles again and answers right, without warnings."""
    cache = tmp_path / "cache"
    assert _child(cache)["ok"]
    nbis = glob.glob(str(cache / "v*" / "__pycache__" / "*.nbi"))
    entries = glob.glob(str(cache / "index" / "*.json"))
    assert nbis and entries
    for i, path in enumerate(nbis):
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2] if i % 2 == 0 else b"\x80\x05garbage" * 7)
    for i, path in enumerate(entries):
        open(path, "wb").write(b'{"path": ' if i % 2 == 0 else b"\xff\xfe\x00garbage")
    again = _child(cache)
    assert again["ok"] and not again["warnings"]


FULL_DISK = textwrap.dedent('''
    import builtins, errno, os
    _full = (os.path.realpath(os.environ["S2S_CACHE_DIR"]), "s2s-cache-")
    def _is_full(path):
        try:
            p = os.path.realpath(os.fspath(path))
        except TypeError:
            return False
        return p.startswith(_full[0]) or _full[1] in p
    def _enospc(path):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    _open, _mkdir, _bopen = os.open, os.mkdir, builtins.open
    def full_open(path, flags, *a, **k):
        if flags & os.O_CREAT and _is_full(path):
            raise _enospc(path)
        return _open(path, flags, *a, **k)
    def full_mkdir(path, *a, **k):
        if _is_full(path):
            raise _enospc(path)
        return _mkdir(path, *a, **k)
    def full_bopen(file, mode="r", *a, **k):
        if any(c in mode for c in "wax+") and _is_full(file):
            raise _enospc(file)
        return _bopen(file, mode, *a, **k)
    os.open, os.mkdir, builtins.open = full_open, full_mkdir, full_bopen
''')


def test_a_full_disk_under_the_cache_compiles_in_memory_with_one_warning(tmp_path):
    """Every file or folder created under the cache (and under a private fallback folder) fails
    with ENOSPC: jit still answers right, with one warning, in two processes in a row."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    for _ in range(2):
        res = _child(cache, prelude=FULL_DISK)
        assert res["ok"] and len(res["warnings"]) == 1, res
        assert "No space left on device" in res["warnings"][0]
