"""Stand-ins for Numba: products (see s2s/backends/numba_numpy/__init__.py).

np.matmul (stacks, vectors, broadcasting) and the @ operator of stacks, np.dot / np.inner /
np.vdot / np.tensordot of any rank, np.einsum (literal subscripts: one loop nest generated per
subscript string), np.cross (axisa/axisb/axisc/axis).  Integer and bool inputs are promoted the
way NumPy promotes them (products keep the integer type).  Also the type and shape helpers
linalg.py and product_vjps.py share.
"""
from __future__ import annotations

import operator

import gast
import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload as _nb_overload
from numba.np.numpy_support import as_dtype, from_dtype

from . import products_helpers as ph
from ...frontend.ast_build import name
from ...rules.registry import declare
from ...backends.numba_lower.common import blas_operand, impl_from_source, is_array, is_none, overload
from ...backends.numba_numpy.common import literal_value, standin


# ----- types ---------------------------------------------------------------------------------
def _dtype_of(t):
    """The NumPy dtype of an array or scalar type, None for anything else."""
    if is_array(t):
        return as_dtype(t.dtype)
    if isinstance(t, (types.Boolean, types.Integer, types.Float, types.Complex)):
        return as_dtype(t)
    return None


def _result_dtype(*ts):
    ds = [_dtype_of(t) for t in ts]
    if any(d is None for d in ds):
        return None
    return np.result_type(*ds)


def lin_dtype(t):
    """The dtype np.linalg computes in for an input of type t (ints and bools: float64)."""
    d = _dtype_of(t)
    if d is None or d.kind not in "biufc" or d == np.float16:
        return None
    if d.kind in "biu":
        return np.dtype(np.float64)
    return d


def ndim(t):
    if is_array(t):
        return t.ndim
    if isinstance(t, (types.Boolean, types.Integer, types.Float, types.Complex)):
        return 0
    return None


def as_lin(t):
    """An njit function: its argument as an array of np.linalg's compute dtype."""
    d = lin_dtype(t)
    if d is None:
        return None
    if as_dtype(t.dtype) == d:
        return _identity
    nd = from_dtype(d)
    return numba.njit(lambda x: x.astype(nd))


@numba.njit
def _identity(x):
    return x


# ----- shapes ---------------------------------------------------------------------------------
def shape_size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@_nb_overload(shape_size)
def _prod_ol(shape):
    if len(shape) == 0:
        return lambda shape: 1

    def impl(shape):
        n = 1
        for k in range(len(shape)):
            n *= shape[k]
        return n
    return impl


def bidx(i, bshape, sshape):
    """Flat index into a stack of shape `sshape` (broadcast against `bshape`) of flat index i of
    the broadcast stack `bshape`."""


@_nb_overload(bidx)
def _bidx_ol(i, bshape, sshape):
    if len(sshape) == 0:
        return lambda i, bshape, sshape: 0

    def impl(i, bshape, sshape):
        off = len(bshape) - len(sshape)
        rem = i
        j = 0
        mult = 1
        for d in range(len(bshape) - 1, off - 1, -1):
            idx = rem % bshape[d]
            rem //= bshape[d]
            sd = sshape[d - off]
            if sd != 1:
                j += idx * mult
            mult *= sd
        return j
    return impl


def expand_last(x):
    pass


@_nb_overload(expand_last)
def _expand_last_ol(x):
    return lambda x: np.ascontiguousarray(x).reshape(x.shape + (1,))


def expand_second_last(x):
    pass


@_nb_overload(expand_second_last)
def _expand_second_last_ol(x):
    return lambda x: np.ascontiguousarray(x).reshape(x.shape[:-1] + (1, x.shape[-1]))


# ----- 2-d products ---------------------------------------------------------------------------
def _mm2(A, B):
    """A @ B of two 2-d arrays, in NumPy's result dtype."""


