"""Side effects that do not touch the maths: they run as written in the forward sweep.

Statements the derivative does not depend on are kept, not differentiated: their source is
compiled into a *block*, a small Python function of the locals it reads (frontend/effect_blocks.py;
in the user's file and lines, so a traceback shows the user's code), which generated code calls
where the statement was (runtime/effects.py). Under `jit` a block runs inside `numba.objmode()`
(backends/numba_cpu.py): the exception a `raise` makes is the user's, its message included.

- `raise ...` (any form) becomes `raise_block(block, where, values...)`: the user's exception,
  class and message (f-strings included) raised in the forward sweep; `assert test, <message that
  is not a constant>` becomes `if not test: raise_block(...)` (the message is built only then).
- An f-string used as a value is `format_value(block, values...)` (a string, no derivative).
- A call whose result is discarded (an expression statement) runs as a block when its callee is
  not code s2s differentiates: a function of logging, warnings, matplotlib, time or sys (never
  inlined, even when s2s could read its source), a function or method with neither Python source
  nor a rule (builtins, C extensions), or a method of a local object that is not an array method
  with a rule (`ax.imshow(smoke)`, `pbar.update(1)`, `y.sort()`). `print` of names and constants
  keeps its rule; any other `print` (`print(f"loss {loss:.3f}")`, `print(x.item())`) runs as a block.
  The criterion for what such a call may be handed: a call may change an argument in place
  (`np.copyto(y, x)`, `rng.shuffle(y)`, `y.sort()`), which would change the maths behind the
  derivative's back. A block is *safe* when every call in it is into logging, warnings,
  matplotlib, time, sys or builtins (not setattr & co.), an op with a rule, an exception class,
  a method of a string, or an array method that does not write (`.item()`, `.sum()`, ...); a call
  of a method of a local (`ax.imshow`) is safe when, at run time, the object's type comes from
  one of those modules. An unsafe block must not hand such a call (as an argument, or as the
  object whose method it calls; not inside an f-string, whose value is a new string) an array the
  function may read again: a local read after the statement (or anywhere in a loop around it), a
  parameter, a local that may be a view of another array, or any value of an inlined helper (its
  arrays may be the caller's) -- refused when the code runs (runtime/effects.py, effect), at the
  user's line; a global array read by an unsafe block is refused now.
- A `with` or `try` statement made only of such statements (no value it binds read afterwards,
  no `return`/`break`/`continue` leaving it) runs as one block.
- `with cm: <statements that compute values>`: the body is differentiated as if the `with` were
  absent and the context is entered and exited around it in the forward sweep (markers that
  codegen/regions.py turns into a real `with region_context(...)` block); for `np.errstate` the
  backward sweep's code of the body runs inside it too. A context manager that swallows an
  exception of the body is refused when it happens; `contextlib.suppress` around such a body is
  refused now; the `as` value may be used only by statements that run as blocks. Under `jit`
  `np.errstate` is dropped (Numba keeps no floating-point error state) and any other `with`
  around values is refused.
- `try: <statements that compute values>` whose every `except` clause always raises (re-raises,
  converts, logs and raises): the body, `else` and `finally` are differentiated as written; on the
  except path the user's clauses and `finally` run as Python (a block: `try: raise exc` followed by
  them). A clause that can end without raising is refused (which statements ran would decide the
  derivative), as are `return`/`break`/`continue` in `finally`. Under `jit` refused. (`return`,
  `break` and `continue` inside a `with` or `try` around values are refused inside a loop.)
- `del name`: nothing is generated; a later read of the name (in source order, or in the next
  iteration of a loop around it) is refused, as Python would raise.
- `import m`, `from m import f` inside the function bind the name statically, as a global of the
  function (the module is imported when s2s transforms it).
- `x := v` is an assignment before the expression that holds it (a `while` test computes it again
  each iteration); refused when the expression reads `x` before it, and inside comprehensions.
- `for ... else` / `while ... else`: a flag set before each `break` of the loop guards the `else`.
"""
from __future__ import annotations

import builtins
import copy
import importlib
import importlib.util
import re
import sys
import types

import gast
import numpy as np

