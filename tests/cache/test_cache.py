"""The generated-code cache: generate once, files in S2S_CACHE_DIR, tracebacks, a long function.

Each test that needs a fresh generation swaps in an empty `s2s.pipeline._CACHE`
(monkeypatch restores the real one), so results do not depend on which other
tests ran first in the same process.
"""
import glob
import os
import stat
import time
import traceback

import numpy as np
import pytest


from cases import fixtures_extra as F
import s2s  # noqa: E402
import s2s.pipeline  # noqa: E402
from cases.fd import assert_close, numeric_grad

X = np.array([0.3, -0.8, 1.1, 0.5])


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """An empty in-memory cache and a new cache directory (not created yet)."""
    monkeypatch.setattr(s2s.pipeline, "_CACHE", {})
    cache = tmp_path / "s2s-cache" / "generated"
    monkeypatch.setenv("S2S_CACHE_DIR", str(cache))
    return cache


def _counting(monkeypatch, attr):
    calls = []
    real = getattr(s2s.pipeline, attr)

    def wrapper(*a, **k):
        calls.append(a)
        return real(*a, **k)
    monkeypatch.setattr(s2s.pipeline, attr, wrapper)
    return calls


def _generated_files(cache_dir, stem):
    return sorted(glob.glob(os.path.join(str(cache_dir), "**", f"{stem}_*.py"), recursive=True))


# ---------------------------------------------------------------------------
# generate once
# ---------------------------------------------------------------------------

def test_grad_twice_generates_once(fresh_cache, monkeypatch):
    calls = _counting(monkeypatch, "reverse")
    g1 = s2s.grad(F.cache_fn_a)
    g2 = s2s.grad(F.cache_fn_a)
    r1 = g1(X)
    r2 = g2(X)
    r3 = g1(X * 2.0)
    assert len(calls) == 1, f"reverse ran {len(calls)} times for the same function"
    assert len(s2s.pipeline._CACHE) == 1
    np.testing.assert_array_equal(r1, r2)
    assert_close(r3, np.sin(2 * X) + 2 * X * np.cos(2 * X), what="gradient")


def test_cache_key_distinguishes_transforms_and_argnums(fresh_cache, monkeypatch):
    calls = _counting(monkeypatch, "reverse")
    s2s.grad(F.cache_fn_b)(X)
    s2s.value_and_grad(F.cache_fn_b)(X)
    s2s.grad(F.cache_fn_b)(X)
    s2s.value_and_grad(F.cache_fn_b)(X)
    assert len(calls) == 2
    assert len(s2s.pipeline._CACHE) == 2


def test_show_then_grad_reuses_generation(fresh_cache, monkeypatch):
    calls = _counting(monkeypatch, "reverse")
    text = s2s.show(F.cache_fn_c)
    g = s2s.grad(F.cache_fn_c)(X)
    assert len(calls) == 1
    assert "def cache_fn_c_grad(" in text
    assert_close(g, np.exp(X) - 1.0, what="gradient")


def test_jvp_twice_generates_once(fresh_cache, monkeypatch):
    calls = _counting(monkeypatch, "forward")
    t = np.ones_like(X)
    s2s.jvp(F.cache_fn_d, (X,), (t,))
    out, tout = s2s.jvp(F.cache_fn_d, (X,), (t,))
    assert len(calls) == 1
    assert_close(tout, np.sum(2 * np.tanh(X) * (1 - np.tanh(X) ** 2)), what="jvp tangent")


# ---------------------------------------------------------------------------
# files on disk
# ---------------------------------------------------------------------------

def test_generated_file_lives_in_cache_dir_with_mode_700(fresh_cache):
    assert not fresh_cache.exists()
    s2s.grad(F.cache_fn_a)(X)
    assert fresh_cache.is_dir()
    mode = stat.S_IMODE(os.stat(fresh_cache).st_mode)
    assert mode == 0o700, f"cache directory mode is {oct(mode)}, expected 0o700"
    files = _generated_files(fresh_cache, "cache_fn_a_grad")
    assert len(files) == 1, os.listdir(fresh_cache)


