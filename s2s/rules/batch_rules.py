"""Batching rules (vmap), by family.

Each op gets a *kind* the batching pass knows how to rewrite:
- "elementwise": ufuncs and friends; batched operands are rank-aligned;
- "reduce": an `axis` argument that shifts past the batch axis;
- "matmul": per-example matrix products (bmatmul);
- "shape_query": np.shape/np.ndim/np.size/len answer per example;
- "same": the op already acts per example on (batch, ...) arrays;
- "seed", "unbroadcast", "expand_reduced", "reduced_size": reverse-mode helpers.
An op with no kind runs in a per-example loop (bmap): slower, never wrong.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import runtime as rt
from ..runtime import batching as rtb
from ..runtime import collectives as rc
from . import elementwise_helpers as eh
from . import fft_helpers as fh
from . import products_helpers as ph
from . import reduction_helpers as rh
from . import shape_helpers as sh

_KINDS: dict[int, str] = {}
_KEEP: list = []


def set_kind(kind: str, *fns: Any) -> None:
    for fn in fns:
        _KINDS[id(fn)] = kind
        _KEEP.append(fn)


def batch_kind(fn: Any) -> str | None:
    kind = _KINDS.get(id(fn))
    if kind is not None:
        return kind
    if isinstance(fn, np.ufunc) and fn is not np.matmul:
        return "elementwise"
    return None


set_kind("elementwise", np.where, np.clip, builtins.abs, rt.tie_weight, np.real, np.imag, np.angle, fh.angle_slope,
         eh.abs_slope)
set_kind("reduce", np.sum, np.mean, np.max, np.min, np.prod, np.amax, np.amin, np.any, np.all,
         np.argmax, np.argmin, np.std, np.var)
set_kind("matmul", np.matmul, np.dot)
set_kind("shape_query", np.shape, np.ndim, np.size, builtins.len)
set_kind("same", np.copy, np.asarray, rt.zeros_like, np.zeros_like, np.ones_like, rt.stop_gradient, rt.astype,
         rt.copy_value, fh.cotangent_kind)
set_kind("seed", rt.seed_cotangent)
set_kind("unbroadcast", rt.unbroadcast)
set_kind("broadcast_like", rt.broadcast_like)
set_kind("expand_reduced", rt.expand_reduced)
set_kind("reduced_size", rt.reduced_size)
# Functions of shapes only: evaluated on the first example (same for all).
set_kind("shape_fn", rtb.batch_size, rtb.baxis, rtb.ex_ndim, rt.reduced_size, rtb.breduced_size, rtb.bshape, rtb.bsize,
         rtb.blen, rt.inverse_axes, rt.fft_axes, rt.float_dtype_flag, rt.check_unpack, rt.check_rank,
         rt.check_array_output, rt.check_unset, rt.check_unshared, rt.check_element_view, rt.check_row, rt.check_nonempty, rt.check_not_held,
         rt.list_position)
# Adjoint plans read only their operands' shapes: one plan serves every example (a per-example loop
# would stack their tuples of parts of different shapes as one array, and fail).
set_kind("shape_fn", ph.einsum_plan, ph.kron_plan, sh.tile_plan)
set_kind("shape_fn", rh.kept_shape, rh.reduce_perm, rh.reduce_flat_shape)   # np.quantile's (numpy_composite.py)
# np.linalg.norm's derivative picks its formula from ord, axis and the operand's rank (per example):
# batched as values, its branches would all run on every example
set_kind("shape_fn", rh.norm_kind, rh.norm_matrix_axes, rh.norm_expand_shape)
# Axes, masks and plans computed from shapes and constant arguments only
set_kind("shape_fn", ph.sorted_axes_pair, ph.axes_pair, ph.diag_mask, ph.diag_embedding, ph.tensordot_axes,
         ph.tensordot_vjp_plan, ph.dot_axes, ph.inner_axes, ph.cross_plan, sh.diff_plan, sh.diff_part_shape,
         sh.diff_part_range, sh.diff_part_pad, sh.pad_width_along, sh.pad_index_map, sh.pad_border_mask,
         sh.split_plan, fh.irfft_weights)
set_kind("axis_args", np.expand_dims, np.swapaxes, np.moveaxis, np.squeeze, np.flip, np.roll, np.cumsum, np.cumprod,
         np.reshape, np.transpose, np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft)
# Collectives over pmap's axis act elementwise across devices: a (batch, ...) array is reduced or
# sent as it is; all_gather / all_to_all shift their axes past the batch axis; the device's index is
# one number for every example.
set_kind("same", rc.psum, rc.pmean, rc.pmax, rc.pmin, rc.ppermute, rc.extremum_share)
set_kind("shape_fn", rc.axis_index, rc.axis_size, rc.inverse_perm)
set_kind("axis_args", rc.all_gather, rc.all_gather_vjp, rc.all_to_all, rc.pswapaxes)
set_kind("matmul_vjp_a", rt.matmul_vjp_a)
set_kind("matmul_vjp_b", rt.matmul_vjp_b)


def kept_calls() -> frozenset:
    """Plain-Python helpers the batching pass rewrites itself (instead of inlining their bodies)."""
    return frozenset(fn for fn in _KEEP if batch_kind(fn) in ("matmul_vjp_a", "matmul_vjp_b"))
