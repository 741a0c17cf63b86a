"""Function values: nested `def`, `lambda`, `functools.partial`, functions passed, stored and returned.

Which function a variable holds is known when s2s reads the code (a `def` or `lambda` in the
function, a global function, a partial of one): a function value is static. A variable bound to
one is recorded in `functions` (renamed variable -> `Closure` / `PyFunction` / `Partial`) and no
code is emitted for the binding; a call through it is inlined at the call site like any helper.
A closure's free names read the variables of the frame that defined it, under that frame's names,
so a call sees their values at the time of the call: Python's late binding. Defaults are
evaluated where the `def` or `lambda` stands, as Python does. `map`, `functools.reduce` and
`functools.partial` over split tuples/lists unroll at transform time.

A variable that holds different functions on the two paths of an `if` on data, or one a loop
rebinds, holds a function chosen when the code runs: calling it is refused (s2s would have to
guess). A function value used as a value where the generated code needs the object itself (an
argument of an op, a returned value) is the global function when it is one with a rule, and is
refused otherwise (`materialize_functions`).

Invariant left for the next pass: no name of generated code holds a function defined in the
user's code; every call through a function value was inlined (or is a call of an op with a rule).
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import re
import types
from typing import Any

import gast
import numpy as np

from ..errors import TransformError, UnsupportedSyntaxError
from .ast_build import UNKNOWN, copy_loc, name, scope_locals
from .containers import container_literal
from .hooks import TRANSFORM_FACTORIES, composite_of, lookup
from .nodes import iter_nodes
from .parse import ParsedFunction
from .statements import Frame


@dataclasses.dataclass(eq=False)
class PyFunction:
    """A Python callable the code names: a global function, np.sin, a function transformed by s2s."""
    obj: Any


@dataclasses.dataclass(eq=False)
class Closure:
    """A `def` or `lambda` of the function being normalized, with the frame that defined it."""
    node: Any                 # gast.FunctionDef (a lambda is given one: `return <body>`)
    frame: Frame
    defaults: list            # atoms of the positional defaults (evaluated at the definition)
    kw_defaults: dict         # keyword-only parameter -> atom of its default


@dataclasses.dataclass(eq=False)
class Partial:
    """functools.partial(f, *args, **kws)."""
    inner: Any
    args: list
    kws: dict


_SEQUENCE_BUILTINS = (builtins.zip, builtins.enumerate, builtins.list, builtins.tuple, builtins.sorted, builtins.filter,
                      builtins.max, builtins.min)

# A variable whose function is chosen when the code runs (different functions on two paths).
AMBIGUOUS = object()


def is_function_object(obj) -> bool:
    """A Python object that is a function (as opposed to a class, an array, a number): plain and
    built-in functions, ufuncs, NumPy's dispatchers (np.sum), partials, s2s transforms."""
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, np.ufunc,
                            functools.partial, types.BuiltinMethodType)) or hasattr(obj, "_s2s_inline_source") \
        or (callable(obj) and not isinstance(obj, type) and type(obj).__name__ == "_ArrayFunctionDispatcher")


