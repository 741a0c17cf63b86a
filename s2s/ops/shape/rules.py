"""Shape, joining, reordering and copying ops; constructors; np.array / astype.

Adjoint (d[x]) and tangent (t[x]) templates side by side.  Ops that take a
list of arrays (concatenate, stack, hstack, vstack, column_stack, np.array of
a list literal) contribute `d[arrays]` as a list with one cotangent per
element, and read `t[arrays]` as the list of the elements' tangents; ops that
return a list (split, array_split) take the list of the pieces' cotangents.
The scatter helpers their adjoints call (take_vjp, pad_vjp, ...) are linear and
have rules of their own, so higher derivatives go through them.
"""
import builtins

import numpy as np

from . import helpers as sh
from ... import runtime as rt
from ...rules.registry import adjoint, declare, nondiff, refuse, register, tangent


@adjoint(np.reshape, "np.reshape")
def reshape(y, a, shape=None, order="C", newshape=None, copy=None):
    d[a] = np.reshape(d[y], np.shape(a), order=order)


@tangent(np.reshape)
def reshape_(y, a, shape=None, order="C", newshape=None, copy=None):
    t[y] = np.reshape(t[a], np.shape(y), order=order)


@adjoint(np.ravel, "np.ravel")
def ravel(y, a, order="C"):
    d[a] = np.reshape(d[y], np.shape(a), order=order)


@tangent(np.ravel)
def ravel_(y, a, order="C"):
    t[y] = np.ravel(t[a], order=order)


@adjoint(np.transpose, "np.transpose")
def transpose(y, a, axes=None):
    d[a] = np.transpose(d[y], inverse_axes(axes))


@tangent(np.transpose)
def transpose_(y, a, axes=None):
    t[y] = np.transpose(t[a], axes)


@adjoint(np.swapaxes, "np.swapaxes")
def swapaxes(y, a, axis1, axis2):
    d[a] = np.swapaxes(d[y], axis1, axis2)


@tangent(np.swapaxes)
def swapaxes_(y, a, axis1, axis2):
    t[y] = np.swapaxes(t[a], axis1, axis2)


@adjoint(np.moveaxis, "np.moveaxis")
def moveaxis(y, a, source, destination):
    d[a] = np.moveaxis(d[y], destination, source)


@tangent(np.moveaxis)
def moveaxis_(y, a, source, destination):
    t[y] = np.moveaxis(t[a], source, destination)


@adjoint(np.expand_dims, "np.expand_dims")
def expand_dims(y, a, axis):
    d[a] = np.reshape(d[y], np.shape(a))


@tangent(np.expand_dims)
def expand_dims_(y, a, axis):
    t[y] = np.expand_dims(t[a], axis)


@adjoint(np.squeeze, "np.squeeze")
def squeeze(y, a, axis=None):
    d[a] = np.reshape(d[y], np.shape(a))


@tangent(np.squeeze)
def squeeze_(y, a, axis=None):
    t[y] = np.squeeze(t[a], axis)


@adjoint(np.broadcast_to, "np.broadcast_to")
def broadcast_to(y, array, shape, subok=False):
    d[array] = unbroadcast(d[y], array)


@tangent(np.broadcast_to)
def broadcast_to_(y, array, shape, subok=False):
    t[y] = np.broadcast_to(t[array], shape)


# np.atleast_Nd(a) of ONE array (several arrays return a tuple: refused by the signature).
@adjoint(np.atleast_1d, "np.atleast_1d")
def atleast_1d(y, a):
    d[a] = np.reshape(d[y], np.shape(a))


@tangent(np.atleast_1d)
def atleast_1d_(y, a):
    t[y] = np.atleast_1d(t[a])


@adjoint(np.atleast_2d, "np.atleast_2d")
def atleast_2d(y, a):
    d[a] = np.reshape(d[y], np.shape(a))


@tangent(np.atleast_2d)
def atleast_2d_(y, a):
    t[y] = np.atleast_2d(t[a])


@adjoint(np.atleast_3d, "np.atleast_3d")
def atleast_3d(y, a):
    d[a] = np.reshape(d[y], np.shape(a))


@tangent(np.atleast_3d)
def atleast_3d_(y, a):
    t[y] = np.atleast_3d(t[a])


