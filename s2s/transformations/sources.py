"""Which Python function a transform reads, for anything a user hands to s2s.

A plain function reads its own source; an op with a rule gets a one-line wrapper
(`def sin_op(x): return np.sin(x)`); a bound method, a function of the other parameters with
`self` bound; a transformation object, its generated source. Pytree arguments get a wrapper
taking their leaves (flat_wrapper). Wrappers s2s writes register the function they call in
codegen/user_lines.WRAPPED, so errors in their transforms point at the user's lines.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import types
import weakref
from typing import Any, Callable

from ..codegen import emit
from ..codegen.user_lines import WRAPPED
from ..errors import TransformError
from ..frontend.namespace import base_namespace
from ..frontend.parse import source_of_decorated
from ..frontend.reads import code_fingerprint
from ..rules.table import lookup


class TransformObject:
    """Base of s2s's transformation objects: each wraps `fun` and is called like it.

    `wrapper_kind` names the object ("transform", "jacobian", "hessian", "vmap", "jit"): layers
    below this one (normalization, error locating) recognize wrappers by it, without importing
    these classes."""
    fun: Callable
    wrapper_kind: str = ""

    def _s2s_source(self) -> Callable | None:
        """The Python function a transform of this object reads; None: read it as any callable."""
        return None


def source_function(fun: Callable) -> Callable:
    """The Python function whose source a transform reads."""
    if isinstance(fun, TransformObject):
        src = fun._s2s_source()      # (a vmapped function refuses: it needs an argument count)
        if src is not None:
            return src
    rule = lookup(fun)
    if rule is not None:
        return rule_wrapper(fun)
    if inspect.ismethod(fun) and isinstance(fun.__func__, types.FunctionType):
        return method_function(fun)
    src = source_of_decorated(fun) if callable(fun) else None
    if getattr(src, "__code__", None) is not None:
        return src
    raise TransformError(f"cannot transform {fun!r}: it has no Python source and no s2s rule",
                         hint="wrap it in a Python function or register a rule with s2s.custom_vjp")


@functools.lru_cache(maxsize=None)
def rule_wrapper(fun) -> Callable:
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
    ns = base_namespace()
    ns.update(rule.bindings)
    return emit.load_function(source, path, fname, ns)


_WRAPPERS: dict = {}       # (pytree wrappers of callables that have no __dict__)


_METHOD_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # bound method -> its function


def method_function(method) -> Callable:
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
    WRAPPED[os.path.basename(path)] = func     # errors point at the method's lines
    _METHOD_FUNCTIONS[method] = wrapper
    return wrapper


def flat_wrapper(fn: Callable, treedefs: tuple) -> Callable:
    """`def f_flat(p_0, p_1, x): p = {'W': p_0, 'b': p_1}; return f(p, x)` for pytree arguments."""
    # (kept on the function itself, so a dropped function takes its wrappers and their modules along)
    try:
        per_fn = fn.__dict__.setdefault("__s2s_flat_wrappers__", {})
    except (AttributeError, TypeError):
        per_fn = _WRAPPERS.setdefault(fn, {})
    if treedefs in per_fn:
        return per_fn[treedefs]
    sig_fn = fn
    while getattr(sig_fn, "wrapper_kind", None) == "transform":   # grad(f) takes f's arguments
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
    WRAPPED[os.path.basename(path)] = fn     # errors in its transforms point at fn's lines
    per_fn[treedefs] = wrapper
    return wrapper


def keyword_wrapper(fn: Callable, npos: int, keywords: dict) -> tuple[Callable, list]:
    """`def f_kw(x, y, k_scale): return f(x, y, mode='sum', scale=k_scale)`: a call of `fn` with `npos`
    positional arguments (beyond its named parameters too: *args) and keyword arguments it cannot take
    by position (keyword-only, **kwargs). Strings, booleans and None are written into the wrapper (s2s
    reads them when it transforms: `if mode == 'sum':` is decided then, as a static argument); other
    values become parameters after the positional ones. Returns the wrapper and the values to pass."""
    static = {k: v for k, v in keywords.items() if isinstance(v, (str, bool, type(None)))}
    dynamic = [k for k in keywords if k not in static]
    key = (npos, tuple(sorted(static.items(), key=lambda kv: kv[0])), tuple(dynamic))
    try:
        per_fn = fn.__dict__.setdefault("__s2s_keyword_wrappers__", {})
    except (AttributeError, TypeError):
        per_fn = _WRAPPERS.setdefault(("kw", fn), {})
    if key not in per_fn:
        try:
            names = [p.name for p in inspect.signature(fn).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
        params = [names[i] if i < len(names) else f"arg{i}" for i in range(npos)]
        params += [f"kw_{k}" for k in dynamic]
        fbind = f"{fn.__name__}_user" if getattr(fn, "__name__", "").isidentifier() else "user_fn"
        fname = f"{fn.__name__}_kw" if getattr(fn, "__name__", "").isidentifier() else "kw_fn"
        passed = params[:npos] + [f"{k}={v!r}" for k, v in static.items()] + [f"{k}=kw_{k}" for k in dynamic]
        source = f"def {fname}({', '.join(params)}):\n    return {fbind}({', '.join(passed)})\n"
        path = emit.write_module(source, fname)
        wrapper = emit.load_function(source, path, fname, {fbind: fn}, register=False)
        wrapper.__s2s_wraps__ = fn
        WRAPPED[os.path.basename(path)] = fn
        per_fn[key] = wrapper
    return per_fn[key], [keywords[k] for k in dynamic]
