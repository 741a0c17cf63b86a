"""The pipeline driver: parse -> normalize -> transform -> optimize -> emit -> backend, cached.

`build` is the one entry the transformation objects call: the generated function for a source
function, a transform and its options. It is cached twice: in memory by the function's identity
(held only while the function lives) and on disk by its code and what it read (codegen/diskcache),
so `grad(f)` twice generates once and a second process loads instead of generating.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import linecache
import os
import threading
import weakref
from typing import Callable

import gast

from .analysis.aliasing import with_view_guards
from .codegen import emit
from .codegen.emit import Generated
from .codegen.user_lines import origin_of, remember
from .errors import ArgumentError, TransformError, UnsupportedSyntaxError
from .frontend.normalize import normalize
from .frontend.nodes import iter_nodes
from .frontend.parse import parse_function
from .frontend.reads import changed, reads_of
from .optimize import cleanup
from .transforms.batching import BatchSpec, batch
from .transforms.forward import ForwardSpec, forward
from .transforms.reverse import ReverseSpec, reverse


class _PerFunctionCache:
    """Generated code by key (_memo_key), held only while the source function lives: a dropped
    closure frees what it captured (a dict of keys would keep every closure and its arrays)."""

    def __init__(self):
        self._by_fn: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._strong: dict = {}          # (sources that cannot be weakly referenced: held, as keys)

    def _table(self, fn, create: bool) -> dict | None:
        try:
            table = self._by_fn.get(fn)
            if table is None and create:
                table = self._by_fn[fn] = {}
        except TypeError:
            table = self._strong.get(fn)
            if table is None and create:
                table = self._strong[fn] = {}
        return table

    def get(self, key: tuple, default=None):
        table = self._table(key[0], create=False)
        return default if table is None else table.get(key[1:], default)

    def __setitem__(self, key: tuple, gen: Generated) -> None:
        self._table(key[0], create=True)[key[1:]] = gen

    def values(self) -> list:
        return [g for table in list(self._by_fn.values()) + list(self._strong.values()) for g in table.values()]

    def __len__(self) -> int:
        return len(self.values())


_CACHE = _PerFunctionCache()


_LOCK = threading.Lock()


STATS = {"generated": 0, "loaded": 0}   # how often build generated source vs reloaded it from disk


def build(src_fn: Callable, transform: str, argnums: tuple[int, ...], tuple_out: bool, has_aux: bool,
           options: tuple = ()) -> Generated:
    key = _memo_key(src_fn, transform, argnums, tuple_out, has_aux, options)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and not changed(hit.reads):
        return hit
    _refuse_replaced_library(src_fn)
    # (a name it read was rebound since: generate again, from the source, not the disk cache)
    gen = _load_from_disk(src_fn, key) if hit is None else None
    if gen is None:
        with _collector_paused():
            gen = generate(src_fn, transform, argnums, tuple_out, has_aux, options)
    gen = dataclasses.replace(gen, reads=reads_of(src_fn))
    with _LOCK:
        _CACHE[key] = gen
    remember(gen)
    _release_with(src_fn, gen)
    return gen


def _refuse_sparse_products(nf) -> None:
    """A product with a scipy.sparse matrix (frontend/foreign.py) under jit: Numba has no type for
    sparse matrices; refused at the user's line."""
    from .frontend.foreign import SPARSE_OPS
    for n in iter_nodes(nf.node):
        if isinstance(n, gast.Call) and getattr(n, "s2s_fn", None) in SPARSE_OPS:
            raise (getattr(n, "s2s_src", None) or nf.source).error(
                TransformError, "jit cannot compile this product with a scipy.sparse matrix: Numba has no type for "
                "sparse matrices", n,
                "differentiate it without jit (s2s.grad, s2s.vmap run it with scipy), or use jit(f, fallback=True) "
                "to run the generated Python with a warning")


