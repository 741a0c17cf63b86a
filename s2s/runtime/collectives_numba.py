"""Numba lowering of collectives.py: each collective runs its Python implementation in
object mode (`numba.objmode`, which takes the GIL for that block only).  The compiled per-device
code between collectives runs with the GIL released (pmap compiles it `nogil`), so devices that are
threads compute in parallel and meet only to exchange.  The result type is fixed at typing time
from the argument types: the same array kind (C order) as x, one more dimension for all_gather,
one fewer for all_gather_vjp, a float64 for a float, an int64 for an index.
"""
from __future__ import annotations

import sys

import numba
import numpy as np
from numba import types
from numba.extending import register_jitable

from . import collectives as rc
from ..backends.numba_lower.common import is_array, overload


def _array(dtype, ndim: int):
    return types.Array(dtype, ndim, "C") if ndim > 0 else dtype


def _float_of(dtype):
    return dtype if isinstance(dtype, (types.Float, types.Complex)) else types.float64


def _result_type(op: str, x, tiled: bool = False):
    """The type `op(x, ...)` returns in compiled code (None: not lowered for that type)."""
    if is_array(x):
        dtype, ndim = x.dtype, x.ndim
    elif isinstance(x, (types.Float, types.Integer, types.Boolean)):
        dtype, ndim = (types.float64 if isinstance(x, types.Float) else types.int64), 0
    else:
        return None
    if op in ("pmean", "extremum_share"):
        dtype = _float_of(dtype)
    elif op == "psum" and isinstance(dtype, types.Boolean):
        dtype = types.int64           # (a sum of flags counts them)
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


def _boxed(value, spec: tuple):
    """What the object-mode block hands back: a C-order array of the rank and dtype the compiled code
    was typed for, or a plain number (object mode converts without checking: a wrong rank would be
    read as garbage)."""
    ndim, dtype = spec
    value = np.asarray(value)
    if value.ndim != ndim:
        raise TypeError(f"s2s: a collective returned an array of rank {value.ndim} where the compiled code "
                        f"expects rank {ndim}")
    if ndim == 0:
        return value.astype(dtype).item()
    return np.ascontiguousarray(value, dtype=dtype)


# (impls are closures of this module, not exec'd source: compiled code that calls them is cached
# on disk, and a cached object-mode block needs its function's module to rebuild its environment)
def _typed(op: str, x, tiled=False):
    """The result type of op(x, ...) in compiled code and what _boxed checks the value against."""
    out = _result_type(op, x, _literal_bool(tiled))
    if out is None:
        return None, None
    dtype = out.dtype if isinstance(out, types.Array) else out
    return out, (out.ndim if isinstance(out, types.Array) else 0, str(numba.np.numpy_support.as_dtype(dtype)))


def _needs_literal(tiled) -> bool:
    """A `tiled` flag whose value the typer cannot see (it decides the result's rank)."""
    return isinstance(tiled, types.Boolean) and not isinstance(tiled, types.Literal)


def _numba_mpi():
    """numba-mpi, when this process runs MPI (mpi4py.MPI imported: the mpi backend is in use; the
    import initializes MPI, which a cpu-only process should not pay for)."""
    if "mpi4py.MPI" not in sys.modules:
        return None
    try:
        import numba_mpi
    except ImportError:
        return None
    return numba_mpi


