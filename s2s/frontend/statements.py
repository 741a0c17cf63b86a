"""Statement desugaring: each statement of the user's function (and of every helper inlined into
it) becomes statements of the normal form.

`stmts` normalizes a statement list; after a statement that may leave early (a `return` inside an
`if`, a `break`), the rest of the list runs under a flag (`if alive: ...`, `if go: ...`).
An augmented assignment becomes a plain one (`x[i] += v`: read the slot, add, write it back); an
assignment to several targets, or to a tuple, binds element by element (through temporaries, so
`a, b = b, a` swaps; a tuple s2s did not see built is read `value[k]`, its length checked when the
code runs unless it is known); an early `return` assigns the frame's result variable and clears
the `alive` flag (and the flags of the loops it leaves); `break` and `continue` clear the loop's
flags. Before an in-place update of an array another local may share and still read, a check
refuses the sharing when the code runs (frontend/aliases.py). A `Frame` is the function being
normalized (the top one or an inlined helper): how its locals are renamed, where its result goes,
the flags of the loops it is in. Loops are desugared in loops.py, expressions in anf.py.

Invariant left for the next pass: the statements are only `name = <simple>`, `name[index] = atom`,
`f(atoms)` (a call for its effect), `assert atom`, `if name: ... else: ...`, the loops loops.py
leaves and one final `return`; no augmented assignment, unpacking, `break`, `continue` or early
`return` remains; every statement carries the user's `lineno` and its file's `s2s_src`.
"""
from __future__ import annotations

import dataclasses
import linecache

import gast

from .. import runtime as rt
from ..errors import UnsupportedSyntaxError
from .aliases import in_place_checks
from .ast_build import UNKNOWN, assign, const, copy_loc, is_atom, name, scope_locals
from .nodes import clone, ends_with, iter_nodes, names_in
from .parse import ParsedFunction


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


