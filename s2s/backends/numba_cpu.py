"""Numba backends (CPU and parallel CPU): generated ANF -> nopython machine code.

`lower(fdef)` rewrites the few constructs Numba does not compile into ones it
does (the rule table's `lower` field is unused: the lowering is here and in numba_lower/):
- `reversed(range(...))` -> `reversed_range(...)` (a range Numba can iterate);
- reductions with `axis`/`keepdims` -> `reduce_sum(x, axis, keepdims)` & co.;
- `np.transpose(x, None)` -> `np.transpose(x)`;
- `np.exp` / `np.tanh` / `np.log` / `np.sin` / `np.cos` -> `fast_exp` & co. (vectorizable float64
  kernels, vecmath.py); inside fused loops sin/cos call the kernels directly, count the
  arguments beyond the kernels' range and rerun the loop with the C library if any;
- fused loops: `prange` under target="parallel"; under the default target marked for a prange
  twin the code switches to over many elements (parallel_twins.py, after outlining);
- side effects kept as written (runtime/effects.py): a block runs in `with objmode():` (an
  f-string's value comes out as a string), `raise_block` is followed by a `raise` Numba sees;
  `np.errstate` markers go (Numba keeps no floating-point error state); any other `with`, and a
  `try`, around compiled code are refused.
Runtime helpers keep their names: their Numba implementations are the
overloads in `numba_lower/` (and numba_numpy/'s family modules).
`compile_function` hands the function, defined in its generated file, to
`numba.njit` (nopython only; `cache=True` keeps the machine code next to the
file, so a second process does not recompile; error_model='numpy': a division by zero gives
NumPy's inf/nan, as the generated Python does, not ZeroDivisionError).
"""
from __future__ import annotations

import builtins
import inspect
import logging
import os
import time
import types as pytypes
import warnings
from typing import Any, Callable

import gast
import numpy as np

from .. import log
from .. import runtime as rt
from ..runtime import batching as rtb
from ..runtime import effects as rte
from ..runtime import fused as rtf
from ..analysis.resolve import resolve_call
from ..frontend.annotations import (EFFECT_FUNCTIONS, INNER, PARALLEL_TWIN, ROWS_ACCUMULATE, SECTION, getanno,
                                   setanno)
from ..frontend.ast_build import Namer, assign, call_named, const, constant_value, copy_loc, name, namer_for
from . import memory, numba_cache  # noqa: F401
# importing registers the Numba overloads: every module of numba_lower/ and the runtime's Numba versions
# (runtime/*_numba.py), then every family of numba_numpy/ (namespace imports them all; where both lower one
# helper, Numba tries numba_lower's first), then vecmath's
from .numba_lower import common as lowering, loops, op_helpers
from ..ops.reductions import numba_kernels as reductions
from ..runtime import core_numba as runtime_lowering
from ..runtime import batching_numba as batching_lowering, fused_numba as fused_lowering
from ..runtime import collectives_numba as collectives_lowering  # noqa: F401  (registers the overloads)
from .numba_numpy.namespace import compiled_globals
from ..ops.elementwise import numba_vecmath as vecmath
from ..frontend.nodes import clone, iter_nodes
from .numba_lower.call_forms import (GENERATOR_DRAWS, LEGACY_INTEGER_DRAWS, OBJECT_MODE_GLOBALS, SHAPE_KEYWORDS,
                                     as_array, legacy_draw, number_list, takes_lists)
from ..rules.table import operator_ops, record_of

LOWERINGS = (lowering, loops, op_helpers, reductions, runtime_lowering, batching_lowering, fused_lowering)

# inside fused loops sin/cos run their kernels unchecked (a branch would stop vectorization); the
# loop counts arguments the kernels do not cover and reruns with libm's (fast_sin of a scalar) if any
_TRIG_KERNELS = {id(rt.fast_sin): "sin_f64", id(rt.fast_cos): "cos_f64"}


_JITTED: dict[int, Any] = {}
_MODULE_GLOBALS: dict[str, dict] = {}


def _jitted_helper(value):
    """An njit version of a plain-NumPy helper whose own calls to helpers are compiled too
    (it runs with a copy of its module's globals in which helpers are njit functions); kept in
    Numba's disk cache, as the overloads' implementations are (numba_lower/common.py)."""
    import types as pytypes

    import numba
    if id(value) in _JITTED:
        return _JITTED[id(value)]
    module = value.__module__
    glb = _MODULE_GLOBALS.get(module)
    if glb is None:
        glb = compiled_globals(value.__globals__)   # np with Numba stand-ins
        _MODULE_GLOBALS[module] = glb
        for k, v in list(glb.items()):
            if _jittable(v):
                fn = pytypes.FunctionType(v.__code__, glb, v.__name__, v.__defaults__, v.__closure__)
                fn.__module__ = v.__module__
                glb[k] = numba.njit(fn, error_model=lowering.ERROR_MODEL, cache=lowering.cachable(fn))
                _JITTED[id(v)] = glb[k]
    if id(value) not in _JITTED:
        _JITTED[id(value)] = numba.njit(value, error_model=lowering.ERROR_MODEL, cache=lowering.cachable(value))
    return _JITTED[id(value)]


