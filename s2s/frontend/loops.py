"""Loop desugaring: `for` and `while` loops in the two forms the transforms replay.

A `for` over `range(...)`, `reversed(range(...))`, a sequence, `enumerate(...)` or `zip(...)`
becomes `for k in range(n):` with the element reads first in the body (`x = xs[k]`; a
`choose(k, e0, e1, ...)` for a split list); the range is bound to a temporary when the body
reassigns its bounds, since the backward sweep replays the same range. A loop with `break`,
`continue` or `return` inside becomes a `while` over an explicit counter, its body guarded by a
`go` flag (statements.py). A loop over a split tuple, list or dict (or its `.items()`,
`.keys()`, `.values()`) is unrolled: one copy of the body per element. A `while` computes its
condition into a variable before the loop and again as the last statement of the body.

Invariant left for the next pass: a `for` loop is `for name in range(atoms)` (or over a variable
holding a range) with no `break`, `continue` or `return` in its body; a `while` loop tests a
variable that the end of its body recomputes.
"""
from __future__ import annotations

import builtins

import gast

from .. import runtime as rt
from ..errors import UnsupportedSyntaxError
from .ast_build import assign, assigned_names, const, copy_loc, name, scope_locals
from .containers import container_literal
from .functions import AMBIGUOUS
from .nodes import clone, iter_nodes
from .statements import Loop, has_return


