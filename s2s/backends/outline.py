"""Outlining: each fused region of a long generated function becomes a function of its own.

Numba compiles a function as one unit, and its cost grows faster than the function: type
inference, Numba's lowering and LLVM's passes over a 1500-line function with forty loops took
most of `jit(grad)`'s time on a 20-line program (91 s).  A fused region (the `n = fused_size(...)`
guard, its loop and the unfused branch, transforms/fuse.py) only reads the values before it
and writes the values after it, so it moves into a function with those as parameters and
results:

    a, t1 = fused_loop(a, b, w)          # in the generated function

    def fused_loop(a, b, w):              # above it, compiled on its own (and cached with it)
        n = fused_size((a, b, w))
        if n >= 0:
            ...                           # the loop
        else:
            ...                           # the unfused statements
        return a, t1

Regions that are the same code up to the names of their variables and their float coefficients
(a loop body repeated in straight-line code, the reverse sweep of each repetition) share one
function (the coefficients become parameters), which Numba compiles once per argument types:
long programs are mostly repetitions, and their compile time then grows with the distinct
regions, not with the length.  The generated function left is a
straight line of calls and tape pushes, cheap to compile.

Short functions keep their loops inline: each function Numba compiles costs a fixed ~0.3 s, and
LLVM optimizes an outlined region twice (on its own, then linked into the caller), so outlining
pays only past a few regions (`MIN_REGIONS`) when some are alike, and past `MANY_REGIONS` when
all differ.  Measured on 2 cores, `jit(value_and_grad)` of a 64-128-10 MLP (7 regions, all
different) compiled in 12.8 s outlined and 11.2 s inline (9.6 s and 7.6 s with s2s's helpers
already in the disk cache).
"""
from __future__ import annotations

import gast

from ..frontend.annotations import GRAD_OF, SECTION, SRC, getanno, hasanno, setanno
from ..frontend.nodes import clone, iter_nodes
from ..frontend.ast_build import Namer

MIN_REGIONS = 6           # fewer fused regions than this: the loops stay inline
MANY_REGIONS = 12         # ... and fewer than this, unless some are alike (then they share a function)
_SIZE_HELPERS = ("fused_size", "fused_grid", "rows_size")


NOT_REACHED = frozenset(["<every name: the code after is not reached>"])


def _is_region(stmt) -> bool:
    return isinstance(stmt, gast.If) and str(getanno(stmt, SECTION, "")).startswith("fused")


def _size_statement(prev, guard) -> bool:
    """`n = fused_size(...)` (or `rows, cols = fused_grid(...)`) just before the guard that tests n."""
    if not (isinstance(prev, gast.Assign) and isinstance(prev.value, gast.Call)
            and isinstance(prev.value.func, gast.Name) and prev.value.func.id in _SIZE_HELPERS):
        return False
    tested = {n.id for n in iter_nodes(guard.test) if isinstance(n, gast.Name)}
    bound = {n.id for n in iter_nodes(prev.targets[0]) if isinstance(n, gast.Name)}
    return bool(tested & bound)


def _regions(body: list, found: list) -> None:
    """(statement list, start, stop) of every fused region, at any depth of loops and branches."""
    for k, s in enumerate(body):
        if _is_region(s):
            start = k - 1 if k > 0 and _size_statement(body[k - 1], s) else k
            found.append((body, start, k + 1))
        elif isinstance(s, (gast.If, gast.For, gast.While)):
            _regions(s.body, found)
            _regions(s.orelse, found)


