"""jit's static arguments (`static_argnums`, `static_argnames`), as JAX has them.

A static argument is part of the code, not of its inputs: each distinct (hashable) value gets a
wrapper with the value written in (`def loss_static(w, x): return loss_user(w, x, 'train')`),
whose transform is compiled like any other. s2s reads the value when it transforms, so a static
string, number, tuple or function decides branches (`if mode == 'train':`), loop counts and
shapes in the compiled code, and a helper passed as a static argument is inlined. Values whose
text is their value (numbers, strings, tuples of them) are written as text; others (functions,
objects) are bound by name and named by a digest in the wrapper's text: two wrappers of the same
text are one generated function to s2s's caches (a static np.sin and np.tanh would share code).
"""
from __future__ import annotations

import hashlib
import inspect
import math
import os
import types
from typing import Any, Callable

from ..codegen import emit
from ..codegen.user_lines import WRAPPED
from ..errors import ArgumentError, TransformError
from ..frontend.parse import source_of_decorated
from ..frontend.reads import code_fingerprint
from .calls import bind_keywords, normalize_argnums, user_function
from .grad import Transformed
from .jacobians import Hessian, Jacobian
from .vmap import Batched


def normalize_static(static_argnums, static_argnames) -> tuple[tuple[int, ...], tuple[str, ...]]:
    nums: tuple[int, ...] = ()
    if static_argnums is not None and static_argnums != ():
        nums = normalize_argnums(static_argnums)[0]
    if static_argnames is None:
        names: tuple[str, ...] = ()
    elif isinstance(static_argnames, str):
        names = (static_argnames,)
    else:
        names = tuple(static_argnames)
        if not all(isinstance(n, str) for n in names):
            raise ArgumentError(f"static_argnames must be a string or a sequence of strings, got {static_argnames!r}")
    return nums, names


def split_call(jitted, args: tuple, kwargs: dict) -> tuple[tuple, tuple, dict, tuple, int]:
    """(the dynamic arguments, the positions they had, the static values by position and by
    keyword-only name, the key of those values, the number of positional arguments once the
    keywords are bound) of a call of a jit with static arguments."""
    base = source_of_decorated(user_function(jitted))
    try:
        params = inspect.signature(base).parameters
    except (TypeError, ValueError):
        raise ArgumentError(f"{jitted.__name__}: static arguments need a function whose signature can be read") \
            from None
    kw_only = {k: v for k, v in kwargs.items() if k in params and params[k].kind is params[k].KEYWORD_ONLY}
    for k in kw_only:
        if k not in jitted.static_argnames:
            raise ArgumentError(f"{jitted.__name__}: keyword-only argument `{k}` of a jit with static arguments "
                                f"must be static too: add {k!r} to static_argnames")
    rest = {k: v for k, v in kwargs.items() if k not in kw_only}
    if rest:
        args = bind_keywords(jitted, args, rest)
    n = len(args)
    names = list(params)
    static = set()
    for i in jitted.static_argnums:
        if -n <= i < n:
            static.add(i % n)
    for name in jitted.static_argnames:
        if name not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            raise ArgumentError(f"{jitted.__name__}: static_argnames names `{name}`, which is not a parameter of "
                                f"{getattr(base, '__qualname__', base)}")
        if name in names and names.index(name) < n and params[name].kind is not params[name].KEYWORD_ONLY:
            static.add(names.index(name))
    by_position = {i: args[i] for i in sorted(static)}
    key = []
    for where, value in list(by_position.items()) + sorted(kw_only.items()):
        try:
            hash(value)
        except TypeError:
            raise ArgumentError(
                f"{jitted.__name__}: static argument {where!r} is an unhashable {type(value).__name__}; "
                "a static argument's value is part of the compiled code, looked up by its hash; pass a tuple "
                "instead of a list, or make the argument dynamic (not static)") from None
        key.append((where, type(value), value))
    dynamic = tuple(i for i in range(n) if i not in static)
    return tuple(args[i] for i in dynamic), dynamic, {**by_position, **kw_only}, tuple(key), n