@_nb_overload(_mm2)
def _mm2_ol(A, B):
    rt = _result_dtype(A, B)
    if rt is None or rt.kind not in "biufc":
        return None
    nrt = from_dtype(rt)
    if rt.kind in "fc" and rt != np.float16:
        ca = _identity if as_dtype(A.dtype) == rt else numba.njit(lambda x: x.astype(nrt))
        cb = _identity if as_dtype(B.dtype) == rt else numba.njit(lambda x: x.astype(nrt))

        def blas(A, B):
            if A.shape[1] != B.shape[0]:
                raise ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0")
            if A.shape[0] == 0 or B.shape[1] == 0 or A.shape[1] == 0:
                return np.zeros((A.shape[0], B.shape[1]), dtype=nrt)
            return np.dot(blas_operand(ca(A)), blas_operand(cb(B)))
        return blas
    acc = types.int64 if rt.kind == "b" else nrt
    is_bool = rt.kind == "b"

    def loops(A, B):
        m, k = A.shape
        if B.shape[0] != k:
            raise ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0")
        n = B.shape[1]
        out = np.zeros((m, n), dtype=acc)
        for i in range(m):
            for p in range(k):
                aip = acc(A[i, p])
                for j in range(n):
                    out[i, j] += aip * acc(B[p, j])
        if is_bool:
            return out != 0
        return out
    return loops


def _as_2d_row(x):
    pass


@_nb_overload(_as_2d_row)
def _as_2d_row_ol(x):
    return lambda x: np.ascontiguousarray(x).reshape((1, x.shape[0]))


def _as_2d_col(x):
    pass


@_nb_overload(_as_2d_col)
def _as_2d_col_ol(x):
    return lambda x: np.ascontiguousarray(x).reshape((x.shape[0], 1))


# ----- np.matmul --------------------------------------------------------------------------------
def _matmul_impl(a, b):
    """The implementation of np.matmul(a, b) for array types a, b (None: not covered)."""
    if not (is_array(a) and is_array(b)) or a.ndim == 0 or b.ndim == 0:
        return None
    rt = _result_dtype(a, b)
    if rt is None or rt.kind not in "biufc":
        return None
    na, nb = a.ndim, b.ndim
    if na == 1 and nb == 1:
        def vv(a, b):
            if a.shape[0] != b.shape[0]:
                raise ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0")
            return _mm2(_as_2d_row(a), _as_2d_col(b))[0, 0]
        return vv
    if na <= 2 and nb <= 2:
        if na == 2 and nb == 2:
            return lambda a, b: _mm2(a, b)
        if na == 2:
            return lambda a, b: _mm2(a, _as_2d_col(b))[:, 0]
        return lambda a, b: _mm2(_as_2d_row(a), b)[0]
    src = ["def impl(a, b):"]
    src.append("    A = _as_2d_row(a)" if na == 1 else "    A = a")
    src.append("    B = _as_2d_col(b)" if nb == 1 else "    B = b")
    src += [
        "    M, K = A.shape[-2], A.shape[-1]",
        "    K2, N = B.shape[-2], B.shape[-1]",
        "    if K != K2:",
        "        raise ValueError('matmul: Input operand 1 has a mismatch in its core dimension 0')",
        "    sa = A.shape[:-2]",
        "    sb = B.shape[:-2]",
        "    bs = np.broadcast_shapes(sa, sb)",
        "    n = shape_size(bs)",
        "    A3 = np.ascontiguousarray(A).reshape((shape_size(sa), M, K))",
        "    B3 = np.ascontiguousarray(B).reshape((shape_size(sb), K, N))",
        "    out = np.empty((n, M, N), dtype=rt)",
        "    for i in range(n):",
        "        out[i] = _mm2(A3[bidx(i, bs, sa)], B3[bidx(i, bs, sb)])",
    ]
    tail = "bs" + (" + (M,)" if na > 1 else "") + (" + (N,)" if nb > 1 else "")
    src.append(f"    return out.reshape({tail})")
    glb = {"np": np, "_as_2d_row": _as_2d_row, "_as_2d_col": _as_2d_col, "shape_size": shape_size, "bidx": bidx,
           "_mm2": _mm2, "rt": from_dtype(rt)}
    return impl_from_source("\n".join(src) + "\n", glb)


def matmul(a, b):
    """np.matmul(a, b) in compiled code (all ranks): the stand-in's implementation, callable by name."""
    return np.matmul(a, b)


@overload(matmul)
def _matmul_named(a, b):
    if is_array(a) and is_array(b) and 1 <= a.ndim <= 2 and 1 <= b.ndim <= 2 and a.dtype == b.dtype \
            and a.dtype in (types.float32, types.float64, types.complex64, types.complex128):
        return lambda a, b: a @ b           # Numba's own (BLAS), compiled once per signature and cached
    return _matmul_impl(a, b)


@standin(np.matmul)
def _matmul(x1, x2, out=None):
    if not is_none(out):
        return None
    impl = _matmul_impl(x1, x2)
    if impl is None:
        return None
    return lambda x1, x2, out=None: matmul(x1, x2)


