"""A-normal form of expressions: every expression becomes one operation over atoms.

`simple(node, out)` returns `node` as one operation whose operands are atoms (a Name or a
Constant), after appending to `out` the statements that compute those operands into temporaries
(`t1`, `t2`, ...); `atom(node, out)` goes one step further and returns an atom; `arg_atom` keeps
a tuple/list of atoms literal (shapes, axes, lists of arrays). `and`/`or`, conditional expressions
and chained comparisons become `if`s assigning a temporary (each operand evaluated once, and only
when Python would); array attributes become functions (`x.T` -> `np.transpose(x)`, `.real`,
`.imag`) while `.shape`, `.ndim`, `.size` and `.dtype` stay; a field of a namedtuple np.linalg
returns becomes an index; `np.r_[a, b]` becomes `np.concatenate`; a list used as an index becomes
an index array. Calls are lowered in inlining.py, names resolved in resolution.py.

Invariant left for the next pass: every right-hand side is an atom, `a OP b`, `OP a`, `a CMP b`,
`f(atoms)`, `a[index]` (an index of atoms and slices of atoms) or `a.attr` (`.shape`, `.ndim`,
`.size`, `.dtype`, or an attribute of an object the code reads when it runs).
"""
from __future__ import annotations

from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from ..errors import UnsupportedSyntaxError
from .ast_build import assign, const, copy_loc, is_atom, name
from .containers import _container_kind, _literal
from .resolution import _dotted

NONDIFF_ATTRS = {"shape", "ndim", "size", "dtype"}
# Fields of the namedtuples np.linalg returns: `np.linalg.slogdet(a).logabsdet` is `np.linalg.slogdet(a)[1]`
RESULT_FIELDS = {id(np.linalg.slogdet): ("sign", "logabsdet"), id(np.linalg.eigh): ("eigenvalues", "eigenvectors"),
                 id(np.linalg.qr): ("Q", "R"), id(np.linalg.svd): ("U", "S", "Vh")}


