"""Reductions and scans: sum mean prod max min var std cumsum cumprod average norm.

Adjoint (d[x]) and tangent (t[x]) templates side by side.  `axis` may be None,
an int or a tuple; `keepdims` is honoured.  `expand_reduced(g, x, axis,
keepdims)` (s2s.runtime) broadcasts a reduced cotangent back to x's shape.
"""
import numpy as np

from . import helpers as rh
from ..shape import helpers as sh
from ...rules.registry import adjoint, declare, nondiff, refuse, tangent


@adjoint(np.sum, "np.sum")
def sum(y, a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    d[a] = expand_reduced(d[y], a, axis, keepdims)


@tangent(np.sum)
def sum_(y, a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    t[y] = np.sum(t[a], axis=axis, keepdims=keepdims)


@adjoint(np.mean, "np.mean")
def mean(y, a, axis=None, dtype=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims) / reduced_size(a, axis)


@tangent(np.mean)
def mean_(y, a, axis=None, dtype=None, out=None, keepdims=False):
    t[y] = np.mean(t[a], axis=axis, keepdims=keepdims)


@adjoint(np.prod, "np.prod")
def prod(y, a, axis=None, dtype=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims) * prod_except(a, axis)


@tangent(np.prod)
def prod_(y, a, axis=None, dtype=None, out=None, keepdims=False):
    t[y] = np.sum(t[a] * prod_except(a, axis), axis=axis, keepdims=keepdims)


@adjoint(np.max, "np.max")
def max(y, a, axis=None, out=None, keepdims=False):
    d[a] = expand_reduced(d[y], a, axis, keepdims) * extremum_weights(a, y, axis, keepdims)


@tangent(np.max)
def max_(y, a, axis=None, out=None, keepdims=False):
    t[y] = np.sum(t[a] * extremum_weights(a, y, axis, keepdims), axis=axis, keepdims=keepdims)


# Ties share the cotangent evenly; min uses the same weights as max.
adjoint(np.min, "np.min")(max)
tangent(np.min, "np.min")(max_)
adjoint(np.amax, "np.amax")(max)
tangent(np.amax, "np.amax")(max_)
adjoint(np.amin, "np.amin")(max)
tangent(np.amin, "np.amin")(max_)


@adjoint(np.var, "np.var")
def var(y, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, correction=None):
    d[a] = 2.0 * expand_reduced(d[y], a, axis, keepdims) * (a - np.mean(a, axis=axis, keepdims=True)) \
        / var_dof(a, axis, ddof, correction)


@tangent(np.var)
def var_(y, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, correction=None):
    t[y] = 2.0 * np.sum(t[a] * (a - np.mean(a, axis=axis, keepdims=True)), axis=axis, keepdims=keepdims) \
        / var_dof(a, axis, ddof, correction)


@adjoint(np.std, "np.std")
def std(y, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, correction=None):
    d[a] = expand_reduced(std_scale(d[y], y), a, axis, keepdims) * (a - np.mean(a, axis=axis, keepdims=True)) \
        / var_dof(a, axis, ddof, correction)


@tangent(np.std)
def std_(y, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, correction=None):
    t[y] = std_scale(np.sum(t[a] * (a - np.mean(a, axis=axis, keepdims=True)), axis=axis, keepdims=keepdims)
                     / var_dof(a, axis, ddof, correction), y)


@adjoint(np.cumsum, "np.cumsum")
def cumsum(y, a, axis=None, dtype=None, out=None):
    d[a] = cumsum_vjp(d[y], a, axis)


@tangent(np.cumsum)
def cumsum_(y, a, axis=None, dtype=None, out=None):
    t[y] = np.cumsum(t[a], axis=axis)


@adjoint(np.cumprod, "np.cumprod")
def cumprod(y, a, axis=None, dtype=None, out=None):
    d[a] = cumprod_vjp(d[y], a, y, axis)


@tangent(np.cumprod)
def cumprod_(y, a, axis=None, dtype=None, out=None):
    t[y] = cumprod_tangent(t[a], a, y, axis)


@adjoint(np.average, "np.average")
def average(y, a, axis=None, weights=None, keepdims=False):
    d[a] = average_vjp_a(d[y], a, weights, axis, keepdims)
    d[weights] = average_vjp_w(d[y], a, weights, y, axis, keepdims)


@tangent(np.average)
def average_(y, a, axis=None, weights=None, keepdims=False):
    t[y] = average_tangent_a(t[a], a, weights, axis, keepdims) + average_tangent_w(t[weights], a, weights, y, axis,
                                                                                    keepdims)


@adjoint(np.linalg.norm, "np.linalg.norm")
def norm(y, x, ord=None, axis=None, keepdims=False):
    d[x] = expand_reduced(d[y], x, axis, keepdims) * norm_grad(x, y, ord, axis, keepdims)


@tangent(np.linalg.norm)
def norm_(y, x, ord=None, axis=None, keepdims=False):
    t[y] = np.sum(t[x] * norm_grad(x, y, ord, axis, keepdims), axis=axis, keepdims=keepdims)


# ----- No derivative ----------------------------------------------------------

for _fn in (np.argmax, np.argmin, np.any, np.all, np.count_nonzero, np.nonzero,
            np.argwhere, np.flatnonzero, np.searchsorted, np.digitize):
    nondiff(_fn, "np." + _fn.__name__)
for _fn in (np.histogram, np.histogram_bin_edges, np.histogram2d, np.histogramdd):
    refuse(_fn, "np." + _fn.__name__, "its bin edges move with the data's range and its counts jump; use it "
           "on constants (s2s.stop_gradient) or write the binning with np.searchsorted")
refuse(np.unique, "np.unique", "its values are picked by comparing elements, and where two tie (the reason to call it) "
       "the derivative is not defined")


# np.bincount(x, weights): bin k sums the weights of the entries x == k
@adjoint(np.bincount, "np.bincount", shape_only=("x", "minlength"))
def bincount(y, x, weights=None, minlength=0):
    d[weights] = d[y][x]


@tangent(np.bincount, shape_only=("x", "minlength"))
def bincount_(y, x, weights=None, minlength=0):
    t[y] = np.bincount(x, weights=t[weights], minlength=np.size(y))

for _fn in (rh.var_dof, rh.kept_shape, rh.reduce_perm, rh.reduce_flat_shape, sh.pad_width_along,
            rh.norm_kind, rh.norm_matrix_axes, rh.norm_expand_shape, rh.norm_hits, rh.norm_singular_pick,
            rh.average_weight_shape, rh.average_weight_sum_axes):
    nondiff(_fn, _fn.__name__)
# Readable (differentiated through): cumsum_vjp cumprod_vjp cumprod_vjp_exact cumprod_tangent
# prod_except average_* norm_grad norm_singular_grad.


# vmap: a reduction's axis shifts past the batch axis; a scan's axis argument likewise
declare(np.sum, np.mean, np.max, np.min, np.prod, np.amax, np.amin, np.any, np.all, np.argmax, np.argmin, np.std,
        np.var, batch="reduce")
declare(np.cumsum, np.cumprod, batch="axis_args", axis_params=("axis",))
declare(np.argmax, np.argmin, flat_index=True)
# the plans and norm's case analysis read shapes and constant arguments only: one per batch
declare(rh.kept_shape, rh.reduce_perm, rh.reduce_flat_shape, rh.norm_kind, rh.norm_matrix_axes,
        rh.norm_expand_shape, batch="shape_fn")
# ndarray methods: x.sum(1) is np.sum(x, 1)
for _fn, _methods in ((np.sum, ("sum",)), (np.mean, ("mean",)), (np.max, ("max",)), (np.min, ("min",)),
                      (np.prod, ("prod",)), (np.std, ("std",)), (np.var, ("var",)), (np.cumsum, ("cumsum",)),
                      (np.cumprod, ("cumprod",)), (np.argmax, ("argmax",)), (np.argmin, ("argmin",)),
                      (np.any, ("any",)), (np.all, ("all",))):
    declare(_fn, methods=_methods)
# Numba: calls with axis/keepdims run the backend's reduce_<name> kernels
for _fn, _kernel in ((np.sum, "sum"), (np.max, "max"), (np.amax, "max"), (np.min, "min"), (np.amin, "min"),
                     (np.prod, "prod"), (np.mean, "mean")):
    declare(_fn, reduction=_kernel)
