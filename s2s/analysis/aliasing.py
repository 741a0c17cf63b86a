"""Aliasing of arrays in normalized code: which arrays are new, and which reads see later writes.

The transforms treat an indexed write (`a[i] = v`) as making a new array. That is right only where
no other name refers to `a`'s memory when the write runs, and reverse, forward mode and batching
refuse the code where it is not:
- fresh_arrays: the variables every assignment of which binds a new array (`np.zeros`, arithmetic,
  `fresh` rules; `None` and `x = x` bind no array), or whose other bindings no write can follow
  without a new array bound first; an indexed write is accepted only into those;
- alias_conflicts: the whole-array reads (a name, a slice, a view op such as `np.reshape`) of an
  array written into later (or in the same loop) with no new array bound on every path between.
"On every path" is decided on block contexts (each loop and each branch of an `if` a statement is
in; normalized code has no jumps, so a block once entered runs to its end): _rebound_between.
"""
from __future__ import annotations

import ast

import gast

from .. import runtime as rt
from ..frontend.nodes import iter_nodes, parse_expr
from ..frontend.ast_build import const, copy_loc, name, walk_stmts as _walk_stmts
from ..rules.table import lookup, record_of



def alias_conflicts(body, read_after: bool = False, sources=None) -> list:
    """(statement, name, array) for each whole-array read (`b = a`, a view `b = a[1:]`) of an array
    that a later write (`a[i] = v`) changes: differentiating through that aliasing is refused.
    With `read_after`, only where the name is read after the write (code reverse mode generated
    restores the slots a view was read from, once the view is no longer read: forward mode over it,
    for hessian, must accept that)."""
    conflicts: list = []
    order = _statement_order(body)
    fresh = _new_array_bindings(order)

    def rebound(arr, i, j) -> bool:
        return _rebound_between(fresh.get(arr, ()), i, order[i][2], j, order[j][2])
    writes = _indexed_writes(order)
    reads = _load_positions(order) if read_after else {}
    for i, (st, loops, _) in enumerate(order):
        if not (isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name)):
            continue
        var = st.targets[0].id
        for arr in (sources or _view_sources)(st.value):
            for j, wloops in writes.get(arr, []):
                if read_after and not (set(loops) & set(wloops)) and not any(k > j for k in reads.get(var, ())):
                    continue
                if (j > i or set(loops) & set(wloops)) and not rebound(arr, i, j):
                    conflicts.append((st, var, arr))
                    break
    return conflicts


def fresh_arrays(body) -> set[str]:
    """Variables every assignment of which makes a new array (safe to write into): an indexed
    write into one changes no other name's array (forward and reverse mode refuse the others)."""
    defs: dict[str, list] = {}
    for s in _walk_stmts(body):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            defs.setdefault(s.targets[0].id, []).append(s.value)
    # a temporary read once, to be renamed (`t10 = np.tanh(out); out = t10`), is as new as its value
    loads: dict[str, int] = {}
    for n in iter_nodes(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            loads[n.id] = loads.get(n.id, 0) + 1
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for var, values in defs.items():
            if var not in out and all(_new_or_nothing(var, v, out, loads) for v in values):
                out.add(var)
                changed = True
    # or bound to other values only where no write can follow without a new array bound first
    # (`out = np.zeros(n); out[0] = x; s = np.sum(out); out = y`; the same in a helper inlined in
    # a loop, where the next pass binds np.zeros(n) again before it writes)
    order = _statement_order(body)
    new_at = _new_array_bindings(order, lambda var, value: _new_or_nothing(var, value, out, loads))
    writes: dict[str, list[int]] = {}
    others: dict[str, list[int]] = {}      # bindings to values that may be another name's array
    for i, (st, _, _) in enumerate(order):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Subscript) \
                and isinstance(st.targets[0].value, gast.Name):
            writes.setdefault(st.targets[0].value.id, []).append(i)
        elif isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) \
                and i not in {k for k, _ in new_at.get(st.targets[0].id, ())}:
            others.setdefault(st.targets[0].id, []).append(i)
    for var, ws in writes.items():
        if var in out or var not in new_at:
            continue
        fresh_at = new_at[var]
        # the function's entry binds every name to what it was given (or to nothing)
        if any(not _rebound_between(fresh_at, -1, (), j, order[j][2]) for j in ws):
            continue
        if all(not _reaches(order, k, j) or _rebound_between(fresh_at, k, order[k][2], j, order[j][2])
               for k in others.get(var, ()) for j in ws):
            out.add(var)
    return out


