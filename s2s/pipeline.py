"""The pipeline driver: parse -> normalize -> transform -> optimize -> emit -> backend, cached.

`build` is the one entry the transformation objects call: the generated function for a source
function, a transform and its options (a GenerateOptions record, pipeline_options.py). It is cached
twice: in memory by the function's identity (held only while the function lives) and on disk by its
code and what it read (codegen/diskcache), so `grad(f)` twice generates once and a second process
loads instead of generating.

`generate` runs the stages of the options' backend in order (PYTHON_STAGES, NUMBA_STAGES below):
each stage reads and sets fields of one Generation record, so what differs between the backends is
which stages their lists hold, not tests of the backend inside one long function.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import linecache
import logging
import os
import re
import threading
import time
import weakref
from typing import Any, Callable

import gast

from . import log
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
from .pipeline_options import DEFAULT, GenerateOptions
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
GENERATING = threading.RLock()      # (held while generating; jit holds it to fork a compiling process)


STATS = {"generated": 0, "loaded": 0}   # how often build generated source vs reloaded it from disk


def build(src_fn: Callable, transform: str, argnums: tuple[int, ...], tuple_out: bool, has_aux: bool,
           options: GenerateOptions = DEFAULT) -> Generated:
    key = _memo_key(src_fn, transform, argnums, tuple_out, has_aux, options)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and not changed(hit.reads):
        return hit
    _refuse_replaced_library(src_fn)
    # (a name it read was rebound since: generate again, from the source, not the disk cache)
    with GENERATING:      # (jit's background compiles generate on their own thread: one at a time)
        start = time.perf_counter()
        gen = _load_from_disk(src_fn, key, options) if hit is None else None
        if gen is not None:
            log.logger.info("%s of %s (%s): source loaded from the disk cache in %.3f s", transform,
                            getattr(src_fn, "__qualname__", "?"), options.backend, time.perf_counter() - start)
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


def _memo_key(src_fn, transform, argnums, tuple_out, has_aux, options: GenerateOptions) -> tuple:
    """The in-memory cache's key; the disk cache's is made from it (key[2:]).  The rules registered
    by users take part: generated code inlines their templates."""
    from .frontend.library_code import policy_key
    from .rules.registry import user_rules_fingerprint
    return (src_fn, getattr(src_fn, "__code__", None), transform, argnums, tuple_out, has_aux, options.key(),
            user_rules_fingerprint(), policy_key())


def _disk_key(src_fn, key) -> str | None:
    from .codegen import diskcache
    return diskcache.key_for(src_fn, key[2:])


def _load_from_disk(src_fn, key, options: GenerateOptions) -> Generated | None:
    from .codegen import diskcache
    from .frontend.namespace import base_namespace
    dkey = _disk_key(src_fn, key)
    if dkey is None:
        return None
    entry = diskcache.load(dkey, base_namespace(), src_fn)
    if entry is None:
        return None
    source, path, fname, namespace, origin = entry
    compiled = options.compiled
    if compiled and not emit.values_match(source, namespace):
        return None         # compiled for other values of its globals (Numba froze them into the code)
    if key[2] == "vmap" and namespace.get("example_fn") is src_fn:     # (stored as the source function)
        namespace["example_fn"] = example_primal(src_fn, options).fn if compiled else weakref.proxy(src_fn)
    if compiled:
        from .backends import numba_cpu
        namespace = numba_cpu.compiled_namespace(namespace)
    fn = emit.load_function(source, path, fname, namespace, register=compiled)
    if compiled:
        fn = numba_cpu.compile_function(fn, target=options.target, cache=options.cache)
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


def inline_options() -> GenerateOptions | None:
    """The options of a transform inlined into the code being normalized now (None: its own)."""
    return GenerateOptions(tapes="per_variable") if getattr(_BUILDING, "compiled", False) else None


def example_primal(src_fn: Callable, options: GenerateOptions) -> Generated:
    """The compiled function a compiled vmap's per-example loop calls."""
    return build(src_fn, "primal", (), False, False, options.for_example())


