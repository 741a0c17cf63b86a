"""np.fft and complex values inside a function: the real parts of fft.

Inputs and outputs are real, complex values live in between.  Every program below is checked
through grad against central finite differences, jvp against grad (<grad, v>), vmap(grad) against
a loop, jit(grad) against grad, and a few through hessian against finite differences of grad.
"""
from __future__ import annotations


import numpy as np
import pytest


import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad

RNG = np.random.default_rng(16)
W5 = RNG.normal(size=5)
W8 = RNG.normal(size=8)
M = RNG.normal(size=(4, 6))


def power_spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2 * W5)


def low_pass(x):
    h = np.exp(-np.arange(5.0))
    return np.sum(np.fft.irfft(np.fft.rfft(x) * h, n=8) ** 3)


def real_imag_parts(x):
    z = np.fft.fft(x)
    return np.sum(z.real * np.cos(x) + z.imag ** 2)


def phase_and_conj(x):
    z = np.exp(1j * x) * x
    return np.sum(np.real(z * np.conj(z[::-1]))) + np.sum(np.angle(z + 2.0))


def fft_convolution(x):
    a = x[:4]
    b = x[4:]
    return np.sum(np.fft.irfft(np.fft.rfft(a, 8) * np.fft.rfft(b, 8), 8) ** 2)


def ortho_roundtrip(x):
    z = np.fft.fft(x, n=6, norm="ortho") * np.arange(6.0)
    return np.sum(np.fft.ifft(z, norm="ortho").real ** 2)


def forward_norm_cut(x):
    # n shorter than the input (cut), norm="forward"; irfft of odd length
    return np.sum(np.fft.irfft(np.fft.rfft(x, n=6, norm="forward") * 1.5j, n=7, norm="forward") * W8[:7])


def spectral_derivative(x):
    # d/dt of a periodic signal through the spectrum: ifft(i k fft(x)), real part
    k = np.fft.fftfreq(8, 0.5) * 2.0 * np.pi
    dx = np.real(np.fft.ifft(1j * k * np.fft.fft(x)))
    return np.sum(dx ** 2 * W8)


def complex_abs_builtin(x):
    z = x[0] + 1j * x[1:]
    return np.sum(abs(z) * W8[1:]) + np.sum(np.abs(z) ** 3)


def two_dim(x):
    img = np.reshape(x, (2, 4))
    spec = np.fft.fft2(img)
    back = np.fft.irfft2(np.fft.rfft2(img) * 0.5, s=None)
    return np.sum(np.abs(spec) * M[:2, :4]) + np.sum(back * img)


def along_axis_zero(x):
    img = np.reshape(x, (4, 2))
    z = np.fft.rfft(img, axis=0)
    return np.sum(np.abs(z) ** 2 * M[:3, :2]) + np.sum(np.fft.fftn(img, axes=(0,)).imag * M[:4, :2])


PROGRAMS = [power_spectrum, low_pass, real_imag_parts, phase_and_conj, fft_convolution, ortho_roundtrip,
            forward_norm_cut, spectral_derivative, complex_abs_builtin, two_dim, along_axis_zero]


def _point(fn, seed=0):
    rng = np.random.default_rng([seed, len(fn.__name__)])
    return rng.normal(size=8) + 0.3


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_matches_finite_differences(fn):
    x = _point(fn)
    g = s2s.grad(fn)(x)
    assert g.dtype == np.float64 and g.shape == x.shape
    assert np.max(np.abs(g)) > 1e-3, "a zero gradient"
    assert_close(g, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-7, what=fn.__name__)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_jvp_is_grad_dot_tangent_and_vmap_grad_is_a_loop(fn):
    x = _point(fn)
    v = _point(fn, 1)
    g = s2s.grad(fn)(x)
    y, t = s2s.jvp(fn, (x,), (v,))
    assert np.isrealobj(t)
    assert_close(y, fn(x), rtol=1e-12, what="primal")
    assert_close(t, g @ v, rtol=1e-9, atol=1e-10, what="tangent")
    xs = np.stack([_point(fn, s) for s in range(3)])
    assert_close(s2s.vmap(s2s.grad(fn))(xs), np.stack([s2s.grad(fn)(r) for r in xs]), rtol=1e-10, atol=1e-12,
                 what="vmap(grad)")


