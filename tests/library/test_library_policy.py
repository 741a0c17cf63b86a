"""Which installed code s2s reads (s2s/frontend/library_code.py): a package's function is read when
s2s can honour all of it, else run as written (its result a constant); s2s.library_code(skip=...)
keeps a package unread, and the choice is part of the cache key (the same function gives another
derivative, or a refusal, after it)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("statsmodels")
pytest.importorskip("sklearn")

import sklearn.utils  # noqa: E402
import statsmodels.tools.eval_measures  # noqa: E402

import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad  # noqa: E402
from s2s.frontend import library_code as policy  # noqa: E402

TARGET = np.array([0.3, -1.2, 0.8, 2.0])


def rmse_loss(x):
    return statsmodels.tools.eval_measures.rmse(np.tanh(x), TARGET)


def seeded_noise_loss(x):
    rng = sklearn.utils.check_random_state(3)          # scikit-learn's: not read, run as written
    noise = rng.normal(size=x.shape)
    return np.sum(np.sin(x) * noise)


@pytest.fixture
def restore_policy():
    saved = set(policy._USER_READ), set(policy._USER_SKIP)
    yield
    policy._USER_READ.clear()
    policy._USER_READ.update(saved[0])
    policy._USER_SKIP.clear()
    policy._USER_SKIP.update(saved[1])


def test_an_installed_package_is_read_when_s2s_can():
    x = np.array([0.1, -0.4, 0.7, 1.3])
    assert_close(s2s.grad(rmse_loss)(x), numeric_grad(rmse_loss, (x,), 0), rtol=1e-6, atol=1e-8)


def test_a_function_s2s_cannot_read_runs_as_written():
    x = np.array([0.1, -0.4, 0.7, 1.3])
    noise = sklearn.utils.check_random_state(3).normal(size=4)
    assert_close(s2s.grad(seeded_noise_loss)(x), np.cos(x) * noise, rtol=1e-12, atol=1e-12)


def test_skip_keeps_a_package_unread_and_changes_the_cache_key(restore_policy):
    x = np.array([0.1, -0.4, 0.7, 1.3])
    want = s2s.grad(rmse_loss)(x)
    s2s.library_code(skip=["statsmodels"])
    with pytest.raises(s2s.NoRuleError, match="rmse"):
        s2s.grad(rmse_loss)(x)
    s2s.library_code(read=["statsmodels"])
    assert_close(s2s.grad(rmse_loss)(x), want, rtol=1e-12, atol=1e-12)
