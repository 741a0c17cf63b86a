"""The public transformations: grad, value_and_grad, vjp, jvp, jacfwd, jacrev, hessian, vmap, jit, show.

Each returns a transformation object (s2s/transformations/): the object holds what it wraps and
asks the pipeline driver (s2s/pipeline.py) for generated source, cached by the function's
identity and the transform's arguments, so `grad(f)` twice generates once.
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence

from . import log
from .errors import ArgumentError
from .frontend.hooks import register_transform_factories
from .transformations.grad import Transformed, jvp_pair, vjp_pair
from .transformations.jacobians import Hessian, Jacobian
from .transformations.jit import Jitted
from .transformations.sources import source_function
from .transformations.pmap import Pmapped, pmap  # noqa: F401  (re-exported)
from .transformations.vmap import Batched
from .backends import devices as _devices

log.configure_from_env()     # S2S_LOG=1: each stage's time on stderr

_TRANSFORMS = ("grad", "value_and_grad", "vjp", "jvp", "vmap", "jit", "pmap")


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
    return vjp_pair(fun, primals)


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
    return jvp_pair(fun, primals, tangents)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0):
    """Jacobian by forward mode: shape `out.shape + in.shape` (as JAX); s2s can transform it again."""
    return Jacobian(fun, "fwd", argnums)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0):
    """Jacobian by reverse mode: shape `out.shape + in.shape` (as JAX); s2s can transform it again."""
    return Jacobian(fun, "rev", argnums)


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
    if transform == "pmap":
        # the per-device source: what every device runs (pmap(grad(f)): pass s2s.grad(f))
        pm = fun if isinstance(fun, Pmapped) else Pmapped(fun)
        return pm.per_device_source(len(inspect.signature(source_function(pm.fun)).parameters))
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


def jit(fun: Callable | None = None, target: str = "cpu", cache: bool = True, fallback: bool = False,
        wait: bool | None = None, static_argnums=None, static_argnames=None):
    """Compile `fun`'s generated source with Numba (nopython mode).

    Works on plain functions and on every transform: `jit(grad(f))`, `jit(vmap(grad(f)))`, ...
    The first calls with new argument types answer at once with the generated Python (the code
    the unjitted transform runs: the same answers) while Numba compiles on a background thread;
    later calls run the machine code once it is ready (`.ready`, `.wait()`; `.compile(*args)`
    compiles ahead of a run).
    Args:
        target: "cpu" (numba.njit), "parallel" (njit(parallel=True)) or "cuda" (numba.cuda kernels).
        cache: keep compiled machine code on disk next to the generated file.
        fallback: if Numba cannot compile, warn once and run the generated Python instead.
        wait: compile before answering (default: the environment variable S2S_JIT_WAIT=1, else no).
        static_argnums, static_argnames: arguments (positions, names) whose values are part of the
            code, as in JAX: each distinct hashable value (a mode string, a step count, a shape, a
            function) compiles its own version, with branches on it decided when s2s transforms.
    """
    if fun is None:
        return lambda f: Jitted(f, target, cache, fallback, wait, static_argnums, static_argnames)
    return Jitted(fun, target, cache, fallback, wait, static_argnums, static_argnames)


def device_count(backend: str | None = None) -> int:
    """The number of devices pmap can use (for mpi: over every rank)."""
    return len(_devices.devices(backend))


def devices(backend: str | None = None) -> list:
    """The devices of a backend ("cpu", "cuda", "mpi"; default: mpi under mpiexec, else cpu)."""
    return _devices.devices(backend)


def local_devices(backend: str | None = None) -> list:
    """The devices this process drives."""
    return _devices.local_devices(backend)


def local_device_count(backend: str | None = None) -> int:
    return len(_devices.local_devices(backend))


def process_index(backend: str | None = None) -> int:
    """This process's index among the processes of a multi-process (MPI) run; 0 otherwise."""
    return _devices.process_index(backend)


def process_count(backend: str | None = None) -> int:
    return _devices.process_count(backend)


# calls of these inside transformed code build their transform while normalizing (frontend/hooks.py)
register_transform_factories(vmap, grad, value_and_grad, jacfwd, jacrev, hessian, pmap)
