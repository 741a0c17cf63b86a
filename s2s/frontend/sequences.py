"""Lists and dicts as values: grown with `.append`, built by comprehensions, read by `.get`/`.items()`.

A list or dict the function builds is split into one variable per element (containers.py), so
its length must be known when s2s reads the code. `.append`, `.extend`, `.insert`, `.pop`,
`d[key] = v`, `+=` grow or shrink the split container at transform time; that is exact where the
statement runs a number of times s2s knows: outside loops, in loops over tuples/lists/dicts
(unrolled), and on both paths of an `if` when both grow it alike. In a loop whose trip count is
known only when the code runs (`for t in range(T)`, an array's rows, `while`) the length is not
known: refused, with what to write instead.

A comprehension is the loop it stands for: `[f(x) for x in xs if c]` is `acc = []; for x in xs:
if c: acc.append(f(x))`, its names private to it (Python 3 scoping); `{k: v for ...}` fills a
dict; `sum(e for x in xs)` (a generator or list comprehension summed) is `acc = 0; for x in xs:
acc = acc + e`, which also works over arrays and ranges of any length.

Python's lists are shared by reference: after `b = a`, `b.append(x)` changes `a` too, while split
copies would not. So a mutation through one name marks every other name holding the same list
stale, and reading a stale name is refused (the difference is then never observed).

Invariant left for the next pass: as containers.py's, every list/dict is split; no list method
call remains.
"""
from __future__ import annotations

import builtins

import gast
import numpy as np

from .. import runtime as rt
from ..errors import UnsupportedSyntaxError
from .ast_build import assign, const, copy_loc, name
from .containers import container_literal
from .hooks import lookup
from .nodes import clone, iter_nodes

COMPREHENSIONS = (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp)


def _stacks_rows(obj) -> bool:
    """np.stack / np.array / np.asarray: of a list of arrays, its rows as one array (OpRule.stacks_rows)."""
    rule = lookup(obj)
    return rule is not None and rule.stacks_rows


