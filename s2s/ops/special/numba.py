"""Stand-ins for Numba: special (see s2s/backends/numba_numpy/__init__.py).

scipy.special's expit, logit, erf, erfc, gammaln, digamma (psi), polygamma, xlogy, entr (elementwise,
float64: float scalars and arrays of any rank and layout, int64/int32 inputs as SciPy casts
them) and logsumexp (axis, keepdims, b), softmax, log_softmax (axis None / int / tuple).  The
elementwise kernels follow SciPy's own formulas (xsf / cephes), so results agree to rounding.

gamma, rgamma, gammasgn, beta, betaln, betainc, gammainc, gammaincc, the Bessel functions jv, yn
(integer order), iv, ive, j0, j1, y0, y1, i0, i1, and erfinv, erfcinv (elementwise, as above) call
SciPy's own compiled double-precision kernels, the C functions scipy.special.cython_special
exports (as numba-scipy does): each is bound to a linker symbol at import (llvmlite add_symbol,
no compilation) and called as a Numba ExternalFunction, so the kernels and the code calling them
cache to disk and give SciPy's results exactly.  multigammaln(a, d) (integer d >= 1) sums gammaln.
"""
from __future__ import annotations

import math

import llvmlite.binding as _ll
import numba
import numpy as np
from numba import types
from numba.extending import overload as nb_overload, get_cython_function_address

from ...backends.numba_lower.common import is_array, is_none
from ..reductions.numba_kernels import reduce_sum
from ...backends.numba_numpy.common import flag_value
from ...backends.numba_numpy.common import standin as _framework_standin
from ..reductions.numba import axis_form, check_literal_axes, nan_max, drop_reduced

try:
    import scipy.special as _sp
except ImportError:  # pragma: no cover
    _sp = None


def standin(original, **overload_options):
    """numba_numpy.common.standin, naming scipy.special in the docstring (its ufuncs have no __module__)."""
    return _framework_standin(original, home="scipy.special", **overload_options)


# =============================================================================
# Scalar kernels (float64)
# =============================================================================

@numba.njit(cache=True, error_model="numpy")
def _expit(x):
    return 1.0 / (1.0 + math.exp(-x))


@numba.njit(cache=True, error_model="numpy")
def _logit(x):
    if x < 0.3 or x > 0.65:
        return math.log(np.divide(x, 1.0 - x))
    s = 2.0 * (x - 0.5)
    return math.log1p(s) - math.log1p(-s)


@numba.njit(cache=True, error_model="numpy")
def _erf(x):
    return math.erf(x)


@numba.njit(cache=True, error_model="numpy")
def _erfc(x):
    return math.erfc(x)


@numba.njit(cache=True, error_model="numpy")
def _gammaln(x):
    if not math.isfinite(x):
        return x              # cephes lgam: inf, -inf and nan as they are
    if x == math.floor(x) and x <= 0.0:
        return np.inf
    return math.lgamma(x)


_PSI_A = np.array([8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                   -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                   8.33333333333333333333E-2])
_PSI_P = np.array([-0.0020713321167745952, -0.045251321448739056, -0.28919126444774784,
                   -0.65031853770896507, -0.32555031186804491, 0.25479851061131551])
_PSI_Q = np.array([-0.55789841321675513e-6, 0.0021284987017821144, 0.054151797245674225,
                   0.43593529692665969, 1.4606242909763515, 2.0767117023730469, 1.0])
_EULER = 0.577215664901532860606512090082402431
_NEGROOT = -0.504083008264455409
_NEGROOTVAL = 7.2897639029768949e-17
_MACHEP = 1.11022302462515654042E-16
# (2k)! / B_2k, k = 1..12 (cephes zeta.c)
_ZETA_A = np.array([12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                    1.8152105401943546773e17, -7.1661652561756670113e18])


@numba.njit(cache=True, error_model="numpy")
def _polevl(x, coef, n):
    ans = coef[0]
    for i in range(1, n + 1):
        ans = ans * x + coef[i]
    return ans


@numba.njit(cache=True, error_model="numpy")
def _hurwitz_zeta(x, q):
    """cephes zeta(x, q): the Hurwitz zeta function sum_k (k + q) ** -x."""
    if x == 1.0:
        return np.inf
    if x < 1.0:
        return np.nan
    if q <= 0.0:
        if q == math.floor(q):
            return np.inf
        if x != math.floor(x):
            return np.nan
    if q > 1e8:
        return (1.0 / (x - 1.0) + 1.0 / (2.0 * q)) * math.pow(q, 1.0 - x)
    s = math.pow(q, -x)
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = math.pow(a, -x)
        s += b
        if abs(b / s) < _MACHEP:
            return s
    w = a
    s += b * w / (x - 1.0)
    s -= 0.5 * b
    a = 1.0
    k = 0.0
    for i in range(12):
        a *= x + k
        b /= w
        t = a * b / _ZETA_A[i]
        s = s + t
        t = abs(t / s)
        if t < _MACHEP:
            return s
        k += 1.0
        a *= x + k
        b /= w
        k += 1.0
    return s