from ..runtime import effects as rte
from ..errors import TransformError, UnsupportedSyntaxError
from .ast_build import assign, const, copy_loc, name
from .effect_blocks import SourceScan, compile_block, contains, leaves, loaded_names, stored_names
from .effect_regions import ContextRegions
from .hooks import composite_of, lookup, method_op
from .nodes import iter_nodes

# methods that do not change their object: array methods with rules (hooks.method_op), and these
OTHER_NONWRITING_METHODS = frozenset({
    "item", "tolist", "tobytes", "nonzero", "argsort", "view",
    "__repr__", "__str__", "__format__", "format", "join", "split", "strip", "lower", "upper", "replace",
    "startswith", "endswith", "get", "keys", "values", "items", "count", "index"})


def nonwriting_method(method: str) -> bool:
    return method in OTHER_NONWRITING_METHODS or method_op(method) is not None


_EXCEPTION_TYPES = (BaseException,)


class SideEffects(ContextRegions):
    """Side-effect part of `Normalizer` (normalize.py): see the module docstring. Fields of
    `self.state` (normalize_state.py) it uses: `frame`, `namer`, `ns`, `top`, `aggregates`,
    `functions`, `row_lists`, `effect_scans`; methods of the other parts: `stmts`, `guard_flag`,
    `assign_to` (statements.py), `atom`, `arg_atom` (anf.py), `call_rule`, `expr_Call`
    (inlining.py), `aggregate_or_name` (containers.py), `resolve`, `lookup_global`,
    `is_local_rooted`, `object_rooted` (resolution.py), `error`; it extends `stmt_Expr`,
    `stmt_Assert`, `stmt_For`, `stmt_While` and `expr_Call` of the other parts."""

    # ----- what the function's source says around a statement ----------------------------------
    def _scan(self) -> SourceScan:
        fdef = self.state.frame.parsed.node
        cache = self.state.effect_scans
        got = cache.get(id(fdef))
        if got is None or got[0] is not fdef:
            got = cache[id(fdef)] = (fdef, SourceScan(fdef))
        return got[1]

    def _bind_object(self, preferred: str, obj) -> str:
        """Bind any Python object as a global of the generated code (a block, a logger)."""
        key = self.state.namer.fresh(re.sub(r"\W", "_", preferred))
        self.state.ns[key] = obj
        return key

    def _where(self, s) -> str:
        return f"{self.state.frame.parsed.source.filename}:{getattr(s, 'lineno', 0)}"

    def _callee(self, func):
        """The object a called expression stands for; None for a method of a local or an
        expression, or what cannot be resolved."""
        if isinstance(func, gast.Attribute) and self.is_local_rooted(func) and not self.object_rooted(func):
            return None
        if isinstance(func, gast.Name) and func.id in self.state.frame.locals and not self.object_rooted(func):
            return None
        try:
            return self.resolve(func)
        except TransformError:
            return None

    def _module_of(self, obj) -> str:
        owner = getattr(obj, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType) and not isinstance(obj, type):
            return type(owner).__module__ or ""
        mod = getattr(obj, "__module__", None)
        return mod if isinstance(mod, str) else (type(obj).__module__ or "")

    def _safe_callee(self, obj, func) -> bool:
        """A callee that runs as written and changes no array it is given (the module docstring)."""
        root = func
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name) and root.id not in self.state.frame.locals:
            base = self.state.frame.parsed.namespace.get(root.id)
            if isinstance(base, types.ModuleType) and base.__name__.split(".")[0] in rte.SAFE_MODULES \
                    and base.__name__ != "builtins":
                return True
        mod = self._module_of(obj).split(".")[0]
        if mod == "builtins":
            return getattr(obj, "__name__", "") not in rte.UNSAFE_BUILTINS and not isinstance(obj, type) \
                or isinstance(obj, type) and issubclass(obj, _EXCEPTION_TYPES)
        return mod in rte.SAFE_MODULES

    def is_effect_call(self, call) -> bool:
        """A call whose callee s2s does not differentiate, run as written (the module docstring)."""
        func = call.func
        if isinstance(func, gast.Attribute) and self.is_local_rooted(func.value) and not self.object_rooted(func.value):
            root = func.value
            if isinstance(root, gast.Name) and self.state.frame.rename.get(root.id, root.id) in (
                    self.state.aggregates.keys() | self.state.row_lists.keys() | self.state.functions.keys()):
                return False            # a tuple/list/dict s2s split into variables (containers.py, sequences.py)
            return not nonwriting_method(func.attr) or not isinstance(root, gast.Name)
        obj = self._callee(func)
        if obj is None or obj is builtins.print:
            return False
        if self._safe_callee(obj, func) and not (isinstance(obj, type) and not issubclass(obj, _EXCEPTION_TYPES)):
            return True
        if lookup(obj) is not None or composite_of(obj) is not None or hasattr(obj, "_s2s_inline_source") \
                or hasattr(obj, "_s2s_tree_source"):
            return False
        if isinstance(obj, (types.FunctionType, types.ModuleType)):
            return False
        if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
            return False
        import functools
        if isinstance(obj, functools.partial):
            return False
        return callable(obj)

    def _block_safety(self, nodes) -> tuple[bool, set, set]:
        """(whether a call of the block may change an array it is given; the locals whose methods it
        calls, safe or not by their type when the code runs; the locals it hands to such calls)."""
        unsafe, receivers, handed = False, set(), set()
        for n in (x for s in nodes for x in iter_nodes(s)):
            if not isinstance(n, gast.Call):
                continue
            f = n.func
            safe, receiver = False, None
            if isinstance(f, gast.Attribute):
                if isinstance(f.value, (gast.Constant, gast.JoinedStr)) or nonwriting_method(f.attr) \
                        or self._made_by_safe_call(f.value):
                    safe = True          # a string's method, one that writes nothing, a logger's
                elif isinstance(f.value, gast.Name) and f.value.id in self.state.frame.locals \
                        and not self.object_rooted(f.value):
                    receiver = f.value.id
            if not safe and receiver is None:
                obj = self._callee(f)
                safe = obj is not None and (self._safe_callee(obj, f) or lookup(obj) is not None
                                            or isinstance(obj, type) and issubclass(obj, _EXCEPTION_TYPES))
                unsafe = unsafe or not safe
            if receiver is not None:
                receivers.add(receiver)
                handed.add(receiver)
            if not safe:
                handed |= _names_handed(list(n.args) + [k.value for k in n.keywords])
        return unsafe, receivers, handed

    def _made_by_safe_call(self, expr) -> bool:
        """`logging.getLogger(name)` in `logging.getLogger(name).info(...)`: an object a safe callee made."""
        while isinstance(expr, gast.Attribute):
            expr = expr.value
        if not isinstance(expr, gast.Call):
            return False
        obj = self._callee(expr.func)
        return obj is not None and self._safe_callee(obj, expr.func)

    def _may_view(self, ident: str) -> bool:
        """A local that may hold an array another name (or the caller) also holds."""
        scan = self._scan()
        if ident in scan.params:
            return True
        for value in scan.assigned.get(ident, [None]):
            if value is None:
                return True
            if isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant, gast.BoolOp, gast.JoinedStr)):
                continue
            if isinstance(value, gast.Call):
                obj = self._callee(value.func)
                rule = lookup(obj) if obj is not None else None
                if isinstance(obj, np.ufunc) or (rule is not None and rule.fresh):
                    continue
            return True
        return False

    # ----- blocks --------------------------------------------------------------------------------
    def emit_block(self, body: list, s, out: list, kind: str = "effect"):
        """Compile `body` (user statements; for "value" an expression) into a block and emit its
        call ("effect", "raise"); for "value" return the call (an f-string's value)."""
        scan = self._scan()
        parsed = self.state.frame.parsed
        nodes = list(body)
        if any(isinstance(n, gast.NamedExpr) for x in nodes for n in iter_nodes(x)) and kind != "effect":
            raise self.error(UnsupportedSyntaxError, "s2s does not support `:=` inside a statement it runs as "
                             "written (a raise, an f-string)", s, "assign on a separate line")
        for bound in stored_names(nodes):
            if bound in self.state.frame.locals and scan.read_after(bound, s) and kind in ("effect", "value"):
                raise self.error(UnsupportedSyntaxError, f"`{bound}` is bound in a statement s2s runs as written "
                                 "(it does not touch the maths) and read afterwards", s,
                                 f"assign `{bound}` on a line of its own")
        params = [n for n in loaded_names(nodes) if n in self.state.frame.locals and
                  (kind == "value" or scan.bound_outside(n, s))]
        fname = f"{kind}_L{getattr(s, 'lineno', 0)}"
        fn = compile_block(parsed.namespace, parsed.source.filename, body, params, fname,
                           "value" if kind == "value" else "exec")
        block = name(self._bind_object(fname, fn))
        values = [self.arg_atom(copy_loc(gast.Name(p, gast.Load(), None, None), s), out) for p in params]
        if kind == "value":
            return self.call_rule(rte.format_value, [block] + values, s)
        where = const(self._where(s))
        if kind == "raise":
            call = self.call_rule(rte.raise_block, [block, where] + values, s)
        else:
            unsafe, receivers, handed = self._block_safety(nodes)
            top = self.state.frame.parsed is self.state.top
            checks = []
            for p in params:
                c = rte.RECEIVER if p in receivers else 0
                if p in handed and (not top or scan.read_after(p, s) or self._may_view(p)):
                    c |= rte.READ_LATER
                checks.append(const(c))
            if unsafe:
                for g in loaded_names(nodes):
                    if g not in self.state.frame.locals and isinstance(parsed.namespace.get(g), np.ndarray):
                        raise self.error(UnsupportedSyntaxError, f"this statement reads the global array `{g}` "
                                         "and calls code s2s cannot read, which may change it in place", s,
                                         f"pass a copy (`np.copy({g})`), or do it outside the transformed function")
            call = self.call_rule(rte.effect, [block, where, const(unsafe),
                                               gast.Tuple([const(p) for p in params], gast.Load()),
                                               gast.Tuple(checks, gast.Load())] + values, s)
        out.append(copy_loc(gast.Expr(value=call), s))
        return None

    def effects_only(self, stmts: list, s) -> bool:
        """Statements that only have effects: no name they bind is read after `s` (or in a loop
        around it), no indexed or attribute write, nothing leaves them (return, an outer loop's
        break/continue) -- they can run as one block."""
        if leaves(stmts) is not None:
            return False
        scan = self._scan()
        for n in (x for st in stmts for x in iter_nodes(st)):
            if isinstance(n, (gast.Subscript, gast.Attribute)) and isinstance(getattr(n, "ctx", None),
                                                                            (gast.Store, gast.Del)):
                return False
            if isinstance(n, (gast.FunctionDef, gast.ClassDef, gast.Global, gast.Nonlocal, gast.Delete)):
                return False
        return not any(scan.read_after(bound, s) for bound in stored_names(stmts))

    # ----- statements and expressions ------------------------------------------------------------
    def stmt_Expr(self, s):
        v = s.value
        if isinstance(v, gast.Call):
            if self._callee(v.func) is builtins.print:
                if all(isinstance(a, (gast.Name, gast.Constant)) for a in list(v.args) +
                       [k.value for k in v.keywords]):
                    return super().stmt_Expr(s)       # print(x): its rule (Numba prints it under jit)
                out: list = []
                self.emit_block([s], s, out)         # print(f"...", x.item()): as written
                return out, False
            if self._runtime_callee(v.func) is None and self.is_effect_call(v):
                out = []
                self.emit_block([s], s, out)
                return out, False
        elif isinstance(v, gast.JoinedStr):
            return [], False
        return super().stmt_Expr(s)

    def stmt_Raise(self, s):
        out: list = []
        self.emit_block([s], s, out, kind="raise")
        return out, False

    def stmt_Assert(self, s):
        if s.msg is None or isinstance(s.msg, gast.Constant):
            return super().stmt_Assert(s)
        if not __debug__:        # (python -O: asserts do not run)
            return [], False
        out: list = []
        test = self.atom(s.test, out)
        failed = self.state.namer.temp()
        out.append(assign(failed, gast.UnaryOp(gast.Not(), test), s))
        exc = copy_loc(gast.Call(func=copy_loc(gast.Name("AssertionError", gast.Load(), None, None), s),
                                 args=[s.msg], keywords=[]), s)
        body: list = []
        self.emit_block([copy_loc(gast.Raise(exc=exc, cause=None), s)], s, body, kind="raise")
        out.append(copy_loc(gast.If(test=name(failed), body=body, orelse=[]), s))
        return out, False

    def expr_JoinedStr(self, node, out):
        return self.emit_block([node], node, out, kind="value")

    def expr_NamedExpr(self, node, out):
        target = node.target
        if not isinstance(target, gast.Name):
            raise self.error(UnsupportedSyntaxError, "unsupported `:=` target", node, "assign to a plain name")
        scan = self._scan()
        holder = max((st for st in iter_nodes(self.state.frame.parsed.node) if isinstance(st, gast.stmt)
                      and st is not self.state.frame.parsed.node and contains(st, node)),
                     key=lambda st: (st.lineno, st.col_offset), default=None)
        if holder is not None:
            for n in scan.names.get(target.id, ()):
                if isinstance(n.ctx, gast.Load) and contains(holder, n) and not contains(node, n) \
                        and (n.lineno, n.col_offset) < (node.lineno, node.col_offset):
                    raise self.error(UnsupportedSyntaxError, f"this expression reads `{target.id}` before the `:=` "
                                     "that assigns it", n, f"assign `{target.id}` on a separate line first")
        self.assign_to(target, node.value, out, node)
        var = self.state.frame.rename[target.id]
        return self.aggregate_or_name(var) if var in self.state.aggregates else name(var)

    def stmt_Delete(self, s):
        scan = self._scan()
        for t in s.targets:
            if not isinstance(t, gast.Name):
                raise self.error(UnsupportedSyntaxError, "s2s supports `del name` only", s,
                                 "let the value go out of scope, or write into a new array instead of deleting "
                                 "elements")
            if t.id not in self.state.frame.locals:
                raise self.error(UnsupportedSyntaxError, f"`del {t.id}`: `{t.id}` is not a local variable", s,
                                 "delete only variables the function assigns")
            for later in (scan.first_use_after(t.id, s), scan.first_use_in_loop(t.id, s)):
                if later is not None and not isinstance(later.ctx, gast.Store):
                    raise self.error(UnsupportedSyntaxError, f"`{t.id}` is read after `del {t.id}`", later,
                                     f"Python raises UnboundLocalError here: assign `{t.id}` again first")
        return [], False

    def stmt_Import(self, s):
        for alias in s.names:
            try:
                module = importlib.import_module(alias.name)
                value = module if alias.asname else importlib.import_module(alias.name.split(".")[0])
            except ImportError as exc:
                raise self.error(TransformError, f"cannot import {alias.name}: {exc}", s,
                                 "s2s imports it when it transforms the function: install it, or import it "
                                 "at module level") from None
            self._bind_import(alias.asname or alias.name.split(".")[0], value, s)
        return [], False

    def stmt_ImportFrom(self, s):
        package = None
        mod = sys.modules.get(getattr(self.state.frame.parsed.fn, "__module__", "") or "")
        if s.level:
            package = getattr(mod, "__package__", None) or (mod.__name__ if mod else None)
        target = "." * (s.level or 0) + (s.module or "")
        try:
            modname = importlib.util.resolve_name(target, package) if s.level else s.module
            module = importlib.import_module(modname)
        except (ImportError, ValueError) as exc:
            raise self.error(TransformError, f"cannot import {target}: {exc}", s,
                             "s2s imports it when it transforms the function: install it, or import it "
                             "at module level") from None
        for alias in s.names:
            if alias.name == "*":
                raise self.error(UnsupportedSyntaxError, "s2s does not support `from ... import *` in a function", s,
                                 "import the names you use")
            if hasattr(module, alias.name):
                value = getattr(module, alias.name)
            else:
                try:
                    value = importlib.import_module(f"{modname}.{alias.name}")
                except ImportError:
                    raise self.error(TransformError, f"cannot import {alias.name} from {modname}", s,
                                     "check the name") from None
            self._bind_import(alias.asname or alias.name, value, s)
        return [], False

    def _bind_import(self, bound: str, value, s) -> None:
        if bound in self.state.frame.locals:
            raise self.error(UnsupportedSyntaxError, f"`{bound}` is both imported and assigned in this function", s,
                             "use different names for the imported object and the variable")
        self.state.frame.parsed.namespace[bound] = value

    def stmt_For(self, s):
        if s.orelse:
            return self._loop_else(s)
        return super().stmt_For(s)

    def stmt_While(self, s):
        if s.orelse:
            return self._loop_else(s)
        return super().stmt_While(s)

    def _loop_else(self, s):
        """`else` of a loop: runs when the loop ends without `break` (a flag set before each)."""
        flag = self.state.namer.fresh("no_break")
        self.state.frame.locals.add(flag)
        self.state.frame.rename[flag] = flag
        self.stores_in_frame()[flag] = 2        # (assigned again by each break: not a constant)
        loop = copy.copy(s)
        loop.orelse = []
        loop.body = _flag_breaks(s.body, flag)
        init = copy_loc(gast.Assign(targets=[copy_loc(gast.Name(flag, gast.Store(), None, None), s)],
                                    value=copy_loc(gast.Constant(True, None), s), type_comment=None), s)
        after = copy_loc(gast.If(test=copy_loc(gast.Name(flag, gast.Load(), None, None), s), body=s.orelse,
                                 orelse=[]), s.orelse[0])
        return self.stmts([init, loop, after])

    # ----- generated code read again (derivatives of derivatives) --------------------------------
    def _runtime_callee(self, func):
        if not isinstance(func, gast.Name) or func.id in self.state.frame.locals:
            return None
        obj = self.state.frame.parsed.namespace.get(func.id)
        return obj if any(obj is f for f in (rte.effect, rte.raise_block, rte.format_value, rte.with_start,
                                             rte.try_start, rte.region_end, rte.region_context,
                                             rte.handle_exception)) else None

    def _rebind(self, node, out):
        """An argument of s2s's own effect calls in generated code read again."""
        if isinstance(node, gast.Constant):
            return const(node.value)
        if isinstance(node, gast.Tuple):
            return gast.Tuple([self._rebind(e, out) for e in node.elts], gast.Load())
        if isinstance(node, gast.Name) and node.id not in self.state.frame.locals:
            return name(self._bind_object(node.id, self.lookup_global(node)))
        return self.arg_atom(node, out)

    def expr_Call(self, node, out):
        fn = self._runtime_callee(node.func)
        if fn is not None and fn not in (rte.region_context, rte.handle_exception):
            call = self.call_rule(fn, [self._rebind(a, out) for a in node.args], node)
            return call
        return super().expr_Call(node, out)

