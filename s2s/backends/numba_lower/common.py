"""What the Numba lowering modules share.

`overload` registers a helper's Numba implementation (an `@overload` typer: argument types ->
implementation, or None), records the helper in OVERLOADED (numba_cpu compiles the others from their
plain-NumPy bodies) and compiles it with bounds checks (CHECKED); `compiled_helper` is how an
overload calls the plain-NumPy helper it picks at typing time (numba_cpu registers the compiler);
the type predicates the typers test; `impl_from_source` for implementations generated per
argument types; `blas_operand`, an array as BLAS takes it (the products' lowerings).
"""
from __future__ import annotations

import functools
import types as pytypes

import numba
import numpy as np
from numba import types
from numba.extending import overload


OVERLOADED: set[int] = set()
# How a plain-NumPy helper becomes an njit function (numba_cpu fills this in on import): an
# overload that picks one of several helpers at typing time calls the one it picks through it.
_HELPER_COMPILER: list = []


def set_helper_compiler(compile_helper) -> None:
    _HELPER_COMPILER[:] = [compile_helper]


def compiled_helper(fn):
    """The njit version of the plain-NumPy helper fn (its own helper calls compiled too)."""
    if not _HELPER_COMPILER:
        raise RuntimeError("s2s: no helper compiler registered (import s2s.backends.numba_cpu)")
    return _HELPER_COMPILER[0](fn)
_overload = overload


# Helpers index with the user's indices (add_at(dx, i, g) is the adjoint of x[i]): out of range
# must raise IndexError, as the generated Python does, never write past an array.  (The jit flag
# does not reach overloads: each is compiled with its own options.)
# Division by zero gives NumPy's answer (inf, nan; 0 for integer // and %), never Python's
# ZeroDivisionError: every function s2s compiles uses Numba's error_model='numpy' (generated code
# and its fused loops in numba_cpu.compile_function, the helpers, these overloads, the cached
# kernels; Numba's CUDA target has it by default).  Part of jit's cache key (transformations/jit.py).
ERROR_MODEL = "numpy"
CHECKED = {"boundscheck": True, "error_model": ERROR_MODEL}


def overload(fn, *args, **kwargs):   # noqa: F811 - records which helpers have a Numba implementation
    """Numba's `overload`, compiled with CHECKED; each implementation the typer picks is compiled
    with `cache=True` when Numba can keep it on disk (`cachable`), so a user function's compile
    loads the helper's machine code instead of typing and lowering it again."""
    OVERLOADED.add(id(fn))
    kwargs["jit_options"] = {**CHECKED, **kwargs.get("jit_options", {})}

    def register(typer):
        options: list = []      # the template's jit options, found once it is registered

        @functools.wraps(typer)     # (Numba reads the typer's parameters through __wrapped__)
        def typer_choosing_cache(*arg_types, **kw_types):
            impl = typer(*arg_types, **kw_types)
            # Numba makes the implementation's dispatcher with these options right after this call,
            # under its compiler lock
            options[0]["cache"] = isinstance(impl, pytypes.FunctionType) and cachable(impl)
            return impl
        _overload(fn, *args, **kwargs)(typer_choosing_cache)
        options.append(_registered_template(fn, typer_choosing_cache)._jit_options)
        return typer
    return register


def _registered_template(fn, typer):
    from numba.core.typing.templates import builtin_registry
    for key, ty in reversed(builtin_registry.globals):
        if key is fn:
            for template in ty.templates:
                if getattr(template, "_overload_func", None) is typer:
                    return template
    raise RuntimeError(f"s2s: the overload of {fn} was not registered")


def cachable(impl) -> bool:
    """Whether Numba can keep `impl` on disk and find it again: a function of a file (not exec'd
    source, whose globals the cache key would miss) whose closure holds only values that pickle the
    same in every process (Numba keys the cache on the pickled closure; a compiled function
    pickles with an id of its process: never found again, and one more file per run)."""
    if impl.__code__.co_filename.startswith("<"):
        return False
    return all(_same_in_every_process(c.cell_contents) for c in impl.__closure__ or ())


def _same_in_every_process(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic, np.dtype, type,
                                            types.Type, np.ufunc, pytypes.BuiltinFunctionType)):
        return True
    if isinstance(value, (tuple, list, frozenset)):
        return all(_same_in_every_process(v) for v in value)
    if isinstance(value, dict):
        return all(_same_in_every_process(k) and _same_in_every_process(v) for k, v in value.items())
    # a module-level function or NumPy function: pickled by its name
    return callable(value) and not isinstance(value, numba.core.dispatcher.Dispatcher) \
        and "<locals>" not in getattr(value, "__qualname__", "<locals>") \
        and getattr(value, "__module__", None) is not None


def is_array(t) -> bool:
    return isinstance(t, types.Array)


def is_none(t) -> bool:
    return t is None or isinstance(t, (types.NoneType, types.Omitted)) and getattr(t, "value", None) is None


def impl_from_source(src: str, names: dict | None = None):
    """The function `impl` defined by `src`, with `names` (what it calls) as its globals: for
    implementations whose statements depend on the argument types (one check per tuple
    element, one index form per layout)."""
    glb: dict = dict(names or {})
    exec(src, glb)
    return glb["impl"]


def _scalarish(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean)) or (is_array(t) and t.ndim == 0)


def is_complex(t) -> bool:
    return isinstance(getattr(t, "dtype", t), types.Complex)


def np_dtype(t):
    return numba.np.numpy_support.as_dtype(types.unliteral(t))


def blas_operand(x):
    """x as BLAS takes it: C- or F-contiguous arrays as they are (a transpose is a flag to gemm,
    not a copy: h.T @ g on 256x512 floats 0.54 -> 0.17 ms), other layouts copied."""
    return np.ascontiguousarray(x)


@overload(blas_operand, inline="always")
def _blas_operand_impl(x):
    if is_array(x) and x.layout in ("C", "F"):
        return lambda x: x
    return lambda x: np.ascontiguousarray(x)
