"""Cleanup passes over a generated function: copy propagation and dead code.

- copy propagation: `a = b` where both names are assigned once (or b is an
  unassigned parameter) makes every read of `a` a read of `b`;
- dead code: assignments of pure operations to names nothing reads go;
  tape operations, indexed writes and calls made for their effect stay.
"""
from __future__ import annotations

import gast

from .. import runtime as rt
from ..runtime import batching as rtb
from ..frontend.nodes import iter_nodes, names_in
from ..frontend.ast_build import walk_stmts as _all_stmts

_EFFECTFUL = {id(rt.pop), id(rt.push), id(rt.add_at), id(rt.seed_cotangent), id(rtb.bseed), id(rtb.batch_size),
              id(print)}


def _names(node) -> set[str]:
    return names_in(node)


def _pure(value) -> bool:
    for n in iter_nodes(value):
        if isinstance(n, gast.Call):
            fn = getattr(n, "s2s_fn", None)
            if fn is None or id(fn) in _EFFECTFUL:
                return False
    return True


def _restored_tape(value) -> str | None:
    """The tape `v = restore(tape, ...)` pops, if `value` is such a call."""
    if isinstance(value, gast.Call) and getattr(value, "s2s_fn", None) is rt.restore and value.args \
            and isinstance(value.args[0], gast.Name):
        return value.args[0].id
    return None


def _pops_live_tape(value, live: set[str]) -> bool:
    """`v = restore(tape, ...)` drops the tape's newest value: while the tape is read later (by
    earlier assignments' restores) it must stay, even if v itself is dead, or the later reads
    get the wrong entries (`y = x * 3.0; y = x * 2.0` under jit(grad) restored y wrongly)."""
    return _restored_tape(value) in live


def _live_names(body: list) -> set[str]:
    """Mark and sweep: names read by statements that matter (returns, effects, control
    flow, and assignments/writes to names that are themselves live). A worklist: each
    statement is looked at once, when the first name that makes it matter becomes live."""
    live: set[str] = set()
    waiting: dict[str, list] = {}       # name -> reads of the statements it would make matter
    pending: list = []                  # names newly live

    def matters(reads):
        for r in reads:
            if r not in live:
                live.add(r)
                pending.append(r)

    stmts = list(_all_stmts(body))
    # an array written by index may be a view of another (`r = y[1:]; r[0] = v` changes y): while
    # that other array matters, so do the writes
    written = {s.targets[0].value.id for s in stmts if isinstance(s, gast.Assign)
               and isinstance(s.targets[0], gast.Subscript) and isinstance(s.targets[0].value, gast.Name)}
    for s in stmts:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id in written:
            for src in _may_view(s.value):
                waiting.setdefault(src, []).append({s.targets[0].id})
    for s in stmts:
        triggers, reads = None, set()   # triggers None: the statement always matters
        if isinstance(s, gast.Assign):
            tgt = s.targets[0]
            if isinstance(tgt, gast.Name):
                reads = _names(s.value)
                if _pure(s.value):
                    triggers = [tgt.id]
                    tape = _restored_tape(s.value)      # a restore matters while its tape is live
                    if tape is not None:
                        triggers.append(tape)
            else:   # y[i] = v matters if y does
                triggers, reads = [tgt.value.id], _names(s.value) | _names(tgt.slice)
        elif isinstance(s, gast.Expr):
            call = s.value
            reads = _names(call)
            if getattr(call, "s2s_fn", None) in (rt.add_at, rt.push) and call.args \
                    and isinstance(call.args[0], gast.Name):
                # an accumulation or a tape push matters if its target is read later
                triggers = [call.args[0].id]
        elif isinstance(s, (gast.If, gast.While)):
            reads = _names(s.test)
        elif isinstance(s, gast.For):
            reads = _names(s.iter)
        elif isinstance(s, (gast.Return, gast.Assert)):
            reads = _names(s)
        if triggers is None:
            matters(reads)
        elif reads:
            for t in triggers:
                waiting.setdefault(t, []).append(reads)
    while pending:
        for reads in waiting.pop(pending.pop(), ()):
            matters(reads)
    return live


def _may_view(value) -> list[str]:
    """Names whose array `value` may be (a view of): a name, an index of one, or an op's first
    argument (np.reshape, transpose, ravel, ... return views)."""
    if isinstance(value, gast.Name):
        return [value.id]
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
        return [value.value.id]
    if isinstance(value, gast.Call) and value.args and isinstance(value.args[0], gast.Name):
        return [value.args[0].id]
    return []


def _empty(s) -> bool:
    return isinstance(s, (gast.If, gast.For)) and all(isinstance(b, gast.Pass) for b in s.body) and \
        all(isinstance(b, gast.Pass) for b in getattr(s, "orelse", []))