def _reduction(op: str, fn, x, how: str):
    """psum / pmax / pmin in compiled code.  On an MPI group the ranks first agree (object mode,
    non-blocking with the timeout: a failed rank is noticed there), then the data moves by
    numba-mpi's allreduce without leaving compiled code; on other groups the collective runs in
    object mode."""
    out_type, spec = _typed(op, x)
    if out_type is None:
        return None
    nm = _numba_mpi()
    if nm is None or not isinstance(getattr(x, "dtype", x), (types.Float, types.Integer)):
        def impl(x, axis_name):
            with numba.objmode(out=out_type):
                out = _boxed(fn(x, axis_name), spec)
            return out
        return impl
    operator = {"sum": nm.Operator.SUM, "max": nm.Operator.MAX, "min": nm.Operator.MIN}[how]
    allreduce = nm.allreduce
    if isinstance(x, types.Array):
        def impl(x, axis_name):
            with numba.objmode(agreed="int64"):
                agreed = rc._mpi_agreed(x, axis_name, op)
            if agreed == 1:
                src = np.ascontiguousarray(x)
                out = np.empty_like(src)
                allreduce(src, out, operator)
                return out
            with numba.objmode(out=out_type):
                out = _boxed(fn(x, axis_name), spec)
            return out
        return impl

    def impl(x, axis_name):
        with numba.objmode(agreed="int64"):
            agreed = rc._mpi_agreed(x, axis_name, op)
        if agreed == 1:
            src = np.empty(1, dtype=out_type)
            src[0] = x
            out = np.empty_like(src)
            allreduce(src, out, operator)
            return out[0]
        with numba.objmode(out=out_type):
            out = _boxed(fn(x, axis_name), spec)
        return out
    return impl


@overload(rc.psum)
def _psum(x, axis_name):
    return _reduction("psum", rc.psum, x, "sum")


@overload(rc.pmax)
def _pmax(x, axis_name):
    return _reduction("pmax", rc.pmax, x, "max")


@overload(rc.pmin)
def _pmin(x, axis_name):
    return _reduction("pmin", rc.pmin, x, "min")


@overload(rc.pmean)
def _pmean(x, axis_name):
    out_type, spec = _typed("pmean", x)
    if out_type is None:
        return None

    def impl(x, axis_name):
        return rc.psum(x, axis_name) / rc.axis_size(axis_name)
    return impl


@overload(rc.extremum_share)
def _extremum_share(x, y, axis_name):
    out_type, spec = _typed("extremum_share", x)
    if out_type is None:
        return None

    def impl(x, y, axis_name):
        with numba.objmode(out=out_type):
            out = _boxed(rc.extremum_share(x, y, axis_name), spec)
        return out
    return impl


@overload(rc.all_gather)
def _all_gather(x, axis_name, axis=0, tiled=False):
    if _needs_literal(tiled):
        return lambda x, axis_name, axis=0, tiled=False: numba.literally(tiled)
    out_type, spec = _typed("all_gather", x, tiled)
    if out_type is None:
        return None

    def impl(x, axis_name, axis=0, tiled=False):
        with numba.objmode(out=out_type):
            out = _boxed(rc.all_gather(x, axis_name, axis, tiled), spec)
        return out
    return impl


@overload(rc.all_gather_vjp)
def _all_gather_vjp(x, axis_name, axis=0, tiled=False):
    if _needs_literal(tiled):
        return lambda x, axis_name, axis=0, tiled=False: numba.literally(tiled)
    out_type, spec = _typed("all_gather_vjp", x, tiled)
    if out_type is None:
        return None

    def impl(x, axis_name, axis=0, tiled=False):
        with numba.objmode(out=out_type):
            out = _boxed(rc.all_gather_vjp(x, axis_name, axis, tiled), spec)
        return out
    return impl


@overload(rc.all_to_all)
def _all_to_all(x, axis_name, split_axis, concat_axis, tiled=False):
    if _needs_literal(tiled):
        return lambda x, axis_name, split_axis, concat_axis, tiled=False: numba.literally(tiled)
    out_type, spec = _typed("all_to_all", x)
    if out_type is None:
        return None

    def impl(x, axis_name, split_axis, concat_axis, tiled=False):
        with numba.objmode(out=out_type):
            out = _boxed(rc.all_to_all(x, axis_name, split_axis, concat_axis, tiled), spec)
        return out
    return impl


@overload(rc.pswapaxes)
def _pswapaxes(x, axis_name, axis):
    out_type, spec = _typed("pswapaxes", x)
    if out_type is None:
        return None

    def impl(x, axis_name, axis):
        with numba.objmode(out=out_type):
            out = _boxed(rc.pswapaxes(x, axis_name, axis), spec)
        return out
    return impl


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
    out_type, spec = _typed("ppermute", x)
    if out_type is None:
        return None

    def impl(x, axis_name, perm):
        pairs = _pairs(perm)
        with numba.objmode(out=out_type):
            out = _boxed(rc.ppermute(x, axis_name, pairs), spec)
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
