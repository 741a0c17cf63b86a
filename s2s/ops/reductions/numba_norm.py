"""Stand-ins for Numba: np.linalg.norm (see s2s/backends/numba_numpy/__init__.py).

np.linalg.norm (every ord NumPy accepts for real input, axis None / int / pair, keepdims) and the
Numba version of its adjoint helper `reductions/helpers.norm_grad` (its plain version does not
compile).  (np.trace and np.diagonal: s2s/ops/linalg/numba_trace.py.)
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload as nb_overload

from . import helpers as rh
from ...backends.numba_lower.common import impl_from_source, is_array, is_none, overload
from .numba_kernels import reduce_sum
from ...backends.numba_numpy.common import flag_value, literal_value, standin
from .numba import axis_form, check_literal_axes, float_like, nan_max, nan_min, reduced_shape, safe_sum


# =============================================================================
# np.linalg.norm and its adjoint helper
# =============================================================================

_VEC_ORDS = ("inf", "-inf", "0", "1", "2", "p")
_MAT_ORDS = ("2", "-2", "1", "-1", "inf", "-inf")


def _ord_spec(ord_):
    """('none',) / ('str', s) / ('num', value) / ('runtime',); None: unsupported."""
    if is_none(ord_):
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
    nd = x.ndim if is_array(x) else 0
    spec = _ord_spec(ord_)
    form = axis_form(axis)
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
        _NORM_GLOBALS.update(np=np, reduce_sum=safe_sum, reduce_max=nan_max, reduce_min=nan_min,
                             svd_reduce=svd_reduce, reduced_shape=reduced_shape, kept2=kept2)
    return _NORM_GLOBALS


def _compile_source(src):
    return impl_from_source(src, _norm_src_globals())


@standin(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    keep = flag_value(keepdims)
    if keep is None:
        return None
    if not is_array(x):
        if not isinstance(x, (types.Float, types.Integer, types.Boolean)) or not is_none(ord) \
                or not is_none(axis) or keep:
            return None
        return lambda x, ord=None, axis=None, keepdims=False: abs(float(x))
    if not float_like(x):
        return None
    plan = _norm_plan(x, ord, axis)
    if plan is None:
        return None
    mode, ords = plan
    nd = x.ndim
    check_literal_axes(axis, nd)
    form = axis_form(axis)
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


def matrix_perm(shape, r, c):
    raise NotImplementedError


@nb_overload(matrix_perm)
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

    def impl(x, r, c, mode):
        perm, inv = matrix_perm(x.shape, r, c)
        y = np.ascontiguousarray(x.transpose(perm))
        m = x.shape[r]
        n = x.shape[c]
        nb = matrix_batch_size(y.shape)
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
        return matrix_batch_result(out, y.shape)
    return impl


def matrix_batch_result(out, yshape):
    raise NotImplementedError


@nb_overload(matrix_batch_result)
def _matrix_batch_result_impl(out, yshape):
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
        perm, inv = matrix_perm(x.shape, r, c)
        y = np.ascontiguousarray(x.transpose(perm).astype(np.float64))
        m = x.shape[r]
        n = x.shape[c]
        nb = matrix_batch_size(y.shape)
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
    if is_array(y):
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
    if not is_array(x):
        if not isinstance(x, (types.Float, types.Integer, types.Boolean)) or not is_none(ord) or not is_none(axis):
            return None
        return lambda x, y, ord=None, axis=None, keepdims=False: np.divide(x, y) if y != 0.0 else 0.0
    if not float_like(x):
        return None
    plan = _norm_plan(x, ord, axis)
    if plan is None:
        return None
    mode, ords = plan
    nd = x.ndim
    form = axis_form(axis)
    src = ["def impl(x, y, ord=None, axis=None, keepdims=False):",
           "    xf = x.astype(np.float64)" if x.dtype != types.float64 else "    xf = x"]
    if mode == "all":
        src.append(f"    ye = expand_to(y, {(1,) * nd!r})")
        src.append("    return xf / np.where(ye == 0.0, np.inf, ye)")     # 0 at x = 0 (rh.norm_grad)
        return _grad_source("\n".join(src) + "\n")
    src.append(_axes_source(mode, form, nd).rstrip("\n"))
    if mode == "vec":
        src.append("    ye = expand_to(y, reduced_shape(xf.shape, ax_, True))")
        src.append("    ys = np.where(ye == 0.0, np.inf, ye)")     # 0 at x = 0 (rh.norm_grad)

        def body(o):
            return {"inf": ["g = np.sign(xf) * hits(np.abs(xf), ye, ax_)"],
                    "-inf": ["g = np.sign(xf) * hits(np.abs(xf), ye, ax_)"],
                    "0": ["g = np.zeros(xf.shape)"],
                    "1": ["g = np.sign(xf)"],
                    "2": ["g = xf / ys"],
                    "p": ["g = np.sign(xf) * np.power(np.abs(xf) / ys, ord - 1.0)"]}[o]
    else:
        src.append("    ye = expand_to(y, kept2(xf.shape, r_, c_))")
        src.append("    ys = np.where(ye == 0.0, np.inf, ye)")

        def body(o):
            if o == "fro":
                return ["g = xf / ys"]
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
    return impl_from_source(src, {**_norm_src_globals(), "expand_to": _expand_to, "hits": _hits,
                                  "svd_grad": svd_grad})


def matrix_batch_size(shape):
    raise NotImplementedError


@nb_overload(matrix_batch_size)
def _matrix_batch_size_impl(shape):
    def impl(shape):
        n = 1
        for d in range(len(shape) - 2):
            n *= shape[d]
        return n
    return impl
