"""Rule templates in Tangent's notation.

An adjoint template is a plain Python function whose first parameter is the
op's result and whose other parameters mirror the op's signature:

    def sin(y, x):
        d[x] = d[y] * np.cos(x)

`d[y]` reads the cotangent of the result; `d[x] = e` contributes `e` to the
cotangent of argument `x`.  Expansion substitutes the call's arguments for the
parameters, so the pasted code reads like the maths (and shows in `s2s show`).
Template-local names become fresh temporaries.  Tangent templates use `t[...]`.
"""
from __future__ import annotations

import dataclasses
import inspect
import textwrap
from typing import Any, Callable

import gast
from ..frontend.live_source import check_live_source
from ..frontend.nodes import clone, iter_nodes


@dataclasses.dataclass
class Contribution:
    """`d[param] = expr` after substitution: add `expr` to param's (co)tangent."""
    param: str
    target: Any          # the bound argument node (a gast.Name for active ones)
    expr: Any            # gast expression


class Template:
    # Parameters that never carry a derivative (axes, shapes, flags, conditions).
    STATIC = frozenset({"axis", "axes", "axis1", "axis2", "keepdims", "dtype", "out", "order", "shape",
                        "condition", "index", "subok", "ddof", "where", "initial", "k", "like"})

    def __init__(self, fn: Callable, kind: str, broadcasts: bool = False, shape_only: tuple = ()):
        self.fn = fn
        self.static_params = self.STATIC | frozenset(shape_only)
        self.kind = kind
        self.broadcasts = broadcasts
        self.signature = inspect.signature(fn)
        self._body: list | None = None
        self._free: list | None = None

    @classmethod
    def from_source(cls, source: str, fname: str, kind: str, namespace: dict, broadcasts: bool = False,
                    stem: str = "template") -> "Template":
        """A template written as source text (for rules made at run time, e.g. custom_vjp)."""
        from ..codegen import emit
        path = emit.write_module(source, stem)
        fn = emit.load_function(source, path, fname, namespace)
        return cls(fn, kind=kind, broadcasts=broadcasts)

    def written_params(self) -> list[str]:
        """The parameters the template gives a derivative (`d[x] = ...` / `t[x] = ...` lines):
        the arguments it differentiates; other float arguments are refused when differentiated."""
        written = {stmt.targets[0].slice.id for stmt in self.body
                   if isinstance(stmt, gast.Assign) and _is_marker(stmt.targets[0], self.kind)}
        return [p for p in self.params[1:] if p in written]

    def free_globals(self) -> dict[str, Any]:
        """Globals the template body refers to, from the template's own module (their values
        now: the names are found once per template, the values on each expansion)."""
        glb = getattr(self.fn, "__globals__", {})
        if self._free is None:
            local = set(self.params) | {self.kind}
            for stmt in self.body:
                for n in iter_nodes(stmt):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                        local.add(n.id)
            self._free = sorted({n.id for stmt in self.body for n in iter_nodes(stmt)
                                 if isinstance(n, gast.Name) and n.id not in local})
        return {k: glb[k] for k in self._free if k in glb}

    @property
    def params(self) -> list[str]:
        return list(self.signature.parameters)

    @property
    def body(self) -> list:
        if self._body is None:
            src = textwrap.dedent(inspect.getsource(self.fn))
            # (a rule module edited on disk since it was imported: not the template Python holds)
            check_live_source(self.fn, self.fn.__code__, self.fn.__qualname__)
            fdef = gast.parse(src).body[0]
            body = fdef.body
            if body and isinstance(body[0], gast.Expr) and isinstance(getattr(body[0], "value", None), gast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]  # docstring
            self._body = body
        return self._body

    def bind(self, result: Any, args: list, keywords: dict[str, Any]) -> dict[str, Any]:
        """Map template parameters to argument nodes (defaults become constants)."""
        bound = self.signature.bind(result, *args, **keywords)
        out = {}
        for name, param in self.signature.parameters.items():
            if name in bound.arguments:
                out[name] = bound.arguments[name]
            elif param.default is not inspect.Parameter.empty:
                out[name] = to_constant(param.default)
            else:
                raise TypeError(f"missing argument {name!r}")
        return out

    def expand(self, bindings: dict[str, Any], result_param: str, seed: Any,
               fresh: Callable[[str], str]) -> tuple[list, list[Contribution]]:
        """Expand the template.

        Args:
            bindings: parameter -> argument node (from `bind`).
            result_param: name of the result parameter (the first one).
            seed: node for d[result] (or t[x] lookups via a callable for tangents).
            fresh: makes a fresh name for a template-local temporary.
        Returns:
            (statements, contributions): local statements to emit first, then
            one Contribution per `d[param] = expr`.
        """
        renames: dict[str, str] = {}
        stmts, contribs = [], []
        for stmt in self.body:
            stmt = clone(stmt)
            if not isinstance(stmt, gast.Assign) or len(stmt.targets) != 1:
                raise TypeError(f"template {self.fn.__name__}: only assignments allowed")
            target = stmt.targets[0]
            value = fold_constants(_Substituter(bindings, renames, self.kind, seed).visit(stmt.value))
            if _is_marker(target, self.kind):
                param = target.slice.id
                contribs.append(Contribution(param, bindings[param], value))
            elif isinstance(target, gast.Name):
                new = fresh(target.id)
                renames[target.id] = new
                stmts.append(gast.Assign(targets=[gast.Name(new, gast.Store(), None, None)], value=value,
                                         type_comment=None))
            else:
                raise TypeError(f"template {self.fn.__name__}: unsupported target")
        return stmts, contribs


