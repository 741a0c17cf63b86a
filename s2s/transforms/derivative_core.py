"""What forward and reverse mode share: one core, two directions.

DerivativeBuilder is the base of ForwardBuilder (tangents, forward.py) and ReverseBuilder
(adjoints, reverse.py):
- deriv: the fresh name of a variable's tangent or adjoint; ensure_owned: make it an array of its
  own; error: an error at the user's line;
- loop_fixpoint / materialize_at_loop: the derivative states at a loop's start, iterated over its
  body until they settle, and the zeros materialized where the two sides of the back edge differ;
- bind_template / apply_template / refuse_undifferentiated: a rule's template bound to a call,
  expanded, and refused for an argument that carries a derivative the template does not give;
- the refusals both modes make (an index that carries a derivative, aliasing, writes into an
  array that may alias, an op with no rule in this mode), each message written once.
"""
from __future__ import annotations

import gast

from ..errors import NoRuleError, NonDifferentiableError, UnsupportedSyntaxError
from ..frontend.ast_build import copy_loc, name, namer_for, walk_stmts
from ..frontend.nodes import clone
from ..rules.table import lookup
from .. import runtime as rt
from .common import MISSING_RULE, ZERO, join_states, make_owned

# A bound, not a tuning: a loop's states settle in a few rounds; this stops a join that would not.
FIXPOINT_ROUNDS = 20


