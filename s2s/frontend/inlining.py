"""Calls: a call of an op with a rule stays a call; every other callee's body is inlined.

`expr_Call` resolves the callee (resolution.py). An array method becomes its NumPy function
(`x.sum(1)` -> `np.sum(x, 1)`, the rules' `methods`). An op with a rule stays a call, spelled by the rule's
canonical name, with the names the rule needs bound into the generated module (`call_rule`). An
op defined by other ops (`composite_of`), the user's Python functions and methods, and functions
transformed by s2s (through their generated source; `grad(f)` of pytree arguments through its flat
wrapper, `inline_tree_transform`) are inlined: the parameters bound to the caller's atoms, the
callee's locals renamed `<name>_<helper>`, its returned value assigned to `<helper>_out`.
Functions in `keep_calls` stay calls (the next pass has a rule of its own for them). A call is
first rewritten to the form its rule reads (OpRule.call_form: np.einsum's); `out=` arguments are refused.

Invariant left for the next pass: every call is `f(atoms)` with `node.s2s_fn` set to the object it
calls, which has a rule (or is one of `keep_calls`); no call of the user's code remains, and the
source files read are listed in `deps`; a recursive call raises RecursionNotSupportedError.
"""
from __future__ import annotations

import builtins
import inspect
import re
import types
from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from ..errors import NoRuleError, RecursionNotSupportedError, TransformError, UnsupportedSyntaxError
from .ast_build import assign, assigned_names, const, copy_loc, name, scope_locals
from .anf import PURE_BUILTINS, STR_METHODS, UNKNOWN
from .containers import container_literal
from .fence import fence
from .functions import PyFunction, is_function_object, parameter_names
from .hooks import composite_of, lookup, method_op
from .library_code import READ, SKIP, TRY, how_to_read
from .nodes import iter_nodes, parse_expr
from .parse import parse_function
from .resolution import constant, describe, dotted
from .statements import Frame, always_returns, has_early_return

VARARG_METHODS = {"reshape", "transpose"}
MAX_RECURSION = 24      # inlined calls of one function inside itself
MAX_INLINES = 2000      # inlined calls of a recursive function in all