def _flag_breaks(stmts: list, flag: str) -> list:
    """A copy of a loop body in which each `break` of the loop first clears `flag`."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Break):
            clear = copy_loc(gast.Assign(targets=[copy_loc(gast.Name(flag, gast.Store(), None, None), s)],
                                         value=copy_loc(gast.Constant(False, None), s), type_comment=None), s)
            out += [clear, s]
        elif isinstance(s, gast.If):
            new = copy.copy(s)
            new.body, new.orelse = _flag_breaks(s.body, flag), _flag_breaks(s.orelse, flag)
            out.append(new)
        elif isinstance(s, gast.With):
            new = copy.copy(s)
            new.body = _flag_breaks(s.body, flag)
            out.append(new)
        elif isinstance(s, gast.Try):
            new = copy.copy(s)
            new.body, new.orelse = _flag_breaks(s.body, flag), _flag_breaks(s.orelse, flag)
            new.handlers = []
            for h in s.handlers:
                h2 = copy.copy(h)
                h2.body = _flag_breaks(h.body, flag)
                new.handlers.append(h2)
            out.append(new)
        else:
            out.append(s)
    return out


def _names_handed(exprs: list) -> set[str]:
    """Names the expressions pass on as they are (or a view of them): not inside an f-string, whose
    value is a new string."""
    out, todo = set(), list(exprs)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.JoinedStr):
            continue
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            out.add(n.id)
        todo.extend(c for c in gast.iter_child_nodes(n))
    return out
