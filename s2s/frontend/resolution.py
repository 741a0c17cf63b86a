"""Name resolution: the Python object a name, an attribute or a called expression stands for, and
how generated code refers to it.

A local name reads its (renamed) variable, `frame.rename`; a global name, or an attribute of one,
is looked up in the namespace of the function it appears in (closure cells, globals, builtins:
frontend/parse.py) and bound into the generated module's globals by `global_ref`, under its own
name when nothing else uses it (True/False/None become constants, `np` stays `np`, a NumPy scalar
type is spelled `np.float64`). A call of a call, `s2s.vmap(f, in_axes=0)(x)`, builds the transform
now from its constant arguments (`static_transform`, through the factories frontend/hooks.py
lists). An object that stays the same for the whole call (a method's `self`, a model held by a
global) is kept in `objects`: its attributes are read when the generated code runs
(`object_rooted`), and its methods are inlined.

Invariant left for the next pass: every name in normalized code is a local of the function
(renamed where it would shadow a generated-code global), a global bound in
`NormalizedFunction.namespace` to exactly the object the user's code meant (never two objects
under one name), or a name of the base namespace (np, math, the helpers: frontend/namespace.py);
a module, or a function without a rule, is never used as a value (UnsupportedSyntaxError).
"""
from __future__ import annotations

import numbers
import types
from typing import Any

import gast
import numpy as np

from ..errors import TransformError, UnsupportedSyntaxError
from .ast_build import const, name
from .hooks import TRANSFORM_FACTORIES, lookup
from .nodes import iter_nodes, parse_expr


