"""Parallel twins: under the default target a fused loop over many elements runs on every core,
a short one serially, chosen at run time.

Each fused loop the lowering marked (PARALLEL_TWIN: not a loop over rows that add into one sum)
gets a twin, a function of its own holding the same loop as a `prange` (compiled with
parallel=True, backends/numba_cpu.compile_function), and the loop becomes a switch:

    if parallel_worth(n):                 # n >= PARALLEL_MIN and Numba has more than one thread
        s, n_uncovered = fused_parallel(n, x_flat, dx_out, s, n_uncovered)
    else:
        for i in range(n):                # the serial loop, unchanged
            ...

    def fused_parallel(n, x_flat, dx_out, s, n_uncovered):
        for i in prange(n):
            ...
        return s, n_uncovered

A twin takes what the loop reads and returns the sums it accumulates (`s = s + v`, a `prange`
reduction); a loop that leaves another value behind for the code after it stays serial.  The
switch is per loop and per call: a parallel loop's start costs ~35 us on 13 threads, more than a
loop of a few thousand elements takes (loops.PARALLEL_MIN; docs/performance.md, "Threads").  Only the loop moves:
Numba's parallel array analysis of a whole generated function refused broadcasting operands
(see outline._unfused_apart), and the twin has no array expressions.

A parallel sum adds its partial sums per thread, so its last bits depend on the thread count
(as NumPy's pairwise sum differs from a loop's); at one thread the serial loop runs.
"""
from __future__ import annotations

import re

import gast

from ..analysis.resolve import resolve_call
from ..frontend.annotations import INNER, PARALLEL_TWIN, getanno
from ..frontend.ast_build import Namer
from ..frontend.nodes import clone, iter_nodes
from ..rules.registry import record_of
from .outline import NOT_REACHED, NameOrder