lowering.set_helper_compiler(_jitted_helper)


def _jittable(value) -> bool:
    from ..frontend.namespace import OP_HELPER_MODULES
    return (callable(value) and not isinstance(value, type) and hasattr(value, "__code__")
            and getattr(value, "__module__", "") in (*OP_HELPER_MODULES, rt.__name__, rtb.__name__, rtf.__name__)
            and id(value) not in lowering.OVERLOADED)


def _int_pairs(value) -> bool:
    return type(value) is list and bool(value) and all(
        type(p) is tuple and len(p) == 2 and all(isinstance(i, (int, np.integer)) for i in p) for p in value)


def helper_functions(ops_only: bool = False) -> frozenset:
    """s2s's runtime and op helpers (ops_only: op helpers only): compiled code calls them (their
    overloads, or njit of their plain-NumPy bodies) instead of inlining them."""
    import importlib

    from ..frontend.namespace import OP_HELPER_MODULES
    ops = tuple(importlib.import_module(name) for name in OP_HELPER_MODULES)
    return frozenset(v for m in (ops if ops_only else (*ops, rt, rtb, rtf)) for v in vars(m).values()
                     if isinstance(v, pytypes.FunctionType) and v.__module__ == m.__name__)


def compiled_namespace(ns: dict[str, Any]) -> dict[str, Any]:
    """The generated module's globals for Numba: helpers without an overload are njit-compiled
    as they are (plain NumPy), the rest keep their names (their overloads apply)."""
    out = compiled_globals(ns)     # np (and scipy.special) with Numba stand-ins
    for key, value in ns.items():
        if _jittable(value):
            out[key] = _jitted_helper(value)
        elif _int_pairs(value):
            # a module's list of (source, destination) pairs (ppermute's perm): Numba takes no
            # reflected list as a constant; the tuple of pairs it holds when compiled
            out[key] = tuple(tuple(int(i) for i in p) for p in value)
    out.update(namespace_additions())
    return out


def namespace_additions() -> dict[str, Any]:
    import numba
    from numba.typed import List
    return {"List": List, "reversed_range": loops.reversed_range, "reduce_sum": reductions.reduce_sum,
            "reduce_max": reductions.reduce_max, "reduce_min": reductions.reduce_min,
            "reduce_prod": reductions.reduce_prod, "reduce_mean": reductions.reduce_mean,
            "fast_exp": rt.fast_exp, "fast_tanh": rt.fast_tanh, "fast_log": rt.fast_log, "fast_sin": rt.fast_sin,
            "fast_cos": rt.fast_cos,
            "sin_f64": vecmath.sin_f64, "cos_f64": vecmath.cos_f64, "trig_uncovered": vecmath.trig_uncovered,
            "prange": numba.prange, "parallel_worth": loops.parallel_worth, "bmap_empty": loops.bmap_empty,
            "bmap_put": loops.bmap_put,
            "stack_empty": loops.stack_empty, "stack_put": loops.stack_put,
            "stack_finish": loops.stack_finish, "zero_example": loops.zero_example,
            "add_at_value": runtime_lowering.add_at_value, "new_generator": runtime_lowering.new_generator,
            "shaped_draw": runtime_lowering.shaped_draw, "flat_float64": runtime_lowering.flat_float64,
            "flat_int64": runtime_lowering.flat_int64,
            "objmode": numba.objmode}


def _compiled_form(rule, node):
    """The form Numba compiles of a call or operator of `rule`'s op (OpRule.numba_call), else `node`."""
    new = rule.numba_call(node) if rule.numba_call is not None else None
    return node if new is None else new


