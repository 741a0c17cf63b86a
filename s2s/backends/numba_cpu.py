"""Numba backends (CPU and parallel CPU): generated ANF -> nopython machine code.

`lower(fdef)` rewrites the few constructs Numba does not compile into ones it
does (the "lower" column of the rule table):
- `reversed(range(...))` -> `reversed_range(...)` (a range Numba can iterate);
- reductions with `axis`/`keepdims` -> `reduce_sum(x, axis, keepdims)` & co.;
- `np.transpose(x, None)` -> `np.transpose(x)`.
Runtime helpers keep their names: their Numba implementations are the
overloads in `numba_lower`.  `compile_function` hands the function, defined
in its generated file, to `numba.njit` (nopython only; `cache=True` keeps the
machine code next to the file, so a second process does not recompile).
"""
from __future__ import annotations

import builtins
import copy
import warnings
from typing import Any, Callable

import gast
import numpy as np

from .. import runtime as rt
from ..analysis.resolve import resolve_call
from ..frontend.normalize import name
from . import numba_lower

_REDUCTIONS = {id(np.sum): "reduce_sum", id(np.max): "reduce_max", id(np.amax): "reduce_max",
               id(np.min): "reduce_min", id(np.amin): "reduce_min", id(np.prod): "reduce_prod",
               id(np.mean): "reduce_mean"}


_JITTED: dict[int, Any] = {}
_MODULE_GLOBALS: dict[str, dict] = {}


def _jitted_helper(value):
    """An njit version of a plain-NumPy helper whose own calls to helpers are compiled too
    (it runs with a copy of its module's globals in which helpers are njit functions)."""
    import types as pytypes

    import numba
    if id(value) in _JITTED:
        return _JITTED[id(value)]
    module = value.__module__
    glb = _MODULE_GLOBALS.get(module)
    if glb is None:
        glb = dict(value.__globals__)
        _MODULE_GLOBALS[module] = glb
        for k, v in list(glb.items()):
            if _jittable(v):
                fn = pytypes.FunctionType(v.__code__, glb, v.__name__, v.__defaults__, v.__closure__)
                fn.__module__ = v.__module__
                glb[k] = numba.njit(fn)
                _JITTED[id(v)] = glb[k]
    if id(value) not in _JITTED:
        _JITTED[id(value)] = numba.njit(value)
    return _JITTED[id(value)]


def _jittable(value) -> bool:
    from .. import ophelpers
    return (callable(value) and not isinstance(value, type) and hasattr(value, "__code__")
            and getattr(value, "__module__", "") in (ophelpers.__name__, rt.__name__)
            and id(value) not in numba_lower.OVERLOADED)


def compiled_namespace(ns: dict[str, Any]) -> dict[str, Any]:
    """The generated module's globals for Numba: helpers without an overload are njit-compiled
    as they are (plain NumPy), the rest keep their names (their overloads apply)."""
    out = dict(ns)
    for key, value in ns.items():
        if _jittable(value):
            out[key] = _jitted_helper(value)
    out.update(namespace_additions())
    return out


def namespace_additions() -> dict[str, Any]:
    from numba.typed import List
    return {"List": List, "reversed_range": numba_lower.reversed_range, "reduce_sum": numba_lower.reduce_sum,
            "reduce_max": numba_lower.reduce_max, "reduce_min": numba_lower.reduce_min,
            "reduce_prod": numba_lower.reduce_prod, "reduce_mean": numba_lower.reduce_mean}


def _const(node):
    return node.value if isinstance(node, gast.Constant) else object()