def _indexed_writes(order) -> dict[str, list[tuple[int, tuple]]]:
    """array -> (position, the loops around it) of each indexed write `a[i] = v` into it."""
    writes: dict[str, list[tuple[int, tuple]]] = {}
    for i, (st, loops, _) in enumerate(order):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Subscript):
            writes.setdefault(st.targets[0].value.id, []).append((i, loops))
    return writes


def _load_positions(order) -> dict[str, list[int]]:
    """name -> the positions of the statements that read it (a loop or `if` by its header only)."""
    reads: dict[str, list[int]] = {}
    for k, (st, _, _) in enumerate(order):
        for part in ([st.test] if isinstance(st, (gast.If, gast.While)) else [st.iter] if isinstance(st, gast.For)
                     else [st]):
            for n in iter_nodes(part):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                    reads.setdefault(n.id, []).append(k)
    return reads


def _statement_order(body) -> list:
    """(statement, the loops around it, its block context) in program order.  The context names
    each loop and each branch of an `if` the statement is in, outermost first."""
    order: list = []

    def visit(stmts, loops, ctx):
        for st in stmts:
            order.append((st, loops, ctx))
            if isinstance(st, (gast.For, gast.While)):
                visit(st.body, loops + (id(st),), ctx + (("loop", id(st)),))
            elif isinstance(st, gast.If):
                visit(st.body, loops, ctx + (("if", id(st), 0),))
                visit(st.orelse, loops, ctx + (("if", id(st), 1),))
    visit(body, (), ())
    return order


def _new_or_nothing(var: str, value, fresh_names: set, loads: dict) -> bool:
    """`var = value` binds var to a new array, to a temporary of `fresh_names` read only here (to be
    renamed: `t10 = np.tanh(out); out = t10`), or to no array: None (the `out = None` a reverse sweep
    starts with) or var itself (`out = out`)."""
    if isinstance(value, gast.Name):
        return value.id == var or value.id in fresh_names and loads.get(value.id) == 1
    return _allocates(value) or isinstance(value, gast.Constant) and value.value is None


def _new_array_bindings(order, binds_new=lambda var, value: _allocates(value)) -> dict[str, list[tuple[int, tuple]]]:
    """name -> (position, block context) of each statement binding it to a new array."""
    out: dict[str, list[tuple[int, tuple]]] = {}
    for i, (st, _, ctx) in enumerate(order):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and binds_new(st.targets[0].id, st.value):
            out.setdefault(st.targets[0].id, []).append((i, ctx))
    return out


def _shared_context(a: tuple, b: tuple) -> tuple:
    shared = []
    for x, y in zip(a, b):
        if x != y:
            break
        shared.append(x)
    return tuple(shared)


def _rebound_between(fresh_at, i: int, ctx_i: tuple, j: int, ctx_j: tuple) -> bool:
    """Whether one of the bindings `fresh_at` runs on every path from statement i to statement j
    (normalized code has no jumps: a block, once entered, runs to its end):
    - one unconditional in the innermost block both are in, between them or, where j comes first,
      around a loop of that block;
    - or one unconditional in a block around j but not around i, before j: reaching j from i
      enters that block (a loop: an iteration) at its start."""
    shared = _shared_context(ctx_i, ctx_j)
    looped = any(e[0] == "loop" for e in shared)
    for k, ctx_k in fresh_at:
        if ctx_k == shared:
            if (i < k < j) if j > i else (looped and (k > i or k < j)):
                return True
        elif len(ctx_k) > len(shared) and ctx_j[:len(ctx_k)] == ctx_k and k < j:
            return True
    return False


def _reaches(order, k: int, j: int) -> bool:
    """Whether statement j may run after statement k (later in the code, or in a loop around both)."""
    return j > k or bool(set(order[k][1]) & set(order[j][1]))


