"""Op helpers of the elementwise rules (s2s/ops/elementwise/rules.py).

The masks and shares of np.maximum / np.fmax / np.clip (tie_share, nan_max_share, clip_share:
bookkeeping; ties split evenly), the readable helpers sinc_derivative and safe_log, and abs_slope,
the cotangent factor of |x| for a real or a complex x (ruled: abs_slope_tangent, abs_slope_vjp).

Every public function here is called by name from generated code and is bookkeeping, readable or
ruled (the three kinds: rules/__init__.py).
"""
from __future__ import annotations

import numpy as np


def tie_share(a, b):
    """1 where a > b, 0.5 where a == b, 0 else (the share of max(a, b) owed to a)."""
    return np.where(a > b, 1.0, np.where(a == b, 0.5, 0.0))


def nan_max_share(a, b):
    """The share of np.fmax(a, b) owed to a: like tie_share, but a NaN loses."""
    return np.where(np.isnan(b), 1.0, np.where(np.isnan(a), 0.0, tie_share(a, b)))


def _clip_bounds(a_min, a_max, min_, max_):
    lo = a_min if a_min is not None else min_
    hi = a_max if a_max is not None else max_
    return lo, hi


def clip_share(a, a_min=None, a_max=None, min=None, max=None, which=0):  # noqa: A002
    """The share of np.clip(a, lo, hi) owed to a (which=0), to the lower bound (which=1) or to the
    upper bound (which=2).

    np.clip computes minimum(maximum(a, lo), hi), and the shares are those of that composition:
    1 or 0 off the bounds; where a sits on a bound the tie splits evenly as np.maximum /
    np.minimum split it (0.5 to a, 0.5 to the bound; 0.25, 0.25, 0.5 where a == lo == hi), JAX's
    convention (docs/conventions.md).
    """
    lo, hi = _clip_bounds(a_min, a_max, min, max)
    a = np.asarray(a, dtype=float)
    m = a if lo is None else np.maximum(a, lo)
    if which == 2:
        out = np.zeros(np.shape(m)) if hi is None else tie_share(m, hi)
    else:
        keep = np.ones(np.shape(m)) if hi is None else tie_share(hi, m)    # m's share of minimum(m, hi)
        if which == 1:
            out = np.zeros(np.shape(keep)) if lo is None else tie_share(lo, a) * keep
        else:
            out = keep if lo is None else tie_share(a, lo) * keep
    return np.asarray(out, dtype=np.float64)[()]


def sinc_derivative(x):
    """d/dx np.sinc(x) = (cos(pi x) - sinc(x)) / x, 0 at x = 0."""
    zero = x == 0.0
    safe = np.where(zero, 1.0, x)
    return np.where(zero, 0.0, (np.cos(np.pi * safe) - np.sinc(safe)) / safe)


def safe_log(a):
    """log(a) where a > 0, 0 elsewhere (d/db of a ** b where a <= 0 is taken as 0)."""
    return np.log(np.where(a > 0.0, a, 1.0))


# ----- |x| of a real or complex value (the complex convention: ops/fft/helpers.py) -----------------

def abs_slope(x):
    """The cotangent factor of |x|: np.sign(x) for a real x, s = conj(x) / |x| (0 at 0) for a complex
    x.  Ruled (abs_slope_tangent, abs_slope_vjp): its derivative is 0 for a real x, not for a
    complex one."""
    if np.iscomplexobj(x):
        return np.conj(x) / (np.abs(x) + (x == 0))
    return np.sign(x)


def abs_slope_tangent(x, tx):
    """d abs_slope(x): 0 for a real x; (conj(dz) - s Re(s dz)) / |z| for a complex z (0 at z = 0).
    (Both branches give an array of tx's shape: under jit they must unify.)"""
    if np.iscomplexobj(x):
        s = abs_slope(x)
        return (x != 0) * (np.conj(tx) - s * np.real(s * tx)) / (np.abs(x) + (x == 0))
    return 0.0 * tx


def abs_slope_vjp(g, x):
    """The transpose of abs_slope_tangent (paired by Re(ct * dz)): (conj(g) - Re(g s) s) / |z|."""
    if np.iscomplexobj(x):
        s = abs_slope(x)
        return (x != 0) * (np.conj(g) - np.real(g * s) * s) / (np.abs(x) + (x == 0))
    return 0.0 * g
