"""Checking machinery for the real-program corpus: pytrees, finite differences, comparisons.

Nothing here imports s2s (the reference must not depend on the compiler under test), and
nothing here uses s2s's own pytree code: arguments are flattened by this module's
``flatten``/``unflatten``, which know dicts (sorted keys), lists, tuples, namedtuples and
dataclasses; every other object is a leaf.

The finite-difference gradient is a central difference with one Richardson step,
``(4 D(h/2) - D(h)) / 3`` with ``D(h) = (f(x+h) - f(x-h)) / 2h`` and ``h = step * max(1, |x_i|)``:
its error is O(h^4) + O(eps |f| / h), about 1e-12 relative for the default step 1e-4, so a
tolerance of 1e-6 on the gradient is far above the reference's own error. The function
is called on fresh copies of the arguments each time (some programs write into them).
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np

__all__ = ["flatten", "unflatten", "fd_grad", "compare_trees", "snapshot", "assert_unchanged",
           "batch_args", "example_of", "max_abs"]


# ---------------------------------------------------------------------------
# Pytrees (independent of s2s.pytree)
# ---------------------------------------------------------------------------

def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree):
    """(leaves, structure). Leaves: everything that is not a dict/list/tuple/dataclass."""
    leaves = []

    def go(x):
        if _is_namedtuple(x):
            return ("namedtuple", type(x), tuple(go(v) for v in x))
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            names = tuple(f.name for f in dataclasses.fields(x))
            return ("dataclass", type(x), names, tuple(go(getattr(x, n)) for n in names))
        if isinstance(x, tuple):
            return ("tuple", tuple(go(v) for v in x))
        if isinstance(x, list):
            return ("list", tuple(go(v) for v in x))
        if isinstance(x, dict):
            keys = tuple(sorted(x))
            return ("dict", keys, tuple(go(x[k]) for k in keys))
        leaves.append(x)
        return ("leaf",)

    return leaves, go(tree)


def unflatten(structure, leaves):
    it = iter(leaves)

    def go(s):
        kind = s[0]
        if kind == "leaf":
            return next(it)
        if kind == "namedtuple":
            return s[1](*[go(c) for c in s[2]])
        if kind == "dataclass":
            return s[1](**{n: go(c) for n, c in zip(s[2], s[3])})
        if kind == "tuple":
            return tuple(go(c) for c in s[1])
        if kind == "list":
            return [go(c) for c in s[1]]
        if kind == "dict":
            return {k: go(c) for k, c in zip(s[1], s[2])}
        raise AssertionError(s)

    out = go(structure)
    rest = list(it)
    assert not rest, f"{len(rest)} leaves left over"
    return out


def _describe(structure):
    """The structure with dataclass/namedtuple classes named, for messages."""
    return repr(structure)


# ---------------------------------------------------------------------------
# Finite differences
# ---------------------------------------------------------------------------

def _fresh(args):
    return tuple(copy.deepcopy(a) for a in args)


def fd_grad(f, args, argnums=0, kwargs=None, step=1e-4):
    """Richardson-extrapolated central differences of scalar ``f(*args, **kwargs)``.

    Returns one gradient tree per entry of ``argnums`` (a tuple when ``argnums`` is a tuple),
    with the structure of the argument; float leaves give floats, array leaves float arrays.
    """
    kwargs = kwargs or {}
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def value(a):
        out = f(*_fresh(a), **copy.deepcopy(kwargs))
        arr = np.asarray(out, dtype=np.float64)
        if arr.shape != ():
            raise AssertionError(f"the program must return a scalar, got shape {arr.shape}")
        return float(arr)

    grads = []
    for n in nums:
        leaves, structure = flatten(args[n])
        g_leaves = []
        for li, leaf in enumerate(leaves):
            is_array = isinstance(leaf, np.ndarray)
            x = np.array(leaf, dtype=np.float64, copy=True)
            g = np.zeros(x.shape)
            flat_x = x.reshape(-1)
            flat_g = g.reshape(-1)
            for i in range(flat_x.size):
                def at(delta):
                    moved = flat_x.copy()
                    moved[i] = moved[i] + delta
                    new_leaf = moved.reshape(x.shape) if is_array else float(moved[0])
                    new_leaves = list(leaves)
                    new_leaves[li] = new_leaf
                    a = list(args)
                    a[n] = unflatten(structure, new_leaves)
                    return value(a)
                h = step * max(1.0, abs(float(flat_x[i])))

                def central(hh):
                    return (at(hh) - at(-hh)) / (2.0 * hh)
                flat_g[i] = (4.0 * central(h / 2.0) - central(h)) / 3.0
            g_leaves.append(g if is_array else float(g))
        grads.append(unflatten(structure, g_leaves))
    return tuple(grads) if not isinstance(argnums, int) else grads[0]


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------

def max_abs(tree):
    leaves, _ = flatten(tree)
    return max((float(np.max(np.abs(np.asarray(v, dtype=np.float64)))) if np.size(v) else 0.0)
               for v in leaves) if leaves else 0.0


def compare_trees(got, expected, rtol, what):
    """Same structure, same leaf shapes, finite float values, and per leaf
    ``max|got - expected| <= rtol * max(max|expected_leaf|, 1e-3 * max|expected|)``."""
    g_leaves, g_struct = flatten(got)
    e_leaves, e_struct = flatten(expected)
    if g_struct != e_struct:
        raise AssertionError(f"{what}: structure {_describe(g_struct)} != expected {_describe(e_struct)}")
    scale = max_abs(expected)
    for k, (g, e) in enumerate(zip(g_leaves, e_leaves)):
        ga = np.asarray(g)
        ea = np.asarray(e, dtype=np.float64)
        if ga.shape != ea.shape:
            raise AssertionError(f"{what}: leaf {k} has shape {ga.shape}, expected {ea.shape}")
        if not np.issubdtype(ga.dtype, np.floating):
            raise AssertionError(f"{what}: leaf {k} has dtype {ga.dtype}, expected a float")
        if not np.all(np.isfinite(ga)):
            raise AssertionError(f"{what}: leaf {k} is not finite: {ga!r}")
        bound = rtol * max(float(np.max(np.abs(ea))) if ea.size else 0.0, 1e-3 * scale)
        err = float(np.max(np.abs(ga - ea))) if ea.size else 0.0
        if not err <= bound:
            raise AssertionError(
                f"{what}: leaf {k} differs by {err:.3e} (allowed {bound:.3e})\n"
                f"  got:      {np.array2string(ga, precision=10)}\n"
                f"  expected: {np.array2string(ea, precision=10)}")


# ---------------------------------------------------------------------------
# Arguments unchanged
# ---------------------------------------------------------------------------

def snapshot(args, kwargs=None):
    return copy.deepcopy((tuple(args), dict(kwargs or {})))


def _same(a, b, path):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{path}: type changed"
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: shape/dtype changed"
        if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            return f"{path}: values changed"
        return None
    if isinstance(a, dict):
        if not isinstance(b, dict) or set(a) != set(b):
            return f"{path}: keys changed"
        for k in a:
            r = _same(a[k], b[k], f"{path}[{k!r}]")
            if r:
                return r
        return None
    if isinstance(a, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{path}: container changed"
        for i, (x, y) in enumerate(zip(a, b)):
            r = _same(x, y, f"{path}[{i}]")
            if r:
                return r
        return None
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            r = _same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if r:
                return r
        return None
    if isinstance(a, (float, int, str, bool, np.generic)) or a is None:
        return None if (a == b or (a != a and b != b)) else f"{path}: {a!r} became {b!r}"
    return None   # other objects: not compared


def assert_unchanged(before, args, kwargs=None):
    now = (tuple(args), dict(kwargs or {}))
    problem = _same(before, now, "args")
    if problem:
        raise AssertionError(f"the caller's arguments were changed by the transformed function: {problem}")


# ---------------------------------------------------------------------------
# Batches for vmap
# ---------------------------------------------------------------------------

def batch_args(make_args, in_axes, size):
    """Stack the arguments of ``make_args(seed)`` for ``seed in range(size)`` along axis 0
    where ``in_axes`` has 0; take the arguments of seed 0 where it has None."""
    examples = [make_args(seed) for seed in range(size)]
    out = []
    for i, axis in enumerate(in_axes):
        if axis is None:
            out.append(examples[0][i])
            continue
        assert axis == 0
        flats = [flatten(ex[i]) for ex in examples]
        structure = flats[0][1]
        leaves = [np.stack([np.asarray(fl[0][k], dtype=np.float64) for fl in flats])
                  for k in range(len(flats[0][0]))]
        out.append(unflatten(structure, leaves))
    return tuple(out), examples


def example_of(batched_tree, b):
    leaves, structure = flatten(batched_tree)
    return unflatten(structure, [np.asarray(v)[b] for v in leaves])