def _reads_outside_loops_over(stmts: list, target: str, inside: bool = False) -> bool:
    """`target` is read somewhere other than in the body of a `for target in ...` loop."""
    for s in stmts:
        if isinstance(s, gast.For) and isinstance(s.target, gast.Name) and s.target.id == target:
            if target in _names(s.iter):
                return True
            continue
        parts = [s.test] if isinstance(s, (gast.If, gast.While)) else [s.iter] if isinstance(s, gast.For) else [s]
        for p in parts:
            if any(isinstance(n, gast.Name) and n.id == target and not isinstance(n.ctx, gast.Store)
                   for n in iter_nodes(p)):
                return True
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and isinstance(s, (gast.If, gast.For, gast.While)) \
                    and _reads_outside_loops_over(sub, target):
                return True
    return False


def _sweep(stmts: list, live: set[str], loop_free_reads: set[str] = frozenset()) -> tuple[list, bool]:
    out, changed = [], False
    for s in stmts:
        if isinstance(s, gast.Assign):
            tgt = s.targets[0]
            dead_name = isinstance(tgt, gast.Name) and tgt.id not in live and _pure(s.value) \
                and not _pops_live_tape(s.value, live)
            dead_write = isinstance(tgt, gast.Subscript) and tgt.value.id not in live and _pure(s.value)
            if dead_name or dead_write:
                changed = True
                continue
        if isinstance(s, gast.Expr) and getattr(s.value, "s2s_fn", None) in (rt.add_at, rt.push) \
                and isinstance(s.value.args[0], gast.Name) and s.value.args[0].id not in live:
            changed = True
            continue
        if _empty(s) and (isinstance(s, gast.If) and isinstance(s.test, gast.Name) or
                          isinstance(s, gast.For) and s.target.id not in loop_free_reads and _pure(s.iter)):
            changed = True
            continue
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While)):
                new, c = _sweep(sub, live, loop_free_reads)
                changed |= c
                setattr(s, field, new or ([gast.Pass()] if field == "body" else []))
        out.append(s)
    return out, changed


class _Node:
    """One statement of the flow graph: an assignment, a loop or branch head, or any other
    statement (which reads every name it mentions). Name sets are bit masks."""
    __slots__ = ("stmt", "reads", "kill", "keep_if", "pure", "succ", "pred", "live_out")

    def __init__(self, stmt, reads, kill=0, keep_if=0, pure=False):
        self.stmt, self.reads, self.kill, self.keep_if, self.pure = stmt, reads, kill, keep_if, pure
        self.succ, self.pred, self.live_out = [], [], 0


def _flow_graph(body: list, bit) -> list[_Node]:
    """Statements as a control-flow graph. Normalized code has no break, continue or early
    return; should one appear it gets the extra edges a jump needs (a superset: safe).
    `bit(names)` turns a set of names into a mask."""
    nodes: list[_Node] = []

    def node(stmt, reads, **kw):
        n = _Node(stmt, bit(reads), **kw)
        nodes.append(n)
        return n

    def link(frm, to):
        for f in frm:
            f.succ.append(to)

    def block(stmts, entry_from, loop):
        """Nodes of `stmts`; `entry_from` are the nodes control reaches them from. Returns the
        nodes control leaves the block from."""
        tails = entry_from
        for s in stmts:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                v, value = s.targets[0].id, s.value
                kill = bit((v,))
                keep_if = kill      # the value matters while v is live; a restore, while its tape is
                tape = _restored_tape(value)
                if tape is not None:
                    keep_if |= bit((tape,))
                n = node(s, _names(value), kill=kill, keep_if=keep_if, pure=_pure(value))
            elif isinstance(s, gast.If):
                n = node(s, _names(s.test))
                link(tails, n)
                tails = block(s.body, [n], loop) + block(s.orelse, [n], loop)
                continue
            elif isinstance(s, (gast.For, gast.While)):
                n = node(s, _names(s.iter if isinstance(s, gast.For) else s.test))
                link(tails, n)
                inner = {"head": n, "breaks": []}
                link(block(s.body, [n], inner), n)      # the body's end goes back to the head
                tails = [n] + inner["breaks"] + block(s.orelse, [n], loop)
                continue
            else:
                n = node(s, _names(s))
                if loop is not None and isinstance(s, gast.Break):
                    loop["breaks"].append(n)
                elif loop is not None and isinstance(s, gast.Continue):
                    n.succ.append(loop["head"])
            link(tails, n)
            tails = [n]
        return tails

    block(body, [], None)
    for n in nodes:
        n.succ = list({id(s): s for s in n.succ}.values())
        for s in n.succ:
            s.pred.append(n)
    return nodes


