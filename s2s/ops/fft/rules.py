"""np.fft, and the ops that take complex values apart (np.real, np.imag, np.conj, np.angle).

A function's inputs and outputs are real; complex values live in between.  Cotangents follow
JAX's convention (the transpose of each op's derivative, paired with dz by Re(ct * dz)): the
holomorphic rules of the other tables hold for complex values as written, a real operand's
cotangent is the real part of what reaches it (`cotangent_kind`, and `unbroadcast` for broadcasting
ops), and the ops below that are not holomorphic say what their transpose is.

The one-axis transforms (fft, ifft, rfft, irfft, with n=, axis= and norm=) are linear: each
tangent is the transform of the tangent, each adjoint a transform of the cotangent (fft/helpers'
fft_vjp & co.).  The n-dimensional ones are those applied axis by axis (composites, so their
rules follow).  Under jit, Numba compiles np.fft through rocket-fft.
"""
import numpy as np

from ...runtime import check_unset, fft_axes
from .helpers import cotangent_kind, fit_axis, irfft_weights
from ...rules.registry import adjoint, declare, nondiff, refuse, register_composite, tangent

nondiff(irfft_weights, "irfft_weights")


# ----- complex parts ------------------------------------------------------------------------------

@adjoint(np.real, "np.real")
def real(y, val):
    d[val] = cotangent_kind(np.real(d[y]), val)


@tangent(np.real)
def real_(y, val):
    t[y] = np.real(t[val])


@adjoint(np.imag, "np.imag")
def imag(y, val):
    d[val] = cotangent_kind(-1j * np.real(d[y]), val)


@tangent(np.imag)
def imag_(y, val):
    t[y] = np.imag(t[val])


@adjoint(np.conjugate, "np.conj")     # np.conj is np.conjugate
def conjugate(y, x):
    d[x] = np.conj(d[y])


@tangent(np.conjugate)
def conjugate_(y, x):
    t[y] = np.conj(t[x])


@adjoint(np.angle, "np.angle", shape_only=("deg",))
def angle(y, z, deg=False):
    d[z] = cotangent_kind(np.real(d[y]) * angle_slope(z, deg), z)


@tangent(np.angle, shape_only=("deg",))
def angle_(y, z, deg=False):
    t[y] = np.real(angle_slope(z, deg) * t[z])


@adjoint(cotangent_kind, "cotangent_kind", shape_only=("like",))
def cotangent_kind_rule(y, v, like):
    d[v] = cotangent_kind(d[y], v)


@tangent(cotangent_kind, shape_only=("like",))
def cotangent_kind_rule_(y, v, like):
    t[y] = cotangent_kind(t[v], like)


@adjoint(fit_axis, "fit_axis", shape_only=("m", "axis"))
def fit_axis_rule(y, x, m, axis):
    d[x] = fit_axis(d[y], np.shape(x)[axis], axis)


@tangent(fit_axis, shape_only=("m", "axis"))
def fit_axis_rule_(y, x, m, axis):
    t[y] = fit_axis(t[x], m, axis)


# ----- one-axis transforms -------------------------------------------------------------------------

@adjoint(np.fft.fft, "np.fft.fft", shape_only=("n", "axis", "norm"))
def fft(y, a, n=None, axis=-1, norm=None):
    d[a] = fft_vjp(d[y], a, n, axis, norm)


@tangent(np.fft.fft, shape_only=("n", "axis", "norm"))
def fft_(y, a, n=None, axis=-1, norm=None):
    t[y] = np.fft.fft(t[a], n, axis, norm)


@adjoint(np.fft.ifft, "np.fft.ifft", shape_only=("n", "axis", "norm"))
def ifft(y, a, n=None, axis=-1, norm=None):
    d[a] = ifft_vjp(d[y], a, n, axis, norm)


@tangent(np.fft.ifft, shape_only=("n", "axis", "norm"))
def ifft_(y, a, n=None, axis=-1, norm=None):
    t[y] = np.fft.ifft(t[a], n, axis, norm)


@adjoint(np.fft.rfft, "np.fft.rfft", shape_only=("n", "axis", "norm"))
def rfft(y, a, n=None, axis=-1, norm=None):
    d[a] = rfft_vjp(d[y], a, n, axis, norm)


