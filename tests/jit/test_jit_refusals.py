"""A program jit cannot compile is refused before Numba compiles anything (issue 39, item 8).

A global value the compiled code would read and Numba has no type for (a class such as
np.random.RandomState, a dict of settings, a library object) is found in the generated text
(backends/numba_screen.py): the refusal names the user's line and the value, and comes without a
single Numba compilation (counted by Numba's own `numba:compile` events), where Numba would have
typed and compiled the helpers first (fused, then unfused). fallback=True still runs the
generated Python, and grad is unaffected.

Every function under test is defined at module level in this file (s2s reads its source).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad  # noqa: E402
from numba.core import event  # noqa: E402

THIS_FILE = os.path.abspath(__file__)
SETTINGS = {"scale": 2.0}


def draws_from_a_random_state(w):
    rs = np.random.RandomState(0)
    z = rs.normal(size=w.shape)
    return np.sum(np.sin(w) * z)


def reads_a_settings_dict(w):
    return np.sum(np.tanh(w) * SETTINGS["scale"])


def random_state_in_a_loop(w):
    total = 0.0
    for k in range(3):
        if k > 0:
            noise = np.random.RandomState(k).normal(size=w.shape)
            total = total + np.sum(w * noise)
    return total


class _Compiles(event.Listener):
    def __init__(self):
        self.count = 0

    def on_start(self, ev):
        self.count += 1

    def on_end(self, ev):
        pass


def _compiles_during(run):
    listener = _Compiles()
    event.register("numba:compile", listener)
    try:
        run()
    finally:
        event.unregister("numba:compile", listener)
    return listener.count


CASES = [
    (draws_from_a_random_state, "rs = np.random.RandomState(0)", "RandomState"),
    (reads_a_settings_dict, 'return np.sum(np.tanh(w) * SETTINGS["scale"])', "SETTINGS"),
    (random_state_in_a_loop, "noise = np.random.RandomState(k).normal(size=w.shape)", "RandomState"),
]


@pytest.mark.parametrize("fn, line, name", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "primal"])
def test_refused_at_the_users_line_before_any_compile(fn, line, name, transform):
    w = np.linspace(0.2, 1.1, 4)
    target = fn if transform == "primal" else getattr(s2s, transform)(fn)
    jitted = s2s.jit(target, wait=True)
    caught = []

    def call():
        with pytest.raises(s2s.TransformError) as info:
            jitted(w)
        caught.append(info.value)
    assert _compiles_during(call) == 0, "Numba compiled before the refusal"
    exc = caught[0]
    assert exc.filename == THIS_FILE
    assert exc.source_line is not None and exc.source_line.strip() == line
    assert f"no type for `{name}`" in str(exc) and "fallback=True" in str(exc)


@pytest.mark.parametrize("fn", [c[0] for c in CASES], ids=[c[0].__name__ for c in CASES])
def test_fallback_still_runs_the_generated_python_and_grad_is_unchanged(fn):
    w = np.linspace(0.2, 1.1, 4)
    want = s2s.grad(fn)(w)
    assert_close(want, numeric_grad(fn, (w,), 0), rtol=1e-6, atol=1e-8)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = s2s.jit(s2s.grad(fn), fallback=True, wait=True)(w)
    np.testing.assert_array_equal(got, want)
    assert any("running the generated Python" in str(m.message) for m in seen)


def test_a_background_compile_reports_the_refusal_on_a_later_call():
    """Without wait, the first calls answer from the generated Python; the job fails at generation
    (no compile to wait for) and the next call reports it."""
    w = np.linspace(0.2, 1.1, 4)
    jitted = s2s.jit(s2s.grad(draws_from_a_random_state), wait=False)
    first = jitted(w)
    np.testing.assert_array_equal(first, s2s.grad(draws_from_a_random_state)(w))
    jitted.wait(timeout=120)
    with pytest.raises(s2s.TransformError, match="no type for `RandomState`"):
        jitted(w)