def _is_dead(n: _Node, live_out: int) -> bool:
    return n.pure and not live_out & n.keep_if


def _live_in(n: _Node) -> int:
    out = n.live_out
    if n.kill:      # an assignment to a name
        if _is_dead(n, out):
            return out      # a dead assignment reads nothing (strongly live variables)
        return (out & ~n.kill) | n.reads
    return out | n.reads


def _dead_assignments(body: list) -> set[int]:
    """ids of the pure assignments whose value is overwritten (or never read) before any read:
    strongly-live-variable analysis, solved with a worklist over the flow graph, so its cost
    grows with the program's size, not exponentially with its loop depth."""
    index: dict[str, int] = {}

    def bit(names) -> int:
        mask = 0
        for v in names:
            i = index.get(v)
            if i is None:
                i = index[v] = len(index)
            mask |= 1 << i
        return mask
    nodes = _flow_graph(body, bit)
    work = list(nodes)          # popped from the end: the last statements first
    queued = set(map(id, nodes))
    while work:
        n = work.pop()
        queued.discard(id(n))
        live = _live_in(n)
        for p in n.pred:
            if live & ~p.live_out:
                p.live_out |= live
                if id(p) not in queued:
                    queued.add(id(p))
                    work.append(p)
    return {id(n.stmt) for n in nodes if n.kill and _is_dead(n, n.live_out)}


def dead_stores(fdef: gast.FunctionDef) -> bool:
    """Drop pure assignments no read can see (e.g. forward-sweep values the backward sweep
    recomputes). Returns whether anything changed."""
    dead = _dead_assignments(fdef.body)
    if not dead:
        return False

    def drop(stmts):
        out = []
        for s in stmts:
            if id(s) in dead:
                continue
            for field in ("body", "orelse"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While)):
                    setattr(s, field, drop(sub) or ([gast.Pass()] if field == "body" else []))
            out.append(s)
        return out
    fdef.body = drop(fdef.body)
    return True


def dead_code(fdef: gast.FunctionDef) -> gast.FunctionDef:
    while True:
        changed_stores = dead_stores(fdef)
        targets = {s.target.id for s in _all_stmts(fdef.body) if isinstance(s, gast.For)
                   and isinstance(s.target, gast.Name)}
        # loop variables whose value after their loops matters (an empty loop over them must stay)
        loop_free_reads = {t for t in targets if _reads_outside_loops_over(fdef.body, t)} | \
            {a.id for a in fdef.args.args}
        fdef.body, changed = _sweep(fdef.body, _live_names(fdef.body), loop_free_reads)
        if not changed and not changed_stores:
            return fdef


def _assign_counts(fdef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in iter_nodes(fdef):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _assigned_in_loops(body, inside=False, out=None) -> set[str]:
    out = set() if out is None else out
    for s in body:
        if inside:
            for n in iter_nodes(s):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    out.add(n.id)
        if isinstance(s, (gast.For, gast.While)):
            if isinstance(s, gast.For):
                out.add(s.target.id)
            _assigned_in_loops(s.body, True, out)
        elif isinstance(s, gast.If):
            _assigned_in_loops(s.body, inside, out)
            _assigned_in_loops(s.orelse, inside, out)
    return out


def copy_propagation(fdef: gast.FunctionDef) -> gast.FunctionDef:
    """`a = b` -> reads of a become reads of b, when b holds one value for the whole function
    (a single definition, parameters included, outside every loop) and a is defined once."""
    params = {a.id for a in fdef.args.args}
    counts = _assign_counts(fdef)
    for p in params:
        counts[p] = counts.get(p, 0) + 1
    looped = _assigned_in_loops(fdef.body)
    mapping: dict[str, str] = {}
    for s in _all_stmts(fdef.body):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name):
            a, b = s.targets[0].id, s.value.id
            if counts.get(a) == 1 and counts.get(b) == 1 and b not in looped and a != b:
                mapping[a] = b
    if not mapping:
        return fdef

    def resolve(n):
        seen = set()
        while n in mapping and n not in seen:
            seen.add(n)
            n = mapping[n]
        return n
    for n in iter_nodes(fdef):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store) and n.id in mapping:
            n.id = resolve(n.id)
    fdef.body = _drop_copies(fdef.body, set(mapping))
    return fdef


def _drop_copies(body, names):
    out = []
    for s in body:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id in names \
                and isinstance(s.value, gast.Name):
            continue
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and sub and isinstance(s, (gast.If, gast.For, gast.While)):
                setattr(s, field, _drop_copies(sub, names) or ([gast.Pass()] if field == "body" else []))
        out.append(s)
    return out


def optimize(fdef: gast.FunctionDef) -> gast.FunctionDef:
    return dead_code(copy_propagation(fdef))
