"""Public transformations: grad, value_and_grad, vjp, show.

Each wires the pipeline  parse -> normalize -> transform -> optimize -> emit
and caches the result by the function's identity (its code object) and the
transform's arguments, so `grad(f)` twice generates once.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import os
import functools
import inspect
import numbers
import threading
import types
import weakref
from typing import Any, Callable, Sequence

import gast
import numpy as np

from . import precision, pytree
from . import runtime as rt
from .codegen import emit
from .errors import (ArgumentError, NonDifferentiableError, S2SError, SharedArrayError, TransformError,
                     UnsupportedSyntaxError)
from .frontend.hooks import register_transform_factories
from .frontend.namespace import HELPER_MODULES
from .frontend.normalize import normalize
from .frontend.parse import parse_function, source_of_decorated
from .frontend.reads import changed, code_fingerprint, reads_of
from .optimize import cleanup
from .optimize.specialize import arg_facts
from .rules.table import lookup
from .transforms.forward import ForwardSpec, forward
from .transforms.batching import BatchSpec, batch
from .transforms.reverse import ReverseSpec, reverse
from .frontend.nodes import iter_nodes

_TRANSFORMS = ("grad", "value_and_grad", "vjp", "jvp", "vmap", "jit")


@dataclasses.dataclass(frozen=True)
class Generated:
    fn: Callable          # the compiled generated function
    source: str           # the whole generated module text
    path: str             # where it lives on disk
    origin: str           # "file:line (qualname)" of the source function
    reads: tuple = ()     # the globals, closure cells and helpers it was built from (frontend.reads)


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


def _normalize_argnums(argnums) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, numbers.Integral) and not isinstance(argnums, bool):
        return (int(argnums),), False
    if isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in argnums):
        return tuple(int(a) for a in argnums), True
    raise ArgumentError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")


def source_function(fun: Callable) -> Callable:
    """The Python function whose source a transform reads."""
    if isinstance(fun, Batched):
        raise TransformError("transforming a vmapped function needs its argument count; call it inside a function "
                             "(e.g. lambda w: np.sum(s2s.vmap(f)(w, xs)))")
    if isinstance(fun, Transformed):
        return fun.generated().fn
    if isinstance(fun, (Jacobian, Hessian)):
        return fun.source_for(_positional_count(fun))
    rule = lookup(fun)
    if rule is not None:
        return _rule_wrapper(fun)
    if inspect.ismethod(fun) and isinstance(fun.__func__, types.FunctionType):
        return _method_function(fun)
    src = source_of_decorated(fun) if callable(fun) else None
    if getattr(src, "__code__", None) is not None:
        return src
    raise TransformError(f"cannot transform {fun!r}: it has no Python source and no s2s rule",
                         hint="wrap it in a Python function or register a rule with s2s.custom_vjp")


@functools.lru_cache(maxsize=None)
def _rule_wrapper(fun) -> Callable:
    """`def sin(x): return np.sin(x)` for an op given directly (grad(np.sin))."""
    rule = lookup(fun)
    nin = getattr(fun, "nin", None)
    if nin is None and hasattr(fun, "params"):   # custom_vjp / custom_jvp objects
        nin = len([p for p in fun.params if p.default is inspect.Parameter.empty])
    if nin is None:
        try:
            params = [p for p in inspect.signature(fun).parameters.values()
                      if p.default is inspect.Parameter.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
            nin = max(1, len(params))
        except (TypeError, ValueError):
            nin = 1
    args = ", ".join("xyzuvw"[i] for i in range(nin))
    fname = rule.name.split(".")[-1] + "_op"
    source = f"def {fname}({args}):\n    return {rule.name}({args})\n"
    path = emit.write_module(source, f"op_{fname}")
    from .frontend.namespace import base_namespace
    ns = base_namespace()
    ns.update(rule.bindings)
    return emit.load_function(source, path, fname, ns)


def _origin(fn: Callable) -> str:
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno} ({fn.__qualname__})"


STATS = {"generated": 0, "loaded": 0}   # how often _build generated source vs reloaded it from disk


def _build(src_fn: Callable, transform: str, argnums: tuple[int, ...], tuple_out: bool, has_aux: bool,
           options: tuple = ()) -> Generated:
    key = _memo_key(src_fn, transform, argnums, tuple_out, has_aux, options)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and not changed(hit.reads):
        return hit
    # (a name it read was rebound since: generate again, from the source, not the disk cache)
    gen = _load_from_disk(src_fn, key) if hit is None else None
    if gen is None:
        with _collector_paused():
            gen = _generate(src_fn, transform, argnums, tuple_out, has_aux, options)
    gen = dataclasses.replace(gen, reads=reads_of(src_fn))
    with _LOCK:
        _CACHE[key] = gen
    _release_with(src_fn, gen)
    return gen


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
    entry = diskcache.load(dkey, base_namespace())
    if entry is None:
        return None
    source, path, fname, namespace, origin = entry
    backend = opts.get("backend", "python")
    if backend == "numba" and not emit.values_match(source, namespace):
        return None         # compiled for other values of its globals (Numba froze them into the code)
    if key[2] == "vmap" and namespace.get("example_fn") is src_fn:     # (stored as the source function)
        namespace["example_fn"] = _example_primal(src_fn, key[6]).fn if backend == "numba" else \
            weakref.proxy(src_fn)
    if backend == "numba":
        from .backends import numba_cpu
        namespace = numba_cpu.compiled_namespace(namespace)
    fn = emit.load_function(source, path, fname, namespace, register=(backend == "numba"))
    if backend == "numba":
        fn = numba_cpu.compile_function(fn, target=opts.get("target", "cpu"), cache=opts.get("cache", True))
    STATS["loaded"] += 1
    return Generated(fn, source, path, origin)


def _caller_stacklevel() -> int:
    """warnings.warn's stacklevel (from the function calling this) of the first frame outside
    s2s: the user's call, however many s2s wrappers (precision, pytrees, retries) are between."""
    import sys
    pkg = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def _example_primal(src_fn: Callable, options: tuple) -> Generated:
    """The compiled function a compiled vmap's per-example loop calls."""
    primal_opts = tuple((k, v) for k, v in options if k in ("backend", "target", "cache", "tapes", "fuse"))
    return _build(src_fn, "primal", (), False, False, primal_opts)


def _generate(src_fn: Callable, transform: str, argnums: tuple[int, ...], tuple_out: bool, has_aux: bool,
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
    if transform == "vmap":
        from .rules.batch_rules import kept_calls
        keep = kept_calls()
        if opts.get("backend") == "numba":
            # compiled: an op helper (einsum_vjp, norm_grad, ...) runs per example as one compiled call
            # (bmap), not inlined and batched statement by statement (Python-only plans and branches)
            from .backends.numba_cpu import helper_functions
            keep = keep | helper_functions(ops_only=True)
        nf = normalize(parsed, keep)
    elif transform == "primal" and opts.get("backend") == "numba":
        # compiled code calls s2s's helpers (their Numba versions) as the transforms' code does;
        # inlined, their Python-only branches (`if not compute_uv:`) would have to type in Numba
        from .backends.numba_cpu import helper_functions
        nf = normalize(parsed, helper_functions())
    else:
        nf = normalize(parsed)
    import re
    backend = opts.get("backend", "python")
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
            example = _example_primal(src_fn, options)
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
        from .frontend.normalize import Namer
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
        outlined = outline(fdef, numba_cpu.namer_for(fdef, nf.namespace),
                           1 if opts.get("target", "cpu") == "parallel" else None)
        nf.namespace = numba_cpu.compiled_namespace(nf.namespace)
    else:
        outlined = []
    body = "".join(emit.to_source(k) + "\n\n" for k in outlined) + emit.to_source(fdef)
    origin = _origin(src_fn)
    if transform == "vmap":
        desc = f"vmap(in_axes={opts['in_axes']}, out_axes={opts['out_axes']}) of {origin}"
    elif transform == "primal":
        desc = f"normalized source of {origin}"
    else:
        desc = f"{transform}(argnums={argnums if tuple_out else argnums[0]}{', has_aux=True' if has_aux else ''}) of {origin}"
    if backend == "numba":
        desc += f" [numba {opts.get('target', 'cpu')}]"
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
                        getattr(src_fn, "__module__", None))
    return Generated(fn, text, path, origin)


def _check_argnums(args: tuple, argnums, fn: Callable) -> None:
    """What every differentiating transform refuses at a call: argnums out of range, arguments
    that are not floats. `fn` names the function in the message."""
    n = len(args)
    for a in argnums:
        if not -n <= a < n:
            raise ArgumentError(f"argnums={a} is out of range for a call with {n} arguments")
        _check_differentiable(args[a], a % n, fn)


def _check_differentiable(x: Any, position: int, fn: Callable) -> None:
    name = getattr(fn, "__qualname__", None) or repr(fn)
    kind = np.asarray(x).dtype.kind if not isinstance(x, (tuple, list, dict)) else "f"
    if kind in "iub":
        what = type(x).__name__ if not isinstance(x, np.ndarray) else f"an array of dtype {x.dtype}"
        raise NonDifferentiableError(
            f"argument {position} of {name} is {what}: differentiation needs float inputs "
            f"(integer and boolean values have no derivative)",
            hint="pass floats (e.g. 3.0 or x.astype(float)), or leave this argument out of argnums")
    if kind == "c":
        raise NonDifferentiableError(
            f"argument {position} of {name} is complex: s2s differentiates real inputs only",
            hint="split it into real and imaginary parts")
    if kind not in "f":
        raise NonDifferentiableError(f"argument {position} of {name} is not a float array or number "
                                     f"(got {type(x).__name__})")