def _is_marker(node: Any, kind: str) -> bool:
    return (isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name)
            and node.value.id == kind and isinstance(node.slice, gast.Name))


class _Substituter(gast.NodeTransformer):
    def __init__(self, bindings, renames, kind, seed):
        self.bindings, self.renames, self.kind, self.seed = bindings, renames, kind, seed

    def visit_Subscript(self, node):
        if _is_marker(node, self.kind):
            key = node.slice.id
            return clone(self.seed(key) if callable(self.seed) else self.seed)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.renames:
            return gast.Name(self.renames[node.id], gast.Load(), None, None)
        if node.id in self.bindings:
            return clone(self.bindings[node.id])
        return node


def fold_constants(node: Any) -> Any:
    """Fold arithmetic on numeric constants (`b - 1` with b = 2 -> 1) and `x ** 1` -> x."""
    if isinstance(node, gast.BinOp):
        node.left, node.right = fold_constants(node.left), fold_constants(node.right)
        lc, rc = _num(node.left), _num(node.right)
        if lc is not None and rc is not None:
            ops = {gast.Add: lambda a, b: a + b, gast.Sub: lambda a, b: a - b, gast.Mult: lambda a, b: a * b}
            f = ops.get(type(node.op))
            if f is not None:
                return gast.Constant(f(lc, rc), None)
        if isinstance(node.op, gast.Pow) and rc == 1:
            return node.left
        if isinstance(node.op, gast.Mult) and rc == 1 and isinstance(rc, int):
            return node.left
        return node
    for field, value in gast.iter_fields(node):
        if isinstance(value, list):
            setattr(node, field, [fold_constants(v) if isinstance(v, gast.AST) else v for v in value])
        elif isinstance(value, gast.AST):
            setattr(node, field, fold_constants(value))
    return node


def _num(node):
    if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    return None


def to_constant(value: Any) -> Any:
    """A Python value as a gast expression (constants and tuples of them)."""
    if isinstance(value, tuple):
        return gast.Tuple([to_constant(v) for v in value], gast.Load())
    if isinstance(value, (int, float, str, bool, type(None))) or value is Ellipsis:
        return gast.Constant(value, None)
    raise TypeError(f"cannot embed {value!r} in generated code")
