"""jit's tiers: the first calls answer with the generated Python while Numba compiles on a thread.

What is checked, each with the tiers on (`wait=False`; conftest makes the rest of the suite wait):
the first call's answer is the unjitted transform's, bit for bit (it is that code); after
`wait()` the calls run machine code (the Python tier is then made to fail, so an answer proves
it) equal to a jit that waited; pytree arguments, a second signature, `compile()` ahead of time,
S2S_JIT_WAIT, both places a compile runs (a forked process, a thread), a compile Numba refuses (reported by the next call, or with fallback=True a
warning and the Python answer), the compile notice on stderr and the `s2s` logger's stage times.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import s2s  # noqa: E402
from s2s import log  # noqa: E402


def loss(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p + 1e-12) + (1.0 - y) * np.log(1.0 - p + 1e-12)) + 0.01 * np.sum(w * w)


def mlp_loss(params, X, y):
    h = np.tanh(X @ params["W"] + params["b"])
    return np.mean((h @ params["v"] - y) ** 2)


def _data(seed=0, n=20, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return rng.normal(size=d), X, (X[:, 0] > 0).astype(float)


def _python_tier_forbidden(jitted):
    def refuse(nargs):
        raise AssertionError("the Python tier ran after wait()")
    jitted.python_version = refuse
    for inner in jitted._inner_jits.values():
        _python_tier_forbidden(inner)


@pytest.mark.parametrize("tier", ["process", "thread"])
def test_first_call_is_the_python_tier_then_machine_code(tier, monkeypatch):
    monkeypatch.setenv("S2S_JIT_TIER", tier)
    w, X, y = _data()
    plain = s2s.grad(loss)(w, X, y)
    j = s2s.jit(s2s.grad(loss), wait=False)
    first = j(w, X, y)
    np.testing.assert_array_equal(first, plain)        # the same generated Python: the same bits
    assert j.wait(timeout=600) and j.ready
    _python_tier_forbidden(j)
    native = j(w, X, y)
    assert j._fast, "the call after wait() did not run machine code"
    waited = s2s.jit(s2s.grad(loss), wait=True)(w, X, y)
    np.testing.assert_allclose(native, plain, rtol=1e-12)
    np.testing.assert_array_equal(native, waited)


@pytest.mark.parametrize("transform", ["value_and_grad", "vmap_grad", "primal"])
def test_every_transform_answers_in_both_tiers(transform):
    w, X, y = _data(1)
    if transform == "value_and_grad":
        f, args = s2s.value_and_grad(loss), (w, X, y)
    elif transform == "vmap_grad":
        f, args = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0)), (w, X[:, None, :], y[:, None])
    else:
        f, args = (lambda a, b: np.sum(np.sin(a) * b)), (X, X + 1.0)
    expected = f(*args)
    j = s2s.jit(f, wait=False)
    first = j(*args)
    for a, b in zip(np.atleast_1d(first) if transform != "value_and_grad" else first,
                    np.atleast_1d(expected) if transform != "value_and_grad" else expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert j.wait(timeout=600)
    _python_tier_forbidden(j)
    second = j(*args)
    for a, b in zip(np.atleast_1d(second) if transform != "value_and_grad" else second,
                    np.atleast_1d(expected) if transform != "value_and_grad" else expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_pytree_arguments_and_a_second_signature():
    rng = np.random.default_rng(2)
    params = {"W": rng.normal(size=(3, 4)), "b": np.zeros(4), "v": rng.normal(size=4)}
    X, y = rng.normal(size=(8, 3)), rng.normal(size=8)
    expected = s2s.grad(mlp_loss)(params, X, y)
    j = s2s.jit(s2s.grad(mlp_loss), wait=False)
    first = j(params, X, y)
    for k in params:
        np.testing.assert_array_equal(first[k], expected[k])
    assert j.wait(timeout=600)
    _python_tier_forbidden(j)
    native = j(params, X, y)
    for k in params:
        np.testing.assert_allclose(native[k], expected[k], rtol=1e-12, atol=1e-14)
    # another signature (float32 data is widened: the same compiled code; a 1-d y of another length too)
    X2, y2 = rng.normal(size=(5, 3)), rng.normal(size=5)
    again = j(params, X2, y2)
    for k in params:
        np.testing.assert_allclose(again[k], s2s.grad(mlp_loss)(params, X2, y2)[k], rtol=1e-12, atol=1e-14)


def test_compile_ahead_of_time():
    w, X, y = _data(3)
    j = s2s.jit(s2s.grad(loss), wait=False).compile(w, X, y)
    assert j.ready
    _python_tier_forbidden(j)
    np.testing.assert_allclose(j(w, X, y), s2s.grad(loss)(w, X, y), rtol=1e-12)


def test_wait_from_the_environment(monkeypatch):
    w, X, y = _data(4)
    monkeypatch.setenv("S2S_JIT_WAIT", "1")
    j = s2s.jit(s2s.grad(loss))
    _python_tier_forbidden(j)       # it compiles before answering: the Python tier never runs
    np.testing.assert_allclose(j(w, X, y), s2s.grad(loss)(w, X, y), rtol=1e-12)
    monkeypatch.setenv("S2S_JIT_WAIT", "0")
    assert not s2s.jit(s2s.grad(loss)).waits


def padded_energy(x):
    # np.pad has an s2s rule; Numba has no np.pad (nor s2s a stand-in): grad runs, jit cannot compile
    return np.sum(np.pad(x, 1, mode="reflect") ** 2) + np.sum(np.sin(x))


@pytest.mark.parametrize("tier", ["process", "thread"])
def test_a_compile_numba_refuses_is_reported_by_the_next_call(tier, monkeypatch):
    monkeypatch.setenv("S2S_JIT_TIER", tier)
    x = np.linspace(-1.0, 1.0, 5)
    expected = s2s.grad(padded_energy)(x)
    j = s2s.jit(s2s.grad(padded_energy), wait=False)
    try:
        first = j(x)
    except s2s.TransformError as exc:       # (the job failed before the call returned: said at once)
        error = exc
    else:
        np.testing.assert_array_equal(first, expected)      # the Python tier answered
        assert j.wait(timeout=600)
        with pytest.raises(s2s.TransformError) as info:
            j(x)
        error = info.value
    assert "Numba" in str(error) and "test_tiers.py" in str(error)

    k = s2s.jit(s2s.grad(padded_energy), wait=False, fallback=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(k(x), expected)     # the Python tier (or the fallback: the same code)
        assert k.wait(timeout=600)
        np.testing.assert_allclose(k(x), expected, rtol=1e-12)
    said = [w for w in record if "could not compile" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in record]      # once, at the first call or the next
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(k(x), expected, rtol=1e-12)


def test_a_long_compile_prints_one_line(monkeypatch, capfd):
    monkeypatch.setattr(log, "NOTICE_AFTER", 0.0)
    monkeypatch.delenv("S2S_QUIET", raising=False)

    def other(w, X, y):            # (a function of its own: nothing cached for it in this process)
        return np.sum(np.cos(X @ w) ** 2) + np.sum(w ** 4)
    w, X, y = _data(5)
    s2s.jit(s2s.grad(other), wait=True)(w, X, y)
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("s2s.jit: compiling")]
    assert len(lines) == 1 and "other'" in lines[0] and "array(float64, 2d, C)" in lines[0], err
    assert "before answering" in lines[0]

    monkeypatch.setenv("S2S_QUIET", "1")
    s2s.jit(s2s.grad(other), wait=True)(w[:2], X[:, :2], y)
    assert "s2s.jit: compiling" not in capfd.readouterr().err


def test_the_logger_records_each_stage(caplog):
    def third(w, X, y):
        return np.sum(np.tanh(X @ w) * y)
    w, X, y = _data(6)
    with caplog.at_level(logging.INFO, logger="s2s"):
        s2s.jit(s2s.grad(third), wait=True)(w, X, y)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "s2s")
    assert "generated grad of" in text and "(numba)" in text and "parse" in text and "transform" in text, text
    assert "numba third_grad" in text and ("compiled in" in text or "loaded from the disk cache" in text), text


@pytest.mark.parametrize("wait", [True, False])
def test_calls_from_several_threads_at_once(wait):
    import threading
    w, X, y = _data(7)
    expected = s2s.grad(loss)(w, X, y)
    j = s2s.jit(s2s.grad(loss), wait=wait)
    results, errors = [], []

    def call():
        try:
            for _ in range(3):
                results.append(j(w, X, y))
        except Exception as exc:        # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert j.wait(timeout=600)
    for r in results + [j(w, X, y)]:
        np.testing.assert_allclose(r, expected, rtol=1e-12)


def test_both_tiers_return_numbers_of_the_same_type():
    def total(x, w):
        return np.sum(np.tanh(x * w))
    x = np.linspace(0.0, 1.0, 4)
    for fn in (s2s.value_and_grad(total), s2s.grad(total, argnums=1), total):
        python = fn(x, 0.5)
        native = s2s.jit(fn, wait=True)(x, 0.5)
        for a, b in zip(python if isinstance(python, tuple) else (python,),
                        native if isinstance(native, tuple) else (native,)):
            assert type(a) is type(b), (fn, type(a), type(b))
