"""Row fusion: a per-example dot product, the fused loop over its results and the
dot product's cotangents -> one pass over the rows.

`jit(vmap(grad(f)))` of a linear model (f reads `x @ w`) is, after fuse.py,

    t = bmatmul(x, w, True, False)                   # X @ w: reads X
    n = fused_size((y, t))
    if n >= 0: <one loop over the examples: ... dt_e ...>
    dw = bmatmul_vjp_b(dt, x, w, True, False, True)  # dt[i] * x[i]: reads X again, writes the result

three passes where one will do: X is read twice and the second read comes after
the whole of X has gone through the cache.  When the signature fixes x and w as
one vector per example (parameters that are never reassigned, of known rank),
this pass makes it

    rows = rows_size(x, w, True, False, (y,))        # -1 unless every shape agrees
    if rows >= 0:
        t = rows_empty(x, w, True, False)            # still written: later code may read it
        dw = rows_outer_empty(x, w, True, False)
        for i in range(rows):
            t_e = row_dot(x, w, i, True, False)
            t_flat[i] = t_e
            ...                                      # the fused loop's own body
            row_times(dw, i, dt_e, x, True)          # row i of x is still in L1
    else:
        <the three steps above>

so results never depend on it.  It runs after fuse.py, on compiled backends,
and only where the statements in between cannot change x, w or the cotangent
(no indexed writes, no reassignment).
"""
from __future__ import annotations


import gast

from ..runtime import batching as rtb
from ..analysis.resolve import resolve_call
from ..frontend.annotations import FUSED, ROWS_DONE, SECTION, getanno, setanno
from ..frontend.ast_build import assign, assigned_names, call_named, const, constant_value, copy_loc, name
from ..frontend.nodes import clone, iter_nodes, names_in

_VJPS = {id(rtb.bmatmul_vjp_a): "a", id(rtb.bmatmul_vjp_b): "b"}


