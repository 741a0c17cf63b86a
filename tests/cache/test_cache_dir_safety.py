"""The cache directory is trusted only when it is ours alone, and s2s works without one.

Files in the cache are run as code (generated modules, Numba's pickled machine code).  A cache
directory another user can write into, or one owned by someone else, is refused with one
`CacheDirWarning`, and s2s keeps working with a private folder removed at exit.  So does a
directory it cannot create or write (under /proc, below a file, a disk that fills up), leaving
no partial files behind.
"""
import errno
import glob
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import s2s
import s2s.pipeline
from s2s.codegen import emit
from cases import paths

X = np.array([0.5, -1.5, 2.0])


def loss(x):
    return np.sum(np.sin(x) * x)


def _want(x):
    return np.sin(x) + x * np.cos(x)


@pytest.fixture
def cache_at(monkeypatch):
    """Point s2s at a cache directory as a new process would see it."""
    def point(path):
        monkeypatch.setattr(emit, "_USABLE", {})
        monkeypatch.setattr(s2s.pipeline, "_CACHE", type(s2s.pipeline._CACHE)())
        monkeypatch.setenv("S2S_CACHE_DIR", str(path))
    return point


def _grad_with_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = s2s.grad(loss)(X)
        g2 = s2s.jit(s2s.grad(loss))(X)
    np.testing.assert_allclose(g, _want(X), rtol=1e-12)
    np.testing.assert_allclose(g2, _want(X), rtol=1e-12)
    return [w for w in caught if issubclass(w.category, emit.CacheDirWarning)]


def test_a_private_cache_directory_is_used_without_a_warning(cache_at, tmp_path):
    cache_at(tmp_path / "mine")
    assert _grad_with_warnings() == []
    assert glob.glob(str(tmp_path / "mine" / "index" / "*.json"))


def test_a_directory_others_can_write_is_refused_once_and_left_untouched(cache_at, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    cache_at(shared)
    caught = _grad_with_warnings()
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert str(shared) in message and "other users can write" in message and "S2S_CACHE_DIR" in message
    assert os.listdir(shared) == []                 # nothing read from it, nothing written to it
    assert _grad_with_warnings() == []              # one warning per process


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a folder away")
def test_a_directory_owned_by_another_user_is_refused(cache_at, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 12345, -1)
    cache_at(theirs)
    caught = _grad_with_warnings()
    assert len(caught) == 1 and "belongs to user id 12345" in str(caught[0].message)


# the child processes import this module's functions (`from test_cache_dir_safety import loss`)
_PYTHONPATH = paths.pythonpath(os.path.dirname(os.path.abspath(__file__)))

PLANT = textwrap.dedent("""
    import json, os, sys, warnings
    import numpy as np
    import s2s
    from test_cache_dir_safety import loss
    warnings.simplefilter("ignore")
    print(json.dumps(s2s.grad(loss)(np.array([0.5, -1.5, 2.0])).tolist()))
""")


def _child(cache, code):
    env = dict(os.environ, S2S_CACHE_DIR=str(cache), PYTHONPATH=_PYTHONPATH)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return np.array(json.loads(res.stdout.strip().splitlines()[-1]))


def _plant(cache, marker):
    """Rewrite the cached derivative of `loss` so that loading it creates `marker` (what another
    user with write access could do): a valid entry, its file named by its content's hash."""
    import hashlib
    (entry_path,) = [p for p in glob.glob(str(cache / "index" / "*.json")) if "loss" in open(p).read()]
    entry = json.load(open(entry_path))
    source = open(entry["path"]).read()
    planted = f"open({str(marker)!r}, 'w').close()\n" + source
    digest = hashlib.sha256(planted.encode()).hexdigest()[:16]
    path = os.path.join(os.path.dirname(entry["path"]), f"planted_{digest}.py")
    open(path, "w").write(planted)
    entry["path"] = path
    json.dump(entry, open(entry_path, "w"))


def test_code_planted_in_a_cache_others_can_write_is_not_run(tmp_path):
    code = PLANT
    # our own cache, planted: it is run (the check below is what protects a shared one)
    mine, marker = tmp_path / "mine", tmp_path / "ran_mine"
    _child(mine, code)
    _plant(mine, marker)
    np.testing.assert_allclose(_child(mine, code), _want(X), rtol=1e-12)
    assert marker.exists()
    # the same cache, writable by others: refused, so the planted code never runs
    shared, marker = tmp_path / "shared", tmp_path / "ran_shared"
    _child(shared, code)
    _plant(shared, marker)
    os.chmod(shared, 0o777)
    np.testing.assert_allclose(_child(shared, code), _want(X), rtol=1e-12)
    assert not marker.exists(), "code planted in a world-writable cache ran"


@pytest.mark.parametrize("where", ["proc", "below_a_file"])
def test_a_directory_that_cannot_be_created_still_works(cache_at, tmp_path, where):
    if where == "proc":
        if not os.path.isdir("/proc/self"):
            pytest.skip("no /proc")
        target = "/proc/s2s-cache"
    else:
        (tmp_path / "a_file").write_text("")
        target = tmp_path / "a_file" / "cache"
    cache_at(target)
    caught = _grad_with_warnings()
    assert len(caught) == 1 and "cannot be created" in str(caught[0].message)


def test_without_home_the_default_cache_still_works(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "S2S_CACHE_DIR")}
    env["PYTHONPATH"] = _PYTHONPATH
    code = PLANT
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    np.testing.assert_allclose(json.loads(res.stdout.strip().splitlines()[-1]), _want(X), rtol=1e-12)