class FunctionValues:
    """Function-value part of `Normalizer` (normalize.py). Fields of `self.state`
    (normalize_state.py) it uses: `functions`, `frame`, `namer`, `aggregates`, `agg_meta`;
    methods of the other parts: `arg_atom`, `atom` (anf.py), `bind_value`, `aggregate_or_name`,
    `element_of` (containers.py), `call_object`, `inline_body` (inlining.py), `store_name`,
    `global_ref` (resolution.py), `error`."""

    # ----- making function values ------------------------------------------------
    def function_atom(self, value, hint: str = "fn") -> gast.Name:
        """A name standing for a function value (no code is emitted for it)."""
        var = self.state.namer.fresh(re.sub(r"\W", "", hint) or "fn")
        self.state.functions[var] = value
        return name(var)

    def stmt_FunctionDef(self, s):
        if s.decorator_list:
            raise self.error(UnsupportedSyntaxError, "s2s does not support decorators on a function defined inside "
                             "the function", s, "define the decorated function at module level")
        out: list = []
        value = self._closure(s, out)
        self.state.functions[self.store_name(s.name, s)] = value
        return out, False

    def expr_Lambda(self, node, out):
        fdef = gast.FunctionDef(name="lambda", args=node.args, body=[copy_loc(gast.Return(value=node.body), node)],
                                decorator_list=[], returns=None, type_comment=None, type_params=[])
        copy_loc(fdef, node)
        return self.function_atom(self._closure(fdef, out), "lambda")

    def _closure(self, fdef, out: list) -> Closure:
        """A closure over the current frame; its defaults evaluated now, into variables of their own."""
        defaults = [self.held_now(self.arg_atom(d, out), d, out, "a default argument") for d in fdef.args.defaults]
        kw_defaults = {a.id: self.held_now(self.arg_atom(d, out), d, out, "a default argument")
                       for a, d in zip(fdef.args.kwonlyargs, fdef.args.kw_defaults) if d is not None}
        return Closure(fdef, self.state.frame, defaults, kw_defaults)

    def held_now(self, atom, node, out: list, label: str):
        """A value kept for later (a default, a partial's argument): its variable's value now, in a
        variable of its own, as Python keeps the object (a later rebinding is not seen; a later
        in-place update would be, and is refused: statements.py `holder_checks`)."""
        state = self.state
        if isinstance(atom, (gast.Tuple, gast.List)) or isinstance(atom, gast.Name) and atom.id in state.aggregates:
            tmp = state.namer.temp()
            self.bind_value(tmp, atom if isinstance(atom, (gast.Tuple, gast.List)) else self.aggregate_or_name(atom.id),
                            out, node)
            return name(tmp)
        if isinstance(atom, gast.Name) and atom.id not in state.functions:
            tmp = state.namer.temp()
            self.bind_value(tmp, atom, out, node)
            self.note_holder(atom, tmp, label)
            return name(tmp)
        return atom

    def function_of(self, atom) -> Any:
        """The function value a normalized atom holds, or None."""
        if isinstance(atom, gast.Name):
            return self.state.functions.get(atom.id)
        return None

    def callee_value(self, func, out: list) -> Any:
        """The function value a called expression holds when it is not a plain global or method:
        a local variable, a lambda called where it stands, an element of a split container."""
        if isinstance(func, gast.Name) and func.id in self.state.frame.locals:
            value = self.state.functions.get(self.state.frame.rename[func.id])
            if value is not None:
                return value
            return None
        if isinstance(func, gast.Subscript) and isinstance(func.value, (gast.Name, gast.Attribute)) and \
                not self.is_local_rooted(func.value):
            # ACTIVATIONS["tanh"](z): a function in a global dict/list, by a key s2s knows
            table = self.try_resolve(func.value)
            key = self.known_value(self.atom(func.slice, out)) if isinstance(table, (dict, list, tuple)) else None
            try:
                found = table[key]
            except (KeyError, IndexError, TypeError):
                found = None
            if is_function_object(found):
                return PyFunction(found)
        if isinstance(func, (gast.Lambda, gast.Subscript, gast.Call)) and not (
                isinstance(func, gast.Call) and self._is_transform_factory(func)):
            return self.function_of(self.atom(func, out))
        return None

    def _is_transform_factory(self, call) -> bool:
        try:
            return self.try_resolve(call.func) in TRANSFORM_FACTORIES
        except Exception:
            return False

    # ----- calling function values --------------------------------------------------
    def call_value(self, value, args: list, kws: dict, node, out: list) -> Any:
        if value is AMBIGUOUS:
            raise self.error(UnsupportedSyntaxError, "this variable holds a function chosen when the code runs "
                             "(different functions on the paths of an `if`, or rebound in a loop), and s2s must know "
                             "which function it calls", node,
                             "call each function on its own path: `y = f(x) if c else g(x)`")
        if isinstance(value, Partial):
            return self.call_value(value.inner, list(value.args) + list(args), {**value.kws, **kws}, node, out)
        if isinstance(value, PyFunction):
            return self.call_object(value.obj, args, kws, node, out)
        return self.inline_closure(value, args, kws, node, out)

    def inline_closure(self, c: Closure, args: list, kws: dict, node, out: list) -> Any:
        fdef = c.node
        self.check_recursion(fdef, fdef.name, node)
        outer = c.frame
        parsed = ParsedFunction(None, fdef, outer.parsed.source, outer.parsed.namespace)
        params = parameter_names(fdef.args)
        own = params + sorted(scope_locals(fdef.body) - set(params))
        suffix = "lambda" if fdef.name == "lambda" else fdef.name
        rename = {n: self.state.namer.fresh(f"{n}_{suffix}") for n in own}
        frame_locals = set(own)
        for n in iter_nodes(fdef):
            if isinstance(n, gast.Name) and n.id not in rename and n.id in outer.locals:
                rename[n.id] = outer.rename[n.id]     # a free name: the defining frame's variable
                frame_locals.add(n.id)
        result = self.state.namer.fresh(f"{suffix}_out")
        frame = Frame(parsed, rename, frame_locals, result, None)
        sig = signature_of(fdef.args, c.defaults, c.kw_defaults)
        return self.inline_body(parsed, sig, frame, fdef, suffix, args, kws, node, out)

    # ----- builtins over function values ---------------------------------------------
    def call_higher_order(self, obj, args: list, kws: dict, node, out: list) -> Any:
        """functools.partial, map, functools.reduce, filter, sorted(key=); NotImplemented for other objects."""
        if obj is functools.partial:
            if not args or self.function_of(args[0]) is None:
                raise self.error(UnsupportedSyntaxError, "functools.partial needs a function s2s can read as its "
                                 "first argument", node)
            return self.function_atom(Partial(self.function_of(args[0]),
                                              [self.held_now(a, node, out, "an argument of a partial") for a in args[1:]],
                                              {k: self.held_now(v, node, out, "an argument of a partial")
                                               for k, v in kws.items()}), "partial")
        if isinstance(obj, functools.partial):
            inner = PyFunction(obj.func)
            bound = [self.global_constant(a, node) for a in obj.args]
            return self.call_value(Partial(inner, bound, {k: self.global_constant(v, node)
                                                          for k, v in obj.keywords.items()}), args, kws, node, out)
        if obj is builtins.map:
            fn = self._function_arg(args, "map", node)
            seqs = [self._elements(a, "map", node) for a in args[1:]]
            results = [self.call_value(fn, list(items), {}, node, out) for items in zip(*seqs)]
            return container_literal(results, ("list", None, None))
        if obj is functools.reduce and len(args) == 3 and not self._is_split(args[1]):
            # over an array's rows or a range: the loop it stands for
            return self.loop_over(node, out, args[1], args[2], self._function_arg(args, "functools.reduce", node),
                                  lambda acc, x, f: gast.Call(func=f, args=[acc, x], keywords=[]))
        if obj is functools.reduce:
            fn = self._function_arg(args, "functools.reduce", node)
            items = self._elements(args[1], "functools.reduce", node) if len(args) > 1 else []
            if len(args) > 2:
                acc, rest = args[2], items
            elif items:
                acc, rest = items[0], items[1:]
            else:
                raise self.error(TypeError, "reduce() of empty iterable with no initial value", node)
            for item in rest:
                acc = self.call_value(fn, [acc, item], {}, node, out)
                acc = self._held(acc, node, out)
            return acc
        if any(obj is f for f in _SEQUENCE_BUILTINS) and args and all(
                self._is_split(a) for a in (args if obj is builtins.zip else args[1:2] if obj is builtins.filter
                                            else args[:1])):
            static = self.static_sequence_call(obj, args, kws, node, out)
            if static is not None:
                return static
        if obj is builtins.filter or (obj is builtins.sorted and "key" in kws):
            what = "filter" if obj is builtins.filter else "sorted(key=...)"
            raise self.error(UnsupportedSyntaxError, f"s2s cannot tell which elements {what} keeps or how it orders "
                             "them before the code runs", node,
                             "select the elements with a comprehension over a tuple/list (`[p for p in ps if ...]` "
                             "with a condition on constants) or write them out")
        return NotImplemented

    def loop_over(self, node, out: list, seq, init, fn, step) -> Any:
        """`acc = init; for x in seq: acc = step(acc, x, f)`, normalized: reduce() or sum(map()) over
        a sequence whose length is known only when the code runs."""
        acc, x, f, q = (self.private_local(b) for b in ("acc", "x", "f", "seq"))
        self.state.functions[self.state.frame.rename[f]] = fn
        self.bind_value(self.state.frame.rename[q], seq, out, node)
        self.bind_value(self.state.frame.rename[acc], init, out, node)
        loop = gast.For(target=name(x, gast.Store()), iter=name(q),
                        body=[gast.Assign(targets=[name(acc, gast.Store())], value=step(name(acc), name(x), name(f)),
                                          type_comment=None)],
                        orelse=[], type_comment=None)
        for n in gast.walk(loop):
            if isinstance(n, (gast.stmt, gast.expr)):
                copy_loc(n, node)
        code, _ = self.stmts([loop])
        out += code
        return name(self.state.frame.rename[acc])

    def static_sequence_call(self, obj, args: list, kws: dict, node, out: list) -> Any:
        """zip, enumerate, list, tuple, sorted (by keys s2s knows), filter (by predicates s2s knows)
        of split tuples/lists: a split list of their results; None if s2s cannot know the order."""
        if obj is builtins.zip and not kws:
            seqs = [self._elements(a, "zip", node) for a in args]
            return container_literal([container_literal(list(items), ("tuple", None, None)) for items in zip(*seqs)],
                                     ("list", None, None))
        if obj is builtins.enumerate and len(args) == 1 and not kws:
            return container_literal([container_literal([gast.Constant(value=i, kind=None), e], ("tuple", None, None))
                                      for i, e in enumerate(self._elements(args[0], "enumerate", node))],
                                     ("list", None, None))
        if obj in (builtins.list, builtins.tuple) and len(args) == 1 and not kws:
            return container_literal(self._elements(args[0], obj.__name__, node),
                                     ("list" if obj is builtins.list else "tuple", None, None))
        if obj in (builtins.max, builtins.min) and len(args) == 1 and not kws:
            items = self._elements(args[0], obj.__name__, node)
            if not items:
                raise self.error(ValueError, f"{obj.__name__}() arg is an empty sequence", node)
            acc = items[0]
            for item in items[1:]:
                acc = self._held(self.call_object(obj, [acc, item], {}, node, out), node, out)
            return acc
        if obj is builtins.sorted and len(args) == 1 and set(kws) <= {"key", "reverse"}:
            items = self._elements(args[0], "sorted", node)
            key_fn = self.function_of(kws["key"]) if "key" in kws else None
            keys = [self.known_value(self._held(self.call_value(key_fn, [item], {}, node, out), node, out))
                    if key_fn is not None else self._sort_key(item) for item in items]
            if key_fn is None and len(set(map(repr, keys))) < len(keys):
                return None          # (ties on the first element: Python would compare the rest)
            reverse = self.known_value(kws["reverse"]) if "reverse" in kws else False
            if any(k is UNKNOWN or isinstance(k, gast.AST) for k in keys) or not isinstance(reverse, bool):
                return None
            try:
                order = sorted(range(len(items)), key=lambda i: keys[i], reverse=reverse)
            except TypeError:
                return None
            return container_literal([items[i] for i in order], ("list", None, None))
        if obj is builtins.filter and len(args) == 2 and not kws:
            fn = self.function_of(args[0])
            items = self._elements(args[1], "filter", node)
            kept = []
            for item in items:
                verdict = self.known_value(self._held(self.call_value(fn, [item], {}, node, out), node, out)) \
                    if fn is not None else self.known_value(item)
                if verdict is UNKNOWN or isinstance(verdict, gast.AST):
                    return None
                if verdict:
                    kept.append(item)
            return container_literal(kept, ("list", None, None))
        return None

    def _sort_key(self, item):
        """What sorted() compares an element by, if s2s knows it: a constant, or the first element
        (a constant) of a tuple such as `d.items()` gives."""
        if isinstance(item, gast.Name) and item.id in self.state.aggregates:
            item = self.aggregate_or_name(item.id)
        if isinstance(item, (gast.Tuple, gast.List)) and item.elts:
            return self.known_value(item.elts[0])
        return self.known_value(item)

    def _is_split(self, atom) -> bool:
        state = self.state
        return isinstance(atom, (gast.Tuple, gast.List)) or isinstance(atom, gast.Name) and atom.id in state.aggregates

    def _held(self, value, node, out):
        """A call's result kept in a variable of its own (a later call may rebind what it names)."""
        if isinstance(value, gast.Name):
            return self.aggregate_or_name(value.id) if value.id in self.state.aggregates else value
        if isinstance(value, (gast.Tuple, gast.List)):
            return value
        tmp = self.state.namer.temp()
        self.bind_value(tmp, value, out, node)
        return name(tmp)

    def _function_arg(self, args, what, node):
        fn = self.function_of(args[0]) if args else None
        if fn is None:
            raise self.error(UnsupportedSyntaxError, f"the first argument of {what} must be a function s2s can read",
                             node)
        return fn

    def _elements(self, seq, what, node) -> list:
        """The elements of a split tuple/list (an argument of map/reduce)."""
        if isinstance(seq, (gast.Tuple, gast.List)):
            meta = getattr(seq, "s2s_meta", None)
            if meta is not None and meta[0] == "dict":                # iterating a dict: its keys
                return [gast.Constant(value=k, kind=None) for k in meta[1]]
            return list(seq.elts)
        if isinstance(seq, gast.Name) and seq.id in self.state.aggregates:
            if self.state.agg_meta.get(seq.id, ("",))[0] == "dict":       # iterating a dict: its keys
                return [gast.Constant(value=k, kind=None) for k in self.state.agg_meta[seq.id][1]]
            return list(self.aggregate_or_name(seq.id).elts)
        raise self.error(UnsupportedSyntaxError, f"s2s applies {what} to tuples and lists built in the function "
                         "(their length known before the code runs), not to an array", node,
                         "loop over the array's rows with `for`, or apply the function to the whole array")

    def global_constant(self, value, node):
        """A Python value held by a global (a partial's bound argument) as an atom."""
        if is_function_object(value):
            return self.function_atom(PyFunction(value), getattr(value, "__name__", "fn"))
        if isinstance(value, (int, float, str, bool, type(None))):
            return gast.Constant(value=value, kind=None)
        return self.global_ref("bound", value, node)

    # ----- control flow: which function a variable holds after an `if` ------------------
    def merge_function_bindings(self, before: dict, after_body: dict, after_else: dict) -> None:
        state = self.state
        for var in set(after_body) | set(after_else):
            a, b = after_body.get(var), after_else.get(var)
            if a is not b:
                state.functions[var] = AMBIGUOUS if (a is not None or var in before) and \
                    (b is not None or var in before) else (a if a is not None else b)


