"""Stand-ins for Numba: reductions and scans (see s2s/backends/numba_numpy/__init__.py).

np.sum / np.mean / np.max / np.min / np.prod with axis (None, int, tuple) and keepdims (the
forms helpers call; generated code reaches numba_lower's reduce_* instead); np.var / np.std
with axis, ddof and keepdims; np.cumsum / np.cumprod with an axis; np.average with axis,
weights, returned and keepdims; np.linalg.norm (every ord NumPy accepts for real input, axis
None / int / pair, keepdims); np.trace and np.diagonal with offset and any axis pair; np.clip
with keyword bounds (min=, max=), None and array bounds.  Overloads of the s2s helpers
`reduction_helpers.norm_grad` and `elementwise_helpers.clip_share` (their plain versions do not compile).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload as nb_overload

from ...rules import elementwise_helpers as eh
from ...rules import reduction_helpers as rh
from ..numba_lower import (is_float_sequence, stack_sequence, _impl_from_source, _is_array, _is_none, _kept_shape, _n_reduced, _reduced_flat_index,
                           overload, reduce_max, reduce_min, reduce_sum)
from . import flag_value, literal_value, standin

_SIGNED = (types.int8, types.int16, types.int32, types.int64)


# =============================================================================
# Axis bookkeeping
# =============================================================================

def _axis_literals(axis):
    """The axes of a literal `axis` argument as a tuple (None when not literal / None)."""
    v = literal_value(axis, default=False)
    if v is False or v is None:
        return None
    return v if isinstance(v, tuple) else (v,)


def _check_literal_axes(axis, nd):
    """Raise a TypingError for literal axes NumPy would reject (out of range, repeated)."""
    axes = _axis_literals(axis)
    if axes is None:
        return
    for a in axes:
        if not isinstance(a, int) or not -nd <= a < nd:
            raise TypingError(f"axis {a} is out of bounds for an array of dimension {nd}")
    if len({a % nd for a in axes}) != len(axes):
        raise TypingError(f"repeated axis in {axes}")


def _axis_form(axis):
    """'none', 'int', 'tuple' (of integers), or None (unsupported)."""
    if _is_none(axis):
        return "none"
    if isinstance(axis, types.Integer):
        return "int"
    if isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer) for t in axis.types):
        return "tuple"
    return None


def reduced_mask(axis, nd):
    """Boolean mask of the reduced axes (checked: in range, not repeated); Numba only."""
    raise NotImplementedError


@nb_overload(reduced_mask)
def _reduced_mask(axis, nd):
    form = _axis_form(axis)
    if form == "none":
        def impl(axis, nd):
            return np.ones(nd, dtype=np.bool_)
    elif form == "int":
        def impl(axis, nd):
            if axis < -nd or axis >= nd:
                raise ValueError("axis is out of bounds for the array's dimension")
            m = np.zeros(nd, dtype=np.bool_)
            m[axis % nd] = True
            return m
    elif form == "tuple":
        def impl(axis, nd):
            m = np.zeros(nd, dtype=np.bool_)
            for a in axis:
                if a < -nd or a >= nd:
                    raise ValueError("axis is out of bounds for the array's dimension")
                if m[a % nd]:
                    raise ValueError("repeated axis")
                m[a % nd] = True
            return m
    else:
        return None
    return impl


def reduced_shape(shape, axis, keepdims):
    """`shape` with the reduced axes set to 1 (keepdims) or dropped; Numba only."""
    raise NotImplementedError


@nb_overload(reduced_shape)
def _reduced_shape(shape, axis, keepdims):
    nd = len(shape)
    keep = flag_value(keepdims)
    if keep is None or _axis_form(axis) is None:
        return None
    nred = _n_reduced(axis, nd)
    if keep:
        def impl(shape, axis, keepdims):
            return _kept_shape(shape, reduced_mask(axis, nd))
        return impl

    def impl(shape, axis, keepdims):
        red = reduced_mask(axis, nd)
        out = shape[nred:]
        k = 0
        for d in range(nd):
            if not red[d]:
                out = tuple_setitem(out, k, shape[d])
                k += 1
        return out
    return impl


def drop_reduced(r, shape, axis):
    """A keepdims reduction result `r` of an array of `shape` without the reduced axes (a scalar
    when all are reduced), as NumPy's keepdims=False returns it; Numba only."""
    raise NotImplementedError


@nb_overload(drop_reduced)
def _drop_reduced(r, shape, axis):
    nd = len(shape)
    if _n_reduced(axis, nd) == nd:
        def impl(r, shape, axis):
            return np.ascontiguousarray(r).reshape(r.size)[0]
        return impl

    def impl(r, shape, axis):
        return np.ascontiguousarray(r).reshape(reduced_shape(shape, axis, False))
    return impl


def safe_sum(x, axis, keep):
    """numba_lower.reduce_sum, also where it fails to compile (an int axis of a 1-d array, or
    all axes, without keepdims: it builds the result shape with tuple_setitem on an empty
    tuple); Numba only."""
    raise NotImplementedError


