"""What every op case module shares: the fixed weights the cases multiply by, the input
helpers, and the `Case` record with its `case` decorator, which appends to `CASES` in the order
the case modules run (op_cases.py imports them in a fixed order)."""
from __future__ import annotations

import dataclasses
import math  # noqa: F401  (the case modules take math, np and sp from here)
from typing import Any, Callable

import numpy as np
import scipy.special as sp  # noqa: F401

# ---------------------------------------------------------------------------
# Fixed weights
# ---------------------------------------------------------------------------
_R = np.random.default_rng(20240611)
W = _R.standard_normal((3, 4))
W4 = _R.standard_normal(4)
W3 = _R.standard_normal(3)
W33 = _R.standard_normal((3, 3))
W43 = _R.standard_normal((4, 3))
W35 = _R.standard_normal((3, 5))
W234 = _R.standard_normal((2, 3, 4))
W235 = _R.standard_normal((2, 3, 5))
W24 = _R.standard_normal((2, 4))
W12 = _R.standard_normal(12)
W32 = _R.standard_normal((3, 2))
W34x2 = _R.standard_normal((3, 4, 2))
W68 = _R.standard_normal((6, 8))
W64 = _R.standard_normal((6, 4))
W38 = _R.standard_normal((3, 8))
W42 = _R.standard_normal((4, 2))
W56 = _R.standard_normal((5, 6))
# Derived weights (s2s reads array methods on local values only)
K0 = W3.reshape(1, 3, 1)
K1 = W4.reshape(1, 4)
K2 = W12.reshape(2, 6)
K3 = W12.reshape(6, 2)
K4 = W234.transpose(2, 0, 1)
K5 = W234.transpose(1, 0, 2)
K6 = W234.swapaxes(1, 2)
K7 = W234.transpose(1, 2, 0)[:, :, :1]
K8 = W234.transpose(1, 2, 0)
K9 = W.reshape(3, 1, 4)
K10 = W.reshape(1, 3, 4, 1)
K11 = W.reshape(3, 4, 1)
K12 = W.reshape(2, 6)[0]
K13 = W12.repeat(2)
K14 = W.repeat(np.array([1, 0, 2, 3]), axis=1)[:, :6]
K15 = W4.repeat(np.array([1, 0, 2, 3]))[:6]
K16 = W.repeat(2, axis=0)[:5]
K17 = W.ravel()[:8]
K18 = W.repeat(2)[:20]
K19 = W.repeat(2, axis=1)[:, :6]
K20 = W.repeat(2, axis=0)[:4]
K21 = W3.reshape(3, 1, 1)
K22 = W3.reshape(3, 1)
MASK = _R.uniform(size=(3, 4)) < 0.5
IDX = np.array([2, 0, 3, 3, 1])
IDX2 = np.array([[0, 2], [1, 1], [3, 0]])
REPS = np.array([1, 0, 2, 3])


# ---------------------------------------------------------------------------
# Input helpers (not under test)
# ---------------------------------------------------------------------------

def _u(rng, lo, hi, shape=(3, 4)):
    return rng.uniform(lo, hi, size=shape)


def _nz(rng, shape=(3, 4), lo=0.3, hi=1.5):
    """Random sign, magnitude in [lo, hi]: away from 0."""
    return np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0) * rng.uniform(lo, hi, size=shape)


def _distinct(rng, shape=(3, 4), gap=0.1):
    n = int(np.prod(shape))
    vals = np.cumsum(rng.uniform(gap, 3 * gap, size=n)) - 1.0
    return rng.permutation(vals).reshape(shape)


def _frac(rng, shape=(3, 4)):
    """Away from integers (floor/ceil/rint/mod kinks)."""
    return rng.integers(-3, 3, size=shape) + rng.uniform(0.15, 0.35, size=shape) \
        + np.where(rng.uniform(size=shape) < 0.5, 0.0, 0.5)


def _wellcond(rng, n=3, batch=()):
    return rng.standard_normal(batch + (n, n)) * 0.3 + 2.0 * np.eye(n)


def _sym_distinct(rng, n=3):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.array([1.0, 2.5, 4.5][:n])) @ q.T


# ---------------------------------------------------------------------------
# Case record
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    name: str
    fn: Callable
    make: Callable[[Any], tuple]
    hess: bool | str = True          # True, or a reason second derivatives are not checked
    rev_xfail: str | None = None     # strict xfail of reverse mode (and of everything built on it)
    fwd_xfail: str | None = None     # strict xfail of forward mode
    hess_xfail: str | None = None    # strict xfail of s2s.hessian (forward over reverse)
    rr_xfail: str | None = None      # strict xfail of the VJP of grad (reverse over reverse)
    rtol: float = 1e-5


CASES: list[Case] = []


def case(make, **kw):
    def wrap(fn):
        CASES.append(Case(fn.__name__[:-5] if fn.__name__.endswith("_case") else fn.__name__, fn, make, **kw))
        return fn
    return wrap


# (first derivatives through an op's tuple result work: its cotangent is a list, runtime.zeros_like)
TUPLE_SECOND = ("core: second derivatives through an op's tuple result: eigh's are refused (NoRuleError for "
                "eigh_vjp: they disagreed with finite differences, tests/jit/test_jit_errors.py checks the refusal); "
                "svd's (compute_uv=True) fail in jacfwd's vmap (bexpand of a list cotangent)")
