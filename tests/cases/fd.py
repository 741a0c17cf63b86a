"""Central finite differences, the reference every gradient test compares to.

Nothing here imports s2s at module level, so the corpus can be checked against
plain NumPy (and these helpers collected) even when the compiler is broken.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "numeric_grad",
    "numeric_vjp",
    "assert_close",
    "check_grads",
    "check_vjp",
    "copy_args",
]


def copy_args(args):
    """Deep-ish copy of a tuple of arguments (arrays copied, scalars as is)."""
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def _as_float_scalar(value, where):
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 0:
        raise ValueError(f"{where} must return a scalar, got shape {arr.shape}")
    return float(arr)


def numeric_grad(f, args, argnum, eps=1e-6):
    """Central finite-difference gradient of scalar ``f(*args)`` w.r.t. ``args[argnum]``.

    ``args[argnum]`` may be a Python float, a NumPy float scalar or a float array
    of any shape (0-d included). The step for each entry is ``eps * max(1, |x_i|)``
    so large inputs are not swamped by round-off. Returns a float for a scalar
    argument and a float64 array of the argument's shape otherwise. The caller's
    arguments are never modified.
    """
    args = list(args)
    x0 = args[argnum]
    is_array = isinstance(x0, np.ndarray)
    x = np.array(x0, dtype=np.float64, copy=True, order="C")   # C order: reshape(-1) is a view
    grad = np.zeros(x.shape)
    flat_x = x.reshape(-1)
    flat_g = grad.reshape(-1)

    def rebuild(flat):
        value = flat.reshape(x.shape)
        if is_array:
            return value.copy()
        return float(value)  # scalar in, scalar out

    for i in range(flat_x.size):
        h = eps * max(1.0, abs(flat_x[i]))
        orig = flat_x[i]
        plus = flat_x.copy()
        minus = flat_x.copy()
        plus[i] = orig + h
        minus[i] = orig - h
        # Use the actually representable step to cut round-off.
        h2 = plus[i] - minus[i]
        args_p = list(copy_args(args))
        args_m = list(copy_args(args))
        args_p[argnum] = rebuild(plus)
        args_m[argnum] = rebuild(minus)
        fp = _as_float_scalar(f(*args_p), "f")
        fm = _as_float_scalar(f(*args_m), "f")
        flat_g[i] = (fp - fm) / h2

    if is_array:
        return grad
    return float(grad)


def numeric_vjp(f, args, argnum, cotangent, eps=1e-6):
    """Finite-difference VJP: the gradient of ``sum(f(*args) * cotangent)``."""
    u = np.asarray(cotangent, dtype=np.float64)

    def scalarized(*a):
        return np.sum(np.asarray(f(*a), dtype=np.float64) * u)

    return numeric_grad(scalarized, args, argnum, eps=eps)


def _fmt(x):
    with np.printoptions(precision=10, suppress=False, linewidth=120):
        return repr(np.asarray(x))


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, what="gradient"):
    """Scale-aware closeness: ``|a - e| <= atol * max(1, max|e|) + rtol * |e|``.

    Also checks the shape. On failure prints (and raises with) both values and
    their difference.
    """
    a = np.asarray(actual)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        msg = (f"{what}: shape mismatch, got {a.shape}, expected {e.shape}\n"
               f"  got:      {_fmt(a)}\n  expected: {_fmt(e)}")
        print(msg)
        raise AssertionError(msg)
    if not np.issubdtype(a.dtype, np.floating):
        msg = f"{what}: expected a float result, got dtype {a.dtype}: {_fmt(a)}"
        print(msg)
        raise AssertionError(msg)
    scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
    tol = atol * scale + rtol * np.abs(e)
    err = np.abs(a.astype(np.float64) - e)
    bad = ~(err <= tol)  # NaN counts as bad
    if np.any(bad):
        msg = (f"{what} mismatch ({int(np.sum(bad))} of {e.size} entries; "
               f"max abs err {float(np.nanmax(err)) if err.size else 0.0:.3e}, "
               f"rtol={rtol}, atol={atol}*{scale:.3g})\n"
               f"  got:      {_fmt(a)}\n  expected: {_fmt(e)}\n  diff:     {_fmt(a - e)}")
        print(msg)
        raise AssertionError(msg)


def _normalize_argnums(argnums):
    if isinstance(argnums, int):
        return (argnums,), False
    return tuple(argnums), True


def check_grads(f, args, argnums=0, rtol=1e-5, atol=1e-6, eps=1e-6):
    """Compare ``s2s.grad(f, argnums)(*args)`` with central finite differences.

    Returns the s2s gradient (as s2s returned it). Asserts that the arguments
    were not modified by the transformed function.
    """
    import s2s  # imported lazily: the corpus must not depend on the compiler

    nums, as_tuple = _normalize_argnums(argnums)
    before = copy_args(args)
    got = s2s.grad(f, argnums=argnums)(*args)
    for i, (b, a) in enumerate(zip(before, args)):
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f"argument {i} was modified by grad")
    if as_tuple:
        assert isinstance(got, tuple), f"argnums={argnums!r} must give a tuple, got {type(got)}"
        assert len(got) == len(nums), f"expected {len(nums)} gradients, got {len(got)}"
        got_list = list(got)
    else:
        got_list = [got]
    for g, n in zip(got_list, nums):
        expected = numeric_grad(f, args, n, eps=eps)
        assert_close(g, expected, rtol=rtol, atol=atol,
                     what=f"grad of {getattr(f, '__name__', f)!s} w.r.t. argument {n}")
    return got


def check_vjp(f, args, rng=None, rtol=1e-5, atol=1e-6, eps=1e-6):
    """Check ``s2s.vjp(f, *args)`` with a random cotangent against finite differences.

    Checks the primal output equals ``f(*args)`` and that ``vjp_fn(u)`` is a tuple
    holding, for every primal, the finite-difference gradient of ``sum(f(x) * u)``.
    """
    import s2s

    if rng is None:
        rng = np.random.default_rng(0)
    expected_out = np.asarray(f(*copy_args(args)))
    out, vjp_fn = s2s.vjp(f, *args)
    assert_close(out, expected_out, rtol=1e-10, atol=1e-12, what="vjp primal output")
    u = rng.standard_normal(expected_out.shape)
    if expected_out.ndim == 0:
        u = float(u)
    cts = vjp_fn(u)
    assert isinstance(cts, tuple), f"vjp_fn must return a tuple, got {type(cts)}"
    assert len(cts) == len(args), f"expected {len(args)} cotangents, got {len(cts)}"
    for n, ct in enumerate(cts):
        expected = numeric_vjp(f, args, n, u, eps=eps)
        assert_close(ct, expected, rtol=rtol, atol=atol,
                     what=f"vjp of {getattr(f, '__name__', f)!s} w.r.t. primal {n}")
    return out, cts