class SequenceBuilding:
    """List/dict part of `Normalizer` (normalize.py). Fields of `self.state`
    (normalize_state.py) it uses: `aggregates`, `agg_meta`, `constants`, `functions`, `holders`,
    `appended_rows`, `row_lists`, `list_depth`, `dynamic_depth`, `list_groups`, `stale`,
    `frame`, `namer`; methods of the other parts: `stmts` (statements.py), `atom`, `arg_atom`
    (anf.py), `bind_value`, `aggregate_or_name`, `element_of` (containers.py), `call_rule`,
    `call_arguments` (inlining.py), `error`."""

    # ----- methods of split lists and dicts ------------------------------------------
    def container_method(self, func, node, out):
        """`xs.append(v)`, `d.get(k, 0.0)`, `d.items()`, ... on a split list/dict; NotImplemented otherwise."""
        if not isinstance(func.value, gast.Name) or func.value.id not in self.state.frame.locals:
            return NotImplemented
        var = self.state.frame.rename[func.value.id]
        if var in self.state.row_lists:
            if func.attr != "append" or len(node.args) != 1 or node.keywords:
                raise self.error(UnsupportedSyntaxError, "s2s supports only `.append(value)` on a list grown in a "
                                 "loop whose number of steps is known only when the code runs", node)
            self.row_append(var, self.atom(node.args[0], out), node, out)
            return const(None)
        if var not in self.state.aggregates:
            return NotImplemented
        kind, keys, _ = self.state.agg_meta.get(var, ("tuple", None, None))
        meth = func.attr
        args, kws = self.call_arguments(node, out)
        self.check_fresh(var, node)
        if kind == "dict":
            if meth == "items":
                pairs = [container_literal([const(k), self.element_of(var, k, node)], ("tuple", None, None))
                         for k in keys]
                return container_literal(pairs, ("list", None, None))
            if meth == "keys":
                return container_literal([const(k) for k in keys], ("list", None, None))
            if meth == "values":
                return container_literal([self.element_of(var, k, node) for k in keys], ("list", None, None))
            if meth == "copy":
                return container_literal(list(self.aggregate_or_name(var).elts), self.state.agg_meta[var])
            if meth == "get":
                key = self.static_key(args[0], node)
                if key in keys:
                    return self.element_of(var, key, node)
                return args[1] if len(args) > 1 else const(None)
            if meth == "update" and len(args) <= 1:
                items = dict(kws)
                if args:
                    other = args[0]
                    if not (isinstance(other, gast.Tuple) and getattr(other, "s2s_meta", ("",))[0] == "dict"):
                        raise self.error(UnsupportedSyntaxError, "s2s updates a dict only from a dict built in the "
                                         "function", node)
                    items = {**dict(zip(other.s2s_meta[1], other.elts)), **items}
                for k, v in items.items():
                    self.set_item(var, k, v, node, out)
                return const(None)
        elif kind == "list":
            if meth == "append" and len(args) == 1:
                self.grow(var, [args[0]], node, out)
                return const(None)
            if meth == "extend" and len(args) == 1:
                self.grow(var, self.elements_of(args[0], node), node, out)
                return const(None)
            if meth == "copy":
                return container_literal(list(self.aggregate_or_name(var).elts), self.state.agg_meta[var])
            if meth in ("insert", "pop"):
                literal = self.aggregate_or_name(var)
                elts = list(literal.elts)
                self.check_static_growth(var, node)
                if meth == "insert" and len(args) == 2:
                    index = self.static_key(args[0], node)
                    elts.insert(index, args[1])
                    self.rebind_list(var, elts, node, out)
                    return const(None)
                if meth == "pop" and len(args) <= 1:
                    index = self.static_key(args[0], node) if args else -1
                    popped = elts.pop(index)
                    tmp = self.state.namer.temp()
                    self.bind_value(tmp, popped, out, node)      # (read before the list's variables change)
                    self.rebind_list(var, elts, node, out)
                    return self.aggregate_or_name(tmp) if tmp in self.state.aggregates else name(tmp)
        elif meth in ("count", "index"):
            return NotImplemented
        raise self.error(UnsupportedSyntaxError, f"s2s does not support `.{meth}()` on a {kind} built in the "
                         "function", node)

    def static_key(self, atom, node):
        """The value of an index or key s2s knows (a constant, or a variable holding one)."""
        if isinstance(atom, gast.Constant):
            return atom.value
        if isinstance(atom, gast.UnaryOp) and isinstance(atom.op, gast.USub) and isinstance(atom.operand, gast.Constant):
            return -atom.operand.value
        if isinstance(atom, gast.Name) and atom.id in self.state.constants:
            return self.state.constants[atom.id]
        raise self.error(UnsupportedSyntaxError, "s2s needs this index or key of a list/dict built in the function "
                         "when it reads the code, and it is known only when the code runs", node,
                         "index with a constant or a loop over the list, or stack the values into an array")

    def elements_of(self, value, node) -> list:
        if isinstance(value, gast.Name) and value.id in self.state.aggregates:
            value = self.aggregate_or_name(value.id)
        if isinstance(value, (gast.Tuple, gast.List)):
            return list(value.elts)
        raise self.error(UnsupportedSyntaxError, "s2s extends a list only with a tuple/list built in the function",
                         node, "append the values one by one")

    def check_static_growth(self, var: str, node) -> None:
        if self.state.list_depth.get(var, 0) < self.state.dynamic_depth:
            raise self.error(UnsupportedSyntaxError, "this list grows in a loop whose number of steps is known only "
                             "when the code runs, and s2s splits a list into one variable per element when it reads "
                             "the code", node,
                             "preallocate an array and write rows (`ys = np.zeros((n, m))`, `ys[t] = y`), or loop over "
                             "a tuple/list so the length is known")

    def grow(self, var: str, values: list, node, out: list) -> None:
        """Append normalized values to the split list `var`, in place (other names holding it go stale)."""
        state = self.state
        self.check_static_growth(var, node)
        self.mutated(var)
        meta = state.agg_meta.get(var, ("list", None, None))
        for v in values:
            elem = state.namer.fresh(f"{var.rstrip('_')}_{len(state.aggregates[var])}")
            self.note_holder(v, elem, f"an element of `{var.rstrip('_')}`")
            self.bind_value(elem, self.aggregate_or_name(v.id) if isinstance(v, gast.Name) and v.id in state.aggregates
                            else v, out, node)
            state.aggregates[var].append(elem)
        state.agg_meta[var] = meta

    def rebind_list(self, var: str, elts: list, node, out: list) -> None:
        """`var` now holds these (normalized) elements, in new variables (its length may change)."""
        state = self.state
        self.mutated(var)
        staged = []
        for v in elts:
            tmp = state.namer.temp()
            self.bind_value(tmp, self.aggregate_or_name(v.id) if isinstance(v, gast.Name) and v.id in state.aggregates
                            else v, out, node)
            staged.append(tmp)
        state.aggregates[var] = staged

    def set_item(self, var: str, key, value, node, out: list) -> None:
        """`d[key] = value` on a split dict (a new key adds an element) or `xs[i] = v` on a split list."""
        state = self.state
        kind, keys, cls = state.agg_meta.get(var, ("tuple", None, None))
        self.mutated(var)
        if kind == "dict":
            if key not in keys:
                self.check_static_growth(var, node)
                elem = state.namer.fresh(f"{var.rstrip('_')}_{key}" if str(key).isidentifier() else
                                        f"{var.rstrip('_')}_{len(keys)}")
                state.aggregates[var].append(elem)
                state.agg_meta[var] = ("dict", tuple(keys) + (key,), cls)
            elem = state.aggregates[var][state.agg_meta[var][1].index(key)]
        elif kind == "list" and isinstance(key, int) and \
                -len(state.aggregates[var]) <= key < len(state.aggregates[var]):
            elem = state.aggregates[var][key]
        else:
            raise self.error(UnsupportedSyntaxError, f"s2s cannot assign to element {key!r} of this {kind}", node)
        if isinstance(value, gast.Name) and value.id in state.aggregates:
            value = self.aggregate_or_name(value.id)
        if elem in state.aggregates and not isinstance(value, (gast.Tuple, gast.List)) or \
                elem not in state.aggregates and isinstance(value, (gast.Tuple, gast.List)):
            state.aggregates.pop(elem, None)
            new = state.namer.fresh(elem)
            idx = state.aggregates[var].index(elem)
            state.aggregates[var][idx] = new
            elem = new
        self.bind_value(elem, value, out, node)

    # ----- lists grown in a loop s2s keeps: the rows of one array --------------------------
    def rows_for_loop(self, body: list, steps, out: list, s) -> None:
        """Before a loop whose trip count `steps` is known only when it runs: each split list made
        outside it that the body appends to becomes the rows of one array (`<list>_rows`, sized for
        every append the loop can make) and a count of the rows filled (`<list>_len`). Its first
        element gives the rows' shape and type (later ones are checked against it)."""
        state = self.state
        for var, sites in self._appends_in(body, s).items():
            elems = state.aggregates[var]
            for n in iter_nodes(gast.Module(body=list(body), type_ignores=[])):
                # a name appended is the same object in Python's list: its in-place updates would show
                if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr == "append" \
                        and isinstance(n.func.value, gast.Name) and state.frame.rename.get(n.func.value.id) == var \
                        and n.args and isinstance(n.args[0], gast.Name) and n.args[0].id in state.frame.locals:
                    state.appended_rows[state.frame.rename[n.args[0].id]] = f"the list `{n.func.value.id}`"
            for e in elems:
                for held, holders in state.holders.items():
                    if e in holders:
                        state.appended_rows.setdefault(held, f"the list `{var.rstrip('_')}`")
            if state.list_depth.get(var, 0) != state.dynamic_depth:
                raise self.error(UnsupportedSyntaxError, "this list grows in loops nested in a loop whose number of "
                                 "steps is known only when the code runs", s,
                                 "preallocate an array and write rows into it")
            if not elems:
                raise self.error(UnsupportedSyntaxError, "this list starts empty and grows in a loop whose number of "
                                 "steps is known only when the code runs: s2s keeps it as the rows of one array, "
                                 "and needs its first element before the loop to know their shape", s,
                                 "start the list with its first element (`hs = [h0]`), or preallocate an array "
                                 "(`ys = np.zeros((n, m))`; `ys[t] = y`)")
            if any(e in state.aggregates or e in state.functions for e in elems):
                raise self.error(UnsupportedSyntaxError, "a list of tuples or functions grows in a loop whose number "
                                 "of steps is known only when the code runs", s,
                                 "keep one list per component (`hs.append(h); cs.append(c)`)")
            self.mutated(var)
            base = var.rstrip("_")
            one = state.namer.temp()
            out.append(assign(one, self.call_rule(np.expand_dims, [name(elems[0]), const(0)], s), s))
            per = steps
            if sites != 1:
                per = name(state.namer.temp())
                out.append(assign(per.id, gast.BinOp(steps, gast.Mult(), const(sites)), s))
            total = state.namer.temp()
            out.append(assign(total, gast.BinOp(per, gast.Add(), const(len(elems))), s))
            tiled = state.namer.temp()
            out.append(assign(tiled, self.call_rule(np.repeat, [name(one), name(total)], s, {"axis": const(0)}), s))
            rows = state.namer.fresh(f"{base}_rows")
            out.append(assign(rows, self.call_rule(np.zeros_like, [name(tiled)], s), s))
            for i, e in enumerate(elems):
                out.append(assign(gast.Subscript(name(rows), const(i), gast.Store()), name(e), s))
            count = state.namer.fresh(f"{base}_len")
            out.append(assign(count, const(len(elems)), s))
            del state.aggregates[var]
            state.agg_meta.pop(var, None)
            state.row_lists[var] = (rows, count, True)

    def _appends_in(self, body: list, s) -> dict[str, int]:
        """Split lists made outside the loop body that it appends to -> the number of `.append` sites."""
        found: dict[str, int] = {}
        for n in iter_nodes(gast.Module(body=list(body), type_ignores=[])):
            target, meth = None, None
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute):
                target, meth = n.func.value, n.func.attr
            elif isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
                target, meth = n.value, "[]="
            if not isinstance(target, gast.Name):
                continue
            var = self.state.frame.rename.get(target.id)
            if var not in self.state.aggregates or self.state.agg_meta.get(var, ("",))[0] != "list":
                continue
            if meth == "append":
                found[var] = found.get(var, 0) + 1
            elif meth in ("extend", "insert", "pop", "[]="):
                raise self.error(UnsupportedSyntaxError, f"s2s cannot follow `.{meth}` / item assignment on a list "
                                 "in a loop whose number of steps is known only when the code runs", n,
                                 "append one value per step, or preallocate an array")
        return found

    def close_row_lists(self) -> None:
        """After the loop: the lists it grew are full (an append now would overrun their rows)."""
        for var, (rows, count, open_) in list(self.state.row_lists.items()):
            if open_ and self.state.list_depth.get(var, 0) >= self.state.dynamic_depth:
                self.state.row_lists[var] = (rows, count, False)

    def row_append(self, var: str, value, node, out: list) -> None:
        state = self.state
        rows, count, open_ = state.row_lists[var]
        if not open_:
            raise self.error(UnsupportedSyntaxError, "this list grew in an earlier loop whose number of steps is "
                             "known only when the code runs (s2s sized its rows then) and cannot grow again", node,
                             "collect the values in a new list")
        if isinstance(value, (gast.Tuple, gast.List)) or \
                (isinstance(value, gast.Name) and value.id in state.aggregates):
            raise self.error(UnsupportedSyntaxError, "a list of tuples grows in a loop whose number of steps is known "
                             "only when the code runs", node, "keep one list per component")
        check = self.call_rule(rt.check_row, [name(rows), value], node)
        out.append(copy_loc(gast.Expr(value=check), node))
        out.append(assign(gast.Subscript(name(rows), name(count), gast.Store()), value, node))
        out.append(assign(count, gast.BinOp(name(count), gast.Add(), const(1)), node))

    def row_view(self, var: str, node, out: list) -> gast.Name:
        """The rows filled so far (an array: the list as NumPy's np.array(list) would give it)."""
        rows, count, _ = self.state.row_lists[var]
        view = self.state.namer.temp()
        out.append(assign(view, gast.Subscript(name(rows), gast.Slice(const(0), name(count), None), gast.Load()), node))
        return name(view)

    def row_element(self, var: str, index, node, out: list) -> gast.Name:
        """list[i]: a copy of row i (a view would see later appends' writes, as a list element does not)."""
        rows, count, _ = self.state.row_lists[var]
        pos = self.state.namer.temp()
        out.append(assign(pos, self.call_rule(rt.list_position, [index, name(count)], node), node))
        row = self.state.namer.temp()
        out.append(assign(row, gast.Subscript(name(rows), name(pos), gast.Load()), node))
        value = self.state.namer.temp()
        out.append(assign(value, self.call_rule(np.copy, [name(row)], node), node))
        return name(value)

    # ----- sharing: b = a; b.append(x) changes a ---------------------------------------
    def join_list(self, var: str, source: str) -> None:
        """`var` now holds the same list as `source`."""
        self.leave_list(var)
        group = self.state.list_groups.setdefault(source, {source})
        group.add(var)
        self.state.list_groups[var] = group

    def leave_list(self, var: str) -> None:
        group = self.state.list_groups.pop(var, None)
        if group is not None:
            group.discard(var)
        self.state.stale.discard(var)

    def mutated(self, var: str) -> None:
        group = self.state.list_groups.get(var)
        if group:
            for other in group - {var}:
                self.state.stale.add(other)
            self.leave_list(var)

    def check_fresh(self, var: str, node) -> None:
        if var in self.state.stale or any(e in self.state.stale for e in self.all_elements(var)):
            raise self.error(UnsupportedSyntaxError, "this list was changed through another name that holds it, "
                             "which s2s does not follow", node,
                             "use one name for a list you change (or copy it: `b = list(a)`)")

    # ----- comprehensions ---------------------------------------------------------------
    def expr_ListComp(self, node, out):
        return self.comprehension(node, out)

    expr_GeneratorExp = expr_ListComp

    def expr_DictComp(self, node, out):
        return self.comprehension(node, out)

    def expr_SetComp(self, node, out):
        raise self.error(UnsupportedSyntaxError, "s2s does not support set comprehensions", node,
                         "use a list comprehension (the order of a set is not the user's to choose)")

    def row_list_call(self, obj, node, out):
        """np.stack / np.array / np.asarray / sum of a list grown in a kept loop: its rows as they are
        (a copy; np.sum over them); NotImplemented for other calls."""
        rest_ok = len(node.args) == 1 and all(
            k.arg == "axis" and isinstance(k.value, gast.Constant) and k.value.value == 0 for k in node.keywords)
        if node.args and isinstance(node.args[0], (gast.ListComp, gast.GeneratorExp)) and rest_ok and \
                _stacks_rows(obj):
            # np.stack([f(r) for r in X]): over rows, the comprehension's rows as they are (a copy)
            var = self.comprehension(node.args[0], out, keep_list=True)
            if var in self.state.row_lists:
                return self.call_rule(np.copy, [self.row_view(var, node, out)], node)
            return self.call_object(obj, [self.aggregate_or_name(var)], {}, node, out)
        if not (node.args and isinstance(node.args[0], gast.Name) and
                self.state.frame.rename.get(node.args[0].id) in self.state.row_lists):
            return NotImplemented
        var = self.state.frame.rename[node.args[0].id]
        if _stacks_rows(obj) and rest_ok:
            return self.call_rule(np.copy, [self.row_view(var, node, out)], node)
        if obj is builtins.sum and len(node.args) == 1 and not node.keywords:
            return self.call_rule(np.sum, [self.row_view(var, node, out)], node, {"axis": const(0)})
        return NotImplemented

    def consumed_comprehension(self, obj, node, out):
        """`sum(e for x in xs)`: an accumulating loop (any length); NotImplemented for other calls."""
        if obj is builtins.sum and 1 <= len(node.args) <= 2 and not node.keywords and \
                isinstance(node.args[0], (gast.GeneratorExp, gast.ListComp)):
            start = node.args[1] if len(node.args) > 1 else const(0)
            return self.comprehension(node.args[0], out, start=start)
        if obj is builtins.sum and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], gast.Call) \
                and self.try_resolve(node.args[0].func) is builtins.map and len(node.args[0].args) == 2:
            fn = self.function_of(self.arg_atom(node.args[0].args[0], out))
            seq = self.arg_atom(node.args[0].args[1], out)
            if fn is not None and not (isinstance(seq, (gast.Tuple, gast.List)) or
                                       isinstance(seq, gast.Name) and seq.id in self.state.aggregates):
                # sum(map(f, rows)): `acc = 0; for x in rows: acc = acc + f(x)`
                return self.loop_over(node, out, seq, const(0), fn, lambda acc, x, f: gast.BinOp(
                    acc, gast.Add(), gast.Call(func=f, args=[x], keywords=[])))
        return NotImplemented

    def comprehension(self, node, out, start=None, keep_list=False):
        """The loop a comprehension stands for, normalized; its value's name."""
        acc_key = self.private_local("acc")
        subst: dict[str, str] = {}
        if start is not None:
            init = copy_loc(gast.Assign(targets=[name(acc_key, gast.Store())], value=start, type_comment=None), node)
            last = gast.AugAssign(target=name(acc_key, gast.Store()), op=gast.Add(), value=node.elt)
        elif isinstance(node, gast.DictComp):
            init = copy_loc(gast.Assign(targets=[name(acc_key, gast.Store())], value=gast.Dict(keys=[], values=[]),
                                        type_comment=None), node)
            last = gast.Assign(targets=[gast.Subscript(name(acc_key), node.key, gast.Store())], value=node.value,
                               type_comment=None)
        else:
            init = copy_loc(gast.Assign(targets=[name(acc_key, gast.Store())], value=gast.List([], gast.Load()),
                                        type_comment=None), node)
            last = gast.Expr(value=gast.Call(func=gast.Attribute(name(acc_key), "append", gast.Load()),
                                             args=[node.elt], keywords=[]))
        body = [copy_loc(last, node)]
        for gen in reversed(node.generators):
            if gen.is_async:
                raise self.error(UnsupportedSyntaxError, "s2s does not support async comprehensions", node)
            for cond in reversed(gen.ifs):
                body = [copy_loc(gast.If(test=cond, body=body, orelse=[]), cond)]
            body = [copy_loc(gast.For(target=gen.target, iter=gen.iter, body=body, orelse=[], type_comment=None), node)]
        # the comprehension's names are its own: private names in the frame
        loop = clone(body[0])
        loop.iter = node.generators[0].iter            # evaluated in the enclosing scope
        for n in iter_nodes(loop):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and n.id != acc_key and n.id not in subst:
                subst[n.id] = self.private_local(n.id)
        for n in iter_nodes(loop):
            if not hasattr(n, "lineno") and isinstance(n, (gast.stmt, gast.expr)):
                copy_loc(n, node)
        outer_scope = {id(n) for n in iter_nodes(loop.iter)}
        for n in iter_nodes(loop):
            if isinstance(n, (gast.Lambda, gast.FunctionDef)):
                # a name the nested function binds (its parameter, `lambda v, k=k: ...`) is its own;
                # its defaults are evaluated in the comprehension
                a = n.args
                own = [p for p in list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs) + [a.vararg, a.kwarg]
                       if isinstance(p, gast.Name)]
                params = {p.id for p in own}
                outer_scope |= {id(p) for p in own}
                for b in (n.body if isinstance(n.body, list) else [n.body]):
                    outer_scope |= {id(m) for m in iter_nodes(b) if isinstance(m, gast.Name) and m.id in params}
        for n in iter_nodes(loop):
            if isinstance(n, gast.Name) and n.id in subst and id(n) not in outer_scope:
                n.id = subst[n.id]
        code, _ = self.stmts([init, loop])
        out += code
        var = self.state.frame.rename[acc_key]
        if keep_list:
            return var
        return self.row_view(var, node, out) if var in self.state.row_lists else name(var)

    def grows_outer_container(self, body: list) -> bool:
        """The loop body appends to, or stores a new key into, a split list/dict made outside it."""
        for n in iter_nodes(gast.Module(body=list(body), type_ignores=[])):
            target = None
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and \
                    n.func.attr in ("append", "extend", "insert", "pop", "update"):
                target = n.func.value
            elif isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
                target = n.value
            if isinstance(target, gast.Name) and self.state.frame.rename.get(target.id) in self.state.aggregates:
                return True
        return False

    def private_local(self, base: str) -> str:
        """A local of the current frame no user name can collide with (`$` is not in identifiers)."""
        base = base.split("$")[0]        # (an inner comprehension's target the outer one renamed already)
        key = f"{base}${self.state.namer.counter}"
        self.state.namer.counter += 1
        self.state.frame.locals.add(key)
        self.state.frame.rename[key] = self.state.namer.fresh(base)
        return key