# ---------------------------------------------------------------------------
# generate: the stages, one list per backend
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Generation:
    """What the stages hand on: what was asked (the first fields, fixed), then what the stages made so far
    (a stage's docstring says what it sets where that is more than fdef, the generated tree)."""
    src_fn: Callable
    transform: str                       # "primal", "jvp", "vmap", or a reverse mode ("grad", "value_and_grad", ...)
    argnums: tuple[int, ...]
    tuple_out: bool
    has_aux: bool
    options: GenerateOptions
    cache_key: tuple                     # the in-memory key (_memo_key); the disk key is made from it
    parsed: Any = None                   # the parsed function (frontend/parse.py)
    nf: Any = None                       # the normalized function: tree, namespace, params, deps
    name: str = ""                       # the generated function's name
    fdef: Any = None                     # the generated function's tree
    example: Generated | None = None     # the compiled primal a compiled vmap's per-example loop calls
    outlined: list = dataclasses.field(default_factory=list)   # functions emitted before fdef
    origin: str = ""                     # where the user's function is (codegen/user_lines.py)
    desc: str = ""                       # what the generated module's header says it is
    text: str = ""                       # the generated module's source
    path: str = ""                       # where it was written
    fn: Callable | None = None           # the generated function, loaded (compiled under numba)


@dataclasses.dataclass(frozen=True)
class Stage:
    """One step of generate: `run` reads and sets fields of the Generation (its name is for readers)."""
    name: str
    run: Callable[[Generation], None]


def _parse(g: Generation) -> None:
    """Sets parsed, and argnums counted from the front; refuses *args and argnums out of range."""
    parsed = g.parsed = parse_function(g.src_fn)
    star = parsed.node.args.vararg or parsed.node.args.kwarg
    if star is not None:
        raise parsed.source.error(
            UnsupportedSyntaxError, f"s2s transforms functions with named parameters only; `{parsed.source.qualname}` "
            f"takes *{'' if star is parsed.node.args.vararg else '*'}{getattr(star, 'id', '')}", parsed.node,
            "name each parameter (def f(x, y)), or take one tuple or dict argument (a pytree: grad "
            "differentiates every array in it)")
    nparams = len(parsed.node.args.args)
    for a in g.argnums:
        if not -nparams <= a < nparams:
            raise ArgumentError(f"argnums={a} is out of range: {parsed.source.qualname} takes {nparams} "
                                f"positional argument{'s' if nparams != 1 else ''}")
    g.argnums = tuple(a % nparams for a in g.argnums)


def _normalize(g: Generation) -> None:
    """Sets nf; a vmap keeps the calls it batches as one (rules/batch_rules.py) instead of inlining them."""
    with _compiled_build(False):
        if g.transform == "vmap":
            from .rules.batch_rules import kept_calls
            g.nf = normalize(g.parsed, kept_calls())
        else:
            g.nf = normalize(g.parsed)


def _normalize_compiled(g: Generation) -> None:
    """Sets nf, for Numba: transforms called inside are inlined with typed tapes (inline_options), and
    s2s's helpers stay calls (their Numba versions)."""
    from .backends.numba_cpu import helper_functions
    with _compiled_build(True):
        if g.transform == "vmap":
            # an op helper (einsum_vjp, norm_grad, ...) runs per example as one compiled call (bmap),
            # not inlined and batched statement by statement (Python-only plans and branches)
            from .rules.batch_rules import kept_calls
            g.nf = normalize(g.parsed, kept_calls() | helper_functions(ops_only=True))
        elif g.transform == "primal":
            # compiled code calls s2s's helpers (their Numba versions) as the transforms' code does;
            # inlined, their Python-only branches (`if not compute_uv:`) would have to type in Numba
            g.nf = normalize(g.parsed, helper_functions())
        else:
            g.nf = normalize(g.parsed)


def _view_guards(g: Generation) -> None:
    g.nf.node.body = with_view_guards(g.nf.node.body)      # (rows read by index, then written: checked)


def _refuse_uncompilable(g: Generation) -> None:
    """Refuses what Numba has no type for: scipy.sparse products, Python objects read when it runs."""
    nf = g.nf
    _refuse_sparse_products(nf)
    if nf.objects:
        held = ", ".join(sorted({type(nf.namespace[k]).__name__ for k in nf.objects if k in nf.namespace}))
        raise TransformError(
            f"jit cannot compile {g.parsed.source.qualname}: it reads attributes or calls methods of a Python object "
            f"({held}) when it runs, and Numba has no type for such objects",
            hint="pass the arrays as arguments (def loss(w, b, x, y)) and jit that function, or use "
                 "jit(f, fallback=True) to run the generated Python")


