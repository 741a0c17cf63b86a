"""Stand-ins for Numba: linear algebra and products (see s2s/backends/numba_numpy/__init__.py).

np.matmul (stacks, vectors, broadcasting), np.dot / np.inner / np.vdot / np.tensordot of any
rank, np.einsum (literal subscripts: one loop nest generated per subscript string), np.cross
(axisa/axisb/axisc/axis), and np.linalg functions of stacks of matrices (det, slogdet, inv,
solve, cholesky(upper=), eigvalsh/eigh(UPLO=), qr, svd(compute_uv=, full_matrices=), svdvals):
Numba's np.linalg takes one 2-d matrix, so stacks loop over it.  Integer and bool inputs are
promoted the way NumPy promotes them (products keep the integer type; np.linalg works in float64).

Also the Numba versions of the adjoint helpers of these ops (s2s/rules/products_helpers.py and
linalg_helpers.py) whose plain bodies use Python lists or rank-changing calls Numba cannot type.
"""
from __future__ import annotations

import operator

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload as _nb_overload
from numba.np import linalg as _nblinalg
from numba.np.numpy_support import as_dtype, from_dtype

from ...rules import linalg_helpers as lh
from ...rules import products_helpers as ph
from ..numba_lower import _blas_operand, _impl_from_source, _is_array, _is_none, compiled_helper, overload
from . import flag_value, literal_value, standin


# ----- types ---------------------------------------------------------------------------------
def _dtype_of(t):
    """The NumPy dtype of an array or scalar type, None for anything else."""
    if _is_array(t):
        return as_dtype(t.dtype)
    if isinstance(t, (types.Boolean, types.Integer, types.Float, types.Complex)):
        return as_dtype(t)
    return None


def _result_dtype(*ts):
    ds = [_dtype_of(t) for t in ts]
    if any(d is None for d in ds):
        return None
    return np.result_type(*ds)


def _lin_dtype(t):
    """The dtype np.linalg computes in for an input of type t (ints and bools: float64)."""
    d = _dtype_of(t)
    if d is None or d.kind not in "biufc" or d == np.float16:
        return None
    if d.kind in "biu":
        return np.dtype(np.float64)
    return d


def _ndim(t):
    if _is_array(t):
        return t.ndim
    if isinstance(t, (types.Boolean, types.Integer, types.Float, types.Complex)):
        return 0
    return None


def _as_lin(t):
    """An njit function: its argument as an array of np.linalg's compute dtype."""
    d = _lin_dtype(t)
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
def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@_nb_overload(_prod)
def _prod_ol(shape):
    if len(shape) == 0:
        return lambda shape: 1

    def impl(shape):
        n = 1
        for k in range(len(shape)):
            n *= shape[k]
        return n
    return impl


def _bidx(i, bshape, sshape):
    """Flat index into a stack of shape `sshape` (broadcast against `bshape`) of flat index i of
    the broadcast stack `bshape`."""


@_nb_overload(_bidx)
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
            return np.dot(_blas_operand(ca(A)), _blas_operand(cb(B)))
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
    if not (_is_array(a) and _is_array(b)) or a.ndim == 0 or b.ndim == 0:
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
        "    n = _prod(bs)",
        "    A3 = np.ascontiguousarray(A).reshape((_prod(sa), M, K))",
        "    B3 = np.ascontiguousarray(B).reshape((_prod(sb), K, N))",
        "    out = np.empty((n, M, N), dtype=rt)",
        "    for i in range(n):",
        "        out[i] = _mm2(A3[_bidx(i, bs, sa)], B3[_bidx(i, bs, sb)])",
    ]
    tail = "bs" + (" + (M,)" if na > 1 else "") + (" + (N,)" if nb > 1 else "")
    src.append(f"    return out.reshape({tail})")
    glb = {"np": np, "_as_2d_row": _as_2d_row, "_as_2d_col": _as_2d_col, "_prod": _prod, "_bidx": _bidx,
           "_mm2": _mm2, "rt": from_dtype(rt)}
    return _impl_from_source("\n".join(src) + "\n", glb)


def matmul(a, b):
    """np.matmul(a, b) in compiled code (all ranks): the stand-in's implementation, callable by name."""
    return np.matmul(a, b)


@_nb_overload(matmul)
def _matmul_named(a, b):
    return _matmul_impl(a, b)


@standin(np.matmul)
def _matmul(x1, x2, out=None):
    if not _is_none(out):
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


def _tensordot_fn(na, nb, n):
    key = (na, nb, n)
    fn = _TD_CACHE.get(key)
    if fn is None:
        glb = {"np": np, "tuple_setitem": tuple_setitem, "_mm2": _mm2}
        exec(_tensordot_source(na, nb, n), glb)
        fn = _TD_CACHE[key] = numba.njit(glb["_td"])
    return fn


def _tensordot_impl(a, b, axes):
    """Implementation of np.tensordot(a, b, axes) for these types (None: not covered)."""
    if not (_is_array(a) and _is_array(b)) or a.ndim == 0 or b.ndim == 0:
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
    return _impl_from_source("\n".join(src) + "\n", {"np": np, "_td": _tensordot_fn(na, nb, n)})


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
    fn = _tensordot_fn(na, nb, 1)

    def impl(a, b):
        return fn(a, b, np.array([xa], dtype=np.int64), np.array([xb], dtype=np.int64))
    return numba.njit(impl)