def _literal(value) -> str | None:
    """Python text whose value is `value` (and of its type), or None."""
    if value is None or type(value) in (bool, int, str):
        return repr(value)
    if type(value) is float:
        return repr(value) if math.isfinite(value) else None
    if type(value) is tuple:
        parts = [_literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return None


def _digest(value) -> str:
    if isinstance(value, types.FunctionType):
        what = f"{value.__module__}.{value.__qualname__}:{code_fingerprint(value.__code__)}"
    else:
        what = f"{type(value).__module__}.{type(value).__qualname__}:{value!r}"
    return hashlib.sha256(what.encode()).hexdigest()[:16]


def static_wrapper(fn: Callable, nargs: int, static: dict) -> Callable:
    """`def f_static(x, z): return f_user(x, 'train', z)` for a call of `fn` with `nargs` positional
    arguments, those at the integer keys of `static` (and keyword-only ones at its string keys)
    written in."""
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    base = fn.__name__ if getattr(fn, "__name__", "").isidentifier() else "fn"
    fbind = f"{base}_user"
    ns: dict[str, Any] = {fbind: fn}
    params, passed, digests = [], [], []

    def text_of(where, value) -> str:
        text = _literal(value)
        if text is None:
            text = f"static_{where}"
            ns[text] = value
            digests.append(f"{where}={_digest(value)}")
        return text
    for i in range(nargs):
        name = names[i] if i < len(names) else f"arg{i}"
        if i in static:
            passed.append(text_of(name, static[i]))
        else:
            params.append(name)
            passed.append(name)
    for k, v in static.items():
        if isinstance(k, str):
            passed.append(f"{k}={text_of(k, v)}")
    fname = f"{base}_static"
    doc = f"    {'static values: ' + ', '.join(digests)!r}\n" if digests else ""
    source = f"def {fname}({', '.join(params)}):\n{doc}    return {fbind}({', '.join(passed)})\n"
    path = emit.write_module(source, fname)
    wrapper = emit.load_function(source, path, fname, ns, register=False)
    wrapper.__s2s_wraps__ = fn
    WRAPPED[os.path.basename(path)] = fn       # errors in its transforms point at fn's lines
    return wrapper


def rebuild(obj, wrapper: Callable, dynamic: tuple[int, ...], nargs: int) -> Any:
    """The transform stack `obj` (grad, vmap, Jacobians, hessian over the user's function) over
    `wrapper` instead, whose parameters are the user's at positions `dynamic` of a call with
    `nargs` arguments."""
    if getattr(obj, "wrapper_kind", "") not in ("transform", "jacobian", "hessian", "vmap"):
        return wrapper
    inner = rebuild(obj.fun, wrapper, dynamic, nargs)

    def moved(nums: tuple[int, ...], what: str) -> tuple[int, ...]:
        out = []
        for a in nums:
            if not -nargs <= a < nargs:
                raise ArgumentError(f"argnums={a} is out of range for a call with {nargs} arguments")
            a %= nargs
            if a not in dynamic:
                raise ArgumentError(f"{what}: argument {a} is static, and a static argument cannot be "
                                    "differentiated; leave it out of argnums or out of static_argnums")
            out.append(dynamic.index(a))
        return tuple(out)
    if isinstance(obj, Transformed):
        nums = moved(obj.argnums, obj.__name__)
        return Transformed(inner, obj.transform, nums if obj.tuple_out else nums[0], obj.has_aux)
    if isinstance(obj, Jacobian):
        nums = moved(obj.nums, obj.__name__)
        return Jacobian(inner, obj.mode, nums if obj.is_tuple else nums[0])
    if isinstance(obj, Hessian):
        nums = moved(obj.nums, obj.__name__)
        return Hessian(inner, nums if obj.is_tuple else nums[0])
    if isinstance(obj, Batched):
        axes = obj.in_axes
        if isinstance(axes, (tuple, list)):
            n = max(dynamic, default=-1) + 1
            if len(axes) < n:
                raise ArgumentError(f"{obj.__name__}: in_axes has {len(axes)} entries for a call with more arguments")
            if any(axes[i] is not None for i in range(len(axes)) if i not in dynamic):
                raise ArgumentError(f"{obj.__name__}: a static argument is not batched; give it in_axes None")
            axes = type(axes)(axes[i] for i in dynamic)
        return Batched(inner, axes, obj.out_axes, obj.axis_size)
    raise TransformError(f"jit with static arguments of {obj!r} is not supported")