def _transform(g: Generation, example_fn: Callable) -> None:
    """Sets name and fdef: the transform of the normalized function. A vmap's per-example loop (no
    array form) calls `example_fn(src_fn)`."""
    nf, opts = g.nf, g.options
    g.name = f"{re.sub(r'[^A-Za-z0-9_]', '', g.src_fn.__name__) or 'fn'}_{g.transform}"
    wrt = [nf.params[a] for a in g.argnums]
    if g.transform == "primal":
        g.fdef = nf.node
        g.fdef.name = g.name
    elif g.transform == "jvp":
        g.fdef = forward(nf, ForwardSpec(wrt=wrt, name=g.name))
    elif g.transform == "vmap":
        g.fdef = batch(nf, BatchSpec(in_axes=list(opts.in_axes), out_axes=opts.out_axes, axis_size=opts.axis_size,
                                     name=g.name, example_fn=example_fn(g.src_fn)))
    else:
        g.fdef = reverse(nf, ReverseSpec(wrt=wrt, mode=g.transform, has_aux=g.has_aux, tuple_out=g.tuple_out,
                                         name=g.name, tapes=opts.tapes))


def _by_proxy(src_fn: Callable):
    """Python code calls the function itself per example through a weak proxy, so the cached module of
    a function does not keep that function alive (its callers hold it)."""
    return weakref.proxy(src_fn)


def _itself(src_fn: Callable) -> Callable:
    return src_fn


def _compiled_example(g: Generation) -> None:
    """Sets example: a compiled vmap's per-example loop calls the compiled primal, not the function
    itself (numba_cpu lowers per_example to a loop over the examples)."""
    if g.transform == "vmap" and g.nf.namespace.get("example_fn") is g.src_fn:
        g.example = example_primal(g.src_fn, g.options)
        g.nf.namespace["example_fn"] = g.example.fn


def _cleanup(g: Generation) -> None:
    g.fdef = cleanup.optimize(g.fdef)


def _straight_tapes(g: Generation) -> None:
    from .optimize.straight_tapes import straight_tapes
    g.fdef = straight_tapes(g.fdef, g.nf.namespace)


def _arg_facts(g: Generation) -> dict | None:
    facts = g.options.arg_facts
    return None if facts is None else dict(zip(g.nf.params, facts))


def _specialize(g: Generation) -> None:
    """With the arguments' ranks and dtype kinds known (arg_facts), the code specialized on them."""
    params = _arg_facts(g)
    if params is not None:
        from .optimize.specialize import specialize
        g.fdef = cleanup.optimize(specialize(g.fdef, params, g.nf.namespace))


def _array_tapes(g: Generation) -> None:
    """With argument facts, the tapes whose entries have known shapes become preallocated arrays."""
    params = _arg_facts(g)
    if params is not None:
        from .optimize.array_tapes import array_tapes
        from .optimize.specialize import infer_facts
        g.fdef = array_tapes(g.fdef, infer_facts(g.fdef, params, g.nf.namespace), g.nf.namespace)


def _fuse(g: Generation) -> None:
    """Elementwise statements fused into loops (and a compiled vmap's rows, with its argument facts)."""
    if not g.options.fuse:
        return
    from .frontend.ast_build import Namer
    from .transforms.fuse import fuse
    nf, opts = g.nf, g.options
    namer = Namer({n.id for n in iter_nodes(g.fdef) if isinstance(n, gast.Name)} | set(nf.namespace))
    ranks = None
    params = _arg_facts(g)
    if params is not None:     # known ranks let a broadcast operand fuse too
        from .optimize.specialize import infer_facts
        env = infer_facts(g.fdef, params, nf.namespace).env
        ranks = {v: f[0] for v, f in env.items() if isinstance(f[0], int)}
    g.fdef = fuse(g.fdef, nf.namespace, namer, ranks)     # (no cleanup after: writes go through views)
    if g.transform == "vmap" and opts.param_facts is not None:
        from .transforms.fuse_rows import fuse_rows
        g.fdef = fuse_rows(g.fdef, nf.namespace, namer, opts.param_facts, opts.in_axes)