@pytest.mark.parametrize("fn", [power_spectrum, low_pass, phase_and_conj, forward_norm_cut, spectral_derivative,
                                two_dim], ids=lambda f: f.__name__)
def test_jit_grad_equals_grad(fn):
    x = _point(fn)
    got = s2s.jit(s2s.grad(fn), fallback=False)(x)
    assert got.dtype == np.float64
    assert_close(got, s2s.grad(fn)(x), rtol=1e-12, atol=1e-12, what="jit(grad)")


@pytest.mark.parametrize("fn", [low_pass, real_imag_parts], ids=lambda f: f.__name__)
def test_jit_of_jvp_and_vmap(fn):
    x, v = _point(fn), _point(fn, 1)
    got = s2s.jit(s2s.jvp(fn), fallback=False)(x, v)
    assert_close(got, s2s.jvp(fn, (x,), (v,)), rtol=1e-12, atol=1e-12, what="jit(jvp)")
    xs = np.stack([_point(fn, s) for s in range(3)])
    assert_close(s2s.jit(s2s.vmap(fn), fallback=False)(xs), np.array([fn(r) for r in xs]), rtol=1e-12,
                 what="jit(vmap)")


@pytest.mark.parametrize("fn", [power_spectrum, low_pass, spectral_derivative], ids=lambda f: f.__name__)
def test_hessian_matches_finite_differences_of_grad(fn):
    x = _point(fn)
    h = s2s.hessian(fn)(x)
    assert_close(h, h.T, rtol=1e-9, atol=1e-9, what="symmetric")
    fd = np.stack([numeric_grad(lambda z: s2s.grad(fn)(z)[i], (x,), 0) for i in range(x.size)])
    assert_close(h, fd, rtol=1e-5, atol=1e-6, what="hessian")


def test_fftfreq_spacing_has_a_derivative():
    def f(d):
        return np.sum(np.fft.fftfreq(6, d) ** 2) + np.sum(np.fft.rfftfreq(6, d))
    assert_close(s2s.grad(f)(0.3), numeric_grad(f, (0.3,), 0), rtol=1e-6)


def test_float32_input_gives_float32_gradient():
    x = _point(power_spectrum).astype(np.float32)
    g = s2s.grad(power_spectrum)(x)
    assert g.dtype == np.float32
    assert_close(g, s2s.grad(power_spectrum)(x.astype(np.float64)), rtol=1e-5, atol=1e-5)


def test_refusals_name_the_line():
    def complex_out(x):
        return np.sum(np.fft.fft(x))

    def hermitian(x):
        return np.sum(np.fft.hfft(x))

    def sized(x):
        return np.sum(np.abs(np.fft.fft2(np.reshape(x, (2, 4)), s=(2, 2))))

    x = _point(power_spectrum)
    with pytest.raises(s2s.S2SError, match="complex"):
        s2s.grad(complex_out)(x)
    with pytest.raises(s2s.S2SError, match="hfft"):
        s2s.grad(hermitian)(x)
    with pytest.raises(NotImplementedError, match="s="):
        s2s.grad(sized)(x)


def three_dim_all_axes(x):
    cube = np.reshape(x, (2, 2, 2))
    z = np.fft.fftn(cube)
    back = np.fft.irfftn(np.fft.rfftn(cube) * np.arange(1.0, 3.0))
    return np.sum(np.abs(z) * M[:2, :2, None]) + np.sum(np.fft.ifftn(z * z).real * cube) + np.sum(back ** 2)


def test_n_dimensional_transforms_all_axes():
    fn = three_dim_all_axes
    x = _point(fn)
    g = s2s.grad(fn)(x)
    assert_close(g, numeric_grad(fn, (x,), 0), rtol=1e-6, atol=1e-7, what="grad")
    assert_close(s2s.jit(s2s.grad(fn), fallback=False)(x), g, rtol=1e-12, atol=1e-12, what="jit(grad)")
