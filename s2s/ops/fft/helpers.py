"""Op helpers of np.fft and of the ops that take complex values apart (s2s/ops/fft/rules.py).

cotangent_kind (a cotangent as real or complex as the value it belongs to, also used by the
elementwise and batching rules), angle_slope (np.angle), fit_axis (np.fft's n=) and the
adjoints of the one-axis transforms (fft_vjp, ifft_vjp, rfft_vjp, irfft_vjp, irfft_weights).

Every public function here is called by name from generated code and is bookkeeping, readable or
ruled (the three kinds: rules/__init__.py).
"""
from __future__ import annotations

import numpy as np


# ----- complex values inside a function, and np.fft (s2s/ops/fft/rules.py) ------------------------
# A function's inputs and outputs are real; complex values may live in between (an FFT, `1j * x`).
# Cotangents follow JAX's convention: the transpose of each op's derivative, paired with dz by
# Re(ct * dz) (no conjugate), so holomorphic rules (`d[a] = d[y] * b`) hold as written and a real
# value's cotangent is the real part of what reaches it.

def cotangent_kind(v, like):
    """v as a cotangent (or tangent) of `like`: its real part for a real `like`, complex for a complex
    one (under jit a variable keeps one dtype).  Ruled."""
    if np.iscomplexobj(like):
        if np.iscomplexobj(v):
            return v
        return v * (1.0 + 0.0j)
    return np.real(v)


def angle_slope(z, deg=False):
    """The cotangent factor of np.angle: -1j / z (0 at z = 0), in degrees if deg."""
    zero = z == 0
    s = np.where(zero, 0.0, -1j / np.where(zero, 1.0, z))
    if deg:
        return s * (180.0 / np.pi)
    return s


def fit_axis(x, m, axis):
    """x cut or zero-padded to m entries along axis (what np.fft's n= does to its input).  Ruled
    (linear: its transpose pads or cuts back)."""
    n = np.shape(x)[axis]
    if n == m:
        return x
    moved = np.moveaxis(x, axis, -1)
    if n > m:
        out = moved[..., :m]
    else:
        out = np.concatenate((moved, np.zeros(np.shape(moved)[:-1] + (m - n,), dtype=moved.dtype)), axis=-1)
    return np.moveaxis(out, -1, axis)


def fft_vjp(g, a, n=None, axis=-1, norm=None):
    """Cotangent of a in np.fft.fft(a, n, axis, norm): the DFT matrix is symmetric, so it is the same
    transform of g (n entries), fitted back to a's length."""
    ct = np.fft.fft(g, None, axis, norm)
    return cotangent_kind(fit_axis(ct, np.shape(a)[axis], axis), a)


def ifft_vjp(g, a, n=None, axis=-1, norm=None):
    ct = np.fft.ifft(g, None, axis, norm)
    return cotangent_kind(fit_axis(ct, np.shape(a)[axis], axis), a)


def rfft_vjp(g, a, n=None, axis=-1, norm=None):
    """Cotangent of (real) a in np.fft.rfft: rfft is the first n // 2 + 1 rows of fft, so g padded
    with zeros to n entries, transformed by fft (its n= pads), real part, fitted to a's length."""
    m = np.shape(a)[axis]
    full = m if n is None else n
    ct = np.fft.fft(g, full, axis, norm)
    return np.real(fit_axis(ct, m, axis))


def irfft_weights(n):
    """How often each of the n // 2 + 1 half-spectrum entries counts in np.fft.irfft of length n:
    twice (itself and its conjugate mirror), once for entry 0 and, n even, entry n / 2."""
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[n // 2] = 1.0
    return w


def irfft_vjp(g, a, n=None, axis=-1, norm=None):
    """Cotangent of a in np.fft.irfft(a, n, axis, norm): y_j = scale * sum_k w_k Re(a_k e^(2 pi i jk/n)),
    so ct_k = w_k * ifft(g)_k (same scale); the imaginary parts of entries 0 and n / 2 do not count."""
    m = np.shape(a)[axis]
    full = 2 * (m - 1) if n is None else n
    ct = fit_axis(np.fft.ifft(g, None, axis, norm), full // 2 + 1, axis)
    ct = np.moveaxis(np.moveaxis(ct, axis, -1) * irfft_weights(full), -1, axis)
    return cotangent_kind(fit_axis(ct, m, axis), a)