class _Lower(gast.NodeTransformer):
    def __init__(self, ranges: dict[str, Any], namespace: dict[str, Any], reversed_ranges: dict[str, Any],
                 target: str, namer: Namer):
        self.ranges = ranges
        self.namespace = namespace
        self.reversed_ranges = reversed_ranges    # v = reversed(range(...)): reversed(v) is the range
        self.target = target
        self.namer = namer
        self.scalar_math = 0     # > 0 inside a fused-rows loop: np.exp stays np.exp
        self.effect_functions: list = []     # side effects in object mode, each in a function of its own

    def visit_If(self, node):
        section = str(getanno(node, SECTION, ""))
        if section.startswith("fused rows"):
            # one row per iteration (transforms/fuse_rows.py): the row's scalar math stays libm's
            # (np.exp of one number: libm 0.49 ms vs the kernel 0.55 ms on case 3), the kernels
            # pay off where a loop vectorizes over elements
            self.scalar_math += 1
            body = self.visit_block(node.body)
            self.scalar_math -= 1
            node.body = self.fused_loop(body)      # prange under target="parallel" (no sin/cos kernels here)
            node.orelse = self.visit_block(node.orelse)
            return node
        self.generic_visit(node)
        if section.startswith("fused"):
            node.body = self.fused_loop(node.body)
        return node

    def visit_block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            new = self.visit(s)
            out += new if isinstance(new, list) else [new]
        return out

    def fused_loop(self, body: list) -> list:
        """The fused loop: `prange` under target="parallel"; sin/cos as unchecked kernels with
        a count of uncovered arguments, and a rerun with libm's sin/cos when it is not 0."""
        at = next((k for k, s in enumerate(body) if isinstance(s, gast.For)), None)
        if at is None:
            return body
        loop = body[at]
        if not getanno(loop, ROWS_ACCUMULATE, False):
            if self.target == "parallel":
                loop.iter.func = name("prange")
            else:       # (a prange twin, switched on at run time over many elements: parallel_twins.py)
                setanno(loop, PARALLEL_TWIN, True)
        work = getanno(loop, INNER, loop)     # a two-deep loop's per-element body is the inner one
        trig = [c for c in iter_nodes(loop) if isinstance(c, gast.Call) and id(getattr(c, "s2s_fn", None)) in _TRIG_KERNELS]
        if not trig or not all(len(c.args) == 1 and isinstance(c.args[0], (gast.Name, gast.Constant)) for c in trig):
            return body
        rerun_loop = clone(loop)     # keeps fast_sin/fast_cos: libm on scalars
        count = self.namer.fresh("n_uncovered")
        here = self.namer.fresh("uncovered")   # per element, so that `count` is a single (prange) reduction
        new_body = [assign(here, const(0))]
        for stmt in work.body:
            for c in iter_nodes(stmt):
                if isinstance(c, gast.Call) and id(getattr(c, "s2s_fn", None)) in _TRIG_KERNELS:
                    uncovered = call_named("trig_uncovered", [clone(c.args[0])])
                    new_body.append(assign(here, gast.BinOp(name(here), gast.Add(), uncovered)))
                    kernel = _TRIG_KERNELS[id(c.s2s_fn)]
                    c.func = name(kernel)
                    c.s2s_fn = getattr(vecmath, kernel)
            new_body.append(stmt)
        new_body.append(assign(count, gast.BinOp(name(count), gast.Add(), name(here))))
        work.body = new_body
        # accumulators start again from their initial values (the statements `acc = 0.0` before the loop)
        resets = [clone(s) for s in body[:at]
                  if isinstance(s, gast.Assign) and isinstance(s.value, gast.Constant)]
        # and so do the sums over rows of a two-deep loop (arrays from fused_zeros)
        resets += [gast.Expr(gast.Call(func=gast.Attribute(name(s.targets[0].id), "fill", gast.Load()),
                                       args=[const(0.0)], keywords=[]))
                   for s in body[:at] if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call)
                   and isinstance(s.value.func, gast.Name) and s.value.func.id == "fused_zeros"]
        rerun = gast.If(test=gast.Compare(name(count), [gast.Gt()], [const(0)]), body=resets + [rerun_loop], orelse=[])
        start = assign(count, const(0))
        for n in (start, rerun):
            gast.copy_location(n, loop)
        return body[:at] + [start, loop, rerun] + body[at + 1:]

    def resolve(self, node):
        return resolve_call(node, self.namespace)

    def lists_as_arrays(self, node, fn) -> None:
        """A list literal of numbers handed to a NumPy function (np.diag([0.0, 3.0, 6.0]),
        np.sum([1.0, a, 2.0]), np.quantile(x, [0.25, 0.75])) becomes np.array([...]), which NumPy
        makes of it anyway: Numba types no NumPy function on a list.  Not for the functions that
        take a sequence of arrays, a shape or axes (there a list is not an array's data)."""
        if fn is None or takes_lists(getattr(fn, "__name__", None) or ""):
            return
        for k, a in enumerate(node.args):
            if number_list(a):
                node.args[k] = as_array(a)
        for kw in node.keywords:
            if kw.arg not in SHAPE_KEYWORDS and number_list(kw.value):
                kw.value = as_array(kw.value)

    # ----- per-example loops (vmap): bmap and per_example as explicit loops ------------------
    def visit_Assign(self, node):
        value = node.value
        if isinstance(value, gast.Call) and self.resolve(value) is rte.format_value \
                and isinstance(node.targets[0], gast.Name):
            # an f-string's value: made in object mode, a string for compiled code
            return self.in_object_mode(node, "format_call", node.targets[0].id)
        if isinstance(value, gast.Call) and isinstance(node.targets[0], gast.Name) and self.resolve(value) is rtb.bmap:
            loop = self.bmap_loop(node.targets[0].id, value, node)
            if loop is not None:
                return self.visit_block(loop)
        self.generic_visit(node)
        if isinstance(node.value, gast.Call):
            node.value = self.random_draws(node.value)
        return node

    def random_draws(self, call):
        """NumPy's Generator in compiled code: `np.random.default_rng(seed)` is made in object mode
        (Numba cannot make one) and handed to the compiled code, whose `rng.normal(...)` & co. are
        Numba's, drawing from the same bit generator with NumPy's algorithms: jit(f) draws what f
        draws for the same seed."""
        fn = self.resolve(call)
        if fn is rt.call_opaque and call.args and self.resolve_value(call.args[0]) is np.random.default_rng:
            new = gast.Call(func=name("new_generator"), args=call.args[1:], keywords=call.keywords)
            new.s2s_fn = runtime_lowering.new_generator
            return copy_loc(new, call)
        if fn is rt.call_opaque and call.args and legacy_draw(self.resolve_value(call.args[0])):
            return self.legacy_draw(call, self.resolve_value(call.args[0]))
        if fn is rt.call_method and len(call.args) >= 2 and constant_value(call.args[1]) in GENERATOR_DRAWS:
            new = gast.Call(func=gast.Attribute(call.args[0], constant_value(call.args[1]), gast.Load()),
                            args=call.args[2:], keywords=call.keywords)
            return copy_loc(new, call)
        return call

    def legacy_draw(self, call, fn):
        """np.random.normal(...) & co. (NumPy's global RandomState, which compiled code cannot
        reach: Numba's np.random has a state of its own) drawn by NumPy in object mode, as a flat
        float64 array, then given the shape `size` says (a number when it is None)."""
        args, kws = call.args[1:], {k.arg: k.value for k in call.keywords}
        if fn.__name__ in ("rand", "randn"):
            size = gast.Tuple(elts=[clone(a) for a in args], ctx=gast.Load()) if args else const(None)
        else:
            params = list(inspect.signature(fn).parameters)
            at = params.index("size") if "size" in params else None
            size = kws.get("size", args[at] if at is not None and at < len(args) else None)
            size = clone(size) if size is not None else const(None)
        holder = self.namer.fresh("drawn")
        direct = gast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords)    # (Python's call)
        integers = fn.__name__ in LEGACY_INTEGER_DRAWS and "dtype" not in kws
        draw = copy_loc(gast.Assign(targets=[name(holder, gast.Store())], value=gast.Call(
            func=name("flat_int64" if integers else "flat_float64"), args=[direct], keywords=[]),
            type_comment=None), call)
        fetch = self.in_object_mode(draw, "random_draw", holder, "int64[::1]" if integers else "float64[::1]")
        new = gast.Call(func=name("shaped_draw"), args=[fetch.value, size], keywords=[])
        new.s2s_fn = runtime_lowering.shaped_draw
        return copy_loc(new, call)

    def resolve_value(self, node):
        return self.namespace.get(node.id) if isinstance(node, gast.Name) else None

    def visit_Expr(self, node):
        effect = self.side_effect(node)
        if effect is not None:
            return effect
        # add_at(dt, k, v) at a constant index: dt may be an op's tuple result's cotangent (slogdet,
        # eigh, ...), which Numba cannot change in place: rebind it (arrays stay accumulated in place)
        value = node.value
        if isinstance(value, gast.Call) and self.resolve(value) is rt.add_at and len(value.args) == 3 \
                and isinstance(value.args[0], gast.Name) and isinstance(constant_value(value.args[1]), int) \
                and not isinstance(constant_value(value.args[1]), bool):
            self.generic_visit(node)
            call = call_named("add_at_value", list(value.args))
            call.s2s_fn = runtime_lowering.add_at_value
            new = gast.Assign(targets=[name(value.args[0].id, gast.Store())], value=call, type_comment=None)
            copy_loc(new, node)
            return new
        self.generic_visit(node)
        return node

    def side_effect(self, node):
        """A kept side effect (runtime/effects.py) as compiled code runs it; None for other statements."""
        value = node.value
        fn = self.resolve(value) if isinstance(value, gast.Call) else None
        if fn is rte.effect or fn is rte.raise_block:
            out = [self.in_object_mode(node, "effect_call")]
            if fn is rte.raise_block:       # (so that Numba knows the path ends here)
                exc = call_named("AssertionError", [const("s2s: a raise statement did not raise")])
                out.append(copy_loc(gast.Raise(exc=exc, cause=None), node))
            return out
        if fn is rte.with_start or fn is rte.region_end:
            errstate = len(value.args) > 2 and isinstance(value.args[2], gast.Constant) and value.args[2].value is True
            if errstate:
                return []      # Numba keeps no floating-point error state: np.errstate changes nothing
            if fn is rte.region_end and len(value.args) == 1:
                return []      # (the end of a `try`, refused at its start)
            raise self.refuse(node, "a `with` statement around statements that compute values (Numba cannot enter "
                                    "a Python context manager around compiled code)")
        if fn is rte.try_start:
            raise self.refuse(node, "a `try` statement around statements that compute values (Numba cannot run the "
                                    "`except` clauses with the exception)")
        return None

    def in_object_mode(self, node, stem: str, result: str | None = None, result_type: str = "unicode_type"):
        """`node` (a call of a block, or `result = format_value(...)`) in `with objmode():`, in a function
        of its own above the generated one: Numba 0.68 failed to compile (LLVM: "Instruction does not
        dominate all uses") a function holding an object-mode block inside an `if` and another after it."""
        fname = self.namer.fresh(stem)
        params = list(dict.fromkeys(n.id for n in iter_nodes(node.value) if isinstance(n, gast.Name)
                                    and n.id not in self.namespace and n.id not in OBJECT_MODE_GLOBALS
                                    and n.id != result))
        mode = gast.Call(func=name("objmode"), args=[],
                         keywords=[gast.keyword(result, const(result_type))] if result else [])
        body = [copy_loc(gast.With(items=[gast.withitem(context_expr=mode, optional_vars=None)], body=[clone(node)],
                                   type_comment=None), node)]
        if result is not None:
            body.append(copy_loc(gast.Return(value=name(result)), node))
        args = gast.arguments(args=[name(p, gast.Param()) for p in params], posonlyargs=[], vararg=None,
                              kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        helper = gast.FunctionDef(name=fname, args=args, body=body, decorator_list=[], returns=None,
                                  type_comment=None, type_params=[])
        copy_loc(helper, node)
        self.effect_functions.append(helper)
        call = call_named(fname, [name(p) for p in params])
        if result is not None:
            return copy_loc(gast.Assign(targets=[name(result, gast.Store())], value=call, type_comment=None), node)
        return copy_loc(gast.Expr(value=call), node)

    def refuse(self, node, what: str):
        from ..errors import UnsupportedSyntaxError
        src = getattr(node, "s2s_src", None)
        hint = "use jit(f, fallback=True) to run the generated Python, or move it outside the jitted function"
        message = f"jit cannot compile {what}"
        if src is None:
            return UnsupportedSyntaxError(message, hint=hint)
        return src.error(UnsupportedSyntaxError, message, node, hint)

    def visit_Return(self, node):
        value = node.value
        if isinstance(value, gast.Call) and self.resolve(value) is rtb.per_example:
            loop = self.per_example_loop(value, node)
            if loop is not None:
                return self.visit_block(loop)
        self.generic_visit(node)
        return node

    def example_loop(self, target: str, size, example, probe, empty: str, put: str, like) -> list:
        """`target` = the stacked results of example(b) for b in range(size): example 0 first (its
        value sizes the result), then the others; a batch of no examples runs the example code
        once on examples of zeros (`probe()`, zero_example) for the shape of its empty result."""
        first = self.namer.fresh(target + "_0")
        b = self.namer.fresh("b")
        pick = gast.If(test=gast.Compare(clone(size), [gast.Lt()], [const(1)]),
                       body=[assign(first, probe())], orelse=[assign(first, example(const(0)))])
        put_first = gast.If(test=gast.Compare(clone(size), [gast.GtE()], [const(1)]),
                            body=[gast.Expr(call_named(put, [name(target), const(0), name(first)]))], orelse=[])
        put_rest = gast.Expr(call_named(put, [name(target), name(b), example(name(b))]))
        loop = gast.For(target=name(b, gast.Store()), iter=call_named("range", [const(1), clone(size)]),
                        body=[put_rest], orelse=[], type_comment=None)
        out = [pick, assign(target, call_named(empty, [name(first), clone(size)])), put_first, loop]
        for s in out:
            copy_loc(s, like)
        return out, first

    def bmap_loop(self, target: str, call, node):
        """t = bmap(fn, (args...), (flags...), batch, {kwargs}) -> a loop calling fn per example."""
        if len(call.args) < 4 or call.keywords:
            return None
        fn_node, args, flags, size = call.args[:4]
        kws = call.args[4] if len(call.args) > 4 else const(None)
        if not isinstance(args, gast.Tuple) or not isinstance(flags, gast.Tuple) or len(args.elts) != len(flags.elts) \
                or not all(isinstance(f, gast.Constant) and isinstance(f.value, bool) for f in flags.elts):
            return None
        if isinstance(kws, gast.Dict):
            if not all(isinstance(k, gast.Constant) and isinstance(k.value, str) for k in kws.keys):
                return None
            keywords = [(k.value, v) for k, v in zip(kws.keys, kws.values)]
        elif isinstance(kws, gast.Constant) and kws.value is None:
            keywords = []
        else:
            return None
        fn = resolve_call(gast.Call(func=fn_node, args=[], keywords=[]), self.namespace)
        from ..transforms.batching_ops import getitem

        def example(b, zeros=False):
            ex = [(call_named("zero_example", [clone(a), const(0)]) if zeros else
                   gast.Subscript(clone(a), clone(b), gast.Load())) if f.value else clone(a)
                  for a, f in zip(args.elts, flags.elts)]
            if fn is getitem and len(ex) == 2 and not keywords:     # x[index] per example
                return gast.Subscript(ex[0], ex[1], gast.Load())
            c = gast.Call(func=clone(fn_node), args=ex,
                          keywords=[gast.keyword(k, clone(v)) for k, v in keywords])
            c.s2s_fn = fn
            return c
        loop, _ = self.example_loop(target, size, example, lambda: example(None, True), "bmap_empty", "bmap_put",
                                    node)
        return loop

    def per_example_loop(self, call, node):
        """return per_example(example_fn, (args...), in_axes, out_axes, batch) -> a loop calling
        the compiled example function per example, each output stacked at its out_axes."""
        if len(call.args) != 5 or call.keywords:
            return None
        fn_node, args, in_axes, out_axes, size = call.args
        if not isinstance(args, gast.Tuple) or not isinstance(in_axes, gast.Tuple) \
                or len(args.elts) != len(in_axes.elts) or not all(
                    isinstance(a, gast.Constant) and (a.value is None or isinstance(a.value, int)) for a in in_axes.elts):
            return None
        if not _constant_axes(out_axes):
            return None

        def take(a, ax, b):     # np.take(a, b, axis=ax) as a basic index (a view)
            if ax is None:
                return clone(a)
            parts = [gast.Slice(None, None, None) for _ in range(ax)] + [clone(b)] if ax >= 0 else \
                [const(Ellipsis), clone(b)] + [gast.Slice(None, None, None) for _ in range(-ax - 1)]
            return gast.Subscript(clone(a), gast.Tuple(parts, gast.Load()) if len(parts) > 1 else parts[0],
                                  gast.Load())

        def example(b):
            return gast.Call(func=clone(fn_node), args=[take(a, ax.value, b) for a, ax in
                                                                zip(args.elts, in_axes.elts)], keywords=[])

        def probe():
            return gast.Call(func=clone(fn_node), args=[
                clone(a) if ax.value is None else call_named("zero_example", [clone(a), const(ax.value)])
                for a, ax in zip(args.elts, in_axes.elts)], keywords=[])
        out = self.namer.fresh("stacked")
        loop, first = self.example_loop(out, size, example, probe, "stack_empty", "stack_put", node)
        ret = gast.Return(value=call_named("stack_finish", [name(out), name(first), clone(out_axes)]))
        copy_loc(ret, node)
        return loop + [ret]

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if isinstance(it, gast.Call) and getattr(it, "s2s_fn", None) is builtins.reversed:
            inner = it.args[0]
            if isinstance(inner, gast.Name) and inner.id in self.reversed_ranges:
                node.iter = clone(self.reversed_ranges[inner.id])
                return node
            if isinstance(inner, gast.Name) and inner.id in self.ranges:
                inner = self.ranges[inner.id]
            if isinstance(inner, gast.Call) and getattr(inner, "s2s_fn", None) is builtins.range:
                new = gast.Call(func=name("reversed_range"), args=clone(inner.args), keywords=[])
                new.s2s_fn = loops.reversed_range
                node.iter = new
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = self.resolve(node)
        self.lists_as_arrays(node, fn)
        if fn is rt.stack:     # typed list, item type inferred from the appends in this function
            new = gast.Call(func=name("List"), args=[], keywords=[])
            new.s2s_fn = None
            return new
        if fn is rt.push:
            return gast.Call(func=gast.Attribute(node.args[0], "append", gast.Load()), args=[node.args[1]], keywords=[])
        if fn is rt.pop:
            return gast.Call(func=gast.Attribute(node.args[0], "pop", gast.Load()), args=[], keywords=[])
        rule = record_of(fn)
        fast = rule.vector_kernel      # np.exp -> fast_exp (OpRule)
        if fast is not None and len(node.args) == 1 and not node.keywords and not self.scalar_math:
            new = gast.Call(func=name(fast), args=node.args, keywords=[])
            new.s2s_fn = getattr(rt, fast)
            return new
        target = f"reduce_{rule.reduction}" if rule.reduction else None
        if target is not None and (len(node.args) > 1 or node.keywords):
            kws = {k.arg: k.value for k in node.keywords}
            axis = node.args[1] if len(node.args) > 1 else kws.get("axis", gast.Constant(None, None))
            keep = kws.get("keepdims", gast.Constant(False, None))
            if set(kws) - {"axis", "keepdims", "dtype", "out"} or constant_value(kws.get("dtype", gast.Constant(None, None))) \
                    is not None or constant_value(kws.get("out", gast.Constant(None, None))) is not None:
                return node
            if constant_value(axis) is None and constant_value(keep) is False:
                node.args, node.keywords = node.args[:1], []
                return node
            new = gast.Call(func=name(target), args=[node.args[0], axis, keep], keywords=[])
            new.s2s_fn = getattr(reductions, target)
            return new
        return _compiled_form(rule, node)      # (np.reshape(x, s) -> ...: the family's numba*.py)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        fn = operator_ops(gast.operator).get(type(node.op))
        return node if fn is None else _compiled_form(record_of(fn), node)     # (`a @ b` -> np.matmul(a, b))

    def visit_Subscript(self, node):
        self.generic_visit(node)
        # range(...)[::-1] (reversed loops of re-normalized code) -> reversed_range(...)
        if isinstance(node.value, gast.Name) and node.value.id in self.ranges and isinstance(node.slice, gast.Slice) \
                and node.slice.lower is None and node.slice.upper is None and constant_value(node.slice.step) == -1:
            new = gast.Call(func=name("reversed_range"), args=clone(self.ranges[node.value.id].args),
                            keywords=[])
            new.s2s_fn = loops.reversed_range
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
            return gast.BinOp(clone(start), gast.Add(), gast.BinOp(k, gast.Mult(), clone(step)))
        return node


def _constant_axes(node) -> bool:
    if isinstance(node, gast.Constant):
        return node.value is None or isinstance(node.value, int)
    return isinstance(node, gast.Tuple) and all(_constant_axes(e) for e in node.elts)


def lower(fdef: gast.FunctionDef, namespace: dict[str, Any], target: str = "cpu") -> gast.FunctionDef:
    """Rewrite a generated function so Numba's nopython mode compiles it."""
    ranges = {}
    for s in iter_nodes(fdef):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                and getattr(s.value, "s2s_fn", None) is builtins.range:
            ranges[s.targets[0].id] = s.value
    reversed_ranges = {}
    for s in iter_nodes(fdef):     # r = range(...)[::-1] (normalized `reversed(range(...))`)
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                and isinstance(s.value, gast.Subscript) and isinstance(s.value.value, gast.Name) \
                and s.value.value.id in ranges and isinstance(s.value.slice, gast.Slice) \
                and s.value.slice.lower is None and s.value.slice.upper is None \
                and constant_value(s.value.slice.step) == -1:
            reversed_ranges[s.targets[0].id] = clone(ranges[s.value.value.id])
    lowering = _Lower(ranges, namespace, reversed_ranges, target, namer_for(fdef, namespace))
    fdef = lowering.visit(fdef)
    setanno(fdef, EFFECT_FUNCTIONS, lowering.effect_functions)     # (emitted above it: see in_object_mode)
    return fdef


def compile_function(fn: Callable, target: str = "cpu", cache: bool = True) -> Callable:
    """`numba.njit` in nopython mode (`parallel=True` for a function with a prange loop: the
    parallel target's outlined loops, the default target's parallel twins)."""
    import numba
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=numba.NumbaPerformanceWarning)
        # (side effects and collectives run in object mode inside nogil code on purpose)
        warnings.filterwarnings("ignore", message=".*object mode won't allow parallel execution",
                                category=numba.NumbaWarning)
        # boundscheck: an index out of range raises IndexError, as in Python, instead of reading or
        # writing past the array (garbage, or a crash); measured at most ~10% on the benchmarks
        # parallel=True only where there is a prange loop: the fused loops are outlined under
        # target="parallel" (backends/outline.py), the twins are functions of their own, and Numba's array analysis of the rest (the
        # backward sweep's loops of array statements) inserted size checks that failed on
        # arrays of one size ("Sizes of dt1, w do not match")
        def options(f):
            # nogil: pmap runs compiled per-device code on threads at once (collectives take the
            # GIL in object mode for their exchange only); error_model: NumPy's inf/nan for a
            # division by zero, not ZeroDivisionError (numba_lower/common.py)
            return dict(cache=cache, parallel="prange" in f.__code__.co_names,
                        boundscheck=True, nogil=True, error_model=lowering.ERROR_MODEL)
        # the fused regions outlined above the function, compiled as it is
        glb = getattr(fn, "__globals__", {})
        mine = [(k, v) for k, v in glb.items()
                if isinstance(v, pytypes.FunctionType) and v is not fn and v.__module__ == fn.__module__]
        for key, value in mine:
            # (a fused loop indexes only with its counter, below the size every array was checked to have)
            glb[key] = _at_opt_level(numba.njit(**dict(options(value), boundscheck=False))(value))
        if any("parallel_worth" in f.__code__.co_names for f in [fn] + [v for _, v in mine]):
            # the switch to a parallel twin calls Numba's thread count by its symbol, which exists
            # once Numba's threads are started; machine code read from the disk cache is linked
            # without the typing that starts them ("LLVM ERROR: Symbol not found: get_num_threads")
            loops.launch_numba_threads()
        return _at_opt_level(numba.njit(**options(fn))(fn))


