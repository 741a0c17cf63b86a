"""Collectives: psum pmean pmax pmin all_gather ppermute all_to_all pswapaxes axis_index.

Adjoint (d[x]) and tangent (t[x]) templates side by side, for pmap's semantics (JAX's): each
device's output is its own; the derivative of a function of every device's outputs sums them.
- psum: the cotangent of x is the sum of every device's cotangent (a psum);
- pmean: a pmean of the cotangents;
- pmax / pmin: the summed cotangent goes to the devices holding the extremum (ties share it);
- all_gather: the sum of the cotangents, at this device's slice;
- ppermute: the cotangents sent back along the reversed pairs;
- all_to_all: the inverse all_to_all (split and concat axes swapped).
axis_index and axis_size carry no derivative.  Batching (vmap inside or around pmap) is in
rules/batch_rules.py: the reductions act elementwise over devices, so a (batch, ...) array is
reduced as it is; all_gather and all_to_all shift their axes past the batch axis.
"""
from ...runtime import collectives as rc
from ...runtime.collectives import (all_gather, all_gather_vjp, all_to_all, extremum_share, inverse_perm, pmean,
                                    ppermute, psum)  # noqa: F401  (names the templates use)
from ...rules.registry import adjoint, declare, nondiff, register, tangent

_STATIC = ("axis_name", "perm", "tiled", "split_axis", "concat_axis")

for _fn in (rc.psum, rc.pmean, rc.pmax, rc.pmin, rc.all_gather, rc.ppermute, rc.all_to_all, rc.pswapaxes,
            rc.all_gather_vjp):
    register(_fn, _fn.__name__)
for _fn in (rc.axis_index, rc.axis_size, rc.inverse_perm, rc.extremum_share):    # (the extremum's share is
    # piecewise constant)
    nondiff(_fn, _fn.__name__)


@adjoint(rc.psum, shape_only=_STATIC)
def psum_(y, x, axis_name):
    d[x] = psum(d[y], axis_name)


@tangent(rc.psum, shape_only=_STATIC)
def psum_t(y, x, axis_name):
    t[y] = psum(t[x], axis_name)


@adjoint(rc.pmean, shape_only=_STATIC)
def pmean_(y, x, axis_name):
    d[x] = pmean(d[y], axis_name)


@tangent(rc.pmean, shape_only=_STATIC)
def pmean_t(y, x, axis_name):
    t[y] = pmean(t[x], axis_name)


@adjoint(rc.pmax, shape_only=_STATIC)
def pmax_(y, x, axis_name):
    d[x] = psum(d[y], axis_name) * extremum_share(x, y, axis_name)


@tangent(rc.pmax, shape_only=_STATIC)
def pmax_t(y, x, axis_name):
    t[y] = psum(t[x] * extremum_share(x, y, axis_name), axis_name)


adjoint(rc.pmin)(pmax_)
tangent(rc.pmin)(pmax_t)


@adjoint(rc.all_gather, shape_only=_STATIC)
def all_gather_(y, x, axis_name, axis=0, tiled=False):
    d[x] = all_gather_vjp(d[y], axis_name, axis, tiled)


@tangent(rc.all_gather, shape_only=_STATIC)
def all_gather_t(y, x, axis_name, axis=0, tiled=False):
    t[y] = all_gather(t[x], axis_name, axis, tiled)


@adjoint(rc.all_gather_vjp, shape_only=_STATIC)
def all_gather_vjp_(y, g, axis_name, axis=0, tiled=False):
    d[g] = all_gather(d[y], axis_name, axis, tiled)


@tangent(rc.all_gather_vjp, shape_only=_STATIC)
def all_gather_vjp_t(y, g, axis_name, axis=0, tiled=False):
    t[y] = all_gather_vjp(t[g], axis_name, axis, tiled)


@adjoint(rc.ppermute, shape_only=_STATIC)
def ppermute_(y, x, axis_name, perm):
    d[x] = ppermute(d[y], axis_name, inverse_perm(perm))


@tangent(rc.ppermute, shape_only=_STATIC)
def ppermute_t(y, x, axis_name, perm):
    t[y] = ppermute(t[x], axis_name, perm)


@adjoint(rc.all_to_all, shape_only=_STATIC)
def all_to_all_(y, x, axis_name, split_axis, concat_axis, tiled=False):
    d[x] = all_to_all(d[y], axis_name, concat_axis, split_axis, tiled)


@tangent(rc.all_to_all, shape_only=_STATIC)
def all_to_all_t(y, x, axis_name, split_axis, concat_axis, tiled=False):
    t[y] = all_to_all(t[x], axis_name, split_axis, concat_axis, tiled)


@adjoint(rc.pswapaxes, shape_only=_STATIC)
def pswapaxes_(y, x, axis_name, axis):
    d[x] = all_to_all(d[y], axis_name, axis, axis)


@tangent(rc.pswapaxes, shape_only=_STATIC)
def pswapaxes_t(y, x, axis_name, axis):
    t[y] = all_to_all(t[x], axis_name, axis, axis)


# vmap: the collectives act elementwise across devices, so a (batch, ...) array is reduced or sent
# as it is; all_gather / all_to_all shift their axes past the batch axis; the device's index is one
# number for every example.
declare(rc.psum, rc.pmean, rc.pmax, rc.pmin, rc.ppermute, rc.extremum_share, batch="same")
declare(rc.axis_index, rc.axis_size, rc.inverse_perm, batch="shape_fn")
declare(rc.all_gather, rc.all_gather_vjp, rc.pswapaxes, batch="axis_args", axis_params=("axis",))
declare(rc.all_to_all, batch="axis_args", axis_params=("split_axis", "concat_axis"))
