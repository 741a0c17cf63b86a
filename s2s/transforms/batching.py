"""Batching (vmap): an ANF function -> ANF source that processes a batch at once.

Invariant: a batched value carries the batch on axis 0 (arguments are moved
there on entry, results moved to `out_axes` on exit).  Each variable is
batched or not for the whole function (a flow-insensitive fixpoint); an
unbatched value assigned to a batched variable is expanded (`bexpand`).

Every operation on a batched value goes through its op's batching rule
(`rules.batch_rules`): elementwise ops align per-example ranks (`balign`),
reductions shift their axes (`baxis`), matmul/dot use `bmatmul`, indexing
prepends the batch slice, shape queries answer per example.  An op without a
rule runs in a per-example loop (`bmap`), never unbatched.  Control flow on
batched conditions becomes both branches plus `np.where` when the branches
only assign variables, and a masked loop for `while`; anything else makes
the whole function a per-example loop (`per_example`), labelled as such.

This module holds the pass (which variables are batched, the entry and exit, statements, control
flow); the batched forms of the right-hand sides (the ops) are in transforms/batching_ops.py.
"""
from __future__ import annotations

import collections

import builtins
import dataclasses
from typing import Any

import gast
import numpy as np

from .. import runtime as rt
from ..runtime import batching as rtb
from ..errors import UnsupportedSyntaxError
from ..analysis.aliasing import alias_conflicts, fresh_arrays
from ..frontend.annotations import BATCHED, SECTION, getanno, setanno
from ..frontend.ast_build import assign, const, copy_loc, name, namer_for, walk_stmts as _walk_stmts
from ..frontend.normalize import NormalizedFunction
from ..rules.batch_rules import batch_kind
from .batching_ops import NoArrayForm, OpBatching, identity_test
from .common import expr_stmt, index_expr, rule_call
from ..frontend.nodes import clone, iter_nodes, names_in


@dataclasses.dataclass
class BatchSpec:
    in_axes: list            # per parameter: int or None
    out_axes: Any            # int/None, or a tuple for tuple outputs
    axis_size: int | None
    name: str = "vmap"
    example_fn: Any = None   # the function itself, for the per-example fallback


