"""jit of nested transforms, routed to forms Numba compiles: grad(grad(f)) of a number as forward
over reverse, vmap(grad(f)) of dict arguments as the vmap of the gradient of a wrapper over their
leaves (transformations/jit.py calls these with its Jitted object)."""
from __future__ import annotations

import numpy as np

from .. import pytree
from ..errors import ArgumentError
from .calls import unit_basis
from .grad import Transformed
from .sources import flat_wrapper, source_function
from .vmap import Batched, leaf_axes


def second_derivative_of_a_number(fun, args) -> bool:
    """grad(grad(f, i), j), both plain (no aux, one argnum), argument i a number."""
    def plain_grad(t) -> bool:
        return isinstance(t, Transformed) and t.transform == "grad" and not t.has_aux and not t.tuple_out \
            and len(t.argnums) == 1
    if not (plain_grad(fun) and plain_grad(fun.fun)) or isinstance(fun.fun.fun, (Transformed, Batched)):
        return False
    i = fun.fun.argnums[0]
    return -len(args) <= i < len(args) and isinstance(args[i], (float, int, np.floating, np.ndarray)) \
        and np.ndim(args[i]) == 0 and not isinstance(args[i], bool)


def per_example_grad_of_tree(fun: Batched, args) -> bool:
    """jit(vmap(grad(f))) called with a dict (or other non-tuple pytree) argument."""
    inner = fun.fun
    return isinstance(inner, Transformed) and inner.transform == "grad" and not inner.has_aux \
        and not isinstance(inner.fun, (Transformed, Batched)) and fun.out_axes == 0 \
        and any(isinstance(a, dict) for a in args)


def grad_of_grad(jitted, args):
    """jit(grad(grad(f, i), j)) where argument i is a number: forward over reverse, as hessian,
    the jvp along argument j of the compiled gradient with respect to i (one call per element
    of argument j)."""
    outer, inner = jitted.fun, jitted.fun.fun
    i, j = inner.argnums[0] % len(args), outer.argnums[0] % len(args)
    gen = jitted.jvp_of_grad("grad of grad", source_function(inner.fun), i, j, len(args))
    x = np.asarray(args[j], dtype=float)
    parts = [np.asarray(gen.fn(*args, e)[1]) for e in unit_basis(x)]
    out = np.reshape(np.stack(parts), np.shape(x))
    return out[()] if out.ndim == 0 else out


def per_example_grads_of_tree(jitted, args):
    """vmap(grad(f)) with dict/tuple arguments, compiled: the vmap of the gradient of a wrapper
    taking their leaves (Numba has no type for a dict of arrays of several ranks), whose
    per-example leaf gradients are put back in each argument's structure."""
    batched, grad_of = jitted.fun, jitted.fun.fun
    spec = batched.in_axes
    specs = list(spec) if isinstance(spec, (list, tuple)) else [spec] * len(args)
    if len(specs) != len(args):
        raise ArgumentError(f"vmap: in_axes has {len(specs)} entries but the function was called with "
                            f"{len(args)} arguments")
    treedefs, flat, axes, groups = [], [], [], {}
    for i, (a, ax) in enumerate(zip(args, specs)):
        leaves, td = pytree.tree_flatten(a)
        if pytree.is_leaf(td):
            groups[i] = (None, [len(flat)])
            treedefs.append(None)
            flat.append(a)
            axes.append(ax)
            continue
        groups[i] = (td, list(range(len(flat), len(flat) + len(leaves))))
        treedefs.append(td)
        flat += leaves
        axes += leaf_axes(ax, td, i)
    leaf_nums = tuple(n for a in grad_of.argnums for n in groups[a][1])
    wrapper = flat_wrapper(source_function(grad_of.fun), tuple(treedefs))
    key = ("per-example tree", wrapper, leaf_nums, tuple(axes))
    compiled = jitted._inner_jits.get(key)
    if compiled is None:
        compiled = jitted._inner_jits[key] = jitted._like_me(
            Batched(Transformed(wrapper, "grad", leaf_nums, False), tuple(axes), 0, batched.axis_size))
    leaf_grads, out, k = list(compiled(*flat)), [], 0
    for a in grad_of.argnums:
        td, nums = groups[a]
        part, k = leaf_grads[k:k + len(nums)], k + len(nums)
        out.append(part[0] if td is None else pytree.tree_unflatten(td, part))
    return tuple(out) if grad_of.tuple_out else out[0]
