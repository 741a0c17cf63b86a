"""How a transformation object is called: argnums, differentiable arguments, keywords, names.

Shared by every object in this package: the checks each differentiating transform makes at a
call (argnums in range, float arguments), keyword arguments bound to the user's positions, the
user's parameter names for readable generated code.
"""
from __future__ import annotations

import inspect
import numbers
import os
import sys
from typing import Any, Callable

import numpy as np

from ..errors import ArgumentError, NonDifferentiableError, TransformError
from ..frontend.parse import source_of_decorated
from .sources import TransformObject, source_function


def normalize_argnums(argnums) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, numbers.Integral) and not isinstance(argnums, bool):
        return (int(argnums),), False
    if isinstance(argnums, (tuple, list)) and argnums and all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in argnums):
        return tuple(int(a) for a in argnums), True
    raise ArgumentError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")


def check_argnums(args: tuple, argnums, fn: Callable) -> None:
    """What every differentiating transform refuses at a call: argnums out of range, arguments
    that are not floats. `fn` names the function in the message."""
    n = len(args)
    for a in argnums:
        if not -n <= a < n:
            raise ArgumentError(f"argnums={a} is out of range for a call with {n} arguments")
        check_differentiable(args[a], a % n, fn)


def check_differentiable(x: Any, position: int, fn: Callable) -> None:
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


def defaults_after(fun: Callable, nargs: int) -> list:
    """The default values of `fun`'s parameters after the first `nargs` (a generated jvp takes
    every primal before its tangents, so a caller passes the defaults)."""
    out = []
    for p in list(inspect.signature(fun).parameters.values())[nargs:]:
        if p.default is p.empty or p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        out.append(p.default)
    return out


def unit_basis(x):
    """Unit tangents/cotangents shaped like x, one per element."""
    shape = np.shape(x)
    size = int(np.prod(shape)) if shape else 1
    for k in range(size):
        e = np.zeros(size)
        e[k] = 1.0
        yield e.reshape(shape) if shape else 1.0


def user_function(fun: Callable) -> Callable:
    """The function under s2s's wrappers (transforms, Jacobians, vmap, jit)."""
    while isinstance(fun, TransformObject):
        fun = fun.fun
    return fun


def binds_by_position(wrapper, args: tuple, kwargs: dict) -> bool:
    """Whether a call's arguments can be passed to the user's function by position only (no
    keyword-only or **kwargs keyword, no argument beyond its named parameters)."""
    try:
        sig = inspect.signature(source_of_decorated(user_function(wrapper)))
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return True          # (bind_keywords says what is wrong)
    return all(sig.parameters[n].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for n in bound.arguments)


def bind_keywords(wrapper, args: tuple, kwargs: dict) -> tuple:
    """A call's keyword arguments as positions of the user's function (its defaults filling the
    positions before the last one given), as Python binds them: `grad(f)(x, a=2.0)`."""
    base = user_function(wrapper)
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


def positional_names(fun: Callable, nargs: int) -> list[str]:
    """Parameter names of the function under s2s's wrappers (readable generated code), else x0, x1, ..."""
    base = user_function(fun)
    try:
        names = [p.name for p in inspect.signature(base).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = names[:nargs] if len(names) >= nargs and all(n.isidentifier() for n in names) else []
    return names or [f"x{i}" for i in range(nargs)]


def positional_count(fun: Callable) -> int:
    """How many arguments a transform of `fun` takes when no call says (its required positionals)."""
    base = fun
    while getattr(base, "wrapper_kind", None) in ("transform", "jacobian", "hessian"):   # (f's signature)
        base = base.fun
    if getattr(base, "wrapper_kind", None) == "vmap":
        raise TransformError("transforming a Jacobian of a vmapped function needs its argument count; call it "
                             "inside a function (e.g. lambda w: s2s.jacrev(s2s.vmap(f))(w, xs))")
    params = inspect.signature(source_function(base)).parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TransformError(f"cannot transform a Jacobian of {getattr(base, '__qualname__', base)!r}: it takes "
                             "*args; call the Jacobian inside a function with a fixed argument list")
    return len([p for p in params if p.default is inspect.Parameter.empty and
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


def caller_stacklevel() -> int:
    """warnings.warn's stacklevel (from the function calling this) of the first frame outside
    s2s: the user's call, however many s2s wrappers (precision, pytrees, retries) are between."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep     # (the s2s package)
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def axes_per_argument(in_axes, nargs: int, who: str) -> tuple:
    """in_axes (an int, None, or one per argument) as one entry per argument, checked (vmap, pmap)."""
    if isinstance(in_axes, (list, tuple)):
        if len(in_axes) != nargs:
            raise ArgumentError(f"{who}: in_axes has {len(in_axes)} entries but the function was called with "
                                f"{nargs} arguments")
        axes = tuple(in_axes)
    else:
        axes = (in_axes,) * nargs
    for i, a in enumerate(axes):
        if a is not None and (not isinstance(a, numbers.Integral) or isinstance(a, bool)):
            raise ArgumentError(f"{who}: in_axes entry {i} must be an int or None, got {a!r}")
    return axes