def _refuse_replaced_library(src_fn: Callable) -> None:
    """A NumPy/math function rebound by the user (`np.sin = np.cos`): generated code, rule templates
    and the runtime helpers call those functions by name, so they would compute with the replacement
    while the user's call is differentiated as the op it named: refused (rules/registry.py)."""
    from .rules.registry import replaced_spellings
    replaced = replaced_spellings()
    if not replaced:
        return
    code = getattr(src_fn, "__code__", None)
    spelling, now, op = replaced[0]
    others = f" (and {', '.join(s for s, _, _ in replaced[1:])})" if len(replaced) > 1 else ""
    what = getattr(now, "__qualname__", None) or getattr(now, "__name__", None) or type(now).__name__
    raise TransformError(
        f"`{spelling}` is not {getattr(op, '__name__', spelling)} any more: it was set to `{what}`{others}. s2s's "
        f"derivative rules and helpers call NumPy by name, so the derivative of "
        f"`{getattr(src_fn, '__qualname__', src_fn)}` would be computed with the replacement",
        filename=getattr(code, "co_filename", None), lineno=getattr(code, "co_firstlineno", None),
        source_line=linecache.getline(code.co_filename, code.co_firstlineno).rstrip() if code is not None else None,
        hint=f"restore `{spelling}` (keep the original: `orig = {spelling}` ... `{spelling} = orig`) and call the "
             "function you mean by its own name, or define your replacement as a Python function of your own "
             f"(def my_op(x): ...) and call that instead of `{spelling}`")


@contextlib.contextmanager
def _collector_paused():
    """A transform builds hundreds of thousands of short-lived tree nodes and no cycles that
    matter: Python's cyclic collector, run on every allocation burst, cost a quarter of the
    transform time of a 2000-line function (its full passes grow with the live heap)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _release_with(src_fn: Callable, gen: Generated) -> None:
    """When the source function is dropped, so is its generated module's sys.modules entry (kept
    for Numba's disk cache, which finds a module's globals by its name): the module's globals hold
    the values the function captured, which must not outlive it."""
    import sys
    name = getattr(getattr(gen.fn, "py_func", gen.fn), "__module__", None) or ""
    module = sys.modules.get(name)
    if module is not None and name.startswith("s2s_generated_"):
        try:
            weakref.finalize(src_fn, _unregister_module, name, module)
        except TypeError:        # (a source that cannot be weakly referenced lives as long as s2s)
            pass


def _unregister_module(name: str, module) -> None:
    import sys
    if sys.modules.get(name) is module:
        del sys.modules[name]


def _memo_key(src_fn, transform, argnums, tuple_out, has_aux, options) -> tuple:
    """The in-memory cache's key; the disk cache's is made from it (key[2:]).  The rules registered
    by users take part: generated code inlines their templates."""
    from .rules.registry import user_rules_fingerprint
    return (src_fn, getattr(src_fn, "__code__", None), transform, argnums, tuple_out, has_aux, options,
            user_rules_fingerprint())


def _disk_key(src_fn, key) -> str | None:
    from .codegen import diskcache
    return diskcache.key_for(src_fn, key[2:])


def _load_from_disk(src_fn, key) -> Generated | None:
    from .codegen import diskcache
    from .frontend.namespace import base_namespace
    dkey = _disk_key(src_fn, key)
    if dkey is None:
        return None
    opts = dict(key[6])
    entry = diskcache.load(dkey, base_namespace(), src_fn)
    if entry is None:
        return None
    source, path, fname, namespace, origin = entry
    backend = opts.get("backend", "python")
    if backend == "numba" and not emit.values_match(source, namespace):
        return None         # compiled for other values of its globals (Numba froze them into the code)
    if key[2] == "vmap" and namespace.get("example_fn") is src_fn:     # (stored as the source function)
        namespace["example_fn"] = example_primal(src_fn, key[6]).fn if backend == "numba" else \
            weakref.proxy(src_fn)
    if backend == "numba":
        from .backends import numba_cpu
        namespace = numba_cpu.compiled_namespace(namespace)
    fn = emit.load_function(source, path, fname, namespace, register=(backend == "numba"))
    if backend == "numba":
        fn = numba_cpu.compile_function(fn, target=opts.get("target", "cpu"), cache=opts.get("cache", True))
    STATS["loaded"] += 1
    return Generated(fn, source, path, origin)


_BUILDING = threading.local()


@contextlib.contextmanager
def _compiled_build(compiled: bool):
    """While code for Numba is normalized, a transform it calls (`s2s.grad(loss)(w, x, y)` inside a
    jitted function) is inlined in its typed-tape form (inline_options)."""
    saved = getattr(_BUILDING, "compiled", False)
    _BUILDING.compiled = compiled
    try:
        yield
    finally:
        _BUILDING.compiled = saved


def inline_options() -> tuple:
    """The options of a transform inlined into the code being normalized now."""
    return (("tapes", "per_variable"),) if getattr(_BUILDING, "compiled", False) else ()


def _normalized(parsed, transform: str, opts: dict):
    if transform == "vmap":
        from .rules.batch_rules import kept_calls
        keep = kept_calls()
        if opts.get("backend") == "numba":
            # compiled: an op helper (einsum_vjp, norm_grad, ...) runs per example as one compiled call
            # (bmap), not inlined and batched statement by statement (Python-only plans and branches)
            from .backends.numba_cpu import helper_functions
            keep = keep | helper_functions(ops_only=True)
        return normalize(parsed, keep)
    elif transform == "primal" and opts.get("backend") == "numba":
        # compiled code calls s2s's helpers (their Numba versions) as the transforms' code does;
        # inlined, their Python-only branches (`if not compute_uv:`) would have to type in Numba
        from .backends.numba_cpu import helper_functions
        return normalize(parsed, helper_functions())
    return normalize(parsed)


def example_primal(src_fn: Callable, options: tuple) -> Generated:
    """The compiled function a compiled vmap's per-example loop calls."""
    primal_opts = tuple((k, v) for k, v in options if k in ("backend", "target", "cache", "tapes", "fuse"))
    return build(src_fn, "primal", (), False, False, primal_opts)


