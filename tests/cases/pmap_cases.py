"""What the pmap tests share (tests/pmap/test_pmap*.py): four cpu devices, the checking helpers,
and the functions pmap runs per device with their plain-NumPy references on the stacked (n, ...)
input (device j's output is out[j]).

The functions are at module level (s2s reads their source) and shared between the test modules
(Numba compiles each distinct function and signature once).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2s

N = 4                       # S2S_CPU_DEVICES in every test


@pytest.fixture(autouse=True)
def four_cpu_devices(monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", str(N))
    monkeypatch.delenv("S2S_PMAP_BACKEND", raising=False)
    monkeypatch.delenv("S2S_COLLECTIVE_TIMEOUT", raising=False)


def rng(seed=0):
    return np.random.default_rng(seed)


def run(pf, *args, compiled=True):
    """pf(*args), asserting the arguments are left alone and that Numba compiled the per-device
    code (no 'could not compile' fallback warning) unless compiled=False."""
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = pf(*args)
    fallbacks = [str(w.message) for w in caught if "could not compile" in str(w.message)]
    if compiled:
        assert not fallbacks, fallbacks
    for b, a in zip(before, args):
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg="pmap modified its argument")
    return out


def fd_dir(F, X, T, h=1e-6):
    """Central difference of F along T."""
    return (np.asarray(F(X + h * T)) - np.asarray(F(X - h * T))) / (2 * h)


# =================================================================================================
# functions run per device
# =================================================================================================
def c_psum(x):
    return s2s.psum(x, "i")


def c_pmean(x):
    return s2s.pmean(x, "i")


def c_pmax(x):
    return s2s.pmax(x, "i")


def c_pmin(x):
    return s2s.pmin(x, "i")


def c_gather(x):
    return s2s.all_gather(x, "i")


def c_gather_tiled(x):
    return s2s.all_gather(x, "i", tiled=True)


def c_gather_ax1(x):
    return s2s.all_gather(x, "i", axis=1)


RING = [(0, 1), (1, 2), (2, 3), (3, 0)]
PARTIAL = [(0, 2), (1, 0)]          # devices 1 and 3 receive nothing


def c_ring(x):
    return s2s.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)])


def c_partial(x):
    return s2s.ppermute(x, "i", [(0, 2), (1, 0)])


def c_a2a_00(x):
    return s2s.all_to_all(x, "i", 0, 0)


def c_a2a_01(x):
    return s2s.all_to_all(x, "i", 0, 1)


def c_a2a_10(x):
    return s2s.all_to_all(x, "i", 1, 0)


def c_a2a_tiled_00(x):
    return s2s.all_to_all(x, "i", 0, 0, tiled=True)


def c_a2a_tiled_10(x):
    return s2s.all_to_all(x, "i", 1, 0, tiled=True)


def c_pswap0(x):
    return s2s.pswapaxes(x, "i", 0)


def c_pswap1(x):
    return s2s.pswapaxes(x, "i", 1)


def c_index(x):
    return x * s2s.axis_index("i") + s2s.axis_size("i")


def c_psum_const(x):
    return x * 0.0 + s2s.psum(1.0, "i") + s2s.psum(1, "i")


# ----- NumPy references on the stacked input (device j's output is out[j]) -----------------------
def r_psum(X):
    return np.broadcast_to(X.sum(axis=0), X.shape)


def r_pmean(X):
    return np.broadcast_to(X.mean(axis=0), X.shape)


def r_pmax(X):
    return np.broadcast_to(X.max(axis=0), X.shape)


def r_pmin(X):
    return np.broadcast_to(X.min(axis=0), X.shape)


def r_gather(X):
    return np.stack([X] * X.shape[0])


def r_gather_tiled(X):
    n = X.shape[0]
    flat = X.reshape((n * X.shape[1],) + X.shape[2:]) if X.ndim > 1 else X
    return np.stack([flat] * n)


def r_gather_ax1(X):
    return np.stack([np.moveaxis(X, 0, 1)] * X.shape[0])


def r_ring(X):
    return np.roll(X, 1, axis=0)


def r_partial(X):           # PARTIAL: 0 -> 2, 1 -> 0
    zero = np.zeros_like(X[0])
    return np.stack([X[1], zero, X[0], zero])


def r_a2a_00(X):            # device i: [X[j, i] for j]
    return np.transpose(X, (1, 0) + tuple(range(2, X.ndim)))


def r_a2a_01(X):            # device i: out[k, j] = X[j, i, k]
    return np.transpose(X, (1, 2, 0))


def r_a2a_10(X):            # device i: out[j, k] = X[j, k, i]
    return np.transpose(X, (2, 0, 1))


def r_a2a_tiled_00(X):      # device i: concat_j (chunk i of X[j] along axis 0)
    n = X.shape[0]
    c = X.shape[1] // n
    return np.stack([np.concatenate([X[j, i * c:(i + 1) * c] for j in range(n)], axis=0) for i in range(n)])


def r_a2a_tiled_10(X):      # device i: concat_j along axis 0 of (chunk i of X[j] along axis 1)
    n = X.shape[0]
    c = X.shape[2] // n
    return np.stack([np.concatenate([X[j][:, i * c:(i + 1) * c] for j in range(n)], axis=0) for i in range(n)])


def r_pswap1(X):            # device i: out[a, j] = X[j, a, i]
    return np.transpose(X, (3, 1, 0, 2)) if X.ndim == 4 else np.transpose(X, (2, 1, 0))


def r_index(X):
    n = X.shape[0]
    idx = np.arange(n).reshape((n,) + (1,) * (X.ndim - 1))
    return X * idx + n


def r_psum_const(X):
    n = X.shape[0]
    return X * 0.0 + float(n) + n


# ----- a loss with its NumPy total, and a function of an unmapped argument, used by several modules
def l_psum(x, c):
    return np.sum(c * np.sin(s2s.psum(x, "i"))) + 0.5 * np.sum(x * x)


def t_psum(X, C):
    return np.sum(C * np.sin(X.sum(axis=0))[None]) + 0.5 * np.sum(X * X)


def scaled_by(x, w):
    return s2s.psum(x * w, "i")