class LoopDesugaring:
    """Loop part of `Normalizer` (normalize.py). Fields of `self.state` (normalize_state.py) it
    uses: `frame` (its `loops` stack), `namer`, `aggregates`, `agg_meta`, `constants`,
    `functions`, `dynamic_depth`; methods of the other parts: `stmts`, `guard_flag`,
    `assign_normalized` (statements.py), `atom`, `expr_into` (anf.py), `bind_value`,
    `element_of` (containers.py), `call_rule` (inlining.py), `store_name`, `try_resolve`
    (resolution.py), `error`."""

    def stmt_While(self, s):
        out: list = []
        cond = self.state.namer.temp()
        self.expr_into(s.test, cond, out)
        exits = _has_exit(s.body)
        loop = Loop(cond, self.state.namer.fresh("go") if exits else None)
        self.state.frame.loops.append(loop)
        self.enter_dynamic_loop(s.body)
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
            self.state.frame.loops.pop()
            self.leave_dynamic_loop(s.body)
        out.append(copy_loc(gast.While(test=name(cond), body=body, orelse=[]), s))
        return out, has_return(s.body)

    def stmt_For(self, s):
        out: list = []
        it = s.iter
        kind, args = self.iteration(it, out)
        return self.for_loop(s, kind, args, out)

    def for_loop(self, s, kind: str, args: list, out: list) -> tuple[list, bool]:
        """The `for` statement `s` over an iterable classified by `iteration`."""
        state = self.state
        if kind in ("seq", "range", "rangeobj", "zip") and not _has_exit(s.body) and self.starts_empty(s.body) and not (
                kind in ("seq", "zip") and
                any(isinstance(a, gast.Name) and a.id in state.aggregates for a in args)) and not (
                kind == "range" and all(self.is_static_int(a) for a in args)):
            return self.peel_first(s, kind, args, out)
        if kind == "range" and len(args) <= 3 and all(self.is_static_int(a) for a in args) \
                and self.grows_outer_container(s.body):
            # a range s2s knows, filling a list or dict (a comprehension): unrolled, so the list's
            # length is known
            steps = range(*[self.static_key(a, s) for a in args])
            if len(steps) > 1000:
                raise self.error(UnsupportedSyntaxError, f"this loop fills a list with {len(steps)} elements, one "
                                 "variable each", s, "preallocate an array and write rows into it")
            tmp = state.namer.temp()
            self.bind_value(tmp, container_literal([const(k) for k in steps], ("tuple", None, None)), out, s)
            return self.unroll(s, "seq", [name(tmp)], out)
        if kind == "items" or (kind in ("seq", "enumerate", "zip") and any(
                isinstance(q, gast.Name) and q.id in state.aggregates for q in args)):
            return self.unroll(s, kind, args, out)
        # Per-iteration element assignments, as (target, value-maker) pairs.
        if kind == "range":
            count_args = args
        elif kind == "rangeobj":
            count_args = None
        else:
            seqs = args
            if len(seqs) == 1:
                n = state.namer.temp()
                q = seqs[0]
                length = const(len(state.aggregates[q.id])) if isinstance(q, gast.Name) and q.id in state.aggregates \
                    else self.call_rule(builtins.len, [q], s)
                out.append(assign(n, length, s))
            else:
                lens = []
                for q in seqs:
                    ln = state.namer.temp()
                    out.append(assign(ln, self.call_rule(builtins.len, [q], s), s))
                    lens.append(name(ln))
                n = state.namer.temp()
                out.append(assign(n, self.call_rule(builtins.min, lens, s), s))
            count_args = [name(n)]
        target = s.target
        if kind in ("range", "rangeobj") and isinstance(target, gast.Name):
            index_var = self.store_name(target.id, s)
            elem_assigns: list = []
        else:
            index_var = state.namer.fresh("k")
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
            body_assigned = {state.frame.rename.get(n, n) for n in assigned_names(s.body)}
            if count_args is None:
                iter_node = args[0]
            elif any(isinstance(a, gast.Name) and a.id in body_assigned for a in count_args):
                r = state.namer.temp()
                out.append(assign(r, self.call_rule(builtins.range, count_args, s), s))
                iter_node = name(r)
            else:
                iter_node = self.call_rule(builtins.range, count_args, s)
            if self._appends_in(s.body, s):
                if count_args is None:
                    steps = state.namer.temp()
                    out.append(assign(steps, self.call_rule(builtins.len, [iter_node], s), s))
                else:
                    r = state.namer.temp()
                    out.append(assign(r, self.call_rule(builtins.range, count_args, s), s))
                    iter_node = name(r)
                    steps = state.namer.temp()
                    out.append(assign(steps, self.call_rule(builtins.len, [name(r)], s), s))
                self.rows_for_loop(s.body, name(steps), out, s)
            state.frame.loops.append(Loop(None, None))
            self.enter_dynamic_loop(s.body, s.target)
            try:
                body: list = []
                for t, v in elem_assigns:
                    self.assign_element(t, v, body, s)
                inner, _ = self.stmts(s.body)
                body += inner
            finally:
                state.frame.loops.pop()
                self.leave_dynamic_loop(s.body, s.target)
                self.close_row_lists()
            out.append(copy_loc(gast.For(target=name(index_var, gast.Store()), iter=iter_node,
                                         body=body or [gast.Pass()], orelse=[], type_comment=None), s))
            return out, False
        # With break/continue/return: a while loop over an explicit counter.
        if count_args is None:
            r = args[0].id
        else:
            r = state.namer.temp()
            out.append(assign(r, self.call_rule(builtins.range, count_args, s), s))
        n = state.namer.temp()
        out.append(assign(n, self.call_rule(builtins.len, [name(r)], s), s))
        k = state.namer.fresh("k")
        out.append(assign(k, const(0), s))
        cond = state.namer.temp()
        out.append(assign(cond, gast.Compare(name(k), [gast.Lt()], [name(n)]), s))
        self.rows_for_loop(s.body, name(n), out, s)
        loop = Loop(cond, state.namer.fresh("go"))
        state.frame.loops.append(loop)
        self.enter_dynamic_loop(s.body, s.target)
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
            state.frame.loops.pop()
            self.leave_dynamic_loop(s.body, s.target)
            self.close_row_lists()
        out.append(copy_loc(gast.While(test=name(cond), body=body, orelse=[]), s))
        return out, has_return(s.body)

    def _held_element(self, value, node, out):
        """An element of a split container as an atom (a nested container gets a variable)."""
        if isinstance(value, (gast.Tuple, gast.List)):
            tmp = self.state.namer.temp()
            self.bind_value(tmp, value, out, node)
            return name(tmp)
        return value

    def starts_empty(self, body: list) -> bool:
        """The body appends to a list that is empty before the loop."""
        return any(not self.state.aggregates[var] for var in self._appends_in(body, None))

    def peel_first(self, s, kind: str, args: list, out: list) -> tuple[list, bool]:
        """A loop (trip count known when it runs) filling an empty list: its first step written out
        before the loop, so the list has its first element (the shape of its rows, sequences.py)
        when the loop over the other steps starts. An empty iterable is refused when the code runs
        (rt.check_nonempty), where Python's list would stay empty."""
        if kind == "range":
            # range(a, b, c): its first step is a, the others range(a + c, b, c) (a range again, so
            # compiled code keeps a range, which it can reverse)
            a, b, c = (const(0), args[0], const(1)) if len(args) == 1 else \
                (args[0], args[1], args[2] if len(args) > 2 else const(1))
            r = self.state.namer.temp()
            out.append(assign(r, self.call_rule(builtins.range, args, s), s))
            self._check_nonempty(name(r), s, out)
            self.assign_normalized(s.target, a, out, s)
            inner, _ = self.stmts(s.body)
            out += inner
            start = self.state.namer.temp()
            out.append(assign(start, gast.BinOp(a, gast.Add(), c), s))
            return self.for_loop(s, "range", [name(start), b, c], out)
        seqs = args
        firsts = []
        for q in seqs:
            self._check_nonempty(q, s, out)
            tmp = self.state.namer.temp()
            out.append(assign(tmp, gast.Subscript(clone(q), const(0), gast.Load()), s))
            firsts.append(name(tmp))
        if kind == "zip":
            if not (isinstance(s.target, (gast.Tuple, gast.List)) and len(s.target.elts) == len(firsts)):
                raise self.error(UnsupportedSyntaxError, "unpack zip() into one name per sequence", s)
            for t, v in zip(s.target.elts, firsts):
                self.assign_normalized(t, v, out, s)
        elif isinstance(s.target, gast.Name):
            self.assign_normalized(s.target, firsts[0], out, s)
        else:
            self.assign_element(s.target, firsts[0], out, s)
        inner, _ = self.stmts(s.body)
        out += inner
        rests = []
        for q in seqs:
            rest = self.state.namer.temp()
            out.append(assign(rest, gast.Subscript(clone(q), gast.Slice(const(1), None, None), gast.Load()), s))
            rests.append(name(rest))
        return self.for_loop(s, "rangeobj" if kind in ("range", "rangeobj") else kind, rests, out)

    def _check_nonempty(self, seq, s, out: list) -> None:
        check = self.call_rule(rt.check_nonempty, [seq, const(self.user_line(s) or "this loop")], s)
        out.append(copy_loc(gast.Expr(value=check), s))

    def is_static_int(self, atom) -> bool:
        value = atom.value if isinstance(atom, gast.Constant) else self.state.constants.get(atom.id) \
            if isinstance(atom, gast.Name) else None
        return isinstance(value, int) and not isinstance(value, bool)

    def enter_dynamic_loop(self, body: list, target=None) -> None:
        """A loop s2s keeps (its trip count known when the code runs): what the body rebinds is not
        known statically inside it (a constant, a function value), and lists made outside it cannot
        grow in it (sequences.py)."""
        self.state.dynamic_depth += 1
        self._forget_rebound(body, target, on_entry=True)

    def leave_dynamic_loop(self, body: list, target=None) -> None:
        self.state.dynamic_depth -= 1
        self._forget_rebound(body, target, on_entry=False)

    def _forget_rebound(self, body: list, target, on_entry: bool) -> None:
        rebound = scope_locals(body) | (scope_locals([gast.Assign(targets=[target], value=const(0), type_comment=None)])
                                        if target is not None else set())
        for n in rebound:
            var = self.state.frame.rename.get(n)
            if var is None:
                continue
            self.state.constants.pop(var, None)
            if on_entry and var in self.state.functions:
                self.state.functions[var] = AMBIGUOUS

    def unroll(self, s, kind: str, seqs: list, out: list) -> tuple[list, bool]:
        """A loop over a split tuple/list/dict: one copy of the body per element."""
        if _has_break_continue(s.body):
            raise self.error(UnsupportedSyntaxError, "break/continue in a loop over a tuple/list is not supported", s,
                             "loop over range(len(...)) instead")
        lengths = [len(self.state.aggregates[q.id]) if isinstance(q, gast.Name) and q.id in self.state.aggregates
                   else len(q.value) if isinstance(q, gast.Constant) and isinstance(q.value, (str, bytes)) else None
                   for q in seqs]
        known = [n for n in lengths if n is not None]
        n = min(known)
        if kind == "items":
            keys = self.state.agg_meta[seqs[0].id][1]
        blocks = []
        for k in range(n):
            code: list = []
            values = [self.element_of(q.id, k if self.state.agg_meta.get(q.id, ("tuple",))[0] != "dict"
                                      else self.state.agg_meta[q.id][1][k], s)
                      if isinstance(q, gast.Name) and q.id in self.state.aggregates
                      else const(q.value[k]) if isinstance(q, gast.Constant) and isinstance(q.value, (str, bytes))
                      else gast.Subscript(clone(q), const(k), gast.Load()) for q in seqs]
            if kind == "items":
                self.assign_normalized(s.target, container_literal([const(keys[k]), values[0]], ("tuple", None, None)),
                                       code, s)
            elif kind == "enumerate":
                self.assign_normalized(s.target, container_literal([const(k), values[0]], ("tuple", None, None)),
                                       code, s)
            elif kind == "zip":
                self.assign_normalized(s.target, container_literal(values, ("tuple", None, None)), code, s)
            else:
                v = values[0]
                if isinstance(v, gast.Subscript):
                    tmp = self.state.namer.temp()
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
        tmp = self.state.namer.temp()
        out.append(assign(tmp, value, s))
        raise self.error(UnsupportedSyntaxError, "unpacking rows of an array in a for loop is not supported", s,
                         "index the row instead: for i in range(len(X)): a, b = X[i, 0], X[i, 1]")

    def _subscriptable(self, seq, out):
        return seq

    def element(self, seq, index, s):
        """seq[index] for a loop element: a choose() for split tuples/lists."""
        if isinstance(seq, gast.Name) and seq.id in self.state.aggregates:
            elems = self.state.aggregates[seq.id]
            if any(e in self.state.aggregates for e in elems):
                raise self.error(UnsupportedSyntaxError, "s2s cannot loop over a list of tuples", s)
            return self.call_rule(rt.choose, [index] + [name(e) for e in elems], s)
        return gast.Subscript(clone(seq), index, gast.Load())

    def is_range(self, node) -> bool:
        """`range(...)`, or a local bound only to `range(...)` calls: reversed() of it iterates numbers."""
        if isinstance(node, gast.Call):
            return self.try_resolve(node.func) is builtins.range
        return isinstance(node, gast.Name) and self._holds_only_ranges(node.id)

    def _holds_only_ranges(self, ident: str) -> bool:
        """Whether the local `ident` is bound only to `range(...)` calls in the function's own body
        (not a parameter)."""
        fdef = self.state.frame.parsed.node
        if ident in {a.id for a in fdef.args.args if isinstance(a, gast.Name)}:
            return False
        values = _assignments_to(fdef, ident)
        return bool(values) and all(isinstance(v, gast.Call) and self.try_resolve(v.func) is builtins.range
                                    for v in values)

    def _reversed_aggregate(self, seq, node, out):
        """A split tuple/list in reverse order (a new split value)."""
        tmp = self.state.namer.temp()
        elements = [self.aggregate_or_name(e) for e in reversed(self.state.aggregates[seq.id])]
        self.bind_value(tmp, container_literal(elements, ("tuple", None, None)), out, node)
        return name(tmp)

    def iteration(self, it, out) -> tuple[str, list]:
        """Classify a for loop's iterable: ("range", bound atoms) or (kind, sequence atoms)."""
        if isinstance(it, gast.Call) and not it.keywords and isinstance(it.func, gast.Attribute) \
                and it.func.attr in ("items", "values", "keys") and not it.args:
            base = self.atom(it.func.value, out)
            if isinstance(base, gast.Name) and self.state.agg_meta.get(base.id, ("",))[0] == "dict":
                if it.func.attr == "values":
                    return "seq", [base]
                if it.func.attr == "items":
                    return "items", [base]
                keys = self.state.agg_meta[base.id][1]
                tmp = self.state.namer.temp()
                self.bind_value(tmp, container_literal([const(k) for k in keys], ("tuple", None, None)), out, it)
                return "seq", [name(tmp)]
        if isinstance(it, gast.Call) and not it.keywords:
            obj = self.try_resolve(it.func)
            if obj is builtins.range:
                return "range", [self.atom(a, out) for a in it.args]
            if obj is builtins.reversed and len(it.args) == 1 and self.is_range(it.args[0]):
                base = self.atom(it.args[0], out)   # (or a range object made earlier: `r = range(n)`)
                r = self.state.namer.temp()
                out.append(assign(r, gast.Subscript(base, gast.Slice(None, None, const(-1)), gast.Load()), it))
                return "rangeobj", [name(r)]
            # reversed() of a sequence falls through: its value is the reversed sequence (expr_Call)
            if obj is builtins.enumerate and len(it.args) == 1:
                return "enumerate", [self.atom(it.args[0], out)]
            if obj is builtins.zip:
                seqs = []
                for a in it.args:
                    seqs += [self._held_element(e, it, out) for e in self.spread(a.value, "*", it, out)] \
                        if isinstance(a, gast.Starred) else [self.atom(a, out)]
                return "zip", seqs
        seq = self.atom(it, out)
        if isinstance(seq, gast.Name) and self.state.agg_meta.get(seq.id, ("",))[0] == "dict":
            keys = self.state.agg_meta[seq.id][1]      # iterating a dict yields its keys
            tmp = self.state.namer.temp()
            self.bind_value(tmp, container_literal([const(k) for k in keys], ("tuple", None, None)), out, it)
            return "seq", [name(tmp)]
        return "seq", [seq]


def _assignments_to(fdef, ident: str) -> list:
    """The values assigned to the plain name `ident` in a function's own body (None: another binding)."""
    values = []
    for node in iter_nodes(fdef):
        if isinstance(node, gast.Assign) and any(isinstance(t, gast.Name) and t.id == ident for t in node.targets):
            values.append(node.value if len(node.targets) == 1 else None)
        elif isinstance(node, (gast.AugAssign, gast.AnnAssign, gast.For, gast.NamedExpr)) and any(
                isinstance(t, gast.Name) and t.id == ident for t in iter_nodes(getattr(node, "target", None))):
            values.append(None)
        elif isinstance(node, gast.Assign) and any(
                isinstance(n, gast.Name) and n.id == ident for t in node.targets for n in iter_nodes(t)):
            values.append(None)          # bound by unpacking
    return values


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


def _has_break_continue(stmts) -> bool:
    def visit(nodes):
        for s in nodes:
            if isinstance(s, (gast.Break, gast.Continue)):
                return True
            if isinstance(s, gast.If) and (visit(s.body) or visit(s.orelse)):
                return True
        return False
    return visit(stmts)
