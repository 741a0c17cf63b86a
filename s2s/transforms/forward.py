"""Forward mode: an ANF function -> ANF source of its Jacobian-vector product.

Each primal statement is followed by its tangent statement, built from the
op's tangent template (`t[x]` notation) in the rule table.  Control flow is
kept as it is (no tape: tangents flow forward with the values).

Tangents are tracked symbolically like adjoints in reverse mode: ZERO (no
code; template terms holding it are simplified away), OWNED (an array only
it refers to, safe to update in place), SHARED (may alias), MAYBE (a scalar
0.0 materialized at a control-flow join, which may have to become an array, or
no tangent on a path where the primal is not defined either).
"""
from __future__ import annotations

import dataclasses

import gast

from .. import runtime as rt
from ..runtime import batching as rtb
from ..analysis.activity import varied
from ..analysis.aliasing import alias_conflicts, fresh_arrays
from ..frontend.ast_build import assign, const, copy_loc, name
from ..frontend.normalize import NormalizedFunction
from .common import MAYBE, OWNED, SHARED, ZERO, copy_written_arguments, expr_stmt, join_states, op_rule, rule_call
from .derivative_core import DerivativeBuilder
from ..frontend.nodes import clone, iter_nodes

_ZERO_ID = "__s2s_zero_tangent__"


@dataclasses.dataclass
class ForwardSpec:
    wrt: list[str]          # parameters with tangents (normalized names)
    name: str = "jvp"


def _is_zero(node) -> bool:
    return isinstance(node, gast.Name) and node.id == _ZERO_ID


class _Simplify:
    """Drop terms of a tangent expression that hold a symbolic zero."""

    def __init__(self, tangent_names: set[str]):
        self.tangent_names = tangent_names

    def carries(self, node) -> bool:
        return any(isinstance(n, gast.Name) and (n.id == _ZERO_ID or n.id in self.tangent_names)
                   for n in iter_nodes(node))

    def __call__(self, node):
        if isinstance(node, gast.BinOp):
            left, right = self(node.left), self(node.right)
            lz, rz = _is_zero(left), _is_zero(right)
            op = node.op
            if isinstance(op, gast.Add):
                if lz:
                    return right
                if rz:
                    return left
            elif isinstance(op, gast.Sub):
                if rz:
                    return left
                if lz:
                    return gast.UnaryOp(gast.USub(), right)
            elif isinstance(op, (gast.Mult, gast.MatMult)):
                if lz or rz:
                    return name(_ZERO_ID)
            elif isinstance(op, (gast.Div, gast.FloorDiv)):
                if lz:
                    return name(_ZERO_ID)
            if lz or rz:
                left = const(0.0) if lz else left
                right = const(0.0) if rz else right
            return gast.BinOp(left, op, right)
        if isinstance(node, gast.UnaryOp):
            operand = self(node.operand)
            if _is_zero(operand) and isinstance(node.op, (gast.USub, gast.UAdd)):
                return operand
            return gast.UnaryOp(node.op, const(0.0) if _is_zero(operand) else operand)
        if isinstance(node, gast.Call):
            args = [self(a) for a in node.args]
            kws = [gast.keyword(k.arg, self(k.value)) for k in node.keywords]
            carrying = [a for a in args + [k.value for k in kws] if self.carries(a)]
            if carrying and all(_is_zero(a) for a in carrying):
                return name(_ZERO_ID)
            args = [const(0.0) if _is_zero(a) else a for a in args]
            for k in kws:
                if _is_zero(k.value):
                    k.value = const(0.0)
            new = gast.Call(func=node.func, args=args, keywords=kws)
            if hasattr(node, "s2s_fn"):
                new.s2s_fn = node.s2s_fn
            return new
        if isinstance(node, gast.Subscript):
            value = self(node.value)
            if _is_zero(value):
                return value
            return gast.Subscript(value, node.slice, node.ctx)
        if isinstance(node, (gast.Tuple, gast.List)):
            return type(node)([const(0.0) if _is_zero(e) else e for e in map(self, node.elts)], node.ctx)
        return node