# ----- np.tensordot / dot / inner / vdot ---------------------------------------------------------
def _axes_source(axes, name):
    """Source lines filling `xa`, `xb` (int64 arrays) from a tensordot `axes` argument of type
    `axes` (named `name`), and the count n; None if the form is not covered (or not static)."""
    if isinstance(axes, types.Omitted) or isinstance(axes, int):
        v = axes.value if isinstance(axes, types.Omitted) else axes
        return (["    _n = %d" % v], int(v), "int") if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(axes, types.IntegerLiteral):
        return [], int(axes.literal_value), "int"
    if not isinstance(axes, types.BaseTuple) or len(axes.types) != 2:
        return None
    lines = []
    counts = []
    for side, t in zip(("xa", "xb"), axes.types):
        expr = "%s[%d]" % (name, 0 if side == "xa" else 1)
        if isinstance(t, types.Integer):
            counts.append(1)
            lines.append(f"    {side} = np.array([{expr}], dtype=np.int64)")
        elif isinstance(t, types.List) and t.initial_value is not None \
                and all(isinstance(v, int) for v in t.initial_value):
            counts.append(len(t.initial_value))
            lines.append(f"    {side} = np.array({list(t.initial_value)!r} + [0], dtype=np.int64)[:{len(t.initial_value)}]")
        elif isinstance(t, types.BaseTuple) and all(isinstance(e, types.Integer) for e in t.types):
            n = len(t.types)
            counts.append(n)
            lines.append(f"    {side} = np.zeros({n}, dtype=np.int64)")
            for k in range(n):
                lines.append(f"    {side}[{k}] = {expr}[{k}]")
        else:
            return None
    if counts[0] != counts[1]:
        raise TypingError("np.tensordot: the two axis lists of `axes` differ in length")
    return lines, counts[0], "pair"


def _tensordot_source(na, nb, n):
    """Source of `_td(a, b, xa, xb)`: np.tensordot over axes xa of a and xb of b (int64 arrays)."""
    nout = na + nb - 2 * n
    lines = [
        "def _td(a, b, xa, xb):",
        f"    na, nb, n = {na}, {nb}, {n}",
        "    useda = np.zeros(na, dtype=np.bool_)",
        "    usedb = np.zeros(nb, dtype=np.bool_)",
        "    for k in range(n):",
        "        if xa[k] < -na or xa[k] >= na or xb[k] < -nb or xb[k] >= nb:",
        "            raise ValueError('tensordot: axis out of bounds')",
        "        xa[k] = xa[k] % na",
        "        xb[k] = xb[k] % nb",
        "        if useda[xa[k]] or usedb[xb[k]]:",
        "            raise ValueError('tensordot: repeated axis')",
        "        useda[xa[k]] = True",
        "        usedb[xb[k]] = True",
        "        if a.shape[xa[k]] != b.shape[xb[k]]:",
        "            raise ValueError('shape-mismatch for sum')",
        "    pa = a.shape",
        "    pb = b.shape",
        "    j = 0",
        "    M = 1",
        "    for d in range(na):",
        "        if not useda[d]:",
        "            pa = tuple_setitem(pa, j, d)",
        "            M *= a.shape[d]",
        "            j += 1",
        "    K = 1",
        "    for k in range(n):",
        "        pa = tuple_setitem(pa, na - n + k, xa[k])",
        "        pb = tuple_setitem(pb, k, xb[k])",
        "        K *= a.shape[xa[k]]",
        "    j = n",
        "    N = 1",
        "    for d in range(nb):",
        "        if not usedb[d]:",
        "            pb = tuple_setitem(pb, j, d)",
        "            N *= b.shape[d]",
        "            j += 1",
        "    A2 = np.ascontiguousarray(a.transpose(pa)).reshape((M, K))",
        "    B2 = np.ascontiguousarray(b.transpose(pb)).reshape((K, N))",
        "    r = _mm2(A2, B2)",
        "    oshape = (" + "0, " * nout + ")",
    ]
    if na > n:
        lines += ["    for d in range(na - n):",
                  "        oshape = tuple_setitem(oshape, d, a.shape[pa[d]])"]
    if nb > n:
        lines += ["    for d in range(nb - n):",
                  "        oshape = tuple_setitem(oshape, na - n + d, b.shape[pb[n + d]])"]
    lines += ["    return r.reshape(oshape)"]
    return "\n".join(lines) + "\n"


_TD_CACHE: dict = {}