@tangent(np.fft.rfft, shape_only=("n", "axis", "norm"))
def rfft_(y, a, n=None, axis=-1, norm=None):
    t[y] = np.fft.rfft(t[a], n, axis, norm)


@adjoint(np.fft.irfft, "np.fft.irfft", shape_only=("n", "axis", "norm"))
def irfft(y, a, n=None, axis=-1, norm=None):
    d[a] = irfft_vjp(d[y], a, n, axis, norm)


@tangent(np.fft.irfft, shape_only=("n", "axis", "norm"))
def irfft_(y, a, n=None, axis=-1, norm=None):
    t[y] = np.fft.irfft(t[a], n, axis, norm)


# ----- n-dimensional transforms: the one-axis ones along each axis (composites) ---------------------

# (a real input's first transform goes to a new variable: under jit a variable keeps one dtype;
# fft_axes gives the axes as a tuple, so no branch is left that the arguments never take; loops
# count over it: Numba cannot type a loop over an empty tuple)
def fftn(a, s=None, axes=None, norm=None):
    check_unset(s, "np.fft.fftn with s= (pad or cut the input first)")
    along = fft_axes(a, axes)
    z = np.fft.fft(a, None, along[0], norm)
    for k in range(1, len(along)):
        z = np.fft.fft(z, None, along[k], norm)
    return z


def ifftn(a, s=None, axes=None, norm=None):
    check_unset(s, "np.fft.ifftn with s= (pad or cut the input first)")
    along = fft_axes(a, axes)
    z = np.fft.ifft(a, None, along[0], norm)
    for k in range(1, len(along)):
        z = np.fft.ifft(z, None, along[k], norm)
    return z


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return ifftn(a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    # rfft along the last of the axes, then fft along the others (NumPy's order)
    check_unset(s, "np.fft.rfftn with s= (pad or cut the input first)")
    along = fft_axes(a, axes)
    z = np.fft.rfft(a, None, along[-1], norm)
    for k in range(len(along) - 1):
        z = np.fft.fft(z, None, along[k], norm)
    return z


def irfftn(a, s=None, axes=None, norm=None):
    # ifft along all but the last of the axes, then irfft along the last
    check_unset(s, "np.fft.irfftn with s= (pad or cut the input first)")
    along = fft_axes(a, axes)
    if len(along) == 1:
        out = np.fft.irfft(a, None, along[0], norm)
    else:
        z = np.fft.ifft(a, None, along[0], norm)
        for k in range(1, len(along) - 1):
            z = np.fft.ifft(z, None, along[k], norm)
        out = np.fft.irfft(z, None, along[-1], norm)
    return out


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return irfftn(a, s, axes, norm)


for _fn, _definition in ((np.fft.fftn, fftn), (np.fft.ifftn, ifftn), (np.fft.fft2, fft2), (np.fft.ifft2, ifft2),
                         (np.fft.rfftn, rfftn), (np.fft.irfftn, irfftn), (np.fft.rfft2, rfft2),
                         (np.fft.irfft2, irfft2)):
    register_composite(_fn, _definition)

def fftfreq(n, d=1.0):
    # the sample frequencies: integers (no derivative) over n * d (a derivative in d)
    k = np.concatenate((np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)))
    return k / (n * d)


def rfftfreq(n, d=1.0):
    return np.arange(0, n // 2 + 1) / (n * d)


register_composite(np.fft.fftfreq, fftfreq)
register_composite(np.fft.rfftfreq, rfftfreq)

for _fn in (np.fft.hfft, np.fft.ihfft):
    refuse(_fn, "np.fft." + _fn.__name__, f"s2s has no derivative of np.fft.{_fn.__name__} (Hermitian input): "
           "write it with np.fft.irfft / np.fft.rfft and np.conj")
# (fftshift and ifftshift are composites in ops/composite/rules.py)


# vmap
declare(np.real, np.imag, np.angle, batch="elementwise")
declare(np.real, np.imag, view=True)     # (of a complex array: views of its parts)
declare(np.real, attributes=("real",))
declare(np.imag, attributes=("imag",))
declare(cotangent_kind, batch="same")
declare(irfft_weights, batch="shape_fn")
declare(np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, batch="axis_args", axis_params=("axis",))
declare(np.conjugate, methods=("conj", "conjugate"))