def parameter_names(args) -> list[str]:
    names = [a.id for a in list(args.posonlyargs) + list(args.args)]
    if args.vararg is not None:
        names.append(args.vararg.id)
    names += [a.id for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(args.kwarg.id)
    return names


def signature_of(args, defaults: list, kw_defaults: dict) -> inspect.Signature:
    """The inspect.Signature of a gast `arguments` (defaults are atoms)."""
    P = inspect.Parameter
    params = []
    positional = list(args.posonlyargs) + list(args.args)
    first_default = len(positional) - len(defaults)
    for i, a in enumerate(positional):
        kind = P.POSITIONAL_ONLY if i < len(args.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        params.append(P(a.id, kind, default=defaults[i - first_default] if i >= first_default else P.empty))
    if args.vararg is not None:
        params.append(P(args.vararg.id, P.VAR_POSITIONAL))
    for a in args.kwonlyargs:
        params.append(P(a.id, P.KEYWORD_ONLY, default=kw_defaults.get(a.id, P.empty)))
    if args.kwarg is not None:
        params.append(P(args.kwarg.id, P.VAR_KEYWORD))
    return inspect.Signature(params)


# ----- the pass after normalization: function values left where generated code needs an object ---
def materialize_functions(body: list, functions: dict[str, Any], global_ref, source) -> None:
    """The pass after normalization that turns a function value in a value position into the global
    function (with a rule) it is, or refuses it. `functions`: which variable holds which function
    (NormalizeState.functions); `global_ref`: binds an object as a global of the generated code
    (resolution.py); `source`: the top function's (for a statement that carries none)."""

    class Materialize(gast.NodeTransformer):
        stmt = None

        def visit(self, node):
            if isinstance(node, gast.stmt):
                Materialize.stmt = node
            return super().visit(node)

        def visit_Name(self, node):
            if "$" in node.id:
                raise TransformError(f"internal error: the private name {node.id} reached generated code "
                                     "(please report it)")
            value = functions.get(node.id)
            if value is None or not isinstance(node.ctx, gast.Load):
                return node
            if isinstance(value, PyFunction) and (lookup(value.obj) is not None or composite_of(value.obj) is not None
                                                  or not isinstance(value.obj, types.FunctionType)):
                return copy_loc(global_ref(getattr(value.obj, "__name__", "fn"), value.obj, Materialize.stmt),
                                node)
            src = getattr(Materialize.stmt, "s2s_src", None) or source
            raise src.error(
                UnsupportedSyntaxError, "s2s calls functions defined in the code it reads, but cannot hand one to "
                "code it does not read, or return it", Materialize.stmt,
                "call the function here, or pass its result")
    fixer = Materialize()
    for i, s in enumerate(body):
        body[i] = fixer.visit(s)
