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

import operator
from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from ..errors import UnsupportedSyntaxError
from .ast_build import UNKNOWN, assign, const, copy_loc, is_atom, name, scope_locals
from .containers import container_kind, container_literal
from .functions import PyFunction, is_function_object
from .hooks import attribute_op, lookup
from .resolution import dotted

NONDIFF_ATTRS = {"shape", "ndim", "size", "dtype"}
_FOLDABLE = (bool, int, float, str, type(None))
_BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul, gast.Div: operator.truediv,
           gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod, gast.Pow: operator.pow}
_ARRAY_ATTRS = set(dir(np.ndarray))
STR_METHODS = {"startswith", "endswith", "upper", "lower", "strip", "lstrip", "rstrip", "isdigit", "isalpha",
                "replace", "removeprefix", "removesuffix", "capitalize", "title", "count", "find"}
PURE_BUILTINS = {int, float, str, bool, len, abs, round, min, max}
_UNARY = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_}
_COMPARE = {gast.Eq: operator.eq, gast.NotEq: operator.ne, gast.Lt: operator.lt, gast.LtE: operator.le,
            gast.Gt: operator.gt, gast.GtE: operator.ge, gast.Is: operator.is_, gast.IsNot: operator.is_not,
            gast.In: lambda a, b: a in b, gast.NotIn: lambda a, b: a not in b}


