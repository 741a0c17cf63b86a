"""Reverse mode: an ANF function -> ANF source of its vector-Jacobian product.

The generated function runs a forward sweep (the user's code, plus pushes of
what the backward sweep needs onto one tape) and then a backward sweep (each
statement's adjoint from the rule table, in reverse order).

How values are kept right for the backward sweep (Tangent's scheme):
- a variable assigned more than once, or inside a loop, has its old value
  pushed before each assignment and popped back after that assignment's
  adjoint has run; an indexed write saves the slot it overwrites;
- an `if` replays the branch taken (its condition, popped if the branch
  could change it); a `for i in range(...)` replays `reversed(range(...))`;
  a `while` pushes its trip count;
- saves whose variable the backward sweep never reads are dropped afterwards.

Adjoints are tracked symbolically: an adjoint is ZERO until something flows
into it (no `dx = 0` code), OWNED when it is an array only it refers to (so
in-place updates are safe), SHARED when it may alias another value, MAYBE when
it is a materialized scalar 0.0 that may have to become an array.  Control
flow joins materialize zeros where paths disagree.

The emitted code uses only constructs that have rules (tape push/pop, add_at,
unbroadcast, ...), so it can be transformed again: derivatives of any order.
"""
from __future__ import annotations

import builtins
import dataclasses
from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from ..runtime import batching as rtb
from ..runtime import effects as rte
from ..analysis.activity import activity
from ..analysis.aliasing import alias_conflicts, fresh_arrays
from ..analysis.remat import rematerializable
from ..analysis.saves import filter_saves, names_read, saved_candidates, strip_loops_over
from ..errors import NoRuleError, NonDifferentiableError, UnsupportedSyntaxError
from ..frontend.annotations import (DEFINED_BEFORE, GRAD_OF, POPPED_TEST, SAVE_KEY, SECTION, TAPE_KEY, TRIPS,
                                    UNSAVED, getanno, setanno)
from ..frontend.ast_build import assign, const, copy_loc, name, walk_stmts as _walk_stmts
from ..frontend.normalize import NormalizedFunction
from ..frontend.nodes import clone, iter_nodes, mentions, names_in
from .common import (MAYBE, OWNED, SHARED, ZERO, copy_written_arguments, expr_stmt, index_expr, join_states, op_rule,
                     renamed, rule_call, same_shape_as)
from .derivative_core import DerivativeBuilder


@dataclasses.dataclass
class ReverseSpec:
    wrt: list[str]                 # parameters to differentiate (normalized names)
    mode: str                      # "grad" | "value_and_grad" | "vjp"
    has_aux: bool = False
    tuple_out: bool = False        # argnums was a tuple: return a tuple of gradients
    name: str = "grad"
    tapes: str = "single"          # "single": one tape (readable, any order); "per_variable": one typed
                                   # tape per saved value, pushed after assignment (Numba-compilable)