class NameOrder:
    """Names in the order a run of statements evaluates them: which are read before any write
    (the region's inputs), which are written, and which are written on every path."""

    def __init__(self):
        self.first: dict[str, str] = {}
        self.stored: set[str] = set()

    def expr(self, node) -> None:
        for n in iter_nodes(node):
            if isinstance(n, gast.Name):
                self.first.setdefault(n.id, "load" if not isinstance(n.ctx, gast.Store) else "store")
                if isinstance(n.ctx, gast.Store):
                    self.stored.add(n.id)

    def target(self, node) -> None:
        if isinstance(node, gast.Name):
            self.first.setdefault(node.id, "store")
            self.stored.add(node.id)
        elif isinstance(node, (gast.Tuple, gast.List)):
            for e in node.elts:
                self.target(e)
        else:                       # x[i] = v, x.a = v: reads x
            self.expr(node)

    def block(self, stmts: list):
        """Visit `stmts`; the names written on every path through them that goes on after them
        (NOT_REACHED when none does: the branch raises)."""
        surely: set = set()
        for s in stmts:
            got = self.stmt(s)
            surely = NOT_REACHED if got is NOT_REACHED or surely is NOT_REACHED else surely | got
        return surely

    def stmt(self, s) -> set:
        if isinstance(s, gast.Assign):
            self.expr(s.value)
            for t in s.targets:
                self.target(t)
            return {n.id for t in s.targets for n in iter_nodes(t) if isinstance(n, gast.Name)
                    and isinstance(n.ctx, gast.Store)}
        if isinstance(s, gast.AugAssign):
            self.expr(s.value)
            if isinstance(s.target, gast.Name):
                self.first.setdefault(s.target.id, "load")
            self.target(s.target)
            return set()
        if isinstance(s, gast.If):
            self.expr(s.test)
            body, orelse = self.block(s.body), self.block(s.orelse)
            return orelse if body is NOT_REACHED else body if orelse is NOT_REACHED else body & orelse
        if isinstance(s, (gast.Raise, gast.Return)):
            self.expr(s)
            return NOT_REACHED
        if isinstance(s, gast.For):
            self.expr(s.iter)
            self.target(s.target)
            self.block(s.body)
            self.block(s.orelse)
            return set()
        if isinstance(s, gast.While):
            self.expr(s.test)
            self.block(s.body)
            self.block(s.orelse)
            return set()
        self.expr(s)
        return set()


def _canonical(stmts: list, local: set) -> tuple[tuple, dict]:
    """The region's code as a tuple with its variables numbered by first appearance (v0, v1, ...),
    and that numbering: two regions are the same function when their tuples are equal.  Each
    node gives its class, its plain fields and the length of each list field, in breadth-first
    order (which fixes the tree)."""
    names: dict[str, str] = {}
    out: list = []
    numbers = {id(c) for c in _coefficients(stmts)}
    for s in stmts:
        for n in iter_nodes(s):
            if id(n) in numbers:
                out.append("<coefficient>")
                continue
            if n.__class__ is gast.Name:
                out.append(names.setdefault(n.id, f"v{len(names)}") if n.id in local else n.id)
                out.append(n.ctx.__class__)
                continue
            out.append(n.__class__)
            for f in n._fields:
                v = getattr(n, f, None)
                if v.__class__ is list:
                    out.append(len(v))
                elif not isinstance(v, gast.AST):
                    out.append((f, v.__class__, v))
    return tuple(out), names


def _coefficients(stmts: list) -> list:
    """The float constants that are operands of arithmetic (not an exponent: `x ** 2.0` stays a
    multiplication for LLVM), in breadth-first order: a region's function takes them as
    parameters, so that regions alike up to their coefficients share it."""
    out = []
    for s in stmts:
        for n in iter_nodes(s):
            if isinstance(n, gast.BinOp):
                sides = (n.left,) if isinstance(n.op, gast.Pow) else (n.left, n.right)
            elif isinstance(n, gast.UnaryOp):
                sides = (n.operand,)
            else:
                continue
            out += [c for c in sides if c.__class__ is gast.Constant and c.value.__class__ is float]
    return out


def _parameterize(stmts: list, params: list[str]) -> None:
    """Replace the coefficients of `stmts` (in _coefficients' order) by the names `params`."""
    named = {id(c): p for c, p in zip(_coefficients(stmts), params)}
    for s in stmts:
        for n in iter_nodes(s):
            for field in ("left", "right", "operand"):
                child = getattr(n, field, None)
                if child is not None and id(child) in named:
                    setattr(n, field, gast.Name(named[id(child)], gast.Load(), None, None))