class Transformed:
    """A function transformed by s2s; call it like the original."""

    def __init__(self, fun: Callable, transform: str, argnums=0, has_aux: bool = False):
        self.fun = fun
        self.transform = transform
        self.argnums, self.tuple_out = _normalize_argnums(argnums)
        self.has_aux = has_aux
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_{transform}"
        self.__qualname__ = self.__name__
        self.__doc__ = f"{transform} of {getattr(fun, '__qualname__', fun)!r}, generated by s2s."
        self._gen: Generated | None = None
        self._src: Callable | None = None

    def generated(self) -> Generated:
        src = source_function(self.fun)      # (a transformed function's: regenerated if it went stale)
        if self._gen is None or self._src is not src or changed(self._gen.reads):
            self._gen = _build(src, self.transform, self.argnums, self.tuple_out, self.has_aux)
            self._src = src
        return self._gen

    @property
    def source(self) -> str:
        return self.generated().source

    def _s2s_inline_source(self, nargs: int) -> Callable:
        """The generated function normalization inlines where transformed code calls this one."""
        return self.generated().fn

    def _s2s_tree_source(self, treedefs: tuple, leaf_nums: tuple) -> Callable:
        """The same transform of a wrapper taking the leaves of pytree arguments (treedefs, None for a leaf)."""
        wrapper = _flat_wrapper(source_function(self.fun), treedefs)
        return Transformed(wrapper, self.transform, leaf_nums, self.has_aux).generated().fn

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = _bind_keywords(self, args, kwargs)
        args, low = precision.widen(args)      # float32 in, float32 out (computed in float64)
        try:
            return precision.narrow(self._call(args), low)
        except Exception as exc:
            _note_user_line(exc)
            raise

    def _call(self, args):
        if any(0 <= a < len(args) and not pytree.is_leaf(pytree.tree_flatten(args[a])[1]) for a in self.argnums):
            return self._call_tree(args)
        gen = self.generated()
        src = self._src          # (the source function generated() just resolved)
        _check_argnums(args, self.argnums, src)
        try:
            return gen.fn(*args)
        except NonDifferentiableError as exc:
            raise NonDifferentiableError(f"{exc.message} (in {gen.origin})", hint=exc.hint) from None

    def __repr__(self):
        return f"<s2s {self.transform} of {getattr(self.fun, '__qualname__', self.fun)!r}>"

    def _call_tree(self, args, wrap=None):
        """Pytree arguments: differentiate a generated wrapper that takes their leaves.
        `wrap` (e.g. jit) is applied to the transform of the wrapper before calling it."""
        src = source_function(self.fun)
        treedefs, flat, leaf_nums, groups = [], [], [], []
        for i, a in enumerate(args):
            if i in self.argnums:
                leaves, td = pytree.tree_flatten(a)
                treedefs.append(td)
                groups.append((i, td, list(range(len(flat), len(flat) + len(leaves)))))
                flat += leaves
            else:
                treedefs.append(None)
                flat.append(a)
        order = {i: g for i, *g in groups}
        for a in self.argnums:
            leaf_nums += order[a][1]
        if not leaf_nums:
            raise ArgumentError("the differentiated arguments hold no arrays")
        wrapper = _flat_wrapper(src, tuple(treedefs))
        inner = Transformed(wrapper, self.transform, tuple(leaf_nums), self.has_aux)
        result = (wrap(inner) if wrap is not None else inner)(*flat)
        n_by_arg = [len(order[a][1]) for a in self.argnums]

        def regroup(leaf_grads):
            leaf_grads = list(leaf_grads)
            out, k = [], 0
            for a, n in zip(self.argnums, n_by_arg):
                out.append(pytree.tree_unflatten(order[a][0], leaf_grads[k:k + n]))
                k += n
            return tuple(out) if self.tuple_out else out[0]
        if self.transform == "grad":
            return (regroup(result[0]), result[1]) if self.has_aux else regroup(result)
        value, grads = result
        return value, regroup(grads)


_WRAPPERS: dict = {}       # (pytree wrappers of callables that have no __dict__)


_METHOD_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # bound method -> its function


def _method_function(method) -> Callable:
    """`def loss(x): return loss_method(loss_self, x)` for a bound method (model.loss) or a class
    method: a function of the other parameters, whose transform inlines the method with `self`
    (or `cls`) bound to the object. The object's attributes are read when the code runs (as the
    method reads them), so a model whose weights change between calls is never answered for old
    weights; its methods (`self.helper(x)`) are inlined like any helper."""
    got = _METHOD_FUNCTIONS.get(method)
    if got is not None:
        return got
    func = method.__func__
    params = list(inspect.signature(func).parameters.values())[1:]
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise TransformError(f"s2s transforms methods with plain positional parameters only; "
                             f"`{func.__qualname__}` has *args, **kwargs or keyword-only ones",
                             hint="name each parameter (def loss(self, x, y)), or transform a function of them")
    base = func.__name__ if func.__name__.isidentifier() else "method"
    names = [p.name for p in params]
    bound_fn, bound_self = f"{base}_method", f"{base}_self"
    while bound_fn in names or bound_self in names:
        bound_fn, bound_self = bound_fn + "_", bound_self + "_"
    owner = method.__self__ if isinstance(method.__self__, type) else type(method.__self__)
    # (the docstring names the class and digests its methods' code: two classes whose `loss` reads
    # the same but calls different `self.helper`s get different derivatives from the disk cache)
    methods = sorted((k, v.__code__) for klass in owner.__mro__ for k, v in vars(klass).items()
                     if isinstance(v, types.FunctionType))
    digest = hashlib.sha256(repr([(k, code_fingerprint(c)) for k, c in methods]).encode()).hexdigest()[:16]
    source = (f"def {base}({', '.join(names)}):\n"
              f"    {f'{owner.__module__}.{owner.__qualname__}.{func.__name__}, bound ({digest})'!r}\n"
              f"    return {bound_fn}({', '.join([bound_self] + names)})\n")
    path = emit.write_module(source, base)
    wrapper = emit.load_function(source, path, base, {bound_fn: func, bound_self: method.__self__}, register=False)
    wrapper.__defaults__ = func.__defaults__
    wrapper.__s2s_wraps__ = func
    _WRAPPED[os.path.basename(path)] = func     # errors point at the method's lines
    _METHOD_FUNCTIONS[method] = wrapper
    return wrapper


def _flat_wrapper(fn: Callable, treedefs: tuple) -> Callable:
    """`def f_flat(p_0, p_1, x): p = {'W': p_0, 'b': p_1}; return f(p, x)` for pytree arguments."""
    # (kept on the function itself, so a dropped function takes its wrappers and their modules along)
    try:
        per_fn = fn.__dict__.setdefault("__s2s_flat_wrappers__", {})
    except (AttributeError, TypeError):
        per_fn = _WRAPPERS.setdefault(fn, {})
    if treedefs in per_fn:
        return per_fn[treedefs]
    sig_fn = fn
    while isinstance(sig_fn, Transformed):   # grad(f) takes f's arguments
        sig_fn = sig_fn.fun
    names = [p.name for p in inspect.signature(sig_fn).parameters.values()][:len(treedefs)]
    ns: dict[str, Any] = {"record": __import__("s2s.runtime", fromlist=["record"]).record}
    fbind = f"{fn.__name__}_user" if getattr(fn, "__name__", "").isidentifier() else "user_fn"
    ns[fbind] = fn
    params: list[str] = []
    lines: list[str] = []

    def literal(td, base, counter):
        kind = td[0]
        if kind == "leaf":
            p = f"{base}_{counter[0]}"
            counter[0] += 1
            params.append(p)
            return p
        if kind == "none":
            return "None"
        if kind == "record":
            cls_name = f"{td[1].__name__}_cls"
            ns[cls_name] = td[1]
            fields = ", ".join(f"{f}={literal(c, base, counter)}" for f, c in zip(td[2], td[3]))
            return f"record({cls_name}, {fields})"
        parts = [literal(c, base, counter) for c in td[2]]
        if kind == "tuple":
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if kind == "list":
            return "[" + ", ".join(parts) + "]"
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(td[1], parts)) + "}"
    for nm, td in zip(names, treedefs):
        if td is None:
            params.append(nm)
        else:
            lines.append(f"    {nm} = {literal(td, nm, [0])}")
    fname = f"{fn.__name__}_flat" if getattr(fn, "__name__", "").isidentifier() else "flat_fn"
    source = f"def {fname}({', '.join(params)}):\n" + "\n".join(lines) + \
        f"\n    return {fbind}({', '.join(names)})\n"
    path = emit.write_module(source, fname)
    wrapper = emit.load_function(source, path, fname, ns, register=False)
    wrapper.__s2s_wraps__ = fn      # its text is the same for every function of that name (disk cache key)
    _WRAPPED[os.path.basename(path)] = fn     # errors in its transforms point at fn's lines
    per_fn[treedefs] = wrapper
    return wrapper