def parallel_twins(functions: list[gast.FunctionDef], namer: Namer, namespace: dict) -> list[gast.FunctionDef]:
    """Give each marked loop of `functions` a parallel twin and a run-time switch; the twins.
    None where the code calls BLAS or LAPACK (see calls_blas)."""
    if calls_blas(functions, namespace):
        return []
    made: list[gast.FunctionDef] = []
    for fdef in functions:
        local = {a.id for a in fdef.args.args} | \
            {n.id for n in iter_nodes(fdef) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        _in_block(fdef, fdef.body, local, namer, made)
    return made


# what runs on BLAS/LAPACK's own threads: NumPy's linear algebra (the linalg family's ops) and
# the helpers that call it (matmul_vjp_a, dot_vjp_b, bmatmul, tensordot_vjp_a, einsum_vjp, ...)
_BLAS_WORDS = re.compile(r"(^|_)b?(matmul|dot|vdot|einsum|tensordot|inner|solve|inv|cholesky|svd|svdvals|eig|eigh|"
                         r"eigvalsh|det|slogdet|lstsq|qr|kron)(_|$)")


def calls_blas(functions: list[gast.FunctionDef], namespace: dict) -> bool:
    """Whether the code calls BLAS or LAPACK.  Their threads and Numba's then take turns on the
    same cores, and each pool's idle threads spin while the other works: on 13 cores the MLP's
    jit(grad) took 21.6 ms with twins against 2.8 ms without (3.4 ms with OpenMP's threads made
    to sleep at once: OMP_WAIT_POLICY=PASSIVE); its loops are short beside its matmuls."""
    for fdef in functions:
        for node in iter_nodes(fdef):
            if isinstance(node, gast.BinOp) and isinstance(node.op, gast.MatMult):
                return True
            if isinstance(node, gast.Call):
                fn = resolve_call(node, namespace)
                if fn is None:
                    continue
                if record_of(fn).defined_in.endswith(".linalg.rules") or \
                        _BLAS_WORDS.search(getattr(fn, "__name__", "") or ""):
                    return True
    return False


def _in_block(fdef, body: list, local: set, namer: Namer, made: list) -> None:
    for k, s in enumerate(body):
        if isinstance(s, gast.For) and getanno(s, PARALLEL_TWIN, False):
            switch = _switch(fdef, s, local, namer, made)
            if switch is not None:
                body[k] = switch
                continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            _in_block(fdef, s.body, local, namer, made)
            _in_block(fdef, s.orelse, local, namer, made)


def _counts(loop: gast.For) -> list | None:
    """The iteration counts of the loop (and of its inner loop over a grid's columns), as
    expressions read before the loop; None if the loop is not over range(count)."""
    out = []
    inner = getanno(loop, INNER, None)
    for lp in (loop,) if inner is None or inner is loop else (loop, inner):
        it = lp.iter
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range"
                and len(it.args) == 1):
            return None
        out.append(it.args[0])
    stored = {n.id for n in iter_nodes(loop) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    if any(isinstance(n, gast.Name) and n.id in stored for c in out for n in iter_nodes(c)):
        return None     # (the inner count computed in the outer loop: only the outer one counts)
    return out


def _switch(fdef, loop: gast.For, local: set, namer: Namer, made: list):
    counts = _counts(loop)
    if counts is None or any(isinstance(n, (gast.Return, gast.Break, gast.Continue, gast.Yield, gast.Raise))
                             for n in iter_nodes(loop)):
        return None
    order = NameOrder()
    if order.stmt(loop) is NOT_REACHED:
        return None
    read_outside = _read_elsewhere(fdef, loop)
    targets = {n.id for lp in (loop, getanno(loop, INNER, loop)) for n in iter_nodes(lp.target)
               if isinstance(n, gast.Name)}
    outputs = sorted(v for v in order.stored if v in local and v in read_outside and v not in targets)
    if any(order.first.get(v) != "load" or not _is_sum(loop, v) for v in outputs):
        return None     # a value the loop leaves behind other than a sum: it stays serial
    inputs = sorted(v for v, how in order.first.items() if how == "load" and v in local and v not in targets)
    twin_name = namer.fresh("fused_parallel")
    twin_loop = clone(loop)
    twin_loop.iter.func = gast.Name("prange", gast.Load(), None, None)
    ret = _names(outputs) if len(outputs) != 1 else gast.Name(outputs[0], gast.Load(), None, None)
    made.append(gast.FunctionDef(
        name=twin_name,
        args=gast.arguments(args=[gast.Name(v, gast.Param(), None, None) for v in inputs], posonlyargs=[],
                            vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[twin_loop] + ([gast.Return(ret)] if outputs else []), decorator_list=[], returns=None,
        type_comment=None, type_params=[]))
    call = gast.Call(func=gast.Name(twin_name, gast.Load(), None, None),
                     args=[gast.Name(v, gast.Load(), None, None) for v in inputs], keywords=[])
    if not outputs:
        run_twin = gast.Expr(value=call)
    else:
        target = gast.Name(outputs[0], gast.Store(), None, None) if len(outputs) == 1 else \
            gast.Tuple([gast.Name(v, gast.Store(), None, None) for v in outputs], gast.Store())
        run_twin = gast.Assign(targets=[target], value=call, type_comment=None)
    size = clone(counts[0])
    for c in counts[1:]:
        size = gast.BinOp(size, gast.Mult(), clone(c))
    test = gast.Call(func=gast.Name("parallel_worth", gast.Load(), None, None), args=[size], keywords=[])
    switch = gast.If(test=test, body=[run_twin], orelse=[loop])
    for n in (switch, run_twin, test):
        gast.copy_location(n, loop)
    return switch


def _read_elsewhere(fdef, loop: gast.For) -> set[str]:
    """Names read outside `loop` where they may hold its value: not inside another loop that
    writes them before reading them (the rerun of a loop with sin/cos has the same temporaries)."""
    out: set[str] = set()

    def visit(node) -> None:
        if node is loop:
            return
        if isinstance(node, gast.For) and not any(n is loop for n in iter_nodes(node)):
            order = NameOrder()
            order.stmt(node)
            out.update(v for v, how in order.first.items() if how == "load")
            return
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Store):
            out.add(node.id)
        for child in gast.iter_child_nodes(node):
            visit(child)

    visit(fdef)
    return out


def _names(names: list[str]) -> gast.Tuple:
    return gast.Tuple([gast.Name(v, gast.Load(), None, None) for v in names], gast.Load())


def _is_sum(loop: gast.For, v: str) -> bool:
    """Every write of `v` in the loop is `v = v + e` or `v += e` (e not reading v): a prange sum."""
    writes = 0
    for n in iter_nodes(loop):
        if isinstance(n, gast.Assign) and any(isinstance(t, gast.Name) and t.id == v for t in n.targets):
            value = n.value
            if not (len(n.targets) == 1 and isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)
                    and isinstance(value.left, gast.Name) and value.left.id == v
                    and not any(isinstance(m, gast.Name) and m.id == v for m in iter_nodes(value.right))):
                return False
            writes += 1
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name) and n.target.id == v:
            if not isinstance(n.op, gast.Add) or any(isinstance(m, gast.Name) and m.id == v
                                                     for m in iter_nodes(n.value)):
                return False
            writes += 1
        elif isinstance(n, (gast.For, gast.comprehension)) and any(
                isinstance(m, gast.Name) and m.id == v for m in iter_nodes(n.target)):
            return False
    return writes > 0