def _allocates(value) -> bool:
    """The value is a newly allocated array (safe to write into without aliasing)."""
    if isinstance(value, (gast.BinOp, gast.UnaryOp)):
        return True
    if isinstance(value, gast.Call):
        fn = getattr(value, "s2s_fn", None)
        rule = lookup(fn)
        return rule is not None and (rule.fresh or (not rule.view and not rule.nondiff))
    return False


def with_view_guards(body) -> list:
    """`body` with a run-time check after each read by integer index of an array written later (or
    in the same loop) with no new array bound in between: `r = m[0]` is a view of m when m is a
    matrix (NumPy's r then sees the write; the transforms, taking the write for a new array, would
    not: a wrong derivative) and a number when m is a vector (nothing shared). Only the run says
    which, so the check (runtime.check_element_view) refuses the view when it happens."""
    conflicts = alias_conflicts(body, sources=_element_sources)
    if not conflicts:
        return body
    # only where the value read may be used after a write (`t = y[i - 1]; y[i] = t * a` in a loop reads
    # t before the write in each iteration: nothing to check, whatever t is)
    order = _statement_order(body)
    position = {id(st): k for k, (st, _, _) in enumerate(order)}
    reads = _load_positions(order)
    writes = _indexed_writes(order)
    # names bound to the value read, or to views of it (`a = t1` after `t1 = m[0]`): their reads count
    views_of: dict[str, set[str]] = {}
    for st, _, _ in order:
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name):
            for src in _view_sources(st.value):
                views_of.setdefault(src, set()).add(st.targets[0].id)

    def aliases(var):
        seen, todo = {var}, [var]
        while todo:
            for v in views_of.get(todo.pop(), ()):
                if v not in seen:
                    seen.add(v)
                    todo.append(v)
        return seen
    guarded = {}
    for st, var, arr in conflicts:
        i = position[id(st)]
        var_reads = [k for v in aliases(var) for k in reads.get(v, ())]
        for j, wloops in writes.get(arr, ()):
            looped = bool(set(order[i][1]) & set(wloops))
            if (j > i or looped) and any(k > j or (looped and k <= i) for k in var_reads):
                guarded[id(st)] = (var, arr)
                break
    if not guarded:
        return body

    def visit(stmts):
        out = []
        for st in stmts:
            for field in ("body", "orelse"):
                if isinstance(st, (gast.For, gast.While, gast.If)):
                    setattr(st, field, visit(getattr(st, field)))
            out.append(st)
            if id(st) in guarded:
                var, arr = guarded[id(st)]
                src = getattr(st, "s2s_src", None)
                text = _without_comment(src.line(st.lineno).strip() if src is not None and getattr(st, "lineno", None)
                                        else "") or f"{var} = {arr}[...]"
                call = gast.Call(func=parse_expr(lookup(rt.check_element_view).name),
                                 args=[name(var), name(arr), const(text)], keywords=[])
                call.s2s_fn = rt.check_element_view
                out.append(copy_loc(gast.Expr(value=call), st))
        return out
    return visit(list(body))


def _without_comment(line: str) -> str:
    """A source line without its trailing `# comment` (a `#` inside a string stays)."""
    for k, ch in enumerate(line):
        if ch == "#":
            head = line[:k].rstrip()
            try:
                ast.parse(head)
            except SyntaxError:
                continue
            return head
    return line


def _element_sources(value) -> list[str]:
    """Arrays a read by integer index (`m[i]`, `m[i, j]`) may be a view of (a row), or []."""
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and not _view_sources(value):
        parts = value.slice.elts if isinstance(value.slice, gast.Tuple) else [value.slice]
        if all(isinstance(p, (gast.Name, gast.Constant, gast.UnaryOp)) for p in parts):
            return [value.value.id]
    return []


def _view_sources(value) -> list[str]:
    """Arrays whose memory `value` may share."""
    if isinstance(value, gast.Name):
        return [value.id]
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
        parts = value.slice.elts if isinstance(value.slice, gast.Tuple) else [value.slice]
        if any(isinstance(p, gast.Slice) or (isinstance(p, gast.Constant) and p.value in (None, Ellipsis))
               for p in parts):
            return [value.value.id]
        return []
    if isinstance(value, gast.Call) and record_of(getattr(value, "s2s_fn", None)).view:     # (np.reshape, np.flip, ...)
        return [a.id for a in value.args[:1] if isinstance(a, gast.Name)]
    return []