def _lower(g: Generation) -> None:
    from .backends import numba_cpu
    g.fdef = numba_cpu.lower(g.fdef, g.nf.namespace, g.options.target)


def _outline(g: Generation) -> None:
    """Sets outlined: the fused loops as functions of their own, and the effects run in object mode;
    the namespace becomes the compiled one."""
    from .backends import numba_cpu
    from .backends.outline import outline
    # (every fused loop under target="parallel": only their functions get parallel=True)
    # (and their unfused branches apart: Numba's parallel array analysis does not broadcast)
    parallel = g.options.target == "parallel"
    loops = outline(g.fdef, numba_cpu.namer_for(g.fdef, g.nf.namespace), 1 if parallel else None,
                    unfused_apart=parallel)
    g.outlined = list(getattr(g.fdef, "s2s_effect_functions", [])) + loops     # (side effects, object mode)
    if g.options.target == "cpu" and g.options.twins:
        # (after outlining: regions alike share one function, and so one twin)
        from .backends.parallel_twins import parallel_twins
        g.outlined += parallel_twins([g.fdef] + loops, numba_cpu.namer_for(g.fdef, g.nf.namespace), g.nf.namespace)
    g.nf.namespace = numba_cpu.compiled_namespace(g.nf.namespace)


def _screen_globals(g: Generation) -> None:
    """Refuses, before Numba compiles anything, a global value the nopython code reads that Numba has
    no type for (backends/numba_screen.py): at the user's line, in the time generating takes."""
    from .backends.numba_screen import describe, first_untyped_global
    in_object_mode = {id(f) for f in getattr(g.fdef, "s2s_effect_functions", [])}
    found = first_untyped_global([g.fdef] + [f for f in g.outlined if id(f) not in in_object_mode], g.nf.namespace)
    if found is None:
        return
    stmt, spelled, value = found
    src = getattr(stmt, "s2s_src", None) or g.nf.source
    raise src.error(
        TransformError, f"jit cannot compile {g.parsed.source.qualname}: Numba has no type for `{spelled}` "
        f"{describe(value)}, which the compiled code would read (generated line: `{emit.to_source(stmt, comments=False).strip().splitlines()[0][:120]}`)",
        stmt if hasattr(stmt, "s2s_src") else None,
        hint="compute it outside the jitted function and pass the result (arrays, numbers) as an argument, or "
             "use jit(f, fallback=True) to run the generated Python")


def _restore_regions(g: Generation) -> None:
    from .codegen.regions import restore_regions
    g.fdef = restore_regions(g.fdef, g.nf.namespace)      # (`with`/`try` around differentiated code)


def _describe(g: Generation) -> None:
    """Sets origin and desc: the transform and the user's function, as the module's header says them."""
    origin = g.origin = origin_of(g.src_fn)
    opts = g.options
    if g.transform == "vmap":
        g.desc = f"vmap(in_axes={opts.in_axes}, out_axes={opts.out_axes}) of {origin}"
    elif g.transform == "primal":
        g.desc = f"normalized source of {origin}"
    else:
        argnums = g.argnums if g.tuple_out else g.argnums[0]
        g.desc = f"{g.transform}(argnums={argnums}{', has_aux=True' if g.has_aux else ''}) of {origin}"


def _describe_compiled(g: Generation) -> None:
    _describe(g)
    # (the error model in the text: the file, and the machine code Numba caches beside it, is not
    # shared with code compiled with another one)
    g.desc += f" [numba {g.options.target}, error_model={g.options.error_model or 'numpy'}]"
    if g.example is not None:
        # (Numba's disk cache of this file refers to the compiled example function by its module:
        # a fused and an unfused primal make two files)
        g.desc += f", per example: {os.path.basename(g.example.path)}"


def _write(g: Generation, imports: bool, suffix: str) -> None:
    """Sets text and path: the module, written where the disk cache keeps it (emit.write_module)."""
    body = "".join(emit.to_source(k) + "\n\n" for k in g.outlined) + emit.to_source(g.fdef)
    g.text = emit.header(g.desc, g.nf.namespace, body, imports=imports) + body
    g.path = emit.write_module(g.text, g.name + suffix)