class _Lower(gast.NodeTransformer):
    def __init__(self, ranges: dict[str, Any], namespace: dict[str, Any], reversed_ranges: dict[str, Any]):
        self.ranges = ranges
        self.namespace = namespace
        self.reversed_ranges = reversed_ranges    # v = reversed(range(...)): reversed(v) is the range

    def resolve(self, node):
        return resolve_call(node, self.namespace)

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if isinstance(it, gast.Call) and getattr(it, "s2s_fn", None) is builtins.reversed:
            inner = it.args[0]
            if isinstance(inner, gast.Name) and inner.id in self.reversed_ranges:
                node.iter = copy.deepcopy(self.reversed_ranges[inner.id])
                return node
            if isinstance(inner, gast.Name) and inner.id in self.ranges:
                inner = self.ranges[inner.id]
            if isinstance(inner, gast.Call) and getattr(inner, "s2s_fn", None) is builtins.range:
                new = gast.Call(func=name("reversed_range"), args=copy.deepcopy(inner.args), keywords=[])
                new.s2s_fn = numba_lower.reversed_range
                node.iter = new
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = self.resolve(node)
        if fn is rt.stack:     # typed list, item type inferred from the appends in this function
            new = gast.Call(func=name("List"), args=[], keywords=[])
            new.s2s_fn = None
            return new
        if fn is rt.push:
            return gast.Call(func=gast.Attribute(node.args[0], "append", gast.Load()), args=[node.args[1]], keywords=[])
        if fn is rt.pop:
            return gast.Call(func=gast.Attribute(node.args[0], "pop", gast.Load()), args=[], keywords=[])
        target = _REDUCTIONS.get(id(fn))
        if target is not None and (len(node.args) > 1 or node.keywords):
            kws = {k.arg: k.value for k in node.keywords}
            axis = node.args[1] if len(node.args) > 1 else kws.get("axis", gast.Constant(None, None))
            keep = kws.get("keepdims", gast.Constant(False, None))
            if set(kws) - {"axis", "keepdims", "dtype", "out"} or _const(kws.get("dtype", gast.Constant(None, None))) \
                    is not None or _const(kws.get("out", gast.Constant(None, None))) is not None:
                return node
            if _const(axis) is None and _const(keep) is False:
                node.args, node.keywords = node.args[:1], []
                return node
            new = gast.Call(func=name(target), args=[node.args[0], axis, keep], keywords=[])
            new.s2s_fn = getattr(numba_lower, target)
            return new
        if fn is np.transpose and len(node.args) == 2 and _const(node.args[1]) is None:
            node.args = node.args[:1]
        if fn is np.transpose and len(node.args) == 2:      # x.transpose(axes)
            return gast.Call(func=gast.Attribute(node.args[0], "transpose", gast.Load()), args=[node.args[1]],
                             keywords=[])
        if fn is np.reshape and len(node.args) == 2 and all(k.arg == "order" and _const(k.value) == "C"
                                                          for k in node.keywords):     # x.reshape(shape)
            return gast.Call(func=gast.Attribute(_as_array(node.args[0]), "reshape", gast.Load()),
                             args=[node.args[1]], keywords=[])
        if fn is np.matmul and len(node.args) == 2 and not node.keywords:
            return gast.BinOp(node.args[0], gast.MatMult(), node.args[1])
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        # range(...)[::-1] (reversed loops of re-normalized code) -> reversed_range(...)
        if isinstance(node.value, gast.Name) and node.value.id in self.ranges and isinstance(node.slice, gast.Slice) \
                and node.slice.lower is None and node.slice.upper is None and _const(node.slice.step) == -1:
            new = gast.Call(func=name("reversed_range"), args=copy.deepcopy(self.ranges[node.value.id].args),
                            keywords=[])
            new.s2s_fn = numba_lower.reversed_range
            return new
        # r[k] on a range Numba cannot index: start + k * step
        if isinstance(node.value, gast.Name) and node.value.id in self.ranges and isinstance(node.ctx, gast.Load) \
                and not isinstance(node.slice, (gast.Slice, gast.Tuple)):
            args = self.ranges[node.value.id].args
            k = node.slice
            if len(args) == 1:
                return k
            start = args[0]
            step = args[2] if len(args) > 2 else gast.Constant(1, None)
            return gast.BinOp(copy.deepcopy(start), gast.Add(), gast.BinOp(k, gast.Mult(), copy.deepcopy(step)))
        return node


def _as_array(node):
    # Numba reshapes only contiguous arrays: copy first when needed (NumPy's reshape copies then too)
    call = gast.Call(func=gast.Attribute(name("np"), "ascontiguousarray", gast.Load()), args=[node], keywords=[])
    return call


def lower(fdef: gast.FunctionDef, namespace: dict[str, Any]) -> gast.FunctionDef:
    """Rewrite a generated function so Numba's nopython mode compiles it."""
    ranges = {}
    for s in gast.walk(fdef):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                and getattr(s.value, "s2s_fn", None) is builtins.range:
            ranges[s.targets[0].id] = s.value
    reversed_ranges = {}
    for s in gast.walk(fdef):     # r = range(...)[::-1] (normalized `reversed(range(...))`)
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                and isinstance(s.value, gast.Subscript) and isinstance(s.value.value, gast.Name) \
                and s.value.value.id in ranges and isinstance(s.value.slice, gast.Slice) \
                and s.value.slice.lower is None and s.value.slice.upper is None \
                and _const(s.value.slice.step) == -1:
            reversed_ranges[s.targets[0].id] = copy.deepcopy(ranges[s.value.value.id])
    return _Lower(ranges, namespace, reversed_ranges).visit(fdef)


def compile_function(fn: Callable, target: str = "cpu", cache: bool = True) -> Callable:
    """`numba.njit` in nopython mode (`parallel=True` for the parallel target)."""
    import numba
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=numba.NumbaPerformanceWarning)
        return numba.njit(cache=cache, parallel=(target == "parallel"))(fn)


def _quiet_contiguity_warnings() -> None:
    """Numba notes that `@` on non-contiguous views is slower; generated code makes such views
    (transposes, slices) on purpose, so the note is noise for s2s users."""
    import numba
    warnings.filterwarnings("ignore", message=".*is faster on contiguous arrays.*",
                            category=numba.NumbaPerformanceWarning)


_quiet_contiguity_warnings()