def optimization_level() -> int | None:
    """LLVM's optimization level for the code s2s compiles: S2S_NUMBA_OPT (0-3), else 2; None when
    the user set NUMBA_OPT (then Numba's own setting applies to everything).

    Numba's default, 3, took twice as long as 2 to compile s2s's code (LLVM's module passes run
    again over every helper linked into each function: 22.9 s against 11.4 s for the jit(grad)
    of tests/jit/test_jit.py's astype_mix on 2 cores) and ran no faster on the benchmarks
    (docs/performance.md, "Compile time").  LLVM reorders floating point only under fast-math
    flags: the two kernels s2s compiles with some (fused_numba's row_dot may reassociate its sum,
    vecmath's kernels contract to FMAs) may round differently at another level, as on another
    machine; everything else computes the same bits at either level."""
    if "NUMBA_OPT" in os.environ:
        return None
    raw = os.environ.get("S2S_NUMBA_OPT", "2")
    try:
        level = int(raw)
    except ValueError:
        level = -1
    if not 0 <= level <= 3:
        raise ValueError(f"S2S_NUMBA_OPT={raw!r}: give an LLVM optimization level, 0 to 3")
    return level


def _at_opt_level(dispatcher):
    """`dispatcher`, compiling each new signature (and every function compiled inside that
    compilation: helpers, overloads) at optimization_level(), and logging its time (`s2s` logger:
    typing and LLVM, or the load from Numba's disk cache).  Numba reads `config.OPT` when it
    builds each pass pipeline, under its compiler lock, which the switch holds; a call that does
    not compile takes neither."""
    level = optimization_level()
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock
    compile_now = dispatcher.compile

    def compile_at_level(sig):
        with global_compiler_lock:
            start = time.perf_counter()
            saved = config.OPT
            if level is not None:
                config.OPT = config._OptLevel(level)
            try:
                return compile_now(sig)
            finally:
                config.OPT = saved
                if log.logger.isEnabledFor(logging.INFO):
                    _log_compile(dispatcher, sig, time.perf_counter() - start)
    dispatcher.compile = compile_at_level
    return dispatcher