@nb_overload(safe_sum)
def _safe_sum(x, axis, keep):
    keepv = flag_value(keep)
    if keepv is None:
        return None
    if keepv or not _is_array(x):
        return lambda x, axis, keep: reduce_sum(x, axis, keep)

    def impl(x, axis, keep):
        return drop_reduced(reduce_sum(x, axis, True), x.shape, axis)
    return impl


def _float_like(t):
    """Array or scalar of float64, int or bool (what these stand-ins compute in float64)."""
    dt = t.dtype if _is_array(t) else t
    return dt == types.float64 or isinstance(dt, (types.Integer, types.Boolean))


# =============================================================================
# np.sum / np.mean / np.max / np.min / np.prod with axis and keepdims
# =============================================================================

def _reduction_typer(kind):
    whole = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}[kind]

    def typer(a, axis=None, dtype=None, out=None, keepdims=False):
        if not (_is_none(dtype) and _is_none(out)):
            return None
        keep = flag_value(keepdims)
        form = _axis_form(axis)
        if keep is None or form is None:
            return None
        if isinstance(a, (types.List, types.UniTuple)):
            return _sequence_reduction(a, kind)
        if not _is_array(a):
            if not isinstance(a, (types.Float, types.Integer, types.Boolean)) or form != "none" or keep:
                return None
            return lambda a, axis=None, dtype=None, out=None, keepdims=False: whole(a)
        if form == "none" and not keep:
            return lambda a, axis=None, dtype=None, out=None, keepdims=False: whole(a)
        _check_literal_axes(axis, a.ndim)
        # numba_lower's reduce_* accumulate in float64: exact for float64 input only (and for
        # the float mean); integer sums/products/extrema keep their dtype in NumPy
        if not (a.dtype == types.float64 or kind == "mean" and isinstance(a.dtype, (types.Integer, types.Boolean))):
            return None
        lower = {"sum": safe_sum, "max": _nan_max, "min": _nan_min, "prod": _reduce_prod}.get(kind)
        if kind == "mean":
            def impl(a, axis=None, dtype=None, out=None, keepdims=False):
                s = safe_sum(a, axis, keep)
                return s / _count(a.shape, axis)
            return impl

        def impl(a, axis=None, dtype=None, out=None, keepdims=False):
            return lower(a, axis, keep)
        return impl
    return typer


def _sequence_reduction(a, kind):
    """np.sum([a, b, ...], axis=...) & co. of a list or tuple of numbers or equal-shape float64
    arrays: stacked into one array, then reduced as an array."""
    if not is_float_sequence(a):
        return None
    whole = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}[kind]

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        return whole(stack_sequence(a), axis=axis, keepdims=keepdims)
    return impl


def _count(shape, axis):
    raise NotImplementedError


@nb_overload(_count)
def _count_impl(shape, axis):
    nd = len(shape)

    def impl(shape, axis):
        red = reduced_mask(axis, nd)
        n = 1.0
        for d in range(nd):
            if red[d]:
                n *= shape[d]
        return n
    return impl


def _nan_max(x, axis, keep):
    raise NotImplementedError


def _nan_min(x, axis, keep):
    raise NotImplementedError


def _reduce_prod(x, axis, keep):
    raise NotImplementedError


def _extremum_impl(is_max):
    def typer(x, axis, keep):
        keepv = flag_value(keep)
        if keepv is None:
            return None
        nd = x.ndim
        start = -np.inf if is_max else np.inf

        def impl(x, axis, keep):
            kshape = reduced_shape(x.shape, axis, True)
            size = 1
            for d in range(nd):
                size *= kshape[d]
            out = np.full(size, start)
            seen = np.zeros(size, dtype=np.bool_)
            xc = np.ascontiguousarray(x).reshape(x.size)
            for flat in range(x.size):
                j = _reduced_flat_index(flat, x.shape, kshape)
                v = xc[flat]
                if v != v:          # NumPy's max/min propagate NaN
                    out[j] = v
                    seen[j] = True
                elif not (out[j] != out[j]):
                    if is_max and v > out[j] or not is_max and v < out[j]:
                        out[j] = v
                seen[j] = True
            for j in range(size):
                if not seen[j]:
                    raise ValueError("zero-size array to reduction operation which has no identity")
            r = out.reshape(kshape)
            if keepv:
                return r
            return drop_reduced(r, x.shape, axis)
        return impl
    return typer


@nb_overload(_reduce_prod)
def _reduce_prod_impl(x, axis, keep):
    keepv = flag_value(keep)
    if keepv is None:
        return None
    nd = x.ndim

    def impl(x, axis, keep):
        kshape = reduced_shape(x.shape, axis, True)
        size = 1
        for d in range(nd):
            size *= kshape[d]
        out = np.ones(size)
        xc = np.ascontiguousarray(x).reshape(x.size)
        for flat in range(x.size):
            out[_reduced_flat_index(flat, x.shape, kshape)] *= xc[flat]
        r = out.reshape(kshape)
        if keepv:
            return r
        return drop_reduced(r, x.shape, axis)
    return impl