class ForwardBuilder(DerivativeBuilder):
    which = "tangent"
    deriv_word = "derivative"

    def __init__(self, nf: NormalizedFunction, spec: ForwardSpec):
        super().__init__(nf)
        self.spec = spec
        self.returned: set[str] = set()      # (build: the variables the function returns)

    def spell_deriv(self, var: str) -> str:
        return var + "_dot"

    tan = DerivativeBuilder.deriv      # (forward mode's derivative is the tangent)

    # ----- entry ------------------------------------------------------------
    def build(self) -> gast.FunctionDef:
        fdef = self.nf.node
        body = list(fdef.body)
        ret = body.pop()
        # the returned variables: given a value without a tangent (an early `return 0.7` or `return
        # scale` in a loop), they get their zero tangent there, so that every path leaves them one
        self.returned = {n.id for n in iter_nodes(ret.value) if isinstance(n, gast.Name)}
        self.active = varied(body, self.spec.wrt)
        self.fresh_arrays = fresh_arrays(body)
        for st, var, arr in alias_conflicts(body, read_after=True):
            if var in self.active or arr in self.active:      # (as reverse mode refuses it)
                raise self.aliasing_error(st, var, arr)
        # Tape stacks: every push/pop of a varied stack is mirrored on its tangent stack.
        state: dict[str, str] = {p: SHARED for p in self.spec.wrt}
        for p in self.spec.wrt:
            self.tan(p)
        code = self.block(body, state, set(self.nf.params))
        out_node = ret.value
        outs: list = []
        out_tangent = self.output_tangent(out_node, state, outs)
        for s in outs:
            copy_loc(s, ret)
        result = gast.Tuple([clone(out_node), out_tangent], gast.Load())
        final = copy_loc(gast.Return(value=result), ret)
        final.s2s_src = None
        args = clone(fdef.args)
        tangent_params = [gast.Name(self.tan(p), gast.Param(), None, None) for p in self.spec.wrt]
        # (tangents follow every primal parameter, so none keeps a default: callers pass the
        # defaults themselves, api.jvp and the jacfwd wrapper)
        args.defaults = []
        args.args = args.args + tangent_params
        new = gast.FunctionDef(name=self.spec.name, args=args, body=code + outs + [final],
                               decorator_list=[], returns=None, type_comment=None, type_params=[])
        copy_loc(new, fdef)
        return new

    def output_tangent(self, node, state, code: list):
        if isinstance(node, (gast.Tuple, gast.List)):
            return gast.Tuple([self.output_tangent(e, state, code) for e in node.elts], gast.Load())
        if isinstance(node, gast.Name):
            st = state.get(node.id, ZERO)
            t = self.tan(node.id)
            if st == ZERO:
                code.append(assign(t, rule_call(rt.zeros_like, [name(node.id)])))
            elif st == MAYBE:
                code.append(assign(t, gast.BinOp(name(t), gast.Add(), rule_call(rt.zeros_like, [name(node.id)]))))
            return name(t)
        return rule_call(rt.zeros_like, [clone(node)])

    # ----- statements ---------------------------------------------------------
    def block(self, stmts: list, state: dict, defined: set[str]) -> list:
        out: list = []
        for s in stmts:
            code = self.stmt(s, state, defined)
            for c in code:
                if not hasattr(c, "lineno"):
                    copy_loc(c, s)
            out += code
        return out

    def stmt(self, s, state, defined) -> list:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            v = s.targets[0].id
            code = [s] + self.tangent_of(v, s.value, s, state)
            if v in self.returned and v in self.active and state.get(v) == ZERO:
                self.set_tangent(v, rule_call(rt.zeros_like, [name(v)]), state, code, OWNED)
            defined.add(v)
            return code
        if isinstance(s, gast.Assign):
            return self.setitem(s, state)
        if isinstance(s, gast.If):
            return self.if_(s, state, defined)
        if isinstance(s, (gast.For, gast.While)):
            return self.loop(s, state, defined)
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            return [s] + self.effect(s, state)
        return [s]

    def set_tangent(self, v: str, expr, state, code: list, kind: str = SHARED) -> None:
        code.append(assign(self.tan(v), expr))
        state[v] = kind

    def ensure_array(self, var: str, state, code: list) -> None:
        if state.get(var) == MAYBE:
            self.ensure_owned(var, state, code)

    def tangent_or_zero(self, var: str, state, code: list):
        """The tangent of var as an expression (materializing zeros)."""
        if state.get(var, ZERO) == ZERO:
            return rule_call(rt.zeros_like, [name(var)])
        return name(self.tan(var))

    def tangent_of(self, v: str, value, s, state) -> list:
        code: list = []
        fn = getattr(value, "s2s_fn", None)
        if fn is rt.stack:
            if v in self.active:
                self.set_tangent(v, rule_call(rt.stack, []), state, code, OWNED)
            else:
                state[v] = ZERO
            return code
        if fn is rt.pop:
            st = value.args[0].id
            if st in self.active:
                self.set_tangent(v, rule_call(rt.pop, [name(self.tan(st))]), state, code)
            else:
                state[v] = ZERO
            return code
        if fn is rt.restore:     # typed tapes: the tangent tape mirrors the value tape
            st, cur = value.args
            if st.id in self.active:
                t_cur = self.tangent_or_zero(cur.id, state, code) if isinstance(cur, gast.Name) else const(0.0)
                self.set_tangent(v, rule_call(rt.restore, [name(self.tan(st.id)), t_cur]), state, code)
            else:
                state[v] = ZERO
            return code
        if v not in self.active:
            state[v] = ZERO
            return code
        if isinstance(value, gast.Name):
            if state.get(value.id, ZERO) != ZERO:
                self.set_tangent(v, name(self.tan(value.id)), state, code, MAYBE if state[value.id] == MAYBE else SHARED)
            else:
                state[v] = ZERO
            return code
        if isinstance(value, (gast.Constant, gast.Compare, gast.Attribute)):
            state[v] = ZERO
            return code
        if isinstance(value, gast.Subscript):
            base = value.value.id
            if any(isinstance(n, gast.Name) and state.get(n.id, ZERO) != ZERO for n in iter_nodes(value.slice)):
                raise self.index_error(s)
            if state.get(base, ZERO) != ZERO:
                self.ensure_array(base, state, code)
                self.set_tangent(v, gast.Subscript(name(self.tan(base)), clone(value.slice), gast.Load()),
                                 state, code)
            else:
                state[v] = ZERO
            return code
        if fn is rt.choose:
            index, options = value.args[0], value.args[1:]
            if all(not isinstance(o, gast.Name) or state.get(o.id, ZERO) == ZERO for o in options):
                state[v] = ZERO
                return code
            tangents = [self.tangent_or_zero(o.id, state, code) if isinstance(o, gast.Name)
                        else rule_call(rt.zeros_like, [clone(o)]) for o in options]
            self.set_tangent(v, rule_call(rt.choose, [clone(index)] + tangents), state, code)
            return code
        if fn in (rt.call_opaque, rt.call_method) and not any(
                isinstance(n, gast.Name) and state.get(n.id, ZERO) != ZERO for n in iter_nodes(value)):
            state[v] = ZERO       # (code s2s does not read, reached by no derivative: `x = rng.normal(...)`)
            return code
        found = op_rule(self, value, s, "tangent")
        if found is None:
            state[v] = ZERO
            return code
        rule, args, kws = found
        tmpl = rule.tangent
        bindings = self.bind_template(rule, tmpl, v, args, kws, s)
        dropped = False

        def seed(param):
            nonlocal dropped
            node = bindings[param]
            if isinstance(node, gast.Name) and state.get(node.id, ZERO) != ZERO:
                if state[node.id] == MAYBE:
                    self.ensure_array(node.id, state, code)
                return name(self.tan(node.id))
            if isinstance(node, (gast.Tuple, gast.List)) and varied_inside(node):
                return literal_tangent(node)
            dropped = True
            return name(_ZERO_ID)

        def varied_inside(node) -> bool:
            return any(isinstance(n, gast.Name) and state.get(n.id, ZERO) != ZERO for n in iter_nodes(node))

        def literal_tangent(node):
            # the tangent of a list/tuple literal, nested ones included (np.array([[a, b], [c, d]]))
            elts = []
            for e in node.elts:
                if isinstance(e, gast.Name):
                    elts.append(self.tangent_or_zero(e.id, state, code))
                elif isinstance(e, (gast.Tuple, gast.List)):
                    elts.append(literal_tangent(e))
                elif varied_inside(e):
                    raise self.element_error(rule, s)
                else:
                    elts.append(rule_call(rt.zeros_like, [clone(e)]))
            return type(node)(elts, gast.Load())

        # Active arguments a template does not differentiate would silently get zero tangents.
        contributed = {n.slice.id for st in tmpl.body for n in iter_nodes(st)
                       if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id == "t"
                       and isinstance(n.slice, gast.Name)}
        self.refuse_undifferentiated(rule, tmpl, bindings, contributed, varied_inside, s)
        local, contribs = self.apply_template(tmpl, bindings, seed)
        simplify = _Simplify(set(self.deriv_names.values()))
        result = None
        for c in contribs:
            if c.param == tmpl.params[0]:
                result = simplify(c.expr)
        if result is None or _is_zero(result):
            state[v] = ZERO
            return code
        code += local
        if tmpl.broadcasts and dropped:
            result = rule_call(rt.broadcast_like, [result, name(v)])
        self.set_tangent(v, result, state, code)
        return code

    def setitem(self, s, state) -> list:
        tgt = s.targets[0]
        arr = tgt.value.id
        value = s.value
        code: list = [s]
        v_nonzero = isinstance(value, gast.Name) and state.get(value.id, ZERO) != ZERO
        if not v_nonzero and state.get(arr, ZERO) == ZERO:
            return code
        if arr not in self.fresh_arrays:
            raise self.write_into_alias_error(arr, s)
        self.ensure_owned(arr, state, code)
        rhs = name(self.tan(value.id)) if v_nonzero else const(0.0)
        code.append(assign(gast.Subscript(name(self.tan(arr)), clone(tgt.slice), gast.Store()), rhs))
        return code

    def effect(self, s, state) -> list:
        call = s.value
        fn = getattr(call, "s2s_fn", None)
        code: list = []
        if fn is rt.push:
            st, v = call.args
            if st.id in self.active:
                t = self.tangent_or_zero(v.id, state, code) if isinstance(v, gast.Name) \
                    else rule_call(rt.zeros_like, [clone(v)])
                code.append(expr_stmt(rule_call(rt.push, [name(self.tan(st.id)), t])))
        elif fn is rt.add_at:
            arr, index, v = call.args
            v_nonzero = isinstance(v, gast.Name) and state.get(v.id, ZERO) != ZERO
            if v_nonzero:
                self.ensure_owned(arr.id, state, code)
                code.append(expr_stmt(rule_call(rt.add_at, [name(self.tan(arr.id)), clone(index),
                                                            name(self.tan(v.id))])))
        elif fn is rtb.badd_at:
            arr, index, v, arr_b, v_b, size = call.args
            if isinstance(v, gast.Name) and state.get(v.id, ZERO) != ZERO:
                self.ensure_owned(arr.id, state, code)
                code.append(expr_stmt(rule_call(rtb.badd_at, [name(self.tan(arr.id)), clone(index),
                                                              name(self.tan(v.id))] +
                                                [clone(a) for a in (arr_b, v_b, size)])))
        else:
            def carries(a):
                return any(isinstance(n, gast.Name) and state.get(n.id, ZERO) != ZERO for n in iter_nodes(a))
            self.refuse_unruled_effect(call, s, carries, "differentiate the function before vmapping it, or register a rule")
        return code

    # ----- control flow -----------------------------------------------------------
    def materialize(self, var: str, defined: set[str]):
        t = self.tan(var)
        if var in self.stack_vars:
            return assign(t, rule_call(rt.stack, [])), OWNED
        if var in defined:
            return assign(t, rule_call(rt.zeros_like, [name(var)])), OWNED
        # the primal is not defined on this path either, so neither is its tangent (a 0.0 here
        # would meet the arrays of the other paths, which compiled code cannot type as one)
        return gast.Pass(), MAYBE

    def zero_kind(self, var: str, defined: set[str]) -> str:
        return self.materialize(var, defined)[1]

    def if_(self, s, state, defined) -> list:
        st1, st2 = dict(state), dict(state)
        d1, d2 = set(defined), set(defined)
        b1 = self.block(s.body, st1, d1)
        b2 = self.block(s.orelse, st2, d2)
        joined: dict[str, str] = {}
        for k in {**st1, **st2}:       # (in first-seen order: the code must not vary by process)
            a, b = st1.get(k, ZERO), st2.get(k, ZERO)
            if a == ZERO and b == ZERO:
                continue
            if a == ZERO:
                stmt, a = self.materialize(k, d1)
                b1.append(copy_loc(stmt, s))
            if b == ZERO:
                stmt, b = self.materialize(k, d2)
                b2.append(copy_loc(stmt, s))
            joined[k] = join_states(a, b)
        state.clear()
        state.update(joined)
        defined |= d1 & d2
        return [copy_loc(gast.If(test=s.test, body=b1 or [gast.Pass()], orelse=b2), s)]

    def loop(self, s, state, defined) -> list:
        inner_defined = set(defined) | ({s.target.id} if isinstance(s, gast.For) else set())

        def sweep(start):
            body_state, d_body = dict(start), set(inner_defined)
            return self.block(s.body, body_state, d_body), body_state, d_body

        start, body, body_state, d_body = self.loop_fixpoint(dict(state), defined, sweep)
        pre: list = []
        self.materialize_at_loop(s, state, start, pre, body, body_state, defined, d_body)
        if isinstance(s, gast.For):
            loop = gast.For(target=s.target, iter=s.iter, body=body or [gast.Pass()], orelse=[], type_comment=None)
        else:
            loop = gast.While(test=s.test, body=body or [gast.Pass()], orelse=[])
        return pre + [copy_loc(loop, s)]


def forward(nf: NormalizedFunction, spec: ForwardSpec) -> gast.FunctionDef:
    copy_written_arguments(nf.node, nf.namespace)
    return ForwardBuilder(nf, spec).build()
