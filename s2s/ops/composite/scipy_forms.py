"""SciPy functions as composites (loaded once the user's code imported scipy.optimize): the
Rosenbrock test function and its derivatives, whose own source goes through SciPy's array-API
layer (`xp = array_namespace(x)`, `xp_promote`, `xpx.at(...)`); written here with ops that have
rules, for 1-d x as SciPy documents them (rosen itself along axis 0 for any rank, as SciPy)."""
from __future__ import annotations

import numpy as np
import scipy.optimize

from ...rules.registry import register_composite


def rosen(x):
    x = np.asarray(x) * 1.0
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0, axis=0)


def rosen_der(x):
    x = np.asarray(x) * 1.0
    xm, xm_m1, xm_p1 = x[1:-1], x[:-2], x[2:]
    middle = 200 * (xm - xm_m1 ** 2) - 400 * (xm_p1 - xm ** 2) * xm - 2 * (1 - xm)
    first = -400 * x[0:1] * (x[1:2] - x[0:1] ** 2) - 2 * (1 - x[0:1])
    last = 200 * (x[-1:] - x[-2:-1] ** 2)
    return np.concatenate((first, middle, last))


def rosen_hess_prod(x, p):
    x = np.asarray(x) * 1.0
    p = np.asarray(p) * 1.0
    first = (1200 * x[0:1] ** 2 - 400 * x[1:2] + 2) * p[0:1] - 400 * x[0:1] * p[1:2]
    middle = (-400 * x[:-2] * p[:-2] + (202 + 1200 * x[1:-1] ** 2 - 400 * x[2:]) * p[1:-1]
              - 400 * x[1:-1] * p[2:])
    last = -400 * x[-2:-1] * p[-2:-1] + 200 * p[-1:]
    return np.concatenate((first, middle, last))


def rosen_hess(x):
    x = np.asarray(x) * 1.0
    upper = np.diag(-400 * x[:-1], 1)
    lower = np.diag(-400 * x[:-1], -1)
    diagonal = np.concatenate((1200 * x[0:1] ** 2 - 400 * x[1:2] + 2,
                               202 + 1200 * x[1:-1] ** 2 - 400 * x[2:], np.array([200.0])))
    return upper + lower + np.diag(diagonal)


for _fn, _definition in ((scipy.optimize.rosen, rosen), (scipy.optimize.rosen_der, rosen_der),
                         (scipy.optimize.rosen_hess_prod, rosen_hess_prod), (scipy.optimize.rosen_hess, rosen_hess)):
    register_composite(_fn, _definition)
