"""Collectives as generated code and users' code call them: psum, pmean, pmax, pmin, all_gather,
ppermute, all_to_all, pswapaxes, axis_index, axis_size, and what their adjoints call.

A collective names an axis (`s2s.psum(g, "batch")`) that an enclosing pmap binds
(devices.py); each is one exchange of the axis's group and NumPy on what comes back.
Every device computes the same sums in the same (device) order, so replicas stay equal to the
last bit.  The Numba lowering (collectives_numba.py) calls these in object mode;
the rules (s2s/ops/collectives/rules.py) give their adjoints, tangents and batching.
"""
from __future__ import annotations


import numpy as np

from .. import pytree
from ..errors import CollectiveError
from .devices import Binding, bound



def _mpi_agreed(x, axis_name, op: str) -> int:
    """1 when axis_name is an MPI group and every rank has agreed on this collective (compiled code
    then moves the data with numba-mpi), 0 for other groups (the collective runs here)."""
    b = bound(axis_name, op)
    if getattr(b.group, "kind", None) != "mpi":
        return 0
    b.group.agree(np.asarray(x), op)
    return 1


def axis_size(axis_name) -> int:
    """The number of devices along axis `axis_name`."""
    return bound(axis_name, "axis_size").group.size


# ----- the collectives --------------------------------------------------------------------------
def _on_device(fn):
    """A collective on a GPU array (numba.cuda's device arrays, the cuda backend) is staged through
    the host: copied out, exchanged, its result copied to the GPU the calling thread has current."""
    def staged(x, axis_name, *args, **kwargs):
        if not hasattr(x, "copy_to_host"):
            return fn(x, axis_name, *args, **kwargs)
        from numba import cuda
        return cuda.to_device(np.ascontiguousarray(fn(x.copy_to_host(), axis_name, *args, **kwargs)))
    staged.__name__, staged.__qualname__, staged.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    staged.__wrapped__ = fn
    return staged


def _values(x, axis_name, op: str) -> tuple[list, Binding]:
    b = bound(axis_name, op)
    values = b.group.exchange(b.index, x, op)
    shapes = {np.shape(v) for v in values}
    if len(shapes) > 1:
        raise CollectiveError(f"{op}: the devices hand in values of different shapes {sorted(shapes)}")
    return values, b


def _reduce(x, axis_name, how: str, op: str):
    b = bound(axis_name, op)
    group = b.group
    if not pytree.is_leaf(pytree.tree_flatten(x)[1]):       # (a tuple/list/dict of arrays: leaf by leaf)
        return pytree.tree_map(lambda v: _reduce(v, axis_name, how, op), x)
    if how == "sum" and np.asarray(x).dtype == np.bool_:
        x = np.asarray(x, dtype=np.int64)        # (a sum of flags counts them, as JAX's psum does)
    if hasattr(group, "allreduce"):
        return group.allreduce(x, how, op)
    values, _ = _values(x, axis_name, op)
    total = values[0]
    for v in values[1:]:        # (device order: every device adds in the same order)
        total = total + v if how == "sum" else (np.maximum(total, v) if how == "max" else np.minimum(total, v))
    return total


@_on_device
def psum(x, axis_name):
    """The sum of x over the devices of axis `axis_name` (every device gets it)."""
    return _reduce(x, axis_name, "sum", "psum")


@_on_device
def pmean(x, axis_name):
    """The mean of x over the devices of axis `axis_name`."""
    n = axis_size(axis_name)
    return pytree.tree_map(lambda t: t / n, psum(x, axis_name))


@_on_device
def pmax(x, axis_name):
    """The elementwise maximum of x over the devices of axis `axis_name`."""
    return _reduce(x, axis_name, "max", "pmax")


@_on_device
def pmin(x, axis_name):
    """The elementwise minimum of x over the devices of axis `axis_name`."""
    return _reduce(x, axis_name, "min", "pmin")


def axis_index(axis_name):
    """This device's index along axis `axis_name` (0 .. axis size - 1)."""
    return bound(axis_name, "axis_index").index