@numba.njit(cache=True, error_model="numpy")
def _psi(x):
    """xsf cephes psi."""
    y = 0.0
    if x != x:
        return x
    if x == np.inf:
        return x
    if x == -np.inf:
        return np.nan
    if x == 0.0:
        return -math.copysign(np.inf, x)
    if x < 0.0:
        r = x - math.trunc(x)         # modf
        if r == 0.0:
            return np.nan
        y = -math.pi / math.tan(math.pi * r)
        x = 1.0 - x
    if x <= 10.0 and x == math.floor(x):
        n = int(x)
        for i in range(1, n):
            y += 1.0 / i
        y -= _EULER
        return y
    if x < 1.0:
        y -= 1.0 / x
        x += 1.0
    elif x < 10.0:
        while x > 2.0:
            x -= 1.0
            y += 1.0 / x
    if 1.0 <= x <= 2.0:
        g = x - 1569415565.0 / 1073741824.0
        g -= (381566830.0 / 1073741824.0) / 1073741824.0
        g -= 0.9016312093258695918615325266959189453125e-19
        r = _polevl(x - 1.0, _PSI_P, 5) / _polevl(x - 1.0, _PSI_Q, 6)
        return y + (g * 0.99558162689208984 + g * r)
    if x < 1.0e17:
        z = 1.0 / (x * x)
        yy = z * _polevl(z, _PSI_A, 6)
    else:
        yy = 0.0
    return y + (math.log(x) - (0.5 / x) - yy)


@numba.njit(cache=True, error_model="numpy")
def _digamma(x):
    """xsf digamma: psi, with the series about the negative root near it."""
    if abs(x - _NEGROOT) < 0.3:
        res = _NEGROOTVAL
        coeff = -1.0
        z = x - _NEGROOT
        for n in range(1, 100):
            coeff *= -z
            term = coeff * _hurwitz_zeta(n + 1.0, _NEGROOT)
            res += term
            if abs(term) < 2.220446049250313e-16 * abs(res):
                break
        return res
    return _psi(x)


@numba.njit(cache=True, error_model="numpy")
def _polygamma(n, x):
    """scipy.special.polygamma: psi(x) for n == 0, else (-1)**(n+1) n! zeta(n+1, x)."""
    if n == 0:
        return _digamma(x)
    return math.pow(-1.0, n + 1.0) * math.gamma(n + 1.0) * _hurwitz_zeta(n + 1.0, x)


@numba.njit(cache=True, error_model="numpy")
def _entr(x):
    """scipy.special.entr: -x log x for x > 0, 0 at 0, -inf below (nan stays nan)."""
    if x > 0.0:
        return -x * math.log(x)
    if x == 0.0:
        return 0.0
    return x if x != x else -math.inf


@numba.njit(cache=True, error_model="numpy")
def _xlogy(x, y):
    if x == 0.0 and not (y != y):
        return 0.0
    return x * math.log(y)


# -----------------------------------------------------------------------------
# SciPy's compiled kernels (scipy.special.cython_special), called by symbol
# -----------------------------------------------------------------------------

def _cython_kernel(capsule, restype, *argtypes):
    """A Numba ExternalFunction calling cython_special's C function `capsule` (its trailing int
    argument, __pyx_skip_dispatch, is passed 0).  The address is bound to a symbol of our own, so
    compiled code refers to it by name (and caches)."""
    symbol = "s2s_scipy_special_" + capsule
    _ll.add_symbol(symbol, get_cython_function_address("scipy.special.cython_special", capsule))
    return types.ExternalFunction(symbol, restype(*argtypes, types.intc))


