"""Batching of one ANF right-hand side (vmap): the array form of each op on batched values.

BatchBuilder (transforms/batching.py) decides which variables are batched and walks the
statements; for an assignment whose value reads a batched variable it calls batch_value, here,
which returns the value's batched form by the op's batching kind (rules.batch_rules):
elementwise ops align per-example ranks (`balign`), reductions and ops with axis arguments shift
their axes past the batch axis (`baxis`, `breshape`, `btranspose`), matmul/dot use `bmatmul` /
`bdot`, indexing prepends the batch slice (`bgetitem` for a variable index), shape queries answer
per example, the adjoint helpers of reverse mode take their per-example versions
(`bunbroadcast`, `bexpand_reduced`, ...), and an op without a rule runs in a per-example loop
(`bmap`). What has no array form raises NoArrayForm: the whole function then runs per example.

OpBatching is a part of BatchBuilder (its base class): its methods read the builder's
`batched`, `namer`, `size`, `nf` and `is_b`.
"""
from __future__ import annotations


import gast
import numpy as np

from .. import runtime as rt
from ..runtime import batching as rtb
from ..runtime import effects as rte
from ..frontend.annotations import BATCHED, getanno, setanno
from ..frontend.ast_build import assign, const, copy_loc, name
from ..frontend.nodes import clone, iter_nodes, names_in
from ..rules.batch_rules import batch_kind
from ..rules.table import lookup, record_of
from ..ops.shape import batching as _shape_batching  # noqa: F401  (fills the shape queries' OpRule.batch_rule)
from .common import BINOP_FN, UNARY_FN, index_expr, rule_call



class NoArrayForm(Exception):
    """The function needs the per-example loop fallback; carries the reason."""

    def __init__(self, reason: str, node=None):
        super().__init__(reason)
        self.reason = reason
        self.node = node


def identity_test(value) -> bool:
    """`x is None`, `a is not b`: identity, not elementwise. Of batched values it has one answer for
    the whole batch (the stacked examples are None iff each one is)."""
    return isinstance(value, gast.Compare) and all(isinstance(op, (gast.Is, gast.IsNot)) for op in value.ops)


def _operands(value) -> list:
    if isinstance(value, gast.BinOp):
        return [value.left, value.right]
    if isinstance(value, (gast.UnaryOp,)):
        return [value.operand]
    if isinstance(value, gast.Compare):
        return [value.left] + list(value.comparators)
    if isinstance(value, gast.Call):
        return list(value.args) + [k.value for k in value.keywords]
    if isinstance(value, gast.Subscript):
        return [value.value, value.slice]
    if isinstance(value, gast.Attribute):
        return [value.value]
    if isinstance(value, (gast.Tuple, gast.List)):
        return list(value.elts)
    return [value]