@_on_device
def all_gather(x, axis_name, axis=0, tiled=False):
    """Every device's x, stacked along a new axis `axis` (concatenated along `axis` if tiled)."""
    values, _ = _values(np.asarray(x), axis_name, "all_gather")
    if tiled:
        return np.concatenate([np.atleast_1d(v) for v in values], axis=axis)
    return np.stack(values, axis=axis)


def _check_perm(perm, n: int) -> list:
    pairs = [tuple(int(i) for i in p) for p in perm]
    if any(len(p) != 2 for p in pairs):
        raise CollectiveError(f"ppermute: perm must be (source, destination) pairs, got {perm!r}")
    srcs, dsts = [p[0] for p in pairs], [p[1] for p in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise CollectiveError(f"ppermute: each device may send once and receive once; perm {perm!r} repeats one")
    if any(not 0 <= i < n for i in srcs + dsts):
        raise CollectiveError(f"ppermute: perm {perm!r} names a device outside 0..{n - 1}")
    return pairs


@_on_device
def ppermute(x, axis_name, perm):
    """x sent along the (source, destination) pairs of `perm`; a device no pair sends to gets zeros."""
    values, b = _values(np.asarray(x), axis_name, "ppermute")
    for src, dst in _check_perm(perm, b.group.size):
        if dst == b.index:
            out = np.array(values[src], copy=True)
            return out if np.ndim(x) else out[()]
    return np.zeros_like(np.asarray(x)) if np.ndim(x) else np.zeros_like(np.asarray(x))[()]


def inverse_perm(perm) -> tuple:
    """The pairs of `perm` reversed (ppermute's adjoint sends each cotangent back)."""
    return tuple((int(d), int(s)) for s, d in perm)


@_on_device
def all_to_all(x, axis_name, split_axis, concat_axis, tiled=False):
    """Chunk k of x along `split_axis` goes to device k; the chunks a device receives are joined
    along `concat_axis` (JAX's lax.all_to_all: untiled, split_axis's size is the axis size, and
    the result is x without that axis and with the devices' axis at concat_axis)."""
    x = np.asarray(x)
    values, b = _values(x, axis_name, "all_to_all")
    n = b.group.size
    split_axis, concat_axis = split_axis % x.ndim, concat_axis % x.ndim
    if tiled:
        if x.shape[split_axis] % n:
            raise CollectiveError(f"all_to_all: axis {split_axis} of size {x.shape[split_axis]} does not split "
                                  f"into {n} equal chunks")
        chunks = [np.array_split(v, n, axis=split_axis)[b.index] for v in values]
        return np.concatenate(chunks, axis=concat_axis)
    if x.shape[split_axis] != n:
        raise CollectiveError(f"all_to_all: axis {split_axis} has size {x.shape[split_axis]}, not the axis size "
                              f"{n} (pass tiled=True to split it into chunks)")
    # (the devices' axis sits at concat_axis of the result: so all_to_all with the two axes swapped
    # undoes it, the adjoint)
    return np.stack([np.take(v, b.index, axis=split_axis) for v in values], axis=concat_axis)


@_on_device
def pswapaxes(x, axis_name, axis):
    """JAX's pswapaxes: all_to_all with the same split and concat axis."""
    return all_to_all(x, axis_name, axis, axis)


# ----- what the adjoints and tangents call ------------------------------------------------------
def all_gather_vjp(g, axis_name, axis=0, tiled=False):
    """The cotangent of this device's x from every device's cotangent of all_gather(x): the sum
    over devices, at this device's slice."""
    total = psum(g, axis_name)
    i = axis_index(axis_name)
    if tiled:
        n = axis_size(axis_name)
        return np.array_split(total, n, axis=axis)[i]
    return np.take(total, i, axis=axis)


def extremum_share(x, y, axis_name):
    """Where this device's x is the extremum y over the devices: 1 / the number of devices
    holding it (ties share the cotangent, as np.max's rule does); 0 elsewhere."""
    hit = np.asarray(x == y, dtype=np.float64)
    count = psum(hit, axis_name)
    return hit / np.maximum(count, 1.0) if np.ndim(hit) else float(hit / max(count, 1.0))