class CallInlining:
    """Call part of `Normalizer` (normalize.py). Fields of `self.state` (normalize_state.py) it
    uses: `frame` (the callee's while it is inlined), `inline_stack`, `inline_counts`,
    `keep_calls`, `deps`, `ns`, `namer`, `aggregates`, `agg_meta`, `functions`, `row_lists`,
    `objects`, `object_names`; methods of the other parts: `stmts` (statements.py), `atom`,
    `arg_atom` (anf.py), `assign_aggregate`, `bind_value`, `aggregate_or_name`, `emit_literal`
    (containers.py), `resolve`, `try_resolve`, `is_local_rooted`, `global_ref`, `object_of`,
    `object_rooted` (resolution.py), `error`."""

    def expr_Call(self, node, out):
        state = self.state
        func = node.func
        value = self.callee_value(func, out)
        if value is not None:           # a function value: a nested def, a lambda, a function passed in
            args, kws = self.call_arguments(node, out)
            return self.call_value(value, args, kws, node, out)
        # Method call on a local value: x.sum(axis=0) -> np.sum(x, axis=0)
        if isinstance(func, gast.Attribute) and self.is_local_rooted(func.value) and not self.object_rooted(func.value):
            container = self.container_method(func, node, out)
            if container is not NotImplemented:
                return container
            meth = method_op(func.attr)
            receiver = self.known_value(self.atom(func.value, out)) if isinstance(func.value, gast.Name) else None
            if isinstance(receiver, str):         # `k.startswith("W")` on a key s2s knows: computed now
                args, kws = self.call_arguments(node, out)
                known = self.folded_call(getattr(receiver, func.attr, None) if func.attr in STR_METHODS else None,
                                         args, kws)
                if known is not None:
                    return known
            receiver = self.atom(func.value, out)
            args, kws = self.call_arguments(node, out)
            if meth is None:
                # a method s2s has no rule for (`rs.randn(3)`, `x.argsort()`): called as written, its
                # result a constant unless a differentiated value flows in (refused then)
                return self.call_rule(rt.call_method, [receiver, const(func.attr)] + args, node, kws)
            return self.method_op_call(meth, func.attr, receiver, args, kws, node)
        if isinstance(func, gast.Attribute) and not self.is_local_rooted(func.value) and method_op(func.attr) is not None:
            # a method of a global array (`W.reshape(2, 3)`, `W.sum()`): its op, as on a local array
            base = self.try_resolve(func.value)
            if type(base) is np.ndarray:
                receiver = self.global_ref(re.sub(r"\W", "_", dotted(func.value)), base, node)
                args, kws = self.call_arguments(node, out)
                return self.method_op_call(method_op(func.attr), func.attr, receiver, args, kws, node)
        if isinstance(func, gast.Name) and state.frame.rename.get(func.id) in state.aggregates and \
                state.agg_meta.get(state.frame.rename[func.id], ("",))[0] == "record":
            # a dataclass argument called: `layer(x)` is its class's __call__ with the record as self
            var = state.frame.rename[func.id]
            cls = state.ns.get(state.agg_meta[var][2], state.frame.parsed.namespace.get(state.agg_meta[var][2]))
            call = getattr(cls, "__call__", None)
            if isinstance(call, types.FunctionType):
                args, kws = self.call_arguments(node, out)
                return self.inline(call, [self.aggregate_or_name(var)] + args, kws, node, out)
        obj = self.resolve(func)
        if obj is rt.record:   # a pytree container rebuilt by s2s's flat wrapper
            cls = node.args[0].id
            tmp = state.namer.temp()
            self.assign_aggregate(tmp, [k.value for k in node.keywords], out, node,
                                  ("record", tuple(k.arg for k in node.keywords), cls))
            self.global_ref(cls, state.frame.parsed.namespace[cls], node)
            return name(tmp)
        if obj is builtins.reversed and len(node.args) == 1 and not node.keywords and not self.is_range(node.args[0]):
            # reversed(seq): the sequence reversed (a slice, differentiable), not an iterator s2s would
            # take for a constant (a loop over it would never see the array: a zero gradient); over a
            # range, the range reversed (a call of the nondiff rule)
            base = self.atom(node.args[0], out)
            if isinstance(base, gast.Name) and base.id in state.aggregates:
                return self._reversed_aggregate(base, node, out)
            tmp = state.namer.temp()
            out.append(assign(tmp, gast.Subscript(base, gast.Slice(None, None, const(-1)), gast.Load()), node))
            return name(tmp)
        form = getattr(lookup(obj), "call_form", None)
        if form is not None:      # (np.einsum: subscripts string first, OpRule.call_form)
            node = form(node, self)
        for k in node.keywords:
            if k.arg == "out" and not (isinstance(k.value, gast.Constant) and k.value.value is None):
                # a write into an existing array that the call's value does not show: s2s would
                # differentiate the returned value and miss the array it wrote (a zero gradient)
                raise self.error(UnsupportedSyntaxError, f"`{dotted(func)}(..., out=...)` writes its result into an "
                                 "existing array, which s2s does not follow", node,
                                 "assign the result instead: `y = np.sin(x)`, or `y[...] = np.sin(x)` to fill y")
        rows = self.row_list_call(obj, node, out)
        if rows is not NotImplemented:
            return rows
        comprehension = self.consumed_comprehension(obj, node, out)
        if comprehension is not NotImplemented:
            return comprehension
        args, kws = self.call_arguments(node, out)
        return self.call_object(obj, args, kws, node, out, func)

    def call_arguments(self, node, out) -> tuple[list, dict]:
        """A call's arguments as atoms; `*seq` and `**mapping` of split tuples/lists/dicts spread."""
        args: list = []
        for a in node.args:
            if isinstance(a, gast.Starred):
                args += self.spread(a.value, "*", node, out)
            else:
                args.append(self.arg_atom(a, out))
        kws: dict = {}
        for k in node.keywords:
            if k.arg is None:
                value = self.atom(k.value, out)
                if not (isinstance(value, gast.Name) and self.state.agg_meta.get(value.id, ("",))[0] == "dict"):
                    raise self.error(UnsupportedSyntaxError, "s2s spreads `**` only over dicts built in the function "
                                     "or passed as **kwargs", node, "pass keyword arguments by name")
                keys = self.state.agg_meta[value.id][1]
                for key, e in zip(keys, self.aggregate_or_name(value.id).elts):
                    kws[key] = e
            else:
                kws[k.arg] = self.arg_atom(k.value, out)
        return args, kws

    def spread(self, seq, star, node, out) -> list:
        value = self.atom(seq, out)
        if isinstance(value, gast.Name) and value.id in self.state.aggregates:
            return list(self.aggregate_or_name(value.id).elts)
        raise self.error(UnsupportedSyntaxError, f"s2s spreads `{star}` only over tuples and lists built in the "
                         "function or passed as *args (their length known before the code runs)", node,
                         "pass the arguments one by one")

    def call_object(self, obj, args: list, kws: dict, node, out: list, func=None) -> Any:
        """A call of the Python object `obj` with normalized arguments."""
        product = self.sparse_method(obj, func, args, kws, node)      # `A.dot(x)`, A sparse (foreign.py)
        if product is not None:
            return product
        if any(obj is b for b in PURE_BUILTINS):
            known = self.folded_call(obj, args, kws)
            if known is not None:         # int("12"), len("abc") of constants: computed now
                return known
        if obj is builtins.isinstance and len(args) == 2 and not kws:
            known = self.folded_isinstance(*args)
            if known is not None:         # isinstance(mode, str) of a constant s2s knows: decided now
                return known
        higher = self.call_higher_order(obj, args, kws, node, out)
        if higher is not NotImplemented:
            return higher
        if hasattr(obj, "_s2s_tree_source") and obj.transform in ("grad", "value_and_grad") and any(
                isinstance(a, (gast.Tuple, gast.List)) for a in args):
            return self.inline_tree_transform(obj, args, kws, node, out)
        if hasattr(obj, "_s2s_inline_source"):
            # a function transformed by s2s, called from code s2s transforms: use its generated source
            return self.inline(obj._s2s_inline_source(len(args)), args, kws, node, out)
        definition = composite_of(obj)
        if definition is not None:        # an op defined by other ops (s2s/ops/composite/rules.py)
            return self.inline(definition, args, kws, node, out)
        if hasattr(obj, "_s2s_as_op") and not isinstance(obj, type):
            obj._s2s_as_op()            # (a pmapped function: an op whose rules it registers now)
        rule = lookup(obj)
        if rule is not None:
            return self.call_rule(obj, args, node, kws)
        if isinstance(obj, types.FunctionType) and obj in self.state.keep_calls:
            # a helper the next pass has its own rule for (e.g. vmap's batched matmul cotangents)
            call = gast.Call(func=name(self._bind_fn(obj)),
                             args=[self.emit_literal(a) for a in args],
                             keywords=[gast.keyword(k, self.emit_literal(v)) for k, v in kws.items()])
            call.s2s_fn = obj
            return copy_loc(call, node)
        implementation = numpy_implementation(obj)
        if implementation is not None:
            # NumPy 2's functions are dispatcher objects (`__array_function__`) around a Python
            # function: read that function, as for NumPy 1's plain ones
            return self.inline(implementation, args, kws, node, out)
        how = how_to_read(obj) if isinstance(obj, types.FunctionType) else SKIP
        if how == READ:
            return self.inline(obj, args, kws, node, out)
        if how == TRY:
            # an installed package's function (frontend/library_code.py): read if s2s can honour it
            # all, else called as written, as before (its statements so far taken back)
            mark = len(out)
            try:
                return self.inline(obj, args, kws, node, out)
            except (TransformError, RecursionError):
                del out[mark:]
        if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType) \
                and how_to_read(obj.__func__) == READ:
            # `self.helper(x)`, `model.loss(x)`: the method, with its object as the first argument
            receiver = self.global_ref(f"{obj.__func__.__name__}_self", obj.__self__, node)
            if isinstance(receiver, gast.Name):
                self.state.object_names.add(receiver.id)
            return self.inline(obj.__func__, [receiver] + args, kws, node, out)
        call = getattr(type(obj), "__call__", None)
        if isinstance(call, types.FunctionType) and not isinstance(obj, type):
            # an object with a Python __call__ (a model, a layer): the method, the object first
            receiver = self.global_ref(f"{type(obj).__name__.lower()}_self", obj, node)
            if isinstance(receiver, gast.Name):
                self.state.object_names.add(receiver.id)
            return self.inline(call, [receiver] + args, kws, node, out)
        if callable(obj):
            # code s2s cannot read (a C function, a class, a library's function) and has no rule for:
            # called as written, its result a constant unless a differentiated value flows in (refused
            # then, at this line)
            return self.call_rule(rt.call_opaque, [self.opaque_ref(obj, func, node)] + args, node, kws)
        what = dotted(func) if func is not None else getattr(obj, "__name__", "this function")
        raise self.error(
            NoRuleError, f"s2s has no derivative rule for `{what}` ({describe(obj)}) and cannot read its source",
            node, "register a rule (@s2s.custom_vjp with f.defvjp, or @s2s.adjoint), or rewrite it with NumPy operations s2s knows")

    def method_op_call(self, meth, method: str, receiver, args: list, kws: dict, node):
        """`receiver.method(*args)` as its op's call (`x.reshape(2, 3)`: the shape as one tuple)."""
        if method in VARARG_METHODS and len(args) > 1:
            args = [gast.Tuple(args, gast.Load())]
        return self.call_rule(meth, [receiver] + args, node, kws)

    def folded_isinstance(self, value, classes):
        """`isinstance(value, classes)` as a constant when value is one s2s knows (a string, a
        number, None) and classes names classes; None otherwise."""
        known = self.known_value(value)
        if known is UNKNOWN:
            return None

        def class_of(atom):
            held = self.state.ns.get(atom.id) if isinstance(atom, gast.Name) else None
            return held if isinstance(held, type) else None
        parts = classes.elts if isinstance(classes, gast.Tuple) else [classes]
        found = [class_of(p) for p in parts]
        if any(c is None for c in found):
            return None
        return const(isinstance(known, tuple(found)))

    def local_aggregate(self, node: gast.Name) -> bool | None:
        """None if `node` names no local of the function; else whether the function built it as a
        tuple or list (an aggregate).  For OpRule.call_form."""
        if node.id not in self.state.frame.locals:
            return None
        return self.state.frame.rename.get(node.id, node.id) in self.state.aggregates

    def call_rule(self, fn, args: list, node, kws: dict | None = None) -> gast.Call:
        rule = lookup(fn)
        if rule is None:
            raise self.error(NoRuleError, f"s2s has no rule for {describe(fn)}", node)
        for key, value in rule.bindings.items():
            if key in self.state.ns and self.state.ns[key] is not value:
                raise self.error(TransformError, f"two different functions are both named `{key}`", node,
                                 "rename one of them")
            self.state.ns[key] = value
            self.state.namer.taken.add(key)
        call = gast.Call(func=parse_expr(rule.name), args=[self.emit_literal(a) for a in args],
                         keywords=[gast.keyword(k, self.emit_literal(v)) for k, v in (kws or {}).items()])
        call.s2s_fn = fn
        copy_loc(call, node)
        return call

    def _bind_fn(self, fn) -> str:
        key = fn.__name__
        if self.state.ns.get(key) is not fn:
            if key in self.state.ns:
                key = self.state.namer.fresh(key)
            self.state.ns[key] = fn
            self.state.namer.taken.add(key)
        return key

    def inline(self, fn, args: list, kws: dict, node, out: list) -> Any:
        self.check_recursion(fn, getattr(fn, "__name__", "<def>"), node)
        parsed = self.as_inlined(parse_function(fn), node)
        fence(parsed, top=False)
        self.state.deps.add(parsed.source.filename)
        fdef = parsed.node
        sig = inspect.signature(fn)
        params = parameter_names(fdef.args)
        local = params + sorted(scope_locals(fdef.body) - set(params))
        # (an identifier: a lambda's name is `<lambda>`)
        suffix = re.sub(r"\W", "", fn.__name__).strip("_") or ("lambda" if fn.__name__ == "<lambda>" else "fn")
        rename = {n: self.state.namer.fresh(f"{n}_{suffix}") for n in local}
        result = self.state.namer.fresh(f"{suffix}_out")
        frame = Frame(parsed, rename, set(local), result, None)
        return self.inline_body(parsed, sig, frame, fn, suffix, args, kws, node, out)

    def as_inlined(self, parsed, node):
        """`parsed` as a body inlined at the call `node`: its SourceInfo names the call site, and
        every node of its (freshly parsed) tree carries that SourceInfo, so an error anywhere in it
        names the user's line and the chain of calls (frontend/call_sites.py)."""
        func = getattr(node, "func", None)
        label = dotted(func) if isinstance(func, (gast.Name, gast.Attribute)) else None
        src = parsed.source.inlined_at(self.state.frame.parsed.source, node,
                                       label or getattr(parsed.fn, "__qualname__", None))
        for n in iter_nodes(parsed.node):
            if hasattr(n, "lineno"):
                n.s2s_src = src
        parsed.source = src
        return parsed

    def opaque_ref(self, obj, func, node):
        """A global of the generated code holding `obj` (any callable: global_ref takes values only)."""
        preferred = re.sub(r"\W", "_", dotted(func) if func is not None else getattr(obj, "__name__", "fn"))
        if self.state.ns.get(preferred) is obj:
            return name(preferred)
        spelled = dotted(func).split(".")[-1] if func is not None else getattr(obj, "__name__", "fn")
        key = self.state.namer.fresh(re.sub(r"\W", "_", spelled) or "fn")     # (log_ndtr, not ndtr)
        self.state.ns[key] = obj
        return name(key)

    def check_recursion(self, key, label: str, node) -> None:
        """Recursion is inlined while its depth is decided by constants s2s knows (`depth - 1` of a
        constant, a branch on it folded); a depth known only when the code runs is refused."""
        depth = sum(1 for f in self.state.inline_stack if f is key)
        self.state.inline_counts[id(key)] = self.state.inline_counts.get(id(key), 0) + 1
        if depth >= MAX_RECURSION or (depth and self.state.inline_counts[id(key)] > MAX_INLINES):
            chain = " -> ".join(getattr(f, "__name__", None) or getattr(f, "name", "<def>")
                                for f in self.state.inline_stack[:2] + [key])
            raise self.error(RecursionNotSupportedError, f"recursive call ({chain} -> ...): s2s inlines helper "
                             "functions, and this recursion does not end at a depth s2s knows when it reads the code",
                             node, "rewrite the recursion as a loop, or make its depth a constant argument")

    def inline_body(self, parsed, sig, frame, key, suffix: str, args: list, kws: dict, node, out: list) -> Any:
        """Inline a function body: parameters bound to the caller's atoms (`*args` to a split tuple,
        `**kwargs` to a split dict, defaults where an argument is missing), its statements normalized
        in `frame`, its returned value in `frame.result`."""
        fdef = parsed.node
        try:
            bound = sig.bind(*args, **kws)
        except TypeError as exc:
            raise self.error(TransformError, f"bad call to {getattr(key, '__name__', None) or fdef.name}: {exc}",
                             node) from None
        body_src = list(fdef.body)
        if not always_returns(body_src):
            body_src.append(copy_loc(gast.Return(value=None), body_src[-1] if body_src else fdef))
        caller = self.state.frame
        rename = frame.rename
        assigned = assigned_names(fdef.body)
        shared = _written_in_place(fdef.body) - assigned
        for p, param in sig.parameters.items():
            if p in bound.arguments:
                value = bound.arguments[p]
                if p in shared and isinstance(value, gast.Name) and value.id not in self.state.functions \
                        and value.id not in self.state.aggregates and value.id not in self.state.row_lists:
                    # a helper writing into its argument (`buf[0] = v`) writes into the caller's array:
                    # the parameter is that variable's name (no alias the transforms would refuse)
                    rename[p] = value.id
                    continue
                if param.kind is param.VAR_POSITIONAL:
                    value = container_literal(list(value), ("tuple", None, None))
                elif param.kind is param.VAR_KEYWORD:
                    value = container_literal(list(value.values()), ("dict", tuple(value), None))
            elif param.kind is param.VAR_POSITIONAL:
                value = container_literal([], ("tuple", None, None))
            elif param.kind is param.VAR_KEYWORD:
                value = container_literal([], ("dict", (), None))
            else:
                default = param.default
                if isinstance(default, gast.AST):          # a closure's default (an atom of its frame)
                    value = default
                elif is_function_object(default):
                    value = self.function_atom(PyFunction(default), p)
                elif isinstance(default, (int, float, str, tuple, type(None))):
                    value = constant(default)
                else:
                    value = self.global_ref(p, default, node)
            self.bind_value(rename[p], value, out, node)
            held = self.object_of(value)
            if held is not None and p not in assigned:
                self.state.objects[rename[p]] = held
        self.state.inline_stack.append(key)
        self.state.frame = frame
        try:
            if has_early_return(body_src):
                frame.live = self.state.namer.fresh(f"{suffix}_alive")
                out.append(assign(frame.live, const(True), node))
            body, _ = self.stmts(body_src)
            for n in body:
                if not hasattr(n, "s2s_src"):
                    n.s2s_src = parsed.source
            out += body
        finally:
            self.state.frame = caller
            self.state.inline_stack.pop()
        return name(frame.result)

    def inline_tree_transform(self, obj, args, kws, node, out):
        """grad(f)(params_tree, x) inside transformed code: differentiate f's flat wrapper, regroup."""
        if kws:
            raise self.error(UnsupportedSyntaxError, "pass pytree arguments to a transformed function positionally", node)
        treedefs, flat, positions = [], [], []
        for a in args:
            td, leaves = self.treedef_of(a)
            positions.append(list(range(len(flat), len(flat) + len(leaves))))
            flat += leaves
            treedefs.append(td if td != ("leaf",) else None)
        leaf_nums = tuple(i for a in obj.argnums for i in positions[a])
        result = self.inline(obj._s2s_tree_source(tuple(treedefs), leaf_nums), flat, {}, node, out)
        res = self.aggregate_or_name(result.id)

        def regroup(grads_node):
            leaves = list(grads_node.elts) if isinstance(grads_node, (gast.Tuple, gast.List)) else [grads_node]
            groups = [self.build_tree(treedefs[a] or ("leaf",), leaves) for a in obj.argnums]
            return container_literal(groups, ("tuple", None, None)) if obj.tuple_out else groups[0]
        if obj.transform == "grad":
            value = container_literal([regroup(res.elts[0]), res.elts[1]], ("tuple", None, None)) if obj.has_aux \
                else regroup(res)
        else:
            value = container_literal([res.elts[0], regroup(res.elts[1])], ("tuple", None, None))
        tmp = self.state.namer.temp()
        self.bind_value(tmp, value, out, node) if isinstance(value, (gast.Tuple, gast.List)) \
            else out.append(assign(tmp, value, node))
        return name(tmp)

    def treedef_of(self, node):
        """The pytree structure of a container literal (as s2s.pytree builds it), and its leaves."""
        if not isinstance(node, (gast.Tuple, gast.List)):
            return ("leaf",), [node]
        kind, keys, cls = getattr(node, "s2s_meta", None) or (
            "list" if isinstance(node, gast.List) else "tuple", None, None)
        parts = [self.treedef_of(e) for e in node.elts]
        if kind == "dict":
            order = sorted(range(len(keys)), key=lambda i: keys[i])
            parts = [parts[i] for i in order]
            td = ("dict", tuple(keys[i] for i in order), tuple(p[0] for p in parts))
        elif kind == "record":
            td = ("record", self.state.ns.get(cls, self.state.frame.parsed.namespace.get(cls)), tuple(keys),
                  tuple(p[0] for p in parts))
        else:
            td = (kind, None, tuple(p[0] for p in parts))
        return td, [leaf for p in parts for leaf in p[1]]

    def build_tree(self, td, leaves: list):
        """A container literal of the given structure over `leaves` (consumed in order)."""
        kind = td[0]
        if kind == "leaf":
            return leaves.pop(0)
        if kind == "none":
            return const(None)
        if kind == "dict":
            return container_literal([self.build_tree(c, leaves) for c in td[2]], ("dict", td[1], None))
        if kind == "record":
            cls_name = self.global_ref(td[1].__name__, td[1], None).id
            return container_literal([self.build_tree(c, leaves) for c in td[3]], ("record", td[2], cls_name))
        return container_literal([self.build_tree(c, leaves) for c in td[2]], (kind, None, None))



def _written_in_place(body: list) -> set[str]:
    """Names a function body writes into by index (`buf[i] = v`, `buf[i] += v`), when it defines no
    function that could keep the name (a closure reads its variable when called: late binding)."""
    out: set[str] = set()
    for n in iter_nodes(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, (gast.FunctionDef, gast.Lambda)):
            return set()
        if isinstance(n, (gast.Assign, gast.AugAssign)):
            for t in (n.targets if isinstance(n, gast.Assign) else [n.target]):
                if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name):
                    out.add(t.value.id)
    return out


def numpy_implementation(obj):
    """The Python function a NumPy dispatcher object (`np.cov`, `np.linalg.multi_dot`: NumPy 2's
    `_ArrayFunctionDispatcher`) runs for NumPy arrays; None for anything else."""
    if type(obj).__name__ != "_ArrayFunctionDispatcher":
        return None
    implementation = getattr(obj, "_implementation", None)
    return implementation if isinstance(implementation, types.FunctionType) else None