@adjoint(np.tile, "np.tile", shape_only=("reps",))
def tile(y, A, reps):
    d[A] = tile_vjp(d[y], A, reps)


@tangent(np.tile, shape_only=("reps",))
def tile_(y, A, reps):
    t[y] = np.tile(t[A], reps)


@adjoint(np.repeat, "np.repeat", shape_only=("repeats",))
def repeat(y, a, repeats, axis=None):
    d[a] = repeat_vjp(d[y], a, repeats, axis)


@tangent(np.repeat, shape_only=("repeats",))
def repeat_(y, a, repeats, axis=None):
    t[y] = np.repeat(t[a], repeats, axis)


# repeat_vjp (a segment sum) is linear in g; its adjoint is np.repeat again.
@adjoint(sh.repeat_vjp, "repeat_vjp", shape_only=("a", "repeats"))
def repeat_vjp_rule(y, g, a, repeats, axis=None):
    d[g] = np.repeat(d[y], repeats, axis)


@tangent(sh.repeat_vjp, shape_only=("a", "repeats"))
def repeat_vjp_rule_(y, g, a, repeats, axis=None):
    t[y] = repeat_vjp(t[g], a, repeats, axis)


@adjoint(np.flip, "np.flip")
def flip(y, m, axis=None):
    d[m] = np.flip(d[y], axis)


@tangent(np.flip)
def flip_(y, m, axis=None):
    t[y] = np.flip(t[m], axis)


@adjoint(np.fliplr, "np.fliplr")
def fliplr(y, m):
    d[m] = np.fliplr(d[y])


@tangent(np.fliplr)
def fliplr_(y, m):
    t[y] = np.fliplr(t[m])


@adjoint(np.flipud, "np.flipud")
def flipud(y, m):
    d[m] = np.flipud(d[y])


@tangent(np.flipud)
def flipud_(y, m):
    t[y] = np.flipud(t[m])


@adjoint(np.roll, "np.roll", shape_only=("shift",))
def roll(y, a, shift, axis=None):
    d[a] = np.roll(d[y], negated(shift), axis)


@tangent(np.roll, shape_only=("shift",))
def roll_(y, a, shift, axis=None):
    t[y] = np.roll(t[a], shift, axis)


@adjoint(np.rot90, "np.rot90", shape_only=("k",))
def rot90(y, m, k=1, axes=(0, 1)):
    d[m] = np.rot90(d[y], negated(k), axes)


@tangent(np.rot90, shape_only=("k",))
def rot90_(y, m, k=1, axes=(0, 1)):
    t[y] = np.rot90(t[m], k, axes)


@adjoint(np.tril, "np.tril", shape_only=("k",))
def tril(y, m, k=0):
    d[m] = np.tril(d[y], k)


@tangent(np.tril, shape_only=("k",))
def tril_(y, m, k=0):
    t[y] = np.tril(t[m], k)


@adjoint(np.triu, "np.triu", shape_only=("k",))
def triu(y, m, k=0):
    d[m] = np.triu(d[y], k)


@tangent(np.triu, shape_only=("k",))
def triu_(y, m, k=0):
    t[y] = np.triu(t[m], k)


@adjoint(np.pad, "np.pad", shape_only=("pad_width",))
def pad(y, array, pad_width, mode="constant", constant_values=0):
    d[array] = pad_vjp(d[y], array, pad_width, mode)
    d[constant_values] = pad_value_vjp(d[y], array, pad_width)


@tangent(np.pad, shape_only=("pad_width",))
def pad_(y, array, pad_width, mode="constant", constant_values=0):
    t[y] = np.pad(t[array], pad_width, mode=mode) + pad_value_tangent(t[constant_values], array, pad_width)


# pad_vjp (scatter-add through pad's index map) is linear in g; its adjoint is np.pad again.
@adjoint(sh.pad_vjp, "pad_vjp", shape_only=("array", "pad_width"))
def pad_vjp_rule(y, g, array, pad_width, mode="constant"):
    d[g] = np.pad(d[y], pad_width, mode=mode)


@tangent(sh.pad_vjp, shape_only=("array", "pad_width"))
def pad_vjp_rule_(y, g, array, pad_width, mode="constant"):
    t[y] = pad_vjp(t[g], array, pad_width, mode)