if _sp is not None:
    _f8 = types.float64
    _c_gamma = _cython_kernel("__pyx_fuse_1gamma", _f8, _f8)
    _c_rgamma = _cython_kernel("__pyx_fuse_1rgamma", _f8, _f8)
    _c_gammasgn = _cython_kernel("gammasgn", _f8, _f8)
    _c_beta = _cython_kernel("beta", _f8, _f8, _f8)
    _c_betaln = _cython_kernel("betaln", _f8, _f8, _f8)
    _c_betainc = _cython_kernel("__pyx_fuse_0betainc", _f8, _f8, _f8, _f8)
    _c_gammainc = _cython_kernel("gammainc", _f8, _f8, _f8)
    _c_gammaincc = _cython_kernel("gammaincc", _f8, _f8, _f8)
    _c_jv = _cython_kernel("__pyx_fuse_1jv", _f8, _f8, _f8)
    _c_yn = _cython_kernel("__pyx_fuse_1yn", _f8, types.int64, _f8)
    _c_iv = _cython_kernel("__pyx_fuse_1iv", _f8, _f8, _f8)
    _c_ive = _cython_kernel("__pyx_fuse_1ive", _f8, _f8, _f8)
    _c_j0 = _cython_kernel("j0", _f8, _f8)
    _c_j1 = _cython_kernel("j1", _f8, _f8)
    _c_y0 = _cython_kernel("y0", _f8, _f8)
    _c_y1 = _cython_kernel("y1", _f8, _f8)
    _c_i0 = _cython_kernel("i0", _f8, _f8)
    _c_i1 = _cython_kernel("i1", _f8, _f8)
    _c_erfinv = _cython_kernel("__pyx_fuse_0erfinv", _f8, _f8)
    _c_erfcinv = _cython_kernel("erfcinv", _f8, _f8)