def _load(g: Generation) -> None:
    g.fn = emit.load_function(g.text, g.path, g.name, g.nf.namespace, register=False)


def _load_compiled(g: Generation) -> None:
    """Compiled modules go in sys.modules, where Numba's disk cache finds their globals (a registered
    module lives as long as s2s, with whatever its globals hold)."""
    from .backends import numba_cpu
    fn = emit.load_function(g.text, g.path, g.name, g.nf.namespace, register=True)
    g.fn = numba_cpu.compile_function(fn, target=g.options.target, cache=g.options.cache)


def _store(g: Generation, base: dict) -> None:
    """The module on disk, by the disk key: a second process loads it (_load_from_disk). `base` is the
    namespace every generated module has, left out of what is stored."""
    dkey = _disk_key(g.src_fn, g.cache_key)
    if dkey is None:
        return
    from .codegen import diskcache
    ns = g.nf.namespace
    stored = ns if "example_fn" not in ns else {**ns, "example_fn": g.src_fn}
    diskcache.store(dkey, g.path, g.name, stored, base, g.nf.deps + [g.src_fn.__code__.co_filename],
                    g.origin, src_fn=g.src_fn)


def _store_python(g: Generation) -> None:
    from .frontend.namespace import base_namespace
    _store(g, base_namespace())


def _store_compiled(g: Generation) -> None:
    from .backends import numba_cpu
    from .frontend.namespace import base_namespace
    _store(g, numba_cpu.compiled_namespace(base_namespace()))


PYTHON_STAGES: tuple[Stage, ...] = (
    Stage("parse", _parse),
    Stage("normalize", _normalize),
    Stage("view guards", _view_guards),
    Stage("transform", functools.partial(_transform, example_fn=_by_proxy)),
    Stage("cleanup", _cleanup),
    Stage("specialize", _specialize),
    Stage("restore regions", _restore_regions),
    Stage("describe", _describe),
    Stage("write", functools.partial(_write, imports=True, suffix="")),
    Stage("load", _load),
    Stage("store", _store_python),
)

NUMBA_STAGES: tuple[Stage, ...] = (
    Stage("parse", _parse),
    Stage("normalize", _normalize_compiled),
    Stage("view guards", _view_guards),
    Stage("refuse uncompilable", _refuse_uncompilable),
    Stage("transform", functools.partial(_transform, example_fn=_itself)),
    Stage("compiled example", _compiled_example),
    Stage("cleanup", _cleanup),
    Stage("straight tapes", _straight_tapes),
    Stage("specialize", _specialize),
    Stage("array tapes", _array_tapes),
    Stage("fuse", _fuse),
    Stage("lower", _lower),
    Stage("outline", _outline),
    Stage("screen globals", _screen_globals),
    Stage("describe", _describe_compiled),
    Stage("write", functools.partial(_write, imports=False, suffix="_numba")),
    Stage("load", _load_compiled),
    Stage("store", _store_compiled),
)

STAGES = {"python": PYTHON_STAGES, "numba": NUMBA_STAGES}


def generate(src_fn: Callable, transform: str, argnums: tuple[int, ...], tuple_out: bool, has_aux: bool,
              options: GenerateOptions = DEFAULT) -> Generated:
    """The generated function, made by running the backend's stages in order."""
    g = Generation(src_fn, transform, argnums, tuple_out, has_aux, options,
                   _memo_key(src_fn, transform, argnums, tuple_out, has_aux, options))
    timing = log.logger.isEnabledFor(logging.INFO)
    times = []
    for stage in STAGES[options.backend]:
        start = time.perf_counter() if timing else 0.0
        stage.run(g)
        if timing:
            times.append((stage.name, time.perf_counter() - start))
    if timing:
        log.logger.info("generated %s of %s (%s): %.3f s: %s", transform, getattr(src_fn, "__qualname__", "?"),
                        options.backend, sum(t for _, t in times), ", ".join(f"{n} {t:.3f}" for n, t in times))
    STATS["generated"] += 1
    return Generated(g.fn, g.text, g.path, g.origin)