nb_overload(_nan_max)(_extremum_impl(True))
nb_overload(_nan_min)(_extremum_impl(False))
for _fn, _kind in ((np.sum, "sum"), (np.prod, "prod"), (np.max, "max"), (np.min, "min"), (np.mean, "mean")):
    standin(_fn)(_reduction_typer(_kind))
if np.amax is not np.max:      # pragma: no cover - aliases in numpy 2
    standin(np.amax)(_reduction_typer("max"))
    standin(np.amin)(_reduction_typer("min"))


# =============================================================================
# np.var / np.std
# =============================================================================

def _var_typer(take_root: bool):
    def typer(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        if not (_is_none(dtype) and _is_none(out)):
            return None
        keep = flag_value(keepdims)
        if keep is None or _axis_form(axis) is None:
            return None
        if not isinstance(ddof, (int, float, types.Integer, types.Float, types.Omitted)):
            return None
        if not _is_array(a):
            if not isinstance(a, (types.Float, types.Integer, types.Boolean)) or _axis_form(axis) != "none" or keep:
                return None

            def scalar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
                # one element: 0 / max(1 - ddof, 0) (NumPy's 0/0 warning aside)
                v = np.divide(0.0, max(1.0 - ddof, 0.0))
                return np.sqrt(v) if take_root else v
            return scalar
        if not _float_like(a):
            return None
        _check_literal_axes(axis, a.ndim)

        def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
            x = a.astype(np.float64)
            n = _count(x.shape, axis)
            mean = reduce_sum(x, axis, True) / n
            d = x - mean
            v = np.divide(safe_sum(d * d, axis, keep), max(n - ddof, 0.0))
            return np.sqrt(v) if take_root else v
        return impl
    return typer


standin(np.var)(_var_typer(False))
standin(np.std)(_var_typer(True))


# =============================================================================
# np.cumsum / np.cumprod
# =============================================================================

def _scan_dtype(t):
    """NumPy's accumulator dtype for cumsum/cumprod of dtype t (None: unsupported)."""
    if t in (types.float64, types.float32):
        return t
    if isinstance(t, types.Boolean) or t in _SIGNED:
        return types.int64
    return None


def _scan_typer(is_sum: bool):
    def typer(a, axis=None, dtype=None, out=None):
        if not (_is_none(dtype) and _is_none(out)):
            return None
        form = _axis_form(axis)
        if form not in ("none", "int"):
            return None
        dt = _scan_dtype(a.dtype if _is_array(a) else a)
        if dt is None:
            return None
        npdt = np.dtype(str(dt)).type
        if not _is_array(a) or a.ndim == 0:
            if form != "none":
                return None      # NumPy treats a 0-d input with an axis as 1-d; not covered

            def scalar(a, axis=None, dtype=None, out=None):
                return np.full(1, a, dtype=npdt)
            return scalar
        nd = a.ndim
        _check_literal_axes(axis, nd)

        def impl(a, axis=None, dtype=None, out=None):
            if axis is None:
                x = np.ascontiguousarray(a.astype(npdt)).reshape(a.size)
                ax = 0
            else:
                x = np.ascontiguousarray(a.astype(npdt))
                if axis < -nd or axis >= nd:
                    raise ValueError("axis is out of bounds for the array's dimension")
                ax = axis % nd
            shape = x.shape
            n = shape[ax] if x.ndim > 0 else 1
            inner = 1
            for d in range(ax + 1, x.ndim):
                inner *= shape[d]
            outer = x.size // max(n * inner, 1)
            xf = x.reshape(x.size)
            res = np.empty(x.size, dtype=npdt)
            for o in range(outer):
                base = o * n * inner
                for i in range(inner):
                    acc = xf[base + i]
                    res[base + i] = acc
                    for k in range(1, n):
                        p = base + k * inner + i
                        if is_sum:
                            acc = acc + xf[p]
                        else:
                            acc = acc * xf[p]
                        res[p] = acc
            return res.reshape(shape)
        return impl
    return typer


standin(np.cumsum)(_scan_typer(True))
standin(np.cumprod)(_scan_typer(False))


# =============================================================================
# np.average
# =============================================================================

@standin(np.average)
def _average(a, axis=None, weights=None, returned=False, keepdims=False):
    ret = flag_value(returned)
    keep = flag_value(keepdims)
    form = _axis_form(axis)
    if ret is None or keep is None or form is None:
        return None
    if not _float_like(a) or not (_is_none(weights) or _float_like(weights)):
        return None
    if not _is_array(a):
        if form != "none" or keep:
            return None
        if _is_none(weights):
            def scalar(a, axis=None, weights=None, returned=False, keepdims=False):
                return (float(a), 1.0) if ret else float(a)
            return scalar
        return None
    nd = a.ndim
    _check_literal_axes(axis, nd)
    if _is_none(weights):
        def impl(a, axis=None, weights=None, returned=False, keepdims=False):
            x = a.astype(np.float64)
            n = _count(x.shape, axis)
            avg = safe_sum(x, axis, keep) / n
            if ret:
                return avg, _full_like_result(avg, n)
            return avg
        return impl
    wnd = weights.ndim if _is_array(weights) else 0
    if wnd == nd:
        along = False
    elif wnd == 1 and (form == "int" or form == "tuple" and len(axis) == 1):
        along = True
    else:
        return None      # NumPy: axis must be given / weights of several axes: not covered

    def impl_w(a, axis=None, weights=None, returned=False, keepdims=False):
        x = a.astype(np.float64)
        w = np.asarray(weights).astype(np.float64)
        if along:
            ax = _first_axis(axis, nd)
            if w.shape[0] != x.shape[ax]:
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            wshape = tuple_setitem(_ones_shape(x.shape), ax, w.shape[0])
            wr = w.reshape(wshape)
        else:
            if w.shape != x.shape:
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            wr = w
        scl = safe_sum(wr, axis, keep)
        if np.any(scl == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = safe_sum(x * wr, axis, keep) / scl
        if ret:
            return avg, _broadcast_copy(scl, avg)
        return avg
    return impl_w


def _first_axis(axis, nd):
    raise NotImplementedError


@nb_overload(_first_axis)
def _first_axis_impl(axis, nd):
    if isinstance(axis, types.Integer):
        def impl(axis, nd):
            if axis < -nd or axis >= nd:
                raise ValueError("axis is out of bounds for the array's dimension")
            return axis % nd
    else:
        def impl(axis, nd):
            if axis[0] < -nd or axis[0] >= nd:
                raise ValueError("axis is out of bounds for the array's dimension")
            return axis[0] % nd
    return impl


def _ones_shape(shape):
    raise NotImplementedError


@nb_overload(_ones_shape)
def _ones_shape_impl(shape):
    def impl(shape):
        out = shape
        for d in range(len(shape)):
            out = tuple_setitem(out, d, 1)
        return out
    return impl


def _full_like_result(avg, v):
    raise NotImplementedError


@nb_overload(_full_like_result)
def _full_like_result_impl(avg, v):
    if _is_array(avg):
        return lambda avg, v: np.full(avg.shape, v)
    return lambda avg, v: float(v)


def _broadcast_copy(s, like):
    raise NotImplementedError


@nb_overload(_broadcast_copy)
def _broadcast_copy_impl(s, like):
    if _is_array(like):
        if _is_array(s):
            return lambda s, like: np.ascontiguousarray(np.broadcast_to(s, like.shape))
        return lambda s, like: np.full(like.shape, s)
    if _is_array(s):
        return lambda s, like: np.ascontiguousarray(s).reshape(s.size)[0]
    return lambda s, like: s


# =============================================================================
# np.linalg.norm and its adjoint helper
# =============================================================================

_VEC_ORDS = ("inf", "-inf", "0", "1", "2", "p")
_MAT_ORDS = ("2", "-2", "1", "-1", "inf", "-inf")


def _ord_spec(ord_):
    """('none',) / ('str', s) / ('num', value) / ('runtime',); None: unsupported."""
    if _is_none(ord_):
        return ("none",)
    v = literal_value(ord_, default=False)
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return ("num", float(v))
    if isinstance(ord_, (types.Integer, types.Float)):
        return ("runtime",)
    return None


def _num_ord_name(v):
    return {np.inf: "inf", -np.inf: "-inf", 0.0: "0", 1.0: "1", 2.0: "2", -1.0: "-1", -2.0: "-2"}.get(v, "p")


def _norm_plan(x, ord_, axis):
    """(mode, ords) for np.linalg.norm(x, ord, axis): mode 'all' (sqrt of the sum of squares of
    everything), 'vec' or 'mat'; ords the branch names the ord may take.  Raises TypingError for
    the forms NumPy rejects; None for those not covered."""
    nd = x.ndim if _is_array(x) else 0
    spec = _ord_spec(ord_)
    form = _axis_form(axis)
    if spec is None or form is None:
        return None
    if form == "none":
        if spec[0] == "none" or spec[0] == "str" and spec[1] in ("f", "fro") and nd == 2 \
                or spec[0] == "num" and spec[1] == 2.0 and nd == 1:
            return "all", ()
        if nd == 1:
            form = "vec"
        elif nd == 2:
            form = "mat"
        else:
            raise TypingError("np.linalg.norm: improper number of dimensions to norm")
    elif form == "int":
        form = "vec"
    else:
        form = {1: "vec", 2: "mat"}.get(len(axis))
        if form is None:
            raise TypingError("np.linalg.norm: improper number of dimensions to norm")
    if nd == 0:
        return None
    if form == "vec":
        if spec[0] == "str":
            raise TypingError(f"Invalid norm order '{spec[1]}' for vectors")
        if spec[0] == "none":
            return "vec", ("2",)
        if spec[0] == "num":
            name = _num_ord_name(spec[1])
            return "vec", ("p" if name in ("-1", "-2") else name,)
        return "vec", _VEC_ORDS
    if spec[0] == "none" or spec[0] == "str" and spec[1] in ("f", "fro"):
        return "mat", ("fro",)
    if spec[0] == "str":
        if spec[1] == "nuc":
            return "mat", ("nuc",)
        raise TypingError(f"Invalid norm order {spec[1]!r} for matrices.")
    if spec[0] == "num":
        name = _num_ord_name(spec[1])
        if name not in _MAT_ORDS:
            raise TypingError("Invalid norm order for matrices.")
        return "mat", (name,)
    return "mat", _MAT_ORDS + ("invalid",)


def _axes_source(mode, form, nd):
    """Source lines defining the normalized axes: `ax_` (vec) or `r_`, `c_` (mat)."""
    if mode == "vec":
        src = {"none": "    ax_ = 0\n", "int": "    ax_ = axis\n", "tuple": "    ax_ = axis[0]\n"}[form]
        return src + (f"    if ax_ < -{nd} or ax_ >= {nd}:\n        raise ValueError('axis is out of bounds')\n"
                      f"    ax_ = ax_ % {nd}\n")
    src = "    r_ = 0\n    c_ = 1\n" if form == "none" else "    r_ = axis[0]\n    c_ = axis[1]\n"
    return src + (f"    if r_ < -{nd} or r_ >= {nd} or c_ < -{nd} or c_ >= {nd}:\n"
                  "        raise ValueError('axis is out of bounds')\n"
                  f"    r_ = r_ % {nd}\n    c_ = c_ % {nd}\n"
                  "    if r_ == c_:\n        raise ValueError('Duplicate axes given.')\n")


_ORD_TEST = {"inf": "ord == np.inf", "-inf": "ord == -np.inf", "0": "ord == 0", "1": "ord == 1",
             "2": "ord == 2", "-1": "ord == -1", "-2": "ord == -2"}


def _branches(ords, body):
    """if/elif chain over the ord names (a single branch: its body alone)."""
    if len(ords) == 1:
        return "".join("    " + ln + "\n" for ln in body(ords[0]))
    out = []
    for k, o in enumerate(ords):
        test = "else" if o in ("p", "invalid") else ("if " if k == 0 else "elif ") + _ORD_TEST[o]
        out.append(f"    {test}:\n" + "".join("        " + ln + "\n" for ln in body(o)))
    return "".join(out)


_NORM_GLOBALS = {}


def _norm_src_globals():
    if not _NORM_GLOBALS:
        _NORM_GLOBALS.update(np=np, reduce_sum=safe_sum, reduce_max=_nan_max, reduce_min=_nan_min,
                             svd_reduce=svd_reduce, reduced_shape=reduced_shape, kept2=kept2)
    return _NORM_GLOBALS


def _compile_source(src):
    return _impl_from_source(src, _norm_src_globals())


@standin(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    keep = flag_value(keepdims)
    if keep is None:
        return None
    if not _is_array(x):
        if not isinstance(x, (types.Float, types.Integer, types.Boolean)) or not _is_none(ord) \
                or not _is_none(axis) or keep:
            return None
        return lambda x, ord=None, axis=None, keepdims=False: abs(float(x))
    if not _float_like(x):
        return None
    plan = _norm_plan(x, ord, axis)
    if plan is None:
        return None
    mode, ords = plan
    nd = x.ndim
    _check_literal_axes(axis, nd)
    form = _axis_form(axis)
    src = ["def impl(x, ord=None, axis=None, keepdims=False):",
           "    xf = x.astype(np.float64)" if x.dtype != types.float64 else "    xf = x"]
    if mode == "all":
        src.append("    xr = np.ascontiguousarray(xf).reshape(xf.size)")
        src.append("    r = np.sqrt(np.dot(xr, xr))")
        if keep:
            src.append(f"    r = np.full({(1,) * nd!r}, r)")
        src.append("    return r")
        return _compile_source("\n".join(src) + "\n")
    src.append(_axes_source(mode, form, nd).rstrip("\n"))
    K = repr(bool(keep))
    if mode == "vec":
        def body(o):
            return {"inf": [f"r = reduce_max(np.abs(xf), ax_, {K})"],
                    "-inf": [f"r = reduce_min(np.abs(xf), ax_, {K})"],
                    "0": [f"r = reduce_sum((xf != 0).astype(np.float64), ax_, {K})"],
                    "1": [f"r = reduce_sum(np.abs(xf), ax_, {K})"],
                    "2": [f"r = np.sqrt(reduce_sum(xf * xf, ax_, {K}))"],
                    "p": [f"r = np.power(reduce_sum(np.power(np.abs(xf), ord), ax_, {K}), 1.0 / ord)"]}[o]
        src.append(_branches(ords, body).rstrip("\n"))
        src.append("    return r")
        return _compile_source("\n".join(src) + "\n")
    # matrix norms: r is the result without the reduced axes, reshaped at the end for keepdims
    def body(o):
        if o == "fro":
            return ["r = np.sqrt(reduce_sum(xf * xf, (r_, c_), False))"]
        if o in ("2", "-2", "nuc"):
            return [f"r = svd_reduce(xf, r_, c_, {({'2': 0, '-2': 1, 'nuc': 2})[o]})"]
        if o in ("1", "-1"):
            red = "reduce_max" if o == "1" else "reduce_min"
            return ["cc = c_ - 1 if c_ > r_ else c_", f"r = {red}(reduce_sum(np.abs(xf), r_, False), cc, False)"]
        if o in ("inf", "-inf"):
            red = "reduce_max" if o == "inf" else "reduce_min"
            return ["rr = r_ - 1 if r_ > c_ else r_", f"r = {red}(reduce_sum(np.abs(xf), c_, False), rr, False)"]
        return ["raise ValueError('Invalid norm order for matrices.')"]
    src.append(_branches(ords, body).rstrip("\n"))
    if keep:
        if nd == 2:
            src.append("    r = np.full((1, 1), r)")
        else:
            src.append("    r = np.ascontiguousarray(r).reshape(kept2(xf.shape, r_, c_))")
    src.append("    return r")
    return _compile_source("\n".join(src) + "\n")


def kept2(shape, r, c):
    raise NotImplementedError


@nb_overload(kept2)
def _kept2(shape, r, c):
    def impl(shape, r, c):
        return tuple_setitem(tuple_setitem(shape, r, 1), c, 1)
    return impl


def _matrix_perm(shape, r, c):
    raise NotImplementedError


@nb_overload(_matrix_perm)
def _matrix_perm_impl(shape, r, c):
    nd = len(shape)

    def impl(shape, r, c):
        perm = shape
        k = 0
        for d in range(nd):
            if d != r and d != c:
                perm = tuple_setitem(perm, k, d)
                k += 1
        perm = tuple_setitem(perm, nd - 2, r)
        perm = tuple_setitem(perm, nd - 1, c)
        inv = perm
        for d in range(nd):
            inv = tuple_setitem(inv, perm[d], d)
        return perm, inv
    return impl


def svd_reduce(x, r, c, mode):
    """max (mode 0), min (1) or sum (2) of the singular values of the (r, c) matrices of x,
    shaped like x without those axes (a float for a 2-d x); Numba only."""
    raise NotImplementedError


@nb_overload(svd_reduce)
def _svd_reduce(x, r, c, mode):
    nd = x.ndim

    def impl(x, r, c, mode):
        perm, inv = _matrix_perm(x.shape, r, c)
        y = np.ascontiguousarray(x.transpose(perm))
        m = x.shape[r]
        n = x.shape[c]
        nb = _batch_size(y.shape)
        y3 = y.reshape((nb, m, n))
        out = np.empty(nb)
        for b in range(nb):
            s = np.linalg.svd(y3[b], False)[1]
            if mode == 0:
                out[b] = s.max()
            elif mode == 1:
                out[b] = s.min()
            else:
                out[b] = s.sum()
        return _batch_result(out, y.shape)
    return impl


def _batch_result(out, yshape):
    raise NotImplementedError


@nb_overload(_batch_result)
def _batch_result_impl(out, yshape):
    nb = len(yshape) - 2
    if nb == 0:
        return lambda out, yshape: out[0]
    return lambda out, yshape: out.reshape(yshape[:nb])


def svd_grad(x, r, c, mode):
    """d/dx of svd_reduce(x, r, c, mode) (mode 0: largest, 1: smallest singular value, 2: nuclear
    norm): U diag(pick) V^T per matrix, x-shaped; Numba only."""
    raise NotImplementedError


@nb_overload(svd_grad)
def _svd_grad(x, r, c, mode):
    def impl(x, r, c, mode):
        perm, inv = _matrix_perm(x.shape, r, c)
        y = np.ascontiguousarray(x.transpose(perm).astype(np.float64))
        m = x.shape[r]
        n = x.shape[c]
        nb = _batch_size(y.shape)
        y3 = y.reshape((nb, m, n))
        out = np.empty((nb, m, n))
        k = min(m, n)
        for b in range(nb):
            u, s, vt = np.linalg.svd(y3[b], False)
            pick = np.zeros(k)
            if mode == 0:
                pick[0] = 1.0
            elif mode == 1:
                pick[k - 1] = 1.0
            else:
                pick[:] = 1.0
            out[b] = (u * pick.reshape((1, k))) @ vt
        return np.ascontiguousarray(out.reshape(y.shape).transpose(inv))
    return impl


def _expand_to(y, shape):
    raise NotImplementedError


@nb_overload(_expand_to)
def _expand_to_impl(y, shape):
    if _is_array(y):
        return lambda y, shape: np.ascontiguousarray(y).reshape(shape)
    return lambda y, shape: np.full(shape, y)


def _hits(v, ye, ax):
    """Weights 1/count where v attains ye along ax (ties split), else 0 (rh.norm_hits)."""
    raise NotImplementedError


@nb_overload(_hits)
def _hits_impl(v, ye, ax):
    def impl(v, ye, ax):
        hit = (v == ye).astype(np.float64)
        return hit / reduce_sum(hit, ax, True)
    return impl


@overload(rh.norm_grad)
def _norm_grad(x, y, ord=None, axis=None, keepdims=False):  # noqa: A002
    """dy/dx of y = np.linalg.norm(x, ord, axis, keepdims), x-shaped."""
    if flag_value(keepdims) is None:
        return None
    if not _is_array(x):
        if not isinstance(x, (types.Float, types.Integer, types.Boolean)) or not _is_none(ord) or not _is_none(axis):
            return None
        return lambda x, y, ord=None, axis=None, keepdims=False: np.divide(x, y)
    if not _float_like(x):
        return None
    plan = _norm_plan(x, ord, axis)
    if plan is None:
        return None
    mode, ords = plan
    nd = x.ndim
    form = _axis_form(axis)
    src = ["def impl(x, y, ord=None, axis=None, keepdims=False):",
           "    xf = x.astype(np.float64)" if x.dtype != types.float64 else "    xf = x"]
    if mode == "all":
        src.append(f"    ye = expand_to(y, {(1,) * nd!r})")
        src.append("    return xf / ye")
        return _grad_source("\n".join(src) + "\n")
    src.append(_axes_source(mode, form, nd).rstrip("\n"))
    if mode == "vec":
        src.append("    ye = expand_to(y, reduced_shape(xf.shape, ax_, True))")

        def body(o):
            return {"inf": ["g = np.sign(xf) * hits(np.abs(xf), ye, ax_)"],
                    "-inf": ["g = np.sign(xf) * hits(np.abs(xf), ye, ax_)"],
                    "0": ["g = np.zeros(xf.shape)"],
                    "1": ["g = np.sign(xf)"],
                    "2": ["g = xf / ye"],
                    "p": ["g = np.sign(xf) * np.power(np.abs(xf) / ye, ord - 1.0)"]}[o]
    else:
        src.append("    ye = expand_to(y, kept2(xf.shape, r_, c_))")

        def body(o):
            if o == "fro":
                return ["g = xf / ye"]
            if o in ("2", "-2", "nuc"):
                return [f"g = svd_grad(xf, r_, c_, {({'2': 0, '-2': 1, 'nuc': 2})[o]})"]
            if o in ("1", "-1"):
                return ["g = np.sign(xf) * hits(reduce_sum(np.abs(xf), r_, True), ye, c_)"]
            if o in ("inf", "-inf"):
                return ["g = np.sign(xf) * hits(reduce_sum(np.abs(xf), c_, True), ye, r_)"]
            return ["raise ValueError('Invalid norm order for matrices.')"]
    src.append(_branches(ords, body).rstrip("\n"))
    src.append("    return g")
    return _grad_source("\n".join(src) + "\n")


def _grad_source(src):
    return _impl_from_source(src, {**_norm_src_globals(), "expand_to": _expand_to, "hits": _hits,
                                   "svd_grad": svd_grad})


# =============================================================================
# np.trace / np.diagonal
# =============================================================================

def _diag_prep(a, offset, axis1, axis2):
    """(y3, i0, j0, L, yshape): a's (axis1, axis2) planes as a C-contiguous (batch, n1, n2)
    array, the first element of the offset diagonal and its length; Numba only."""
    raise NotImplementedError


@nb_overload(_diag_prep)
def _diag_prep_impl(a, offset, axis1, axis2):
    nd = a.ndim

    def impl(a, offset, axis1, axis2):
        if axis1 < -nd or axis1 >= nd or axis2 < -nd or axis2 >= nd:
            raise ValueError("axis is out of bounds for the array's dimension")
        ax1 = axis1 % nd
        ax2 = axis2 % nd
        if ax1 == ax2:
            raise ValueError("axis1 and axis2 cannot be the same")
        perm, inv = _matrix_perm(a.shape, ax1, ax2)
        y = np.ascontiguousarray(a.transpose(perm))
        n1 = a.shape[ax1]
        n2 = a.shape[ax2]
        nb = _batch_size(y.shape)
        if offset >= 0:
            i0 = 0
            j0 = offset
            L = max(0, min(n1, n2 - offset))
        else:
            i0 = -offset
            j0 = 0
            L = max(0, min(n1 + offset, n2))
        return y.reshape((nb, n1, n2)), i0, j0, L, y.shape
    return impl


def _batch_size(shape):
    raise NotImplementedError


@nb_overload(_batch_size)
def _batch_size_impl(shape):
    def impl(shape):
        n = 1
        for d in range(len(shape) - 2):
            n *= shape[d]
        return n
    return impl


def _sum_dtype(t):
    if t in (types.float64, types.float32, types.complex128):
        return np.dtype(str(t)).type
    if isinstance(t, types.Boolean) or t in _SIGNED:
        return np.int64
    return None


@standin(np.trace)
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if not (_is_none(dtype) and _is_none(out)) or not _is_array(a) or a.ndim < 2:
        return None
    if not all(isinstance(t, (int, types.Integer, types.Omitted)) for t in (offset, axis1, axis2)):
        return None
    acc = _sum_dtype(a.dtype)
    if acc is None:
        return None

    def impl(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        y3, i0, j0, L, yshape = _diag_prep(a, offset, axis1, axis2)
        nb = y3.shape[0]
        res = np.zeros(nb, dtype=acc)
        for b in range(nb):
            s = res[b]
            for k in range(L):
                s += y3[b, i0 + k, j0 + k]
            res[b] = s
        return _batch_result(res, yshape)
    return impl


@standin(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    if not _is_array(a) or a.ndim < 2:
        return None
    if not all(isinstance(t, (int, types.Integer, types.Omitted)) for t in (offset, axis1, axis2)):
        return None
    nb_axes = a.ndim - 2

    def impl(a, offset=0, axis1=0, axis2=1):
        y3, i0, j0, L, yshape = _diag_prep(a, offset, axis1, axis2)
        nb = y3.shape[0]
        res = np.empty((nb, L), dtype=a.dtype)
        for b in range(nb):
            for k in range(L):
                res[b, k] = y3[b, i0 + k, j0 + k]
        return res.reshape(yshape[:nb_axes] + (L,))
    return impl


# =============================================================================
# np.clip and its adjoint helper
# =============================================================================

def _clip_operand_ok(t):
    if _is_none(t):
        return True
    if _is_array(t):
        return t.dtype in (types.float64, types.int64) or isinstance(t.dtype, types.Boolean)
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def _clip_bounds(a_min, a_max, min_, max_):
    """(lo, hi) argument names for the bounds given, or None when NumPy rejects the combination."""
    given = {k: not _is_none(t) for k, t in (("a_min", a_min), ("a_max", a_max), ("min", min_), ("max", max_))}
    if (given["a_min"] or given["a_max"]) and (given["min"] or given["max"]):
        raise TypingError("np.clip: passing `min` or `max` keyword argument when `a_min` and `a_max` "
                          "are provided is forbidden")
    lo = "a_min" if given["a_min"] else "min" if given["min"] else None
    hi = "a_max" if given["a_max"] else "max" if given["max"] else None
    return lo, hi


@standin(np.clip)
def _clip(a, a_min=None, a_max=None, out=None, min=None, max=None):  # noqa: A002
    if not _is_none(out):
        return None
    dt = a.dtype if _is_array(a) else a
    if not (dt == types.float64 or isinstance(dt, types.Integer) and (dt == types.int64 or not _is_array(a))):
        return None      # float32 / small ints / bool: NumPy's result dtype rules differ
    for t in (a_min, a_max, min, max):
        if not _clip_operand_ok(t):
            return None
    lo, hi = _clip_bounds(a_min, a_max, min, max)
    expr = "a"
    if lo is not None:
        expr = f"np.maximum({expr}, {lo})"
    if hi is not None:
        expr = f"np.minimum({expr}, {hi})"
    if lo is None and hi is None:
        expr = "a.copy()" if _is_array(a) else "a"
    return _impl_from_source(
        "import numpy as np\n"
        f"def impl(a, a_min=None, a_max=None, out=None, min=None, max=None):\n    return {expr}\n")


@overload(eh.clip_share)
def _clip_share(a, a_min=None, a_max=None, min=None, max=None, which=0):  # noqa: A002
    w = literal_value(which, default=None)
    if not isinstance(w, int):
        return None
    for t in (a, a_min, a_max, min, max):
        if not _is_none(t) and not _float_like(t):
            return None
    lo = "a_min" if not _is_none(a_min) else "min" if not _is_none(min) else None
    hi = "a_max" if not _is_none(a_max) else "max" if not _is_none(max) else None
    arrays = any(_is_array(t) and t.ndim > 0 for t in (a, a_min, a_max, min, max) if not _is_none(t))
    lines = ["    af = a * 1.0", f"    m = np.maximum(af, {lo})" if lo else "    m = af"]
    if hi:
        lines.append(f"    below = m <= {hi}")
    elif arrays:
        lines.append("    below = np.ones(np.shape(m), dtype=np.bool_)")
    else:
        lines.append("    below = True")
    if w == 2:
        cond = "~below" if arrays else "not below"
    elif w == 1:
        cond = f"below & (af < {lo})" if lo else ("below & False" if arrays else "False")
    else:
        cond = f"below & (af >= {lo})" if lo else "below"
    if arrays:
        lines.append(f"    return np.asarray({cond}).astype(np.float64)")
    else:
        lines.append(f"    return 1.0 if ({cond}) else 0.0")
    return _impl_from_source("import numpy as np\n"
                             "def impl(a, a_min=None, a_max=None, min=None, max=None, which=0):\n"
                             + "\n".join(lines) + "\n")
