"""jit of nested transforms, routed to forms Numba compiles: grad(grad(...grad(f))) of numbers as
forward over reverse, vmap(grad(f)) of dict arguments as the vmap of the gradient of a wrapper over their
leaves (transformations/jit.py calls these with its Jitted object)."""
from __future__ import annotations

import numpy as np

from .. import pytree
from ..errors import ArgumentError
from ..pipeline import build
from ..pipeline_options import GenerateOptions
from .calls import defaults_after, unit_basis
from .grad import Transformed
from .sources import flat_wrapper, source_function
from .vmap import Batched, leaf_axes


def derivative_chain(fun, args) -> tuple[int, ...] | None:
    """The arguments differentiated by a chain grad(...grad(grad(f, i1), i2)..., in) (value_and_grad
    outermost allowed; no aux, one argnum each), innermost first, when every argument but the
    outermost one's is a number (each inner derivative is then a number the next one
    differentiates); else None."""
    levels, t = [], fun
    while isinstance(t, Transformed) and not t.has_aux and not t.tuple_out and len(t.argnums) == 1 and (
            t.transform == "grad" or (t is fun and t.transform == "value_and_grad")):
        levels.append(t.argnums[0])
        t = t.fun
    if len(levels) < 2 or isinstance(t, (Transformed, Batched)):
        return None
    n = len(args)
    if not all(-n <= a < n for a in levels):
        return None
    levels = [a % n for a in reversed(levels)]
    for a in levels[:-1]:
        x = args[a]
        if isinstance(x, bool) or not isinstance(x, (float, int, np.floating, np.ndarray)) or np.ndim(x) != 0:
            return None
    return tuple(levels)


def _innermost(fun):
    while isinstance(fun, Transformed):
        fun = fun.fun
    return fun


def chain_key(nargs: int, levels: tuple[int, ...]) -> tuple:
    """Where a Jitted keeps a derivative chain's generated code (its _gens)."""
    return ("derivative chain", nargs, levels)


def chain_generated(jitted, src, levels: tuple[int, ...], nargs: int):
    """The one forward-over-reverse builder: the gradient of src along levels[0] with typed tapes,
    then the jvp along each later level; the outermost compiled with jitted's options. Kept as
    jitted._gens[("derivative chain", nargs, levels)] (jit(hessian) is the chain (a, a))."""
    key = chain_key(nargs, levels)
    gen = jitted._gens.get(key)
    if gen is None:
        gen = build(src, "grad", (levels[0],), False, False, GenerateOptions(tapes="per_variable"))
        for k, a in enumerate(levels[1:], start=1):
            options = jitted._options(fuse=False) if k == len(levels) - 1 else GenerateOptions(tapes="per_variable")
            gen = build(gen.fn, "jvp", (a,), False, False, options)
        jitted._gens[key] = gen
    return gen


def with_defaults(src, args) -> tuple:
    """The primals a generated jvp takes: the call's arguments, then src's defaults after them."""
    return tuple(args) + tuple(defaults_after(src, len(args)))


def nested_derivative(jitted, args, levels: tuple[int, ...]):
    """jit of a derivative chain (derivative_chain): the innermost gradient in reverse mode with
    typed tapes, each outer derivative the jvp along its argument (forward over reverse, a unit
    tangent for a number; one call per element for the outermost argument when it is an
    array), compiled as one function. Its result nests (value, tangent) pairs: the derivative
    is the tangent's tangent ..."""
    src = source_function(_innermost(jitted.fun))
    gen = chain_generated(jitted, src, levels, len(args))
    ones = (1.0,) * (len(levels) - 2)          # the inner levels' unit tangents (their arguments: numbers)

    def pick(out):
        for _ in ones:
            out = out[1]
        return out
    x = np.asarray(args[levels[-1]], dtype=float)
    values, parts = None, []
    primals = with_defaults(src, args)
    for e in unit_basis(x):
        out = gen.fn(*primals, *ones, e)
        values = pick(out[0])
        parts.append(np.asarray(pick(out[1])))
    grad = np.reshape(np.stack(parts), np.shape(x))
    grad = grad[()] if grad.ndim == 0 else grad
    return (values, grad) if jitted.fun.transform == "value_and_grad" else grad


def hessian_columns(jitted, src, a: int, args):
    """jit(hessian(f)) along argument a: the chain (a, a), one call per column."""
    gen = chain_generated(jitted, src, (a, a), len(args))
    x = np.asarray(args[a], dtype=float)
    primals = with_defaults(src, args)
    cols = [np.asarray(gen.fn(*primals, e)[1]) for e in unit_basis(x)]
    return np.reshape(np.stack(cols, axis=-1), np.shape(x) + np.shape(x))


def per_example_grad_of_tree(fun: Batched, args) -> bool:
    """jit(vmap(grad(f))) called with a dict (or other non-tuple pytree) argument."""
    inner = fun.fun
    return isinstance(inner, Transformed) and inner.transform == "grad" and not inner.has_aux \
        and not isinstance(inner.fun, (Transformed, Batched)) and fun.out_axes == 0 \
        and any(isinstance(a, dict) for a in args)


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