class BatchBuilder(OpBatching):
    def __init__(self, nf: NormalizedFunction, spec: BatchSpec):
        self.nf = nf
        self.spec = spec
        self.src = nf.source
        self.namer = namer_for(nf.node, nf.namespace)
        self.size = self.namer.fresh("batch")
        self.stacks: set[str] = set()    # tapes: containers of (batched) values, never expanded
        self.matched: set[str] = set()   # tapes whose pops restore pushed variables (matched_tapes)
        self.unpaired: dict[str, set] = {}
        self.defined: set[str] = set(nf.params)
        # variables an `if`/`while` on a batched condition assigned: each example's value picked by
        # np.where, a new array even where the example's own value shares another variable's
        self.merged: set[str] = set()

    def error(self, cls, msg, node, hint=None):
        src = getattr(node, "s2s_src", None) or self.src
        return src.error(cls, msg, node, hint)

    # ----- which variables are batched ------------------------------------------
    def matched_tapes(self, body) -> set[str]:
        """Tapes each pop of which restores a variable pushed on it (`push(tape, v)` ... `v = pop(tape)`):
        what such a pop gives back is batched when that variable is, whatever else the tape holds
        (a branch condition pushed beside per-example arrays stays one flag for the batch).

        The backward sweep pops in the mirror order of the pushes, so a tape is matched when its
        pushes and pops pair up by name: each name pushed as often as it is popped into.  The
        rest (an indexed write's saved slot: `push(tape, t15)` ... `t35 = pop(tape)`, `out[0] = t35`)
        are unpaired: as many pushes as pops, and their values are batched as the tape is
        (self.unpaired: tape -> the names pushed or popped unpaired)."""
        pushed: dict[str, collections.Counter] = {}
        popped: dict[str, collections.Counter] = {}
        bad: set[str] = set()
        seen: set[int] = set()
        module = gast.Module(body=body, type_ignores=[])
        for n in iter_nodes(module):
            if isinstance(n, gast.Assign) and isinstance(n.value, gast.Call) \
                    and getattr(n.value, "s2s_fn", None) is rt.pop and n.value.args \
                    and isinstance(n.value.args[0], gast.Name):
                tape, target = n.value.args[0].id, n.targets[0]
                key = target.id if isinstance(target, gast.Name) else None
                popped.setdefault(tape, collections.Counter())[key] += 1
                seen.add(id(n.value))
        for n in iter_nodes(module):
            if isinstance(n, gast.Call) and getattr(n, "s2s_fn", None) in (rt.push, rt.pop) and n.args \
                    and isinstance(n.args[0], gast.Name):
                tape = n.args[0].id
                if n.s2s_fn is rt.push:
                    if len(n.args) != 2:
                        bad.add(tape)
                        continue
                    key = n.args[1].id if isinstance(n.args[1], gast.Name) else None
                    pushed.setdefault(tape, collections.Counter())[key] += 1
                elif id(n) not in seen:
                    bad.add(tape)     # a pop used some other way
        matched: set[str] = set()
        self.unpaired = {}
        for tape, pushes in pushed.items():
            pops = popped.get(tape, collections.Counter())
            paired = {k for k in pushes if k is not None and k in pops}
            # `push(tape_dot, zeros)` beside `push(tape_dot, x_dot)`, both popped into x_dot: the
            # zeros come back to another variable, which may be batched where they were not
            if tape in bad or any(pushes[k] != pops[k] for k in paired):
                continue
            rest_pushed = {k: c for k, c in pushes.items() if k not in paired}
            rest_popped = {k: c for k, c in pops.items() if k not in paired}
            if sum(rest_pushed.values()) != sum(rest_popped.values()):
                continue
            matched.add(tape)
            self.unpaired[tape] = set(rest_pushed) | set(rest_popped)
        return matched

    def analyse(self, body, params_batched: set[str]) -> set[str]:
        batched = set(params_batched)
        matched = self.matched = self.matched_tapes(body)
        changed = True
        while changed:
            changed = False

            def mark(v):
                nonlocal changed
                if v not in batched:
                    batched.add(v)
                    changed = True

            def visit(stmts, ctx_batched: bool):
                for s in stmts:
                    if isinstance(s, gast.Assign):
                        t = s.targets[0]
                        if isinstance(t, gast.Name) and getattr(s.value, "s2s_fn", None) is rt.pop \
                                and isinstance(s.value.args[0], gast.Name) and s.value.args[0].id in matched:
                            tape = s.value.args[0].id
                            if ctx_batched or (t.id in self.unpaired[tape] and tape in batched):
                                mark(t.id)        # else batched as the variable is by its other assignments
                        elif isinstance(t, gast.Name):
                            if ctx_batched or self.value_batched(s.value, batched):
                                mark(t.id)
                        else:
                            if ctx_batched or names_in(s.value) & batched or names_in(t.slice) & batched:
                                mark(t.value.id)
                    elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
                        fn = getattr(s.value, "s2s_fn", None)
                        args = s.value.args
                        if fn in (rt.push, rt.add_at) and args and isinstance(args[0], gast.Name):
                            if ctx_batched or any(names_in(a) & batched for a in args[1:]):
                                mark(args[0].id)
                    elif isinstance(s, gast.If):
                        inner = ctx_batched or s.test.id in batched
                        visit(s.body, inner)
                        visit(s.orelse, inner)
                    elif isinstance(s, gast.For):
                        if names_in(s.iter) & batched:
                            raise NoArrayForm("a for loop whose range depends on the batch", s)
                        visit(s.body, ctx_batched)
                    elif isinstance(s, gast.While):
                        visit(s.body, ctx_batched or s.test.id in batched)
            visit(body, False)
        return batched

    def value_batched(self, value, batched) -> bool:
        if isinstance(value, gast.Call):
            fn = getattr(value, "s2s_fn", None)
            kind = batch_kind(fn)
            if kind in ("shape_query", "shape_fn", "seed"):
                return False
            if fn is rt.pop:
                return value.args[0].id in batched
        if isinstance(value, gast.Attribute):
            return False
        if identity_test(value):
            return False        # `x is None`: one answer for all the examples
        return bool(names_in(value) & batched)

    # ----- entry -----------------------------------------------------------------
    def build(self) -> gast.FunctionDef:
        fdef = self.nf.node
        params = self.nf.params
        in_axes = self.spec.in_axes
        batched_params = {p for p, ax in zip(params, in_axes) if ax is not None}
        body = list(fdef.body)
        ret = body.pop()
        # arrays written by index that another name may hold: made batched (a new, expanded
        # array) they would no longer be the array the other name sees
        written = {st.targets[0].value.id for st in _walk_stmts(body) if isinstance(st, gast.Assign)
                   and isinstance(st.targets[0], gast.Subscript) and isinstance(st.targets[0].value, gast.Name)}
        self.shared_written = (written - fresh_arrays(body)) | {n for _, var, arr in alias_conflicts(body, True)
                                                                 for n in (var, arr)}
        try:
            self.batched = self.analyse(body, batched_params)
            prologue = self.prologue(params, in_axes, fdef)
            code = self.block(body)
            epilogue = self.epilogue(ret)
            new_body = prologue + code + epilogue
        except NoArrayForm as exc:
            new_body = self.fallback(exc, params, in_axes, fdef)
        new = gast.FunctionDef(name=self.spec.name, args=clone(fdef.args), body=new_body,
                               decorator_list=[], returns=None, type_comment=None, type_params=[])
        copy_loc(new, fdef)
        return new

    def prologue(self, params, in_axes, fdef) -> list:
        names = gast.Tuple([const(p) for p in params], gast.Load())
        axes = gast.Tuple([const(a) for a in in_axes], gast.Load())
        args = gast.Tuple([name(p) for p in params], gast.Load())
        out = [assign(self.size, rule_call(rtb.batch_size, [args, axes, names, const(self.spec.axis_size)]))]
        for p, ax in zip(params, in_axes):
            if ax is not None and ax != 0:
                out.append(assign(p, rule_call(rtb.bmove, [name(p), const(ax)])))
            elif ax is None and p in self.batched:
                # an unbatched argument the function later reassigns to a batched value: a batched
                # variable holds the batch from the start (each example sees the same value)
                out.append(assign(p, rule_call(rtb.bexpand, [name(p), name(self.size)])))
        setanno(out[0], SECTION, "batch of examples on axis 0")
        for s in out:
            copy_loc(s, fdef)
        return out

    def epilogue(self, ret) -> list:
        code: list = []
        value = ret.value
        out_axes = self.spec.out_axes

        def finish(node, ax):
            if isinstance(node, (gast.Tuple, gast.List)):
                return type(node)([finish(e, ax) for e in node.elts], gast.Load())
            if isinstance(node, gast.Dict):
                return gast.Dict(keys=node.keys, values=[finish(v, ax) for v in node.values])
            if isinstance(node, gast.Call) and getattr(node, "s2s_fn", None) is rt.build_record:
                new = clone(node)
                new.s2s_fn = rt.build_record
                for k in new.keywords:
                    k.value = finish(k.value, ax)
                return new
            if isinstance(node, gast.Name) and node.id in self.batched:
                if ax is None:
                    raise self.error(UnsupportedSyntaxError,
                                     "vmap: out_axes=None, but this output varies across the batch", ret,
                                     "use out_axes=0, or return a value that does not depend on batched inputs")
                return rule_call(rtb.bout, [node, const(ax)]) if ax != 0 else node
            if ax is None:
                return node
            return rule_call(rtb.bexpand, [node, name(self.size)]) if ax == 0 else \
                rule_call(rtb.bout, [rule_call(rtb.bexpand, [node, name(self.size)]), const(ax)])
        if isinstance(value, gast.Dict):
            if isinstance(out_axes, (tuple, list)):
                raise self.error(UnsupportedSyntaxError, "vmap: out_axes for a dict output must be an int or None", ret)
            result = gast.Dict(keys=value.keys, values=[finish(v, out_axes) for v in value.values])
            code.append(copy_loc(gast.Return(value=result), ret))
            return code
        if isinstance(value, gast.Tuple):
            axes = out_axes if isinstance(out_axes, (tuple, list)) else [out_axes] * len(value.elts)
            if len(axes) != len(value.elts):
                raise self.error(UnsupportedSyntaxError, f"vmap: out_axes has {len(axes)} entries but the function "
                                 f"returns {len(value.elts)} values", ret)
            result = gast.Tuple([finish(e, a) for e, a in zip(value.elts, axes)], gast.Load())
        else:
            if isinstance(out_axes, (tuple, list)):
                raise self.error(UnsupportedSyntaxError, "vmap: out_axes is a tuple but the function returns one value", ret)
            result = finish(value, out_axes)
        code.append(copy_loc(gast.Return(value=result), ret))
        return code

    def fallback(self, exc: NoArrayForm, params, in_axes, fdef) -> list:
        where = ""
        if exc.node is not None and getattr(exc.node, "lineno", None):
            src = getattr(exc.node, "s2s_src", None) or self.src
            where = f" (line {exc.node.lineno}: {src.line(exc.node.lineno).strip()})"
        self.nf.namespace["example_fn"] = self.spec.example_fn
        args = gast.Tuple([name(p) for p in params], gast.Load())
        axes = gast.Tuple([const(a) for a in in_axes], gast.Load())
        out_axes = self.spec.out_axes
        out_node = gast.Tuple([const(a) for a in out_axes], gast.Load()) if isinstance(out_axes, (tuple, list)) \
            else const(out_axes)
        names = gast.Tuple([const(p) for p in params], gast.Load())
        size = assign(self.size, rule_call(rtb.batch_size, [clone(args), clone(axes), names,
                                                            const(self.spec.axis_size)]))
        setanno(size, SECTION, f"per-example loop over the batch: no array form for {exc.reason}{where}")
        call = gast.Call(func=name("per_example"), args=[name("example_fn"), args, axes, out_node, name(self.size)],
                         keywords=[])
        call.s2s_fn = rtb.per_example
        ret = gast.Return(value=call)
        for s in (size, ret):
            copy_loc(s, fdef)
        return [size, ret]

    # ----- statements -------------------------------------------------------------
    def is_b(self, node) -> bool:
        return isinstance(node, gast.Name) and node.id in self.batched

    def block(self, stmts: list) -> list:
        out: list = []
        for s in stmts:
            code = self.stmt(s)
            for c in code:
                for n in iter_nodes(c):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                        self.defined.add(n.id)
            for c in code:
                if not hasattr(c, "lineno"):
                    copy_loc(c, s)
            out += code
        return out

    def stmt(self, s) -> list:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            return self.assign_stmt(s)
        if isinstance(s, gast.Assign):
            return self.setitem(s)
        if isinstance(s, gast.If):
            if s.test.id in self.batched:
                return self.batched_if(s)
            return [copy_loc(gast.If(test=s.test, body=self.block(s.body) or [gast.Pass()],
                                     orelse=self.block(s.orelse)), s)]
        if isinstance(s, gast.For):
            return [copy_loc(gast.For(target=s.target, iter=s.iter, body=self.block(s.body) or [gast.Pass()],
                                      orelse=[], type_comment=None), s)]
        if isinstance(s, gast.While):
            if s.test.id in self.batched:
                return self.batched_while(s)
            return [copy_loc(gast.While(test=s.test, body=self.block(s.body) or [gast.Pass()], orelse=[]), s)]
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            return self.effect(s)
        if isinstance(s, gast.Assert):
            if names_in(s.test) & self.batched:
                return [copy_loc(gast.Assert(test=rule_call(np.all, [s.test]), msg=s.msg), s)]
            return [s]
        return [s]

    def assign_stmt(self, s) -> list:
        v = s.targets[0].id
        code: list = []
        value = self.batch_value(s.value, code, s)
        is_stack = getattr(s.value, "s2s_fn", None) is rt.stack or (
            getattr(s.value, "s2s_fn", None) is rt.zeros_like and s.value.args and
            isinstance(s.value.args[0], gast.Name) and s.value.args[0].id in self.stacks)
        if is_stack:
            self.stacks.add(v)
        if v in self.batched and not self.value_is_batched(value) and not is_stack:
            if v in self.shared_written:
                raise NoArrayForm("an indexed write into an array another variable may hold", s)
            if getattr(value, "s2s_fn", None) in (rt.call_opaque, rt.call_method):
                # (maybe an object with a state, a random Generator: repeated, every example would
                # draw from the one object, where each example's run makes its own)
                raise NoArrayForm("a value made by code s2s does not read, under a batched condition", s)
            value = rule_call(rtb.bexpand, [value, name(self.size)])
        code.append(copy_loc(assign(v, value), s))
        return code

    def value_is_batched(self, value) -> bool:
        return bool(getanno(value, BATCHED, False)) or (isinstance(value, gast.Name) and value.id in self.batched)

    def setitem(self, s) -> list:
        tgt = s.targets[0]
        arr = tgt.value.id
        if arr not in self.batched:
            return [s]
        if names_in(tgt.slice) & self.batched:
            raise NoArrayForm("an indexed write at a batched index", s)
        value = s.value
        code: list = []
        if names_in(tgt.slice):   # a variable index may be an array: per-example semantics at run time
            code.append(copy_loc(expr_stmt(rule_call(rtb.bsetitem, [name(arr), index_expr(tgt.slice), value,
                                                                    const(self.is_b(value))])), s))
            return code
        index = self.batched_index(clone(tgt.slice))
        if self.is_b(value):
            # align v with the slot: the slot's per-example rank may exceed v's
            slot = self.namer.fresh("slot")
            code.append(copy_loc(assign(slot, gast.Subscript(name(arr), clone(index), gast.Load())), s))
            aligned = self.namer.fresh(value.id + "_b")
            code.append(copy_loc(assign(aligned, rule_call(rtb.balign, [value, gast.Tuple([name(slot)], gast.Load()),
                                                                        gast.Tuple([const(True)], gast.Load())])), s))
            value = name(aligned)
        new = assign(gast.Subscript(name(arr), index, gast.Store()), value)
        code.append(copy_loc(new, s))
        return code

    def effect(self, s) -> list:
        call = s.value
        fn = getattr(call, "s2s_fn", None)
        if fn is rt.push:
            st, v = call.args
            unpaired = st.id in self.matched and not (isinstance(v, gast.Name) and v.id not in self.unpaired[st.id])
            if st.id in self.batched and not self.is_b(v) and (st.id not in self.matched or unpaired):
                # (on a matched tape the pop gives a paired value back to an unbatched variable as it is)
                value = rule_call(rtb.bexpand, [v, name(self.size)])
                return [copy_loc(expr_stmt(rule_call(rt.push, [st, value])), s)]
            return [s]
        if fn is rt.add_at:
            arr, index, v = call.args
            if arr.id in self.batched:
                if names_in(index) & self.batched:
                    raise NoArrayForm("an accumulation at a batched index", s)
                return [copy_loc(expr_stmt(rule_call(rtb.badd_at, [arr, index, v, const(True), const(self.is_b(v)),
                                                                   name(self.size)])), s)]
            return [s]
        if fn is rt.check_element_view and self.is_b(call.args[0]) and self.is_b(call.args[1]) and not any(
                isinstance(a, gast.Name) and a.id in self.merged for a in call.args[:2]):
            # whether an example's read is a view (a row) or a number: the first example says (the
            # batched read is an array, a view of the batch, either way)
            firsts = []
            for a in call.args[:2]:
                first = self.namer.fresh(a.id + "_0")
                firsts.append(assign(first, gast.Subscript(name(a.id), const(0), gast.Load()), s))
            check = rule_call(rt.check_element_view, [name(f.targets[0].id) for f in firsts] + list(call.args[2:]))
            return firsts + [copy_loc(expr_stmt(check), s)]
        if fn in (rt.check_unshared, rt.check_element_view) and (self.is_b(call.args[0]) != self.is_b(call.args[1]) or any(
                isinstance(a, gast.Name) and a.id in self.merged for a in call.args[:2])):
            # one of the two became a batched copy, or a value picked per example from two branches:
            # whether the examples' arrays are shared is lost in the array form (the per-example
            # loop keeps the check: in NumPy an example's `v = x; v += 1` changes x)
            raise NoArrayForm("an in-place update of an array another variable may share", s)
        if any(names_in(a) & self.batched for a in call.args):
            if fn in (builtins.print, rt.check_unshared, rt.check_element_view):   # (batched arrays share iff
                # their examples do)
                return [s]
            raise NoArrayForm("a call made for its effect on batched values", s)
        return [s]

    # ----- control flow on batched conditions ----------------------------------------
    def _pure(self, stmts) -> bool:
        for st in _walk_stmts(stmts):
            if isinstance(st, gast.Assign) and not isinstance(st.targets[0], gast.Name):
                return False
            if isinstance(st, (gast.For, gast.While, gast.Expr, gast.Assert)):
                return False
        return True

    def batched_if(self, s) -> list:
        """Both branches, then np.where per assigned variable (branches only assign variables)."""
        if not (self._pure(s.body) and self._pure(s.orelse)):
            raise NoArrayForm("an `if` on a batched condition whose branches do more than assign variables", s)
        code: list = []
        env = self._select(s, {}, code)
        for v, current in env.items():
            if current != v:
                code.append(copy_loc(assign(v, name(current)), s))
                self.defined.add(v)
        return code

    def _branch(self, stmts, env: dict, code: list, suffix: str) -> dict:
        """Emit a pure branch with every assignment renamed (v -> v_then ...); returns the new names."""
        env = dict(env)
        for st in stmts:
            if isinstance(st, gast.If):
                env = self._select(st, env, code)
                continue
            if isinstance(st, gast.Pass):     # (what is left of `b = b`)
                continue
            value = clone(st.value)
            if hasattr(st.value, "s2s_fn"):
                value.s2s_fn = st.value.s2s_fn
            for n in iter_nodes(value):
                if isinstance(n, gast.Name) and n.id in env:
                    n.id = env[n.id]
            old = st.targets[0].id
            new = self.namer.fresh(old + suffix)
            if old in self.batched:
                self.batched.add(new)
            stmt = copy_loc(assign(new, value), st)
            code += self.stmt(stmt)
            self.defined.add(new)
            env[old] = new
        return env

    def _select(self, s, env: dict, code: list) -> dict:
        """if/else of pure branches under env: both branches, merged with np.where."""
        cond = env.get(s.test.id, s.test.id)
        then_env = self._branch(s.body, env, code, "_then")
        else_env = self._branch(s.orelse, env, code, "_else")
        out = dict(env)
        for v in list(dict.fromkeys(list(then_env) + list(else_env))):
            a = then_env.get(v)
            b = else_env.get(v)
            before = env.get(v, v if v in self.defined else None)
            a = a or before
            b = b or before
            if a is None or b is None or a == b:
                out[v] = a or b
                continue
            merged = self.namer.fresh(v + "_sel")
            if cond in self.batched:
                mask = self.namer.fresh("c_b")
                code.append(copy_loc(assign(mask, rule_call(rtb.balign, [
                    name(cond), gast.Tuple([name(a), name(b)], gast.Load()),
                    gast.Tuple([const(a in self.batched), const(b in self.batched)], gast.Load())])), s))
            else:
                mask = cond
            code.append(copy_loc(assign(merged, rule_call(np.where, [name(mask), name(a), name(b)])), s))
            if cond in self.batched:
                self.merged.add(v)
            if v in self.batched or a in self.batched or b in self.batched:
                self.batched.add(merged)
            self.defined.add(merged)
            out[v] = merged
        return out

    def batched_while(self, s) -> list:
        if not self._pure_loop_body(s.body):
            raise NoArrayForm("a `while` on a batched condition whose body does more than assign variables", s)
        cond = s.test.id
        code: list = []
        # Each example stops when its own condition fails; finished examples keep their values.
        body: list = []
        active = self.namer.fresh("running")
        self.batched.add(active)
        code.append(copy_loc(assign(active, name(cond)), s))
        # Only values that live across iterations or after the loop need masking.
        inside = {id(n) for st in s.body for n in iter_nodes(st)}
        outside = {n.id for n in iter_nodes(self.nf.node) if isinstance(n, gast.Name)
                   and not isinstance(n.ctx, gast.Store) and id(n) not in inside}
        carried, seen_assigned = set(), set()
        for st in s.body:
            for n in iter_nodes(st.value):
                if isinstance(n, gast.Name) and n.id not in seen_assigned:
                    carried.add(n.id)
            seen_assigned.add(st.targets[0].id)
        keep = carried | outside
        for st in s.body:
            if isinstance(st, gast.Assign) and st.targets[0].id == cond:
                # the recomputed condition: keep examples that already stopped stopped
                inner = self.block([st])
                body += inner
                body.append(copy_loc(assign(active, rule_call(np.logical_and, [name(active), name(cond)])), st))
                continue
            for c in self.block([st]):
                if isinstance(c, gast.Assign) and isinstance(c.targets[0], gast.Name) and c.targets[0].id in self.batched \
                        and c.targets[0].id in keep:
                    v = c.targets[0].id
                    tmp = self.namer.fresh(v + "_new")
                    self.batched.add(tmp)
                    c.targets[0].id = tmp
                    body.append(c)
                    mask = self.namer.fresh("mask")
                    body.append(copy_loc(assign(mask, rule_call(rtb.balign, [
                        name(active), gast.Tuple([name(tmp)], gast.Load()), gast.Tuple([const(True)], gast.Load())])), st))
                    body.append(copy_loc(assign(v, rule_call(np.where, [name(mask), name(tmp), name(v)])), st))
                    self.merged.add(v)
                else:
                    body.append(c)
        anyc = self.namer.fresh("any_running")
        code.append(copy_loc(assign(anyc, rule_call(np.any, [name(active)])), s))
        body.append(copy_loc(assign(anyc, rule_call(np.any, [name(active)])), s))
        code.append(copy_loc(gast.While(test=name(anyc), body=body, orelse=[]), s))
        return code

    def _pure_loop_body(self, stmts) -> bool:
        return all(isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) for st in stmts)


def batch(nf: NormalizedFunction, spec: BatchSpec) -> gast.FunctionDef:
    return BatchBuilder(nf, spec).build()