@adjoint(np.sort, "np.sort")
def sort(y, a, axis=-1, kind=None, order=None, stable=None):
    d[a] = sort_vjp(d[y], a, axis)


@tangent(np.sort)
def sort_(y, a, axis=-1, kind=None, order=None, stable=None):
    t[y] = sort_tangent(t[a], a, axis)


nondiff(np.argsort, "np.argsort")       # (positions: no derivative)
nondiff(np.argpartition, "np.argpartition")     # (np.partition, a composite, applies it)


@adjoint(np.diff, "np.diff", shape_only=("n",))
def diff(y, a, n=1, axis=-1, prepend=None, append=None):
    d[a] = diff_vjp(d[y], a, n, axis, prepend, append, 1)
    d[prepend] = diff_vjp(d[y], a, n, axis, prepend, append, 0)
    d[append] = diff_vjp(d[y], a, n, axis, prepend, append, 2)


@tangent(np.diff, shape_only=("n",))
def diff_(y, a, n=1, axis=-1, prepend=None, append=None):
    t[y] = (diff_tangent(t[a], a, n, axis, prepend, append, 1)
            + diff_tangent(t[prepend], a, n, axis, prepend, append, 0)
            + diff_tangent(t[append], a, n, axis, prepend, append, 2))


@adjoint(np.take, "np.take", shape_only=("indices",))
def take(y, a, indices, axis=None, out=None, mode="raise"):
    d[a] = take_vjp(d[y], a, indices, axis, mode)


@tangent(np.take, shape_only=("indices",))
def take_(y, a, indices, axis=None, out=None, mode="raise"):
    t[y] = np.take(t[a], indices, axis=axis, mode=mode)


@adjoint(sh.take_vjp, "take_vjp", shape_only=("a", "indices"))
def take_vjp_rule(y, g, a, indices, axis=None, mode="raise"):
    d[g] = np.take(d[y], indices, axis=axis, mode=mode)


@tangent(sh.take_vjp, shape_only=("a", "indices"))
def take_vjp_rule_(y, g, a, indices, axis=None, mode="raise"):
    t[y] = take_vjp(t[g], a, indices, axis, mode)


@adjoint(np.take_along_axis, "np.take_along_axis", shape_only=("indices",))
def take_along_axis(y, arr, indices, axis=-1):
    d[arr] = take_along_axis_vjp(d[y], arr, indices, axis)


@tangent(np.take_along_axis, shape_only=("indices",))
def take_along_axis_(y, arr, indices, axis=-1):
    t[y] = np.take_along_axis(t[arr], indices, axis=axis)


@adjoint(sh.take_along_axis_vjp, "take_along_axis_vjp", shape_only=("arr", "indices"))
def take_along_axis_vjp_rule(y, g, arr, indices, axis=-1):
    d[g] = np.take_along_axis(d[y], indices, axis=axis)


@tangent(sh.take_along_axis_vjp, shape_only=("arr", "indices"))
def take_along_axis_vjp_rule_(y, g, arr, indices, axis=-1):
    t[y] = take_along_axis_vjp(t[g], arr, indices, axis)


# ----- Copies and casts -------------------------------------------------------


@adjoint(np.copy, "np.copy")
def copy(y, a, order="K", subok=False):
    d[a] = d[y]


@tangent(np.copy)
def copy_(y, a, order="K", subok=False):
    t[y] = np.copy(t[a])


register(np.copy, "np.copy", fresh=True)


@adjoint(np.asarray, "np.asarray")
def asarray(y, a, dtype=None, order=None):
    d[a] = d[y] * float_dtype_flag(dtype)


@tangent(np.asarray)
def asarray_(y, a, dtype=None, order=None):
    t[y] = np.asarray(t[a]) * float_dtype_flag(dtype)


@adjoint(rt.astype, "astype")
def astype(y, x, dtype):
    d[x] = d[y] * float_dtype_flag(dtype)


@tangent(rt.astype)
def astype_(y, x, dtype):
    t[y] = t[x] * float_dtype_flag(dtype)


