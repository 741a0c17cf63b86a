"""Calls: a call of an op with a rule stays a call; every other callee's body is inlined.

`expr_Call` resolves the callee (resolution.py). An array method becomes its NumPy function
(`x.sum(1)` -> `np.sum(x, 1)`, METHODS). An op with a rule stays a call, spelled by the rule's
canonical name, with the names the rule needs bound into the generated module (`call_rule`). An
op defined by other ops (`composite_of`), the user's Python functions and methods, and functions
transformed by s2s (through their generated source; `grad(f)` of pytree arguments through its flat
wrapper, `inline_tree_transform`) are inlined: the parameters bound to the caller's atoms, the
callee's locals renamed `<name>_<helper>`, its returned value assigned to `<helper>_out`.
Functions in `keep_calls` stay calls (the next pass has a rule of its own for them). np.einsum is
first rewritten to the form its rule reads (frontend/einsum_forms.py); `out=` arguments are refused.

Invariant left for the next pass: every call is `f(atoms)` with `node.s2s_fn` set to the object it
calls, which has a rule (or is one of `keep_calls`); no call of the user's code remains, and the
source files read are listed in `deps`; a recursive call raises RecursionNotSupportedError.
"""
from __future__ import annotations

import builtins
import copy
import inspect
import re
import types
from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from ..errors import NoRuleError, RecursionNotSupportedError, TransformError, UnsupportedSyntaxError
from .ast_build import assign, assigned_names, const, copy_loc, name
from .containers import _literal
from .einsum_forms import EinsumFormError
from .einsum_forms import rewrite as einsum_rewrite
from .fence import fence
from .hooks import composite_of, lookup
from .nodes import parse_expr
from .parse import parse_function
from .resolution import _constant, _describe, _dotted
from .statements import Frame, _always_returns, _has_early_return

# Methods of ndarray, as the NumPy function that takes the array first.
METHODS: dict[str, Any] = {
    "sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
    "dot": np.dot, "copy": np.copy, "ravel": np.ravel, "flatten": np.ravel,
    "reshape": np.reshape, "transpose": np.transpose, "astype": rt.astype,
    "clip": np.clip, "std": np.std, "var": np.var, "squeeze": np.squeeze,
    "swapaxes": np.swapaxes, "cumsum": np.cumsum, "cumprod": np.cumprod,
    "argmax": np.argmax, "argmin": np.argmin, "any": np.any, "all": np.all,
    "round": np.round, "trace": np.trace, "diagonal": np.diagonal,
    "conj": np.conjugate, "conjugate": np.conjugate,
}
VARARG_METHODS = {"reshape", "transpose"}


