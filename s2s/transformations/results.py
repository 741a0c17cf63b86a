"""What a transform hands back is the caller's own: writeable arrays that share no memory with
the arguments.

Generated code may return a read-only view (the cotangent of np.sum is `np.broadcast_to(g,
x.shape)`, zero strides) or an argument itself (the cotangent of the identity is the cotangent
passed in; the primal value of `lambda x: x` is x): `g *= lr` would then raise, or change what the
caller passed.  `owned` copies those arrays, and only those, at the point results leave s2s
(grad, value_and_grad, vjp and its cotangent function, jvp, jacfwd/jacrev/hessian, vmap), as
jit's compiled code already returns arrays of its own.  The test is cheap: a flag, and the
memory each array comes from (the object at the end of its chain of bases) looked up among the
arguments'; only arrays from the same memory get np.may_share_memory's bounds check.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def _arrays(tree, found: list) -> list:
    if isinstance(tree, np.ndarray):
        found.append(tree)
    elif isinstance(tree, (tuple, list)):
        for e in tree:
            _arrays(e, found)
    elif isinstance(tree, dict):
        for e in tree.values():
            _arrays(e, found)
    return found


def _memory(a: np.ndarray) -> int:
    """The identity of the memory `a` views: the array at the end of its chain of bases when that
    one owns its data; -1 for memory of another object (np.frombuffer, a memoryview: two arrays
    over one buffer can have different base objects), all of which are compared with each other."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return id(a) if a.base is None else -1


def owned(out: Any, inputs: Any) -> Any:
    """`out` (nested tuples, lists and dicts of results) with each array that is read-only or may
    share memory with an array of `inputs` replaced by a copy, and each Python float by np.float64
    (jit's compiled code returns those: every tier and transform answers with the same types);
    the rest as they are."""
    memories: dict[int, list] = {}
    for a in _arrays(inputs, []):
        memories.setdefault(_memory(a), []).append(a)
    return _owned(out, memories)


def _owned(out: Any, inputs: dict) -> Any:
    if type(out) is float:       # (NumPy's number, as compiled code and NumPy's reductions return)
        return np.float64(out)
    if isinstance(out, np.ndarray):
        if not out.flags.writeable or any(np.may_share_memory(out, a) for a in inputs.get(_memory(out), ())):
            return out.copy()
        return out
    if isinstance(out, (tuple, list)):
        items = [_owned(e, inputs) for e in out]
        if all(a is b for a, b in zip(items, out)):
            return out
        if hasattr(out, "_fields"):             # a namedtuple
            return type(out)(*items)
        return type(out)(items) if isinstance(out, list) or type(out) is tuple else out
    if isinstance(out, dict):
        items = {k: _owned(v, inputs) for k, v in out.items()}
        if all(items[k] is out[k] for k in out):
            return out
        return items if type(out) is dict else out
    return out
