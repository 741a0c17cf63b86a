"""What compiled code sees in place of numpy, numpy.linalg, scipy.special and math.

Copies of those modules with the stand-ins in place of the functions that have one (`for_numba`,
`compiled_globals`).  Importing this module imports every family module first, so every stand-in
is registered before a copy is made (a copy keeps the functions it was made with).
"""
from __future__ import annotations

import types as pytypes
from typing import Any

from .common import STANDINS
# The families register their stand-ins on import.
from ...ops.elementwise import numba as elementwise
from ...ops.shape import numba_joins as joins
from ...ops.linalg import numba as linalg
from ...ops.reductions import numba_norm as norm
from ...ops.linalg import numba_trace as trace
from ...ops.shape import numba_pad_diff as pad_diff
from ...ops.linalg import numba_product_vjps as product_vjps
from ...ops.linalg import numba_products as products
from ...ops.reductions import numba as reductions
from ...ops.shape import numba_reorder as reorder
from ...ops.shape import numba as shape
from ...ops.special import numba as special

FAMILIES = (elementwise, joins, linalg, norm, trace, pad_diff, product_vjps, products, reductions, reorder,
            shape, special)

_MODULES: dict[str, Any] = {}             # module name -> its copy for Numba


def _module_names() -> tuple[str, ...]:
    return ("numpy", "numpy.linalg", "scipy.special", "math")


def numba_module(module: pytypes.ModuleType) -> pytypes.ModuleType:
    """A copy of `module` (numpy, numpy.linalg, scipy.special) with stand-ins in place of the
    functions that have one; its submodules copied alike."""
    key = module.__name__
    copy = _MODULES.get(key)
    if copy is None:
        copy = pytypes.ModuleType(key, module.__doc__)
        _MODULES[key] = copy
        for attr, value in vars(module).items():
            copy.__dict__[attr] = for_numba(value)
    return copy


def for_numba(value):
    """What compiled code sees in place of `value`: a stand-in, a module copy, or value itself."""
    if isinstance(value, pytypes.ModuleType):
        return numba_module(value) if value.__name__ in _module_names() else value
    try:
        return STANDINS.get(id(value), value)
    except TypeError:
        return value


def compiled_globals(namespace: dict) -> dict:
    """`namespace` (a generated module's or a helper's globals) as compiled code sees it."""
    return {k: for_numba(v) for k, v in namespace.items()}