def test_a_full_disk_switches_to_a_private_folder_and_leaves_no_partial_file(cache_at, tmp_path, monkeypatch):
    cache = tmp_path / "filling"
    cache_at(cache)
    real_fdopen = os.fdopen

    class FullFile:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, *a, **k):
        f = real_fdopen(fd, *a, **k)
        return FullFile(f) if str(cache) in os.readlink(f"/proc/self/fd/{fd}") else f
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd")
    monkeypatch.setattr(emit.os, "fdopen", fdopen)
    caught = _grad_with_warnings()
    assert len(caught) == 1 and "No space left" in str(caught[0].message)
    leftovers = [p for p in glob.glob(str(cache / "**" / "*"), recursive=True) if os.path.isfile(p)]
    assert leftovers == [], leftovers


# ----- Numba's machine code is checked before it runs ---------------------------------------------

def loss_a(x):
    return np.sum(np.sin(x) * x)


def loss_b(x):
    return np.sum(x ** 3)


JIT_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import s2s
    from numba.core import event
    from test_cache_dir_safety import loss_a, loss_b
    compiled = []
    class Count(event.Listener):
        def on_start(self, ev): compiled.append(ev.data["dispatcher"].py_func.__name__)
        def on_end(self, ev): pass
    event.register("numba:compile", Count())
    x = np.array([0.5, -1.5, 2.0])
    a = s2s.jit(s2s.grad(loss_a))(x).tolist()
    b = s2s.jit(s2s.grad(loss_b))(x).tolist()
    print(json.dumps([a, b, sorted(set(compiled))]))
""")


def _jit_child(cache):
    env = dict(os.environ, S2S_CACHE_DIR=str(cache), PYTHONPATH=_PYTHONPATH)
    code = JIT_CHILD
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    a, b, compiled = json.loads(res.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(a, np.sin(X) + X * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(b, 3.0 * X ** 2, rtol=1e-12)
    return compiled


def _machine_code(cache, stem):
    (path,) = [p for p in glob.glob(str(cache / "*" / "__pycache__" / "*.nbc")) if os.path.basename(p).startswith(stem)]
    return path


def test_edited_or_damaged_machine_code_is_compiled_again_not_run(tmp_path):
    cache = tmp_path / "cache"
    assert "loss_a_grad" in _jit_child(cache)
    assert not any(name.endswith("_grad") for name in _jit_child(cache))    # warm: loaded, not compiled
    # edited: loss_a's cached machine code replaced by loss_b's (valid code, the wrong function)
    a, b = _machine_code(cache, "loss_a_grad"), _machine_code(cache, "loss_b_grad")
    with open(b, "rb") as src, open(a, "wb") as dst:
        dst.write(src.read())
    assert "loss_a_grad" in _jit_child(cache)          # right answers (checked inside), recompiled
    # damaged: bytes flipped in the middle
    data = bytearray(open(a, "rb").read())
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
    open(a, "wb").write(bytes(data))
    assert "loss_a_grad" in _jit_child(cache)
    # the entry was rewritten: the next process loads it again
    assert not any(name.endswith("_grad") for name in _jit_child(cache))
