"""Normalize: a parsed user function -> one function in A-normal form (ANF).

What resolution, inlining and desugaring leave behind (later passes rely on it):

- every call is resolved to an object with a rule (`node.s2s_fn`), spelled by
  the rule's canonical name (``np.sin``); calls to the user's own Python
  functions are inlined (their locals renamed), methods become functions
  (``x.sum(1)`` -> ``np.sum(x, 1)``, ``x.T`` -> ``np.transpose(x)``);
- statements are only
    ``name = <simple>``          simple: an atom, ``a OP b``, ``OP a``,
                                  ``a CMP b``, ``f(atoms)``, ``a[index]``, ``a.attr``
    ``name[index] = atom``        an indexed write
    ``f(atoms)``                  a call for its effect (tape push, print)
    ``if name: ... else: ...``
    ``for name in range(atoms): ...``   (no break/continue/return inside)
    ``while name: ...``           (the condition is recomputed at the end of the body)
    ``return atom`` / ``return (atom, ...)``  exactly once, last
  where an atom is a Name, a Constant, or (as a call argument) a tuple/list of atoms;
- augmented assignment, tuple unpacking, chained comparisons, ``and``/``or``,
  conditional expressions, ``break``/``continue`` and early ``return`` are
  desugared (flags guard the statements they skip);
- tuples and lists built from literals are split into one variable per element
  (``parts = [a, b]`` -> ``parts_0 = a; parts_1 = b``), so no container reaches
  the transforms;
- every statement keeps the user's line number (``lineno``) and the source it
  came from (``s2s_src``: the SourceInfo of the file).
"""
from __future__ import annotations

import builtins
import copy
import dataclasses
import inspect
import math
import numbers
import re
import types
from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from .hooks import TRANSFORM_FACTORIES
from ..errors import (NoRuleError, RecursionNotSupportedError, TransformError,
                      UnsupportedSyntaxError)
from .hooks import composite_of, lookup
from .namespace import base_namespace
from .einsum_forms import EinsumFormError
from .einsum_forms import rewrite as einsum_rewrite
from .aliases import in_place_checks
from .fence import fence
from .nodes import clone, iter_nodes, names_in, parse_expr
from .parse import ParsedFunction, SourceInfo, parse_function

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
NONDIFF_ATTRS = {"shape", "ndim", "size", "dtype"}
# Fields of the namedtuples np.linalg returns: `np.linalg.slogdet(a).logabsdet` is `np.linalg.slogdet(a)[1]`
RESULT_FIELDS = {id(np.linalg.slogdet): ("sign", "logabsdet"), id(np.linalg.eigh): ("eigenvalues", "eigenvectors"),
                 id(np.linalg.qr): ("Q", "R"), id(np.linalg.svd): ("U", "S", "Vh")}


# ----- small AST helpers -------------------------------------------------------

def name(id_: str, ctx=None) -> gast.Name:
    return gast.Name(id_, ctx or gast.Load(), None, None)


def const(v: Any) -> gast.Constant:
    return gast.Constant(v, None)


def call_named(fname: str, args: list) -> gast.Call:
    """`fname(*args)`: a call of a helper the generated module binds by name."""
    return gast.Call(func=name(fname), args=args, keywords=[])


def assign(target: str | Any, value: Any, like: Any = None) -> gast.Assign:
    tgt = name(target, gast.Store()) if isinstance(target, str) else target
    node = gast.Assign(targets=[tgt], value=value, type_comment=None)
    if like is not None:
        copy_loc(node, like)
    return node


def copy_loc(node: Any, like: Any) -> Any:
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset", "s2s_src"):
        if hasattr(like, attr):
            setattr(node, attr, getattr(like, attr))
    return node


def is_atom(node: Any) -> bool:
    return isinstance(node, (gast.Name, gast.Constant))


def walk_stmts(body: list):
    """Every statement of `body`, nested ones (if/for/while bodies) included, in program order."""
    for s in body:
        yield s
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and isinstance(s, (gast.If, gast.For, gast.While)):
                yield from walk_stmts(sub)