def _numba_dot_ok(a, b):
    rt = _result_dtype(a, b)
    return rt is not None and rt.kind in "fc" and rt != np.float16 and _dtype_of(a) == rt and _dtype_of(b) == rt


@standin(np.dot)
def _dot(a, b, out=None):
    if not _is_none(out):
        return None
    na, nb = _ndim(a), _ndim(b)
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
    na, nb = _ndim(a), _ndim(b)
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
    if not (_is_array(a) and _is_array(b)):
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
    if not operands or not all(_is_array(t) or _ndim(t) == 0 for t in operands):
        return None
    rt = _result_dtype(*operands)
    if rt is None or rt.kind not in "biufc":
        return None
    ndims = [_ndim(t) for t in operands]
    if any(not _is_array(t) for t in operands):
        return None
    src = _einsum_source(subscripts.literal_value, ndims)
    acc = types.int64 if rt.kind == "b" else from_dtype(rt)
    post = numba.njit(lambda x: x != 0) if rt.kind == "b" else _identity
    return _impl_from_source(src, {"np": np, "acc": acc, "post": post})


# ----- np.cross -----------------------------------------------------------------------------------
def _axis_arg(t, name):
    """A cross axis argument: its literal int, or None for None; raises for others."""
    v = literal_value(t, default=NotImplemented)
    if v is NotImplemented or (v is not None and (not isinstance(v, int) or isinstance(v, bool))):
        raise TypingError(f"np.cross: {name} must be a constant int in compiled code")
    return v