def test_cache_dir_read_at_write_time(fresh_cache, monkeypatch, tmp_path):
    s2s.grad(F.cache_fn_a)(X)
    assert _generated_files(fresh_cache, "cache_fn_a_grad")
    other = tmp_path / "second"
    monkeypatch.setenv("S2S_CACHE_DIR", str(other))
    s2s.grad(F.cache_fn_b)(X)    # a function not generated yet: written to the new dir
    assert _generated_files(other, "cache_fn_b_grad")
    assert not _generated_files(fresh_cache, "cache_fn_b_grad")
    assert stat.S_IMODE(os.stat(other).st_mode) == 0o700


def test_show_equals_file_contents(fresh_cache):
    text = s2s.show(F.cache_fn_b)
    (path,) = _generated_files(fresh_cache, "cache_fn_b_grad")
    with open(path) as fh:
        assert fh.read() == text


def test_show_jvp_equals_file_contents(fresh_cache):
    text = s2s.show(F.cache_fn_d, "jvp")
    (path,) = _generated_files(fresh_cache, "cache_fn_d_jvp")
    with open(path) as fh:
        assert fh.read() == text


def test_generated_code_filename_is_the_file(fresh_cache):
    g = s2s.grad(F.cache_fn_c)
    g(X)
    (path,) = _generated_files(fresh_cache, "cache_fn_c_grad")
    fn = g.generated().fn
    assert os.path.samefile(fn.__code__.co_filename, path)
    assert os.path.samefile(g.generated().path, path)
    # inspect finds the generated source in the file
    import inspect
    src = inspect.getsource(fn)
    assert src.startswith("def cache_fn_c_grad(")
    with open(path) as fh:
        assert src in fh.read()


def test_traceback_shows_generated_line(fresh_cache):
    g = s2s.grad(F.cache_fn_log, argnums=0)
    with pytest.raises(TypeError) as info:
        g(X, "not a number")
    (path,) = _generated_files(fresh_cache, "cache_fn_log_grad")
    frames = traceback.extract_tb(info.value.__traceback__)
    gen_frames = [fr for fr in frames
                  if os.path.exists(fr.filename) and os.path.samefile(fr.filename, path)]
    assert gen_frames, "no traceback frame points into the generated file:\n" + \
        "".join(traceback.format_list(frames))
    fr = gen_frames[-1]
    with open(path) as fh:
        lines = fh.read().splitlines()
    assert fr.line, "the traceback line of the generated frame is empty"
    assert fr.line.strip() == lines[fr.lineno - 1].strip()
    assert "np.log(s)" in fr.line
    formatted = "".join(traceback.format_exception(info.value))
    assert path in formatted and "np.log(s)" in formatted


# ---------------------------------------------------------------------------
# a long function
# ---------------------------------------------------------------------------

def test_long_function_transform(fresh_cache, capsys):
    import inspect
    n_lines = len(inspect.getsource(F.cache_long).splitlines())
    assert n_lines >= 100
    r = np.random.default_rng(7)
    x = r.uniform(0.1, 0.9, 5)
    w = r.uniform(-0.5, 0.7, 5)
    t0 = time.perf_counter()
    g = s2s.grad(F.cache_long, argnums=(0, 1))
    gx, gw = g(x, w)
    t1 = time.perf_counter()
    gx2, gw2 = g(x, w)
    t2 = time.perf_counter()
    with capsys.disabled():
        print(f"\n[test_cache] grad of a {n_lines}-line function: first call (transform + run) "
              f"{t1 - t0:.3f}s, cached call {t2 - t1:.4f}s")
    assert_close(gx, numeric_grad(F.cache_long, (x, w), 0), rtol=1e-5, atol=1e-6, what="d/dx")
    assert_close(gw, numeric_grad(F.cache_long, (x, w), 1), rtol=1e-5, atol=1e-6, what="d/dw")
    np.testing.assert_array_equal(gx, gx2)
    np.testing.assert_array_equal(gw, gw2)
    text = s2s.show(F.cache_long, argnums=(0, 1))
    compile(text, "<generated>", "exec")