def _log_compile(dispatcher, sig, seconds: float) -> None:
    name = getattr(dispatcher.py_func, "__name__", "?")
    if dispatcher._cache_hits.get(sig):
        log.logger.info("numba %s: loaded from the disk cache in %.3f s", name, seconds)
        return
    cres = dispatcher.overloads.get(tuple(sig)) if isinstance(sig, tuple) else None
    timers = (getattr(cres, "metadata", None) or {}).get("timers", {})
    llvm = timers.get("llvm_lock", 0.0)
    log.logger.info("numba %s: compiled in %.3f s (typing and lowering %.3f s, LLVM %.3f s)", name, seconds,
                    max(seconds - llvm, 0.0), llvm)


def compile_for_args(dispatcher, args) -> None:
    """Compile `dispatcher` for these arguments' types without running it (or load the machine
    code from Numba's disk cache): the types a call with them would dispatch on."""
    given = tuple(dispatcher.typeof_pyval(a) for a in args)
    _, folded = dispatcher.fold_argument_types(given, {})    # (parameters left out: Omitted(default))
    dispatcher.compile(tuple(folded))


def describe_types(args) -> str:
    """The arguments' Numba types, as a compile notice names them: `(array(float64, 2d, C), float64)`."""
    import numba
    return "(" + ", ".join(str(numba.typeof(a)) for a in args) + ")"