@standin(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if not (_is_array(a) and _is_array(b)) or a.ndim == 0 or b.ndim == 0:
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


# ----- np.linalg of stacks ---------------------------------------------------------------------
_LINALG = np.linalg


def _stack3(x):
    """x (..., m, n) as a C-contiguous (k, m, n) stack."""


@_nb_overload(_stack3)
def _stack3_ol(x):
    def impl(x):
        return np.ascontiguousarray(x).reshape((_prod(x.shape[:-2]), x.shape[-2], x.shape[-1]))
    return impl


def _lin_input(a, name, min_ndim=2):
    if not _is_array(a) or a.ndim < min_ndim:
        return None
    conv = _as_lin(a)
    if conv is None:
        return None
    return conv


@standin(np.linalg.det)
def _det(a):
    conv = _lin_input(a, "det")
    if conv is None:
        return None
    if a.ndim == 2:
        return lambda a: np.linalg.det(conv(a))
    dt = from_dtype(_lin_dtype(a))

    def impl(a):
        x = _stack3(conv(a))
        out = np.empty(x.shape[0], dtype=dt)
        for i in range(x.shape[0]):
            out[i] = np.linalg.det(x[i])
        return out.reshape(a.shape[:-2])
    return impl


@standin(np.linalg.slogdet)
def _slogdet(a):
    conv = _lin_input(a, "slogdet")
    if conv is None:
        return None
    if a.ndim == 2:
        return lambda a: np.linalg.slogdet(conv(a))
    d = _lin_dtype(a)
    dt = from_dtype(d)
    rdt = from_dtype(np.empty(0, d).real.dtype)

    def impl(a):
        x = _stack3(conv(a))
        sign = np.empty(x.shape[0], dtype=dt)
        logabs = np.empty(x.shape[0], dtype=rdt)
        for i in range(x.shape[0]):
            s, la = np.linalg.slogdet(x[i])
            sign[i] = s
            logabs[i] = la
        return sign.reshape(a.shape[:-2]), logabs.reshape(a.shape[:-2])
    return impl


def _stacked_matrix_fn(fn):
    """impl for a function matrix -> matrix (inv) of a stack."""
    def typer(a):
        conv = _lin_input(a, fn.__name__)
        if conv is None:
            return None
        if a.ndim == 2:
            return lambda a: fn(conv(a))
        dt = from_dtype(_lin_dtype(a))

        def impl(a):
            x = _stack3(conv(a))
            out = np.empty(x.shape, dtype=dt)
            for i in range(x.shape[0]):
                out[i] = fn(x[i])
            return out.reshape(a.shape)
        return impl
    return typer


standin(np.linalg.inv)(_stacked_matrix_fn(np.linalg.inv))


@standin(np.linalg.solve)
def _solve(a, b):
    ca, cb = _lin_input(a, "solve"), _lin_input(b, "solve", 1)
    if ca is None or cb is None:
        return None
    d = np.result_type(_lin_dtype(a), _lin_dtype(b))
    dt = from_dtype(d)
    ca = ca if _lin_dtype(a) == d else numba.njit(lambda x: x.astype(dt))
    cb = cb if _lin_dtype(b) == d else numba.njit(lambda x: x.astype(dt))
    if a.ndim == 2 and b.ndim <= 2:
        return lambda a, b: np.linalg.solve(ca(a), cb(b))
    if b.ndim == 1:
        def vec(a, b):
            x = _stack3(ca(a))
            v = cb(b)
            out = np.empty((x.shape[0], x.shape[1]), dtype=dt)
            for i in range(x.shape[0]):
                out[i] = np.linalg.solve(x[i], v)
            return out.reshape(a.shape[:-1])
        return vec

    def impl(a, b):
        sa = a.shape[:-2]
        sb = b.shape[:-2]
        bs = np.broadcast_shapes(sa, sb)
        x = _stack3(ca(a))
        y = _stack3(cb(b))
        if x.shape[1] != x.shape[2]:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
        if y.shape[1] != x.shape[1]:
            raise ValueError("solve: Input operand 1 has a mismatch in its core dimension 0")
        n = _prod(bs)
        out = np.empty((n, y.shape[1], y.shape[2]), dtype=dt)
        for i in range(n):
            out[i] = np.linalg.solve(x[_bidx(i, bs, sa)], y[_bidx(i, bs, sb)])
        return out.reshape(bs + (y.shape[1], y.shape[2]))
    return impl


@standin(np.linalg.cholesky)
def _cholesky(a, upper=False):
    conv = _lin_input(a, "cholesky")
    up = flag_value(upper)
    if conv is None or up is None:
        return None
    dt = from_dtype(_lin_dtype(a))
    conj = _lin_dtype(a).kind == "c"

    def one(x):
        L = np.linalg.cholesky(x)
        if up:
            U = np.ascontiguousarray(L.T)
            return np.conj(U) if conj else U
        return L
    one = numba.njit(one)
    if a.ndim == 2:
        return lambda a, upper=False: one(conv(a))

    def impl(a, upper=False):
        x = _stack3(conv(a))
        out = np.empty(x.shape, dtype=dt)
        for i in range(x.shape[0]):
            out[i] = one(x[i])
        return out.reshape(a.shape)
    return impl


def _uplo_value(UPLO):
    v = literal_value(UPLO, default=NotImplemented)
    if not isinstance(v, str) or v.upper() not in ("L", "U"):
        return None
    return v.upper()


def _evd_fn(dtype, jobz: str, uplo: str):
    """njit x (2-d) -> (w, v-or-copy) of LAPACK's syevd/heevd with this jobz and uplo (what NumPy's
    eigh/eigvalsh call)."""
    nbt = from_dtype(dtype)
    xxxevd = _nblinalg._LAPACK().numba_ez_xxxevd(nbt)
    kind = ord(_nblinalg.get_blas_kind(nbt, "eigh"))
    JOBZ, UPLO = ord(jobz), ord(uplo)
    wdt = from_dtype(np.empty(0, dtype).real.dtype)
    copy_f = _nblinalg._copy_to_fortran_order
    check_err = _nblinalg._handle_err_maybe_convergence_problem
    live = _nblinalg._dummy_liveness_func

    @numba.njit
    def evd(a):
        n = a.shape[-1]
        if a.shape[-2] != n:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square.")
        acpy = copy_f(a)
        w = np.empty(n, dtype=wdt)
        if n == 0:
            return w, acpy
        r = xxxevd(kind, JOBZ, UPLO, n, acpy.ctypes, n, w.ctypes)
        check_err(r)
        live([acpy.size, w.size])
        return w, acpy
    return evd


@standin(np.linalg.eigvalsh)
def _eigvalsh(a, UPLO="L"):  # noqa: N803
    conv = _lin_input(a, "eigvalsh")
    uplo = _uplo_value(UPLO)
    if conv is None or uplo is None:
        return None
    evd = _evd_fn(_lin_dtype(a), "N", uplo)
    if a.ndim == 2:
        return lambda a, UPLO="L": evd(conv(a))[0]
    wdt = from_dtype(np.empty(0, _lin_dtype(a)).real.dtype)

    def impl(a, UPLO="L"):  # noqa: N803
        x = _stack3(conv(a))
        out = np.empty((x.shape[0], x.shape[1]), dtype=wdt)
        for i in range(x.shape[0]):
            out[i] = evd(x[i])[0]
        return out.reshape(a.shape[:-1])
    return impl


@standin(np.linalg.eigh)
def _eigh(a, UPLO="L"):  # noqa: N803
    conv = _lin_input(a, "eigh")
    uplo = _uplo_value(UPLO)
    if conv is None or uplo is None:
        return None
    evd = _evd_fn(_lin_dtype(a), "V", uplo)
    if a.ndim == 2:
        return lambda a, UPLO="L": evd(conv(a))
    dt = from_dtype(_lin_dtype(a))
    wdt = from_dtype(np.empty(0, _lin_dtype(a)).real.dtype)

    def impl(a, UPLO="L"):  # noqa: N803
        x = _stack3(conv(a))
        w = np.empty((x.shape[0], x.shape[1]), dtype=wdt)
        v = np.empty(x.shape, dtype=dt)
        for i in range(x.shape[0]):
            wi, vi = evd(x[i])
            w[i] = wi
            v[i] = vi
        return w.reshape(a.shape[:-1]), v.reshape(a.shape)
    return impl


@standin(np.linalg.qr)
def _qr(a, mode="reduced"):
    conv = _lin_input(a, "qr")
    if conv is None or literal_value(mode) != "reduced":
        return None
    if a.ndim == 2:
        return lambda a, mode="reduced": np.linalg.qr(conv(a))
    dt = from_dtype(_lin_dtype(a))

    def impl(a, mode="reduced"):
        x = _stack3(conv(a))
        m, n = x.shape[1], x.shape[2]
        k = min(m, n)
        q = np.empty((x.shape[0], m, k), dtype=dt)
        r = np.empty((x.shape[0], k, n), dtype=dt)
        for i in range(x.shape[0]):
            qi, ri = np.linalg.qr(x[i])
            q[i] = qi
            r[i] = ri
        return q.reshape(a.shape[:-2] + (m, k)), r.reshape(a.shape[:-2] + (k, n))
    return impl


def _gesdd_values_fn(dtype):
    """njit x (2-d) -> singular values, LAPACK's gesdd with jobz='N' (what NumPy's
    svd(compute_uv=False) calls)."""
    nbt = from_dtype(dtype)
    gesdd = _nblinalg._LAPACK().numba_ez_gesdd(nbt)
    kind = ord(_nblinalg.get_blas_kind(nbt, "svd"))
    JOBZ = ord("N")
    sdt = from_dtype(np.empty(0, dtype).real.dtype)
    copy_f = _nblinalg._copy_to_fortran_order
    check_err = _nblinalg._handle_err_maybe_convergence_problem
    check_finite = _nblinalg._check_finite_matrix
    live = _nblinalg._dummy_liveness_func

    @numba.njit
    def values(a):
        n = a.shape[-1]
        m = a.shape[-2]
        if n == 0 or m == 0:
            raise np.linalg.LinAlgError("Arrays cannot be empty")
        check_finite(a)
        acpy = copy_f(a)
        s = np.empty(min(m, n), dtype=sdt)
        u = np.empty((1, 1), dtype=nbt)
        vt = np.empty((1, 1), dtype=nbt)
        r = gesdd(kind, JOBZ, m, n, acpy.ctypes, m, s.ctypes, u.ctypes, 1, vt.ctypes, 1)
        check_err(r)
        live([acpy.size, vt.size, u.size, s.size])
        return s
    return values


def _svdvals_impl(a):
    conv = _lin_input(a, "svd")
    if conv is None:
        return None
    values = _gesdd_values_fn(_lin_dtype(a))
    if a.ndim == 2:
        return numba.njit(lambda a: values(conv(a)))
    sdt = from_dtype(np.empty(0, _lin_dtype(a)).real.dtype)

    def impl(a):
        x = _stack3(conv(a))
        k = min(x.shape[1], x.shape[2])
        out = np.empty((x.shape[0], k), dtype=sdt)
        for i in range(x.shape[0]):
            out[i] = values(x[i])
        return out.reshape(a.shape[:-2] + (k,))
    return numba.njit(impl)


@standin(np.linalg.svd)
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    full, uv, herm = flag_value(full_matrices), flag_value(compute_uv), flag_value(hermitian)
    if full is None or uv is None or herm is not False:
        return None
    if not uv:
        vals = _svdvals_impl(a)
        if vals is None:
            return None
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: vals(a)  # noqa: E731
    conv = _lin_input(a, "svd")
    if conv is None:
        return None
    if a.ndim == 2:
        return lambda a, full_matrices=True, compute_uv=True, hermitian=False: np.linalg.svd(conv(a), full)
    dt = from_dtype(_lin_dtype(a))
    sdt = from_dtype(np.empty(0, _lin_dtype(a)).real.dtype)

    def impl(a, full_matrices=True, compute_uv=True, hermitian=False):
        x = _stack3(conv(a))
        m, n = x.shape[1], x.shape[2]
        k = min(m, n)
        uc = m if full else k
        vr = n if full else k
        u = np.empty((x.shape[0], m, uc), dtype=dt)
        s = np.empty((x.shape[0], k), dtype=sdt)
        vt = np.empty((x.shape[0], vr, n), dtype=dt)
        for i in range(x.shape[0]):
            ui, si, vti = np.linalg.svd(x[i], full)
            u[i] = ui
            s[i] = si
            vt[i] = vti
        lead = a.shape[:-2]
        return u.reshape(lead + (m, uc)), s.reshape(lead + (k,)), vt.reshape(lead + (vr, n))
    return impl


if hasattr(np.linalg, "svdvals"):
    @standin(np.linalg.svdvals)
    def _svdvals(x):
        vals = _svdvals_impl(x)
        if vals is None:
            return None
        return lambda x: vals(x)


# ----- the @ operator of stacks -----------------------------------------------------------------
# Compiled code spells np.matmul(a, b) `a @ b` (s2s/backends/numba_cpu.py), and users write `@`:
# Numba's operator covers 1-d and 2-d operands only; stacks (3-d and up) take np.matmul's rules.
@_nb_overload(operator.matmul)
def _matmul_operator(a, b):
    if _is_array(a) and _is_array(b) and (a.ndim > 2 or b.ndim > 2):
        return _matmul_impl(a, b)
    return None


# ===================================================================================================
# Adjoint helpers of these ops (s2s.rules.*_helpers / s2s.runtime) whose plain bodies Numba cannot type
# ===================================================================================================
from ... import runtime as rt  # noqa: E402
from . import STANDINS  # noqa: E402

_SOLVE = STANDINS[id(np.linalg.solve)]
_INV = STANDINS[id(np.linalg.inv)]
_EINSUM = STANDINS[id(np.einsum)]
_CROSS = STANDINS[id(np.cross)]
_SVD = STANDINS[id(np.linalg.svd)]


def _const_ints_src(vals) -> str:
    vals = [int(v) for v in vals]
    if not vals:
        return "np.zeros(0, dtype=np.int64)"
    return "np.array(%r, dtype=np.int64)" % (vals,)


def _static_axes(axes):
    """tensordot `axes` of these types as a Python value (int, or pair of lists), None if unknown."""
    if isinstance(axes, types.IntegerLiteral):
        return int(axes.literal_value)
    if isinstance(axes, types.Omitted):
        return axes.value
    if isinstance(axes, int):
        return axes
    if isinstance(axes, types.BaseTuple) and len(axes.types) == 2:
        out = []
        for t in axes.types:
            if isinstance(t, types.IntegerLiteral):
                out.append([int(t.literal_value)])
            elif isinstance(t, types.List) and t.initial_value is not None:
                out.append(list(t.initial_value))
            elif isinstance(t, types.BaseTuple) and all(isinstance(e, types.IntegerLiteral) for e in t.types):
                out.append([e.literal_value for e in t.types])
            else:
                return None
        return out
    return None


def _tensordot_vjp_impl(which, g, a, b, xa_xb=None, axes_type=None):
    """impl(g, a, b[, axes]) of tensordot_vjp_a (which=0) / _b (1), the plan computed at typing."""
    if not (_is_array(a) and _is_array(b)) or a.ndim == 0 or b.ndim == 0:
        return None
    axes = xa_xb if xa_xb is not None else _static_axes(axes_type)
    if axes is None:
        return None
    dummy_a, dummy_b = np.empty((1,) * a.ndim), np.empty((1,) * b.ndim)
    try:
        (ca, cb), perm = ph.tensordot_vjp_plan(dummy_a, dummy_b, axes, which)
    except Exception:
        return None
    gnd = _ndim(g)
    if gnd is None:
        return None
    if gnd == 0:       # a full contraction: g multiplies the other operand (transposed back)
        other = "b" if which == 0 else "a"
        src = f"def impl(g, a, b, axes=2):\n    return (g * {other}).transpose({tuple(perm)!r})\n"
        return _impl_from_source(src, {"np": np})
    n = len(ca)
    first, second = ("g", "b") if which == 0 else ("a", "g")
    nd1 = gnd if which == 0 else a.ndim
    nd2 = b.ndim if which == 0 else gnd
    src = ("def impl(g, a, b, axes=2):\n"
           f"    r = _td({first}, {second}, {_const_ints_src(ca)}, {_const_ints_src(cb)})\n"
           f"    return r.transpose({tuple(perm)!r})\n")
    return _impl_from_source(src, {"np": np, "_td": _tensordot_fn(nd1, nd2, n)})


def _tdvjp_lower(which):
    def lower(g, a, b, axes=2):
        return _tensordot_vjp_impl(which, g, a, b, axes_type=axes)
    return lower


overload(ph.tensordot_vjp_a)(_tdvjp_lower(0))
overload(ph.tensordot_vjp_b)(_tdvjp_lower(1))


def _pair_vjp_lower(which, axes_of, scalar_other):
    def lower(g, a, b):
        na, nb = _ndim(a), _ndim(b)
        if na is None or nb is None:
            return None
        if na == 0 or nb == 0:
            if scalar_other == "b":
                return lambda g, a, b: rt.unbroadcast(g * b, a)
            return lambda g, a, b: rt.unbroadcast(g * a, b)
        impl = _tensordot_vjp_impl(which, g, a, b, xa_xb=axes_of(na, nb))
        if impl is None:
            return None
        return _impl_from_source("def impl(g, a, b):\n    return td(g, a, b)\n", {"td": numba.njit(impl)})
    return lower


def _dot_axes(na, nb):
    return [[na - 1], [max(nb - 2, 0)]]


def _inner_axes(na, nb):
    return [[na - 1], [nb - 1]]


def _dot_any_lower(which, other):
    inner = _pair_vjp_lower(which, _dot_axes, other)

    def lower(g, a, b):
        if _ndim(a) is not None and _ndim(b) is not None and _ndim(a) <= 2 and _ndim(b) <= 2:
            return None     # numba_lower's overload (matmul_vjp)
        return inner(g, a, b)
    return lower


overload(ph.dot_vjp_any_a)(_dot_any_lower(0, "b"))
overload(ph.dot_vjp_any_b)(_dot_any_lower(1, "a"))
overload(ph.inner_vjp_a)(_pair_vjp_lower(0, _inner_axes, "b"))
overload(ph.inner_vjp_b)(_pair_vjp_lower(1, _inner_axes, "a"))


# ----- matmul of stacks (runtime.matmul_vjp_a/_b; numba_lower covers 1-d and 2-d) -------------------
def _expand_last(x):
    pass


@_nb_overload(_expand_last)
def _expand_last_ol(x):
    return lambda x: np.ascontiguousarray(x).reshape(x.shape + (1,))


def _expand_second_last(x):
    pass


@_nb_overload(_expand_second_last)
def _expand_second_last_ol(x):
    return lambda x: np.ascontiguousarray(x).reshape(x.shape[:-1] + (1, x.shape[-1]))


def _matmul_vjp_lower(side):
    def lower(g, a, b):
        na, nb = _ndim(a), _ndim(b)
        if na is None or nb is None or (na <= 2 and nb <= 2) or na == 0 or nb == 0:
            return None
        if side == "a":
            if nb == 1:
                return lambda g, a, b: rt.unbroadcast(_expand_last(g) * b, a)
            if na == 1:
                return lambda g, a, b: rt.unbroadcast(matmul(b, _expand_last(g))[..., 0], a)
            return lambda g, a, b: rt.unbroadcast(matmul(g, np.swapaxes(b, -1, -2)), a)
        if na == 1:
            return lambda g, a, b: rt.unbroadcast(_expand_last(a) * _expand_second_last(g), b)
        if nb == 1:
            return lambda g, a, b: rt.unbroadcast(matmul(_expand_second_last(g), a)[..., 0, :], b)
        return lambda g, a, b: rt.unbroadcast(matmul(np.swapaxes(a, -1, -2), g), b)
    return lower


overload(rt.matmul_vjp_a)(_matmul_vjp_lower("a"))
overload(rt.matmul_vjp_b)(_matmul_vjp_lower("b"))


# ----- outer, kron ---------------------------------------------------------------------------------
def _outer_vjp_lower(side):
    def lower(g, a, b):
        if not (_is_array(g) and _is_array(a) and _is_array(b)):
            return None
        if side == "a":
            return lambda g, a, b: np.ascontiguousarray(matmul(g, np.ascontiguousarray(b).ravel())).reshape(a.shape)
        return lambda g, a, b: np.ascontiguousarray(matmul(np.ascontiguousarray(a).ravel(), g)).reshape(b.shape)
    return lower


overload(ph.outer_vjp_a)(_outer_vjp_lower("a"))
overload(ph.outer_vjp_b)(_outer_vjp_lower("b"))


def _kron_vjp_lower(side):
    def lower(g, a, b):
        if not (_is_array(g) and _is_array(a) and _is_array(b)):
            return None
        na, nb = a.ndim, b.ndim
        nd = max(na, nb)
        if g.ndim != nd:
            return None
        pa = ["1" if d < nd - na else f"a.shape[{d - (nd - na)}]" for d in range(nd)]
        pb = ["1" if d < nd - nb else f"b.shape[{d - (nd - nb)}]" for d in range(nd)]
        inter = []
        for d in range(nd):
            inter += [pa[d], pb[d]]
        tup = lambda xs: "(" + "".join(x + ", " for x in xs) + ")"  # noqa: E731
        iv = [f"i{d}" for d in range(nd)]
        jv = [f"j{d}" for d in range(nd)]
        gi = ", ".join(f"i{d}, j{d}" for d in range(nd))
        lines = ["def impl(g, a, b):",
                 f"    gg = np.ascontiguousarray(g).reshape({tup(inter)})",
                 f"    aa = np.ascontiguousarray(a).reshape({tup(pa)})",
                 f"    bb = np.ascontiguousarray(b).reshape({tup(pb)})",
                 f"    out = np.zeros({tup(pa) if side == 'a' else tup(pb)})"]
        ind = "    "
        for d in range(nd):
            lines.append(f"{ind}for i{d} in range(aa.shape[{d}]):")
            ind += "    "
        for d in range(nd):
            lines.append(f"{ind}for j{d} in range(bb.shape[{d}]):")
            ind += "    "
        if side == "a":
            lines.append(f"{ind}out[{', '.join(iv)}] += gg[{gi}] * bb[{', '.join(jv)}]")
            lines.append("    return out.reshape(a.shape)")
        else:
            lines.append(f"{ind}out[{', '.join(jv)}] += gg[{gi}] * aa[{', '.join(iv)}]")
            lines.append("    return out.reshape(b.shape)")
        return _impl_from_source("\n".join(lines) + "\n", {"np": np})
    return lower


overload(ph.kron_vjp_a)(_kron_vjp_lower("a"))
overload(ph.kron_vjp_b)(_kron_vjp_lower("b"))


# ----- einsum ---------------------------------------------------------------------------------------
@overload(ph.einsum_vjp)
def _einsum_vjp(g, subscripts, k, a, b=None, c=None):
    if not isinstance(subscripts, types.StringLiteral) or not isinstance(k, types.IntegerLiteral):
        return None
    ops = [t for t in (a, b, c) if not _is_none(t)]
    if not all(_is_array(t) for t in ops) or not (_is_array(g) or isinstance(g, types.Number)):
        return None
    kk = k.literal_value
    ins, out = ph._einsum_parse(subscripts.literal_value, [t.ndim for t in ops])
    letters_k = ins[kk]
    others, _, distinct, result, spec = ph._einsum_cotangent_letters(ins, out, kk)
    names = ["a", "b", "c"]
    x = names[kk]
    # a full contraction's cotangent is a number (`np.einsum("i,i->", x, y)`): einsum takes arrays
    lines = ["def impl(g, subscripts, k, a, b=None, c=None):",
             "    ga = g" if _is_array(g) else "    ga = np.full((), g)",
             f"    r = einsum({spec!r}, ga{''.join(', ' + names[i] for i in others)})",
             f"    out = np.zeros({x}.shape)"]
    ind = "    "
    for ch in distinct:
        ax = letters_k.index(ch)
        lines.append(f"{ind}for i_{ch} in range({x}.shape[{ax}]):")
        ind += "    "
    rv = f"r[{', '.join('i_' + ch for ch in result)}]" if result else "r"
    lines.append(f"{ind}out[{', '.join('i_' + ch for ch in letters_k)}] = {rv}")
    lines.append("    return out")
    return _impl_from_source("\n".join(lines) + "\n", {"np": np, "einsum": _EINSUM})


# ----- diag, det, solve --------------------------------------------------------------------------------
@overload(ph.trace_vjp)
def _trace_vjp(g, a, offset=0, axis1=0, axis2=1):
    """g on the offset diagonal of a's (axis1, axis2) plane, zeros elsewhere."""
    if not _is_array(a) or a.ndim < 2:
        return None
    nd = a.ndim
    ax1, ax2 = literal_value(axis1), literal_value(axis2)
    if not isinstance(ax1, int) or not isinstance(ax2, int):
        return None
    ax1, ax2 = ax1 % nd, ax2 % nd
    if ax1 == ax2:
        raise TypingError("s2s (jit): np.trace: axis1 and axis2 cannot be the same")
    perm = tuple(d for d in range(nd) if d not in (ax1, ax2)) + (ax1, ax2)
    if nd == 2:
        value = "g[()]" if _is_array(g) else "g"
        put = f"            v[i, j] = {value}\n"
    else:
        put = "            v[..., i, j] = g\n"
    src = ("def impl(g, a, offset=0, axis1=0, axis2=1):\n"
           "    out = np.zeros(a.shape)\n"
           f"    v = out.transpose({perm})\n"
           "    for i in range(v.shape[-2]):\n"
           "        j = i + offset\n"
           "        if j >= 0 and j < v.shape[-1]:\n" + put +
           "    return out\n")
    return _impl_from_source(src, {"np": np})


@overload(ph.diag_vjp)
def _diag_vjp(g, v, k=0):
    if not (_is_array(v) and _is_array(g)) or v.ndim not in (1, 2):
        return None
    if v.ndim == 1:
        return lambda g, v, k=0: np.diag(np.ascontiguousarray(g), k)

    def impl(g, v, k=0):
        out = np.zeros(v.shape)
        for i in range(g.shape[0]):
            if k >= 0:
                out[i, i + k] = g[i]
            else:
                out[i - k, i] = g[i]
        return out
    return impl


@overload(lh.det_vjp)
def _det_vjp(g, a, y):
    if not _is_array(a) or a.ndim < 2:
        return None
    if a.ndim == 2:
        return lambda g, a, y: (g * y) * np.ascontiguousarray(_INV(a).T)

    def impl(g, a, y):
        c = np.ascontiguousarray(g * y)
        return c.reshape(c.shape + (1, 1)) * np.swapaxes(_INV(a), -1, -2)
    return impl


def _solve_like(a, rhs, b):
    pass


@_nb_overload(_solve_like)
def _solve_like_ol(a, rhs, b):
    if _ndim(b) == 1:
        if _ndim(a) == 2 and _ndim(rhs) == 1:
            return lambda a, rhs, b: _SOLVE(a, rhs)
        return lambda a, rhs, b: _SOLVE(a, _expand_last(rhs))[..., 0]
    return lambda a, rhs, b: _SOLVE(a, rhs)


@overload(lh.solve_vjp_b)
def _solve_vjp_b(g, a, b):
    if not (_is_array(a) and _is_array(b) and _is_array(g)):
        return None
    return lambda g, a, b: rt.unbroadcast(_solve_like(np.swapaxes(a, -1, -2), g, b), b)


@overload(lh.solve_vjp_a)
def _solve_vjp_a(g, a, b, y):
    if not (_is_array(a) and _is_array(b) and _is_array(g)):
        return None
    if b.ndim == 1:
        def vec(g, a, b, y):
            gb = _solve_like(np.swapaxes(a, -1, -2), g, b)
            return rt.unbroadcast(-_expand_last(gb) * _expand_second_last(y), a)
        return vec

    def impl(g, a, b, y):
        gb = _solve_like(np.swapaxes(a, -1, -2), g, b)
        return rt.unbroadcast(-matmul(gb, np.swapaxes(y, -1, -2)), a)
    return impl


# ----- eigh / svd ------------------------------------------------------------------------------------
@overload(lh.off_diagonal_inverse)
def _off_diagonal_inverse(w):
    if not _is_array(w) or w.ndim < 1:
        return None

    def impl(w):
        n = w.shape[-1]
        w2 = np.ascontiguousarray(w).reshape((w.size // n if n else 0, n))
        out = np.zeros((w2.shape[0], n, n))
        for s in range(w2.shape[0]):
            for i in range(n):
                for j in range(n):
                    if i != j:
                        out[s, i, j] = 1.0 / (w2[s, j] - w2[s, i])
        return out.reshape(w.shape + (n,))
    return impl


@overload(lh.svdvals_vjp)
def _svdvals_vjp(g, a):
    if not (_is_array(a) and _is_array(g)) or a.ndim < 2:
        return None

    def impl(g, a):
        u, s, vt = _SVD(a, False)
        return matmul(u * _expand_second_last(g), vt)
    return impl


@overload(lh.svd_vjp)
def _svd_vjp(g, a, y, full_matrices=True, compute_uv=True, hermitian=False):
    uv = flag_value(compute_uv)
    if uv is None:
        return None
    if not uv:
        return lambda g, a, y, full_matrices=True, compute_uv=True, hermitian=False: lh.svdvals_vjp(g, a)
    triple = compiled_helper(lh.svd_triple_vjp)      # (the Python helper branches on compute_uv at run time)
    return lambda g, a, y, full_matrices=True, compute_uv=True, hermitian=False: \
        triple(g[0], g[1], g[2], y[0], y[1], y[2])


@overload(lh.svd_tangent)
def _svd_tangent(ta, a, y, full_matrices=True, compute_uv=True, hermitian=False):
    uv = flag_value(compute_uv)
    if uv is None:
        return None
    if not uv:
        values = compiled_helper(lh.svdvals_tangent)
        return lambda ta, a, y, full_matrices=True, compute_uv=True, hermitian=False: values(ta, a)
    triple = compiled_helper(lh.svd_triple_tangent)
    return lambda ta, a, y, full_matrices=True, compute_uv=True, hermitian=False: triple(ta, y[0], y[1], y[2])


# ----- cross ---------------------------------------------------------------------------------------
def _cross_vjp_lower(side):
    def lower(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if not (_is_array(a) and _is_array(b) and _is_array(g)):
            return None
        ax = literal_value(axis, default=NotImplemented)
        vals = [literal_value(t, default=NotImplemented) for t in (axisa, axisb, axisc)]
        if ax is NotImplemented or any(not isinstance(v, int) for v in vals):
            return None
        xa, xb, xc = (ax, ax, ax) if ax is not None else vals
        xa, xb, xc = xa % a.ndim, xb % b.ndim, xc % g.ndim
        # the cotangent has the broadcast rank (g's): an operand's vector axis goes back where
        # it is counted from the right (b of shape (3,) beside a (4, 3): axis 1 of (4, 3), not 0)
        ba, bb = xa - a.ndim + g.ndim, xb - b.ndim + g.ndim
        if ba < 0 or bb < 0:
            return None

        def impl(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
            am = np.moveaxis(a, xa, -1)
            bm = np.moveaxis(b, xb, -1)
            if am.shape[-1] != 3 or bm.shape[-1] != 3:
                raise ValueError("s2s compiles the cotangent of np.cross for 3-vectors only")
            gm = np.moveaxis(g, xc, -1)
            if side == "a":
                d = _CROSS(bm, gm)
                return rt.unbroadcast(np.moveaxis(d, -1, ba), a)
            d = _CROSS(gm, am)
            return rt.unbroadcast(np.moveaxis(d, -1, bb), b)
        return impl
    return lower


overload(ph.cross_vjp_a)(_cross_vjp_lower("a"))
overload(ph.cross_vjp_b)(_cross_vjp_lower("b"))


# ----- einsum_operands (forward mode's einsum with its unused operands left out) --------------------
_einsum_standin = STANDINS[id(np.einsum)]


@overload(ph.einsum_operands, prefer_literal=True)
def _einsum_operands(subscripts, a, b=None, c=None):
    """The operand count is read from the constant subscripts at typing time (the Python helper
    branches on it at run time, and Numba would type every branch)."""
    if not isinstance(subscripts, types.StringLiteral):
        return None
    n = ph.einsum_count(subscripts.literal_value)
    if n == 1:
        return lambda subscripts, a, b=None, c=None: _einsum_standin(subscripts, a)
    if n == 2:
        return lambda subscripts, a, b=None, c=None: _einsum_standin(subscripts, a, b)
    if n == 3:
        return lambda subscripts, a, b=None, c=None: _einsum_standin(subscripts, a, b, c)
    return None


@overload(ph.einsum_with, prefer_literal=True)
def _einsum_with(subscripts, k, x, a, b=None, c=None):
    """Which operand x replaces is read from the constant k at typing time (the Python helper
    branches on it, and Numba would type every branch: an operand may be None)."""
    kk = literal_value(k)
    if kk == 0:
        return lambda subscripts, k, x, a, b=None, c=None: ph.einsum_operands(subscripts, x, b, c)
    if kk == 1:
        return lambda subscripts, k, x, a, b=None, c=None: ph.einsum_operands(subscripts, a, x, c)
    if kk == 2:
        return lambda subscripts, k, x, a, b=None, c=None: ph.einsum_operands(subscripts, a, b, x)
    return None


@overload(ph.einsum_vjp_swap, prefer_literal=True)
def _einsum_vjp_swap(g, subscripts, k, j, x, a, b=None, c=None):
    kk, jj = literal_value(k), literal_value(j)
    if not isinstance(kk, int) or not isinstance(jj, int):
        return None
    if jj == kk:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: 0.0 * ph.einsum_vjp(g, subscripts, k, a, b, c)
    if jj == 0:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: ph.einsum_vjp(g, subscripts, k, x, b, c)
    if jj == 1:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: ph.einsum_vjp(g, subscripts, k, a, x, c)
    if jj == 2:
        return lambda g, subscripts, k, j, x, a, b=None, c=None: ph.einsum_vjp(g, subscripts, k, a, b, x)
    return None


# ----- eig / eigvals of real matrices with real eigenvalues (linalg_helpers.eig_values / eig_vectors) --
# Numba's np.linalg.eig (LAPACK geev, as NumPy's) of one real matrix; complex eigenvalues raise its
# ValueError ("eig() argument must not cause a domain change"), never a silent answer.
def _eig_part(k: int):
    def lower(a):
        conv = _lin_input(a, "eig")
        if conv is None or _lin_dtype(a).kind == "c":
            return None

        @numba.njit
        def one(x):
            return np.linalg.eig(x)[k]
        if a.ndim == 2:
            return lambda a: one(conv(a))
        oshape = (lambda s: s[:-1]) if k == 0 else (lambda s: s)
        oshape = numba.njit(oshape)

        def impl(a):
            x = _stack3(conv(a))
            first = one(x[0])
            out = np.empty((x.shape[0],) + first.shape)
            out[0] = first
            for i in range(1, x.shape[0]):
                out[i] = one(x[i])
            return out.reshape(oshape(a.shape))
        return impl
    return lower


overload(lh.eig_values)(_eig_part(0))
overload(lh.eig_vectors)(_eig_part(1))
