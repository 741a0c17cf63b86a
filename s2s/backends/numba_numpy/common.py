"""The stand-in registry the family modules share (see s2s/backends/numba_numpy/__init__.py).

`standin` registers a typer (an `@overload` typer: argument types -> implementation, or None) as
the Numba implementation of a NumPy (or scipy.special, math) function in compiled code; STANDINS
maps the original to its stand-in.  `flag_value` and `literal_value` read constant arguments off
their types.
"""
from __future__ import annotations

from typing import Callable

from numba.core import types as nbtypes

from ..numba_lower.common import overload

STANDINS: dict[int, Callable] = {}        # id(original function) -> its stand-in
_ORIGINALS: dict[int, Callable] = {}      # id(stand-in) -> the original


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
        # (s2s's overload: indices out of range raise IndexError, CHECKED; each implementation is
        # kept in the disk cache where Numba can keep it)
        overload(fn, prefer_literal=True, **overload_options)(typer)
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
