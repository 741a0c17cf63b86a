"""Logistic and probit regression: input validation with raise, asserts on shapes, f-strings,
keyword-only options, `with np.errstate(...)` around the maths, warnings.warn on a branch not
taken, scipy.stats.norm.logcdf, array methods (.dot, .clip, .sum)."""
import warnings

import numpy as np
from scipy.stats import norm


def logistic_nll(w, X, y, *, l2=1e-2, check=True):
    if check:
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("labels must be 0 or 1")
    assert w.shape == (X.shape[1],), f"bad weight shape {w.shape}"
    logits = X @ w
    nll = np.sum(np.logaddexp(0.0, logits) - y * logits)
    return nll / len(y) + 0.5 * l2 * w.dot(w)


def make_logistic_args(seed=0):
    w = np.random.default_rng(41).standard_normal(3)
    rng = np.random.default_rng(1900 + seed)
    X = rng.standard_normal((7, 3))
    y = (rng.uniform(size=7) < 0.5).astype(float)
    return w, X, y


def sigmoid(z):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def cross_entropy(w, X, y, eps=1e-12):
    p = sigmoid(X @ w)
    if np.any(np.isnan(p)):
        warnings.warn("NaN in predictions", RuntimeWarning)
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)
    return -ll.mean()


def probit_nll(w, X, y):
    z = X.dot(w).clip(-30.0, 30.0)
    s = 2 * y - 1
    return -norm.logcdf(s * z).sum()


CASES = [
    dict(name="logistic_nll", fn=logistic_nll, args=make_logistic_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="raise ValueError(f-string) on branches not taken, assert with an f-string message, "
                    "keyword-only params with defaults, np.logaddexp, w.dot(w), len(y)"),
    dict(name="cross_entropy_errstate", fn=cross_entropy, args=make_logistic_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="`with np.errstate(...)` (return inside a with block in a helper), "
                    "warnings.warn on a branch not taken, np.isnan/np.any, ll.mean()"),
    dict(name="probit_nll", fn=probit_nll, args=make_logistic_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="scipy.stats.norm.logcdf, method chain X.dot(w).clip(lo, hi), (...).sum()"),
]