class CallInlining:
    """Call part of `Normalizer` (normalize.py). State it uses: `frame` (the callee's while it is
    inlined), `inline_stack`, `keep_calls`, `deps`, `ns`, `namer`, `aggregates`, `objects`,
    `object_names`; methods of the other parts: `stmts` (statements.py), `atom`, `arg_atom`
    (anf.py), `assign_aggregate`, `bind_value`, `aggregate_or_name`, `emit_literal`
    (containers.py), `resolve`, `try_resolve`, `is_local_rooted`, `global_ref`, `object_of`,
    `object_rooted` (resolution.py), `error`."""

    def expr_Call(self, node, out):
        func = node.func
        # Method call on a local value: x.sum(axis=0) -> np.sum(x, axis=0)
        if isinstance(func, gast.Attribute) and self.is_local_rooted(func.value) and not self.object_rooted(func.value):
            meth = METHODS.get(func.attr)
            if meth is None:
                raise self.error(NoRuleError, f"s2s has no rule for the method `.{func.attr}()`", node,
                                 "call the NumPy function instead, or register a rule with s2s.custom_vjp")
            receiver = self.atom(func.value, out)
            args = [self.arg_atom(a, out) for a in node.args]
            if func.attr in VARARG_METHODS and len(args) > 1:
                args = [gast.Tuple(args, gast.Load())]
            kws = {k.arg: self.arg_atom(k.value, out) for k in node.keywords}
            return self.call_rule(meth, [receiver] + args, node, kws)
        obj = self.resolve(func)
        if obj is rt.record:   # a pytree container rebuilt by s2s's flat wrapper
            cls = node.args[0].id
            tmp = self.namer.temp()
            self.assign_aggregate(tmp, [k.value for k in node.keywords], out, node,
                                  ("record", tuple(k.arg for k in node.keywords), cls))
            self.global_ref(cls, self.frame.parsed.namespace[cls], node)
            return name(tmp)
        if obj is builtins.reversed and len(node.args) == 1 and not node.keywords and not self.is_range(node.args[0]):
            # reversed(seq): the sequence reversed (a slice, differentiable), not an iterator s2s would
            # take for a constant (a loop over it would never see the array: a zero gradient); over a
            # range, the range reversed (a call of the nondiff rule)
            base = self.atom(node.args[0], out)
            if isinstance(base, gast.Name) and base.id in self.aggregates:
                return self._reversed_aggregate(base, node, out)
            tmp = self.namer.temp()
            out.append(assign(tmp, gast.Subscript(base, gast.Slice(None, None, const(-1)), gast.Load()), node))
            return name(tmp)
        if obj is np.einsum:
            node = self.einsum_form(node)
        for k in node.keywords:
            if k.arg == "out" and not (isinstance(k.value, gast.Constant) and k.value.value is None):
                # a write into an existing array that the call's value does not show: s2s would
                # differentiate the returned value and miss the array it wrote (a zero gradient)
                raise self.error(UnsupportedSyntaxError, f"`{_dotted(func)}(..., out=...)` writes its result into an "
                                 "existing array, which s2s does not follow", node,
                                 "assign the result instead: `y = np.sin(x)`, or `y[...] = np.sin(x)` to fill y")
        args = [self.arg_atom(a, out) for a in node.args]
        kws = {k.arg: self.arg_atom(k.value, out) for k in node.keywords}
        if hasattr(obj, "_s2s_tree_source") and obj.transform in ("grad", "value_and_grad") and any(
                isinstance(a, (gast.Tuple, gast.List)) for a in args):
            return self.inline_tree_transform(obj, args, kws, node, out)
        if hasattr(obj, "_s2s_inline_source"):
            # a function transformed by s2s, called from code s2s transforms: use its generated source
            return self.inline(obj._s2s_inline_source(len(args)), args, kws, node, out)
        definition = composite_of(obj)
        if definition is not None:        # an op defined by other ops (rules/numpy_composite.py)
            return self.inline(definition, args, kws, node, out)
        rule = lookup(obj)
        if rule is not None:
            return self.call_rule(obj, args, node, kws)
        if isinstance(obj, types.FunctionType) and obj in self.keep_calls:
            # a helper the next pass has its own rule for (e.g. vmap's batched matmul cotangents)
            call = gast.Call(func=name(self._bind_fn(obj)),
                             args=[self.emit_literal(a) for a in args],
                             keywords=[gast.keyword(k, self.emit_literal(v)) for k, v in kws.items()])
            call.s2s_fn = obj
            return copy_loc(call, node)
        if isinstance(obj, types.FunctionType):
            return self.inline(obj, args, kws, node, out)
        if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
            # `self.helper(x)`, `model.loss(x)`: the method, with its object as the first argument
            receiver = self.global_ref(f"{obj.__func__.__name__}_self", obj.__self__, node)
            if isinstance(receiver, gast.Name):
                self.object_names.add(receiver.id)
            return self.inline(obj.__func__, [receiver] + args, kws, node, out)
        if obj is builtins.float or obj is builtins.sum:
            pass
        raise self.error(
            NoRuleError, f"s2s has no derivative rule for `{_dotted(func)}` ({_describe(obj)}) and cannot read its source",
            node, "register a rule (@s2s.custom_vjp with f.defvjp, or @s2s.adjoint), or rewrite it with NumPy operations s2s knows")

    def einsum_form(self, node):
        """np.einsum as its rule reads it: subscripts string first, at most three operands
        (frontend/einsum_forms.py); module constants count as the string or sublists they hold."""
        args = list(node.args)
        first = self.try_resolve(args[0]) if args and isinstance(args[0], (gast.Name, gast.Attribute)) else None
        if isinstance(first, str):
            args[0] = copy_loc(const(first), args[0])
        if args and not (isinstance(args[0], gast.Constant) and isinstance(args[0].value, str)):
            # the sublist form: a sublist after each operand, and maybe the output's last
            for k in [k for k in range(1, len(args), 2)] + ([len(args) - 1] if len(args) % 2 else []):
                a = args[k]
                if isinstance(a, gast.Name) and a.id in self.frame.locals:
                    if self.frame.rename.get(a.id, a.id) in self.aggregates:
                        raise self.error(UnsupportedSyntaxError, "s2s cannot differentiate np.einsum with a "
                                         "sublist built in the function", node, "write the sublists inline, "
                                         "np.einsum(x, (0, 1), y, (1, 2)), or use a string")
                    continue
                value = self.try_resolve(a) if isinstance(a, (gast.Name, gast.Attribute)) else None
                if isinstance(value, (tuple, list)) and all(type(e) is int or e is Ellipsis for e in value):
                    args[k] = copy_loc(gast.Tuple([const(e) for e in value], gast.Load()), a)
        node = copy.copy(node)
        node.args = args
        try:
            return einsum_rewrite(node)
        except EinsumFormError as exc:
            raise self.error(UnsupportedSyntaxError, f"s2s cannot differentiate this np.einsum: {exc}", node,
                             "write the subscripts as a string literal: np.einsum('ij,jk->ik', a, b)") from None

    def call_rule(self, fn, args: list, node, kws: dict | None = None) -> gast.Call:
        rule = lookup(fn)
        if rule is None:
            raise self.error(NoRuleError, f"s2s has no rule for {_describe(fn)}", node)
        for key, value in rule.bindings.items():
            if key in self.ns and self.ns[key] is not value:
                raise self.error(TransformError, f"two different functions are both named `{key}`", node,
                                 "rename one of them")
            self.ns[key] = value
            self.namer.taken.add(key)
        call = gast.Call(func=parse_expr(rule.name), args=[self.emit_literal(a) for a in args],
                         keywords=[gast.keyword(k, self.emit_literal(v)) for k, v in (kws or {}).items()])
        call.s2s_fn = fn
        copy_loc(call, node)
        return call

    def _bind_fn(self, fn) -> str:
        key = fn.__name__
        if self.ns.get(key) is not fn:
            if key in self.ns:
                key = self.namer.fresh(key)
            self.ns[key] = fn
            self.namer.taken.add(key)
        return key

    def inline(self, fn, args: list, kws: dict, node, out: list) -> Any:
        if fn in self.inline_stack:
            chain = " -> ".join(f.__name__ for f in self.inline_stack + [fn])
            raise self.error(RecursionNotSupportedError, f"recursive call ({chain}): s2s inlines helper functions and cannot inline recursion",
                             node, "rewrite the recursion as a loop")
        parsed = parse_function(fn)
        fence(parsed)
        self.deps.add(parsed.source.filename)
        fdef = parsed.node
        if fdef.args.kwonlyargs or fdef.args.posonlyargs:
            raise parsed.source.error(UnsupportedSyntaxError, "keyword-only parameters are not supported in helpers", fdef)
        sig = inspect.signature(fn)
        try:
            bound = sig.bind(*args, **kws)
        except TypeError as exc:
            raise self.error(TransformError, f"bad call to {fn.__name__}: {exc}", node) from None
        params = [a.id for a in fdef.args.args]
        local = params + sorted(assigned_names(fdef.body) - set(params))
        # (an identifier: a lambda's name is `<lambda>`)
        suffix = re.sub(r"\W", "", fn.__name__).strip("_") or ("lambda" if fn.__name__ == "<lambda>" else "fn")
        rename = {n: self.namer.fresh(f"{n}_{suffix}") for n in local}
        result = self.namer.fresh(f"{suffix}_out")
        body_src = list(fdef.body)
        if not _always_returns(body_src):
            body_src.append(copy_loc(gast.Return(value=None), body_src[-1] if body_src else fdef))
        frame = Frame(parsed, rename, set(local), result, None)
        caller = self.frame
        # Bind parameters (arguments are already normalized atoms of the caller).
        for p in params:
            if p in bound.arguments:
                value = bound.arguments[p]
            else:
                default = sig.parameters[p].default
                value = self.global_ref(p, default, node) if not isinstance(default, (int, float, str, tuple, type(None))) \
                    else _constant(default)
            self.bind_value(rename[p], value, out, node)
            held = self.object_of(value)
            if held is not None and p not in assigned_names(fdef.body):
                self.objects[rename[p]] = held
        self.inline_stack.append(fn)
        self.frame = frame
        try:
            if _has_early_return(body_src):
                frame.live = self.namer.fresh(f"{suffix}_alive")
                out.append(assign(frame.live, const(True), node))
            body, _ = self.stmts(body_src)
            for n in body:
                if not hasattr(n, "s2s_src"):
                    n.s2s_src = parsed.source
            out += body
        finally:
            self.frame = caller
            self.inline_stack.pop()
        return name(result)

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
            return _literal(groups, ("tuple", None, None)) if obj.tuple_out else groups[0]
        if obj.transform == "grad":
            value = _literal([regroup(res.elts[0]), res.elts[1]], ("tuple", None, None)) if obj.has_aux \
                else regroup(res)
        else:
            value = _literal([res.elts[0], regroup(res.elts[1])], ("tuple", None, None))
        tmp = self.namer.temp()
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
            td = ("record", self.ns.get(cls, self.frame.parsed.namespace.get(cls)), tuple(keys),
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
            return _literal([self.build_tree(c, leaves) for c in td[2]], ("dict", td[1], None))
        if kind == "record":
            cls_name = self.global_ref(td[1].__name__, td[1], None).id
            return _literal([self.build_tree(c, leaves) for c in td[3]], ("record", td[2], cls_name))
        return _literal([self.build_tree(c, leaves) for c in td[2]], (kind, None, None))