def outline(fdef: gast.FunctionDef, namer: Namer, min_regions: int | None = None,
            unfused_apart: bool = False) -> list[gast.FunctionDef]:
    """Move the fused regions of `fdef` into functions (returned; `fdef` now calls them), when it
    has at least `min_regions` (MIN_REGIONS) of them.  `unfused_apart` (target="parallel"): each
    region's unfused branch goes into a function of its own as well (see _unfused_apart)."""
    found: list = []
    _regions(fdef.body, found)
    if len(found) < (MIN_REGIONS if min_regions is None else min_regions):
        return []
    local = {a.id for a in fdef.args.args} | \
        {n.id for n in iter_nodes(fdef) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    if min_regions is None and len(found) < MANY_REGIONS and \
            len({_canonical(body[start:stop], local)[0] for body, start, stop in found}) == len(found):
        return []       # a few regions, all different: nothing shared, and LLVM's work doubles
    inside = {id(n) for body, start, stop in found for s in body[start:stop] for n in iter_nodes(s)}
    read_outside = {n.id for n in iter_nodes(fdef) if isinstance(n, gast.Name) and id(n) not in inside
                    and not isinstance(n.ctx, gast.Store)}
    reads = [{n.id for s in body[start:stop] for n in iter_nodes(s) if isinstance(n, gast.Name)
              and not isinstance(n.ctx, gast.Store)} for body, start, stop in found]
    readers: dict[str, int] = {}         # how many regions read each name
    for names_read in reads:
        for v in names_read:
            readers[v] = readers.get(v, 0) + 1
    kernels: dict[tuple, tuple] = {}    # canonical code -> (function, canonical inputs, canonical outputs)
    made: list[gast.FunctionDef] = []
    # regions later in a list first, so that the indexes of earlier ones stay valid; lists in the
    # order first found (not by id(): memory addresses made the kernels' names vary between runs)
    first_seen: dict[int, int] = {}
    for k, (body, _, _) in enumerate(found):
        first_seen.setdefault(id(body), k)
    for k in sorted(range(len(found)), key=lambda k: (first_seen[id(found[k][0])], -found[k][1])):
        body, start, stop = found[k]
        stmts = body[start:stop]
        order = NameOrder()
        surely = order.block(stmts)
        inputs = {v for v, how in order.first.items() if v in local and how == "load" and v in reads[k]}
        # what is read after the region, by another region, or by this one again (in a loop)
        outputs = sorted(v for v in order.stored if v in local and (
            v in read_outside or v in inputs or readers.get(v, 0) > (v in reads[k])))
        inputs |= {v for v in outputs if surely is not NOT_REACHED and v not in surely}     # written on some paths: it had a value before
        text, names = _canonical(stmts, local)
        key = (text, tuple(sorted(names[v] for v in inputs)), tuple(names[v] for v in outputs))
        if key not in kernels:
            params = sorted(inputs, key=lambda v: names[v])
            kname = namer.fresh("fused_loop")
            ret = gast.Tuple([gast.Name(v, gast.Load(), None, None) for v in outputs], gast.Load()) \
                if len(outputs) != 1 else gast.Name(outputs[0], gast.Load(), None, None)
            kbody = clone(stmts)
            coefficients = [namer.fresh("coef") for _ in _coefficients(kbody)]
            _parameterize(kbody, coefficients)
            kdef = gast.FunctionDef(
                name=kname,
                args=gast.arguments(args=[gast.Name(v, gast.Param(), None, None) for v in params + coefficients],
                                    posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                    defaults=[]),
                body=kbody + [gast.Return(ret)], decorator_list=[], returns=None, type_comment=None,
                type_params=[])
            made.append(kdef)
            if unfused_apart:
                made += _unfused_apart(kdef, namer)
            kernels[key] = (kname, [names[v] for v in params], [names[v] for v in outputs])
        kname, cparams, couts = kernels[key]
        actual = {c: v for v, c in names.items()}
        call = gast.Call(func=gast.Name(kname, gast.Load(), None, None),
                         args=[gast.Name(actual[c], gast.Load(), None, None) for c in cparams] +
                         [gast.Constant(c.value, None) for c in _coefficients(stmts)], keywords=[])
        if not couts:
            new = gast.Expr(value=call)
        elif len(couts) == 1:
            new = gast.Assign(targets=[gast.Name(actual[couts[0]], gast.Store(), None, None)], value=call,
                              type_comment=None)
        else:
            new = gast.Assign(targets=[gast.Tuple([gast.Name(actual[c], gast.Store(), None, None) for c in couts],
                                                  gast.Store())], value=call, type_comment=None)
        guard = body[stop - 1]
        gast.copy_location(new, guard)
        for key in (SRC, GRAD_OF):
            if hasanno(guard, key):
                setanno(new, key, getanno(guard, key))
        setanno(new, SECTION, f"{getanno(guard, SECTION)} ({kname})")
        body[start:stop] = [new]
    made.sort(key=lambda k: k.name)
    return made



def _unfused_apart(kdef: gast.FunctionDef, namer: Namer) -> list[gast.FunctionDef]:
    """Move the unfused branch of each region in `kdef` into a function of its own (returned).

    Under target="parallel" the function holding a `prange` loop is compiled with parallel=True,
    and Numba's array analysis then asserts that the operands of every array expression in it
    have equal sizes: it does not broadcast a dimension of size 1 at run time ("Sizes of t1, y do
    not match" for (1,) * (5,)).  The unfused branch is exactly what runs when the operands
    broadcast, so it moves out, into a function without prange, compiled without parallel=True:

        if n >= 0:                           # the prange loop, as before
            ...
        else:
            t7 = unfused(x, y, coef)         # def unfused(x, y, coef): t1 = fast_sin(x); ...
    """
    made = []
    local = {a.id for a in kdef.args.args} | \
        {n.id for n in iter_nodes(kdef) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    for k, s in enumerate(kdef.body):
        if not (_is_region(s) and s.orelse):
            continue
        order = NameOrder()
        surely = order.block(s.orelse)
        read_after = {n.id for t in kdef.body[k + 1:] for n in iter_nodes(t) if isinstance(n, gast.Name)
                      and not isinstance(n.ctx, gast.Store)}
        outputs = sorted(v for v in order.stored if v in read_after)
        if surely is NOT_REACHED or any(v not in surely for v in outputs):
            continue                    # (a branch that leaves or writes an output on some paths: kept)
        inputs = sorted(v for v, how in order.first.items() if how == "load" and v in local)
        fname = namer.fresh("unfused")
        ret = gast.Tuple([gast.Name(v, gast.Load(), None, None) for v in outputs], gast.Load()) \
            if len(outputs) != 1 else gast.Name(outputs[0], gast.Load(), None, None)
        made.append(gast.FunctionDef(
            name=fname,
            args=gast.arguments(args=[gast.Name(v, gast.Param(), None, None) for v in inputs], posonlyargs=[],
                                vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
            body=s.orelse + ([gast.Return(ret)] if outputs else []), decorator_list=[], returns=None,
            type_comment=None, type_params=[]))
        call = gast.Call(func=gast.Name(fname, gast.Load(), None, None),
                         args=[gast.Name(v, gast.Load(), None, None) for v in inputs], keywords=[])
        if not outputs:
            new = gast.Expr(value=call)
        else:
            target = gast.Tuple([gast.Name(v, gast.Store(), None, None) for v in outputs], gast.Store()) \
                if len(outputs) > 1 else gast.Name(outputs[0], gast.Store(), None, None)
            new = gast.Assign(targets=[target], value=call, type_comment=None)
        gast.copy_location(new, s.orelse[0])
        if hasattr(s.orelse[0], "s2s_src"):
            new.s2s_src = s.orelse[0].s2s_src
        s.orelse = [new]
    return made