def tensordot_fn(na, nb, n):
    key = (na, nb, n)
    fn = _TD_CACHE.get(key)
    if fn is None:
        glb = {"np": np, "tuple_setitem": tuple_setitem, "_mm2": _mm2}
        exec(_tensordot_source(na, nb, n), glb)
        fn = _TD_CACHE[key] = numba.njit(glb["_td"])
    return fn


def _tensordot_impl(a, b, axes):
    """Implementation of np.tensordot(a, b, axes) for these types (None: not covered)."""
    if not (is_array(a) and is_array(b)) or a.ndim == 0 or b.ndim == 0:
        return None
    rt = _result_dtype(a, b)
    if rt is None or rt.kind not in "biufc":
        return None
    spec = _axes_source(axes, "axes")
    if spec is None:
        return None
    lines, n, kind = spec
    na, nb = a.ndim, b.ndim
    if n < 0 or n > na or n > nb:
        raise TypingError(f"np.tensordot: axes={n} with arrays of {na} and {nb} dimensions")
    src = ["def impl(a, b, axes=2):"] + lines
    if kind == "int":
        src.append(f"    xa = np.arange({na - n}, {na}).astype(np.int64)")
        src.append(f"    xb = np.arange(0, {n}).astype(np.int64)")
    src.append("    return _td(a, b, xa, xb)")
    return impl_from_source("\n".join(src) + "\n", {"np": np, "_td": tensordot_fn(na, nb, n)})


def tensordot(a, b, axes=2):
    return np.tensordot(a, b, axes)


@_nb_overload(tensordot)
def _tensordot_named(a, b, axes=2):
    return _tensordot_impl(a, b, axes)


@standin(np.tensordot)
def _tensordot(a, b, axes=2):
    return _tensordot_impl(a, b, axes)


def _pair_call(na, nb, xa, xb):
    """An impl(a, b) that is np.tensordot(a, b, ([xa], [xb]))."""
    fn = tensordot_fn(na, nb, 1)

    def impl(a, b):
        return fn(a, b, np.array([xa], dtype=np.int64), np.array([xb], dtype=np.int64))
    return numba.njit(impl)


def _numba_dot_ok(a, b):
    rt = _result_dtype(a, b)
    return rt is not None and rt.kind in "fc" and rt != np.float16 and _dtype_of(a) == rt and _dtype_of(b) == rt


@standin(np.dot)
def _dot(a, b, out=None):
    if not is_none(out):
        return None
    na, nb = ndim(a), ndim(b)
    if na is None or nb is None:
        return None
    if na == 0 or nb == 0:
        return lambda a, b, out=None: a * b
    if na <= 2 and nb <= 2 and _numba_dot_ok(a, b):
        return lambda a, b, out=None: np.dot(a, b)
    if na <= 2 and nb <= 2:
        if _matmul_impl(a, b) is None:
            return None
        return lambda a, b, out=None: matmul(a, b)
    rt = _result_dtype(a, b)
    if rt is None or rt.kind not in "biufc":
        return None
    impl = _pair_call(na, nb, na - 1, max(nb - 2, 0))
    return lambda a, b, out=None: impl(a, b)


@standin(np.inner)
def _inner(a, b):
    na, nb = ndim(a), ndim(b)
    if na is None or nb is None:
        return None
    if na == 0 or nb == 0:
        return lambda a, b: a * b
    if na == 1 and nb == 1 and _numba_dot_ok(a, b):
        return lambda a, b: np.dot(a, b)
    rt = _result_dtype(a, b)
    if rt is None or rt.kind not in "biufc":
        return None
    impl = _pair_call(na, nb, na - 1, nb - 1)
    if na == 1 and nb == 1:
        return lambda a, b: impl(a, b)[()]
    return lambda a, b: impl(a, b)


@standin(np.vdot)
def _vdot(a, b):
    if not (is_array(a) and is_array(b)):
        return None
    rt = _result_dtype(a, b)
    if rt is None or rt.kind not in "biufc":
        return None
    conj = rt.kind == "c" and as_dtype(a.dtype).kind == "c"

    def impl(a, b):
        x = np.ascontiguousarray(a).ravel()
        y = np.ascontiguousarray(b).ravel()
        if x.size != y.size:
            raise ValueError("vdot: the arrays differ in size")
        if conj:
            x = np.conj(x)
        return _mm2(_as_2d_row(x), _as_2d_col(y))[0, 0]
    return impl