class OpBatching:
    """The batched form of the right-hand sides of BatchBuilder's assignments."""

    def batch_value(self, value, code: list, s):
        """The batched form of one ANF right-hand side; marks it BATCHED (frontend/annotations.py)."""
        ops = _operands(value)
        if not any(names_in(o) & self.batched for o in ops):
            return value
        out = self._batch_value(value, code, s)
        if isinstance(out, gast.AST) and not (isinstance(out, gast.Name) and out.id not in self.batched):
            setanno(out, BATCHED, getanno(out, BATCHED, True))
        return out

    def _batch_value(self, value, code, s):
        if isinstance(value, gast.Name):
            return value
        if isinstance(value, gast.Attribute):
            x = value.value
            if value.attr == "shape":
                return self.unbatched(rule_call(rtb.bshape, [x]))
            if value.attr == "ndim":
                return self.unbatched(gast.BinOp(rule_call(np.ndim, [x]), gast.Sub(), const(1)))
            if value.attr == "size":
                return self.unbatched(rule_call(rtb.bsize, [x]))
            return value   # dtype
        if isinstance(value, gast.Subscript):
            if names_in(value.slice) & self.batched:
                raise NoArrayForm("indexing with a batched index", s)
            base = value.value
            if names_in(value.slice):   # a variable index may be an array (advanced indexing): decide at run time
                return rule_call(rtb.bgetitem, [base, index_expr(value.slice), const(True)])
            return gast.Subscript(base, self.batched_index(value.slice), gast.Load())
        if identity_test(value):
            return self.unbatched(value)
        if isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Compare)):
            fn = BINOP_FN.get(type(value.op)) if isinstance(value, gast.BinOp) else \
                UNARY_FN.get(type(value.op)) if isinstance(value, gast.UnaryOp) else None
            if isinstance(value, gast.BinOp) and isinstance(value.op, gast.MatMult):
                return self.matmul(value.left, value.right)
            return self.elementwise(value, _operands(value), code, s)
        if isinstance(value, gast.Call):
            fn = getattr(value, "s2s_fn", None)
            kind = batch_kind(fn)
            rule = lookup(fn)
            if kind in (None, "same") and rule is not None and rule.batch_rule is not None and value.args:
                joined = rule.batch_rule(value, self.expanded)     # np.stack([a, b]), np.array([a, b]), ...
                if joined is not None:
                    return joined
            if kind == "elementwise" and not value.keywords:
                return self.elementwise(value, list(value.args), code, s)
            if kind == "reduce":
                return self.reduction(value, code, s)
            if kind == "dot":
                a, b = value.args[0], value.args[1]
                return rule_call(rtb.bdot, [a, b, const(self.is_b(a)), const(self.is_b(b))])
            if kind == "matmul":
                return self.matmul(value.args[0], value.args[1])
            if kind in ("axis_args", "reshape", "transpose"):
                return self.axis_args(value, kind, code, s)
            if kind in ("matmul_vjp_a", "matmul_vjp_b"):
                # the cotangent of a per-example product: per example (keep=True), no shape dispatch left
                g, a, b = value.args
                if not self.is_b(g):
                    g = rule_call(rtb.bexpand, [g, name(self.size)])
                helper = rtb.bmatmul_vjp_a if kind == "matmul_vjp_a" else rtb.bmatmul_vjp_b
                return rule_call(helper, [g, a, b, const(self.is_b(a)), const(self.is_b(b)), const(True)])
            if kind == "shape_query":
                return self.shape_query(value)
            if kind == "shape_fn":
                return self.on_first_example(value)
            if kind == "same":      # per-example semantics unchanged on (B, ...) arrays
                return value
            if kind == "seed":
                return self.unbatched(rule_call(rtb.bseed, value.args))
            if kind == "unbroadcast":
                g, x = value.args
                return rule_call(rtb.bunbroadcast, [g, x, const(self.is_b(g)), const(self.is_b(x))])
            if kind == "broadcast_like":
                g, x = value.args
                return rule_call(rtb.bbroadcast_like, [g, x, const(self.is_b(g)), const(self.is_b(x))])
            if kind == "expand_reduced":
                args = list(value.args) + [const(None), const(False)][len(value.args) - 2:]
                g, x, axis, keepdims = args[:4]
                return rule_call(rtb.bexpand_reduced, [g, x, axis, keepdims, const(self.is_b(g)), const(self.is_b(x))])

            if kind == "reduced_size":
                x = value.args[0]
                axis = value.args[1] if len(value.args) > 1 else const(None)
                return self.unbatched(rule_call(rtb.breduced_size, [x, axis, const(self.is_b(x))]))
            if fn is rt.pop:
                return value
            if fn is rt.restore:      # compiled code's typed tape (one per variable): the value before
                st, current = value.args
                if self.is_b(st) and not self.is_b(current):
                    return rule_call(rt.restore, [st, rule_call(rtb.bexpand, [current, name(self.size)])])
                if self.is_b(current) and not self.is_b(st):
                    raise NoArrayForm("a saved value restored from a tape of unbatched values into a batched "
                                      "variable", s)
                return value
            return self.per_op_loop(value, code, s)
        if isinstance(value, (gast.Tuple, gast.List)):
            return value
        return value

    def expanded(self, node):
        """A value as a batched one: unbatched values repeated along a new batch axis."""
        return node if self.is_b(node) else rule_call(rtb.bexpand, [node, name(self.size)])

    def unbatched(self, node):
        setanno(node, BATCHED, False)
        return node

    def batched_index(self, index):
        """Prepend the batch slice to an index."""
        full = gast.Slice(None, None, None)
        if isinstance(index, gast.Tuple):
            return gast.Tuple([full] + list(index.elts), gast.Load())
        return gast.Tuple([full, index], gast.Load())

    def elementwise(self, value, operands, code, s):
        peers = [o for o in operands if isinstance(o, gast.Name)]
        mapping = {}
        if len(peers) > 1:
            for o in peers:
                if o.id in self.batched and o.id not in mapping:
                    others = [p for p in peers if p is not o and p.id != o.id]
                    if not others:
                        continue
                    aligned = self.namer.fresh(o.id + "_b")
                    code.append(copy_loc(assign(aligned, rule_call(rtb.balign, [
                        name(o.id), gast.Tuple([name(p.id) for p in others], gast.Load()),
                        gast.Tuple([const(p.id in self.batched) for p in others], gast.Load())])), s))
                    mapping[o.id] = aligned
        new = clone(value)
        for n in iter_nodes(new):
            if isinstance(n, gast.Name) and n.id in mapping:
                n.id = mapping[n.id]
        if hasattr(value, "s2s_fn"):
            new.s2s_fn = value.s2s_fn
        return new

    def reduction(self, value, code, s):
        x = value.args[0]
        if not self.is_b(x):
            return self.per_op_loop(value, code, s)
        new = clone(value)
        new.s2s_fn = value.s2s_fn
        axis_kw = [k for k in new.keywords if k.arg == "axis"]
        axis_node = new.args[1] if len(new.args) > 1 else (axis_kw[0].value if axis_kw else const(None))
        if lookup(value.s2s_fn).flat_index and isinstance(axis_node, gast.Constant) and axis_node.value is None:
            # argmax over all of an example: flatten each example, then per-row argmax
            return rule_call(value.s2s_fn, [rule_call(rtb.bflatten, [name(x.id)])], {"axis": const(1)})
        if len(new.args) > 1:
            new.args[1] = self.shift_axis(new.args[1], x)
        elif axis_kw:
            axis_kw[0].value = self.shift_axis(axis_kw[0].value, x)
        else:
            new.keywords.append(gast.keyword("axis", rule_call(rtb.baxis, [const(None), name(x.id)])))
        if any(names_in(a) & self.batched for a in new.args[1:]) or any(
                names_in(k.value) & self.batched for k in new.keywords if k.arg != "axis"):
            return self.per_op_loop(value, code, s)
        return new

    def axis_args(self, value, kind, code, s):
        """Ops whose axis arguments shift past the batch axis (negative axes stay as they are)."""
        fn = value.s2s_fn
        x = value.args[0]
        if not self.is_b(x) or any(names_in(a) & self.batched for a in value.args[1:]):
            return self.per_op_loop(value, code, s)
        if kind == "reshape":
            order = value.args[2] if len(value.args) > 2 else next((k.value for k in value.keywords if k.arg == "order"), None)
            if order is not None and not (isinstance(order, gast.Constant) and order.value == "C"):
                return self.per_op_loop(value, code, s)     # breshape reshapes each example in C order
            shape = value.args[1] if len(value.args) > 1 else next(k.value for k in value.keywords if k.arg in ("shape", "newshape"))
            return rule_call(rtb.breshape, [x, shape])
        if kind == "transpose":
            axes = value.args[1] if len(value.args) > 1 else next((k.value for k in value.keywords if k.arg == "axes"),
                                                                  const(None))
            return rule_call(rtb.btranspose, [x, axes])
        import inspect as _inspect
        try:
            params = list(_inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            return self.per_op_loop(value, code, s)
        names = lookup(fn).axis_params
        new = clone(value)
        new.s2s_fn = fn
        for i, a in enumerate(new.args[1:], start=1):
            if i < len(params) and params[i] in names:
                if not (isinstance(a, gast.Constant) and isinstance(a.value, int)):
                    return self.per_op_loop(value, code, s)
                if a.value >= 0:
                    new.args[i] = const(a.value + 1)
        for k in new.keywords:
            if k.arg in names:
                if not (isinstance(k.value, gast.Constant) and isinstance(k.value.value, int)):
                    return self.per_op_loop(value, code, s)
                if k.value.value >= 0:
                    k.value = const(k.value.value + 1)
        passed = set(params[:len(value.args)]) | {k.arg for k in value.keywords}
        for p in names:        # an axis left at its default (all_gather's axis=0) shifts too
            default = _inspect.signature(fn).parameters[p].default if p in params else None
            if p not in passed and isinstance(default, int) and not isinstance(default, bool) and default >= 0:
                new.keywords.append(gast.keyword(p, const(default + 1)))
        given = [a for i, a in enumerate(value.args[1:], start=1) if i < len(params) and params[i] == "axis"] + [
            k.value for k in value.keywords if k.arg == "axis"]
        axis_param = _inspect.signature(fn).parameters.get("axis")
        if axis_param is not None and axis_param.default is None and (
                not given or isinstance(given[0], gast.Constant) and given[0].value is None):
            return self.per_op_loop(value, code, s)    # axis=None (squeeze, cumsum, flip, ...): all axes of the example
        return new

    def shift_axis(self, axis, x):
        if isinstance(axis, gast.Constant) and isinstance(axis.value, int) and axis.value >= 0:
            return const(axis.value + 1)
        return rule_call(rtb.baxis, [axis, name(x.id)])

    def matmul(self, a, b):
        return rule_call(rtb.bmatmul, [a, b, const(self.is_b(a)), const(self.is_b(b))])

    def on_first_example(self, value):
        """Static facts about shapes (axes, sizes) are the same for every example: read them off the first."""
        new = clone(value)
        new.s2s_fn = value.s2s_fn

        def first(node):
            if self.is_b(node):
                return gast.Subscript(node, const(0), gast.Load())
            if isinstance(node, (gast.Tuple, gast.List)):
                node.elts = [first(e) for e in node.elts]
            return node
        new.args = [first(a) for a in new.args]
        for k in new.keywords:
            k.value = first(k.value)
        return self.unbatched(new)

    def shape_query(self, value):
        """np.shape / np.ndim / np.size / len of a batched array: the example's (OpRule.batch_rule,
        ops/shape/batching.py)."""
        if not self.is_b(value.args[0]):
            return value
        rule = lookup(value.s2s_fn)
        return self.unbatched(rule.batch_rule(value)) if rule.batch_rule is not None else value

    def per_op_loop(self, value, code, s):
        """bmap(op, args, flags, size): the op applied example by example."""
        if isinstance(value, gast.Subscript):
            fn_node = name("getitem_")
            self.nf.namespace["getitem_"] = getitem
            args = [value.value, index_expr(value.slice)]
        elif isinstance(value, gast.Call):
            if getattr(value, "s2s_fn", None) is rte.format_value:    # (a string per example: no array)
                raise NoArrayForm("an f-string of values of the batch", s)
            fn_node = value.func
            args = list(value.args)
            # a tuple of arrays of different shapes (eigh's, qr's, array_split's): a per-op loop would
            # stack them as one array
            if record_of(getattr(value, "s2s_fn", None)).ragged_tuple and not any(
                    k.arg == "compute_uv" and isinstance(k.value, gast.Constant) and k.value.value is False
                    for k in value.keywords):
                raise NoArrayForm(f"`{ast_text(value.func)}` returns a tuple of arrays of different shapes "
                                  "(no stacked form)", s)
            if any(names_in(k.value) & self.batched for k in value.keywords):
                raise NoArrayForm(f"`{ast_text(value.func)}` with a batched keyword argument", s)
        else:
            raise NoArrayForm(f"`{type(value).__name__}`", s)
        for a in args:
            if isinstance(a, (gast.Tuple, gast.List)) and names_in(a) & self.batched:
                raise NoArrayForm(f"`{ast_text(fn_node)}` with a batched value inside a tuple/list argument", s)
        kws = gast.Dict(keys=[const(k.arg) for k in getattr(value, "keywords", [])],
                        values=[k.value for k in getattr(value, "keywords", [])])
        flags = gast.Tuple([const(self.is_b(a)) for a in args], gast.Load())
        return rule_call(rtb.bmap, [fn_node, gast.Tuple(args, gast.Load()), flags, name(self.size), kws])


def getitem(x, index):
    """x[index], as the op a per-example loop (bmap) applies to each example."""
    return x[index]


def ast_text(node) -> str:
    import ast as _ast
    try:
        return _ast.unparse(gast.gast_to_ast(node))
    except Exception:  # pragma: no cover - only for messages
        return "<expr>"
