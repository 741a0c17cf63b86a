"""Quickstart: differentiate a plain NumPy loss function with s2s.

Run it with `python examples/quickstart.py`.  It

1. builds a small binary-classification data set (fixed seed),
2. computes the gradient of `loss` with `s2s.grad`,
3. checks it against central finite differences, and
4. prints the Python source s2s generated for the gradient,
5. and runs it batched (vmap), compiled (jit) and data-parallel over 2 cpu devices (pmap).
"""
import time

import numpy as np

import s2s

DEPTH = 3        # residual tanh layers (they share one weight matrix)
DECAY = 1e-3     # weight decay


def loss(w, X, y):
    """Logistic loss of a tiny residual tanh network, plus weight decay.

    `w` holds every parameter in one flat vector: a (D, D) hidden matrix
    followed by a (D,) read-out vector, where D = X.shape[1].
    """
    D = X.shape[1]
    W = np.reshape(w[:D * D], (D, D))
    v = w[D * D:]
    h = X
    for layer in range(DEPTH):
        h = h + np.tanh(h @ W)
    z = h @ v
    p = 1.0 / (1.0 + np.exp(-z))
    nll = -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    if DECAY > 0.0:
        nll = nll + DECAY * np.sum(w * w)
    return nll


def device_gradient(w, X, y):
    """One device's gradient of its shard of the batch, averaged over the devices (pmap)."""
    return s2s.pmean(s2s.grad(loss)(w, X, y), "batch")


def finite_differences(f, w, *args, eps=1e-6):
    """Central differences of f with respect to its first argument."""
    g = np.zeros_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e[i] = eps
        g[i] = (f(w + e, *args) - f(w - e, *args)) / (2.0 * eps)
    return g


def main():
    rng = np.random.default_rng(0)
    n, D = 64, 3
    X = rng.normal(size=(n, D))
    y = (X[:, 0] - 0.5 * X[:, 1] > 0.0).astype(float)
    w = 0.3 * rng.normal(size=D * D + D)

    dloss = s2s.grad(loss)           # generates Python source on first call
    g = dloss(w, X, y)
    g_fd = finite_differences(loss, w, X, y)
    err = np.max(np.abs(g - g_fd))

    np.set_printoptions(precision=5, suppress=True)
    print(f"loss(w)              = {loss(w, X, y):.6f}")
    print(f"s2s.grad(loss)(w)    = {g}")
    print(f"finite differences   = {g_fd}")
    print(f"max |s2s - FD|       = {err:.2e}")
    assert err < 1e-6, "gradient does not match finite differences"

    print()
    print("Generated source of s2s.grad(loss):")
    print()
    print(s2s.show(loss))

    # Per-example gradients: vmap of the gradient, batched as array code (no Python loop).
    def example_loss(w, x, t):
        return loss(w, x[None, :], t[None])
    per_example = s2s.vmap(s2s.grad(example_loss), in_axes=(None, 0, 0))(w, X, y)
    same = np.allclose(per_example.mean(axis=0), g, rtol=1e-10, atol=1e-12)
    print(f"vmap(grad): per-example gradients of shape {per_example.shape}; their mean is the batch "
          f"gradient: {same}")
    assert same, "per-example gradients do not average to the batch gradient"

    # Compiled: the same generated source, handed to Numba (nopython mode).  The first call answers
    # at once with the generated Python while Numba compiles on a background thread; `wait()`
    # waits for the machine code (jit(..., wait=True) or S2S_JIT_WAIT=1 compile before answering).
    fast = s2s.jit(dloss)
    start = time.perf_counter()
    first = fast(w, X, y)
    answered = time.perf_counter() - start
    fast.wait()
    compiled = time.perf_counter() - start
    agree = np.allclose(first, g, rtol=1e-12) and np.allclose(fast(w, X, y), g, rtol=1e-12)
    print(f"jit(grad(loss)): first result after {answered:.2f} s (generated Python), machine code "
          f"after {compiled:.1f} s (Numba, nopython); both agree with grad(loss): {agree}")
    assert agree, "compiled gradient differs"

    # Data parallel: the batch split over 2 devices (threads running the compiled per-device code),
    # each device's gradient averaged with pmean: the gradient of the whole batch.
    n = 2 if s2s.device_count() >= 2 else 1
    m = len(y) // n * n
    per_device = s2s.pmap(device_gradient, axis_name="batch", in_axes=(None, 0, 0))
    grads = per_device(w, X[:m].reshape(n, -1, X.shape[1]), y[:m].reshape(n, -1))
    agree = np.allclose(grads[0], s2s.grad(loss)(w, X[:m], y[:m]), rtol=1e-10)
    print(f"pmap over {n} devices: each device's averaged gradient equals the whole batch's: {agree}")
    assert agree, "data-parallel gradient differs"


if __name__ == "__main__":
    main()