class ExpressionANF:
    """Expression part of `Normalizer` (normalize.py). Fields of `self.state`
    (normalize_state.py) it uses: `frame`, `namer`, `aggregates`, `agg_meta`, `constants`,
    `results`, `row_lists`; methods of the other parts: `assign_aggregate`, `bind_value`,
    `aggregate_or_name`, `element_of`, `slice_of`, `emit_literal` (containers.py), `call_rule`
    (inlining.py), `resolve`, `try_resolve`, `lookup_global`, `global_ref`, `object_rooted`
    (resolution.py), `error`."""

    def atom(self, node, out: list) -> Any:
        """Normalize `node` to an atom (Name or Constant), emitting statements."""
        if isinstance(node, (gast.Tuple, gast.List)):
            tmp = self.state.namer.temp()
            self.assign_aggregate(tmp, node.elts, out, node)
            return name(tmp)
        simple = self.simple(node, out)
        if is_atom(simple):
            return simple
        tmp = self.state.namer.temp()
        if isinstance(simple, (gast.Tuple, gast.List)):   # an element that is itself a container
            self.bind_value(tmp, simple, out, node)
            return name(tmp)
        out.append(assign(tmp, simple, node))
        self.note_result(tmp, simple)
        return name(tmp)

    def note_result(self, var: str, value) -> None:
        """Remember which variables hold an np.linalg namedtuple (for `.logabsdet` & co.)."""
        rule = lookup(getattr(value, "s2s_fn", None)) if isinstance(value, gast.Call) else None
        fields = rule.result_fields if rule is not None and rule.result_fields else None
        if fields is not None:
            self.state.results[var] = fields
        else:
            self.state.results.pop(var, None)

    def arg_atom(self, node, out: list) -> Any:
        """Like atom, but tuples/lists stay literal (shapes, axes, lists of arrays)."""
        if isinstance(node, (gast.Tuple, gast.List)):
            return type(node)([self.arg_atom(e, out) for e in node.elts], gast.Load())
        a = self.atom(node, out)
        if isinstance(a, gast.Name) and a.id in self.state.aggregates:
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
        result = self.folded(method(node, out))
        if hasattr(node, "lineno") and not hasattr(result, "lineno"):
            copy_loc(result, node)
        return result

    def folded_call(self, fn, args: list, kws: dict) -> Any:
        """`fn(*args)` computed now when fn is a string method or a pure builtin (int, float, str,
        len, ...) and every argument is a constant s2s knows (`k.startswith("W")` with a key of an
        unrolled loop, `int(name[1:])`); None otherwise."""
        if fn is None or kws:
            return None
        values = [self.known_value(a) for a in args]
        if any(v is UNKNOWN or not isinstance(v, _FOLDABLE) for v in values):
            return None
        try:
            value = fn(*values)
        except (TypeError, ValueError, ArithmeticError):
            return None
        return const(value) if isinstance(value, _FOLDABLE) else None

    def known_value(self, atom) -> Any:
        """The Python constant an atom holds, if s2s knows it (a literal, a variable bound to one)."""
        if isinstance(atom, gast.Constant):
            return atom.value
        if isinstance(atom, gast.Name) and atom.id in self.state.constants:
            return self.state.constants[atom.id]
        return UNKNOWN

    def folded(self, simple) -> Any:
        """An operation on constants s2s knows (`callback is not None`, `k.startswith("W")` with a
        key of an unrolled loop, `name[1:]`), computed now: branches on it are decided when s2s reads
        the code. Only Python numbers, strings, None and booleans are folded; arrays never are."""
        if isinstance(simple, gast.BinOp):
            operands = [simple.left, simple.right]
        elif isinstance(simple, gast.UnaryOp):
            operands = [simple.operand]
        elif isinstance(simple, gast.Compare) and len(simple.ops) == 1:
            operands = [simple.left, simple.comparators[0]]
        elif isinstance(simple, gast.Subscript) and not isinstance(simple.slice, gast.Tuple):
            sl = simple.slice
            parts = [sl.lower, sl.upper, sl.step] if isinstance(sl, gast.Slice) else [sl]
            values = [None if p is None else self.known_value(p) for p in parts]
            base = self.known_value(simple.value)
            if not isinstance(base, (str, tuple)) or any(v is UNKNOWN or not (v is None or type(v) is int)
                                                         for v in values):
                return simple
            try:
                return const(base[slice(*values)] if isinstance(sl, gast.Slice) else base[values[0]])
            except (IndexError, TypeError):
                return simple
        else:
            return simple
        values = [self.known_value(a) for a in operands]
        if any(v is UNKNOWN or not isinstance(v, _FOLDABLE) for v in values):
            return simple
        if isinstance(simple, gast.BinOp) and isinstance(simple.op, (gast.Pow, gast.Mult, gast.LShift)) and any(
                isinstance(v, (int, float)) and abs(v) > 4096 for v in values):
            return simple        # (not a computation to run now: 2 ** 10 ** 9, "ab" * 10 ** 9)
        try:
            if isinstance(simple, gast.BinOp):
                value = _BINOPS[type(simple.op)](*values)
            elif isinstance(simple, gast.UnaryOp):
                value = _UNARY[type(simple.op)](values[0])
            else:
                value = _COMPARE[type(simple.ops[0])](*values)
        except (KeyError, ArithmeticError, TypeError, ValueError):
            return simple
        return const(value) if isinstance(value, _FOLDABLE) else simple

    def expr_Constant(self, node, out):
        return const(node.value)

    def expr_Name(self, node, out):
        if node.id in self.state.frame.locals:
            var = self.state.frame.rename[node.id]
            if var in self.state.aggregates:
                self.check_fresh(var, node)
            if var in self.state.row_lists:        # a list grown in a kept loop: its rows so far (sequences.py)
                return self.row_view(var, node, out)
            return name(var)
        obj = self.lookup_global(node)
        if is_function_object(obj):      # a function as a value: static (frontend/functions.py)
            return self.function_atom(PyFunction(obj), node.id)
        return self.global_ref(node.id, obj, node)

    def expr_Attribute(self, node, out):
        state = self.state
        root = node
        while isinstance(root, gast.Attribute):
            root = root.value
        if self.object_rooted(node):
            # `self.w`: read when the code runs (the object's current weights, not those it had
            # when the function was transformed)
            return gast.Attribute(self.atom(node.value, out), node.attr, gast.Load())
        if isinstance(root, gast.Name) and root.id in state.frame.locals or not isinstance(root, gast.Name):
            base = self.atom(node.value, out)
            if isinstance(base, gast.Name) and base.id in state.aggregates:
                if state.agg_meta.get(base.id, ("tuple",))[0] == "record":
                    return self.element_of(base.id, node.attr, node)
                raise self.error(UnsupportedSyntaxError, f"a tuple/list/dict has no attribute `.{node.attr}` here", node)
            op = attribute_op(node.attr)        # `x.T`, `x.real`, `x.imag` (OpRule.attributes)
            if op is not None:
                return self.call_rule(op, [base], node)
            if isinstance(base, gast.Name) and node.attr in state.results.get(base.id, ()):
                return gast.Subscript(base, const(state.results[base.id].index(node.attr)), gast.Load())
            if node.attr in NONDIFF_ATTRS:
                return gast.Attribute(base, node.attr, gast.Load())
            if isinstance(node.value, gast.Name) and state.frame.result is None and \
                    node.value.id in {a.id for a in state.frame.parsed.node.args.args} and \
                    node.value.id not in scope_locals(state.frame.parsed.node.body) and node.attr not in _ARRAY_ATTRS:
                # an attribute of an argument that is an object (a config): read when the code runs;
                # a constant for the derivative (objects are not differentiated: pytrees are split)
                return gast.Attribute(base, node.attr, gast.Load())
            raise self.error(UnsupportedSyntaxError, f"s2s does not support the attribute `.{node.attr}`", node,
                             "use the NumPy function instead (e.g. np.real(x))")
        obj = self.resolve(node)
        if is_function_object(obj):
            return self.function_atom(PyFunction(obj), node.attr)
        return self.global_ref(dotted(node), obj, node)

    def expr_BinOp(self, node, out):
        left = self.arg_atom(node.left, out)
        right = self.arg_atom(node.right, out)
        # tuple/list arithmetic: two literals concatenate here (the elements stay separate
        # variables); a literal and a runtime tuple (a shape) stay an expression
        kinds = {container_kind(left), container_kind(right)}
        if isinstance(node.op, gast.Add) and len(kinds) == 1 and kinds <= {"tuple", "list"}:
            return container_literal(left.elts + right.elts, (kinds.pop(), None, None))
        if isinstance(node.op, gast.Mult) and kinds & {"tuple", "list"}:
            # [x] * 3: the elements repeated (the same values: each carries its derivative)
            seq, count = (left, right) if container_kind(left) in ("tuple", "list") else (right, left)
            times = self.known_value(count)
            if not (isinstance(times, int) and not isinstance(times, bool)):
                raise self.error(UnsupportedSyntaxError, "s2s repeats a tuple or list only a number of times it "
                                 "knows when it reads the code", node, "use np.tile / np.repeat on an array")
            return container_literal(list(seq.elts) * max(times, 0), (container_kind(seq), None, None))
        if isinstance(node.op, gast.MatMult):
            product = self.sparse_product(left, right, node)     # (a scipy.sparse operand: foreign.py)
            if product is not None:
                return product
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
                    isinstance(a, gast.Name) and a.id in self.state.aggregates for a in (left, right)) and any(
                    isinstance(a, gast.Constant) and a.value is None for a in (left, right)):
                # a tuple/list/dict (split into its elements) is not None: `if axes is None:`
                return const(isinstance(node.ops[0], gast.IsNot))
            # a tuple built here compares as the tuple it is (`w.shape == (n,)`)
            left, right = (self.emit_literal(self.aggregate_or_name(a.id)) if isinstance(a, gast.Name)
                           and a.id in self.state.aggregates else a for a in (left, right))
            return gast.Compare(left, node.ops, [right])
        # a < b < c  ->  r = a < b; if r: r = b < c   (b evaluated once)
        result = self.state.namer.temp()
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
        result = self.state.namer.temp()
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
        result = self.state.namer.temp()
        test = self.atom(node.test, out)
        known = self.known_value(test)
        if known is not UNKNOWN and isinstance(known, _FOLDABLE) and self.settled(node.test):   # decided now
            return self.simple(node.body if known else node.orelse, out)
        if isinstance(test, gast.Constant):
            tmp = self.state.namer.temp()
            out.append(assign(tmp, test, node))
            test = name(tmp)
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
        if isinstance(node.value, gast.Name) and self.state.frame.rename.get(node.value.id) in self.state.row_lists \
                and not isinstance(node.slice, (gast.Slice, gast.Tuple)):
            return self.row_element(self.state.frame.rename[node.value.id], self.atom(node.slice, out), node, out)
        base = self.atom(node.value, out)
        if isinstance(base, gast.Name) and base.id in self.state.aggregates:
            elems = self.state.aggregates[base.id]
            idx = node.slice
            if isinstance(idx, gast.Constant):
                return self.element_of(base.id, idx.value, node)
            if isinstance(idx, gast.UnaryOp) and isinstance(idx.op, gast.USub) and isinstance(idx.operand, gast.Constant):
                return self.element_of(base.id, -idx.operand.value, node)
            if isinstance(idx, gast.Slice):
                return self.slice_of(base.id, idx, node)
            index = self.atom(idx, out)
            if isinstance(index, gast.Name) and index.id in self.state.constants:   # a loop's key, a constant argument
                return self.element_of(base.id, self.state.constants[index.id], node)
            if self.state.agg_meta.get(base.id, ("tuple",))[0] in ("dict", "record"):
                raise self.error(UnsupportedSyntaxError, "s2s needs the key of a dict built in the function when it "
                                 "reads the code, and this key is known only when the code runs", node,
                                 "index with a constant key, or loop over the dict's .items()")
            options = [name(e) if e not in self.state.aggregates else None for e in elems]
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
            tmp = self.state.namer.temp()
            out.append(assign(tmp, self.call_rule(np.atleast_1d, [self.atom(item, out)], node), node))
            parts.append(name(tmp))
        return self.call_rule(np.concatenate, [gast.Tuple(parts, gast.Load())], node)     # (a tuple: Numba too)

    def index(self, node, out) -> Any:
        state = self.state
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
            literal = self.aggregate_or_name(a.id) if isinstance(a, gast.Name) and a.id in state.aggregates else None
        if container_kind(literal) == "list":
            # x[[0, 2]], x[idx] with idx = [i, j]: NumPy reads a list index as an index array
            tmp = state.namer.temp()
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
        tmp = self.state.namer.temp()
        self.assign_aggregate(tmp, node.values, out, node, ("dict", tuple(keys), None))
        return name(tmp)

    expr_List = expr_Tuple