def _quiet_object_mode_notes() -> None:
    """Numba notes, when it compiles (lazily, on the first call), that an object-mode block inside a
    nogil function takes the GIL: s2s puts side effects and collectives there on purpose."""
    import numba
    warnings.filterwarnings("ignore", message=".*object mode won't allow parallel execution",
                            category=numba.NumbaWarning)


def _quiet_contiguity_warnings() -> None:
    """Numba notes that `@` on non-contiguous views is slower; generated code makes such views
    (transposes, slices) on purpose, so the note is noise for s2s users."""
    import numba
    warnings.filterwarnings("ignore", message=".*is faster on contiguous arrays.*",
                            category=numba.NumbaPerformanceWarning)


_quiet_contiguity_warnings()
_quiet_object_mode_notes()
memory.keep_freed_memory()


# Numba's words when a package it needs is missing, and the package to install
_MISSING_PACKAGES = (
    ("scipy 0.16+ is required for linear algebra", "scipy",
     "Numba compiles `@`, np.dot and np.linalg only with SciPy installed"),
    ("CUDA support requires the numba-cuda package", "numba-cuda", "the CUDA target needs it"),
    ("No module named 'numba_cuda'", "numba-cuda", "the CUDA target needs it"),
    ("No module named 'scipy'", "scipy", "Numba's linear algebra and scipy.special rules need it"),
)


def missing_package_hint(text: str) -> str | None:
    """The hint for a Numba failure caused by a missing package: what to install, not what to write."""
    for needle, package, why in _MISSING_PACKAGES:
        if needle in text:
            return f"install {package} (python3 -m pip install {package}): {why}"
    return None