# ----- np.einsum --------------------------------------------------------------------------------
def _einsum_source(subscripts: str, ndims: list[int]):
    """Loop-nest source of np.einsum(subscripts, *operands) for operands of these ranks."""
    s = subscripts.replace(" ", "")
    lhs = s.split("->")[0]
    specs = lhs.split(",")
    if len(specs) != len(ndims) or s.count("->") > 1:
        raise TypingError(f"np.einsum: subscripts {subscripts!r} name {len(specs)} operands, given {len(ndims)}")
    for sp, nd in zip(specs, ndims):
        if sp.count("...") > 1 or any(not (ch.isalpha() or ch == ".") for ch in sp):
            raise TypingError(f"np.einsum: subscripts {subscripts!r} not covered in compiled code")
        if len(sp.replace("...", "")) > nd or ("..." not in sp and len(sp) != nd):
            raise TypingError(f"np.einsum: subscripts {subscripts!r} do not match the operand dimensions {ndims}")
    rhs_given = s.split("->")[1] if "->" in s else None
    if rhs_given is not None and (any(not (ch.isalpha() or ch == ".") for ch in rhs_given)
                                  or len(set(rhs_given.replace("...", ""))) != len(rhs_given.replace("...", ""))):
        raise TypingError(f"np.einsum: output subscripts of {subscripts!r} not covered in compiled code")
    ins, rhs = ph._einsum_parse(subscripts, ndims)
    # the letters standing for ellipsis axes (those _einsum_parse chose)
    ell_letters = set("".join(ins)) - set(lhs.replace("...", "").replace(",", ""))
    for ch in rhs:
        if not any(ch in sp for sp in ins):
            raise TypingError(f"np.einsum: output subscript {ch!r} of {subscripts!r} is in no operand")
    letters = []
    for sp in ins:
        for ch in sp:
            if ch not in letters:
                letters.append(ch)
    summed = [ch for ch in letters if ch not in rhs]
    order = list(rhs) + summed
    var = {ch: f"i_{ch}" for ch in letters}
    size = {ch: f"n_{ch}" for ch in letters}
    lines = ["def impl(subscripts, *operands):"]
    for k in range(len(ins)):
        lines.append(f"    x{k} = operands[{k}]")
    # sizes: the first operand axis with the letter; others must agree (ellipsis axes broadcast)
    first = {}
    for k, sp in enumerate(ins):
        for ax, ch in enumerate(sp):
            if ch not in first:
                first[ch] = (k, ax)
                if ch in ell_letters:
                    lines.append(f"    {size[ch]} = 1")
                else:
                    lines.append(f"    {size[ch]} = x{k}.shape[{ax}]")
    for k, sp in enumerate(ins):
        for ax, ch in enumerate(sp):
            d = f"x{k}.shape[{ax}]"
            if ch in ell_letters:
                lines.append(f"    if {d} != 1:")
                lines.append(f"        if {size[ch]} != 1 and {size[ch]} != {d}:")
                lines.append("            raise ValueError('einsum: operands could not be broadcast together')")
                lines.append(f"        {size[ch]} = {d}")
            elif (k, ax) != first[ch]:
                lines.append(f"    if {d} != {size[ch]}:")
                lines.append("        raise ValueError('einsum: the operands disagree in the size of a subscript')")

    def index(k, sp):
        parts = []
        for ax, ch in enumerate(sp):
            if ch in ell_letters:
                parts.append(f"({var[ch]} if x{k}.shape[{ax}] != 1 else 0)")
            else:
                parts.append(var[ch])
        return "x%d[%s]" % (k, ", ".join(parts)) if parts else f"x{k}[()]"
    prod = " * ".join(f"acc({index(k, sp)})" for k, sp in enumerate(ins))
    if rhs:
        lines.append("    out = np.zeros((%s,), dtype=acc)" % ", ".join(size[ch] for ch in rhs))
    else:
        lines.append("    out = acc(0)")
    ind = "    "
    for ch in order:
        lines.append(f"{ind}for {var[ch]} in range({size[ch]}):")
        ind += "    "
    if rhs:
        lines.append(f"{ind}out[{', '.join(var[ch] for ch in rhs)}] += {prod}")
    else:
        lines.append(f"{ind}out += {prod}")
    lines.append("    return post(out)")
    return "\n".join(lines) + "\n"