def assigned_names(stmts: list) -> set[str]:
    out = set()
    for s in stmts:
        for n in iter_nodes(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                out.add(n.id)
    return out


class Namer:
    """Fresh, readable names: user names stay, temporaries are t1, t2, ..."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        self.counter = 0

    def temp(self) -> str:
        while True:
            self.counter += 1
            cand = f"t{self.counter}"
            if cand not in self.taken:
                self.taken.add(cand)
                return cand

    def fresh(self, base: str) -> str:
        cand, i = base, 0
        while cand in self.taken:
            i += 1
            cand = f"{base}{i}" if not base[-1].isdigit() else f"{base}_{i}"
        self.taken.add(cand)
        return cand


def namer_for(fdef, namespace: dict[str, Any]) -> "Namer":
    """A Namer that avoids every name a function uses and every global its module has."""
    taken = set(namespace) | set(dir(builtins))
    taken |= names_in(fdef)
    return Namer(taken)


@dataclasses.dataclass
class Loop:
    cond: str | None      # the while-condition name (None for a plain for loop)
    go: str | None        # flag cleared by break/continue/return; guards the rest of the body


@dataclasses.dataclass
class Frame:
    """One function being normalized (the top one, or an inlined helper)."""
    parsed: ParsedFunction
    rename: dict[str, str]
    locals: set[str]
    result: str | None          # variable receiving the return value (None: plain return)
    live: str | None            # flag cleared by an early return
    loops: list[Loop] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class NormalizedFunction:
    node: gast.FunctionDef
    namespace: dict[str, Any]   # globals of the generated module
    source: SourceInfo
    params: list[str]
    deps: list[str] = dataclasses.field(default_factory=list)   # source files read (for the disk cache)
    objects: tuple = ()         # globals holding Python objects whose attributes the code reads at run time


class Normalizer:
    def __init__(self, parsed: ParsedFunction, keep_calls: frozenset = frozenset()):
        self.top = parsed
        self.keep_calls = keep_calls
        self.ns = base_namespace()
        taken = set(self.ns) | set(dir(builtins))
        for n in iter_nodes(parsed.node):
            if isinstance(n, gast.Name):
                taken.add(n.id)
        taken |= {a.id for a in parsed.node.args.args}
        self.namer = Namer(taken)
        self.global_names = names_in(parsed.node)
        self.aggregates: dict[str, list[str]] = {}   # split tuples/lists/dicts: var -> element vars
        self.agg_meta: dict[str, tuple] = {}          # var -> (kind, keys, class name) of its container
        self.results: dict[str, tuple] = {}           # var -> fields of the np.linalg namedtuple it holds
        self.inline_stack: list[Any] = [parsed.fn]
        self.deps: set[str] = {parsed.source.filename}
        self.frame: Frame | None = None
        self._alias_checks: dict[int, tuple] = {}     # id(function node) -> (node, its checks)
        # locals that hold one Python object for the whole call (a method's `self`): their attributes
        # are read when the code runs, their methods are inlined
        self.objects: dict[str, Any] = {}
        self.object_names: set[str] = set()          # globals of the generated code bound to such objects
        self._store_counts: dict[int, tuple] = {}

    # ----- errors -------------------------------------------------------------
    def error(self, cls, msg, node, hint=None):
        return self.frame.parsed.source.error(cls, msg, node, hint)

    # ----- entry ----------------------------------------------------------------
    def run(self) -> NormalizedFunction:
        fdef = self.top.node
        params = [a.id for a in fdef.args.args]
        if fdef.args.kwonlyargs or fdef.args.posonlyargs:
            raise self.top.source.error(UnsupportedSyntaxError, "keyword-only and positional-only parameters are not supported", fdef)
        local = params + sorted(assigned_names(fdef.body) - set(params))
        self.global_names -= set(local)
        body_src = list(fdef.body)
        if not _always_returns(body_src):
            body_src.append(copy_loc(gast.Return(value=None), body_src[-1] if body_src else fdef))
        early = _has_early_return(body_src)
        # A local that shadows a name generated code needs (np, push, ...) is renamed.
        rename = {n: (self.namer.fresh(n + "_") if n in self.ns else n) for n in local}
        frame = Frame(self.top, rename, set(local), None, None)
        self.frame = frame
        body: list = []
        if early:
            frame.result = self.namer.fresh("result")
            frame.live = self.namer.fresh("alive")
            body.append(assign(frame.live, const(True), fdef))
        out, _ = self.stmts(body_src)
        body += out
        if early:
            ret = gast.Return(value=self.emit_literal(self.aggregate_or_name(frame.result)))
            copy_loc(ret, body_src[-1])
            body.append(ret)
        args = clone(fdef.args)
        for a in args.args:
            a.id = rename[a.id]
        defaults = list(getattr(self.top.fn, "__defaults__", None) or ())
        args.defaults = [_constant(d) if isinstance(d, (int, float, str, tuple, type(None), bool))
                         else self.global_ref(f"default_{i}", d, fdef) for i, d in enumerate(defaults)]
        new = gast.FunctionDef(name=fdef.name, args=args, body=body, decorator_list=[],
                               returns=None, type_comment=None, type_params=[])
        copy_loc(new, fdef)
        for n in iter_nodes(new):
            if hasattr(n, "lineno") and not hasattr(n, "s2s_src"):
                n.s2s_src = self.top.source
        # the parameters as the body names them (a parameter named like a helper, `erf`, is renamed)
        return NormalizedFunction(new, self.ns, self.top.source, [rename[p] for p in params], sorted(self.deps),
                                  tuple(sorted(self.object_names)))

    # ----- statements ---------------------------------------------------------
    def stmts(self, body: list) -> tuple[list, bool]:
        """Normalize a statement list; True if control may leave it early."""
        out: list = []
        for i, s in enumerate(body):
            new, exits = self.stmt(s)
            for n in new:
                if not hasattr(n, "lineno"):
                    copy_loc(n, s)
                if not hasattr(n, "s2s_src"):
                    n.s2s_src = self.frame.parsed.source
            out += new
            if exits:
                rest = body[i + 1:]
                if rest:
                    guard = self.guard_flag()
                    inner, _ = self.stmts(rest)
                    if inner:
                        out.append(copy_loc(gast.If(test=name(guard), body=inner, orelse=[]), rest[0]))
                return out, True
        return out, False

    def guard_flag(self) -> str:
        f = self.frame
        if f.loops:
            return f.loops[-1].go
        return f.live

    def stmt(self, s) -> tuple[list, bool]:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise self.error(UnsupportedSyntaxError, f"s2s does not support `{type(s).__name__}` statements", s)
        checks = self.shared_array_checks(s)
        new, exits = method(s)
        return checks + new, exits

    def shared_array_checks(self, s) -> list:
        """Before an in-place update of an array another name may share and still read, a check
        that refuses at run time when they do share (frontend/aliases.py)."""
        fdef = self.frame.parsed.node
        table = self._alias_checks.get(id(fdef))
        if table is None:
            table = self._alias_checks[id(fdef)] = (fdef, in_place_checks(fdef))
        pairs = table[1].get(id(s))
        if not pairs:
            return []
        text = self.frame.parsed.source.line(getattr(s, "lineno", None)).strip() or "an in-place update"
        out = []
        for y, z in pairs:
            if y not in self.frame.locals or z not in self.frame.locals:
                continue
            check = self.call_rule(rt.check_unshared, [name(self.frame.rename[y]), name(self.frame.rename[z]),
                                                       const(text), const(y), const(z)], s)
            out.append(copy_loc(gast.Expr(value=check), s))
        return out

    def stmt_Pass(self, s):
        return [], False

    def stmt_Expr(self, s):
        if isinstance(s.value, gast.Constant):  # docstring or bare constant
            return [], False
        out: list = []
        value = self.simple(s.value, out)
        if isinstance(value, gast.Call):
            out.append(copy_loc(gast.Expr(value=value), s))
        return out, False

    def stmt_Assert(self, s):
        out: list = []
        test = self.atom(s.test, out)
        msg = self.atom(s.msg, out) if s.msg is not None else None
        out.append(copy_loc(gast.Assert(test=test, msg=msg), s))
        return out, False

    def stmt_Assign(self, s):
        out: list = []
        if len(s.targets) == 1:
            self.assign_to(s.targets[0], s.value, out, s)
            return out, False
        value = self.atom(s.value, out)      # (normalized once: `a = b = v` binds both to it)
        if isinstance(value, gast.Name) and value.id in self.aggregates:
            value = self.aggregate_or_name(value.id)
        for t in s.targets:
            self.assign_normalized(t, value, out, s)
        return out, False

    def stmt_AnnAssign(self, s):
        if s.value is None:
            return [], False
        out: list = []
        self.assign_to(s.target, s.value, out, s)
        return out, False

    def stmt_AugAssign(self, s):
        out: list = []
        target = s.target
        if isinstance(target, gast.Name):
            load = name(target.id)
            copy_loc(load, target)
            self.assign_to(target, copy_loc(gast.BinOp(load, s.op, s.value), s), out, s)
        elif isinstance(target, gast.Subscript):
            base = self.local_name(target.value, s)
            index = self.index(target.slice, out)
            old = self.namer.temp()
            out.append(assign(old, gast.Subscript(name(base), index, gast.Load()), s))
            rhs = self.atom(s.value, out)
            new = self.namer.temp()
            out.append(assign(new, gast.BinOp(name(old), s.op, rhs), s))
            out.append(assign(gast.Subscript(name(base), clone(index), gast.Store()), name(new), s))
        else:
            raise self.error(UnsupportedSyntaxError, "unsupported augmented assignment target", s)
        return out, False

    def assign_to(self, target, value, out: list, s) -> None:
        if isinstance(target, gast.Name):
            var = self.store_name(target.id, s)
            if isinstance(value, (gast.Tuple, gast.List)):
                self.assign_aggregate(var, value.elts, out, s,
                                      ("list" if isinstance(value, gast.List) else "tuple", None, None))
                return
            simple = self.simple(value, out)
            if isinstance(simple, gast.Name) and simple.id in self.aggregates:
                self.bind_value(var, self.aggregate_or_name(simple.id), out, s)
                return
            if isinstance(simple, (gast.Tuple, gast.List)):
                self.bind_value(var, simple, out, s)
                return
            if var in names_in(simple) and not is_atom(simple):
                tmp = self.namer.temp()
                out.append(assign(tmp, simple, s))
                simple = name(tmp)
            if var in self.aggregates:
                raise self.error(UnsupportedSyntaxError, f"`{target.id}` holds a tuple/list elsewhere and a single value here",
                                 s, "use different variable names for the tuple and the value")
            out.append(assign(var, simple, s))
            self.note_result(var, simple)
            held = self.object_of(simple)
            if held is not None and self.stores_in_frame().get(target.id) == 1:
                self.objects[var] = held        # (`self_f = f_self` in generated code s2s reads again)
        elif isinstance(target, (gast.Tuple, gast.List)):
            if isinstance(value, (gast.Tuple, gast.List)):
                if len(value.elts) != len(target.elts):
                    raise self.error(UnsupportedSyntaxError, "cannot unpack: the number of values does not match", s)
                atoms = [self.arg_atom(v, out) for v in value.elts]
                # copy to temporaries first, so `a, b = b, a` swaps
                tmps = []
                for a in atoms:
                    if isinstance(a, gast.Name):
                        tmp = self.namer.temp()
                        out.append(assign(tmp, a, s))
                        tmps.append(name(tmp))
                    else:
                        tmps.append(a)
                for t, a in zip(target.elts, tmps):
                    self.assign_normalized(t, a, out, s)
                return
            src = self.atom(value, out)
            elems = self.aggregates.get(src.id) if isinstance(src, gast.Name) else None
            fields = self.results.get(src.id) if isinstance(src, gast.Name) else None
            is_shape = isinstance(value, gast.Attribute) and value.attr == "shape"
            if elems is None and not any(isinstance(t, gast.Starred) for t in target.elts):
                # a tuple s2s did not see being built, of a length it knows (an np.linalg result:
                # slogdet, eigh, qr, svd) or that Python checks (a shape: `n, m = X.shape`, where
                # X's rank must be 2): element k is value[k].  Other values (an array's rows,
                # np.split's pieces) are checked as Python checks them, when the code runs.
                if fields is not None and len(fields) != len(target.elts):
                    raise self.error(UnsupportedSyntaxError, f"this result has {len(fields)} values, not "
                                     f"{len(target.elts)}", s, f"unpack it into {len(fields)} names")
                if fields is None and not is_shape:
                    check = self.call_rule(rt.check_unpack, [name(src.id), const(len(target.elts))], s)
                    out.append(copy_loc(gast.Expr(value=check), s))
                parts = []
                for k in range(len(target.elts)):
                    tmp = self.namer.temp()
                    out.append(assign(tmp, gast.Subscript(name(src.id), const(k), gast.Load()), s))
                    parts.append(name(tmp))
                for t, part in zip(target.elts, parts):
                    self.assign_normalized(t, part, out, s)
                return
            if elems is None:
                raise self.error(UnsupportedSyntaxError, "s2s can unpack only tuples/lists it can see being built",
                                 s, "return or build the tuple explicitly (e.g. `return a, b`)")
            if len(elems) != len(target.elts):
                raise self.error(UnsupportedSyntaxError, "cannot unpack: the number of values does not match", s)
            for t, e in zip(target.elts, elems):
                self.assign_normalized(t, self.aggregate_or_name(e), out, s)
        elif isinstance(target, gast.Subscript):
            base = self.local_name(target.value, s)
            index = self.index(target.slice, out)
            rhs = self.atom(value, out)
            out.append(assign(gast.Subscript(name(base), index, gast.Store()), rhs, s))
        else:
            raise self.error(UnsupportedSyntaxError, f"cannot assign to {type(target).__name__}", s,
                             "assign to a variable or an indexed array element")

    def assign_normalized(self, target, value, out: list, s) -> None:
        """Assign an already-normalized value to a (not yet normalized) user target."""
        if isinstance(target, gast.Name):
            self.bind_value(self.store_name(target.id, s), value, out, s)
        elif isinstance(target, (gast.Tuple, gast.List)):
            if isinstance(value, gast.Name) and value.id in self.aggregates:
                value = self.aggregate_or_name(value.id)
            if not isinstance(value, (gast.Tuple, gast.List)):
                raise self.error(UnsupportedSyntaxError, "s2s can unpack only tuples/lists it can see being built", s)
            if len(value.elts) != len(target.elts):
                raise self.error(UnsupportedSyntaxError, "cannot unpack: the number of values does not match", s)
            for t, v in zip(target.elts, value.elts):
                self.assign_normalized(t, v, out, s)
        elif isinstance(target, gast.Subscript) and is_atom(value):
            base = self.local_name(target.value, s)
            index = self.index(target.slice, out)
            out.append(assign(gast.Subscript(name(base), index, gast.Store()), clone(value), s))
        else:
            raise self.error(UnsupportedSyntaxError, "unsupported assignment target", s)

    def assign_aggregate(self, var: str, elts: list, out: list, s, meta: tuple = ("tuple", None, None)) -> None:
        """var = (e0, e1, ...): one variable per element (elements not yet normalized)."""
        atoms = [self.arg_atom(e, out) for e in elts]
        self.bind_value(var, _literal(atoms, meta), out, s)

    def all_elements(self, var: str) -> set[str]:
        out = set()
        for e in self.aggregates.get(var, []):
            out.add(e)
            out |= self.all_elements(e)
        return out

    def bind_value(self, var: str, value, out: list, s) -> None:
        """Assign an already-normalized value (atom or tuple literal of atoms) to var."""
        if not isinstance(value, (gast.Tuple, gast.List)):
            if var in self.aggregates:
                raise self.error(UnsupportedSyntaxError, "a variable holds a tuple/list in one place and a single value in another",
                                 s, "use different variable names for the tuple and the value")
            out.append(assign(var, value, s))
            return
        elems = self.aggregates.get(var)
        meta = getattr(value, "s2s_meta", None) or ("list" if isinstance(value, gast.List) else "tuple", None, None)
        if elems is None:
            base = var.rstrip("_")
            keys = meta[1]
            elems = [self.namer.fresh(f"{base}_{keys[i]}" if keys and str(keys[i]).isidentifier() else f"{base}_{i}")
                     for i in range(len(value.elts))]
            self.aggregates[var] = elems
            self.agg_meta[var] = meta
        elif len(elems) != len(value.elts):
            raise self.error(UnsupportedSyntaxError, "a variable holds tuples/lists of different lengths", s)
        # Copy old elements first so `t = (t[1], t[0])` reads the old values.
        own = self.all_elements(var)
        staged = []
        for v in value.elts:
            if isinstance(v, gast.Name) and v.id in own:
                tmp = self.namer.temp()
                out.append(assign(tmp, v, s))
                v = name(tmp)
            elif isinstance(v, (gast.Tuple, gast.List)) and names_in(v) & own:
                raise self.error(UnsupportedSyntaxError, "nested tuple refers to itself", s)
            staged.append(v)
        for e, v in zip(elems, staged):
            self.bind_value(e, v, out, s)

    def aggregate_or_name(self, var: str) -> Any:
        """A split container as a literal of its element variables (keeps its kind and keys)."""
        if var in self.aggregates:
            return _literal([self.aggregate_or_name(e) for e in self.aggregates[var]],
                            self.agg_meta.get(var, ("tuple", None, None)))
        return name(var)

    def emit_literal(self, node) -> Any:
        """Container literals as real syntax: tuple, list, dict or a record constructor."""
        if not isinstance(node, (gast.Tuple, gast.List)):
            return node
        kind, keys, cls = getattr(node, "s2s_meta", None) or (
            "list" if isinstance(node, gast.List) else "tuple", None, None)
        elts = [self.emit_literal(e) for e in node.elts]
        if kind == "dict":
            return gast.Dict(keys=[const(k) for k in keys], values=elts)
        if kind == "record":
            call = self.call_rule(rt.build_record, [name(cls)], node, dict(zip(keys, elts)))
            return call
        return (gast.List if kind == "list" else gast.Tuple)(elts, gast.Load())

    def element_of(self, var: str, key, node) -> Any:
        """Element `key` (int index, dict key or record field) of a split container."""
        elems = self.aggregates[var]
        kind, keys, _ = self.agg_meta.get(var, ("tuple", None, None))
        if kind in ("dict", "record") and key in (keys or ()):
            i = keys.index(key)
        elif kind != "dict" and isinstance(key, int) and not isinstance(key, bool) and -len(elems) <= key < len(elems):
            i = key
        else:
            raise self.error(UnsupportedSyntaxError, f"no element {key!r} in this {kind}", node)
        e = elems[i]
        return self.aggregate_or_name(e) if e in self.aggregates else name(e)

    def stmt_If(self, s):
        out: list = []
        test = self.atom(s.test, out)
        if isinstance(test, gast.Constant):
            tmp = self.namer.temp()
            out.append(assign(tmp, test, s))
            test = name(tmp)
        body, e1 = self.stmts(s.body)
        orelse, e2 = self.stmts(s.orelse)
        out.append(copy_loc(gast.If(test=test, body=body or [gast.Pass()], orelse=orelse), s))
        return out, e1 or e2

    def stmt_Return(self, s):
        f = self.frame
        out: list = []
        value = s.value if s.value is not None else const(None)
        v = self.arg_atom(value, out)
        if f.result is None:  # the top function's only, final return
            out.append(copy_loc(gast.Return(value=self.emit_literal(v)), s))
            return out, False
        self.bind_value(f.result, v, out, s)
        if f.live is None:
            return out, False
        out.append(assign(f.live, const(False), s))
        for loop in f.loops:
            out.append(assign(loop.go, const(False), s))
            if loop.cond is not None:
                out.append(assign(loop.cond, const(False), s))
        return out, True

    def stmt_Break(self, s):
        loop = self.frame.loops[-1]
        return [assign(loop.go, const(False), s), assign(loop.cond, const(False), s)], True

    def stmt_Continue(self, s):
        loop = self.frame.loops[-1]
        return [assign(loop.go, const(False), s)], True

    def stmt_While(self, s):
        out: list = []
        cond = self.namer.temp()
        self.expr_into(s.test, cond, out)
        exits = _has_exit(s.body)
        loop = Loop(cond, self.namer.fresh("go") if exits else None)
        self.frame.loops.append(loop)
        try:
            body: list = [assign(loop.go, const(True), s)] if exits else []
            inner, _ = self.stmts(s.body)
            body += inner
            recompute: list = []
            self.expr_into(s.test, cond, recompute)
            for r in recompute:
                copy_loc(r, s)
            body += [copy_loc(gast.If(test=name(cond), body=recompute, orelse=[]), s)] if exits else recompute
        finally:
            self.frame.loops.pop()
        out.append(copy_loc(gast.While(test=name(cond), body=body, orelse=[]), s))
        return out, _has_return(s.body)

    def stmt_For(self, s):
        out: list = []
        it = s.iter
        kind, args = self.iteration(it, out)
        if kind == "items" or (kind in ("seq", "enumerate", "zip") and any(
                isinstance(q, gast.Name) and q.id in self.aggregates for q in args)):
            return self.unroll(s, kind, args, out)
        # Per-iteration element assignments, as (target, value-maker) pairs.
        if kind == "range":
            count_args = args
        elif kind == "rangeobj":
            count_args = None
        else:
            seqs = args
            if len(seqs) == 1:
                n = self.namer.temp()
                q = seqs[0]
                length = const(len(self.aggregates[q.id])) if isinstance(q, gast.Name) and q.id in self.aggregates \
                    else self.call_rule(builtins.len, [q], s)
                out.append(assign(n, length, s))
            else:
                lens = []
                for q in seqs:
                    ln = self.namer.temp()
                    out.append(assign(ln, self.call_rule(builtins.len, [q], s), s))
                    lens.append(name(ln))
                n = self.namer.temp()
                out.append(assign(n, self.call_rule(builtins.min, lens, s), s))
            count_args = [name(n)]
        target = s.target
        if kind in ("range", "rangeobj") and isinstance(target, gast.Name):
            index_var = self.store_name(target.id, s)
            elem_assigns: list = []
        else:
            index_var = self.namer.fresh("k")
            elem_assigns = []
            seqs = [self._subscriptable(q, out) for q in seqs]
            if kind == "enumerate":
                if not (isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == 2):
                    raise self.error(UnsupportedSyntaxError, "unpack enumerate() as `for i, x in enumerate(...)`", s)
                elem_assigns.append((target.elts[0], name(index_var)))
                elem_assigns.append((target.elts[1], self.element(seqs[0], name(index_var), s)))
            elif kind == "zip":
                if not (isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == len(seqs)):
                    raise self.error(UnsupportedSyntaxError, "unpack zip() into one name per sequence", s)
                for t, q in zip(target.elts, seqs):
                    elem_assigns.append((t, self.element(q, name(index_var), s)))
            else:
                elem_assigns.append((target, self.element(seqs[0], name(index_var), s)))
        exits = _has_exit(s.body)
        if not exits:
            # for i in range(...): keep the for loop; bind the range to a temp if
            # its bounds are reassigned inside (the backward sweep replays the same range).
            body_assigned = {self.frame.rename.get(n, n) for n in assigned_names(s.body)}
            if count_args is None:
                iter_node = args[0]
            elif any(isinstance(a, gast.Name) and a.id in body_assigned for a in count_args):
                r = self.namer.temp()
                out.append(assign(r, self.call_rule(builtins.range, count_args, s), s))
                iter_node = name(r)
            else:
                iter_node = self.call_rule(builtins.range, count_args, s)
            self.frame.loops.append(Loop(None, None))
            try:
                body: list = []
                for t, v in elem_assigns:
                    self.assign_element(t, v, body, s)
                inner, _ = self.stmts(s.body)
                body += inner
            finally:
                self.frame.loops.pop()
            out.append(copy_loc(gast.For(target=name(index_var, gast.Store()), iter=iter_node,
                                         body=body or [gast.Pass()], orelse=[], type_comment=None), s))
            return out, False
        # With break/continue/return: a while loop over an explicit counter.
        if count_args is None:
            r = args[0].id
        else:
            r = self.namer.temp()
            out.append(assign(r, self.call_rule(builtins.range, count_args, s), s))
        n = self.namer.temp()
        out.append(assign(n, self.call_rule(builtins.len, [name(r)], s), s))
        k = self.namer.fresh("k")
        out.append(assign(k, const(0), s))
        cond = self.namer.temp()
        out.append(assign(cond, gast.Compare(name(k), [gast.Lt()], [name(n)]), s))
        loop = Loop(cond, self.namer.fresh("go"))
        self.frame.loops.append(loop)
        try:
            body = [assign(loop.go, const(True), s),
                    assign(index_var, gast.Subscript(name(r), name(k), gast.Load()), s)]
            for t, v in elem_assigns:
                self.assign_element(t, v, body, s)
            body.append(assign(k, gast.BinOp(name(k), gast.Add(), const(1)), s))
            inner, _ = self.stmts(s.body)
            body += inner
            body.append(copy_loc(gast.If(test=name(cond), body=[
                assign(cond, gast.Compare(name(k), [gast.Lt()], [name(n)]), s)], orelse=[]), s))
        finally:
            self.frame.loops.pop()
        out.append(copy_loc(gast.While(test=name(cond), body=body, orelse=[]), s))
        return out, _has_return(s.body)

    def unroll(self, s, kind: str, seqs: list, out: list) -> tuple[list, bool]:
        """A loop over a split tuple/list/dict: one copy of the body per element."""
        if _has_break_continue(s.body):
            raise self.error(UnsupportedSyntaxError, "break/continue in a loop over a tuple/list is not supported", s,
                             "loop over range(len(...)) instead")
        lengths = [len(self.aggregates[q.id]) if isinstance(q, gast.Name) and q.id in self.aggregates else None
                   for q in seqs]
        known = [n for n in lengths if n is not None]
        n = min(known)
        if kind == "items":
            keys = self.agg_meta[seqs[0].id][1]
        blocks = []
        for k in range(n):
            code: list = []
            values = [self.element_of(q.id, k if self.agg_meta.get(q.id, ("tuple",))[0] != "dict"
                                      else self.agg_meta[q.id][1][k], s)
                      if isinstance(q, gast.Name) and q.id in self.aggregates
                      else gast.Subscript(clone(q), const(k), gast.Load()) for q in seqs]
            if kind == "items":
                self.assign_normalized(s.target, _literal([const(keys[k]), values[0]], ("tuple", None, None)), code, s)
            elif kind == "enumerate":
                self.assign_normalized(s.target, _literal([const(k), values[0]], ("tuple", None, None)), code, s)
            elif kind == "zip":
                self.assign_normalized(s.target, _literal(values, ("tuple", None, None)), code, s)
            else:
                v = values[0]
                if isinstance(v, gast.Subscript):
                    tmp = self.namer.temp()
                    code.append(assign(tmp, v, s))
                    v = name(tmp)
                self.assign_normalized(s.target, v, code, s)
            inner, exits = self.stmts(s.body)
            blocks.append((code + inner, exits))
        acc: list = []
        any_exit = False
        for code, exits in reversed(blocks):
            if exits and acc:
                code = code + [copy_loc(gast.If(test=name(self.guard_flag()), body=acc, orelse=[]), s)]
            else:
                code = code + acc
            any_exit |= exits
            acc = code
        out += acc
        return out, any_exit

    def assign_element(self, target, value, out, s) -> None:
        """Loop target = normalized simple value (an index or a subscript)."""
        if isinstance(target, gast.Name):
            out.append(assign(self.store_name(target.id, s), value, s))
            return
        tmp = self.namer.temp()
        out.append(assign(tmp, value, s))
        raise self.error(UnsupportedSyntaxError, "unpacking rows of an array in a for loop is not supported", s,
                         "index the row instead: for i in range(len(X)): a, b = X[i, 0], X[i, 1]")

    def _subscriptable(self, seq, out):
        return seq

    def element(self, seq, index, s):
        """seq[index] for a loop element: a choose() for split tuples/lists."""
        if isinstance(seq, gast.Name) and seq.id in self.aggregates:
            elems = self.aggregates[seq.id]
            if any(e in self.aggregates for e in elems):
                raise self.error(UnsupportedSyntaxError, "s2s cannot loop over a list of tuples", s)
            return self.call_rule(rt.choose, [index] + [name(e) for e in elems], s)
        return gast.Subscript(clone(seq), index, gast.Load())

    def iteration(self, it, out) -> tuple[str, list]:
        """Classify a for loop's iterable: ("range", bound atoms) or (kind, sequence atoms)."""
        if isinstance(it, gast.Call) and not it.keywords and isinstance(it.func, gast.Attribute) \
                and it.func.attr in ("items", "values", "keys") and not it.args:
            base = self.atom(it.func.value, out)
            if isinstance(base, gast.Name) and self.agg_meta.get(base.id, ("",))[0] == "dict":
                if it.func.attr == "values":
                    return "seq", [base]
                if it.func.attr == "items":
                    return "items", [base]
                keys = self.agg_meta[base.id][1]
                tmp = self.namer.temp()
                self.bind_value(tmp, _literal([const(k) for k in keys], ("tuple", None, None)), out, it)
                return "seq", [name(tmp)]
        if isinstance(it, gast.Call) and not it.keywords:
            obj = self.try_resolve(it.func)
            if obj is builtins.range:
                return "range", [self.atom(a, out) for a in it.args]
            if obj is builtins.reversed and len(it.args) == 1:
                inner = it.args[0]
                if isinstance(inner, gast.Call) and self.try_resolve(inner.func) is builtins.range:
                    base = self.atom(inner, out)
                elif isinstance(inner, gast.Name) and inner.id in self.frame.locals:
                    base = self.atom(inner, out)   # a range object made earlier
                else:
                    raise self.error(UnsupportedSyntaxError, "s2s supports reversed() only over range()", it)
                r = self.namer.temp()
                out.append(assign(r, gast.Subscript(base, gast.Slice(None, None, const(-1)), gast.Load()), it))
                return "rangeobj", [name(r)]
            if obj is builtins.enumerate and len(it.args) == 1:
                return "enumerate", [self.atom(it.args[0], out)]
            if obj is builtins.zip:
                return "zip", [self.atom(a, out) for a in it.args]
        seq = self.atom(it, out)
        if isinstance(seq, gast.Name) and self.agg_meta.get(seq.id, ("",))[0] == "dict":
            keys = self.agg_meta[seq.id][1]      # iterating a dict yields its keys
            tmp = self.namer.temp()
            self.bind_value(tmp, _literal([const(k) for k in keys], ("tuple", None, None)), out, it)
            return "seq", [name(tmp)]
        return "seq", [seq]

    # ----- expressions ----------------------------------------------------------
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

    def object_of(self, atom) -> Any:
        """The Python object (not an array, number or container) a normalized atom surely holds."""
        if not isinstance(atom, gast.Name):
            return None
        if atom.id in self.objects:
            return self.objects[atom.id]
        value = self.ns.get(atom.id, None)
        if not _plain_object(value):
            return None
        self.object_names.add(atom.id)
        return value

    def stores_in_frame(self) -> dict[str, int]:
        """How many times each name is assigned in the function being normalized."""
        fdef = self.frame.parsed.node
        got = self._store_counts.get(id(fdef))
        if got is None:
            counts: dict[str, int] = {}
            for n in iter_nodes(fdef):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    counts[n.id] = counts.get(n.id, 0) + 1
            got = self._store_counts[id(fdef)] = (fdef, counts)
        return got[1]

    def object_rooted(self, node) -> bool:
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and node.id in self.frame.locals \
            and self.frame.rename[node.id] in self.objects

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

    def slice_of(self, var: str, sl, node) -> Any:
        """`parts[1:]`, `pair[::-1]` of a split tuple/list: the literal of the elements picked."""
        kind = self.agg_meta.get(var, ("tuple", None, None))[0]
        if kind not in ("tuple", "list"):
            raise self.error(UnsupportedSyntaxError, f"s2s cannot slice a {kind}", node)

        def bound(b):
            if b is None:
                return None
            if isinstance(b, gast.Constant) and isinstance(b.value, int) and not isinstance(b.value, bool):
                return b.value
            if isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub) and isinstance(b.operand, gast.Constant):
                return -b.operand.value
            raise self.error(UnsupportedSyntaxError, "s2s slices a tuple or list with constant bounds only", node,
                             "slice an array instead (np.stack the values first)")
        picked = self.aggregates[var][slice(bound(sl.lower), bound(sl.upper), bound(sl.step))]
        return _literal([self.aggregate_or_name(e) for e in picked], (kind, None, None))

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

    def _bind_fn(self, fn) -> str:
        key = fn.__name__
        if self.ns.get(key) is not fn:
            if key in self.ns:
                key = self.namer.fresh(key)
            self.ns[key] = fn
            self.namer.taken.add(key)
        return key

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

    # ----- names and resolution --------------------------------------------------
    def store_name(self, id_: str, node) -> str:
        if id_ not in self.frame.locals:
            raise self.error(UnsupportedSyntaxError, f"cannot assign to `{id_}` here", node)
        return self.frame.rename[id_]

    def local_name(self, node, s) -> str:
        if isinstance(node, gast.Name) and node.id in self.frame.locals:
            return self.frame.rename[node.id]
        raise self.error(UnsupportedSyntaxError, "s2s supports indexed writes only into a local array variable", s,
                         "write into an array created in the function: y = np.zeros(n); y[i] = ...")

    def is_local_rooted(self, node) -> bool:
        while isinstance(node, gast.Attribute):
            node = node.value
        if isinstance(node, gast.Name):
            return node.id in self.frame.locals
        return True  # an expression: (a + b).sum()

    def lookup_global(self, node) -> Any:
        ns = self.frame.parsed.namespace
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
            if node.id in self.frame.locals and self.frame.rename[node.id] in self.objects:
                return self.objects[self.frame.rename[node.id]]
            if node.id in self.frame.locals:
                raise self.error(UnsupportedSyntaxError, f"s2s cannot call `{node.id}`, a function held in a local variable",
                                 node, "call the function by its global name")
            return self.lookup_global(node)
        if isinstance(node, gast.Attribute):
            base = self.resolve(node.value)
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.error(TransformError, f"`{_dotted(node)}` does not exist", node) from None
        raise self.error(UnsupportedSyntaxError, "s2s cannot resolve this call", node,
                         "call a function by its name")

    def static_transform(self, node) -> Any:
        """`s2s.vmap(f, in_axes=(None, 0))(...)` inside transformed code: build the transform now."""
        factory = self.resolve(node.func)
        if factory not in TRANSFORM_FACTORIES:
            raise self.error(UnsupportedSyntaxError, "s2s can call the result of a call only for s2s.grad/vmap/"
                             "jacfwd/jacrev/hessian(...)",
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
        if obj is np:
            return name("np")
        if isinstance(obj, types.ModuleType):
            raise self.error(UnsupportedSyntaxError, f"cannot use the module `{preferred}` as a value", node)
        if callable(obj) and not isinstance(obj, (np.ndarray, np.generic, type)) and lookup(obj) is None:
            raise self.error(UnsupportedSyntaxError, f"s2s cannot use the function `{preferred}` as a value", node,
                             "call it directly")
        if isinstance(obj, type) and obj in (float, int, bool, complex):
            return name(obj.__name__)
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return parse_expr(f"np.{obj.__name__}")
        base = preferred.split(".")[-1]
        if base in self.ns:
            if self.ns[base] is obj:
                return name(base)
        elif base in self.global_names or base not in self.namer.taken:
            self.ns[base] = obj
            self.namer.taken.add(base)
            return name(base)
        cand = self.namer.fresh(base)
        self.ns[cand] = obj
        return name(cand)

    # ----- inlining -------------------------------------------------------------
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


def _plain_object(value) -> bool:
    """An object whose attributes a method reads (a model, a config, a class), as opposed to the
    values s2s computes with (arrays, numbers, strings, containers) and functions."""
    return value is not None and not isinstance(value, (np.ndarray, np.generic, numbers.Number, str, bytes, tuple,
                                                        list, dict, bool, types.FunctionType, types.ModuleType,
                                                        types.BuiltinFunctionType, np.ufunc))


def _literal(elts: list, meta: tuple) -> gast.Tuple:
    """The internal form of a container literal: a Tuple carrying its kind and keys."""
    node = gast.Tuple(list(elts), gast.Load())
    node.s2s_meta = meta
    return node


def _container_kind(node) -> str | None:
    """"tuple", "list", "dict" or "record" for a container literal, None for anything else."""
    if not isinstance(node, (gast.Tuple, gast.List)):
        return None
    meta = getattr(node, "s2s_meta", None)
    return meta[0] if meta else ("list" if isinstance(node, gast.List) else "tuple")


def _constant(v):
    if isinstance(v, tuple):
        return gast.Tuple([_constant(e) for e in v], gast.Load())
    return const(v)


def _dotted(node) -> str:
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return "<expression>"


def _describe(obj) -> str:
    mod = getattr(obj, "__module__", None) or type(obj).__module__
    nm = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    return f"{mod}.{nm}" if mod else str(nm)


def _walk_same_function(stmts):
    for s in stmts:
        yield from iter_nodes(s)


def _has_return(stmts) -> bool:
    return any(isinstance(n, gast.Return) for n in _walk_same_function(stmts))


def _has_exit(stmts) -> bool:
    """break/continue belonging to this loop, or any return."""
    def visit(nodes, nested):
        for s in nodes:
            if isinstance(s, gast.Return):
                return True
            if isinstance(s, (gast.Break, gast.Continue)) and not nested:
                return True
            if isinstance(s, (gast.For, gast.While)):
                if visit(s.body, True):
                    return True
            elif isinstance(s, gast.If):
                if visit(s.body, nested) or visit(s.orelse, nested):
                    return True
        return False
    return visit(stmts, False)


def _always_returns(stmts) -> bool:
    """Control never falls off the end of `stmts` (the last statement returns on every path)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, gast.Return):
        return True
    if isinstance(last, gast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _has_break_continue(stmts) -> bool:
    def visit(nodes):
        for s in nodes:
            if isinstance(s, (gast.Break, gast.Continue)):
                return True
            if isinstance(s, gast.If) and (visit(s.body) or visit(s.orelse)):
                return True
        return False
    return visit(stmts)


def _has_early_return(body) -> bool:
    for i, s in enumerate(body):
        is_last = i == len(body) - 1
        if isinstance(s, gast.Return):
            if not is_last:
                return True
            continue
        if _has_return([s]):
            return True
    return False


def normalize(parsed: ParsedFunction, keep_calls: frozenset = frozenset()) -> NormalizedFunction:
    """Normalize a parsed function; calls to `keep_calls` stay calls instead of being inlined."""
    fence(parsed)
    return Normalizer(parsed, keep_calls).run()
