"""`with` and `try` statements in a differentiated function (the part of frontend/effects.py that
keeps them): made only of statements that run as written, they run as one block; around
statements that compute values, the body is normalized between two markers that
codegen/regions.py turns back into a `with` / `try` block of the forward sweep (effects.py's
docstring states what is honoured and what is refused).
"""
from __future__ import annotations

import builtins
import contextlib
import copy

import gast
import numpy as np

from ..runtime import effects as rte
from ..errors import UnsupportedSyntaxError
from .ast_build import const, copy_loc, name
from .effect_blocks import always_raises, compile_block, contains, leaves, loaded_names
from .nodes import iter_nodes


class ContextRegions:
    """`with` / `try` part of `SideEffects` (effects.py), whose methods it uses (`effects_only`,
    `emit_block`, `is_effect_call`, `_callee`, `_scan`, `_bind_object`, `_where`, `_rebind`,
    `_runtime_callee`); and those of `Normalizer`'s other parts: `stmts`, `guard_flag`,
    `arg_atom`, `call_rule`, `error`. Fields of `self.state` (normalize_state.py) it uses:
    `frame`, `namer`."""

    # ----- with and try --------------------------------------------------------------------------
    def _refuse_leaving(self, s, parts: list) -> None:
        if self.state.frame.loops:
            found = leaves(parts)
            if found is not None:
                raise self.error(UnsupportedSyntaxError, "s2s does not support `return`, `break` or `continue` inside "
                                 "a `with` or `try` block inside a loop", found,
                                 "set a flag inside the block and leave the loop after it")

    def stmt_With(self, s):
        own = self._generated_with(s)
        if own is not None:
            return own
        self._refuse_leaving(s, s.body)
        if self.effects_only([s], s):
            out: list = []
            self.emit_block([s], s, out)
            return out, False
        return self._with_region(s, list(s.items))

    def _with_region(self, s, items: list):
        item = items[0]
        ctx = item.context_expr
        cm = self._callee(ctx.func if isinstance(ctx, gast.Call) else ctx)
        if cm is contextlib.suppress:
            raise self.error(UnsupportedSyntaxError, "s2s does not support `contextlib.suppress` around statements "
                             "that compute values: after an exception the statements after it would run with "
                             "values the derivative did not see", s,
                             "catch the exception outside the differentiated function")
        as_name = None
        target = item.optional_vars
        if target is not None:
            if not isinstance(target, gast.Name):
                raise self.error(UnsupportedSyntaxError, "s2s supports `with ... as name` only", s,
                                 "bind the context's value to one name")
            offending = self._used_outside_effects(target.id, s.body)
            if offending is None and self._scan().read_after(target.id, s):
                offending = s
            if offending is not None:
                raise self.error(UnsupportedSyntaxError, f"the value of `with ... as {target.id}` is used in the maths "
                                 "(s2s enters the context when the code runs: it cannot follow its value)",
                                 offending, f"use `{target.id}` only in calls for their effect (logging, "
                                 "progress bars), or move the `with` outside the differentiated function")
            as_name = self.state.frame.rename[target.id]
        out: list = []
        scan = self._scan()
        params = [n for n in loaded_names([ctx]) if n in self.state.frame.locals and scan.bound_outside(n, s)]
        block, params, values = self._value_block(ctx, s, out, params)
        key = const(self.state.namer.fresh("region"))
        payload = [const(self._where(s)), const(cm is np.errstate), const(as_name), block] + values
        out.append(copy_loc(gast.Expr(value=self.call_rule(rte.with_start, [key] + payload, s)), s))
        if len(items) > 1:
            body, exits = self._with_region(s, items[1:])
        else:
            body, exits = self.stmts(s.body)
        out += body
        end = self.call_rule(rte.region_end, [key] + [copy.deepcopy(p) for p in payload], s)
        out.append(copy_loc(gast.Expr(value=end), s))
        return out, exits

    def _value_block(self, expr, s, out, params):
        parsed = self.state.frame.parsed
        fname = f"context_L{getattr(s, 'lineno', 0)}"
        fn = compile_block(parsed.namespace, parsed.source.filename, [expr], params, fname, "value")
        block = name(self._bind_object(fname, fn))
        values = [self.arg_atom(copy_loc(gast.Name(p, gast.Load(), None, None), s), out) for p in params]
        return block, params, values

    def _used_outside_effects(self, ident: str, stmts: list):
        """The first statement of `stmts` that reads `ident` other than as a block (None if none)."""
        for st in stmts:
            reads = any(isinstance(n, gast.Name) and n.id == ident and isinstance(n.ctx, gast.Load)
                        for n in iter_nodes(st))
            if not reads:
                continue
            if isinstance(st, gast.Raise):
                continue
            if isinstance(st, gast.Expr) and isinstance(st.value, gast.Call) and (
                    self.is_effect_call(st.value) or self._callee(st.value.func) is builtins.print):
                continue
            if isinstance(st, (gast.With, gast.Try)) and self.effects_only([st], st):
                continue
            if isinstance(st, gast.If) and not _reads(st.test, ident):
                found = self._used_outside_effects(ident, st.body) or self._used_outside_effects(ident, st.orelse)
            elif isinstance(st, gast.For) and not _reads(st.iter, ident):
                found = self._used_outside_effects(ident, st.body) or self._used_outside_effects(ident, st.orelse)
            elif isinstance(st, gast.While) and not _reads(st.test, ident):
                found = self._used_outside_effects(ident, st.body) or self._used_outside_effects(ident, st.orelse)
            elif isinstance(st, gast.With) and not any(_reads(i.context_expr, ident) for i in st.items):
                found = self._used_outside_effects(ident, st.body)
            else:
                found = st
            if found is not None:
                return found
        return None

    def stmt_Try(self, s):
        own = self._generated_try(s)
        if own is not None:
            return own
        self._refuse_leaving(s, s.body + s.orelse + s.finalbody + [x for h in s.handlers for x in h.body])
        left = leaves(s.finalbody)
        if left is not None:
            raise self.error(UnsupportedSyntaxError, "s2s does not support `return`, `break` or `continue` in "
                             "`finally` (it would swallow the exception)", left, "move it after the try statement")
        if self.effects_only([s], s):
            out: list = []
            self.emit_block([s], s, out)
            return out, False
        for h in s.handlers:
            if not always_raises(h.body):
                raise self.error(UnsupportedSyntaxError, "s2s does not support an `except` clause that can end without "
                                 "raising around statements that compute values: which statements ran would decide "
                                 "the derivative", h,
                                 "re-raise in the clause (`raise ValueError(...) from e`), compute the fallback "
                                 "with an `if` instead, or move the try/except outside the differentiated function")
        return self._try_region(s)

    def _try_region(self, s):
        out: list = []
        body, exits = self._guarded_region(s, s.body, s.handlers, s.finalbody, out)
        out += body
        if s.orelse:
            pre: list = []
            if s.finalbody:
                inner, e2 = self._guarded_region(s, s.orelse, [], s.finalbody, pre)
            else:
                inner, e2 = self.stmts(s.orelse)
            inner = pre + inner
            if exits and inner:
                inner = [copy_loc(gast.If(test=name(self.guard_flag()), body=inner, orelse=[]), s.orelse[0])]
            out += inner
            exits = exits or e2
        if s.finalbody:
            fin, e3 = self.stmts(s.finalbody)
            out += fin
            exits = exits or e3
        return out, exits

    def _guarded_region(self, s, body_src: list, handlers: list, finalbody: list, out: list):
        """try_start; body; region_end, the except path running `handlers` and `finalbody`."""
        scan = self._scan()
        spans = list(handlers) + list(finalbody)
        params = [n for n in loaded_names(spans) if n in self.state.frame.locals and (
            n in scan.params or any(isinstance(x.ctx, gast.Store) and not any(contains(sp, x) for sp in spans)
                                    for x in scan.names.get(n, ())))]
        parsed = self.state.frame.parsed
        fname = f"except_L{getattr(s, 'lineno', 0)}"
        fn = compile_block(parsed.namespace, parsed.source.filename, [], params, fname, "handler",
                           handlers, finalbody)
        block = name(self._bind_object(fname, fn))
        values = [self.arg_atom(copy_loc(gast.Name(p, gast.Load(), None, None), s), out) for p in params]
        return self._emit_try(s, block, params, values, body_src)

    def _emit_try(self, s, block, params, values, body_src):
        key = const(self.state.namer.fresh("region"))
        start = self.call_rule(rte.try_start, [key, const(self._where(s)), block,
                                               gast.Tuple([const(p) for p in params], gast.Load())] + values, s)
        code = [copy_loc(gast.Expr(value=start), s)]
        body, exits = self.stmts(body_src)
        code += body
        code.append(copy_loc(gast.Expr(value=self.call_rule(rte.region_end, [copy.deepcopy(key)], s)), s))
        return code, exits


    # ----- generated code read again (derivatives of derivatives) --------------------------------
    def _generated_with(self, s):
        """`with region_context(block, where, errstate, values...) as v:` of generated code."""
        if len(s.items) != 1 or not isinstance(s.items[0].context_expr, gast.Call):
            return None
        ctx = s.items[0].context_expr
        if self._runtime_callee(ctx.func) is not rte.region_context:
            return None
        out: list = []
        block, where, errstate, *values = [self._rebind(a, out) for a in ctx.args]
        target = s.items[0].optional_vars
        as_name = self.state.frame.rename[target.id] if isinstance(target, gast.Name) else None
        key = const(self.state.namer.fresh("region"))
        payload = [where, errstate, const(as_name), block] + values
        out.append(copy_loc(gast.Expr(value=self.call_rule(rte.with_start, [key] + payload, s)), s))
        body, exits = self.stmts(s.body)
        out += body
        end = self.call_rule(rte.region_end, [key] + [copy.deepcopy(p) for p in payload], s)
        out.append(copy_loc(gast.Expr(value=end), s))
        return out, exits

    def _generated_try(self, s):
        """`try: ... except BaseException as e: handle_exception(e, block, where, locals(), bindings)`."""
        if len(s.handlers) != 1 or s.orelse or s.finalbody or len(s.handlers[0].body) != 1:
            return None
        call = s.handlers[0].body[0]
        call = call.value if isinstance(call, gast.Expr) else None
        if not isinstance(call, gast.Call) or self._runtime_callee(call.func) is not rte.handle_exception:
            return None
        out: list = []
        block = self._rebind(call.args[1], out)
        where = call.args[2].value
        params, values = [], []
        for triple in call.args[4].elts:
            user, generated, constant = (e.value for e in triple.elts)
            if generated is not None and generated not in self.state.frame.locals:
                continue
            params.append(user)
            values.append(const(constant) if generated is None else
                          self.arg_atom(copy_loc(gast.Name(generated, gast.Load(), None, None), s), out))
        key = const(self.state.namer.fresh("region"))
        start = self.call_rule(rte.try_start, [key, const(where), block,
                                               gast.Tuple([const(p) for p in params], gast.Load())] + values, s)
        out.append(copy_loc(gast.Expr(value=start), s))
        body, exits = self.stmts(s.body)
        out += body
        out.append(copy_loc(gast.Expr(value=self.call_rule(rte.region_end, [copy.deepcopy(key)], s)), s))
        return out, exits



def _reads(node, ident: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == ident and isinstance(n.ctx, gast.Load) for n in iter_nodes(node))
