"""Batching rules (vmap): the kinds the batching pass knows how to rewrite.

Each op's kind is its OpRule's `batch`, declared beside its rule in its family module:
- "elementwise": ufuncs and friends; batched operands are rank-aligned;
- "reduce": an `axis` argument that shifts past the batch axis;
- "axis_args": the parameters in OpRule.axis_params name axes, shifted past the batch axis;
- "matmul": per-example matrix products (bmatmul); "dot": np.dot's (bdot: a stack is not a matmul);
- "reshape", "transpose": each example reshaped in C order / its own axes permuted;
- "shape_query": np.shape/np.ndim/np.size/len answer per example;
- "same": the op already acts per example on (batch, ...) arrays;
- "shape_fn": a function of shapes and constant arguments only, evaluated on the first example;
- "seed", "unbroadcast", "broadcast_like", "expand_reduced": reverse-mode helpers.
An op with no kind runs in a per-example loop (bmap): slower, never wrong.  Every ufunc but
matmul is elementwise.  The few plain-Python helpers below have no rule (s2s reads them as code)
but a kind: the batching pass rewrites their calls itself.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import runtime as rt
from ..ops.fft import helpers as fh
from .table import lookup

# helpers without a rule -> their kind
_HELPER_KINDS: dict[int, str] = {id(fh.angle_slope): "elementwise",
                                 id(rt.matmul_vjp_a): "matmul_vjp_a", id(rt.matmul_vjp_b): "matmul_vjp_b"}
_HELPERS = (fh.angle_slope, rt.matmul_vjp_a, rt.matmul_vjp_b)


def batch_kind(fn: Any) -> str | None:
    rule = lookup(fn)
    kind = rule.batch if rule is not None else _HELPER_KINDS.get(id(fn))
    if kind is not None:
        return kind
    if isinstance(fn, np.ufunc):      # (np.matmul's record says "matmul")
        return "elementwise"
    return None


def kept_calls() -> frozenset:
    """Plain-Python helpers the batching pass rewrites itself (instead of inlining their bodies)."""
    return frozenset(fn for fn in _HELPERS if batch_kind(fn) in ("matmul_vjp_a", "matmul_vjp_b"))