def _store_counts(fdef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in iter_nodes(fdef):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _writes_memory(stmt) -> bool:
    """An indexed or attribute store, an augmented assignment or a nested block: anything that
    could write an array in place.  A fused guard writes only the arrays it allocates."""
    if getanno(stmt, FUSED) is not None:
        return False
    if not isinstance(stmt, gast.Assign):
        return True
    return any(isinstance(n, (gast.Subscript, gast.Attribute)) and isinstance(n.ctx, gast.Store)
               for n in iter_nodes(stmt))


class RowFuser:
    def __init__(self, fdef, namespace, namer, param_facts, in_axes):
        self.namespace = namespace
        self.namer = namer
        self.stores = _store_counts(fdef)
        # parameters that hold one vector per example (batched on axis 0) or one shared vector
        self.vectors: dict[str, bool] = {}
        params = [a.id for a in fdef.args.args]
        if len(params) == len(param_facts) == len(in_axes):
            for p, (rank, kind), axis in zip(params, param_facts, in_axes):
                if self.stores.get(p, 0) or kind != "f":
                    continue
                if axis == 0 and rank == 2:
                    self.vectors[p] = True
                elif axis is None and rank == 1:
                    self.vectors[p] = False

    def resolve(self, node):
        return resolve_call(node, self.namespace) if isinstance(node, gast.Call) else None

    def run(self, fdef):
        if not self.vectors:
            return fdef
        while self.fuse_one(fdef):
            pass
        return fdef

    def dot_of(self, stmt, v):
        """(a, b, fa, fb) when `stmt` is `v = bmatmul(a, b, fa, fb)` of two vector parameters."""
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id == v
                and self.resolve(stmt.value) is rtb.bmatmul):
            return None
        args = stmt.value.args
        if len(args) != 4 or stmt.value.keywords or not all(isinstance(x, gast.Name) for x in args[:2]):
            return None
        a, b, fa, fb = args[0].id, args[1].id, constant_value(args[2]), constant_value(args[3])
        if a not in self.vectors or b not in self.vectors or (self.vectors[a], self.vectors[b]) != (fa, fb) \
                or not (fa or fb):
            return None
        return a, b, fa, fb

    def consumer(self, stmt, dot, outputs):
        """'a' or 'b' when `stmt` is `d = bmatmul_vjp_a/b(g, a, b, fa, fb, True)` (per example)
        for the same dot product and a cotangent g the fused loop stores."""
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name)):
            return None
        side = _VJPS.get(id(self.resolve(stmt.value)))
        args = stmt.value.args if side else []
        if side is None or len(args) != 6 or stmt.value.keywords or constant_value(args[5]) is not True \
                or not all(isinstance(x, gast.Name) for x in args[:3]):
            return None
        if (args[1].id, args[2].id, constant_value(args[3]), constant_value(args[4])) != dot or args[0].id not in outputs \
                or self.stores.get(stmt.targets[0].id) != 1:
            return None
        return side

    def fuse_one(self, fdef) -> bool:
        body = fdef.body
        for k, guard in enumerate(body):
            run = getanno(guard, FUSED)
            if run is None or getanno(guard, ROWS_DONE, False):
                continue
            setanno(guard, ROWS_DONE, True)
            for v in run.inputs:
                if self.stores.get(v) != 1:
                    continue
                at, dot = next(((j, d) for j in range(k) if (d := self.dot_of(body[j], v))), (None, None))
                if dot is None:
                    continue
                between = [s for s in body[at + 1:k] if s is not run.size]
                if any(v in names_in(s) or assigned_names([s]) & set(dot[:2]) or _writes_memory(s) for s in between):
                    continue
                consumers = []
                for j in range(k + 1, len(body)):
                    s = body[j]
                    side = self.consumer(s, dot, run.outputs)
                    if side is not None:
                        consumers.append((s, side))
                        continue
                    if assigned_names([s]) & (set(dot[:2]) | set(run.outputs)) or _writes_memory(s):
                        break
                if not consumers:
                    continue
                fdef.body = self.rewrite(body, at, k, run, guard, v, dot, consumers)
                return True
        return False

    def rewrite(self, body, at, k, run, guard, v, dot, consumers) -> list:
        a, b, fa, fb = dot
        rows = self.namer.fresh("rows")
        flags = [const(fa), const(fb)]
        others = gast.Tuple([name(u) for u in run.inputs if u != v], gast.Load())
        size = assign(rows, call_named("rows_size", [name(a), name(b)] + flags + [others]))
        fused = [assign(run.n, name(rows)),
                 assign(v, call_named("rows_empty", [name(a), name(b)] + clone(flags)))]
        for stmt, _ in consumers:
            fused.append(assign(stmt.targets[0].id,
                                call_named("rows_outer_empty", [name(a), name(b)] + clone(flags))))
        fused_body = clone(guard.body)
        loop = next(s for s in fused_body if isinstance(s, gast.For))
        i, v_e = run.i, run.elem[v]
        new_loop_body = []
        for s in loop.body:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id == v_e:
                new_loop_body.append(assign(v_e, call_named("row_dot", [name(a), name(b), name(i)]
                                                            + clone(flags))))
                new_loop_body.append(assign(gast.Subscript(name(run.flat[v]), name(i), gast.Store()), name(v_e)))
            else:
                new_loop_body.append(s)
        for stmt, side in consumers:
            g = stmt.value.args[0].id
            other, other_flag = (b, fb) if side == "a" else (a, fa)    # d(a . b)/da = b, d(a . b)/db = a
            new_loop_body.append(gast.Expr(call_named("row_times", [name(stmt.targets[0].id), name(i),
                                                                    name(run.elem[g]), name(other),
                                                                    const(other_flag)])))
        loop.body = new_loop_body
        fused += fused_body
        unfused = [body[at], run.size, guard] + [s for s, _ in consumers]
        row_guard = gast.If(test=gast.Compare(name(rows), [gast.GtE()], [const(0)]), body=fused, orelse=unfused)
        setanno(row_guard, SECTION, "fused rows: the dot products, the loop over them and their cotangents, one pass")
        for n in (size, row_guard):
            copy_loc(n, body[at])
        moved = {id(s) for s in unfused}
        before = [s for s in body[:k] if id(s) not in moved]
        after = [s for s in body[k + 1:] if id(s) not in moved]
        return before + [size, row_guard] + after


def fuse_rows(fdef: gast.FunctionDef, namespace: dict, namer, param_facts, in_axes) -> gast.FunctionDef:
    return RowFuser(fdef, namespace, namer, param_facts, in_axes).run(fdef)
