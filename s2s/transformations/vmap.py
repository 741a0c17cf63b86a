"""vmap: `Batched`, a function's source batched over an axis of its arguments.

The generated code comes from the pipeline per argument count (in_axes are checked against the
call); pytree arguments and in_axes go through a wrapper taking their leaves; vmap(vmap(f)) runs
as one batch of all example pairs, reshaped back.
"""
from __future__ import annotations

import inspect
import numbers
from typing import Callable

import numpy as np

from .. import precision, pytree
from ..codegen.emit import Generated
from ..codegen.user_lines import note_user_line
from ..errors import ArgumentError, TransformError
from ..pipeline import build
from ..pipeline_options import GenerateOptions
from .calls import axes_per_argument, check_argnums, check_differentiable, user_function
from .grad import Transformed
from .results import owned
from .sources import TransformObject, flat_wrapper, source_function


class Batched(TransformObject):
    """`vmap(f)`: f's source, batched; generated on the first call for that many arguments."""

    wrapper_kind = "vmap"

    def __init__(self, fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None):
        self.fun = fun
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.axis_size = axis_size
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_vmap"
        self.__qualname__ = self.__name__

    def _axes_for(self, nargs: int) -> tuple:
        return axes_per_argument(self.in_axes, nargs, "vmap")

    def generated_for(self, nargs: int) -> Generated:
        axes = self._axes_for(nargs)
        out_axes = tuple(self.out_axes) if isinstance(self.out_axes, list) else self.out_axes
        src = self.fun.generated_for(nargs).fn if isinstance(self.fun, Batched) else source_function(self.fun)
        return build(src, "vmap", (), False, False,
                     GenerateOptions(in_axes=axes, out_axes=out_axes, axis_size=self.axis_size))

    def _s2s_inline_source(self, nargs: int) -> Callable:
        return self.generated_for(nargs).fn

    def _s2s_source(self) -> Callable:
        raise TransformError("transforming a vmapped function needs its argument count; call it inside a function "
                             "(e.g. lambda w: np.sum(s2s.vmap(f)(w, xs)))")

    def __call__(self, *args, **kwargs):
        if kwargs:
            return self._call_keywords(args, kwargs)
        args, low = precision.widen(args)
        try:
            return precision.narrow(owned(self._call(args), args), low)     # (writeable, not the arguments)
        except Exception as exc:
            note_user_line(exc)
            raise

    def _call_keywords(self, args, kwargs):
        """vmap(f)(x, key=value): as JAX, keyword arguments are mapped over their axis 0. A transform
        with keyword-only / **kwargs parameters maps the transform of its keyword wrapper (grad.py);
        a string, bool or None keyword is a constant of that wrapper (not mapped)."""
        keyword_form = getattr(self.fun, "keyword_form", None)
        axes = self._axes_for(len(args))
        if keyword_form is None:
            try:
                from .calls import bind_keywords
                full = bind_keywords(self, args, kwargs)
            except ArgumentError:
                raise ArgumentError(f"{self.__name__}: keyword arguments of a vmapped function bind to its "
                                    "positional parameters only") from None
            return Batched(self.fun, tuple(axes) + (0,) * (len(full) - len(args)), self.out_axes,
                           self.axis_size)(*full)
        inner, flat = keyword_form(args, kwargs)
        key = ("keywords", inner, tuple(axes))
        cache = self.__dict__.setdefault("_keyword_forms", {})
        if key not in cache:
            cache[key] = Batched(inner, tuple(axes) + (0,) * (len(flat) - len(args)), self.out_axes, self.axis_size)
        return cache[key](*flat)

    def check_examples(self, args) -> None:
        """The refusals of the transform this vmap batches, made on one example of each argument:
        vmap(grad(f)) of int, bool or complex examples raises grad's own error (the batched code
        would otherwise run on them). Pytree arguments are checked leaf by leaf."""
        fun, examples = self, list(args)
        while isinstance(fun, Batched):
            try:
                axes = fun._axes_for(len(examples))
            except ArgumentError:
                return                       # (in_axes pytrees: checked per leaf in _call_tree)
            examples = [_example(a, ax) for a, ax in zip(examples, axes)]
            fun = fun.fun
        while getattr(fun, "wrapper_kind", None) == "jit":
            fun = fun.fun
        kind = getattr(fun, "wrapper_kind", None)
        if kind == "transform":
            nums, named = fun.argnums, source_function(fun.fun)
        elif kind in ("jacobian", "hessian"):
            nums, named = fun.nums, user_function(fun.fun)
        else:
            return
        n = len(examples)
        for a in nums:
            if not -n <= a < n:
                check_argnums(tuple(examples), (a,), named)      # (grad's out-of-range error)
            leaves = pytree.tree_leaves(examples[a]) if isinstance(examples[a], (tuple, list, dict)) \
                else [examples[a]]
            for leaf in leaves:
                # (objects such as a dataclass of arrays are the transform's to flatten or refuse)
                if np.asarray(leaf).dtype.kind != "O":
                    check_differentiable(leaf, a % n, named)

    def _call(self, args):
        self.check_examples(args)
        if isinstance(self.fun, Batched):
            return self._nested(args)
        if any(not pytree.is_leaf(pytree.tree_flatten(a)[1]) for a in args):
            return self._call_tree(args)
        gen = self.generated_for(len(args))
        return gen.fn(*args)

    def _call_tree(self, args):
        """Pytree arguments: vmap a generated wrapper over their leaves (in_axes may be pytrees too)."""
        ax = self.in_axes
        specs = list(ax) if isinstance(ax, (list, tuple)) else [ax] * len(args)
        if len(specs) != len(args):
            raise ArgumentError(f"vmap: in_axes has {len(specs)} entries but the function was called with "
                                f"{len(args)} arguments")
        treedefs, flat, axes = [], [], []
        for i, (a, spec) in enumerate(zip(args, specs)):
            leaves, td = pytree.tree_flatten(a)
            if pytree.is_leaf(td):
                treedefs.append(None)
                flat.append(a)
                axes.append(spec)
                continue
            treedefs.append(td)
            flat += leaves
            axes += leaf_axes(spec, td, i)
        fun = self.fun
        wrapper = flat_wrapper(fun, tuple(treedefs)) if isinstance(fun, Transformed) else \
            flat_wrapper(source_function(fun), tuple(treedefs))
        return Batched(wrapper, tuple(axes), self.out_axes, self.axis_size)(*flat)

    def _nested(self, args):
        """vmap(vmap(f)): one batch of Bo*Bi examples, reshaped back (a matrix of examples)."""
        inner = self.fun
        outer_axes = self._axes_for(len(args))
        inner_axes = inner._axes_for(len(args))
        base = inner
        while isinstance(base, Batched):
            base = base.fun
        names = [p.name for p in inspect.signature(source_function(base)).parameters.values()][:len(args)]
        names += [f"#{i}" for i in range(len(names), len(args))]
        from ..runtime.batching import batch_size
        try:
            bo = batch_size(args, outer_axes, names, self.axis_size)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        examples = [np.take(a, 0, axis=ao) if ao is not None else a for a, ao in zip(args, outer_axes)]
        try:
            batch_size(examples, inner_axes, names, inner.axis_size)
        except ValueError as exc:
            raise ArgumentError(f"{exc} (inner vmap)") from None
        moved = []
        for a, ao, ai in zip(args, outer_axes, inner_axes):
            moved.append(None if ao is None and ai is None else (np.moveaxis(a, ao, 0) if ao is not None else a, ai))
        sizes_i = {np.shape(m[0])[m[1] + (1 if ao is not None else 0)] if m[1] is not None else None
                   for m, ao in zip(moved, outer_axes) if m is not None}
        sizes_i.discard(None)
        bi = inner.axis_size if inner.axis_size is not None else (sizes_i.pop() if len(sizes_i) == 1 else None)
        if bi is None:
            raise ArgumentError("vmap: the inner batch size is ambiguous or missing")
        flat, axes = [], []
        for a, m, ao in zip(args, moved, outer_axes):
            if m is None:
                flat.append(a)
                axes.append(None)
                continue
            x, ai = m
            if ao is None:
                x = np.broadcast_to(x, (bo,) + np.shape(x))
                ai_full = ai + 1
            else:
                ai_full = ai + 1 if ai is not None else None
            if ai_full is None:
                x = np.broadcast_to(x[:, None], (bo, bi) + np.shape(x)[1:])
            else:
                x = np.moveaxis(x, ai_full, 1)
            flat.append(np.reshape(x, (bo * bi,) + np.shape(x)[2:]))
            axes.append(0)
        out = Batched(inner.fun, tuple(axes), 0)(*flat)

        def unflat(o, ai, ao):
            o = np.reshape(o, (bo, bi) + np.shape(o)[1:])
            o = np.moveaxis(o, 1, ai + 1) if ai is not None else o[:, 0]
            return np.moveaxis(o, 0, ao) if ao is not None else o[0]
        if isinstance(out, tuple):
            n = len(out)
            ia = inner.out_axes if isinstance(inner.out_axes, (tuple, list)) else (inner.out_axes,) * n
            oa = self.out_axes if isinstance(self.out_axes, (tuple, list)) else (self.out_axes,) * n
            return tuple(unflat(o, i, j) for o, i, j in zip(out, ia, oa))
        return unflat(out, inner.out_axes, self.out_axes)

    def show(self, nargs: int) -> str:
        return self.generated_for(nargs).source


