"""Numba lowering of a few op helpers of the families (s2s/ops/<family>/helpers.py).

The helpers here are those whose plain-Python bodies use dynamic tuples: fft/helpers.cotangent_kind,
shape/helpers.array_vjp and linspace_weights, reductions/helpers.prod_except.  (numba_errors.py
counts this module's code as s2s's own when it words a compile failure.)  The other op helpers'
Numba versions sit beside the stand-ins of their ops, in their family's numba*.py; the rest are
compiled from their plain-NumPy bodies.
"""
from __future__ import annotations

import numpy as np
from numba import types

from ...ops.fft import helpers as fh
from ...ops.reductions import helpers as rh
from ...ops.shape import helpers as sh
from .common import impl_from_source, is_array, is_complex, overload
from ...ops.reductions.numba_kernels import axis_mask, axis_mask_impl, kept_shape_from_mask, reduced_flat_index


@overload(fh.cotangent_kind)
def _cotangent_kind(v, like):
    if is_complex(v) and not is_complex(like):
        return lambda v, like: np.real(v)
    if is_complex(like) and not is_complex(v):
        return lambda v, like: v * (1.0 + 0.0j)
    return lambda v, like: v


# np.array(obj)'s cotangent, one level of obj's nesting per loop: the plain helper recurses, and
# Numba's cached machine code of a caller of a recursive function crashes the next process that
# loads it (the recursive call's address is fixed up when compiled, not when loaded from disk)
def _array_vjp_source(obj, g: str, o: str, depth: int) -> list[str]:
    if not isinstance(obj, (types.List, types.BaseTuple)):
        return None
    inner = obj.dtype if isinstance(obj, types.List) else (obj.types[0] if len(obj.types) else None)
    if isinstance(obj, types.BaseTuple) and any(t != inner for t in obj.types):
        return None          # a heterogeneous tuple: no list type holds its cotangents
    out, i = f"out{depth}", f"i{depth}"
    lines = [f"{out} = []", f"for {i} in range(len({o})):"]
    if isinstance(inner, (types.List, types.BaseTuple)):
        body = _array_vjp_source(inner, f"{g}[{i}]", f"{o}[{i}]", depth + 1)
        if body is None:
            return None
        lines += ["    " + ln for ln in body] + [f"    {out}.append(out{depth + 1})"]
    else:
        lines.append(f"    {out}.append({g}[{i}])")
    return lines


@overload(sh.array_vjp)
def _array_vjp(g, obj):
    if not isinstance(obj, (types.List, types.BaseTuple)):
        return lambda g, obj: g
    body = _array_vjp_source(obj, "g", "obj", 0)
    if body is None:
        return None
    return impl_from_source("def impl(g, obj):\n" + "".join("    " + ln + "\n" for ln in body) + "    return out0\n")


@overload(sh.linspace_weights)
def _linspace_weights(y, num, endpoint=True, retstep=False, axis=0):
    if not is_array(y) or y.ndim != 1:
        return None          # a linspace of arrays: no compiled version (the error says so)

    def impl(y, num, endpoint=True, retstep=False, axis=0):
        if retstep or axis != 0:
            raise ValueError("s2s differentiates np.linspace only with retstep=False and axis=0")
        div = num - 1 if endpoint else num
        return np.arange(num) / max(div, 1)
    return impl


@overload(rh.prod_except)
def _prod_except(x, axis=None):
    if not is_array(x) or x.ndim == 0:
        return lambda x, axis=None: 1.0
    if axis_mask_impl(axis) is None:
        return None
    nd = x.ndim

    def impl(x, axis=None):
        # product of the other elements in each reduced group, division-free (exact at zeros)
        kshape = kept_shape_from_mask(x.shape, axis_mask(axis, nd))
        size = 1
        for d in range(nd):
            size *= kshape[d]
        xc = np.ascontiguousarray(x).ravel()
        groups = np.empty(xc.size, dtype=np.int64)
        counts = np.zeros(size, dtype=np.int64)
        for flat in range(xc.size):
            j = reduced_flat_index(flat, x.shape, kshape)
            groups[flat] = j
            counts[j] += 1
        out = np.empty(xc.size)
        for flat in range(xc.size):
            p = 1.0
            j = groups[flat]
            for other in range(xc.size):
                if other != flat and groups[other] == j:
                    p *= xc[other]
            out[flat] = p
        return out.reshape(x.shape)
    return impl
