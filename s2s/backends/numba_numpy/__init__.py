"""NumPy (and scipy.special) for Numba: stand-ins for the functions and argument forms that
Numba's nopython mode lacks.

Compiled code - the generated functions and the plain-NumPy helpers they call - runs with `np`
bound to a copy of the numpy module in which such functions are replaced by stand-ins (and
`np.linalg`, `scipy.special` likewise; `for_numba` makes the copies).  A stand-in calls the
original in Python; its Numba implementation (an `@overload`, in this package's family modules)
covers the forms s2s generates and users write: keyword arguments, `axis=None`/int/tuple,
`keepdims`, `ddof`, stacked (batched) linear algebra, lists and tuples of arrays, Python floats,
0-d arrays.  Where Numba's own implementation covers a form, the overload returns it.

Generated Python keeps calling NumPy itself, so the Python path never runs a stand-in: a
stand-in's overload must give NumPy's answer (to rounding) for every form it accepts, and reject
(return None, or raise a TypingError naming the form) anything else - never guess.

Families, one module each: reductions (var, std, cumsum/cumprod, average, norm, trace,
diagonal, ...), linalg (det/solve/inv of stacks, cholesky, eigvalsh, svd, inner, vdot,
tensordot, einsum, kron, cross, ...), shape (squeeze, tile, repeat, concatenate/stack of lists,
atleast_nd, pad, flip, roll, sort, diff, take, split, ...), special (scipy.special functions).
"""
from __future__ import annotations

import types as pytypes
from typing import Any, Callable

import numpy as np
from numba.core import types as nbtypes
from numba.extending import overload

from ..numba_lower import CHECKED

STANDINS: dict[int, Callable] = {}        # id(original function) -> its stand-in
_ORIGINALS: dict[int, Callable] = {}      # id(stand-in) -> the original
_MODULES: dict[str, Any] = {}             # module name -> its copy for Numba


def standin(original: Callable, home: str | None = None, **overload_options):
    """Register the decorated typer (an `@overload` typer: argument types -> implementation, or
    None) as the Numba implementation of `original` in compiled code.  `home`: the module named
    in the stand-in's docstring where `original` has no __module__ (scipy.special's ufuncs)."""
    def register(typer):
        def fn(*args, **kwargs):
            return original(*args, **kwargs)
        fn.__name__ = fn.__qualname__ = getattr(original, "__name__", "standin")
        module = home or getattr(original, "__module__", None) or "numpy"
        fn.__doc__ = f"{module}.{fn.__name__} in code compiled by s2s (see s2s.backends.numba_numpy)."
        # (indices out of range raise IndexError: see numba_lower.CHECKED)
        options = {**overload_options, "jit_options": {**CHECKED, **overload_options.get("jit_options", {})}}
        overload(fn, prefer_literal=True, **options)(typer)
        STANDINS[id(original)] = fn
        _ORIGINALS[id(fn)] = original
        return typer
    return register


def flag_value(t):
    """The constant value of a bool argument (a literal, or an omitted default), else None."""
    if isinstance(t, bool):
        return t
    if isinstance(t, nbtypes.BooleanLiteral):
        return t.literal_value
    if isinstance(t, nbtypes.Omitted):
        return bool(t.value)
    if t is None or isinstance(t, nbtypes.NoneType):
        return False
    return None


def literal_value(t, default=None):
    """The constant value of an argument type: a Python default, a literal, an omitted default,
    a tuple of literals; `default` when it is not a constant."""
    if t is None or isinstance(t, (bool, int, float, str, tuple)):
        return t
    if isinstance(t, nbtypes.Omitted):
        return t.value
    if isinstance(t, nbtypes.NoneType):
        return None
    if isinstance(t, nbtypes.Literal):
        return t.literal_value
    if isinstance(t, nbtypes.BaseTuple) and all(isinstance(e, nbtypes.Literal) for e in t.types):
        return tuple(e.literal_value for e in t.types)
    return default


def original_of(fn) -> Callable | None:
    return _ORIGINALS.get(id(fn))


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


# The families register their stand-ins on import.
from . import elementwise, linalg, reductions, shape, special  # noqa: E402,F401