@standin(np.einsum)
def _einsum(subscripts, *operands):
    if not isinstance(subscripts, types.StringLiteral):
        return None
    if len(operands) == 1 and isinstance(operands[0], types.StarArgTuple):
        operands = tuple(operands[0].types)
    if not operands or not all(is_array(t) or ndim(t) == 0 for t in operands):
        return None
    rt = _result_dtype(*operands)
    if rt is None or rt.kind not in "biufc":
        return None
    ndims = [ndim(t) for t in operands]
    if any(not is_array(t) for t in operands):
        return None
    src = _einsum_source(subscripts.literal_value, ndims)
    acc = types.int64 if rt.kind == "b" else from_dtype(rt)
    post = numba.njit(lambda x: x != 0) if rt.kind == "b" else _identity
    return impl_from_source(src, {"np": np, "acc": acc, "post": post})


# ----- np.cross -----------------------------------------------------------------------------------
def _axis_arg(t, name):
    """A cross axis argument: its literal int, or None for None; raises for others."""
    v = literal_value(t, default=NotImplemented)
    if v is NotImplemented or (v is not None and (not isinstance(v, int) or isinstance(v, bool))):
        raise TypingError(f"np.cross: {name} must be a constant int in compiled code")
    return v


@standin(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if not (is_array(a) and is_array(b)) or a.ndim == 0 or b.ndim == 0:
        return None
    rt = _result_dtype(a, b)
    if rt is None or rt.kind not in "iufc":
        return None
    ax = _axis_arg(axis, "axis")
    xa, xb, xc = (ax, ax, ax) if ax is not None else (_axis_arg(axisa, "axisa"), _axis_arg(axisb, "axisb"),
                                                       _axis_arg(axisc, "axisc"))
    na, nb = a.ndim, b.ndim
    if not (-na <= xa < na) or not (-nb <= xb < nb):
        raise TypingError("np.cross: axisa or axisb out of bounds")
    nout = max(na, nb)      # the broadcast rank of the vectors' other axes, plus the 3-vector axis
    if not (-nout <= xc < nout):
        raise TypingError("np.cross: axisc out of bounds")
    xa, xb, xc = xa % na, xb % nb, xc % nout
    nrt = from_dtype(rt)

    def impl(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        am = np.moveaxis(a, xa, -1)
        bm = np.moveaxis(b, xb, -1)
        da, db = am.shape[-1], bm.shape[-1]
        if (da != 2 and da != 3) or (db != 2 and db != 3):
            raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
        if da == 2 and db == 2:
            raise ValueError("np.cross of two 2-vectors (a result of lower rank) has no compiled version: "
                             "s2s compiles np.cross for 3-vectors")
        a0 = am[..., 0]
        a1 = am[..., 1]
        b0 = bm[..., 0]
        b1 = bm[..., 1]
        shape = np.broadcast_shapes(am.shape[:-1], bm.shape[:-1])
        cp = np.empty(shape + (3,), dtype=nrt)
        if da == 3 and db == 3:
            a2 = am[..., 2]
            b2 = bm[..., 2]
            cp[..., 0] = a1 * b2 - a2 * b1
            cp[..., 1] = a2 * b0 - a0 * b2
            cp[..., 2] = a0 * b1 - a1 * b0
        elif da == 2:
            b2 = bm[..., 2]
            cp[..., 0] = a1 * b2
            cp[..., 1] = -(a0 * b2)
            cp[..., 2] = a0 * b1 - a1 * b0
        else:
            a2 = am[..., 2]
            cp[..., 0] = -(a2 * b1)
            cp[..., 1] = a2 * b0
            cp[..., 2] = a0 * b1 - a1 * b0
        return np.ascontiguousarray(np.moveaxis(cp, -1, xc))
    return impl


# ----- the @ operator of stacks -----------------------------------------------------------------
# Compiled code spells np.matmul(a, b) `a @ b` (s2s/backends/numba_cpu.py), and users write `@`:
# Numba's operator covers 1-d and 2-d operands only; stacks (3-d and up) take np.matmul's rules.
@_nb_overload(operator.matmul)
def _matmul_operator(a, b):
    if is_array(a) and is_array(b) and (a.ndim > 2 or b.ndim > 2):
        return _matmul_impl(a, b)
    return None


def _matmul_call(node):
    """`a @ b` -> np.matmul(a, b) in compiled code (OpRule.numba_call, read by backends/numba_cpu.lower):
    np.matmul's stand-in calls `matmul`, whose implementation per signature is kept in the disk
    cache, where Numba's `@` would be compiled again inside every function (0.4-0.8 s a process)."""
    if isinstance(node, gast.BinOp):
        new = gast.Call(func=gast.Attribute(name("np"), "matmul", gast.Load()), args=[node.left, node.right],
                        keywords=[])
        new.s2s_fn = np.matmul
        return new
    return None


declare(np.matmul, numba_call=_matmul_call)