# np.array(x) of an array copies it; np.array([a, b, ...]) stacks a list literal: its d[object]
# is then the list of cotangents (array_vjp), which the core does not take yet.
@adjoint(np.array, "np.array")
def array(y, object, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    d[object] = array_vjp(d[y], object)


@tangent(np.array)
def array_(y, object, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    t[y] = np.array(t[object], ndmin=ndmin) * float_dtype_flag(dtype)


register(np.array, "np.array", fresh=True)


# ----- Joining and splitting (list arguments / results) -------------------------


@adjoint(np.concatenate, "np.concatenate")
def concatenate(y, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    d[arrays] = concatenate_vjp(d[y], arrays, axis)


@tangent(np.concatenate)
def concatenate_(y, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    t[y] = np.concatenate(t[arrays], axis=axis)


@adjoint(np.stack, "np.stack")
def stack(y, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    d[arrays] = stack_vjp(d[y], arrays, axis)


@tangent(np.stack)
def stack_(y, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    t[y] = np.stack(t[arrays], axis=axis)


@adjoint(np.hstack, "np.hstack")
def hstack(y, tup, dtype=None, casting="same_kind"):
    d[tup] = hstack_vjp(d[y], tup)


@tangent(np.hstack)
def hstack_(y, tup, dtype=None, casting="same_kind"):
    t[y] = np.hstack(t[tup])


@adjoint(np.vstack, "np.vstack")
def vstack(y, tup, dtype=None, casting="same_kind"):
    d[tup] = vstack_vjp(d[y], tup)


@tangent(np.vstack)
def vstack_(y, tup, dtype=None, casting="same_kind"):
    t[y] = np.vstack(t[tup])


@adjoint(np.column_stack, "np.column_stack")
def column_stack(y, tup):
    d[tup] = column_stack_vjp(d[y], tup)


@tangent(np.column_stack)
def column_stack_(y, tup):
    t[y] = np.column_stack(t[tup])


@adjoint(np.split, "np.split", shape_only=("indices_or_sections",))
def split(y, ary, indices_or_sections, axis=0):
    d[ary] = split_vjp(d[y], ary, indices_or_sections, axis)


@tangent(np.split, shape_only=("indices_or_sections",))
def split_(y, ary, indices_or_sections, axis=0):
    t[y] = np.split(t[ary], indices_or_sections, axis)


@adjoint(np.array_split, "np.array_split", shape_only=("indices_or_sections",))
def array_split(y, ary, indices_or_sections, axis=0):
    d[ary] = split_vjp(d[y], ary, indices_or_sections, axis)


@tangent(np.array_split, shape_only=("indices_or_sections",))
def array_split_(y, ary, indices_or_sections, axis=0):
    t[y] = np.array_split(t[ary], indices_or_sections, axis)


# The list cotangent helpers above are linear in g; their adjoints join the list back.
@adjoint(sh.concatenate_vjp, "concatenate_vjp", shape_only=("arrays",))
def concatenate_vjp_rule(y, g, arrays, axis=0):
    d[g] = np.concatenate(d[y], axis=axis)


@tangent(sh.concatenate_vjp, shape_only=("arrays",))
def concatenate_vjp_rule_(y, g, arrays, axis=0):
    t[y] = concatenate_vjp(t[g], arrays, axis)


@adjoint(sh.stack_vjp, "stack_vjp", shape_only=("arrays",))
def stack_vjp_rule(y, g, arrays, axis=0):
    d[g] = np.stack(d[y], axis=axis)


@tangent(sh.stack_vjp, shape_only=("arrays",))
def stack_vjp_rule_(y, g, arrays, axis=0):
    t[y] = stack_vjp(t[g], arrays, axis)


@adjoint(sh.hstack_vjp, "hstack_vjp", shape_only=("tup",))
def hstack_vjp_rule(y, g, tup):
    d[g] = np.hstack(d[y])


@tangent(sh.hstack_vjp, shape_only=("tup",))
def hstack_vjp_rule_(y, g, tup):
    t[y] = hstack_vjp(t[g], tup)


@adjoint(sh.vstack_vjp, "vstack_vjp", shape_only=("tup",))
def vstack_vjp_rule(y, g, tup):
    d[g] = np.vstack(d[y])


@tangent(sh.vstack_vjp, shape_only=("tup",))
def vstack_vjp_rule_(y, g, tup):
    t[y] = vstack_vjp(t[g], tup)


@adjoint(sh.column_stack_vjp, "column_stack_vjp", shape_only=("tup",))
def column_stack_vjp_rule(y, g, tup):
    d[g] = np.column_stack(d[y])


@tangent(sh.column_stack_vjp, shape_only=("tup",))
def column_stack_vjp_rule_(y, g, tup):
    t[y] = column_stack_vjp(t[g], tup)


@adjoint(sh.split_vjp, "split_vjp", shape_only=("ary", "indices_or_sections"))
def split_vjp_rule(y, g, ary, indices_or_sections, axis=0):
    d[g] = np.array_split(d[y], indices_or_sections, axis)


@tangent(sh.split_vjp, shape_only=("ary", "indices_or_sections"))
def split_vjp_rule_(y, g, ary, indices_or_sections, axis=0):
    t[y] = split_vjp(t[g], ary, indices_or_sections, axis)


@adjoint(sh.array_vjp, "array_vjp", shape_only=("obj",))
def array_vjp_rule(y, g, obj):
    d[g] = np.array(d[y])


@tangent(sh.array_vjp, shape_only=("obj",))
def array_vjp_rule_(y, g, obj):
    t[y] = array_vjp(t[g], obj)


# ----- No derivative ----------------------------------------------------------

for _fn in (np.shape, np.ndim, np.size):
    nondiff(_fn, "np." + _fn.__name__)
for _fn in (np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
            np.eye, np.identity, np.tri, np.indices):
    nondiff(_fn, "np." + _fn.__name__, fresh=True)
# (np.arange(start, stop, step) reads a float start or step as values, and which argument is
# `start` depends on how many are given: no template can bind them; refused, never a zero)
refuse(np.arange, "np.arange", "its float start/stop/step are not differentiated; write start + step * "
       "np.arange(n) or np.linspace(start, stop, n)", fresh=True)


# Constructors whose float arguments carry a derivative (they were constants: silent zeros).
@adjoint(np.full, "np.full", shape_only=("shape",))
def full(y, shape, fill_value, dtype=None, order="C"):
    d[fill_value] = unbroadcast(d[y], fill_value) * float_dtype_flag(dtype)


@tangent(np.full, shape_only=("shape",))
def full_(y, shape, fill_value, dtype=None, order="C"):
    t[y] = (np.zeros(shape) + t[fill_value]) * float_dtype_flag(dtype)


@adjoint(np.linspace, "np.linspace", shape_only=("num",))
def linspace(y, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    d[start] = unbroadcast(d[y] * (1.0 - linspace_weights(y, num, endpoint, retstep, axis)), start)
    d[stop] = unbroadcast(d[y] * linspace_weights(y, num, endpoint, retstep, axis), stop)


@tangent(np.linspace, shape_only=("num",))
def linspace_(y, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    t[y] = t[start] * (1.0 - linspace_weights(y, num, endpoint, retstep, axis)) + \
        t[stop] * linspace_weights(y, num, endpoint, retstep, axis)


@adjoint(np.full_like, "np.full_like", shape_only=("a",))
def full_like(y, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    d[fill_value] = unbroadcast(d[y], fill_value) * float_dtype_flag(y.dtype)


@tangent(np.full_like, shape_only=("a",))
def full_like_(y, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    t[y] = (np.zeros_like(y) + t[fill_value]) * float_dtype_flag(y.dtype)


# np.logspace = base ** np.linspace(start, stop): the linspace weights, times y * log(base)
# (base itself is not differentiated: it has no d[...] line, so a differentiated base is refused)
@adjoint(np.logspace, "np.logspace", shape_only=("num",))
def logspace(y, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    d[start] = unbroadcast(d[y] * y * np.log(base) * (1.0 - linspace_weights(y, num, endpoint, False, axis)), start)
    d[stop] = unbroadcast(d[y] * y * np.log(base) * linspace_weights(y, num, endpoint, False, axis), stop)


@tangent(np.logspace, shape_only=("num",))
def logspace_(y, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    t[y] = y * np.log(base) * (t[start] * (1.0 - linspace_weights(y, num, endpoint, False, axis)) +
                               t[stop] * linspace_weights(y, num, endpoint, False, axis))


register(np.full, "np.full", fresh=True)
register(np.full_like, "np.full_like", fresh=True)
register(np.linspace, "np.linspace", fresh=True)
register(np.logspace, "np.logspace", fresh=True)
for _fn in (builtins.len, builtins.range, builtins.reversed, builtins.int, builtins.bool, builtins.print,
            builtins.isinstance):
    nondiff(_fn, _fn.__name__)
nondiff(builtins.slice, "slice")

for _fn in (sh.linspace_weights, sh.negated, sh.tile_plan, sh.sort_inverse, sh.sort_order, sh.repeat_segments, sh.split_plan,
            sh.diff_plan, sh.diff_part_shape, sh.diff_part_range, sh.diff_part_pad, sh.pad_index_map,
            sh.pad_border_mask):
    nondiff(_fn, _fn.__name__)
# pad_value_vjp / pad_value_tangent are linear in their first argument and readable.
# Readable (differentiated through): sort_vjp sort_tangent.


# tile_vjp (the sum over the copies) is linear in g; its transpose is np.tile again.
@adjoint(sh.tile_vjp, "tile_vjp", shape_only=("A", "reps"))
def tile_vjp_rule(y, g, A, reps):
    d[g] = np.tile(d[y], reps)


@tangent(sh.tile_vjp, shape_only=("A", "reps"))
def tile_vjp_rule_(y, g, A, reps):
    t[y] = tile_vjp(t[g], A, reps)


# diff_vjp and diff_tangent are linear in their first argument and transposes of each other
# (np.diff of the concatenation, and its adjoint); the operands enter by their shapes only.
@adjoint(sh.diff_vjp, "diff_vjp", shape_only=("a", "n", "prepend", "append", "which"))
def diff_vjp_rule(y, g, a, n=1, axis=-1, prepend=None, append=None, which=1):
    d[g] = diff_tangent(d[y], a, n, axis, prepend, append, which)


@tangent(sh.diff_vjp, shape_only=("a", "n", "prepend", "append", "which"))
def diff_vjp_rule_(y, g, a, n=1, axis=-1, prepend=None, append=None, which=1):
    t[y] = diff_vjp(t[g], a, n, axis, prepend, append, which)


@adjoint(sh.diff_tangent, "diff_tangent", shape_only=("a", "n", "prepend", "append", "which"))
def diff_tangent_rule(y, tv, a, n=1, axis=-1, prepend=None, append=None, which=1):
    d[tv] = diff_vjp(d[y], a, n, axis, prepend, append, which)


@tangent(sh.diff_tangent, shape_only=("a", "n", "prepend", "append", "which"))
def diff_tangent_rule_(y, tv, a, n=1, axis=-1, prepend=None, append=None, which=1):
    t[y] = diff_tangent(t[tv], a, n, axis, prepend, append, which)


# vmap
declare(np.shape, np.ndim, np.size, builtins.len, batch="shape_query")
declare(np.copy, np.asarray, np.zeros_like, np.ones_like, rt.astype, batch="same")
declare(np.expand_dims, np.squeeze, np.flip, np.roll, batch="axis_args", axis_params=("axis",))
declare(np.swapaxes, batch="axis_args", axis_params=("axis1", "axis2"))
declare(np.moveaxis, batch="axis_args", axis_params=("source", "destination"))
declare(np.reshape, batch="reshape")         # (per example in C order: breshape)
declare(np.transpose, batch="transpose")     # (the example's axes: btranspose)
declare(sh.tile_plan, sh.diff_plan, sh.diff_part_shape, sh.diff_part_range, sh.diff_part_pad, sh.pad_width_along,
        sh.pad_index_map, sh.pad_border_mask, sh.split_plan, batch="shape_fn")
declare(np.array_split, ragged_tuple=True)     # (unequal pieces: vmap runs the function per example)
# views: the result may share memory with the first argument (analysis/aliasing.py)
declare(np.reshape, np.ravel, np.transpose, np.swapaxes, np.expand_dims, np.squeeze, np.broadcast_to, np.asarray,
        np.moveaxis, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.flip, np.fliplr, np.flipud, np.rot90, view=True)
# ndarray methods
declare(np.transpose, attributes=("T",))      # (`x.T`)
declare(np.stack, np.array, np.asarray, stacks_rows=True)
for _fn, _methods in ((np.copy, ("copy",)), (np.ravel, ("ravel", "flatten")), (np.reshape, ("reshape",)),
                      (np.transpose, ("transpose",)), (rt.astype, ("astype",)), (np.squeeze, ("squeeze",)),
                      (np.swapaxes, ("swapaxes",))):
    declare(_fn, methods=_methods)