def _decorator_or(fun, make):
    if fun is None:
        return make
    return make(fun)


def grad(fun: Callable | None = None, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """Gradient of a scalar-valued function, as generated source.

    Args:
        fun: a Python function written with NumPy (or a NumPy op with a rule).
        argnums: which positional argument(s) to differentiate; a tuple gives a tuple of gradients.
        has_aux: `fun` returns `(value, aux)`; the result is then `(gradient, aux)`.
    Returns:
        A function with `fun`'s signature returning the gradient(s).
    Raises:
        TransformError (at the first call): unsupported syntax, missing rules, non-scalar output.

    Example:
        >>> s2s.grad(lambda x: np.sum(np.sin(x)))(np.zeros(3))
        array([1., 1., 1.])
    """
    return _decorator_or(fun, lambda f: Transformed(f, "grad", argnums, has_aux))


def value_and_grad(fun: Callable | None = None, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """Like `grad`, returning `(value, gradient)` (`((value, aux), gradient)` with has_aux)."""
    return _decorator_or(fun, lambda f: Transformed(f, "value_and_grad", argnums, has_aux))


def vjp(fun: Callable, *primals):
    """Evaluate `fun(*primals)` and return `(out, vjp_fn)`.

    `vjp_fn(cotangent)` returns a tuple with one cotangent per primal.
    """
    if not primals:
        raise ArgumentError("vjp needs at least one primal argument")
    primals, low = precision.widen(primals)
    t = Transformed(fun, "vjp", tuple(range(len(primals))))
    gen = t.generated()
    src = source_function(fun)
    for i, p in enumerate(primals):
        _check_differentiable(p, i, src)
    out = fun(*primals)

    def vjp_fn(cotangent):
        if np.shape(cotangent) != np.shape(out):
            raise ArgumentError(f"vjp_fn expects a cotangent of shape {np.shape(out)}, got {np.shape(cotangent)}")
        return precision.narrow(gen.fn(precision.widen((cotangent,))[0][0], *primals), low)
    vjp_fn.source = gen.source
    return precision.narrow(out, low), vjp_fn


def jvp(fun: Callable, primals: Sequence | None = None, tangents: Sequence | None = None, *,
        argnums: int | Sequence[int] = 0):
    """Forward mode: `(fun(*primals), J @ tangents)` from generated tangent source.

    Args:
        primals, tangents: tuples (or lists) of the same length and matching shapes.

    Without primals, the tangent function itself (as Tangent's forward mode gives it):
    `jvp(f, argnums=(0, 1))(x, y, tx, ty) == (f(x, y), J_x tx + J_y ty)`, which `jit` compiles.
    """
    if primals is None and tangents is None:
        return Transformed(fun, "jvp", argnums)
    if primals is None or tangents is None:
        raise ArgumentError("jvp takes both primals and tangents (or neither, for the tangent function)")
    (primals, tangents), low = precision.widen((tuple(primals), tuple(tangents)))
    if low is not None:
        return precision.narrow(jvp(fun, primals, tangents), low)
    if len(primals) != len(tangents):
        raise ArgumentError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if np.shape(p) != np.shape(t):
            raise ArgumentError(f"jvp: tangent {i} has shape {np.shape(t)} but its primal has shape {np.shape(p)}")
    src = source_function(fun)
    # Integer primals (sizes, counts) carry no tangent, as JAX's float0.
    nums = []
    for i, (p, tv) in enumerate(zip(primals, tangents)):
        kind = np.asarray(p).dtype.kind
        if kind in "iub":
            if np.any(np.asarray(tv) != 0):
                raise NonDifferentiableError(f"jvp: argument {i} of {src.__qualname__} is an integer; its tangent must be zero")
            continue
        _check_differentiable(p, i, src)
        nums.append(i)
    if not nums:
        raise ArgumentError("jvp needs at least one float primal")
    gen = Transformed(fun, "jvp", tuple(nums)).generated()
    return gen.fn(*primals, *_defaults_after(src, len(primals)),
                  *[np.asarray(tangents[i], dtype=float) if np.ndim(tangents[i]) else float(tangents[i]) for i in nums])


def _defaults_after(fun: Callable, nargs: int) -> list:
    """The default values of `fun`'s parameters after the first `nargs` (a generated jvp takes
    every primal before its tangents, so a caller passes the defaults)."""
    out = []
    for p in list(inspect.signature(fun).parameters.values())[nargs:]:
        if p.default is p.empty or p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        out.append(p.default)
    return out


def _basis(x):
    """Unit tangents/cotangents shaped like x, one per element."""
    shape = np.shape(x)
    size = int(np.prod(shape)) if shape else 1
    for k in range(size):
        e = np.zeros(size)
        e[k] = 1.0
        yield e.reshape(shape) if shape else 1.0


def _argnums_tuple(argnums):
    nums, is_tuple = _normalize_argnums(argnums)
    return nums, is_tuple


def _user_function(fun: Callable) -> Callable:
    """The function under s2s's wrappers (transforms, Jacobians, vmap, jit)."""
    while isinstance(fun, (Transformed, Batched, Jacobian, Hessian, Jitted)):
        fun = fun.fun
    return fun


def _bind_keywords(wrapper, args: tuple, kwargs: dict) -> tuple:
    """A call's keyword arguments as positions of the user's function (its defaults filling the
    positions before the last one given), as Python binds them: `grad(f)(x, a=2.0)`."""
    base = _user_function(wrapper)
    try:
        sig = inspect.signature(source_of_decorated(base))
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise ArgumentError(f"{getattr(wrapper, '__name__', 'the transformed function')}: {exc}") from None
    except ValueError:
        raise ArgumentError(f"{getattr(wrapper, '__name__', 'the transformed function')} takes positional "
                            "arguments only (its signature cannot be read)") from None
    names = list(sig.parameters)
    last = max(names.index(n) for n in bound.arguments)
    bound.apply_defaults()
    out = []
    for n in names[:last + 1]:
        p = sig.parameters[n]
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise ArgumentError(f"{getattr(wrapper, '__name__', 'the transformed function')}: s2s passes "
                                f"arguments by position, and `{n}` cannot be one")
        out.append(bound.arguments[n])
    return tuple(out)


def _positional_names(fun: Callable, nargs: int) -> list[str]:
    """Parameter names of the function under s2s's wrappers (readable generated code), else x0, x1, ..."""
    base = _user_function(fun)
    try:
        names = [p.name for p in inspect.signature(base).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = names[:nargs] if len(names) >= nargs and all(n.isidentifier() for n in names) else []
    return names or [f"x{i}" for i in range(nargs)]


def _positional_count(fun: Callable) -> int:
    """How many arguments a transform of `fun` takes when no call says (its required positionals)."""
    base = fun
    while isinstance(base, (Transformed, Jacobian, Hessian)):
        base = base.fun
    if isinstance(base, Batched):
        raise TransformError("transforming a Jacobian of a vmapped function needs its argument count; call it "
                             "inside a function (e.g. lambda w: s2s.jacrev(s2s.vmap(f))(w, xs))")
    params = inspect.signature(source_function(base)).parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TransformError(f"cannot transform a Jacobian of {getattr(base, '__qualname__', base)!r}: it takes "
                             "*args; call the Jacobian inside a function with a fixed argument list")
    return len([p for p in params if p.default is inspect.Parameter.empty and
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


class Jacobian:
    """`jacfwd(f)` / `jacrev(f)`: shape out.shape + in.shape (JAX's convention).

    Each is one batched sweep written as Python source: jacrev vmaps the generated vjp over a basis
    of cotangents, jacfwd the generated jvp over a basis of tangents.  Because it is source, s2s
    transforms it again like any other function: jacrev(jacrev(f)), jacfwd(jacrev(f)), grad of an
    entry of a Jacobian, jit of a Jacobian.
    """

    def __init__(self, fun: Callable, mode: str, argnums=0):
        self.fun = fun
        self.mode = mode                     # "fwd" or "rev"
        self.nums, self.is_tuple = _normalize_argnums(argnums)
        self.__name__ = f"jac{mode}_{getattr(fun, '__name__', 'f')}"
        self.__qualname__ = self.__name__
        self._sources: dict[int, Callable] = {}

    def __repr__(self):
        return f"<s2s jac{self.mode} of {getattr(self.fun, '__qualname__', self.fun)!r}>"

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = _bind_keywords(self, args, kwargs)
        _check_argnums(args, self.nums, _user_function(self.fun))
        args, low = precision.widen(args)      # float32 in, float32 out (as grad)
        try:
            return precision.narrow(self.source_for(len(args))(*args), low)
        except Exception as exc:
            _note_user_line(exc)
            raise

    def _s2s_inline_source(self, nargs: int) -> Callable:
        return self.source_for(nargs)

    def source_for(self, nargs: int) -> Callable:
        """The Jacobian as a generated Python function of `nargs` arguments (cached)."""
        fn = self._sources.get(nargs)
        if fn is None:
            fn = self._sources[nargs] = self._write(nargs)
        return fn

    def _write(self, nargs: int) -> Callable:
        for a in self.nums:
            if not -nargs <= a < nargs:
                raise ArgumentError(f"argnums={a} is out of range for a call with {nargs} arguments")
        nums = [a % nargs for a in self.nums]
        params = _positional_names(self.fun, nargs)
        args = ", ".join(params)
        fname = self.__name__ if self.__name__.isidentifier() else f"jac{self.mode}_fn"
        ns: dict[str, Any] = {"np": np, "fun": self.fun, "check_array_output": rt.check_array_output}
        lines = [f"def {fname}({args}):"]
        results = []
        if self.mode == "rev":
            # one vjp per cotangent basis vector, batched: row k of the result is e_k^T J
            ns["vjp_rows"] = Batched(Transformed(self.fun, "vjp", tuple(nums)).generated().fn,
                                     (0,) + (None,) * nargs, 0)
            lines += [f"    out = fun({args})",
                      '    check_array_output(out, "jacrev")',
                      "    size = np.size(out)",
                      "    basis = np.reshape(np.eye(size), (size,) + np.shape(out))",
                      f"    rows = vjp_rows(basis, {args})"]
            for k, a in enumerate(nums):
                lines.append(f"    jac_{params[a]} = np.reshape(rows[{k}], np.shape(out) + np.shape({params[a]}))")
                results.append(f"jac_{params[a]}")
        else:
            # the parameters the call leaves to their defaults: the jvp takes them before its tangents
            defaults = _defaults_after(source_function(self.fun), nargs)
            for k, value in enumerate(defaults):
                ns[f"default_{k}"] = value
            full = ", ".join(params + [f"default_{k}" for k in range(len(defaults))])
            for a in nums:
                x = params[a]
                # one jvp per tangent basis vector, batched: column k of the result is J e_k
                ns[f"jvp_cols_{x}"] = Batched(Transformed(self.fun, "jvp", (a,)).generated().fn,
                                              (None,) * (nargs + len(defaults)) + (0,), (None, -1))
                lines += [f"    size_{x} = np.size({x})",
                          f"    basis_{x} = np.reshape(np.eye(size_{x}), (size_{x},) + np.shape({x}))",
                          f"    out, cols_{x} = jvp_cols_{x}({full}, basis_{x})",
                          '    check_array_output(out, "jacfwd")',
                          f"    jac_{x} = np.reshape(cols_{x}, np.shape(out) + np.shape({x}))"]
                results.append(f"jac_{x}")
        lines.append("    return " + ("(" + ", ".join(results) + ",)" if self.is_tuple else results[0]))
        source = "\n".join(lines) + "\n"
        path = emit.write_module(source, fname)
        fn = emit.load_function(source, path, fname, ns, register=False)
        fn.__s2s_wraps__ = self.fun      # its text is the same for every function it wraps (disk cache key)
        return fn


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0):
    """Jacobian by forward mode: shape `out.shape + in.shape` (as JAX); s2s can transform it again."""
    return Jacobian(fun, "fwd", argnums)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0):
    """Jacobian by reverse mode: shape `out.shape + in.shape` (as JAX); s2s can transform it again."""
    return Jacobian(fun, "rev", argnums)


class Hessian:
    """`hessian(f)`: forward over reverse, `jacfwd(grad(f, argnums), argnums)`."""

    def __init__(self, fun: Callable, argnums=0):
        self.fun = fun
        self.nums, self.is_tuple = _argnums_tuple(argnums)
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_hessian"
        if self.is_tuple:
            self._blocks = [[jacfwd(grad(fun, argnums=i), j) for j in self.nums] for i in self.nums]
        else:
            self._jac = jacfwd(grad(fun, argnums=self.nums[0]), self.nums[0])

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = _bind_keywords(self, args, kwargs)
        _check_argnums(args, self.nums, _user_function(self.fun))
        args, low = precision.widen(args)
        if self.is_tuple:
            return precision.narrow(tuple(tuple(b(*args) for b in row) for row in self._blocks), low)
        return precision.narrow(self._jac(*args), low)

    def source_for(self, nargs: int) -> Callable:
        """The Hessian as generated source (one argnum), so s2s can transform it again."""
        if self.is_tuple:
            raise TransformError("transforming a hessian with a tuple of argnums is not supported; take "
                                 "s2s.jacfwd(s2s.grad(f, argnums=i), argnums=j) block by block")
        return self._jac.source_for(nargs)

    def _s2s_inline_source(self, nargs: int) -> Callable:
        return self.source_for(nargs)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0):
    """Hessian by forward-over-reverse: `jacfwd(grad(fun, argnums), argnums)`; shape in.shape + in.shape."""
    return Hessian(fun, argnums)


def show(fun: Callable, transform: str = "grad", argnums: int | Sequence[int] = 0, has_aux: bool = False,
         in_axes=0, out_axes=0, example_args: Sequence | None = None) -> str:
    """The generated source of `transform(fun)` (a string; also in a real file). For
    `transform="jit"`, `example_args` shows the code specialized on those arguments' types
    (what a call with them compiles)."""
    if transform not in _TRANSFORMS:
        raise ArgumentError(f"unknown transform {transform!r}; choose one of {', '.join(_TRANSFORMS)}")
    if isinstance(fun, Jitted):
        # show(jit(g)) is show(g, "jit"), on the jitted object's own target
        jitted = fun
        base = fun.fun
        while isinstance(base, (Transformed, Batched)):
            base = base.fun
        if example_args is not None:
            return jitted.generated_for_args(*example_args).source
        return jitted.generated_for(len(inspect.signature(source_function(base)).parameters)).source
    if isinstance(fun, Batched) and transform == "vmap":
        raise ArgumentError("pass the function itself: show(f, 'vmap', in_axes=...)")
    if transform == "vmap":
        n = len(inspect.signature(source_function(fun)).parameters)
        return Batched(fun, in_axes, out_axes).show(n)
    if transform == "jit":
        # the source Numba compiles: fused loops, lowered helpers (for grad(f), pass s2s.grad(f))
        base = fun
        while isinstance(base, (Transformed, Batched)):
            base = base.fun
        if example_args is not None:
            return Jitted(fun).generated_for_args(*example_args).source
        n = len(inspect.signature(source_function(base)).parameters)
        return Jitted(fun).generated_for(n).source
    if transform in ("vjp", "jvp"):
        n = len(inspect.signature(source_function(fun)).parameters)
        argnums = tuple(range(n))
    return Transformed(fun, transform, argnums, has_aux).source


class Batched:
    """`vmap(f)`: f's source, batched; generated on the first call for that many arguments."""

    def __init__(self, fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None):
        self.fun = fun
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.axis_size = axis_size
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_vmap"
        self.__qualname__ = self.__name__

    def _axes_for(self, nargs: int) -> tuple:
        ax = self.in_axes
        if isinstance(ax, (list, tuple)):
            if len(ax) != nargs:
                raise ArgumentError(f"vmap: in_axes has {len(ax)} entries but the function was called with {nargs} "
                                    f"arguments")
            axes = tuple(ax)
        else:
            axes = (ax,) * nargs
        for i, a in enumerate(axes):
            if a is not None and (not isinstance(a, numbers.Integral) or isinstance(a, bool)):
                raise ArgumentError(f"vmap: in_axes entry {i} must be an int or None, got {a!r}")
        return axes

    def generated_for(self, nargs: int) -> Generated:
        axes = self._axes_for(nargs)
        out_axes = tuple(self.out_axes) if isinstance(self.out_axes, list) else self.out_axes
        src = self.fun.generated_for(nargs).fn if isinstance(self.fun, Batched) else source_function(self.fun)
        return _build(src, "vmap", (), False, False,
                      (("in_axes", axes), ("out_axes", out_axes), ("axis_size", self.axis_size)))

    def _s2s_inline_source(self, nargs: int) -> Callable:
        return self.generated_for(nargs).fn

    def __call__(self, *args):
        args, low = precision.widen(args)
        try:
            return precision.narrow(self._call(args), low)
        except Exception as exc:
            _note_user_line(exc)
            raise

    def _call(self, args):
        if isinstance(self.fun, Batched):
            return self._nested(args)
        if any(not pytree.is_leaf(pytree.tree_flatten(a)[1]) for a in args):
            return self._call_tree(args)
        gen = self.generated_for(len(args))
        return gen.fn(*args)

    def _call_tree(self, args):
        """Pytree arguments: vmap a generated wrapper over their leaves (in_axes may be pytrees too)."""
        ax = self.in_axes
        specs = list(ax) if isinstance(ax, (list, tuple)) else [ax] * len(args)
        if len(specs) != len(args):
            raise ArgumentError(f"vmap: in_axes has {len(specs)} entries but the function was called with "
                                f"{len(args)} arguments")
        treedefs, flat, axes = [], [], []
        for i, (a, spec) in enumerate(zip(args, specs)):
            leaves, td = pytree.tree_flatten(a)
            if pytree.is_leaf(td):
                treedefs.append(None)
                flat.append(a)
                axes.append(spec)
                continue
            treedefs.append(td)
            flat += leaves
            axes += _leaf_axes(spec, td, i)
        fun = self.fun
        wrapper = _flat_wrapper(fun, tuple(treedefs)) if isinstance(fun, Transformed) else \
            _flat_wrapper(source_function(fun), tuple(treedefs))
        return Batched(wrapper, tuple(axes), self.out_axes, self.axis_size)(*flat)

    def _nested(self, args):
        """vmap(vmap(f)): one batch of Bo*Bi examples, reshaped back (a matrix of examples)."""
        inner = self.fun
        outer_axes = self._axes_for(len(args))
        inner_axes = inner._axes_for(len(args))
        base = inner
        while isinstance(base, Batched):
            base = base.fun
        names = [p.name for p in inspect.signature(source_function(base)).parameters.values()][:len(args)]
        names += [f"#{i}" for i in range(len(names), len(args))]
        from .runtime import batch_size
        try:
            bo = batch_size(args, outer_axes, names, self.axis_size)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        examples = [np.take(a, 0, axis=ao) if ao is not None else a for a, ao in zip(args, outer_axes)]
        try:
            batch_size(examples, inner_axes, names, inner.axis_size)
        except ValueError as exc:
            raise ArgumentError(f"{exc} (inner vmap)") from None
        moved = []
        for a, ao, ai in zip(args, outer_axes, inner_axes):
            moved.append(None if ao is None and ai is None else (np.moveaxis(a, ao, 0) if ao is not None else a, ai))
        sizes_i = {np.shape(m[0])[m[1] + (1 if ao is not None else 0)] if m[1] is not None else None
                   for m, ao in zip(moved, outer_axes) if m is not None}
        sizes_i.discard(None)
        bi = inner.axis_size if inner.axis_size is not None else (sizes_i.pop() if len(sizes_i) == 1 else None)
        if bi is None:
            raise ArgumentError("vmap: the inner batch size is ambiguous or missing")
        flat, axes = [], []
        for a, m, ao in zip(args, moved, outer_axes):
            if m is None:
                flat.append(a)
                axes.append(None)
                continue
            x, ai = m
            if ao is None:
                x = np.broadcast_to(x, (bo,) + np.shape(x))
                ai_full = ai + 1
            else:
                ai_full = ai + 1 if ai is not None else None
            if ai_full is None:
                x = np.broadcast_to(x[:, None], (bo, bi) + np.shape(x)[1:])
            else:
                x = np.moveaxis(x, ai_full, 1)
            flat.append(np.reshape(x, (bo * bi,) + np.shape(x)[2:]))
            axes.append(0)
        out = Batched(inner.fun, tuple(axes), 0)(*flat)

        def unflat(o, ai, ao):
            o = np.reshape(o, (bo, bi) + np.shape(o)[1:])
            o = np.moveaxis(o, 1, ai + 1) if ai is not None else o[:, 0]
            return np.moveaxis(o, 0, ao) if ao is not None else o[0]
        if isinstance(out, tuple):
            n = len(out)
            ia = inner.out_axes if isinstance(inner.out_axes, (tuple, list)) else (inner.out_axes,) * n
            oa = self.out_axes if isinstance(self.out_axes, (tuple, list)) else (self.out_axes,) * n
            return tuple(unflat(o, i, j) for o, i, j in zip(out, ia, oa))
        return unflat(out, inner.out_axes, self.out_axes)

    def show(self, nargs: int) -> str:
        return self.generated_for(nargs).source


def vmap(fun: Callable | None = None, in_axes=0, out_axes=0, axis_size: int | None = None):
    """Batch `fun` over an axis of its arguments, as generated array code.

    Args:
        in_axes: int, None, or a tuple with one entry per argument (None: not batched).
        out_axes: where the batch axis goes in the result(s) (a tuple for tuple outputs).
        axis_size: the batch size when no argument is batched.
    The per-example loop becomes array operations; where s2s finds no array
    form (an impure branch on a batched condition, ...) the generated source
    is an explicit per-example loop, labelled with the reason.
    """
    if fun is None:
        return lambda f: Batched(f, in_axes, out_axes, axis_size)
    return Batched(fun, in_axes, out_axes, axis_size)


def _leaf_axes(spec, td, position) -> list:
    """in_axes for each leaf of one argument: an int/None for all, or a matching pytree of them."""
    if spec is None or isinstance(spec, numbers.Integral):
        return [spec] * pytree.count_leaves(td)
    kind = td[0]
    if kind == "leaf":
        raise ArgumentError(f"vmap: in_axes for argument {position} has more structure than the argument")
    if kind == "none":
        return []
    if kind == "dict":
        if not isinstance(spec, dict) or sorted(spec) != list(td[1]):
            raise ArgumentError(f"vmap: in_axes for argument {position} must be an int, None or a dict with keys "
                                f"{list(td[1])}")
        return [a for k, c in zip(td[1], td[2]) for a in _leaf_axes(spec[k], c, position)]
    children = td[3] if kind == "record" else td[2]
    values = list(spec) if isinstance(spec, (tuple, list)) else None
    if values is None or len(values) != len(children):
        raise ArgumentError(f"vmap: in_axes for argument {position} does not match its structure")
    return [a for v, c in zip(values, children) for a in _leaf_axes(v, c, position)]


class Jitted:
    """`jit(f)`: f's generated source compiled by Numba in nopython mode."""

    def __init__(self, fun: Callable, target: str = "cpu", cache: bool = True, fallback: bool = False):
        if target not in ("cpu", "parallel", "cuda"):
            raise ArgumentError(f"jit: unknown target {target!r}; choose 'cpu', 'parallel' or 'cuda'")
        self.fun = fun
        self.target = target
        self.cache = cache
        self.fallback = fallback
        self._warned = False
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_jit"
        self.__qualname__ = self.__name__
        self._gens: dict[tuple, Generated] = {}
        self._unfused: set = set()    # argument signatures that compile only without fusion
        self._inner_jits: dict = {}
        self._fast: dict = {}         # argument types -> the compiled code a call with them ran
        self._as_scalars: set = set()  # signatures whose 0-d array arguments run as numbers

    def _forget(self) -> None:
        self._gens.clear()
        self._unfused.clear()
        self._inner_jits.clear()
        self._fast.clear()
        self._as_scalars.clear()

    def _options(self, fuse: bool = True) -> tuple:
        return (("backend", "numba"), ("target", self.target), ("cache", self.cache), ("tapes", "per_variable"),
                ("fuse", fuse))

    def generated_for(self, nargs: int, fuse: bool = True, facts: tuple | None = None) -> Generated:
        """The generated function for `nargs` arguments; with `facts` (ranks and dtype kinds of the
        actual arguments), specialized on them where the transform allows."""
        fun, opts = self.fun, self._options(fuse)
        # facts specialize grad's code; under vmap they also let fuse_rows see each argument's rank
        if facts is not None and not (self.target != "cuda" and (
                isinstance(fun, Batched) or _specializable(fun))):
            facts = None
        gen = self._gens.get((nargs, fuse, facts))
        if gen is not None:
            return gen
        if self.target == "cuda":
            from .backends import numba_cuda
            gen = numba_cuda.build(self, nargs)
        elif isinstance(fun, Batched):
            axes = fun._axes_for(nargs)
            inner = fun.fun
            if isinstance(inner, Transformed):
                if isinstance(inner.fun, (Transformed, Batched)):
                    raise TransformError("jit of vmap of a nested transform is not supported yet")
                inner_opts: tuple = (("tapes", "per_variable"),)
                if facts is not None and _specializable(inner):     # it sees one example of each batched argument
                    inner_opts += (("arg_facts", tuple(f if a is None or f[0] in (None, 0) else (f[0] - 1, f[1])
                                                       for f, a in zip(facts, axes))),)
                src = _build(source_function(inner.fun), inner.transform, inner.argnums, inner.tuple_out,
                             inner.has_aux, inner_opts).fn
            elif isinstance(inner, Batched):
                raise TransformError("jit of nested vmap is not supported yet; jit the inner function")
            else:
                src = source_function(inner)
            gen = _build(src, "vmap", (), False, False,
                         (("in_axes", axes), ("out_axes", fun.out_axes), ("axis_size", fun.axis_size),
                          ("param_facts", facts)) + opts)
        elif isinstance(fun, Transformed):
            if isinstance(fun.fun, (Transformed, Batched)):
                raise TransformError(
                    "jit of a derivative of a derivative is not supported yet (the inner tapes are Python lists)",
                    hint="jit the first derivative, or run the nested transform without jit")
            if facts is not None:
                opts += (("arg_facts", facts),)
            gen = _build(source_function(fun.fun), fun.transform, fun.argnums, fun.tuple_out, fun.has_aux, opts)
        else:
            gen = _build(source_function(fun), "primal", (), False, False, opts)
        self._gens[(nargs, fuse, facts)] = gen
        return gen

    def generated_for_args(self, *args) -> Generated:
        """The generated (specialized) function a call with these arguments runs."""
        sig = _signature_key(args)
        return self.generated_for(len(args), sig not in self._unfused, arg_facts(args))

    def python_version(self, nargs: int) -> Callable:
        fun = self.fun
        if isinstance(fun, Batched):
            return fun
        if isinstance(fun, Transformed):
            return fun
        return _build(source_function(fun), "primal", (), False, False).fn

    def _hessian(self, args):
        """jit(hessian(f)): the jvp of the (typed-tape) gradient, compiled; one call per column."""
        fun = self.fun
        if fun.is_tuple:
            raise TransformError("jit(hessian(f, argnums=tuple)) is not supported yet; use an int argnums")
        a = fun.nums[0] % len(args)
        gen = self._gens.get(("hessian", len(args)))
        if gen is None:
            grad_src = _build(source_function(fun.fun), "grad", (a,), False, False,
                              (("tapes", "per_variable"),)).fn
            gen = _build(grad_src, "jvp", (a,), False, False, self._options(fuse=False))
            self._gens[("hessian", len(args))] = gen
        x = np.asarray(args[a], dtype=float)
        cols = []
        for e in _basis(x):
            _, col = gen.fn(*args, e)
            cols.append(np.asarray(col))
        return np.reshape(np.stack(cols, axis=-1), np.shape(x) + np.shape(x))

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = _bind_keywords(self, args, kwargs)
        args, low = precision.widen(args)      # one float64 compiled path for float32 inputs too
        try:
            return precision.narrow(self._call(args), low)
        except S2SError:
            raise
        except Exception as exc:
            if _note_user_line(exc) or self.target == "cuda":
                raise
            # raised by the compiled code (an index out of bounds, a singular matrix, ...): it has
            # no Python frames to say where, so the generated Python runs to locate it
            located = self._located_in_python(exc, args)
            if located is None:
                raise
            raise located from None

    def _located_in_python(self, exc: Exception, args) -> Exception | None:
        try:
            self.python_version(len(args))(*args)
        except Exception as again:       # noqa: BLE001 - the same failure, raised where it happens
            if not isinstance(again, type(exc)) and not isinstance(exc, type(again)):
                return None
            if _note_user_line(again):
                again.add_note("(raised by the compiled code; located by running the generated Python on the "
                               "same arguments)")
                return again
        return None

    def _call(self, args):
        for g in self._gens.values():
            if g.reads and changed(g.reads):
                self._forget()      # a global, closure value or helper it was compiled from was rebound
                break
        # Fast path: a call with the argument types of an earlier successful call runs its code.
        key = _fast_key(args)
        gen = self._fast.get(key) if key is not None else None
        if gen is not None:
            try:
                return _run_compiled(gen, args)
            except Exception as exc:   # Numba compiling a new specialization (another array layout)
                if not _is_compile_error(exc):
                    raise
                del self._fast[key]    # the full dispatch below reports it (or falls back)
        if self._as_scalars and _signature_key(args) in self._as_scalars:
            return self._call(_zero_d_as_numbers(args))
        fun = self.fun
        if isinstance(fun, Hessian):
            try:
                return self._hessian(args)
            except Exception as exc:
                if not _is_compile_error(exc):
                    raise
                if not self.fallback:
                    raise _compile_error(self, exc, len(args), self._gens.get(("hessian", len(args)))) from None
                return fun(*args)
        if isinstance(fun, Transformed) and not isinstance(fun.fun, (Transformed, Batched)) and any(
                0 <= a < len(args) and not pytree.is_leaf(pytree.tree_flatten(args[a])[1]) for a in fun.argnums):
            return fun._call_tree(args, wrap=self._wrap_inner)
        if isinstance(fun, Transformed) and not isinstance(fun.fun, (Transformed, Batched)):
            _check_argnums(args, fun.argnums, source_function(fun.fun))   # (as the unjitted transform)
        sig = _signature_key(args)
        fuse = sig not in self._unfused
        facts = arg_facts(args)
        fused_path = unfused_path = None
        try:
            gen = self.generated_for(len(args), fuse, facts)
            if fuse and self.target != "cuda":
                fused_path = gen.path
                if numba_cache().known_to_fail(gen.path, args):   # an earlier process tried it
                    raise TransformError("the fused version did not compile for these argument types")
            return self._run_and_remember(gen, args, key)
        except Exception as exc:   # Numba's typing/lowering errors, or a transform refusing
            if not _is_compile_error(exc):
                raise
            if fuse and self.target != "cuda":
                # Fused loops assume array inputs of one dtype; for this signature (scalars,
                # other dtypes) compile the unfused code instead.
                self._unfused.add(sig)
                try:
                    gen = self.generated_for(len(args), False, facts)
                    unfused_path = gen.path
                    if numba_cache().known_to_fail(gen.path, args):
                        raise TransformError("the unfused version did not compile for these argument types")
                    out = self._run_and_remember(gen, args, key)
                except Exception as exc2:
                    if not _is_compile_error(exc2):
                        raise
                    exc = exc2
                else:
                    # (the same file for both when only code it calls is fused: no marker then)
                    if fused_path is not None and fused_path != unfused_path and self.cache:
                        numba_cache().remember_failure(fused_path, args)
                    return out
            if self.target != "cuda" and any(type(a) is np.ndarray and a.ndim == 0 for a in args):
                # a 0-d array argument reassigned to a number (`x = np.sin(x) * x`) has two types for
                # Numba; the generated Python computes with it as a number (np.float64 results):
                # compile for the numbers instead, and remember that for this signature
                try:
                    out = self._call(_zero_d_as_numbers(args))
                except S2SError:
                    pass
                else:
                    self._as_scalars.add(sig)
                    if self.cache:
                        for path in (fused_path, unfused_path):
                            if path is not None:
                                numba_cache().remember_failure(path, args)
                    return out
            if not self.fallback:
                # a Numba failure: the unjitted transform's own refusal (a non-scalar output of
                # grad, ...) says more than the typing error it caused; s2s's refusals stand
                refusal = None if isinstance(exc, TransformError) else self._python_refusal(args)
                raise (refusal or _compile_error(self, exc, len(args))) from None
            if not self._warned:
                import warnings
                warnings.warn(f"s2s.jit: Numba could not compile {self.fun!r}; running the generated Python "
                              f"instead. Reason: {_numba_reason(exc)}",
                              stacklevel=_caller_stacklevel())
                self._warned = True
            return self.python_version(len(args))(*args)

    def _python_refusal(self, args) -> Exception | None:
        """The s2s error the generated Python raises for these arguments, if it raises one."""
        try:
            self.python_version(len(args))(*args)
        except TransformError as exc:
            return _at_user_line(exc, self)
        except S2SError as exc:
            return exc
        except Exception:   # noqa: BLE001 - the compile error is the one to report
            return None
        return None

    def _run_and_remember(self, gen: Generated, args, key):
        out = _run_compiled(gen, args)
        if key is not None:
            self._fast[key] = gen
        return out

    def _wrap_inner(self, inner: "Transformed") -> "Jitted":
        """The jitted transform of a pytree wrapper (one per wrapper)."""
        key = (inner.fun, inner.transform, inner.argnums, inner.has_aux)
        jitted = self._inner_jits.get(key)
        if jitted is None:
            jitted = self._inner_jits[key] = Jitted(inner, self.target, self.cache, self.fallback)
        return jitted

    @property
    def source(self) -> str:
        gens = list(self._gens.values())
        return gens[0].source if gens else ""


_FAST_SCALARS = (float, int, bool, np.float64, np.float32, np.int64, np.int32, np.bool_)


def _fast_key(args) -> tuple | None:
    """The argument types a compiled call depends on, or None where a call needs the full
    dispatch (pytrees, other objects)."""
    key = []
    for a in args:
        if type(a) is np.ndarray:
            key.append((a.dtype, a.ndim))
        elif type(a) in _FAST_SCALARS:
            key.append(type(a))
        else:
            return None
    return tuple(key)


def _zero_d_as_numbers(args) -> tuple:
    """The arguments with each 0-d array replaced by its element (a NumPy number)."""
    return tuple(a[()] if type(a) is np.ndarray and a.ndim == 0 else a for a in args)


def numba_cache():
    from .backends import numba_cache as module
    return module


def _note_user_line(exc: Exception) -> bool:
    """Add a note naming the user's file and line to an exception raised while generated code ran
    (an IndexError, a LinAlgError, the user's own raise): the traceback alone ends in a file s2s
    wrote.  True when a generated frame was found (the note was added, or was already there)."""
    if isinstance(exc, S2SError) and not isinstance(exc, SharedArrayError):   # (those name their place)
        return True
    if any(note.startswith("in your code:") for note in getattr(exc, "__notes__", ())):
        return True
    tb, site = exc.__traceback__, None
    while tb is not None:
        gen = _generated_by_path(tb.tb_frame.f_code.co_filename)
        if gen is not None:
            site = (gen, tb.tb_lineno)       # (the deepest generated frame)
        tb = tb.tb_next
    if site is None:
        return False
    try:
        filename, lineno, where, helper = _user_site(*site)
    except Exception:                        # noqa: BLE001 - a note is a courtesy; keep the error
        return True
    if filename is not None:
        text = f'in your code: File "{filename}", line {lineno}'
        if where:
            text += f"\n    {where.strip()}"
        if helper:
            text += f"\n  (inside s2s's helper {helper})"
        exc.add_note(text)
    return True


def _run_compiled(gen: Generated, args):
    try:
        return gen.fn(*args)
    except ValueError as exc:   # the compiled seed_cotangent's refusal, as the Python one words it
        if "scalar output" not in str(exc):
            raise
        filename, lineno, origin = _user_origin(gen)
        raise NonDifferentiableError(
            f"grad requires a function with a scalar output (in {origin})", filename=filename, lineno=lineno,
            hint="reduce the output (e.g. np.sum) or use s2s.vjp / s2s.jacrev for non-scalar outputs") from None


def _specializable(fun) -> bool:
    """Transforms whose generated code is specialized on the argument facts under jit."""
    return isinstance(fun, Transformed) and fun.transform in ("grad", "value_and_grad") \
        and not isinstance(fun.fun, (Transformed, Batched))


def _signature_key(args) -> tuple:
    return tuple((type(a).__name__, getattr(a, "dtype", None) and str(a.dtype), np.ndim(a)) for a in args)


def _is_compile_error(exc) -> bool:
    try:
        import numba
        errors = numba.core.errors
        if isinstance(exc, errors.NumbaError) and not isinstance(exc, errors.NumbaRuntimeError):
            return True     # TypingError, LoweringError, UnsupportedError, InternalError, ...
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, TransformError) or _raised_inside_numba(exc)


def _raised_inside_numba(exc) -> bool:
    """An exception raised by Numba's own Python code (its compiler: an internal error while
    typing generated code, not wrapped in a TypingError). Errors of the compiled code itself
    come from the dispatcher's C code, whose last Python frame is the caller's."""
    import numba
    tb = exc.__traceback__
    if tb is None:
        return False
    package = os.path.dirname(os.path.abspath(numba.__file__)) + os.sep
    passes = os.path.join(package, "core", "compiler_machinery.py")
    previous = None
    while tb.tb_next is not None:
        # raised while Numba's compiler ran (its passes: type inference calling s2s's overloads)
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == passes:
            return True
        previous, tb = tb, tb.tb_next
    if previous is not None and not os.path.abspath(previous.tb_frame.f_code.co_filename).startswith(package):
        # one Numba frame right below the caller's: a `raise` in compiled code (Numba gives it the
        # location of the raise in its sources: np.linalg's LinAlgError), not its compiler
        return False
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(package)


def _compile_error(jitted, exc, nargs, gen: Generated | None = None) -> Exception:
    """Numba's error as a TransformError at the user's line (through the generated files' comments).

    When the code that failed is one of s2s's own helpers (an adjoint such as `cumsum_vjp`, a
    runtime helper), the user's code is fine: the error says s2s has no compiled version of
    that helper for these argument types, and names the user's line it serves."""
    if isinstance(exc, TransformError):
        return _at_user_line(exc, jitted)
    if gen is None:
        # the code that failed: the unfused version if one was tried (key: nargs, fused, facts)
        tried = [(key, g) for key, g in jitted._gens.items() if key[0] == nargs]
        unfused = [g for key, g in tried if key[1] is False]
        named = [g for _, g in tried if os.path.basename(g.path) in str(exc)]     # the one Numba names
        gen = ([g for g in named if g in unfused] or named or unfused or [g for _, g in tried] or [None])[-1]
    reason = _compile_reason(exc)
    if gen is None:
        filename, lineno = _function_site(jitted.fun)
        return TransformError(f"Numba cannot compile the generated code for {jitted.fun!r} in nopython mode: {reason}",
                              filename=filename, lineno=lineno,
                              hint=_missing_package_hint(exc)
                              or "jit(f, fallback=True) runs the generated Python instead; or run it without jit")
    line, helper, numpy_call = _numba_failure(exc, gen)
    lines = gen.source.splitlines()
    gen_line = lines[line - 1].strip() if line is not None and 0 < line <= len(lines) else ""
    filename, lineno, origin = _user_origin(gen)
    where, inlined = None, None
    if line is not None:
        filename, lineno, where, inlined = _user_site(gen, line)
    helper = inlined or helper      # vmap inlines helpers: the one whose code failed
    if numpy_call is not None and (where is None or numpy_call in where):
        # the user's own NumPy call (compiled as it is, or batched by bmap): Numba has no version of it
        msg = f"Numba cannot compile the generated code for {origin} in nopython mode: {reason}"
        hint = "use operations Numba supports, or jit(f, fallback=True) to run the generated Python"
    elif helper is not None:
        at = f"`{where}` ({os.path.basename(filename)}, line {lineno})" if where else origin
        msg = (f"s2s has no compiled version of its helper `{helper}` for these argument types yet: Numba cannot "
               f"compile it in nopython mode ({reason}). s2s generated the call for {at}; "
               f"your code needs no change")
        hint = "run it with jit(f, fallback=True) (the generated Python) or without jit"
    else:
        # s2s's code for the line (a derivative, a batched form) that Numba cannot type
        msg = f"Numba cannot compile the generated code for {origin} in nopython mode: {reason}"
        hint = "jit(f, fallback=True) runs the generated Python instead; or run it without jit"
    if gen_line:
        msg += f" (generated line: `{gen_line}`)"
    missing = _missing_package_hint(exc)
    return TransformError(msg, filename=filename, lineno=lineno, source_line=where, hint=missing or hint)


def _missing_package_hint(exc) -> str | None:
    """What to install when Numba failed for want of a package (SciPy for `@` and np.linalg)."""
    try:
        from .backends import numba_cpu
    except ImportError:  # pragma: no cover
        return None
    finder = getattr(numba_cpu, "missing_package_hint", None)
    return finder(_strip_ansi(str(exc))) if finder is not None else None


def _compile_reason(exc) -> str:
    """What Numba says failed, for a message: its first line (with the signature it found no
    implementation for), without object addresses or generated files' paths."""
    import re as _re
    text = _strip_ansi(str(exc))
    reason = _numba_reason(exc)
    if reason.endswith("found for signature:"):
        rest = text.split("found for signature:", 1)[1]
        sig = next((ln.strip() for ln in rest.splitlines() if ln.strip()), "")
        if sig.startswith(">>>"):
            reason += " " + sig[3:].strip()
    reason = _re.sub(r" at 0x[0-9a-fA-F]+>", ">", _unpath(reason))
    reason = _re.sub(r", operation: call \$.*", "", reason)     # Numba's IR of the call: noise here
    return reason if len(reason) <= 400 else reason[:400] + "..."


# Where the code a Numba error names comes from. Generated files map to the user's lines
# through their comments: `# <user source line>` (or `# grad of: <line>`) above the statements
# made from that line, and `Generated.origin`, "file:line (qualname)" of the function they
# were generated from (a user file, or for vmap(grad(f)) and hessian(f) another generated file).
_BACKEND_HELPER_MODULES = ("s2s.backends.numba_lower", "s2s.backends.vecmath")
_NOT_SOURCE_COMMENTS = ("# ---", "# Generated by s2s", "# Do not edit", "# from ")
_WRAPPED: "weakref.WeakValueDictionary[str, Callable]" = weakref.WeakValueDictionary()   # a pytree wrapper's
#   file -> the function it calls (_flat_wrapper)


def _is_s2s_helper(value) -> bool:
    fn = getattr(value, "py_func", value)     # a Numba dispatcher: its Python function
    return callable(fn) and not isinstance(fn, type) and (
        getattr(fn, "__module__", None) in (*HELPER_MODULES, *_BACKEND_HELPER_MODULES))


def _helper_modules() -> list:
    import importlib
    return [importlib.import_module(name) for name in HELPER_MODULES]


def _parse_origin(origin: str) -> tuple[str | None, int | None]:
    import re as _re
    m = _re.match(r"^(.*):(\d+) \(.*\)$", origin or "")
    return (m.group(1), int(m.group(2))) if m else (None, None)


def _generated_by_path(path: str | None) -> Generated | None:
    """The Generated whose file is `path` (compared by name: Numba writes paths relative)."""
    if not path:
        return None
    base = os.path.basename(path)
    with _LOCK:
        gens = list(_CACHE.values())
    return next((g for g in gens if os.path.basename(g.path) == base), None)


def _wrapped_function(path: str | None) -> Callable | None:
    return _WRAPPED.get(os.path.basename(path)) if path else None


def _user_origin(gen: Generated) -> tuple[str | None, int | None, str]:
    """(file, def line, "file:line (name)") of the user's function behind `gen`."""
    for _ in range(16):
        filename, lineno = _parse_origin(gen.origin)
        parent = _generated_by_path(filename)
        if parent is None:
            wrapped = _wrapped_function(filename)
            if wrapped is not None:
                code = wrapped.__code__
                parent = _generated_by_path(code.co_filename)
                if parent is None:
                    return code.co_filename, code.co_firstlineno, _origin(wrapped)
            else:
                return filename, lineno, gen.origin
        gen = parent
    return None, None, gen.origin


def _function_site(fun) -> tuple[str | None, int | None]:
    """The user's file and def line of a (transformed, jitted) function."""
    while isinstance(fun, (Transformed, Batched, Hessian, Jitted)):
        fun = fun.fun
    code = getattr(inspect.unwrap(fun), "__code__", None) if callable(fun) else None
    if code is None:
        return None, None
    gen = _generated_by_path(code.co_filename)
    if gen is not None:
        return _user_origin(gen)[:2]
    return code.co_filename, code.co_firstlineno


def _source_comment(line: str) -> str | None:
    """The user's source line a generated comment line quotes, if it is one."""
    s = line.strip()
    if not s.startswith("# ") or s.startswith(_NOT_SOURCE_COMMENTS):
        return None
    text = s[2:].strip()
    return text[len("grad of: "):] if text.startswith("grad of: ") else text


def _find_line(lines: list, text: str, start: int) -> int | None:
    """The number of the line equal to `text` (stripped), searching from line `start` on first."""
    n = len(lines)
    for k in list(range(max(start - 1, 0), n)) + list(range(0, min(max(start - 1, 0), n))):
        if lines[k].strip() == text:
            return k + 1
    return None


def _helper_with_line(text: str) -> str | None:
    """The s2s helper (runtime, op helpers) whose source has this line: code of it inlined by vmap."""
    import linecache
    import re as _re
    for module in _helper_modules():
        lines = linecache.getlines(module.__file__)
        for k, ln in enumerate(lines):
            if ln.strip() == text:
                for j in range(k, -1, -1):
                    m = _re.match(r"def (\w+)\(", lines[j])
                    if m:
                        return m.group(1)
    return None


def _user_site(gen: Generated, line: int, depth: int = 0):
    """(file, line, source line, s2s helper) of the user's code behind line `line` of `gen`:
    the comment above it quotes the line it came from, in the file gen was generated from
    (itself generated, for vmap(grad(f)): then once more). Comments quoting lines of an s2s
    helper (inlined by vmap) are skipped; the helper is returned."""
    import linecache
    filename, def_line = _parse_origin(gen.origin)
    parent = _generated_by_path(filename)
    wrapped = _wrapped_function(filename) if parent is None else None
    if wrapped is not None:      # a pytree wrapper: the comments quote the function it calls
        filename, def_line = wrapped.__code__.co_filename, wrapped.__code__.co_firstlineno
        parent = _generated_by_path(filename)
    if parent is not None:
        src_lines = parent.source.splitlines()
    else:
        src_lines = [ln.rstrip("\n") for ln in linecache.getlines(filename)] if filename else []
    lines = gen.source.splitlines()
    body = next((k for k, ln in enumerate(lines) if ln.startswith("def ")), 0)
    helper = None
    for k in range(min(line, len(lines)) - 1, body, -1):
        text = _source_comment(lines[k])
        if text is None:
            continue
        n = _find_line(src_lines, text, def_line or 1)
        if n is None:
            helper = helper or _helper_with_line(text)
            continue
        if parent is not None and depth < 16:
            f, ln, where, inner = _user_site(parent, n, depth + 1)
            return f, ln, where, helper or inner
        return filename, n, text, helper
    if parent is not None:
        f, ln, _ = _user_origin(parent)
        return f, ln, None, helper
    return filename, def_line, None, helper


def _numba_failure(exc, gen: Generated) -> tuple[int | None, str | None, str | None]:
    """The line of `gen`'s file a Numba error points at, the name (in gen's namespace) of the
    s2s helper whose compilation failed if it was one, and the NumPy function Numba refused
    if that line calls it."""
    import re as _re
    text = _strip_ansi(str(exc))
    base = os.path.basename(gen.path)
    line = None
    for pattern in (r'File "([^"]+)", line (\d+)', r"typing of call at (\S+) \((\d+)\)"):
        line = next((int(m.group(2)) for m in _re.finditer(pattern, text)
                     if os.path.basename(m.group(1)) == base), None)
        if line is not None:
            break
    # an internal error of Numba's typing (not a TypingError): its traceback holds the type
    # inference of each function being compiled, outermost first, and the call being typed
    typed = []
    tb = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        func_id = getattr(owner, "func_id", None)
        if func_id is not None and getattr(func_id, "func", None) is not None:
            if not typed or typed[-1] is not func_id.func:
                typed.append(func_id.func)
        loc = getattr(owner, "loc", None)
        if line is None and os.path.basename(str(getattr(loc, "filename", ""))) == base:
            line = getattr(loc, "line", None)
        tb = tb.tb_next
    namespace = _namespace_of(gen)
    helpers = {}
    for key, value in namespace.items():
        if _is_s2s_helper(value):
            helpers[id(value)] = key
            helpers[id(getattr(value, "py_func", value))] = key
    helper = None
    for fn in typed:          # the first helper the generated code called
        if id(fn) in helpers:
            helper = helpers[id(fn)]
            break
    if helper is None:        # Numba names the innermost failure first, the generated code's callee last
        for m in _re.finditer(r"<function (\w+) at 0x([0-9a-fA-F]+)>", text):
            helper = helpers.get(int(m.group(2), 16), helper)
    if helper is None:        # a line of a helper's own source in the error
        for m in _re.finditer(r'(?:File "([^"]+)", line (\d+)|Raised from (\S+) \((\d+)\)'
                              r'|typing of call at (\S+) \((\d+)\))', text):
            path = next(g for g in m.groups()[0::2] if g)
            number = int(next(g for g in m.groups()[1::2] if g))
            name = _helper_at(path, number)
            if name is not None and name in namespace and _is_s2s_helper(namespace[name]):
                helper = name
    lines = gen.source.splitlines()
    code = lines[line - 1] if line is not None and 0 < line <= len(lines) else ""
    if helper is None:        # the generated line calls a helper the error names
        for called in _re.findall(r"(?<![\w.])(\w+)\(", code):     # (not methods: tape.pop())
            if called in namespace and _is_s2s_helper(namespace[called]) and _re.search(rf"\b{called}\b", text):
                helper = called
                break
    # the user's function Numba refused (a NumPy function, or one of theirs), if the generated
    # line calls it (or batches it: bmap(np.f, ...))
    refused = set()
    for pattern in (r"NumPy function 'numpy\.([\w.]+)'", r"<function (\w+) at 0x", r"<built-in function (\w+)>",
                    r"Unknown attribute '(\w+)' of type Module", r"Untyped global name '(\w+)'"):
        refused |= {m.split(".")[-1] for m in _re.findall(pattern, _numba_reason(exc))}
    numpy_call = None
    for m in _re.finditer(r"\b(np\.(?:\w+\.)*)?(\w+)\b", code):
        if m.group(2) in refused and (m.group(1) or not _is_s2s_helper(namespace.get(m.group(2)))):
            numpy_call = m.group(2)
            break
    return line, helper, numpy_call


def _helper_at(path: str, number: int) -> str | None:
    """The function of an s2s helper module (runtime, op helpers) whose source holds line `number` of `path`."""
    import linecache
    import re as _re
    module = next((m for m in _helper_modules() if os.path.abspath(m.__file__) == os.path.abspath(path)), None)
    if module is None:
        return None
    lines = linecache.getlines(module.__file__)
    for j in range(min(number, len(lines)) - 1, -1, -1):
        m = _re.match(r"def (\w+)\(", lines[j])
        if m:
            return m.group(1)
    return None


def _namespace_of(gen: Generated) -> dict:
    fn = getattr(gen.fn, "py_func", gen.fn)
    return getattr(fn, "__globals__", {}) or {}


def _unpath(text: str) -> str:
    """A Numba message without the generated files' paths (`location: <file> (line)`)."""
    import re as _re
    text = _re.sub(r",?\s*location: \S+ \(\d+\)", "", text)
    # generated files are named <stem>_<16 hex digits>.py (emit.write_module)
    return _re.sub(r"[^\s'\"(]*?\w+_[0-9a-f]{16}\.py(?: \(\d+\))?", "the generated code", text)


def _at_user_line(exc: TransformError, jitted) -> TransformError:
    """exc at the user's line: a transform of generated code (vmap of grad(f), the jvp of grad(f)
    for hessian) reports the generated file; its comments name the user's line."""
    import copy as _copy
    parent = _generated_by_path(exc.filename)
    if parent is not None:
        filename, lineno, where, _ = _user_site(parent, exc.lineno or 0)
        lines = parent.source.splitlines()
        gen_line = lines[exc.lineno - 1].strip() if exc.lineno and 0 < exc.lineno <= len(lines) else ""
        new = _copy.copy(exc)
        new.filename, new.lineno, new.col, new.source_line = filename, lineno, None, where
        if gen_line and gen_line != where:
            new.message = f"{exc.message} (in the code s2s generated for it: `{gen_line}`)"
        new.args = (new._render(),)
        return new
    if exc.filename is None:
        filename, lineno = _function_site(jitted.fun)
        if filename is not None:
            new = _copy.copy(exc)
            new.filename, new.lineno = filename, lineno
            new.args = (new._render(),)
            return new
    return exc


def _numba_reason(exc) -> str:
    """The line of a Numba error that says what failed (not its 'Failed in ... pipeline' header)."""
    text = _strip_ansi(str(exc))
    first = next((ln for ln in text.splitlines() if ln.strip() and "Failed in" not in ln
                  and not ln.startswith("- Resolution failure")), text[:200])
    return first.strip() or type(exc).__name__


def _strip_ansi(text: str) -> str:
    import re as _re
    return _re.sub(r"\x1b\[[0-9;]*m", "", text)


def jit(fun: Callable | None = None, target: str = "cpu", cache: bool = True, fallback: bool = False):
    """Compile `fun`'s generated source with Numba (nopython mode).

    Works on plain functions and on every transform: `jit(grad(f))`, `jit(vmap(grad(f)))`, ...
    Args:
        target: "cpu" (numba.njit), "parallel" (njit(parallel=True)) or "cuda" (numba.cuda kernels).
        cache: keep compiled machine code on disk next to the generated file.
        fallback: if Numba cannot compile, warn once and run the generated Python instead.
    """
    if fun is None:
        return lambda f: Jitted(f, target, cache, fallback)
    return Jitted(fun, target, cache, fallback)


# calls of these inside transformed code build their transform while normalizing (frontend/hooks.py)
register_transform_factories(vmap, grad, value_and_grad, jacfwd, jacrev, hessian)