@numba.njit(cache=True, error_model="numpy")
def _gamma(x):
    return _c_gamma(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _rgamma(x):
    return _c_rgamma(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _gammasgn(x):
    return _c_gammasgn(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _beta(a, b):
    return _c_beta(a, b, 0)


@numba.njit(cache=True, error_model="numpy")
def _betaln(a, b):
    return _c_betaln(a, b, 0)


@numba.njit(cache=True, error_model="numpy")
def _betainc(a, b, x):
    return _c_betainc(a, b, x, 0)


@numba.njit(cache=True, error_model="numpy")
def _gammainc(a, x):
    return _c_gammainc(a, x, 0)


@numba.njit(cache=True, error_model="numpy")
def _gammaincc(a, x):
    return _c_gammaincc(a, x, 0)


@numba.njit(cache=True, error_model="numpy")
def _jv(v, x):
    return _c_jv(v, x, 0)


@numba.njit(cache=True, error_model="numpy")
def _yn(n, x):
    return _c_yn(n, x, 0)


@numba.njit(cache=True, error_model="numpy")
def _iv(v, x):
    return _c_iv(v, x, 0)


@numba.njit(cache=True, error_model="numpy")
def _ive(v, x):
    return _c_ive(v, x, 0)


@numba.njit(cache=True, error_model="numpy")
def _j0(x):
    return _c_j0(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _j1(x):
    return _c_j1(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _y0(x):
    return _c_y0(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _y1(x):
    return _c_y1(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _i0(x):
    return _c_i0(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _i1(x):
    return _c_i1(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _erfinv(x):
    return _c_erfinv(x, 0)


@numba.njit(cache=True, error_model="numpy")
def _erfcinv(x):
    return _c_erfcinv(x, 0)


# =============================================================================
# Elementwise stand-ins
# =============================================================================

_UFUNCS: dict = {}


def kernel_ufunc(kernel, nargs, sig=None):
    """numba.vectorize of a scalar kernel (built on first use: compiling at import is slow);
    `sig` overrides the all-float64 signature."""
    key = (kernel, nargs)
    if key not in _UFUNCS:
        sig = sig or "float64(" + ", ".join(["float64"] * nargs) + ")"
        _UFUNCS[key] = numba.vectorize([sig], nopython=True)(kernel.py_func)
    return _UFUNCS[key]


def _elementwise_ok(t):
    """float64 (or int64/int32, which SciPy's ufuncs cast to float64) scalars and arrays; SciPy
    computes float32 (and what casts safely to it: bool, small ints) in float32: not covered."""
    dt = t.dtype if is_array(t) else t
    return dt in (types.float64, types.int64, types.int32, types.uint32) or (
        not is_array(t) and isinstance(t, (types.Float, types.Integer)) and t.bitwidth == 64)


def _binary(fn, kernel):
    @standin(fn)
    def typer(x, y):
        if not (_elementwise_ok(x) and _elementwise_ok(y)):
            return None
        if is_array(x) or is_array(y):
            uf = kernel_ufunc(kernel, 2)
            return lambda x, y: uf(x, y)
        return lambda x, y: kernel(float(x), float(y))
    return typer


def _zero_d_value(a):
    raise NotImplementedError


@nb_overload(_zero_d_value)
def _zero_d_value_impl(a):
    if is_array(a):
        return lambda a: float(a[()])
    return lambda a: float(a)


@numba.njit(cache=True, error_model="numpy")
def _multigammaln_check(a_min, d):
    if d < 1:
        raise ValueError("multigammaln in compiled code: d should be a positive integer (dimension)")
    if a_min <= 0.5 * (d - 1):
        raise ValueError("multigammaln: condition a > 0.5 * (d-1) not met")


def _unary(fn, kernel):
    @standin(fn)
    def typer(x):
        if not _elementwise_ok(x):
            return None
        if is_array(x):
            uf = kernel_ufunc(kernel, 1)
            return lambda x: uf(x)
        return lambda x: kernel(float(x))
    return typer


if _sp is not None:
    _unary(_sp.expit, _expit)
    _unary(_sp.logit, _logit)
    _unary(_sp.erf, _erf)
    _unary(_sp.erfc, _erfc)
    _unary(_sp.gammaln, _gammaln)
    _unary(_sp.digamma, _digamma)
    _unary(_sp.entr, _entr)
    if _sp.psi is not _sp.digamma:      # pragma: no cover - the same ufunc in current SciPy
        _unary(_sp.psi, _digamma)

    @standin(_sp.xlogy)
    def _xlogy_typer(x, y):
        if not (_elementwise_ok(x) and _elementwise_ok(y)):
            return None
        if is_array(x) or is_array(y):
            uf = kernel_ufunc(_xlogy, 2)
            return lambda x, y: uf(x, y)
        return lambda x, y: _xlogy(float(x), float(y))

    @standin(_sp.polygamma)
    def _polygamma_typer(n, x):
        if not isinstance(n, types.Integer) or not _elementwise_ok(x):
            return None      # SciPy's polygamma of a non-integer or array n: not covered
        if is_array(x):
            uf = kernel_ufunc(_polygamma, 2)
            return lambda n, x: uf(float(n), x)
        return lambda n, x: _polygamma(float(n), float(x))

    for _fn, _kernel in ((_sp.gamma, _gamma), (_sp.rgamma, _rgamma), (_sp.gammasgn, _gammasgn), (_sp.j0, _j0),
                         (_sp.j1, _j1), (_sp.y0, _y0), (_sp.y1, _y1), (_sp.i0, _i0), (_sp.i1, _i1),
                         (_sp.erfinv, _erfinv), (_sp.erfcinv, _erfcinv)):
        _unary(_fn, _kernel)
    for _fn, _kernel in ((_sp.beta, _beta), (_sp.betaln, _betaln), (_sp.gammainc, _gammainc),
                         (_sp.gammaincc, _gammaincc), (_sp.jv, _jv), (_sp.iv, _iv), (_sp.ive, _ive)):
        _binary(_fn, _kernel)

    @standin(_sp.betainc)
    def _betainc_typer(a, b, x):
        if not (_elementwise_ok(a) and _elementwise_ok(b) and _elementwise_ok(x)):
            return None
        if is_array(a) or is_array(b) or is_array(x):
            uf = kernel_ufunc(_betainc, 3)
            return lambda a, b, x: uf(a, b, x)
        return lambda a, b, x: _betainc(float(a), float(b), float(x))

    @standin(_sp.yn)
    def _yn_typer(n, x):
        if not isinstance(n, types.Integer) or not _elementwise_ok(x):
            return None      # SciPy's yn of a float or array order: not covered
        if is_array(x):
            uf = kernel_ufunc(_yn, 2, "float64(int64, float64)")
            return lambda n, x: uf(np.int64(n), x)
        return lambda n, x: _yn(np.int64(n), float(x))

    @standin(_sp.multigammaln)
    def _multigammaln_typer(a, d):
        """d*(d-1)/4 log(pi) + the sum of gammaln(a - j/2), j = 0 .. d - 1 (an integer d >= 1)."""
        if not isinstance(d, types.Integer) or not _elementwise_ok(a):
            return None
        if is_array(a) and a.ndim > 0:
            gl = kernel_ufunc(_gammaln, 1)

            def impl(a, d):
                af = a.astype(np.float64)
                _multigammaln_check(np.min(af) if af.size else np.inf, d)
                s = gl(af)
                for j in range(1, d):
                    s = s + gl(af - 0.5 * j)
                return (d * (d - 1) * 0.25) * np.log(np.pi) + s
            return impl

        zero_d = is_array(a)

        def scalar(a, d):
            v = _zero_d_value(a) if zero_d else float(a)
            _multigammaln_check(v, d)
            s = _gammaln(v)
            for j in range(1, d):
                s = s + _gammaln(v - 0.5 * j)
            return (d * (d - 1) * 0.25) * np.log(np.pi) + s
        return scalar


# =============================================================================
# logsumexp, softmax, log_softmax
# =============================================================================

def _reduction_ok(x, axis):
    if axis_form(axis) is None or not _elementwise_ok(x):
        return False
    if is_array(x):
        check_literal_axes(axis, max(x.ndim, 1))
    return True


if _sp is not None:
    @standin(_sp.softmax)
    def _softmax(x, axis=None):
        if not _reduction_ok(x, axis):
            return None
        if not is_array(x) or x.ndim == 0:
            if axis_form(axis) == "int":
                return None      # axis on a 0-d input: NumPy raises

            def scalar(x, axis=None):
                v = float(x) * 1.0
                e = np.exp(v - v)
                return e / e if e == e else np.nan
            return scalar

        def impl(x, axis=None):
            xf = x.astype(np.float64)
            m = nan_max(xf, axis, True)
            e = np.exp(xf - m)
            return e / reduce_sum(e, axis, True)
        return impl

    @standin(_sp.log_softmax)
    def _log_softmax(x, axis=None):
        if not _reduction_ok(x, axis):
            return None
        if not is_array(x) or x.ndim == 0:
            if axis_form(axis) == "int":
                return None

            def scalar(x, axis=None):
                v = float(x) * 1.0
                m = v if np.isfinite(v) else 0.0
                t = v - m
                return t - np.log(np.exp(t))
            return scalar

        def impl(x, axis=None):
            xf = x.astype(np.float64)
            m = nan_max(xf, axis, True)
            m = np.where(np.isfinite(m), m, 0.0)
            t = xf - m
            return t - np.log(reduce_sum(np.exp(t), axis, True))
        return impl

    @standin(_sp.logsumexp)
    def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
        keep = flag_value(keepdims)
        if keep is None or flag_value(return_sign) is not False or not _reduction_ok(a, axis):
            return None
        has_b = not is_none(b)
        if has_b and not _elementwise_ok(b):
            return None
        nd_a = a.ndim if is_array(a) else 0
        nd_b = b.ndim if has_b and is_array(b) else 0
        if nd_b > max(nd_a, 1):
            return None      # b of a higher rank broadcasts a up: not covered
        one_d = nd_a == 0

        def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
            af = _as_float_nd(a, one_d)
            if has_b:
                bb = _broadcast_float(b, af.shape)
                bexp = bb * np.exp(af)
            else:
                bb = af
                bexp = np.exp(af)
            out_inf = np.log(reduce_sum(bexp, axis, True))
            a2 = np.where(bb == 0, -np.inf, af) if has_b else af
            a_max = nan_max(a2, axis, True)
            i_max = a2 == a_max
            a3 = np.where(i_max, -np.inf, a2)
            if has_b:
                m = reduce_sum(bb * i_max, axis, True)
                ex = bb * np.exp(a3 - a_max)
            else:
                m = reduce_sum(i_max.astype(np.float64), axis, True)
                ex = np.exp(a3 - a_max)
            s = reduce_sum(ex, axis, True)
            s = np.where(s == 0, s, s / m)
            sgn = np.sign(s + 1) * np.sign(m)
            s = np.where(s < -1, -s - 2, s)
            m = np.abs(m)
            out = np.log1p(s) + np.log(m) + a_max
            out = np.where(sgn < 0, np.nan, out)
            out = np.where(np.isfinite(out), out, out_inf)
            if keep:
                return out
            return drop_reduced(out, af.shape, axis)
        return impl


def _as_float_nd(a, one_d):
    raise NotImplementedError


@nb_overload(_as_float_nd)
def _as_float_nd_impl(a, one_d):
    if is_array(a) and a.ndim > 0:
        return lambda a, one_d: a.astype(np.float64)
    if is_array(a):
        return lambda a, one_d: np.full(1, a[()] * 1.0)
    return lambda a, one_d: np.full(1, a * 1.0)


def _broadcast_float(b, shape):
    raise NotImplementedError


@nb_overload(_broadcast_float)
def _broadcast_float_impl(b, shape):
    if is_array(b) and b.ndim > 0:
        return lambda b, shape: np.ascontiguousarray(np.broadcast_to(b.astype(np.float64), shape))
    if is_array(b):
        return lambda b, shape: np.full(shape, b[()] * 1.0)
    return lambda b, shape: np.full(shape, b * 1.0)