class NameResolution:
    """Resolution part of `Normalizer` (normalize.py). Fields of `self.state`
    (normalize_state.py) it uses: `frame` (the function being normalized), `ns` (the generated
    module's globals), `namer`, `global_names`, `objects`, `object_names`, `store_counts`; and
    `error`."""

    def store_name(self, id_: str, node) -> str:
        if id_ not in self.state.frame.locals:
            raise self.error(UnsupportedSyntaxError, f"cannot assign to `{id_}` here", node)
        return self.state.frame.rename[id_]

    def local_name(self, node, s) -> str:
        if isinstance(node, gast.Name) and node.id in self.state.frame.locals:
            return self.state.frame.rename[node.id]
        raise self.error(UnsupportedSyntaxError, "s2s supports indexed writes only into a local array variable", s,
                         "write into an array created in the function: y = np.zeros(n); y[i] = ...")

    def is_local_rooted(self, node) -> bool:
        while isinstance(node, gast.Attribute):
            node = node.value
        if isinstance(node, gast.Name):
            return node.id in self.state.frame.locals
        return True  # an expression: (a + b).sum()

    def lookup_global(self, node) -> Any:
        ns = self.state.frame.parsed.namespace
        if node.id not in ns:
            raise self.error(TransformError, f"name `{node.id}` is not defined", node)
        return ns[node.id]

    def try_resolve(self, node) -> Any:
        try:
            if self.is_local_rooted(node):
                return None
            return self.resolve(node)
        except TransformError:
            return None

    def resolve(self, node) -> Any:
        if isinstance(node, gast.Call):
            return self.static_transform(node)
        if isinstance(node, gast.Name):
            if node.id in self.state.frame.locals and self.state.frame.rename[node.id] in self.state.objects:
                return self.state.objects[self.state.frame.rename[node.id]]
            if node.id in self.state.frame.locals:
                raise self.error(UnsupportedSyntaxError, f"s2s cannot call `{node.id}`, a function held in a local variable",
                                 node, "call the function by its global name")
            return self.lookup_global(node)
        if isinstance(node, gast.Attribute):
            base = self.resolve(node.value)
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.error(TransformError, f"`{dotted(node)}` does not exist", node) from None
        raise self.error(UnsupportedSyntaxError, "s2s cannot resolve this call", node,
                         "call a function by its name")

    def static_transform(self, node) -> Any:
        """`s2s.vmap(f, in_axes=(None, 0))(...)` inside transformed code: build the transform now."""
        factory = self.resolve(node.func)
        if factory not in TRANSFORM_FACTORIES:
            raise self.error(UnsupportedSyntaxError, "s2s can call the result of a call only for s2s.grad/vmap/"
                             "jacfwd/jacrev/hessian/pmap(...)",
                             node, "assign the function to a global name first")

        def static(n):
            if isinstance(n, gast.Constant):
                return n.value
            if isinstance(n, (gast.Tuple, gast.List)):
                return tuple(static(e) for e in n.elts)
            if isinstance(n, gast.UnaryOp) and isinstance(n.op, gast.USub) and isinstance(n.operand, gast.Constant):
                return -n.operand.value
            if isinstance(n, (gast.Name, gast.Attribute)) and not self.is_local_rooted(n):
                return self.resolve(n)
            raise self.error(UnsupportedSyntaxError, "arguments of s2s.grad/vmap inside a transformed function must be "
                             "constants or global functions", n)
        return factory(*[static(a) for a in node.args], **{k.arg: static(k.value) for k in node.keywords})

    def global_ref(self, preferred: str, obj: Any, node) -> Any:
        """Refer to a global value from generated code (binding it if needed)."""
        if isinstance(obj, bool) or obj is None:
            return const(obj)
        self.refuse_foreign_array(preferred, obj, node)      # (np.matrix & co: foreign.py)
        if obj is np or _numpy_namespace(obj):
            return name("np")
        if isinstance(obj, types.ModuleType):
            raise self.error(UnsupportedSyntaxError, f"cannot use the module `{preferred}` as a value", node)
        if _is_function(obj) and lookup(obj) is None:
            raise self.error(UnsupportedSyntaxError, f"s2s cannot use the function `{preferred}` as a value", node,
                             "call it directly")
        if isinstance(obj, type) and obj in (float, int, bool, complex):
            return name(obj.__name__)
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return parse_expr(f"np.{obj.__name__}")
        base = preferred.split(".")[-1]
        if base in self.state.ns:
            if self.state.ns[base] is obj:
                return name(base)
        elif base in self.state.global_names or base not in self.state.namer.taken:
            self.state.ns[base] = obj
            self.state.namer.taken.add(base)
            return name(base)
        cand = self.state.namer.fresh(base)
        self.state.ns[cand] = obj
        return name(cand)

    def object_of(self, atom) -> Any:
        """The Python object (not an array, number or container) a normalized atom surely holds."""
        if not isinstance(atom, gast.Name):
            return None
        if atom.id in self.state.objects:
            return self.state.objects[atom.id]
        value = self.state.ns.get(atom.id, None)
        if not _plain_object(value):
            return None
        self.state.object_names.add(atom.id)
        return value

    def stores_in_frame(self) -> dict[str, int]:
        """How many times each name is assigned in the function being normalized."""
        fdef = self.state.frame.parsed.node
        got = self.state.store_counts.get(id(fdef))
        if got is None:
            counts: dict[str, int] = {}
            for n in iter_nodes(fdef):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    counts[n.id] = counts.get(n.id, 0) + 1
            got = self.state.store_counts[id(fdef)] = (fdef, counts)
        return got[1]

    def object_rooted(self, node) -> bool:
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and node.id in self.state.frame.locals \
            and self.state.frame.rename[node.id] in self.state.objects


def _plain_object(value) -> bool:
    """An object whose attributes a method reads (a model, a config, a class), as opposed to the
    values s2s computes with (arrays, numbers, strings, containers) and functions."""
    return value is not None and not isinstance(value, (np.ndarray, np.generic, numbers.Number, str, bytes, tuple,
                                                        list, dict, bool, types.FunctionType, types.ModuleType,
                                                        types.BuiltinFunctionType, np.ufunc))


def _is_function(obj) -> bool:
    """A function (not a class, an array, or an object that merely has `__call__`)."""
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, np.ufunc)) \
        or hasattr(obj, "_s2s_inline_source")


def constant(v):
    if isinstance(v, tuple):
        return gast.Tuple([constant(e) for e in v], gast.Load())
    return const(v)


def dotted(node) -> str:
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return dotted(node.value) + "." + node.attr
    return "<expression>"


def describe(obj) -> str:
    mod = getattr(obj, "__module__", None) or type(obj).__module__
    nm = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    return f"{mod}.{nm}" if mod else str(nm)


def _numpy_namespace(obj) -> bool:
    """The array-API view of NumPy that SciPy's code gets from `xp = array_namespace(x)` for NumPy
    arrays (array_api_compat's numpy module): NumPy 2 has its names (xp.concat, xp.pow, ...), so it
    is read as NumPy."""
    return isinstance(obj, types.ModuleType) and obj.__name__.endswith("array_api_compat.numpy")
