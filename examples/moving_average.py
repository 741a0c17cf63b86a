"""In-place array writes: an exponential moving average filled element by element.

`smooth` writes its output with `y[i] = ...` inside a loop, reading the
previous element it wrote.  s2s saves each overwritten slot on the tape and,
in the backward sweep, reads the slot's cotangent, zeroes it and restores the
old value.  We differentiate a smoothness penalty with respect to both the
signal and the smoothing factor, check against finite differences, and also
use `s2s.vjp` to pull a cotangent back through the filter itself.

Run it with `python examples/moving_average.py`.
"""
import numpy as np

import s2s


def smooth(x, alpha):
    """Exponential moving average: y[0] = x[0], y[i] = alpha x[i] + (1 - alpha) y[i-1]."""
    n = x.shape[0]
    y = np.zeros(n)
    y[0] = x[0]
    for i in range(1, n):
        y[i] = alpha * x[i] + (1.0 - alpha) * y[i - 1]
    return y


def roughness(x, alpha):
    """Sum of squared first differences of the smoothed signal."""
    y = smooth(x, alpha)          # helpers are inlined into the generated code
    return np.sum((y[1:] - y[:-1]) ** 2)


def central_differences(f, x, alpha, eps=1e-6):
    gx = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        gx[i] = (f(x + e, alpha) - f(x - e, alpha)) / (2.0 * eps)
    galpha = (f(x, alpha + eps) - f(x, alpha - eps)) / (2.0 * eps)
    return gx, galpha


def main():
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.normal(size=12))      # a random walk
    alpha = 0.3

    gx, galpha = s2s.grad(roughness, argnums=(0, 1))(x, alpha)
    fx, falpha = central_differences(roughness, x, alpha)
    err = max(np.max(np.abs(gx - fx)), abs(galpha - falpha))
    np.set_printoptions(precision=5, suppress=True)
    print(f"roughness          = {roughness(x, alpha):.6f}")
    print(f"d/dx (s2s)         = {gx}")
    print(f"d/dx (FD)          = {fx}")
    print(f"d/dalpha s2s, FD   = {float(galpha):.8f}, {falpha:.8f}")
    print(f"max |s2s - FD|     = {err:.2e}")
    assert err < 1e-6, "gradient does not match finite differences"

    # vjp of the filter itself: the cotangent of the last output only.
    y, smooth_vjp = s2s.vjp(smooth, x, alpha)
    ct = np.zeros_like(y)
    ct[-1] = 1.0
    dx, dalpha = smooth_vjp(ct)
    expected = alpha * (1.0 - alpha) ** np.arange(len(x) - 1, -1, -1)
    expected[0] = (1.0 - alpha) ** (len(x) - 1)
    print(f"d y[-1] / dx       = {dx}")
    assert np.allclose(dx, expected), "vjp does not match the closed form"

    print()
    print(s2s.show(smooth, transform="vjp"))


if __name__ == "__main__":
    main()
