"""Public transformations: grad, value_and_grad, vjp, show.

Each wires the pipeline  parse -> normalize -> transform -> optimize -> emit
and caches the result by the function's identity (its code object) and the
transform's arguments, so `grad(f)` twice generates once.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import textwrap
import threading
from typing import Any, Callable, Sequence

import numpy as np

from .codegen import emit
from .errors import ArgumentError, NonDifferentiableError, TransformError
from .frontend.normalize import normalize
from .frontend.parse import parse_function
from .optimize import cleanup
from .rules import lookup
from .transforms.reverse import ReverseSpec, reverse

_TRANSFORMS = ("grad", "value_and_grad", "vjp")


@dataclasses.dataclass(frozen=True)
class Generated:
    fn: Callable          # the compiled generated function
    source: str           # the whole generated module text
    path: str             # where it lives on disk
    origin: str           # "file:line (qualname)" of the source function


_CACHE: dict[tuple, Generated] = {}
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
    if isinstance(fun, Transformed):
        return fun.generated().fn
    code = getattr(inspect.unwrap(fun), "__code__", None) if callable(fun) else None
    if code is not None:
        return fun
    rule = lookup(fun)
    if rule is not None:
        return _rule_wrapper(fun)
    raise TransformError(f"cannot transform {fun!r}: it has no Python source and no s2s rule",
                         hint="wrap it in a Python function or register a rule with s2s.custom_vjp")


@functools.lru_cache(maxsize=None)
def _rule_wrapper(fun) -> Callable:
    """`def sin(x): return np.sin(x)` for an op given directly (grad(np.sin))."""
    rule = lookup(fun)
    nin = getattr(fun, "nin", None)
    if nin is None:
        try:
            params = [p for p in inspect.signature(fun).parameters.values()
                      if p.default is inspect.Parameter.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
            nin = max(1, len(params))
        except (TypeError, ValueError):
            nin = 1
    args = ", ".join("xyzuvw"[i] for i in range(nin))
    fname = rule.name.split(".")[-1]
    source = f"def {fname}({args}):\n    return {rule.name}({args})\n"
    path = emit.write_module(source, f"op_{fname}")
    from .frontend.normalize import base_namespace
    return emit.load_function(source, path, fname, base_namespace())


def _origin(fn: Callable) -> str:
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno} ({fn.__qualname__})"


def _build(src_fn: Callable, transform: str, argnums: tuple[int, ...], tuple_out: bool, has_aux: bool) -> Generated:
    key = (src_fn, getattr(src_fn, "__code__", None), transform, argnums, tuple_out, has_aux)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    parsed = parse_function(src_fn)
    nparams = len(parsed.node.args.args)
    for a in argnums:
        if not -nparams <= a < nparams:
            raise ArgumentError(f"argnums={a} is out of range: {parsed.source.qualname} takes {nparams} "
                                f"positional argument{'s' if nparams != 1 else ''}")
    argnums = tuple(a % nparams for a in argnums)
    nf = normalize(parsed)
    import re
    name = f"{re.sub(r'[^A-Za-z0-9_]', '', src_fn.__name__) or 'fn'}_{transform}"
    spec = ReverseSpec(wrt=[nf.params[a] for a in argnums], mode=transform, has_aux=has_aux,
                       tuple_out=tuple_out, name=name)
    fdef = reverse(nf, spec)
    fdef = cleanup.optimize(fdef)
    body = emit.to_source(fdef)
    origin = _origin(src_fn)
    desc = f"{transform}(argnums={argnums if tuple_out else argnums[0]}{', has_aux=True' if has_aux else ''}) of {origin}"
    text = emit.header(desc, nf.namespace, body) + body
    path = emit.write_module(text, name)
    fn = emit.load_function(text, path, name, nf.namespace)
    gen = Generated(fn, text, path, origin)
    with _LOCK:
        _CACHE[key] = gen
    return gen


def _check_differentiable(x: Any, position: int, fn: Callable) -> None:
    kind = np.asarray(x).dtype.kind if not isinstance(x, (tuple, list, dict)) else "f"
    if kind in "iub":
        what = type(x).__name__ if not isinstance(x, np.ndarray) else f"an array of dtype {x.dtype}"
        raise NonDifferentiableError(
            f"argument {position} of {fn.__qualname__} is {what}: differentiation needs float inputs "
            f"(integer and boolean values have no derivative)",
            hint="pass floats (e.g. 3.0 or x.astype(float)), or leave this argument out of argnums")
    if kind == "c":
        raise NonDifferentiableError(
            f"argument {position} of {fn.__qualname__} is complex: s2s differentiates real inputs only",
            hint="split it into real and imaginary parts")
    if kind not in "f":
        raise NonDifferentiableError(f"argument {position} of {fn.__qualname__} is not a float array or number "
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

    def generated(self) -> Generated:
        if self._gen is None:
            self._gen = _build(source_function(self.fun), self.transform, self.argnums, self.tuple_out,
                               self.has_aux)
        return self._gen

    @property
    def source(self) -> str:
        return self.generated().source

    def __call__(self, *args):
        gen = self.generated()
        src = source_function(self.fun)
        n = len(args)
        for a in self.argnums:
            if not -n <= a < n:
                raise ArgumentError(f"argnums={a} is out of range for a call with {n} arguments")
            _check_differentiable(args[a], a % n, src)
        try:
            return gen.fn(*args)
        except NonDifferentiableError as exc:
            raise NonDifferentiableError(f"{exc.message} (in {gen.origin})", hint=exc.hint) from None

    def __repr__(self):
        return f"<s2s {self.transform} of {getattr(self.fun, '__qualname__', self.fun)!r}>"


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
    t = Transformed(fun, "vjp", tuple(range(len(primals))))
    gen = t.generated()
    src = source_function(fun)
    for i, p in enumerate(primals):
        _check_differentiable(p, i, src)
    out = fun(*primals)

    def vjp_fn(cotangent):
        if np.shape(cotangent) != np.shape(out):
            raise ArgumentError(f"vjp_fn expects a cotangent of shape {np.shape(out)}, got {np.shape(cotangent)}")
        return gen.fn(cotangent, *primals)
    vjp_fn.source = gen.source
    return out, vjp_fn


def show(fun: Callable, transform: str = "grad", argnums: int | Sequence[int] = 0, has_aux: bool = False) -> str:
    """The generated source of `transform(fun)` (a string; also in a real file)."""
    if transform not in _TRANSFORMS:
        raise ArgumentError(f"unknown transform {transform!r}; choose one of {', '.join(_TRANSFORMS)}")
    if transform == "vjp":
        n = len(inspect.signature(source_function(fun)).parameters)
        argnums = tuple(range(n))
    return Transformed(fun, transform, argnums, has_aux).source
