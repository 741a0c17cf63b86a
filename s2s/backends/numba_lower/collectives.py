"""Numba lowering of s2s/runtime_collectives.py: each collective runs its Python implementation in
object mode (`numba.objmode`, which takes the GIL for that block only).  The compiled per-device
code between collectives runs with the GIL released (pmap compiles it `nogil`), so devices that are
threads compute in parallel and meet only to exchange.  The result type is fixed at typing time
from the argument types: the same array kind (C order) as x, one more dimension for all_gather,
one fewer for all_gather_vjp, a float64 for a float, an int64 for an index.
"""
from __future__ import annotations

import inspect

import numba
import numpy as np
from numba import types
from numba.extending import register_jitable

from ... import runtime_collectives as rc
from .common import _is_array, overload


def _array(dtype, ndim: int):
    return types.Array(dtype, ndim, "C") if ndim > 0 else dtype


def _float_of(dtype):
    return dtype if isinstance(dtype, (types.Float, types.Complex)) else types.float64


def _result_type(op: str, x, tiled: bool = False):
    """The type `op(x, ...)` returns in compiled code (None: not lowered for that type)."""
    if _is_array(x):
        dtype, ndim = x.dtype, x.ndim
    elif isinstance(x, (types.Float, types.Integer, types.Boolean)):
        dtype, ndim = (types.float64 if isinstance(x, types.Float) else types.int64), 0
    else:
        return None
    if op in ("pmean", "extremum_share"):
        dtype = _float_of(dtype)
    if op == "all_gather":
        ndim = ndim if tiled and ndim > 0 else ndim + 1
    elif op == "all_gather_vjp":
        ndim = ndim if tiled else ndim - 1
    if op in ("all_to_all", "pswapaxes") and ndim == 0:
        return None
    return _array(dtype, ndim)


def _literal_bool(t) -> bool:
    value = getattr(t, "literal_value", None)
    if value is None:
        value = getattr(t, "value", False)
    return bool(value)


def _boxed(value, scalar: bool):
    """What the object-mode block hands back: a C-order array, or a plain number."""
    if scalar:
        return value.item() if hasattr(value, "item") else value
    return np.ascontiguousarray(value)


def _lower(fn, tiled_param: str | None = None):
    """Register the objmode overload of collective `fn` (first parameter x), with fn's own parameter
    names and defaults (generated code passes some by keyword)."""
    op = fn.__name__
    sig = inspect.signature(fn)
    params = list(sig.parameters)
    with_defaults = ", ".join(p if sig.parameters[p].default is inspect.Parameter.empty
                              else f"{p}={sig.parameters[p].default!r}" for p in params)
    src = f"""
def make(out_type, scalar):
    def impl({with_defaults}):
        with numba.objmode(out=out_type):
            out = _boxed(fn({', '.join(params)}), scalar)
        return out
    return impl


def typer({with_defaults}):
    tiled = {tiled_param or 'False'}
    out = _result_type(op, {params[0]}, _literal_bool(tiled))
    if out is None:
        return None
    return make(out, not isinstance(out, types.Array))
"""
    glb = {"numba": numba, "fn": fn, "_boxed": _boxed, "_result_type": _result_type, "op": op,
           "_literal_bool": _literal_bool, "types": types}
    exec(src, glb)
    overload(fn)(glb["typer"])


for _fn in (rc.psum, rc.pmean, rc.pmax, rc.pmin, rc.pswapaxes, rc.extremum_share):
    _lower(_fn)
for _fn in (rc.all_gather, rc.all_gather_vjp, rc.all_to_all):
    _lower(_fn, tiled_param="tiled")


@register_jitable
def _pairs(perm):
    """ppermute's (source, destination) pairs as an (n, 2) array: a list or tuple of pairs cannot
    enter object mode as it is (a reflected list does not box)."""
    out = np.empty((len(perm), 2), dtype=np.int64)
    for k in range(len(perm)):
        out[k, 0] = perm[k][0]
        out[k, 1] = perm[k][1]
    return out


@overload(rc.ppermute)
def _ppermute(x, axis_name, perm):
    out_type = _result_type("ppermute", x)
    if out_type is None:
        return None
    scalar = not isinstance(out_type, types.Array)

    def impl(x, axis_name, perm):
        pairs = _pairs(perm)
        with numba.objmode(out=out_type):
            out = _boxed(rc.ppermute(x, axis_name, pairs), scalar)
        return out
    return impl


@overload(rc.inverse_perm)
def _inverse_perm(perm):
    def impl(perm):
        pairs = _pairs(perm)
        out = np.empty_like(pairs)
        out[:, 0] = pairs[:, 1]
        out[:, 1] = pairs[:, 0]
        return out
    return impl


@overload(rc.axis_index)
def _axis_index(axis_name):
    def impl(axis_name):
        with numba.objmode(out=types.int64):
            out = int(rc.axis_index(axis_name))
        return out
    return impl


@overload(rc.axis_size)
def _axis_size(axis_name):
    def impl(axis_name):
        with numba.objmode(out=types.int64):
            out = int(rc.axis_size(axis_name))
        return out
    return impl
