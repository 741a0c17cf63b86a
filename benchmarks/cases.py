"""Benchmark functions, written as a user would (plain NumPy)."""
import numpy as np


def logistic_loss(w, x, y):
    """Per-example logistic loss: log(1 + exp(-y * <x, w>))."""
    return np.log(1.0 + np.exp(-y * (x @ w)))


def per_example_grads_numpy(w, X, y):
    """Hand-written per-example gradients of logistic_loss (the issue's reference expression)."""
    return (-y / (1 + np.exp(y * (X @ w))))[:, None] * X


# ---------------------------------------------------------------------------
# benchmarks/sidebyside.py: the functions a user writes (plain NumPy, `np` is
# the only name they use, so the same code runs under autograd.numpy or
# jax.numpy by rebinding `np`), then the gradients written by hand, in NumPy
# and in Numba, that each s2s result is checked and timed against.
# ---------------------------------------------------------------------------

def elementwise_sum(x):
    """Case 1: a fused elementwise chain reduced to a scalar."""
    return np.sum(np.sin(x) * x**2 + np.exp(-x * x))


def elementwise_sum_grad_numpy(x):
    return np.cos(x) * x**2 + 2.0 * x * np.sin(x) - 2.0 * x * np.exp(-x * x)


def branchy_recurrence(x):
    """Case 2: a scalar recurrence with a data-dependent branch, one step per element."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        if x[i] > 0:
            s = s * 0.999 + np.sin(x[i]) * x[i]
        else:
            s = s * 0.998 - x[i]**2
    return s


def branchy_recurrence_grad_numpy(x):
    """s = sum_i C_i h(x_i) with C_i = prod_{j>i} a_j (a_j = 0.999 or 0.998, piecewise constant),
    so ds/dx_i = C_i h'(x_i); C is a reversed cumulative product."""
    a = np.where(x > 0, 0.999, 0.998)
    c = np.empty_like(x)
    c[-1] = 1.0
    c[:-1] = np.cumprod(a[:0:-1])[::-1]
    dh = np.where(x > 0, np.cos(x) * x + np.sin(x), -2.0 * x)
    return c * dh


def mlp_loss_flat(W1, b1, W2, b2, X, Y):
    """Case 4: softmax cross-entropy of a one-hidden-layer tanh network, batch mean."""
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    zs = z - np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(zs), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * (zs - lse), axis=1))


def mlp_loss(params, X, Y):
    """Case 4 with the parameters as one pytree argument (a tuple (W1, b1, W2, b2))."""
    W1, b1, W2, b2 = params
    return mlp_loss_flat(W1, b1, W2, b2, X, Y)


def mlp_loss_grad_numpy(params, X, Y):
    W1, b1, W2, b2 = params
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    zs = z - np.max(z, axis=1, keepdims=True)
    e = np.exp(zs)
    p = e / np.sum(e, axis=1, keepdims=True)
    dz = (p * np.sum(Y, axis=1, keepdims=True) - Y) / X.shape[0]
    dh = dz @ W2.T
    da = dh * (1.0 - h * h)
    return X.T @ da, np.sum(da, axis=0), h.T @ dz, np.sum(dz, axis=0)


def _numba_grads():
    """The hand-written Numba gradients (compiled when first called; numba is a dependency of s2s)."""
    import numba

    @numba.njit
    def elementwise_sum_grad(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            xi = x[i]
            out[i] = np.cos(xi) * xi * xi + 2.0 * xi * np.sin(xi) - 2.0 * xi * np.exp(-xi * xi)
        return out

    @numba.njit
    def branchy_recurrence_grad(x):
        n = x.shape[0]
        out = np.empty(n)
        ds = 1.0
        for i in range(n - 1, -1, -1):
            xi = x[i]
            if xi > 0:
                out[i] = ds * (np.cos(xi) * xi + np.sin(xi))
                ds = ds * 0.999
            else:
                out[i] = ds * (-2.0 * xi)
                ds = ds * 0.998
        return out

    @numba.njit
    def per_example_grads(w, X, y):
        n, d = X.shape
        out = np.empty((n, d))
        for i in range(n):
            t = 0.0
            for j in range(d):
                t += X[i, j] * w[j]
            c = -y[i] / (1.0 + np.exp(y[i] * t))
            for j in range(d):
                out[i, j] = c * X[i, j]
        return out

    @numba.njit
    def mlp_loss_grad(W1, b1, W2, b2, X, Y):
        B = X.shape[0]
        h = np.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        dz = np.empty_like(z)
        for r in range(B):
            m = z[r, 0]
            for k in range(1, z.shape[1]):
                m = max(m, z[r, k])
            tot = 0.0
            ysum = 0.0
            for k in range(z.shape[1]):
                dz[r, k] = np.exp(z[r, k] - m)
                tot += dz[r, k]
                ysum += Y[r, k]
            for k in range(z.shape[1]):
                dz[r, k] = (dz[r, k] / tot * ysum - Y[r, k]) / B
        da = (dz @ W2.T) * (1.0 - h * h)
        return X.T @ da, da.sum(axis=0), h.T @ dz, dz.sum(axis=0)

    return {"elementwise_sum": elementwise_sum_grad, "branchy_recurrence": branchy_recurrence_grad,
            "per_example": per_example_grads, "mlp_loss": mlp_loss_grad}


_NUMBA = {}


def numba_grad(name):
    """The hand-written Numba gradient for case `name` (see _numba_grads)."""
    if not _NUMBA:
        _NUMBA.update(_numba_grads())
    return _NUMBA[name]