def generate(src_fn: Callable, transform: str, argnums: tuple[int, ...], tuple_out: bool, has_aux: bool,
              options: tuple = ()) -> Generated:
    key = _memo_key(src_fn, transform, argnums, tuple_out, has_aux, options)
    parsed = parse_function(src_fn)
    star = parsed.node.args.vararg or parsed.node.args.kwarg
    if star is not None:
        raise parsed.source.error(
            UnsupportedSyntaxError, f"s2s transforms functions with named parameters only; `{parsed.source.qualname}` "
            f"takes *{'' if star is parsed.node.args.vararg else '*'}{getattr(star, 'id', '')}", parsed.node,
            "name each parameter (def f(x, y)), or take one tuple or dict argument (a pytree: grad "
            "differentiates every array in it)")
    nparams = len(parsed.node.args.args)
    for a in argnums:
        if not -nparams <= a < nparams:
            raise ArgumentError(f"argnums={a} is out of range: {parsed.source.qualname} takes {nparams} "
                                f"positional argument{'s' if nparams != 1 else ''}")
    argnums = tuple(a % nparams for a in argnums)
    opts = dict(options)
    example = None       # the compiled primal a per-example loop calls
    with _compiled_build(opts.get("backend") == "numba"):
        nf = _normalized(parsed, transform, opts)
    nf.node.body = with_view_guards(nf.node.body)      # (rows read by index, then written: checked)
    import re
    backend = opts.get("backend", "python")
    if backend == "numba":
        _refuse_sparse_products(nf)
    if backend == "numba" and nf.objects:
        held = ", ".join(sorted({type(nf.namespace[k]).__name__ for k in nf.objects if k in nf.namespace}))
        raise TransformError(
            f"jit cannot compile {parsed.source.qualname}: it reads attributes or calls methods of a Python object "
            f"({held}) when it runs, and Numba has no type for such objects",
            hint="pass the arrays as arguments (def loss(w, b, x, y)) and jit that function, or use "
                 "jit(f, fallback=True) to run the generated Python")
    name = f"{re.sub(r'[^A-Za-z0-9_]', '', src_fn.__name__) or 'fn'}_{transform}"
    wrt = [nf.params[a] for a in argnums]
    if transform == "primal":
        fdef = nf.node
        fdef.name = name
    elif transform == "jvp":
        fdef = forward(nf, ForwardSpec(wrt=wrt, name=name))
    elif transform == "vmap":
        # (Python code calls the function itself per example: through a weak proxy, so the cached
        # module of a function does not keep that function alive; its callers hold it)
        fdef = batch(nf, BatchSpec(in_axes=list(opts["in_axes"]), out_axes=opts["out_axes"],
                                   axis_size=opts["axis_size"], name=name,
                                   example_fn=src_fn if backend == "numba" else weakref.proxy(src_fn)))
        if backend == "numba" and nf.namespace.get("example_fn") is src_fn:
            # the per-example loop (no array form) calls the function itself: compiled code calls its
            # compiled primal (numba_cpu lowers per_example to a loop over the examples)
            example = example_primal(src_fn, options)
            nf.namespace["example_fn"] = example.fn
    else:
        fdef = reverse(nf, ReverseSpec(wrt=wrt, mode=transform, has_aux=has_aux, tuple_out=tuple_out, name=name,
                                       tapes=opts.get("tapes", "single")))
    fdef = cleanup.optimize(fdef)
    if backend == "numba":
        from .optimize.straight_tapes import straight_tapes
        fdef = straight_tapes(fdef, nf.namespace)
    if opts.get("arg_facts") is not None:
        from .optimize.specialize import infer_facts, specialize
        params = dict(zip(nf.params, opts["arg_facts"]))
        fdef = cleanup.optimize(specialize(fdef, params, nf.namespace))
        if backend == "numba":
            from .optimize.array_tapes import array_tapes
            fdef = array_tapes(fdef, infer_facts(fdef, params, nf.namespace), nf.namespace)
    if backend == "numba":
        from .backends import numba_cpu
        from .frontend.ast_build import Namer
        from .transforms.fuse import fuse
        if opts.get("fuse", True):
            taken = {n.id for n in iter_nodes(fdef) if isinstance(n, gast.Name)} | set(nf.namespace)
            namer = Namer(taken)
            ranks = None
            if opts.get("arg_facts") is not None:     # known ranks let a broadcast operand fuse too
                from .optimize.specialize import infer_facts
                env = infer_facts(fdef, dict(zip(nf.params, opts["arg_facts"])), nf.namespace).env
                ranks = {v: f[0] for v, f in env.items() if isinstance(f[0], int)}
            fdef = fuse(fdef, nf.namespace, namer, ranks)     # (no cleanup after: writes go through views)
            if transform == "vmap" and opts.get("param_facts") is not None:
                from .transforms.fuse_rows import fuse_rows
                fdef = fuse_rows(fdef, nf.namespace, namer, opts["param_facts"], opts["in_axes"])
        fdef = numba_cpu.lower(fdef, nf.namespace, opts.get("target", "cpu"))
        from .backends.outline import outline
        # (every fused loop under target="parallel": only their functions get parallel=True)
        # (and their unfused branches apart: Numba's parallel array analysis does not broadcast)
        parallel = opts.get("target", "cpu") == "parallel"
        outlined = outline(fdef, numba_cpu.namer_for(fdef, nf.namespace), 1 if parallel else None,
                           unfused_apart=parallel)
        outlined = list(getattr(fdef, "s2s_effect_functions", [])) + outlined     # (side effects, object mode)
        nf.namespace = numba_cpu.compiled_namespace(nf.namespace)
    else:
        from .codegen.regions import restore_regions
        fdef = restore_regions(fdef, nf.namespace)      # (`with`/`try` around differentiated code)
        outlined = []
    body = "".join(emit.to_source(k) + "\n\n" for k in outlined) + emit.to_source(fdef)
    origin = origin_of(src_fn)
    if transform == "vmap":
        desc = f"vmap(in_axes={opts['in_axes']}, out_axes={opts['out_axes']}) of {origin}"
    elif transform == "primal":
        desc = f"normalized source of {origin}"
    else:
        desc = f"{transform}(argnums={argnums if tuple_out else argnums[0]}{', has_aux=True' if has_aux else ''}) of {origin}"
    if backend == "numba":
        # (the error model in the text: the file, and the machine code Numba caches beside it, is not
        # shared with code compiled with another one)
        desc += f" [numba {opts.get('target', 'cpu')}, error_model={opts.get('error_model', 'numpy')}]"
    if example is not None:
        # (Numba's disk cache of this file refers to the compiled example function by its module:
        # a fused and an unfused primal make two files)
        desc += f", per example: {os.path.basename(example.path)}"
    text = emit.header(desc, nf.namespace, body, imports=(backend == "python")) + body
    path = emit.write_module(text, name + ("_numba" if backend == "numba" else ""))
    # (only compiled modules go in sys.modules, where Numba's disk cache finds their globals; a
    # registered module lives as long as s2s, with whatever its globals hold)
    fn = emit.load_function(text, path, name, nf.namespace, register=(backend == "numba"))
    if backend == "numba":
        fn = numba_cpu.compile_function(fn, target=opts.get("target", "cpu"), cache=opts.get("cache", True))
    STATS["generated"] += 1
    dkey = _disk_key(src_fn, key)
    if dkey is not None:
        from .codegen import diskcache
        from .frontend.namespace import base_namespace
        base = base_namespace()
        if backend == "numba":
            base = numba_cpu.compiled_namespace(base)
        stored = nf.namespace if "example_fn" not in nf.namespace else {**nf.namespace, "example_fn": src_fn}
        diskcache.store(dkey, path, name, stored, base, nf.deps + [src_fn.__code__.co_filename], origin,
                        src_fn=src_fn)
    return Generated(fn, text, path, origin)