class ExpressionANF:
    """Expression part of `Normalizer` (normalize.py). State it uses: `frame`, `namer`, `aggregates`,
    `agg_meta`, `results`; methods of the other parts: `assign_aggregate`, `bind_value`,
    `aggregate_or_name`, `element_of`, `slice_of`, `emit_literal` (containers.py), `call_rule`
    (inlining.py), `resolve`, `try_resolve`, `lookup_global`, `global_ref`, `object_rooted`
    (resolution.py), `error`."""

    def atom(self, node, out: list) -> Any:
        """Normalize `node` to an atom (Name or Constant), emitting statements."""
        if isinstance(node, (gast.Tuple, gast.List)):
            tmp = self.namer.temp()
            self.assign_aggregate(tmp, node.elts, out, node)
            return name(tmp)
        simple = self.simple(node, out)
        if is_atom(simple):
            return simple
        tmp = self.namer.temp()
        if isinstance(simple, (gast.Tuple, gast.List)):   # an element that is itself a container
            self.bind_value(tmp, simple, out, node)
            return name(tmp)
        out.append(assign(tmp, simple, node))
        self.note_result(tmp, simple)
        return name(tmp)

    def note_result(self, var: str, value) -> None:
        """Remember which variables hold an np.linalg namedtuple (for `.logabsdet` & co.)."""
        fields = RESULT_FIELDS.get(id(getattr(value, "s2s_fn", None))) if isinstance(value, gast.Call) else None
        if fields is not None:
            self.results[var] = fields
        else:
            self.results.pop(var, None)

    def arg_atom(self, node, out: list) -> Any:
        """Like atom, but tuples/lists stay literal (shapes, axes, lists of arrays)."""
        if isinstance(node, (gast.Tuple, gast.List)):
            return type(node)([self.arg_atom(e, out) for e in node.elts], gast.Load())
        a = self.atom(node, out)
        if isinstance(a, gast.Name) and a.id in self.aggregates:
            return self.aggregate_or_name(a.id)
        return a

    def expr_into(self, node, target: str, out: list) -> None:
        simple = self.simple(node, out)
        out.append(assign(target, simple, node))

    def simple(self, node, out: list) -> Any:
        """Normalize `node` to one operation over atoms (or an atom)."""
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(UnsupportedSyntaxError, f"s2s does not support `{type(node).__name__}` expressions", node)
        result = method(node, out)
        if hasattr(node, "lineno") and not hasattr(result, "lineno"):
            copy_loc(result, node)
        return result

    def expr_Constant(self, node, out):
        return const(node.value)

    def expr_Name(self, node, out):
        if node.id in self.frame.locals:
            return name(self.frame.rename[node.id])
        return self.global_ref(node.id, self.lookup_global(node), node)

    def expr_Attribute(self, node, out):
        root = node
        while isinstance(root, gast.Attribute):
            root = root.value
        if self.object_rooted(node):
            # `self.w`: read when the code runs (the object's current weights, not those it had
            # when the function was transformed)
            return gast.Attribute(self.atom(node.value, out), node.attr, gast.Load())
        if isinstance(root, gast.Name) and root.id in self.frame.locals or not isinstance(root, gast.Name):
            base = self.atom(node.value, out)
            if isinstance(base, gast.Name) and base.id in self.aggregates:
                if self.agg_meta.get(base.id, ("tuple",))[0] == "record":
                    return self.element_of(base.id, node.attr, node)
                raise self.error(UnsupportedSyntaxError, f"a tuple/list/dict has no attribute `.{node.attr}` here", node)
            if node.attr == "T":
                return self.call_rule(np.transpose, [base], node)
            if node.attr in ("real", "imag"):
                return self.call_rule(np.real if node.attr == "real" else np.imag, [base], node)
            if isinstance(base, gast.Name) and node.attr in self.results.get(base.id, ()):
                return gast.Subscript(base, const(self.results[base.id].index(node.attr)), gast.Load())
            if node.attr in NONDIFF_ATTRS:
                return gast.Attribute(base, node.attr, gast.Load())
            raise self.error(UnsupportedSyntaxError, f"s2s does not support the attribute `.{node.attr}`", node,
                             "use the NumPy function instead (e.g. np.real(x))")
        obj = self.resolve(node)
        return self.global_ref(_dotted(node), obj, node)

    def expr_BinOp(self, node, out):
        left = self.arg_atom(node.left, out)
        right = self.arg_atom(node.right, out)
        # tuple/list arithmetic: two literals concatenate here (the elements stay separate
        # variables); a literal and a runtime tuple (a shape) stay an expression
        kinds = {_container_kind(left), _container_kind(right)}
        if isinstance(node.op, gast.Add) and len(kinds) == 1 and kinds <= {"tuple", "list"}:
            return _literal(left.elts + right.elts, (kinds.pop(), None, None))
        return gast.BinOp(left, node.op, right)

    def expr_UnaryOp(self, node, out):
        if isinstance(node.op, (gast.USub, gast.UAdd)) and isinstance(node.operand, gast.Constant) \
                and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
            v = node.operand.value
            return const(-v if isinstance(node.op, gast.USub) else v)
        return gast.UnaryOp(node.op, self.atom(node.operand, out))

    def expr_Compare(self, node, out):
        if len(node.ops) == 1:
            left, right = self.atom(node.left, out), self.atom(node.comparators[0], out)
            if isinstance(node.ops[0], (gast.Is, gast.IsNot)) and any(
                    isinstance(a, gast.Name) and a.id in self.aggregates for a in (left, right)) and any(
                    isinstance(a, gast.Constant) and a.value is None for a in (left, right)):
                # a tuple/list/dict (split into its elements) is not None: `if axes is None:`
                return const(isinstance(node.ops[0], gast.IsNot))
            return gast.Compare(left, node.ops, [right])
        # a < b < c  ->  r = a < b; if r: r = b < c   (b evaluated once)
        result = self.namer.temp()
        left = self.atom(node.left, out)
        first_right = self.atom(node.comparators[0], out)
        out.append(assign(result, gast.Compare(left, [node.ops[0]], [first_right]), node))
        prev = first_right
        for op, comp in zip(node.ops[1:], node.comparators[1:]):
            inner: list = []
            right = self.atom(comp, inner)
            inner.append(assign(result, gast.Compare(prev, [op], [right]), node))
            out.append(copy_loc(gast.If(test=name(result), body=inner, orelse=[]), node))
            prev = right
        return name(result)

    def expr_BoolOp(self, node, out):
        result = self.namer.temp()
        self.expr_into(node.values[0], result, out)
        for v in node.values[1:]:
            inner: list = []
            self.expr_into(v, result, inner)
            if isinstance(node.op, gast.And):
                out.append(copy_loc(gast.If(test=name(result), body=inner, orelse=[]), node))
            else:
                out.append(copy_loc(gast.If(test=name(result), body=[gast.Pass()], orelse=inner), node))
        return name(result)

    def expr_IfExp(self, node, out):
        result = self.namer.temp()
        test = self.atom(node.test, out)
        body: list = []
        self.expr_into(node.body, result, body)
        orelse: list = []
        self.expr_into(node.orelse, result, orelse)
        out.append(copy_loc(gast.If(test=test, body=body, orelse=orelse), node))
        return name(result)

    def expr_Subscript(self, node, out):
        trick = self.try_resolve(node.value) if isinstance(node.value, (gast.Name, gast.Attribute)) else None
        if trick is np.r_ or trick is np.c_:
            return self.index_trick(trick, node, out)
        base = self.atom(node.value, out)
        if isinstance(base, gast.Name) and base.id in self.aggregates:
            elems = self.aggregates[base.id]
            idx = node.slice
            if isinstance(idx, gast.Constant):
                return self.element_of(base.id, idx.value, node)
            if isinstance(idx, gast.UnaryOp) and isinstance(idx.op, gast.USub) and isinstance(idx.operand, gast.Constant):
                return self.element_of(base.id, -idx.operand.value, node)
            if isinstance(idx, gast.Slice):
                return self.slice_of(base.id, idx, node)
            index = self.atom(idx, out)
            options = [name(e) if e not in self.aggregates else None for e in elems]
            if any(o is None for o in options):
                raise self.error(UnsupportedSyntaxError, "s2s cannot index a list of tuples with a variable", node,
                                 "stack the values into an array (np.stack) to index it with a variable")
            return self.call_rule(rt.choose, [index] + options, node)
        return gast.Subscript(base, self.index(node.slice, out), gast.Load())

    def index_trick(self, trick, node, out) -> Any:
        """`np.r_[a, b, ...]` of values is np.concatenate of their 1-d forms (the index carries the
        values: read as an index, their derivatives would be lost).  Slices, string directives and
        np.c_ are refused."""
        items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        if trick is np.c_ or any(isinstance(i, gast.Slice) or (isinstance(i, gast.Constant) and isinstance(i.value, str))
                                 for i in items):
            what = "np.c_[...]" if trick is np.c_ else "np.r_[...] with slices or string directives"
            raise self.error(UnsupportedSyntaxError, f"s2s does not differentiate {what}", node,
                             "write np.concatenate([...]), np.column_stack([...]) or np.arange / np.linspace instead")
        parts = []
        for item in items:
            tmp = self.namer.temp()
            out.append(assign(tmp, self.call_rule(np.atleast_1d, [self.atom(item, out)], node), node))
            parts.append(name(tmp))
        return self.call_rule(np.concatenate, [gast.Tuple(parts, gast.Load())], node)     # (a tuple: Numba too)

    def index(self, node, out) -> Any:
        if isinstance(node, gast.Slice):
            parts = [None if p is None else self.atom(p, out) for p in (node.lower, node.upper, node.step)]
            return gast.Slice(*parts)
        if isinstance(node, gast.Tuple):
            return gast.Tuple([self.index(e, out) for e in node.elts], gast.Load())
        if isinstance(node, gast.Constant):
            return const(node.value)
        if isinstance(node, gast.List):
            literal = self.arg_atom(node, out)
        else:
            a = self.atom(node, out)
            literal = self.aggregate_or_name(a.id) if isinstance(a, gast.Name) and a.id in self.aggregates else None
        if _container_kind(literal) == "list":
            # x[[0, 2]], x[idx] with idx = [i, j]: NumPy reads a list index as an index array
            tmp = self.namer.temp()
            out.append(assign(tmp, self.call_rule(np.array, [self.emit_literal(literal)], node), node))
            return name(tmp)
        if literal is not None:
            raise self.error(UnsupportedSyntaxError, "index with a tuple built in the function is not supported", node,
                             "write the index inline: x[i, j]")
        return a

    def expr_Tuple(self, node, out):
        return self.atom(node, out)

    def expr_Dict(self, node, out):
        if any(k is None or not isinstance(k, gast.Constant) for k in node.keys):
            raise self.error(UnsupportedSyntaxError, "s2s supports dict literals with constant keys only", node)
        keys = [k.value for k in node.keys]
        tmp = self.namer.temp()
        self.assign_aggregate(tmp, node.values, out, node, ("dict", tuple(keys), None))
        return name(tmp)

    expr_List = expr_Tuple