def _example(a, ax):
    """One example of a batched argument (the first; the array itself for an empty batch, whose
    dtype is the same), a pytree's leaves each taken along ax."""
    if ax is None:
        return a
    if isinstance(a, (tuple, list, dict)):
        return pytree.tree_map(lambda leaf: _example(leaf, ax), a)
    if not isinstance(a, np.ndarray) or not -a.ndim <= ax < a.ndim or a.shape[ax] == 0:
        return a                             # (batch_size says what is wrong with the axis)
    return a[(slice(None),) * ax + (0,)] if ax >= 0 else a[(Ellipsis, 0) + (slice(None),) * (-ax - 1)]


def leaf_axes(spec, td, position) -> list:
    """in_axes for each leaf of one argument: an int/None for all, or a matching pytree of them."""
    if spec is None or isinstance(spec, numbers.Integral):
        return [spec] * pytree.count_leaves(td)
    kind = td[0]
    if kind == "leaf":
        raise ArgumentError(f"vmap: in_axes for argument {position} has more structure than the argument")
    if kind == "none":
        return []
    if kind == "dict":
        if not isinstance(spec, dict) or sorted(spec) != list(td[1]):
            raise ArgumentError(f"vmap: in_axes for argument {position} must be an int, None or a dict with keys "
                                f"{list(td[1])}")
        return [a for k, c in zip(td[1], td[2]) for a in leaf_axes(spec[k], c, position)]
    children = td[3] if kind == "record" else td[2]
    values = list(spec) if isinstance(spec, (tuple, list)) else None
    if values is None or len(values) != len(children):
        raise ArgumentError(f"vmap: in_axes for argument {position} does not match its structure")
    return [a for v, c in zip(values, children) for a in leaf_axes(v, c, position)]
