"""jit compiles s2s's code at LLVM -O2 (S2S_NUMBA_OPT), inside the compilation only, and leaves
Numba's own setting alone everywhere else; a NUMBA_OPT the user set wins."""
import numpy as np
import pytest

numba = pytest.importorskip("numba")
from numba.core import config  # noqa: E402

import s2s  # noqa: E402
from s2s.backends import numba_cpu  # noqa: E402


class _Recorder:
    """Stands in for a Numba dispatcher: records the level its compile ran at."""

    def __init__(self):
        self.levels = []

    def compile(self, sig):
        self.levels.append(int(config.OPT))
        return sig


def test_the_level_holds_inside_the_compilation_and_is_restored(monkeypatch):
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    monkeypatch.delenv("S2S_NUMBA_OPT", raising=False)
    before = int(config.OPT)
    rec = numba_cpu._at_opt_level(_Recorder())
    assert rec.compile("sig") == "sig"
    assert rec.levels == [2] and int(config.OPT) == before
    monkeypatch.setenv("S2S_NUMBA_OPT", "0")
    rec = numba_cpu._at_opt_level(_Recorder())
    rec.compile("sig")
    assert rec.levels == [0] and int(config.OPT) == before


def test_a_numba_opt_the_user_set_wins(monkeypatch):
    monkeypatch.setenv("NUMBA_OPT", "3")
    monkeypatch.setenv("S2S_NUMBA_OPT", "1")
    assert numba_cpu.optimization_level() is None
    rec = _Recorder()
    assert numba_cpu._at_opt_level(rec) is rec       # left as Numba made it


@pytest.mark.parametrize("value", ["4", "-1", "fast"])
def test_a_bad_level_is_refused_by_name(monkeypatch, value):
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    monkeypatch.setenv("S2S_NUMBA_OPT", value)
    with pytest.raises(ValueError, match="S2S_NUMBA_OPT"):
        numba_cpu.optimization_level()


def _poly(x):
    return np.sum(np.sin(x) * x ** 2 + np.exp(-x * x))


def test_jit_grad_at_level_2_answers_as_grad(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    monkeypatch.delenv("S2S_NUMBA_OPT", raising=False)
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path))
    before = int(config.OPT)
    x = np.linspace(-2.0, 2.0, 37)
    want = 2 * x * np.sin(x) + x ** 2 * np.cos(x) - 2 * x * np.exp(-x * x)
    np.testing.assert_allclose(s2s.grad(_poly)(x), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2s.jit(s2s.grad(_poly))(x), want, rtol=1e-12, atol=1e-12)
    assert int(config.OPT) == before       # (Numba's own level again, for everything else)