class ReverseBuilder(DerivativeBuilder):
    which = "adjoint"
    deriv_word = "gradient"

    def __init__(self, nf: NormalizedFunction, spec: ReverseSpec):
        super().__init__(nf)
        self.spec = spec
        fdef = nf.node
        self.tape = None
        self.preinit: set[str] = set()
        self.typed = spec.tapes == "per_variable"
        self.tapes: dict[str, str] = {}
        self.unsaved_targets: set[str] = set()
        self.fresh_arrays = fresh_arrays(fdef.body)
        self.written = {s.targets[0].value.id for s in _walk_stmts(fdef.body)
                        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript)} | {
            s.value.args[0].id for s in _walk_stmts(fdef.body)
            if isinstance(s, gast.Expr) and getattr(s.value, "s2s_fn", None) is rt.add_at}

    # ----- helpers ----------------------------------------------------------
    def spell_deriv(self, var: str) -> str:
        return "d" + var

    adj = DerivativeBuilder.deriv      # (reverse mode's derivative is the adjoint)

    def tape_name(self, key: str | None = None) -> str:
        if not self.typed:
            if self.tape is None:
                self.tape = self.namer.fresh("tape")
            return self.tape
        if key not in self.tapes:
            self.tapes[key] = self.namer.fresh(f"tape_{key}")
        return self.tapes[key]

    def push(self, value, key: str | None = None) -> gast.Expr:
        return expr_stmt(rule_call(rt.push, [name(self.tape_name(key)), value]))

    def pop(self, key: str | None = None) -> gast.Call:
        return rule_call(rt.pop, [name(self.tape_name(key))])

    # ----- analysis of the primal ------------------------------------------------
    def _check_aliases(self, body) -> None:
        """Refuse whole-array reads (copies, views) of a written array that a later write could change."""
        for st, var, arr in alias_conflicts(body)[:1]:
            raise self.aliasing_error(st, var, arr)

    def _check_loop_variables(self, body) -> None:
        """The backward sweep replays a loop by its index: the body must not assign to it."""
        for s in _walk_stmts(body):
            if isinstance(s, gast.For) and isinstance(s.target, gast.Name):
                for st in _walk_stmts(s.body):
                    if isinstance(st, gast.Assign) and any(
                            isinstance(n, gast.Name) and n.id == s.target.id and isinstance(n.ctx, gast.Store)
                            for n in iter_nodes(st.targets[0])):
                        raise self.error(UnsupportedSyntaxError,
                                         f"the loop variable `{s.target.id}` is assigned inside its loop; s2s "
                                         f"replays loops by their index and cannot differentiate that", st,
                                         f"assign to a new name, e.g. `j = ...`, and use it instead of "
                                         f"`{s.target.id}`")

    # ----- entry ----------------------------------------------------------------
    def build(self) -> gast.FunctionDef:
        fdef = self.nf.node
        body = list(fdef.body)
        ret = body.pop()
        assert isinstance(ret, gast.Return)
        out_node, aux_node = self._split_output(ret)
        out_name = out_node.id if isinstance(out_node, gast.Name) else None
        self.saved = saved_candidates(body, self.nf.params)
        self._check_aliases(body)
        self._check_loop_variables(body)
        # Loop temporaries the backward sweep recomputes instead of saving.
        effects = {s.value.args[0].id for s in _walk_stmts(body) if isinstance(s, gast.Expr)
                   and isinstance(s.value, gast.Call) and s.value.args and isinstance(s.value.args[0], gast.Name)}
        self.remat = rematerializable(body, self.nf.params, self.written | effects)
        self.saved -= set(self.remat)
        self.active = activity(body, self.spec.wrt, [out_name] if out_name else [])
        for p in self.spec.wrt:
            self.adj(p)

        # Typed tapes hold each value after its assignment, so the value of an argument before its
        # first reassignment is on no tape: the backward sweep reads it from a copy made at entry.
        self.entry = {p: self.namer.fresh(p + "_entry") for p in self.nf.params if self.typed and p in self.saved}
        # Forward sweep (also decides what to push).
        fwd = self.fwd_block(body, set(self.nf.params))
        fwd[:0] = [self._mark(copy_loc(assign(e, name(p)), fdef), p) for p, e in self.entry.items()]
        # Seed and backward sweep.
        state: dict[str, str] = {}
        seed_stmts: list = []
        extra_params: list[str] = []
        if self.spec.mode == "vjp":
            ct = self.adj(out_name) if out_name else self.namer.fresh("dout")
            extra_params.append(ct)
            if out_name:
                state[out_name] = SHARED
        else:
            seed_call = rule_call(rt.seed_cotangent, [clone(out_node)])
            if out_name and out_name in self.active:
                seed_stmts.append(copy_loc(assign(self.adj(out_name), seed_call), ret))
                state[out_name] = SHARED
            else:
                seed_stmts.append(copy_loc(expr_stmt(seed_call), ret))
        bwd = self.rev_block(body, state)
        # The backward sweep restores overwritten values: keep what we return.
        returned = [aux_node] if aux_node is not None else []
        if self.spec.mode == "value_and_grad":
            returned.append(out_node)
        snap: dict[str, str] = {}
        loop_targets = {s.target.id for s in _walk_stmts(body) if isinstance(s, gast.For)
                        and isinstance(s.target, gast.Name)}   # the backward loops rebind them
        for node in returned:
            for n in iter_nodes(node):
                if isinstance(n, gast.Name) and (n.id in self.saved or n.id in self.remat or n.id in self.written
                                                 or n.id in loop_targets) and n.id not in snap:
                    snap[n.id] = self.namer.fresh(n.id + "_value")
        if snap:
            seed_stmts[:0] = [copy_loc(assign(new, rule_call(np.copy, [name(old)]) if old in self.written
                                              else name(old)), ret) for old, new in snap.items()]
            out_node, aux_node = (renamed(n, snap) for n in (out_node, aux_node))
        # Gradients of the inputs.
        outs: list = []
        for p in self.spec.wrt:
            dp = self.adj(p)
            st = state.get(p, ZERO)
            if st == ZERO:
                outs.append(assign(dp, rule_call(rt.zeros_like, [name(p)])))
            elif st == MAYBE:
                outs.append(assign(dp, gast.BinOp(name(dp), gast.Add(), rule_call(rt.zeros_like, [name(p)]))))
        for s in outs:
            copy_loc(s, ret)

        # Drop saves/restores of variables the backward sweep never reads.
        needed = names_read(bwd + outs)
        # A loop variable needs restoring only if read outside the loops that set it.
        for tgt in {s.target.id for s in _walk_stmts(body) if isinstance(s, gast.For)}:
            if tgt in names_read(strip_loops_over(bwd + outs, tgt)):
                needed.add("for:" + tgt)
        fwd = filter_saves(fwd, needed)
        bwd = filter_saves(bwd, needed)
        pre: list = [assign(v, const(None)) for v in sorted(self.preinit) if v in needed]
        used = {n.id for s in fwd + bwd for n in iter_nodes(s) if isinstance(n, gast.Name)}
        for tape in ([self.tape] if self.tape else []) + list(self.tapes.values()):
            if tape in used:
                pre.append(assign(tape, rule_call(rt.stack, [])))
        for tgt in {t for t in self.unsaved_targets if "for:" + t in needed}:
            raise self.error(UnsupportedSyntaxError,
                             f"the loop variable `{tgt}` is reused in a way the compiled (typed-tape) code cannot "
                             f"restore", fdef, "use a different name for each loop's variable")
        for s in pre:
            copy_loc(s, fdef)

        grads = [name(self.adj(p)) for p in self.spec.wrt]
        grad_value = gast.Tuple(grads, gast.Load()) if (self.spec.tuple_out or self.spec.mode == "vjp") else grads[0]
        if self.spec.mode == "vjp":
            result = grad_value
        elif self.spec.mode == "grad":
            result = gast.Tuple([grad_value, aux_node], gast.Load()) if self.spec.has_aux else grad_value
        else:
            value = gast.Tuple([out_node, aux_node], gast.Load()) if self.spec.has_aux else out_node
            result = gast.Tuple([clone(value), grad_value], gast.Load())
        final = copy_loc(gast.Return(value=result), ret)
        final.s2s_src = None
        for s in fwd[:1]:
            setanno(s, SECTION, "forward sweep")
        first_bwd = ([s for s in seed_stmts if not isinstance(s.targets[0] if isinstance(s, gast.Assign) else None,
                                                             gast.Name) or not s.targets[0].id.endswith("_value")]
                     + bwd)[:1]
        for s in first_bwd:
            setanno(s, SECTION, "backward sweep")
        args = clone(fdef.args)
        args.args = [gast.Name(p, gast.Param(), None, None) for p in extra_params] + args.args
        new = gast.FunctionDef(name=self.spec.name, args=args,
                               body=pre + fwd + seed_stmts + bwd + outs + [final],
                               decorator_list=[], returns=None, type_comment=None, type_params=[])
        copy_loc(new, fdef)
        return new

    def _split_output(self, ret):
        value = ret.value
        if self.spec.has_aux:
            if not (isinstance(value, gast.Tuple) and len(value.elts) >= 2):
                raise self.error(NonDifferentiableError,
                                 "has_aux=True needs the function to return a pair (output, aux)", ret,
                                 "return the value and the auxiliary data as `return loss, aux`")
            aux = value.elts[1] if len(value.elts) == 2 else gast.Tuple(value.elts[1:], gast.Load())
            value = value.elts[0]
        else:
            aux = None
        if isinstance(value, gast.Tuple):
            what = "grad" if self.spec.mode != "vjp" else "vjp"
            raise self.error(NonDifferentiableError, f"{what} needs a single array output, but the function returns a tuple",
                             ret, "return one value, or use has_aux=True to return (value, aux)")
        return value, aux

    # ----- forward sweep ----------------------------------------------------------
    def fwd_block(self, stmts: list, defined: set[str]) -> list:
        out: list = []
        for s in stmts:
            if isinstance(s, (gast.If, gast.For, gast.While)):     # (read by rev_if and the loops)
                setanno(s, DEFINED_BEFORE, set(defined))
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                v = s.targets[0].id
                if v in self.saved and self.typed:
                    # typed tapes keep the value *after* each assignment: no placeholder needed
                    out.append(s)
                    out.append(self._mark(copy_loc(self.push(name(v), "v_" + v), s), v))
                elif v in self.saved:
                    if v not in defined:
                        self.preinit.add(v)
                    out.append(self._mark(copy_loc(self.push(name(v)), s), v))
                    out.append(s)
                else:
                    out.append(s)
                defined.add(v)
            elif isinstance(s, gast.Assign):
                tgt = s.targets[0]
                arr = tgt.value.id
                if arr not in self.fresh_arrays:
                    raise self.write_into_alias_error(arr, s)
                slot = gast.Subscript(name(arr), clone(tgt.slice), gast.Load())
                old = rule_call(rt.copy_value, [slot]) if self.typed else rule_call(np.copy, [slot])
                key = f"{arr}_slot{len(self.tapes)}"
                setanno(s, TAPE_KEY, key)
                out.append(self._mark(copy_loc(self.push(old, key), s), arr))
                out.append(s)
            elif isinstance(s, gast.If):
                test = s.test.id
                changed = test in {n.id for b in (s.body, s.orelse) for x in b for n in iter_nodes(x)
                                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
                popped = None
                if changed:
                    # Remember the branch taken; push it after the branch's own pushes
                    # so the backward sweep pops it first.
                    popped = self.namer.fresh("cond")
                    out.append(copy_loc(assign(popped, name(test)), s))
                setanno(s, POPPED_TEST, popped)
                d1, d2 = set(defined), set(defined)
                new = copy_loc(gast.If(test=s.test, body=self.fwd_block(s.body, d1),
                                       orelse=self.fwd_block(s.orelse, d2)), s)
                defined |= d1 & d2
                out.append(new)
                if changed:
                    out.append(copy_loc(self.push(name(popped), popped), s))
            elif isinstance(s, gast.For):
                tgt = s.target.id
                if tgt in self.saved:
                    if self.typed and tgt not in defined:
                        self.unsaved_targets.add(tgt)
                        setanno(s, UNSAVED, True)
                    else:
                        if tgt not in defined:
                            self.preinit.add(tgt)
                        out.append(self._mark(copy_loc(self.push(name(tgt), "for_" + tgt), s), "for:" + tgt))
                body = self.fwd_block(s.body, set(defined) | {tgt})
                out.append(copy_loc(gast.For(target=s.target, iter=s.iter, body=body, orelse=[],
                                             type_comment=None), s))
            elif isinstance(s, gast.While):
                trips = self.namer.fresh("trips")
                setanno(s, TRIPS, trips)
                out.append(copy_loc(assign(trips, const(0)), s))
                body = [copy_loc(assign(trips, gast.BinOp(name(trips), gast.Add(), const(1))), s)]
                body += self.fwd_block(s.body, set(defined))
                out.append(copy_loc(gast.While(test=s.test, body=body, orelse=[]), s))
                out.append(copy_loc(self.push(name(trips), trips), s))
            else:  # Expr, Assert
                out.append(s)
        return out

    def _mark(self, stmt, key: str):
        setanno(stmt, SAVE_KEY, key)
        return stmt

    # ----- backward sweep -----------------------------------------------------
    def rev_block(self, stmts: list, state: dict[str, str]) -> list:
        out: list = []
        for s in reversed(stmts):
            code = self.rev_stmt(s, state)
            for c in code:
                if not hasattr(c, "lineno"):
                    copy_loc(c, s)
                setanno(c, GRAD_OF, True)
            out += code
        return self._recompute(stmts, out) + out

    def _recompute(self, stmts: list, out: list) -> list:
        """The block's recomputed temporaries that its backward code reads, in forward order."""
        local = [s for s in stmts if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                 and s.targets[0].id in self.remat]
        if not local:
            return []
        reads = names_read(out)
        keep = []
        for s in reversed(local):
            if s.targets[0].id in reads:
                keep.append(s)
                reads |= names_in(s.value)
        code = []
        for s in reversed(keep):
            c = copy_loc(assign(s.targets[0].id, clone(s.value)), s)
            setanno(c, GRAD_OF, True)
            code.append(c)
        return code

    def rev_stmt(self, s, state) -> list:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            return self.rev_assign(s, state)
        if isinstance(s, gast.Assign):
            return self.rev_setitem(s, state)
        if isinstance(s, gast.If):
            return self.rev_if(s, state)
        if isinstance(s, gast.For):
            return self.rev_for(s, state)
        if isinstance(s, gast.While):
            return self.rev_while(s, state)
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            return self.rev_effect(s, state)
        return []

    def accumulate(self, var: str, expr, state, code: list) -> None:
        d = self.adj(var)
        if state.get(var, ZERO) == ZERO:
            code.append(assign(d, expr))
            state[var] = SHARED
        else:
            code.append(assign(d, gast.BinOp(name(d), gast.Add(), expr)))
            state[var] = OWNED

    def materialize(self, var: str, defined: set[str]) -> tuple[Any, str]:
        d = self.adj(var)
        if var in self.stack_vars or var in defined:
            return assign(d, rule_call(rt.zeros_like, [name(var)])), OWNED
        return assign(d, const(0.0)), MAYBE

    def restore(self, var: str, s) -> list:
        if var not in self.saved:
            return []
        if self.typed:   # drop this assignment's value; the previous one is now on top
            before = self.entry.get(var, var)       # (an argument's first value: its entry copy)
            value = rule_call(rt.restore, [name(self.tape_name("v_" + var)), name(before)])
        else:
            value = self.pop()
        return [self._mark(copy_loc(assign(var, value), s), var)]

    def rev_assign(self, s, state) -> list:
        v = s.targets[0].id
        value = s.value
        code: list = []
        if isinstance(value, gast.Name) and value.id == v:
            # `x = x`: nothing changes (its cotangent is its own; resetting it lost the gradient)
            return self.restore(v, s)
        fn = getattr(value, "s2s_fn", None)
        if fn is rt.pop:
            st = value.args[0].id
            if st in self.active:
                self.ensure_owned(st, state, code)
                seed = name(self.adj(v)) if state.get(v, ZERO) != ZERO else const(0.0)
                code.append(expr_stmt(rule_call(rt.push, [name(self.adj(st)), seed])))
        elif v in self.active and state.get(v, ZERO) != ZERO:
            code += self.adjoint_of(v, value, s, state)
        if v in self.active:
            state[v] = ZERO
        return code + self.restore(v, s)

    def adjoint_of(self, v: str, value, s, state) -> list:
        code: list = []
        dv = name(self.adj(v))
        if isinstance(value, gast.Name):
            if value.id in self.active:
                self.accumulate(value.id, dv, state, code)
            return code
        if isinstance(value, (gast.Constant, gast.Compare, gast.Attribute)):
            return code
        if isinstance(value, gast.Subscript):
            base = value.value.id
            if mentions(value.slice, self.active):
                raise self.index_error(s)
            if base in self.active:
                self.ensure_owned(base, state, code)
                index = index_expr(value.slice)
                code.append(expr_stmt(rule_call(rt.add_at, [name(self.adj(base)), index, dv])))
            return code
        if isinstance(value, gast.Call) and getattr(value, "s2s_fn", None) is rt.choose:
            index, options = value.args[0], value.args[1:]
            for k, opt in enumerate(options):
                if isinstance(opt, gast.Name) and opt.id in self.active:
                    self.accumulate(opt.id, rule_call(rt.pick_cotangent, [dv, clone(index), const(k), name(opt.id)]),
                                    state, code)
            return code
        if getattr(value, "s2s_fn", None) in (rt.call_opaque, rt.call_method) and not mentions(value, self.active):
            return code           # (code s2s does not read, reached by no derivative: `x = rng.normal(...)`)
        found = op_rule(self, value, s, "adjoint")
        if found is None:
            return code
        rule, args, kws = found
        tmpl = rule.adjoint
        bindings = self.bind_template(rule, tmpl, v, args, kws, s)
        local, contribs = self.apply_template(tmpl, bindings, dv)
        self.refuse_undifferentiated(rule, tmpl, bindings, {c.param for c in contribs},
                                     lambda node: mentions(node, self.active), s)
        used = [c for c in contribs if isinstance(c.target, gast.Name) and c.target.id in self.active]
        # A list/tuple argument (np.stack([a, b])): the contribution is a list of cotangents.
        # Nested literals (np.array([[a, b], [c, d]])) get nested lists of cotangents.
        listed = [c for c in contribs if isinstance(c.target, (gast.Tuple, gast.List)) and any(
            isinstance(n, gast.Name) and n.id in self.active for n in iter_nodes(c.target))]
        for c in contribs:
            if not isinstance(c.target, (gast.Name, gast.Tuple, gast.List)) and any(
                    isinstance(n, gast.Name) and n.id in self.active for n in iter_nodes(c.target)):
                raise self.error(NoRuleError, f"s2s cannot differentiate `{rule.name}` through this argument", s)
        if used or listed:
            code += local
        operands = [node for param, node in bindings.items() if param != tmpl.params[0]]   # (a condition too)
        for c in used:
            expr = c.expr
            if tmpl.broadcasts and not same_shape_as(c.target.id, operands):
                expr = rule_call(rt.unbroadcast, [expr, name(c.target.id)])
            self.accumulate(c.target.id, expr, state, code)
        for c in listed:
            parts = self.namer.temp()
            code.append(assign(parts, c.expr))
            self.accumulate_listed(c.target, parts, rule, s, state, code)
        return code

    def accumulate_listed(self, target, parts: str, rule, s, state, code: list) -> None:
        """Element k of the list/tuple literal `target` gets `parts[k]` (nested literals: nested)."""
        for k, e in enumerate(target.elts):
            if isinstance(e, gast.Name) and e.id in self.active:
                self.accumulate(e.id, gast.Subscript(name(parts), const(k), gast.Load()), state, code)
            elif isinstance(e, (gast.Tuple, gast.List)) and any(
                    isinstance(n, gast.Name) and n.id in self.active for n in iter_nodes(e)):
                inner = self.namer.temp()
                code.append(assign(inner, gast.Subscript(name(parts), const(k), gast.Load())))
                self.accumulate_listed(e, inner, rule, s, state, code)
            elif mentions(e, self.active):
                raise self.element_error(rule, s)

    def rev_setitem(self, s, state) -> list:
        tgt = s.targets[0]
        arr = tgt.value.id
        code: list = []
        if arr in self.active and state.get(arr, ZERO) != ZERO:
            darr = self.adj(arr)
            v = s.value
            if isinstance(v, gast.Name) and v.id in self.active:
                self.accumulate(v.id, rule_call(rt.setitem_cotangent, [name(darr), index_expr(tgt.slice), name(v.id)]),
                                state, code)
            self.ensure_owned(arr, state, code)
            code.append(assign(gast.Subscript(name(darr), clone(tgt.slice), gast.Store()), const(0.0)))
        restore = assign(gast.Subscript(name(arr), clone(tgt.slice), gast.Store()),
                         self.pop(getanno(s, TAPE_KEY)))
        code.append(self._mark(copy_loc(restore, s), arr))
        return code

    def rev_effect(self, s, state) -> list:
        call = s.value
        fn = getattr(call, "s2s_fn", None)
        code: list = []
        if fn is rt.push:
            st = call.args[0].id
            if st in self.active:
                self.ensure_owned(st, state, code)
                popped = rule_call(rt.pop, [name(self.adj(st))])
                v = call.args[1]
                if isinstance(v, gast.Name) and v.id in self.active:
                    self.accumulate(v.id, popped, state, code)
                else:
                    code.append(expr_stmt(popped))
        elif fn is rt.add_at:
            arr, index, v = call.args
            if arr.id in self.active and state.get(arr.id, ZERO) != ZERO and isinstance(v, gast.Name) \
                    and v.id in self.active:
                slot = gast.Subscript(name(self.adj(arr.id)), clone(index), gast.Load())
                self.accumulate(v.id, rule_call(rt.unbroadcast, [slot, name(v.id)]), state, code)
            undo = expr_stmt(rule_call(rt.add_at, [name(arr.id), clone(index),
                                                   gast.UnaryOp(gast.USub(), clone(v))]))
            code.append(self._mark(copy_loc(undo, s), arr.id))
        elif fn is rtb.badd_at:        # add_at per example (vmapped code): the same, batch by batch
            arr, index, v, arr_b, v_b, size = call.args
            if arr.id in self.active and state.get(arr.id, ZERO) != ZERO and isinstance(v, gast.Name) \
                    and v.id in self.active:
                self.accumulate(v.id, rule_call(rtb.badd_at_vjp_v, [name(self.adj(arr.id)), clone(index),
                                                                    name(v.id), clone(v_b)]), state, code)
            undo = expr_stmt(rule_call(rtb.badd_at, [name(arr.id), clone(index),
                                                     gast.UnaryOp(gast.USub(), clone(v))] +
                                       [clone(a) for a in (arr_b, v_b, size)]))
            code.append(self._mark(copy_loc(undo, s), arr.id))
        elif (fn is rte.with_start or fn is rte.region_end) and len(call.args) > 2 \
                and isinstance(call.args[2], gast.Constant) and call.args[2].value is True:
            # `with np.errstate(...)`: the body's derivative runs in it too (its end comes first here)
            mirror = rule_call(rte.with_start if fn is rte.region_end else rte.region_end,
                               [const(f"{call.args[0].value}_grad")] + [clone(a) for a in call.args[1:]])
            code.append(copy_loc(expr_stmt(mirror), s))
        else:
            # (the per-example `badd_at` of a vmapped vjp, say)
            self.refuse_unruled_effect(call, s, lambda a: mentions(a, self.active),
                                       "differentiate the function before vmapping it (vmap(grad(f)) rather than "
                                       "grad of vmap(vjp(f))), or register a rule")
        return code

    def _join_into(self, branches: list[tuple[list, dict]], defined: set[str]) -> dict[str, str]:
        keys = {k: None for _, st in branches for k in st}     # (first-seen order, not a set's)
        joined: dict[str, str] = {}
        for k in keys:
            vals = [st.get(k, ZERO) for _, st in branches]
            nonzero = [v for v in vals if v != ZERO]
            if not nonzero:
                continue
            result = nonzero[0]
            for v in nonzero[1:]:
                result = join_states(result, v)
            if len(nonzero) != len(vals):
                for code, st in branches:
                    if st.get(k, ZERO) == ZERO:
                        stmt, kind = self.materialize(k, defined)
                        code.append(stmt)
                        st[k] = kind
                        result = join_states(result, kind)
            joined[k] = result
        return joined

    def rev_if(self, s, state) -> list:
        code: list = []
        test = s.test
        popped = getanno(s, POPPED_TEST)
        if popped:
            code.append(copy_loc(assign(popped, self.pop(popped)), s))
            test = name(popped)
        st1, st2 = dict(state), dict(state)
        b1 = self.rev_block(s.body, st1)
        b2 = self.rev_block(s.orelse, st2)
        joined = self._join_into([(b1, st1), (b2, st2)], getanno(s, DEFINED_BEFORE))
        state.clear()
        state.update(joined)
        if not b1 and not b2:
            return code
        code.append(copy_loc(gast.If(test=clone(test), body=b1 or [gast.Pass()], orelse=b2), s))
        return code

    def zero_kind(self, var: str, defined: set[str]) -> str:
        return OWNED if (var in self.stack_vars or var in defined) else MAYBE

    def _rev_loop_body(self, s, state) -> tuple[list, list, dict]:
        """Reverse a loop body at a fixpoint of the adjoint states at its start."""
        defined = getanno(s, DEFINED_BEFORE)
        promote: set[str] = set()   # made OWNED once before the loop, not copied every iteration

        def sweep(start):
            body_state = dict(start)
            return self.rev_block(s.body, body_state), body_state, defined

        def join_nonzero(k, a, b):
            if a in (SHARED, MAYBE) and b == OWNED and k not in self.stack_vars:
                promote.add(k)
                return OWNED
            return join_states(a, b)

        start, body, body_state, _ = self.loop_fixpoint(dict(state), defined, sweep, join_nonzero)
        pre: list = []
        for k in sorted(promote):
            if state.get(k, ZERO) in (SHARED, MAYBE):
                self.ensure_owned(k, dict(state), pre)
        for c in pre:
            copy_loc(c, s)
        self.materialize_at_loop(s, state, start, pre, body, body_state, defined, defined)
        return pre, body, state

    def rev_for(self, s, state) -> list:
        pre, body, _ = self._rev_loop_body(s, state)
        it = rule_call(builtins.reversed, [clone(s.iter)])
        loop = copy_loc(gast.For(target=clone(s.target), iter=it, body=body or [gast.Pass()],
                                 orelse=[], type_comment=None), s)
        tgt = s.target.id
        if self.typed and tgt in self.saved:
            if getanno(s, UNSAVED, False):
                return pre + [loop]
            restore = self._mark(copy_loc(assign(tgt, self.pop("for_" + tgt)), s), "for:" + tgt)
            return pre + [loop, restore]
        if tgt not in self.saved:
            return pre + [loop]
        return pre + [loop, self._mark(copy_loc(assign(tgt, self.pop("for_" + tgt)), s), "for:" + tgt)]

    def rev_while(self, s, state) -> list:
        trips = getanno(s, TRIPS)
        pre, body, _ = self._rev_loop_body(s, state)
        it = rule_call(builtins.range, [name(trips)])
        loop = copy_loc(gast.For(target=name(self.namer.fresh("_"), gast.Store()), iter=it,
                                 body=body or [gast.Pass()], orelse=[], type_comment=None), s)
        return [copy_loc(assign(trips, self.pop(trips)), s)] + pre + [loop]


def reverse(nf: NormalizedFunction, spec: ReverseSpec) -> gast.FunctionDef:
    copy_written_arguments(nf.node, nf.namespace)
    return ReverseBuilder(nf, spec).build()
