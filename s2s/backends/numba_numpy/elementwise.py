"""Stand-ins for Numba: elementwise functions it lacks (see s2s/backends/numba_numpy/__init__.py).

np.heaviside (scalars and arrays, broadcasting as NumPy does) and math.cbrt.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types

from ..numba_lower import _is_array
from . import standin
from .special import _ufunc     # (lazy numba.vectorize of a scalar kernel)


@numba.njit(cache=True)
def _heaviside(x1, x2):
    if x1 != x1:
        return x1
    if x1 < 0.0:
        return 0.0
    if x1 > 0.0:
        return 1.0
    return x2


def _real(t) -> bool:
    dt = t.dtype if _is_array(t) else t
    return isinstance(dt, (types.Float, types.Integer))


@standin(np.heaviside)
def _heaviside_typer(x1, x2):
    if not (_real(x1) and _real(x2)):
        return None
    if _is_array(x1) or _is_array(x2):
        uf = _ufunc(_heaviside, 2)
        return lambda x1, x2: uf(x1, x2)
    return lambda x1, x2: _heaviside(float(x1), float(x2))


if hasattr(math, "cbrt"):
    @standin(math.cbrt, home="math")
    def _cbrt_typer(x):
        if not isinstance(x, (types.Float, types.Integer)):
            return None
        return lambda x: np.cbrt(float(x))