class StatementDesugaring:
    """Statement part of `Normalizer` (normalize.py). Fields of `self.state`
    (normalize_state.py) it uses: `frame`, `namer`, `aggregates`, `agg_meta`, `constants`,
    `functions`, `results`, `objects`, `holders`, `appended_rows`, `row_lists`, `always_leaves`,
    `alias_checks`; methods of the other parts: `atom`, `arg_atom`, `simple`, `index`,
    `note_result` (anf.py), `assign_aggregate`, `bind_value`, `aggregate_or_name`,
    `emit_literal` (containers.py), `call_rule` (inlining.py), `store_name`, `local_name`,
    `object_of`, `stores_in_frame` (resolution.py), `error`."""

    def stmts(self, body: list) -> tuple[list, bool]:
        """Normalize a statement list; True if control may leave it early."""
        out: list = []
        for i, s in enumerate(body):
            self.state.always_leaves = False
            new, exits = self.stmt(s)
            leaves, self.state.always_leaves = self.state.always_leaves, False
            for n in new:
                if not hasattr(n, "lineno"):
                    copy_loc(n, s)
                if not hasattr(n, "s2s_src"):
                    n.s2s_src = self.state.frame.parsed.source
            out += new
            if leaves:
                return out, True           # (a folded `if` whose path returns: the rest is no code)
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
        f = self.state.frame
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
        state = self.state
        fdef = state.frame.parsed.node
        table = state.alias_checks.get(id(fdef))
        if table is None:
            table = state.alias_checks[id(fdef)] = (fdef, in_place_checks(fdef))
        pairs = table[1].get(id(s))
        if not pairs:
            return []
        text = self.user_line(s) or "an in-place update"
        out = []
        for y, z in pairs:
            if y not in state.frame.locals or z not in state.frame.locals or \
                    state.frame.rename[y] in state.aggregates or state.frame.rename[z] in state.aggregates:
                continue         # (split lists: a change through another name is followed, sequences.py)
            check = self.call_rule(rt.check_unshared, [name(state.frame.rename[y]), name(state.frame.rename[z]),
                                                       const(text), const(y), const(z)], s)
            out.append(copy_loc(gast.Expr(value=check), s))
        return out

    def user_line(self, s) -> str:
        """The user's source line of a statement (for run-time checks' messages)."""
        return self.state.frame.parsed.source.line(getattr(s, "lineno", None)).strip()

    def holder_checks(self, var: str, shown: str, s) -> list:
        """Before `x += v` (in place for an array): x's array may also be an element of a list or
        tuple, a default argument or a partial's argument s2s copied when it was bound; Python would
        change that too. A check refuses when it runs if they are one array (numbers pass)."""
        text = self.user_line(s) or "an in-place update"
        out = []
        for holder, label in sorted(self.state.holders.get(var, {}).items()):
            check = self.call_rule(rt.check_not_held, [name(var), name(holder), const(text), const(shown),
                                                       const(label)], s)
            out.append(copy_loc(gast.Expr(value=check), s))
        if var in self.state.appended_rows:
            check = self.call_rule(rt.check_not_held, [name(var), name(var), const(text), const(shown),
                                                       const(f"an element of {self.state.appended_rows[var]}")], s)
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
        if isinstance(value, gast.Name) and value.id in self.state.aggregates:
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
        state = self.state
        out: list = []
        target = s.target
        if isinstance(target, gast.Name):
            var = self.store_name(target.id, s)
            if var in state.aggregates and state.agg_meta.get(var, ("",))[0] == "list" and isinstance(s.op, gast.Add):
                # `xs += [v]` extends the list in place (other names holding it see the change)
                self.grow(var, self.elements_of(self.arg_atom(s.value, out), s), s, out)
                return out, False
            out += self.holder_checks(var, target.id, s)
            load = name(target.id)
            copy_loc(load, target)
            self.assign_to(target, copy_loc(gast.BinOp(load, s.op, s.value), s), out, s)
        elif isinstance(target, gast.Subscript):
            base = self.local_name(target.value, s)
            index = self.index(target.slice, out)
            old = state.namer.temp()
            out.append(assign(old, gast.Subscript(name(base), index, gast.Load()), s))
            rhs = self.atom(s.value, out)
            new = state.namer.temp()
            out.append(assign(new, gast.BinOp(name(old), s.op, rhs), s))
            out.append(assign(gast.Subscript(name(base), clone(index), gast.Store()), name(new), s))
        elif isinstance(target, gast.Attribute) and self.object_rooted(target):
            # `self.n_calls += 1`: a counter on an object, no part of the maths (effects.py)
            self.emit_block([s], s, out)
        else:
            raise self.error(UnsupportedSyntaxError, "unsupported augmented assignment target", s)
        return out, False

    def assign_to(self, target, value, out: list, s) -> None:
        if isinstance(value, gast.GeneratorExp) and isinstance(target, (gast.Tuple, gast.List)):
            value = copy_loc(gast.ListComp(elt=value.elt, generators=value.generators), value)   # unpacked now
        if isinstance(value, gast.GeneratorExp):
            raise self.error(UnsupportedSyntaxError, "s2s evaluates a generator expression where it stands, so a "
                             "generator kept in a variable would see the values of the time it was made, not of "
                             "the time it is read (and could be read twice)", s,
                             "use a list comprehension, or consume the generator where it is written: "
                             "`sum(x * c for x in xs)`")
        if isinstance(target, gast.Name) and isinstance(value, gast.ListComp):
            var = self.store_name(target.id, s)
            acc = self.comprehension(value, out, keep_list=True)
            if acc in self.state.row_lists:          # filled by a loop kept: the name reads its rows (sequences.py)
                if var in self.state.aggregates:
                    self.drop_container(var, target.id, s)
                for table in (self.state.functions, self.state.constants):
                    table.pop(var, None)
                self.state.row_lists[var] = self.state.row_lists[acc]
            else:
                self.bind_value(var, self.aggregate_or_name(acc), out, s)
            return
        if isinstance(target, gast.Name):
            var = self.store_name(target.id, s)
            if isinstance(value, (gast.Tuple, gast.List)):
                self.assign_aggregate(var, value.elts, out, s,
                                      ("list" if isinstance(value, gast.List) else "tuple", None, None))
                return
            simple = self.simple(value, out)
            if isinstance(simple, gast.Name) and simple.id in self.state.functions:
                self.bind_value(var, simple, out, s)        # a function value (functions.py)
                return
            if isinstance(simple, gast.Name) and simple.id in self.state.aggregates:
                self.bind_value(var, self.aggregate_or_name(simple.id), out, s)
                return
            if isinstance(simple, (gast.Tuple, gast.List)):
                self.bind_value(var, simple, out, s)
                return
            if var in names_in(simple) and not is_atom(simple):
                tmp = self.state.namer.temp()
                out.append(assign(tmp, simple, s))
                simple = name(tmp)
            if var in self.state.aggregates:
                self.drop_container(var, target.id, s)
            out.append(assign(var, simple, s))
            if isinstance(simple, gast.Constant):
                self.state.constants[var] = simple.value
            else:
                self.state.constants.pop(var, None)
            self.note_result(var, simple)
            held = self.object_of(simple)
            if held is not None and self.stores_in_frame().get(target.id) == 1:
                self.state.objects[var] = held        # (`self_f = f_self` in generated code s2s reads again)
        elif isinstance(target, (gast.Tuple, gast.List)):
            if isinstance(value, (gast.Tuple, gast.List)):
                if len(value.elts) != len(target.elts):
                    raise self.error(UnsupportedSyntaxError, "cannot unpack: the number of values does not match", s)
                atoms = [self.arg_atom(v, out) for v in value.elts]
                # copy to temporaries first, so `a, b = b, a` swaps
                tmps = []
                for a in atoms:
                    if isinstance(a, gast.Name):
                        tmp = self.state.namer.temp()
                        out.append(assign(tmp, a, s))
                        tmps.append(name(tmp))
                    else:
                        tmps.append(a)
                for t, a in zip(target.elts, tmps):
                    self.assign_normalized(t, a, out, s)
                return
            src = self.atom(value, out)
            elems = self.state.aggregates.get(src.id) if isinstance(src, gast.Name) else None
            fields = self.state.results.get(src.id) if isinstance(src, gast.Name) else None
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
                    tmp = self.state.namer.temp()
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
            if base in self.state.aggregates:        # d[key] = v on a split dict or list (sequences.py)
                key = self.static_key(self.atom(target.slice, out), s)
                self.set_item(base, key, self.arg_atom(value, out), s, out)
                return
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
            if isinstance(value, gast.Name) and value.id in self.state.aggregates:
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

    def stmt_If(self, s):
        state = self.state
        out: list = []
        test = self.atom(s.test, out)
        known = test.value if isinstance(test, gast.Constant) else \
            state.constants[test.id] if isinstance(test, gast.Name) and test.id in state.constants else UNKNOWN
        if known is not UNKNOWN and isinstance(known, (bool, int, str, type(None))) and self.settled(s.test):
            # a test s2s knows (a constant, a flag argument with its default, `if ax:` with ax None):
            # only the path taken is code
            path = s.body if known else s.orelse
            taken, exits = self.stmts(path)
            state.always_leaves = always_returns(path)
            return out + taken, exits
        if isinstance(test, gast.Constant):
            tmp = state.namer.temp()
            out.append(assign(tmp, test, s))
            test = name(tmp)
        before = self.static_state()
        body, e1 = self.stmts(s.body)
        after_body = self.static_state()
        self.restore_static_state(before)
        orelse, e2 = self.stmts(s.orelse)
        self.merge_static_state(before, after_body, orelse, s)
        out.append(copy_loc(gast.If(test=test, body=body or [gast.Pass()], orelse=orelse), s))
        return out, e1 or e2

    def settled(self, expr) -> bool:
        """Whether a test's value is the same wherever the code could evaluate it: the locals it
        reads are bound once in the function's source (a flag argument, `callback=None`, a key of an
        unrolled loop), not flags the code reassigns (`alive`, `go`: code generated by s2s and
        normalized again keeps tests on them, which other branches it does not fold mirror)."""
        if linecache.getline(self.state.frame.parsed.source.filename, 1).startswith("# Generated by s2s"):
            return False
        stores = self.stores_in_frame()
        return all(stores.get(n.id, 0) <= 1 for n in iter_nodes(expr)
                   if isinstance(n, gast.Name) and n.id in self.state.frame.locals)

    # ----- what s2s knows statically (split containers, constants, function values) across an `if`
    def static_state(self) -> tuple:
        state = self.state
        return ({v: list(e) for v, e in state.aggregates.items()}, dict(state.agg_meta), dict(state.constants),
                dict(state.functions))

    def restore_static_state(self, saved: tuple) -> None:
        aggregates, meta, constants, functions = saved
        for v, elems in aggregates.items():
            self.state.aggregates[v] = list(elems)
        self.state.agg_meta.update(meta)
        self.state.constants.clear()
        self.state.constants.update(constants)
        self.state.functions.clear()
        self.state.functions.update(functions)

    def merge_static_state(self, before: tuple, after_body: tuple, orelse: list, s) -> None:
        """After both paths of an `if` on data: a split container holds the same element variables
        (the else path copies its values into the if path's), constants both paths agree on stay,
        and a variable bound to different functions holds one chosen at run time."""
        body_aggs, body_meta, body_consts, body_fns = after_body
        before_aggs = before[0]
        user = {v: k for k, v in self.state.frame.rename.items()}
        for var in set(body_aggs) ^ set(self.state.aggregates):
            # a container on one path and a single value on the other (or only before)
            path = s.orelse if var in body_aggs else s.body
            if var in before_aggs or user.get(var, var) in scope_locals(path):
                raise self.error(UnsupportedSyntaxError, f"`{user.get(var, var)}` holds a tuple/list/dict after one "
                                 "path of this `if` and a single value after the other", s,
                                 "use different variable names for the container and the value")
        for var, elems in body_aggs.items():
            mine = self.state.aggregates.get(var)
            if mine is None or mine == elems:
                if mine is None:
                    self.state.aggregates[var] = list(elems)
                    self.state.agg_meta[var] = body_meta[var]
                continue
            if len(mine) != len(elems) or body_meta.get(var, ("",))[:2] != self.state.agg_meta.get(var, ("",))[:2]:
                raise self.error(UnsupportedSyntaxError, "a list or dict has a different length (or keys) after "
                                 "the two paths of this `if`, which s2s must know when it reads the code", s,
                                 "grow it the same way on both paths, or store the values in a preallocated array")
            for mine_e, body_e in zip(mine, elems):
                if mine_e != body_e:
                    self.bind_value(body_e, self.aggregate_or_name(mine_e) if mine_e in self.state.aggregates
                                    else name(mine_e), orelse, s)
            self.state.aggregates[var] = list(elems)
            self.state.agg_meta[var] = body_meta[var]
        for var in list(self.state.constants):
            if body_consts.get(var, UNKNOWN) != self.state.constants[var]:
                del self.state.constants[var]
        self.merge_function_bindings(before[3], body_fns, dict(self.state.functions))

    def stmt_Return(self, s):
        f = self.state.frame
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
        loop = self.state.frame.loops[-1]
        return [assign(loop.go, const(False), s), assign(loop.cond, const(False), s)], True

    def stmt_Continue(self, s):
        loop = self.state.frame.loops[-1]
        return [assign(loop.go, const(False), s)], True


def _walk_same_function(stmts):
    for s in stmts:
        yield from iter_nodes(s)


def has_return(stmts) -> bool:
    return any(isinstance(n, gast.Return) for n in _walk_same_function(stmts))


def always_returns(stmts) -> bool:
    """Control never falls off the end of `stmts` (the last statement returns on every path, or
    raises: then the statements return somewhere)."""
    return ends_with(stmts, (gast.Return, gast.Raise)) and has_return(stmts)


def has_early_return(body) -> bool:
    for i, s in enumerate(body):
        is_last = i == len(body) - 1
        if isinstance(s, gast.Return):
            if not is_last:
                return True
            continue
        if has_return([s]):
            return True
    return False
