"""Low-precision inputs: float32 (and float16) arguments are computed in float64 and the results
given back in the inputs' precision, as JAX gives float32 results for float32 inputs.

Why not compute in float32: Numba's typing of mixed expressions differs from NumPy 2's (a float32
array times a Python float is float64 under Numba, float32 under NumPy), so compiled and Python code
would not agree; in float64 every path computes the same numbers, then rounds once.
"""
from __future__ import annotations

import numpy as np

_NARROW = (np.float32, np.float16)


def _narrow_dtype(x):
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return x.dtype if x.dtype.type in _NARROW else (np.dtype(np.float64) if x.dtype.kind == "f" else None)
    if isinstance(x, (tuple, list)):
        kinds = [d for d in (_narrow_dtype(e) for e in x) if d is not None]
        return np.result_type(*kinds) if kinds else None
    if isinstance(x, dict):
        return _narrow_dtype(list(x.values()))
    return None


def _map_containers(leaf, x):
    """leaf applied to every leaf of x, through tuples (not named ones), lists and dicts."""
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_map_containers(leaf, e) for e in x)
    if isinstance(x, list):
        return [_map_containers(leaf, e) for e in x]
    if isinstance(x, dict):
        return {k: _map_containers(leaf, v) for k, v in x.items()}
    return leaf(x)


def _widen_leaf(x):
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype.type in _NARROW:
        return x.astype(np.float64) if isinstance(x, np.ndarray) else np.float64(x)
    return x


def _refuse_sparse(x):
    """A scipy.sparse matrix passed as an argument: not an array (NumPy's functions and s2s's rules
    do not know it), and not differentiated; s2s multiplies by one the code reads (frontend/foreign.py)."""
    from .errors import ArgumentError
    raise ArgumentError(
        f"an argument is a scipy.sparse {type(x).__name__}: s2s neither differentiates sparse matrices nor takes "
        f"them as arguments; it multiplies dense arrays by a sparse matrix the function reads from a global or a "
        f"closure (`A @ x`, `x @ A`, `A.dot(x)`, with the derivative A.T @ g). Make the matrix a global or "
        f"closure value of the function you transform (`loss = lambda x: f(A, x)`), or pass A.toarray()")


def _plain_array(x):
    """x, or for an array subclass that only changes where the data lives (np.memmap) the plain
    array; subclasses that change what operators mean (np.matrix: `*` is a matrix product, masked
    arrays: masked entries) are refused: NumPy, s2s's rules and Numba would each give another answer."""
    if type(x).__module__.startswith("scipy.sparse"):
        _refuse_sparse(x)
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray:
        if isinstance(x, np.memmap):
            return x.view(np.ndarray)
        from .errors import ArgumentError
        raise ArgumentError(
            f"an argument is a {type(x).__module__}.{type(x).__qualname__}, a subclass of np.ndarray whose "
            f"operators do not mean what they mean on arrays (np.matrix: `*` is a matrix product and "
            f"results stay 2-d; masked arrays skip masked entries); s2s differentiates plain arrays. "
            f"Pass np.asarray(x) (for a masked array: x.filled(value) or x.compressed()), and write "
            f"matrix products with `@`")
    return x


def widen(args: tuple) -> tuple[tuple, object]:
    """(args with float32/float16 leaves as float64, the precision to give results back in or None).
    Array subclasses are viewed as plain arrays or refused first (_plain_array)."""
    for a in args:      # the common case, quickly: plain arrays and numbers, no float32/float16
        t = type(a)
        if t is np.ndarray:
            if a.dtype.type in _NARROW:
                break
        elif t in _NARROW or t is tuple or t is list or t is dict or isinstance(a, np.ndarray):
            break
        elif t.__module__.startswith("scipy.sparse"):
            _refuse_sparse(a)
    else:
        return args, None
    args = tuple(_map_containers(_plain_array, a) for a in args)
    dtype = _narrow_dtype(list(args))
    if dtype is None or dtype.type not in _NARROW:
        if not any(_narrow_dtype(a) is not None and _narrow_dtype(a).type in _NARROW for a in args):
            return args, None
        return tuple(_map_containers(_widen_leaf, a) for a in args), None
    return tuple(_map_containers(_widen_leaf, a) for a in args), dtype.type


def narrow(out, dtype):
    """Floating results (float64 arrays, NumPy and Python floats) in `dtype`."""
    if dtype is None:
        return out
    if isinstance(out, np.ndarray):
        return out.astype(dtype) if out.dtype.kind == "f" else out
    if isinstance(out, (float, np.floating)) and not isinstance(out, bool):
        return dtype(out)
    if isinstance(out, tuple) and not hasattr(out, "_fields"):
        return tuple(narrow(e, dtype) for e in out)
    if isinstance(out, list):
        return [narrow(e, dtype) for e in out]
    if isinstance(out, dict):
        return {k: narrow(v, dtype) for k, v in out.items()}
    return out