class DerivativeBuilder:
    which = ""              # "tangent" or "adjoint": the template a rule must have for this mode
    deriv_word = ""         # "derivative" or "gradient", in the hint of a refused argument

    def __init__(self, nf):
        self.nf = nf
        self.src = nf.source
        self.namer = namer_for(nf.node, nf.namespace)
        self.deriv_names: dict[str, str] = {}
        self.stack_vars = {s.targets[0].id for s in walk_stmts(nf.node.body)
                           if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                           and getattr(s.value, "s2s_fn", None) is rt.stack}

    def error(self, cls, msg, node, hint=None):
        src = getattr(node, "s2s_src", None) or self.src
        return src.error(cls, msg, node, hint)

    def spell_deriv(self, var: str) -> str:
        raise NotImplementedError

    def deriv(self, var: str) -> str:
        """The name of var's tangent or adjoint, fresh at its first use."""
        if var not in self.deriv_names:
            self.deriv_names[var] = self.namer.fresh(self.spell_deriv(var))
        return self.deriv_names[var]

    def ensure_owned(self, var: str, state: dict, code: list) -> None:
        make_owned(self.deriv(var), var, state, code)

    # ----- loops ------------------------------------------------------------------
    def zero_kind(self, var: str, defined: set[str]) -> str:
        """The state a ZERO derivative of var takes when materialized where `defined` are defined."""
        raise NotImplementedError

    def loop_fixpoint(self, start: dict, defined: set[str], sweep, join_nonzero=None):
        """The derivative states at a loop's start that one pass over its body leaves as they are.

        sweep(start) builds the body's code from the states `start`, returning (code, states at its end,
        names defined at its end).  A derivative ZERO on one side of the back edge is materialized
        there (zero_kind); nonzero on both sides, the two meet by join_nonzero(var, a, b) (join_states
        when None).  Every round but the last is undone in the namer.  Returns the settled states and
        the last round's code, end states and defined names."""
        for _ in range(FIXPOINT_ROUNDS):
            names = (clone(self.namer.__dict__), dict(self.deriv_names))
            body, body_state, body_defined = sweep(start)
            new_start = dict(start)
            for k in {**start, **body_state}:      # (in first-seen order: a set's order varies by process)
                a, b = start.get(k, ZERO), body_state.get(k, ZERO)
                if a == ZERO and b == ZERO:
                    continue
                if a == ZERO:      # zeros materialized before the loop
                    new_start[k] = join_states(self.zero_kind(k, defined), b)
                elif b == ZERO:    # zeros materialized at the end of the body
                    new_start[k] = join_states(a, self.zero_kind(k, body_defined))
                elif join_nonzero is not None:
                    new_start[k] = join_nonzero(k, a, b)
                else:
                    new_start[k] = join_states(a, b)
            if new_start == start:
                break
            start = new_start
            self.namer.__dict__.update(names[0])
            self.deriv_names = names[1]
        return start, body, body_state, body_defined

    def materialize_at_loop(self, s, state: dict, start: dict, pre: list, body: list, body_state: dict,
                            defined: set[str], body_defined: set[str]) -> None:
        """Materialize the zeros of `state` (before the loop, into `pre`) and of `body_state` (at the end
        of `body`) that the settled `start` has nonzero; `state` becomes `start`."""
        for k, v in start.items():
            if v != ZERO and state.get(k, ZERO) == ZERO:
                pre.append(copy_loc(self.materialize(k, defined)[0], s))
            if v != ZERO and body_state.get(k, ZERO) == ZERO:
                body.append(copy_loc(self.materialize(k, body_defined)[0], s))
        state.clear()
        state.update(start)

    # ----- templates -------------------------------------------------------------
    def bind_template(self, rule, tmpl, v: str, args: list, kws: dict, s) -> dict:
        """The template's parameters bound to the call's arguments (its first to the result `v`); the
        globals it reads go into the namespace the generated code runs in."""
        try:
            bindings = tmpl.bind(name(v), args, kws)
        except TypeError as exc:
            raise self.error(UnsupportedSyntaxError, f"unexpected arguments to `{rule.name}`: {exc}", s) from None
        for key, value in tmpl.free_globals().items():
            self.nf.namespace.setdefault(key, value)
        return bindings

    def apply_template(self, tmpl, bindings: dict, seed):
        """The template's local statements and its contributions, seeded with `seed`."""
        return tmpl.expand(bindings, tmpl.params[0], seed, lambda _: self.namer.temp())

    def refuse_undifferentiated(self, rule, tmpl, bindings: dict, contributed: set, carries, s) -> None:
        """An argument that carries a derivative (`carries(node)`) but that the template gives none
        (nor takes as static) would get a silent zero: refuse it."""
        for param, node in bindings.items():
            if param == tmpl.params[0] or param in contributed or param in tmpl.static_params:
                continue
            if carries(node):
                raise self.error(NonDifferentiableError,
                                 f"s2s does not differentiate `{rule.name}` with respect to its argument `{param}`", s,
                                 f"wrap that argument in s2s.stop_gradient(...) if no {self.deriv_word} is wanted")

    # ----- refusals both modes make ----------------------------------------------
    def index_error(self, s):
        return self.error(NonDifferentiableError, "s2s does not differentiate through an index: the value "
                          "used as an index here depends on a differentiated input", s,
                          "index with integers or masks; for np.r_-like objects, use np.concatenate")

    def aliasing_error(self, st, var: str, arr: str):
        return self.error(UnsupportedSyntaxError,
                          f"`{var}` refers to (a view of) `{arr}`, which is written into later; "
                          f"s2s cannot differentiate through that aliasing", st,
                          f"take a copy: np.copy({arr}...), or finish writing `{arr}` before reading it whole")

    def write_into_alias_error(self, arr: str, s):
        # (the write also changes whatever else holds that array: a view, an alias, an argument)
        return self.error(UnsupportedSyntaxError,
                          f"s2s can differentiate indexed writes only into arrays created in the function; "
                          f"`{arr}` may alias another array", s,
                          f"make a new array first, e.g. `{arr} = np.copy({arr})` or `{arr} = np.zeros(n)`")

    def element_error(self, rule, s):
        return self.error(NoRuleError, f"s2s cannot differentiate `{rule.name}` through this element", s)

    def refuse_unruled_effect(self, call, s, carries, hint: str) -> None:
        """An op with no rule of this mode, called as a statement on values that carry a derivative
        (`carries(arg)`): refuse, or its writes would be a silent zero."""
        rule = lookup(getattr(call, "s2s_fn", None))
        if rule is None or rule.nondiff or getattr(rule, self.which) is not None:
            return
        if any(carries(a) for a in call.args):
            raise self.error(NoRuleError, f"s2s has no {MISSING_RULE[self.which][0]} rule for `{rule.name}`", s, hint)
