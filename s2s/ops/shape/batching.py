"""vmap's rules for the shape family (OpRule.batch_rule, read by transforms/batching_ops.py):
np.shape, np.ndim, np.size and len of a batched array answer for one example; joins of a list
literal with batched elements (np.stack, np.array, np.asarray, np.concatenate) join along the
next axis."""
from __future__ import annotations

import builtins

import gast
import numpy as np

from ...frontend.ast_build import const
from ...rules.registry import declare
from ...runtime import batching as rtb
from . import helpers as sh
from ...transforms.common import rule_call


def _ndim(value):
    return gast.BinOp(rule_call(np.ndim, [value.args[0]]), gast.Sub(), const(1))


declare(np.shape, batch_rule=lambda value: rule_call(rtb.bshape, [value.args[0]]))
declare(np.ndim, batch_rule=_ndim)
declare(np.size, batch_rule=lambda value: rule_call(rtb.bsize, [value.args[0]]))
declare(builtins.len, batch_rule=lambda value: rule_call(rtb.blen, [value.args[0]]))


# ----- joins of a list literal: np.stack / np.array / np.asarray / np.concatenate ----------------
# `np.stack([a, b, c], axis=k)` with some elements batched is the stack of the batched elements
# (unbatched ones expanded to the batch by `expand`) along axis k + 1: one array operation, no
# per-example loop (the Jacobian of `np.array([s[1], -np.sin(s[0])])`, a pendulum's state).
# These rules take (call node, expand) and return None where the call has another form (axis
# not a constant, nested lists, a dtype), which then runs per example.
def _batched_axis(axis: int) -> int:
    """An example's axis in the batch (axis 0 the batch's): non-negative ones move up by one."""
    return axis + 1 if axis >= 0 else axis


def _nested(elts) -> bool:
    return any(isinstance(e, (gast.List, gast.Tuple, gast.Starred)) for e in elts)


def _axis(value, default):
    given = [k.value for k in value.keywords if k.arg == "axis"] + list(value.args[1:2])
    axis = given[0] if given else const(default)
    if not (isinstance(axis, gast.Constant) and type(axis.value) is int):
        return None
    return _batched_axis(axis.value)


def _flat_elements(value, allowed_keywords):
    seq = value.args[0]
    if _nested(seq.elts) or not seq.elts:
        return None
    for k in value.keywords:
        if k.arg not in allowed_keywords:
            return None
        ok = allowed_keywords[k.arg]
        if ok is not None and not (isinstance(k.value, gast.Constant) and k.value.value in ok):
            return None
    return seq.elts


def _join(op, default_axis, allowed_keywords):
    def rule(value, expand):
        if not isinstance(value.args[0], (gast.List, gast.Tuple)) or len(value.args) > (2 if default_axis is not None else 1):
            return None
        elts = _flat_elements(value, allowed_keywords)
        axis = _axis(value, 0 if default_axis is None else default_axis)
        if elts is None or axis is None:
            return None
        return rule_call(op, [gast.List([expand(e) for e in elts], gast.Load())], {"axis": const(axis)})
    return rule


# (np.array / np.asarray of a flat list of same-shaped values is their stack along a new axis 0)
declare(np.stack, batch_rule=_join(np.stack, 0, {"axis": None}))
declare(np.concatenate, batch_rule=_join(np.concatenate, 0, {"axis": None}))
declare(np.array, batch_rule=_join(np.stack, None, {"ndmin": (0,), "copy": (True,)}))
declare(np.asarray, batch_rule=_join(np.stack, None, {}))


# Their cotangents: a list of pieces, which a batch holds as one array with the list's axis at 1
# (what a per-example loop would stack): stack_vjp(g, [a, b], k) is g's axis k + 1 moved to 1;
# array_vjp(g, [a, b]) is g itself.
def _stack_vjp(value, expand):
    g, arrays = value.args[:2]
    axis = value.args[2] if len(value.args) > 2 else const(0)
    if not (isinstance(arrays, (gast.List, gast.Tuple)) and isinstance(axis, gast.Constant)
            and type(axis.value) is int) or value.keywords:
        return None
    return rule_call(np.moveaxis, [expand(g), const(_batched_axis(axis.value)), const(1)])


def _array_vjp(value, expand):
    g, obj = value.args
    if not isinstance(obj, (gast.List, gast.Tuple)) or value.keywords or _nested(obj.elts):
        return None
    return expand(g)


declare(sh.stack_vjp, batch_rule=_stack_vjp)
declare(sh.array_vjp, batch_rule=_array_vjp)
