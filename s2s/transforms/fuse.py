"""Fusion: runs of elementwise statements (and the sums that consume them) -> one loop.

XLA fuses kernels; compiled s2s code fuses loops.  A maximal run of
straight-line statements whose right-hand sides are elementwise (arithmetic,
ufuncs, `np.where`, the reverse-mode helpers that are elementwise when shapes
agree: `unbroadcast`, `expand_reduced` of a full reduction, and vmap's
`balign` when every peer is batched or a scalar constant) becomes

    n = fused_size(x, w)                  # -1 unless every array input has one shape
    if n >= 0:
        out = fused_empty(x, w)           # only for values used after the run
        s = 0.0                           # sums of fused values accumulate
        for i in range(n):
            x_i = elem(x_flat, i) ...      # one pass over memory, no temporaries
    else:
        <the original statements>         # broadcasting: the unfused code

so results never depend on fusion.  When the argument types are known (jit specializes on
them) and the run mixes one array shape with a lower-rank one that broadcasts along the
trailing axes (a bias `h = np.tanh(X @ W + b)` and its cotangent `db = unbroadcast(dt, b)`),
the loop is two deep instead:

    rows, cols = fused_grid((t,), (b,))   # -1 unless b's shape is t's trailing shape
    if rows >= 0:
        db = fused_zeros((b,))            # the cotangent of the broadcast operand accumulates
        for r in range(rows):
            for c in range(cols):
                i = r * cols + c          # t's element; b's is c
    else:
        <the original statements>

A grad seed of a full sum is the constant
1.0, which lets the forward sum die and the whole gradient fuse into one loop.
Names bound once to a number (such a seed) are assigned before the guard and
read as scalars in the loop, not stored as arrays.  The pass runs for
compiled backends (a Python-level loop would be slow).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import gast
import numpy as np

from .. import runtime as rt
from ..runtime import batching as rtb
from ..analysis.resolve import resolve_call
from ..frontend.annotations import FUSED, INNER, ROWS_ACCUMULATE, SECTION, setanno
from ..frontend.ast_build import assign, call_named, const, constant_value, copy_loc, name
from ..rules.batch_rules import batch_kind
from ..rules.table import record_of
from ..frontend.nodes import clone, iter_nodes


def _per_element(fn) -> bool:
    """An elementwise op the fused loop computes one element at a time (OpRule.fusable)."""
    return batch_kind(fn) == "elementwise" and record_of(fn).fusable


class _Class:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


_TOP, _BOTTOM, _SCALAR = _Class("top"), _Class("bottom"), _Class("scalar")


def _join(a, b):
    """The shape class of an elementwise result of operands of classes a and b."""
    if a is _BOTTOM or b is _BOTTOM:
        return _BOTTOM
    if a is _TOP or b is _TOP:
        return _TOP
    if a is _SCALAR:
        return b
    if b is _SCALAR or a == b:
        return a
    return _BOTTOM


def _meet(a, b):
    """The class of a variable two assignments of which give classes a and b."""
    if a is _TOP:
        return b
    if b is _TOP:
        return a
    return a if a == b else _BOTTOM


@dataclass
class FusedRun:
    """What a fused guard is made of, for later passes (fuse_rows): the `n = fused_size(...)`
    statement, the loop's count and index names, its inputs with their flat views and
    per-element names, and the outputs it stores."""
    size: gast.stmt
    n: str
    i: str
    inputs: list
    flat: dict
    elem: dict
    outputs: list


class Fuser:
    def __init__(self, namespace, namer, ranks: dict[str, int] | None = None):
        self.resolve = lambda call: resolve_call(call, namespace)
        self.namespace = namespace
        self.namer = namer
        self.ranks = ranks or {}       # known ranks of variables (jit specializes on argument types)
        self.fused = 0
        self.scalar_consts: set[str] = set()   # names bound once, to a number: scalars, not fused arrays
        self.lone = False              # a single array operation gets a loop too (long functions)

    # ----- what fuses ----------------------------------------------------------------
    def elementwise(self, node) -> bool:
        if isinstance(node, (gast.Name, gast.Constant)):
            return True
        if isinstance(node, gast.BinOp):
            return not isinstance(node.op, gast.MatMult) and self.elementwise(node.left) and self.elementwise(node.right)
        if isinstance(node, gast.UnaryOp):
            return self.elementwise(node.operand)
        if isinstance(node, gast.Compare):
            return len(node.ops) == 1 and self.elementwise(node.left) and self.elementwise(node.comparators[0])
        if isinstance(node, gast.Call):
            fn = self.resolve(node)
            if node.keywords:
                return False
            if fn in (rt.unbroadcast, rt.broadcast_like, rt.stop_gradient, rt.copy_value):
                return self.elementwise(node.args[0])
            if fn is rtb.balign:
                return self.balign_is_identity(node) and self.elementwise(node.args[0])
            if fn is rt.expand_reduced:
                axis = node.args[2] if len(node.args) > 2 else const(None)
                keep = node.args[3] if len(node.args) > 3 else const(False)
                return constant_value(axis) is None and constant_value(keep) is False and self.elementwise(node.args[0])
            if _per_element(fn):
                return all(self.elementwise(a) for a in node.args)
        return False

    def split_numbers(self, run_body: list) -> tuple[list, list]:
        """(the statements whose values are known numbers, the rest) when every such statement
        can move before the rest: it writes no name an earlier array statement reads or writes,
        and reads none they write.  Else ([], run_body)."""
        numbers, rest = [], []
        for s in run_body:
            target = s.targets[0].id
            if self.known_scalar(target) and all(self.known_scalar(v) for v in self.value_names(s.value)):
                reads = set(self.value_names(s.value))
                touched = {n.id for r in rest for n in iter_nodes(r) if isinstance(n, gast.Name)}
                written = {r.targets[0].id for r in rest}
                if target in touched or reads & written:
                    return [], run_body
                numbers.append(s)
            else:
                rest.append(s)
        return numbers, rest

    def known_scalar(self, v: str) -> bool:
        """A variable known to hold a number: rank 0 by the argument facts, or a global bound
        to a Python or NumPy number (a module constant such as `DECAY = 1e-3`)."""
        if self.ranks.get(v) == 0:
            return True
        return v not in self.ranks and isinstance(self.namespace.get(v), (int, float, np.number)) \
            and not isinstance(self.namespace.get(v), bool)

    def balign_is_identity(self, node) -> bool:
        """vmap's `balign(x, peers, flags)` is x itself when every peer is batched (flag True) and
        of x's shape (the run's shape guard checks that) or a scalar constant; an unbatched array
        peer would give x a new axis, and one of x's shape would pass the guard: not fused."""
        if len(node.args) != 3 or not all(isinstance(a, gast.Tuple) for a in node.args[1:]):
            return False
        peers, flags = node.args[1].elts, node.args[2].elts
        return len(peers) == len(flags) and all(
            constant_value(f) is True or isinstance(p, gast.Constant) or
            (isinstance(p, gast.Name) and p.id in self.scalar_consts) for p, f in zip(peers, flags))

    def value_names(self, node) -> list[str]:
        """The variables an elementwise expression reads per element (the run's inputs):
        `balign` reads x and its batched peers (for the shape guard), not scalar constants."""
        out: list[str] = []

        def visit(n):
            if isinstance(n, gast.Name):
                if n.id not in self.scalar_consts:
                    out.append(n.id)
            elif isinstance(n, gast.Call):
                args = n.args
                if self.resolve(n) is rtb.balign and len(args) == 3 and isinstance(args[1], gast.Tuple):
                    args = [args[0]] + [p for p, f in zip(args[1].elts, args[2].elts) if constant_value(f) is True]
                for a in args:
                    visit(a)
                for k in n.keywords:
                    visit(k.value)
            elif isinstance(n, gast.Attribute):
                return
            else:
                for child in gast.iter_child_nodes(n):
                    visit(child)
        visit(node)
        return out

    def unbroadcast_target(self, node) -> str | None:
        """t in `unbroadcast(g, t)` (the value has t's shape), else None."""
        if isinstance(node, gast.Call) and self.resolve(node) is rt.unbroadcast and len(node.args) == 2 \
                and isinstance(node.args[1], gast.Name) and node.args[1].id not in self.scalar_consts:
            return node.args[1].id
        return None

    def is_full_sum(self, node) -> bool:
        # (np.sum of one argument: the op whose reduction kernel is "sum", called without axis)
        return isinstance(node, gast.Call) and record_of(self.resolve(node)).reduction == "sum" \
            and len(node.args) == 1 \
            and not node.keywords and isinstance(node.args[0], gast.Name)

    # ----- the pass --------------------------------------------------------------------
    def run(self, fdef: gast.FunctionDef) -> gast.FunctionDef:
        from ..optimize import cleanup
        self.simplify_seed(fdef)
        fdef = cleanup.optimize(fdef)     # the forward sum may now be dead
        self.scalar_consts = _scalar_constants(fdef)
        self.lone = sum(1 for n in iter_nodes(fdef) if isinstance(n, gast.stmt)) >= LONE_OPS_PAST
        self.reads = Counter(n.id for n in iter_nodes(fdef) if isinstance(n, gast.Name)
                             and not isinstance(n.ctx, gast.Store))
        self.shape_of = self.shape_classes(fdef)
        fdef.body = self.block(fdef.body, fdef)
        return fdef

    # ----- which values surely have one shape (a loop without an unfused branch) ------
    def shape_classes(self, fdef) -> dict[str, object]:
        """Variable -> the parameter whose shape each of its values has, or _SCALAR (rank 0).

        Seeds are parameters of a known rank >= 1 that are never assigned: their shape is fixed for
        the whole call.  A variable has parameter p's shape if every assignment to it is an
        elementwise expression of values with p's shape and numbers (or `unbroadcast` /
        `expand_reduced` to such a value); by induction over the execution, each value it holds
        then has that shape.  Solved optimistically (the greatest such assignment of classes),
        which is the strongest invariant these rules prove.  Needs the argument ranks (jit)."""
        if not self.ranks:
            return {}
        stored = {n.id for n in iter_nodes(fdef) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        params = [a.id for a in fdef.args.args if isinstance(a, gast.Name)]
        classes: dict[str, object] = {p: p for p in params if (self.ranks.get(p) or 0) >= 1 and p not in stored}
        defs: dict[str, list] = {v: [] for v in stored if v not in classes}
        simple: set[int] = set()
        for st in iter_nodes(fdef):
            if isinstance(st, gast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], gast.Name):
                defs[st.targets[0].id].append(st.value)
                simple.add(id(st.targets[0]))
            elif isinstance(st, gast.AugAssign) and isinstance(st.target, gast.Name):
                defs[st.target.id].append(gast.BinOp(gast.Name(st.target.id, gast.Load(), None, None), st.op, st.value))
                simple.add(id(st.target))
        for n in iter_nodes(fdef):            # tuple targets, loop variables, ...: not understood
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and id(n) not in simple and n.id in defs:
                defs[n.id].append(None)
        current = {v: _TOP for v in defs}

        def of(node):
            if isinstance(node, gast.Constant):
                return _SCALAR if isinstance(node.value, (int, float)) else _BOTTOM
            if isinstance(node, gast.Name):
                if node.id in classes:
                    return classes[node.id]
                if node.id in current:
                    return _SCALAR if self.ranks.get(node.id) == 0 else current[node.id]
                return _SCALAR if self.known_scalar(node.id) else _BOTTOM
            if isinstance(node, gast.BinOp) and not isinstance(node.op, gast.MatMult):
                return _join(of(node.left), of(node.right))
            if isinstance(node, gast.UnaryOp):
                return of(node.operand)
            if isinstance(node, gast.Compare) and len(node.ops) == 1:
                return _join(of(node.left), of(node.comparators[0]))
            if isinstance(node, gast.Call) and not node.keywords:
                fn = self.resolve(node)
                if fn is rt.unbroadcast and len(node.args) == 2:
                    g, t = of(node.args[0]), of(node.args[1])
                    return t if t is _SCALAR or g == t or _TOP in (g, t) else _BOTTOM
                if fn is rt.expand_reduced and len(node.args) == 4 and constant_value(node.args[2]) is None \
                        and constant_value(node.args[3]) is False:
                    g, t = of(node.args[0]), of(node.args[1])
                    return t if g is _SCALAR or _TOP in (g, t) else _BOTTOM
                if fn in (rt.stop_gradient, rt.copy_value) and len(node.args) == 1:
                    return of(node.args[0])
                if _per_element(fn) and node.args:
                    out = _SCALAR
                    for a in node.args:
                        out = _join(out, of(a))
                    return out
            return _BOTTOM

        changed = True
        while changed:
            changed = False
            for v, values in defs.items():
                if current[v] is _BOTTOM:
                    continue
                new = _TOP
                for value in values:
                    new = _meet(new, of(value) if value is not None else _BOTTOM)
                if new != current[v]:
                    current[v], changed = new, True
        classes.update({v: c for v, c in current.items() if c is _SCALAR or c in classes.values()})
        return classes

    def one_shape(self, inputs: list, summed: list) -> bool:
        """Every array input surely has one shape, and each sum in the loop reads an array of it:
        the loop always runs, so it needs no unfused branch."""
        got = {self.shape_of.get(v, _SCALAR if self.known_scalar(v) else None) for v in inputs}
        arrays = got - {_SCALAR}
        if None in got or len(arrays) != 1:
            return False
        shape = arrays.pop()
        return all(any(self.shape_of.get(v) == shape for v in group) for group in summed)

    def simplify_seed(self, fdef):
        """`d = seed_cotangent(s)` with s a full sum: the check passes statically, d = 1.0."""
        defs = {}
        for s in iter_nodes(fdef):
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                defs.setdefault(s.targets[0].id, []).append(s.value)
        for s in fdef.body:
            if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) \
                    and self.resolve(s.value) is rt.seed_cotangent and isinstance(s.value.args[0], gast.Name):
                src = defs.get(s.value.args[0].id, [])
                if len(src) == 1 and self.is_full_sum(src[0]):
                    s.value = const(1.0)

    def block(self, stmts, fdef) -> list:
        out, run = [], []
        for idx, s in enumerate(stmts):
            if self.fusable(s):
                if len(run) >= MAX_RUN and getattr(s, "lineno", None) != getattr(run[-1], "lineno", None):
                    out += self.emit_run(run, stmts[idx:], fdef)     # (at a user line's end)
                    run = []
                run.append(s)
                if self.is_full_sum(s.value):   # a sum is complete only after the loop: it ends the run
                    out += self.emit_run(run, stmts[idx + 1:], fdef)
                    run = []
                continue
            out += self.emit_run(run, stmts[idx:], fdef)
            run = []
            # Loop bodies are mostly scalar code (x[i]): fusing them would only add a guard.
            for field in ("body", "orelse"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(s, gast.If):
                    setattr(s, field, self.block(sub, fdef))
            out.append(s)
        out += self.emit_run(run, [], fdef)
        return out

    def fusable(self, s) -> bool:
        return isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and (
            self.elementwise(s.value) or self.is_full_sum(s.value))

    def emit_run(self, run: list, after: list, fdef) -> list:
        # `v = 1.0` (a grad seed, say): assigned before the loop and read as a scalar inside it
        hoisted = [s for s in run if s.targets[0].id in self.scalar_consts]
        run_body = [s for s in run if s.targets[0].id not in self.scalar_consts]
        numbers, run_body = self.split_numbers(run_body)
        if numbers:
            # statements on numbers alone run once, before the loop (a loop would store them as arrays)
            return hoisted + numbers + self.emit_run(run_body, after, fdef)
        parts = self.independent_chains(run_body)
        if len(parts) > 1:
            # chains that share no variable get a loop (and a shape guard) each: a per-example
            # vector and a per-example scalar chain side by side are two shapes, not one loop
            out = list(hoisted)
            for part in parts:
                out += self.emit_run(part, after, fdef)
            return out
        # worth a loop only if there is arithmetic to fuse
        ops = sum(1 for s in run_body for n in iter_nodes(s.value) if isinstance(n, (gast.BinOp, gast.Call, gast.UnaryOp)))
        if (len(run_body) < 2 or ops < 2) and not (self.lone and ops >= 1):
            return run
        defined = [s.targets[0].id for s in run_body]
        defs = {s.targets[0].id: s.value for s in run_body}
        # values read after the run (or by later iterations of an enclosing loop: be conservative)
        # values read anywhere outside the run (after it, or earlier in an enclosing loop) are kept
        # (counted once per function: fusing elsewhere adds reads only of what that run read already)
        in_run = Counter(n.id for s in run for n in iter_nodes(s) if isinstance(n, gast.Name)
                         and not isinstance(n.ctx, gast.Store))
        later = {v for v in defined if self.reads.get(v, 0) > in_run.get(v, 0)}
        inputs: list[str] = []
        seen_def: set[str] = set()
        for s in run_body:
            for n in self.value_names(s.value):
                if n not in seen_def and n not in inputs:
                    inputs.append(n)
            seen_def.add(s.targets[0].id)
        sums = {s.targets[0].id for s in run_body if self.is_full_sum(s.value)}
        if any(self.unbroadcast_target(n) in sums for st in run_body for n in iter_nodes(st.value)):
            return run         # a cotangent summed down to a sum of this loop: not one element per i
        outputs = [v for v in dict.fromkeys(defined) if v in later and v not in sums]
        sum_outputs = [v for v in dict.fromkeys(defined) if v in sums]
        if not inputs or all(self.known_scalar(v) for v in inputs):
            return run         # nothing but numbers: no loop, and no array to allocate like its inputs
        grid = self.trailing_broadcast(run_body, inputs, sums, outputs)
        if grid is not None:
            return self.emit_grid(run, run_body, hoisted, inputs, outputs, sum_outputs, sums, defs, *grid)
        if len({self.ranks.get(v) for v in inputs} - {0}) > 1 and all(v in self.ranks for v in inputs):
            return run         # known to be two shapes: the flat loop could never run
        self.fused += 1
        n = self.namer.fresh("n")
        i = self.namer.fresh("i")
        flat = {v: self.namer.fresh(v + "_flat") for v in inputs}
        out_flat = {v: self.namer.fresh(v + "_out") for v in outputs}
        elem = {v: self.namer.fresh(v + "_e") for v in dict.fromkeys(inputs + defined)}
        acc = self.accumulators(run_body, sums, inputs, elem)
        code: list = [clone(s) for s in hoisted]
        args = gast.Tuple([name(v) for v in inputs], gast.Load())
        size_args = [args]
        summed = self.unsure_arrays(run_body, sums, inputs, outputs, defs)
        # an output shaped like unbroadcast's target t is a number when t is one (a sum over the
        # loop, not an element per i): the loop must not run then, so t must be an array
        # (the same for a value used only inside the loop: `dc0 = unbroadcast(g, c0)` with c0 a number
        # is a sum over the loop, which an element per i would get wrong: a silently wrong gradient
        # under jit, tests/jit/test_jit_fusion_types.py::test_unbroadcast_to_a_number_inside_a_fused_run)
        summed += [[like] for like in dict.fromkeys(self.unbroadcast_target(n) for st in run_body
                                                    for n in iter_nodes(st.value))
                   if like in inputs and not self.ranks.get(like, 0) > 0 and [like] not in summed]
        if summed:
            # a sum in the loop adds one element per i: right only if its operand has the loop's
            # shape, not when every array it reads turns out to be a number
            size_args.append(gast.Tuple([gast.Tuple([name(v) for v in s], gast.Load()) for s in summed],
                                        gast.Load()))
        code.append(assign(n, call_named("fused_size", size_args)))
        loop_body: list = [assign(elem[v], call_named("elem", [name(flat[v]), name(i)])) for v in inputs]
        loop_body += self.per_element(run_body, sums, elem, acc)
        for v in outputs:
            loop_body.append(assign(gast.Subscript(name(out_flat[v]), name(i), gast.Store()), name(elem[v])))
        fused: list = [assign(flat[v], call_named("flat_view", [name(v)])) for v in inputs]
        for v in outputs:
            # unbroadcast(g, t) has t's type in the unfused branch: allocate like t, so both branches
            # type alike (in the loop t has the loop's shape; a lower-rank t never runs it)
            like = self.unbroadcast_target(defs[v])
            shape_of = gast.Tuple([name(like)], gast.Load()) if like in inputs else clone(args)
            fused.append(assign(v, call_named("fused_empty", [shape_of])))
            fused.append(assign(out_flat[v], call_named("fused_out_view", [name(v)])))
        for v in sum_outputs:
            fused.append(assign(acc[v], const(0.0)))
        loop = gast.For(target=name(i, gast.Store()), iter=gast.Call(func=name("range"), args=[name(n)], keywords=[]),
                        body=loop_body, orelse=[], type_comment=None)
        fused.append(loop)
        for v in sum_outputs:
            fused.append(assign(v, name(acc[v])))
        unfused = run
        if self.one_shape(inputs, summed):
            # (fused_size is then never -1: no copy of the statements to compile)
            unfused = [gast.Raise(exc=call_named("AssertionError", [const("s2s: fused shapes disagree")]), cause=None)]
        guard = gast.If(test=gast.Compare(name(n), [gast.GtE()], [const(0)]), body=fused, orelse=unfused)
        first = run[0]
        for c in code + [guard]:
            copy_loc(c, first)
        setanno(guard, SECTION, "fused: one loop over the elements")
        setanno(guard, FUSED, FusedRun(size=code[-1], n=n, i=i, inputs=inputs, flat=flat, elem=elem,
                                       outputs=outputs))
        return code + [guard]

    # ----- a lower-rank operand broadcast along the trailing axes: a two-deep loop --------
    def trailing_broadcast(self, run_body, inputs, sums, outputs):
        """(class of each variable, the outputs that sum over rows) when every input's rank is
        known and the array inputs have two ranks, the lower one broadcast along the trailing
        axes ("full", "trail"; numbers are "scalar"); None when a flat loop (one rank) or the
        unfused code (anything else) is the right answer."""
        if not self.ranks or any(v not in self.ranks for v in inputs):
            return None
        full_rank = max(self.ranks[v] for v in inputs)
        if len({self.ranks[v] for v in inputs if 0 < self.ranks[v] < full_rank}) != 1:
            return None
        if any(isinstance(n, gast.Call) and self.resolve(n) is rtb.balign
               for s in run_body for n in iter_nodes(s.value)):
            return None
        cls = {v: "full" if self.ranks[v] == full_rank else "trail" if self.ranks[v] > 0 else "scalar"
               for v in inputs}
        reduces: set[str] = set()
        order = {"scalar": 0, "trail": 1, "full": 2}

        def class_of(node):
            """"full", "trail" or "scalar": the shape of node's value; "rows": a sum over the
            rows (a cotangent `unbroadcast(g, b)` of a full g, or such sums added); None:
            anything else that involves such a sum (it is complete only after the loop)."""
            if isinstance(node, gast.Name):
                return "rows" if node.id in reduces else cls.get(node.id, "scalar")
            if isinstance(node, gast.Constant):
                return "scalar"
            like = self.unbroadcast_target(node)
            if like is not None:
                into, of = cls.get(like, "scalar"), class_of(node.args[0])
                return "rows" if (into, of) == ("trail", "full") else into if into == of else None
            if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
                sides = {class_of(node.left), class_of(node.right)}
                if "rows" in sides:
                    return "rows" if sides == {"rows"} else None
            if isinstance(node, gast.Call):
                parts = [class_of(a) for a in node.args]
            else:
                parts = [class_of(c) for c in gast.iter_child_nodes(node)
                         if isinstance(c, gast.expr) and not isinstance(c, gast.expr_context)]
            if None in parts or "rows" in parts:
                return None
            return max(parts, key=order.__getitem__, default="scalar")
        assigned: dict[str, list[bool]] = {}
        for s in run_body:
            v = s.targets[0].id
            if v in sums:
                if class_of(s.value.args[0]) != "full":   # a broadcast operand would count once per row
                    return None
                kind = "scalar"
            else:
                kind = class_of(s.value)
            if kind is None:
                return None
            assigned.setdefault(v, []).append(kind == "rows")
            if kind == "rows":
                reduces.add(v)                # summed over the rows into the broadcast operand's shape
                kind = "trail"
            cls[v] = kind
        if any(v in reduces and not all(flags) for v, flags in assigned.items()):
            return None
        if any(cls[v] == "scalar" for v in outputs):
            return None
        return cls, reduces

    def emit_grid(self, run, run_body, hoisted, inputs, outputs, sum_outputs, sums, defs, cls, reduces) -> list:
        self.fused += 1
        rows, cols = self.namer.fresh("rows"), self.namer.fresh("cols")
        r, c, i = self.namer.fresh("r"), self.namer.fresh("c"), self.namer.fresh("i")
        flat = {v: self.namer.fresh(v + "_flat") for v in inputs}
        out_flat = {v: self.namer.fresh(v + "_out") for v in outputs}
        elem = {v: self.namer.fresh(v + "_e") for v in dict.fromkeys(inputs + [s.targets[0].id for s in run_body])}
        acc = self.accumulators(run_body, sums, inputs, elem)
        full = [v for v in inputs if cls[v] == "full"]
        trail = [v for v in inputs if cls[v] == "trail"]
        tup = lambda vs: gast.Tuple([name(v) for v in vs], gast.Load())
        code: list = [clone(s) for s in hoisted]
        code.append(assign(gast.Tuple([name(rows, gast.Store()), name(cols, gast.Store())], gast.Store()),
                           call_named("fused_grid", [tup(full), tup(trail)])))
        at = lambda v: name(c if cls[v] == "trail" else i)
        inner: list = [assign(i, gast.BinOp(gast.BinOp(name(r), gast.Mult(), name(cols)), gast.Add(), name(c)))]
        inner += [assign(elem[v], call_named("elem", [name(flat[v]), at(v)])) for v in inputs]
        inner += self.per_element(run_body, sums, elem, acc)
        for v in outputs:
            target = gast.Subscript(name(out_flat[v]), at(v), gast.Store())
            value = name(elem[v])
            if v in reduces:
                value = gast.BinOp(gast.Subscript(name(out_flat[v]), name(c), gast.Load()), gast.Add(), value)
            inner.append(assign(target, value))
        fused: list = [assign(flat[v], call_named("flat_view", [name(v)])) for v in inputs]
        for v in outputs:
            # typed as the unfused branch types it: like unbroadcast's target, else like the broadcast
            # result of the inputs of its class
            like = self.unbroadcast_target(defs[v])
            if like is not None and like in inputs:
                shape_of = tup([like])
            else:       # (a value computed in the loop has no array before it)
                shape_of = tup(full if cls[v] == "full" else trail)
            fused.append(assign(v, call_named("fused_zeros" if v in reduces else "fused_empty", [shape_of])))
            fused.append(assign(out_flat[v], call_named("flat_view", [name(v)])))
        for v in sum_outputs:
            fused.append(assign(acc[v], const(0.0)))
        rng = lambda n: gast.Call(func=name("range"), args=[name(n)], keywords=[])
        inner_loop = gast.For(target=name(c, gast.Store()), iter=rng(cols), body=inner, orelse=[], type_comment=None)
        outer_loop = gast.For(target=name(r, gast.Store()), iter=rng(rows), body=[inner_loop], orelse=[],
                              type_comment=None)
        setanno(outer_loop, INNER, inner_loop)          # the lowering's per-element rewrites go there
        setanno(outer_loop, ROWS_ACCUMULATE, bool(reduces))   # rows write one sum: no prange over them
        fused.append(outer_loop)
        for v in sum_outputs:
            fused.append(assign(v, name(acc[v])))
        guard = gast.If(test=gast.Compare(name(rows), [gast.GtE()], [const(0)]), body=fused, orelse=run)
        for node in code + [guard]:
            copy_loc(node, run[0])
        setanno(guard, SECTION, "fused: one loop over the rows and the broadcast operand's elements")
        return code + [guard]

    def accumulators(self, run_body, sums, inputs, elem) -> dict:
        """The variable each sum accumulates in: its element name, or a fresh one where that name
        also holds an element of the same variable (`y = np.sum(x * y)`, `y = x * 2; y = np.sum(y)`)."""
        count: dict[str, int] = {}
        for s in run_body:
            count[s.targets[0].id] = count.get(s.targets[0].id, 0) + 1
        return {v: self.namer.fresh(v + "_sum") if v in inputs or count[v] > 1 else elem[v] for v in sums}

    def unsure_arrays(self, run_body, sums, inputs, outputs, defs) -> list[list[str]]:
        """For each sum, and each output, whose value may hold no array (every input it reads may
        be a number: its ranks are not known), the inputs it reads; fused_size checks one is an
        array.  (An output of numbers only is a number in the unfused code, where the loop would
        make it an array of the loop's shape: `x = x_entry` restoring a number beside an array y.)
        Outputs shaped like an unbroadcast target have their own check (emit)."""
        reads: dict[str, set] = {}
        for s in run_body:
            got: set = set()
            for v in self.value_names(s.value):
                got |= reads[v] if v in reads else {v} if v in inputs else set()
            reads[s.targets[0].id] = got
        out: list = []
        for s in run_body:
            v = s.targets[0].id
            checked = v in sums or v in outputs and self.unbroadcast_target(defs[v]) not in inputs
            if checked:
                support = reads[v]
                # (reading every input: fused_size already asks for an array among them)
                if support and not any(self.ranks.get(u, 0) > 0 for u in support) and not support >= set(inputs):
                    group = [u for u in inputs if u in support]
                    if group not in out:
                        out.append(group)
        return out

    def per_element(self, run_body, sums, elem, acc) -> list:
        """The run's statements on one element: each value's per-element form; a sum adds the
        element of its argument."""
        out = []
        for s in run_body:
            v = s.targets[0].id
            if v in sums:
                out.append(assign(acc[v], gast.BinOp(name(acc[v]), gast.Add(), name(elem[s.value.args[0].id]))))
            else:
                out.append(assign(elem[v], self.scalar_expr(clone(s.value), elem)))
        return out

    def independent_chains(self, stmts) -> list[list]:
        """The statements grouped by the variables they share (read or written), in order."""
        parent = list(range(len(stmts)))

        def find(k):
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k
        owner: dict[str, int] = {}
        for k, st in enumerate(stmts):
            for v in [st.targets[0].id] + self.value_names(st.value):
                if v in owner:
                    parent[find(k)] = find(owner[v])
                else:
                    owner[v] = k
        groups: dict[int, list] = {}
        for k, st in enumerate(stmts):
            groups.setdefault(find(k), []).append(st)
        return list(groups.values())

    def scalar_expr(self, node, elem):
        """The per-element form of an elementwise expression."""
        if isinstance(node, gast.Name):
            return name(elem[node.id]) if node.id in elem else node
        if isinstance(node, gast.Call):
            fn = self.resolve(node)
            if fn in (rt.unbroadcast, rt.broadcast_like, rt.stop_gradient, rt.copy_value, rt.expand_reduced,
                      rtb.balign):
                return self.scalar_expr(node.args[0], elem)
            node.args = [self.scalar_expr(a, elem) for a in node.args]
            return node
        for field, value in gast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, field, [self.scalar_expr(v, elem) if isinstance(v, gast.AST) else v for v in value])
            elif isinstance(value, gast.AST) and not isinstance(value, (gast.expr_context, gast.operator,
                                                                          gast.unaryop, gast.cmpop)):
                setattr(node, field, self.scalar_expr(value, elem))
        return node


def _scalar_constants(fdef) -> set[str]:
    """Names assigned exactly once in the function, to a number."""
    stores: dict[str, int] = {}
    numbers: set[str] = set()
    for n in iter_nodes(fdef):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name) \
                and isinstance(n.value, gast.Constant) and type(n.value.value) in (int, float):
            numbers.add(n.targets[0].id)
    for a in fdef.args.args:
        stores[a.id] = stores.get(a.id, 0) + 1
    return {v for v in numbers if stores.get(v) == 1}


# Statements in one loop at most: Numba's time on a loop body grows faster than its length (a
# 2000-statement loop took minutes), and equal-sized loops of repeated code are outlined once.
MAX_RUN = 24

# Statements in a function past which a lone array operation (`db = dt * 0.9`) gets a loop too:
# Numba compiles each array expression as a function of its own (~0.3 s each), while the loops
# of a long function are outlined and the alike ones compiled once (backends/outline.py).
LONE_OPS_PAST = 300


def fuse(fdef: gast.FunctionDef, namespace: dict, namer, ranks: dict[str, int] | None = None) -> gast.FunctionDef:
    return Fuser(namespace, namer, ranks).run(fdef)
