"""Numerical programs: recursion on a static depth, ODE integration with a derivative
function passed as a value plus *args, a nested def with `del` and an import inside the
function and while/else, an unrolled optimizer keeping a history list, t-SNE with
np.fill_diagonal on a fresh array, matrix factorization with a NaN mask."""
import logging

import numpy as np

logger = logging.getLogger(__name__)


def tree_reduce(xs):
    """Combine rows pairwise, recursively (a balanced binary tree of tanh units)."""
    if len(xs) == 1:
        return xs[0]
    mid = len(xs) // 2
    return np.tanh(tree_reduce(xs[:mid]) + tree_reduce(xs[mid:]))


def tree_loss(leaves):
    return np.sum(tree_reduce(leaves) ** 2)


def make_tree_args(seed=0):
    return (np.random.default_rng(4200 + seed).standard_normal((6, 3)),)


def chebyshev(n, x):
    if n == 0:
        return np.ones_like(x)
    if n == 1:
        return x
    return 2 * x * chebyshev(n - 1, x) - chebyshev(n - 2, x)


def chebyshev_series(coeffs, x):
    return np.sum(sum(c * chebyshev(k, x) for k, c in enumerate(coeffs)) ** 2)


def make_chebyshev_args(seed=0):
    rng = np.random.default_rng(4300 + seed)
    return rng.standard_normal(5), rng.uniform(-1, 1, size=4)


def rk4_step(f, y, t, dt, *args):
    k1 = f(y, t, *args)
    k2 = f(y + dt / 2 * k1, t + dt / 2, *args)
    k3 = f(y + dt / 2 * k2, t + dt / 2, *args)
    k4 = f(y + dt * k3, t + dt, *args)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def lotka_volterra(y, t, alpha, beta, delta, gamma):
    prey, pred = y
    return np.array([alpha * prey - beta * prey * pred,
                     delta * prey * pred - gamma * pred])


def lv_loss(theta, y0, observed, dt=0.1):
    alpha, beta, delta, gamma = theta
    y = y0
    t = 0.0
    trajectory = []
    for _ in range(len(observed)):
        y = rk4_step(lotka_volterra, y, t, dt, alpha, beta, delta, gamma)
        t += dt
        trajectory.append(y)
    return np.sum((np.array(trajectory) - observed) ** 2)


def make_lv_args(seed=0):
    rng = np.random.default_rng(4400 + seed)
    theta = np.array([1.0, 0.4, 0.3, 0.8]) + 0.05 * rng.standard_normal(4)
    return theta, np.array([2.0, 1.0]) + 0.1 * rng.standard_normal(2), 1.0 + rng.uniform(size=(5, 2))


def pendulum_energy(theta0, omega0, length, dt=0.05, steps=20):
    import math
    g = 9.81

    def deriv(state):
        th, om = state
        return np.array([om, -g / length * np.sin(th)])

    state = np.array([theta0, omega0])
    n = 0
    while n < steps:
        k1 = deriv(state)
        k2 = deriv(state + 0.5 * dt * k1)
        k3 = deriv(state + 0.5 * dt * k2)
        k4 = deriv(state + dt * k3)
        state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        del k1, k2, k3, k4
        if not np.all(np.isfinite(state)):
            break
        n += 1
    else:
        logger.debug("integrated %d steps", steps)
    th, om = state
    return 0.5 * (length * om) ** 2 + g * length * (1 - np.cos(th)) + (th / math.pi) ** 2


def make_pendulum_args(seed=0):
    rng = np.random.default_rng(4500 + seed)
    return 0.5 + 0.1 * rng.standard_normal(), 0.2 * rng.standard_normal(), 1.0 + 0.1 * rng.uniform()


def unrolled_sgd_loss(log_lr, w0, X, y, steps=5):
    lr = np.exp(log_lr)
    w = w0.copy()
    history = []
    for _ in range(steps):
        g = X.T @ (X @ w - y) / len(y)
        w -= lr * g
        history.append(np.mean((X @ w - y) ** 2))
    return history[-1] + 0.1 * np.mean(history)


def make_sgd_args(seed=0):
    rng = np.random.default_rng(4600 + seed)
    X = rng.standard_normal((6, 3))
    return -1.5, rng.standard_normal(3), X, X @ np.array([1.0, -1.0, 0.5])


def tsne_kl(Y, P):
    sum_Y = np.sum(np.square(Y), axis=1)
    num = 1.0 / (1.0 + np.add(np.add(-2.0 * np.dot(Y, Y.T), sum_Y).T, sum_Y))
    np.fill_diagonal(num, 0.0)
    Q = num / np.sum(num)
    Q = np.maximum(Q, 1e-12)
    return np.sum(P * np.log(P / Q))


def make_tsne_args(seed=0):
    rng = np.random.default_rng(4700 + seed)
    A = rng.uniform(size=(5, 5))
    P = A + A.T
    np.fill_diagonal(P, 1e-12)
    return rng.standard_normal((5, 2)), P / P.sum()


def mf_loss(U, V, R, lam=0.1):
    mask = ~np.isnan(R)
    pred = U @ V.T
    err = (R - pred)[mask]
    return np.sum(err ** 2) + lam * (np.sum(U ** 2) + np.sum(V ** 2))


def make_mf_args(seed=0):
    rng = np.random.default_rng(4800 + seed)
    R = rng.standard_normal((4, 5))
    R[rng.uniform(size=R.shape) < 0.3] = np.nan
    return rng.standard_normal((4, 2)), rng.standard_normal((5, 2)), R


CASES = [
    dict(name="tree_recursion", fn=tree_loss, args=make_tree_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0,),
         constructs="recursion on a static length (len(xs) of slices), xs[:mid]/xs[mid:], // on ints"),
    dict(name="chebyshev_recursion", fn=chebyshev_series, args=make_chebyshev_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0),
         constructs="recursion on an int argument (two recursive calls), generator with enumerate in sum()"),
    dict(name="lotka_volterra_rk4", fn=lv_loss, args=make_lv_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, None),
         constructs="function passed as an argument with *args forwarding, `a, b, c, d = theta` "
                    "unpacking an array, `prey, pred = y`, np.array of a list of expressions, "
                    "list .append, np.array(list of arrays)"),
    dict(name="pendulum_while_else", fn=pendulum_energy, args=make_pendulum_args, argnums=(0, 1, 2),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, 0),
         constructs="`import math` inside the function, nested def closing over g and an argument, "
                    "while/else with break, `del k1, k2, k3, k4`, float arguments, np.array of scalars"),
    dict(name="unrolled_sgd", fn=unrolled_sgd_loss, args=make_sgd_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(None, None, 0, 0),
         constructs="w0.copy() then `w -= lr * g` in a loop, list .append of scalars, history[-1], "
                    "np.mean of a list, float argument log_lr"),
    dict(name="tsne_fill_diagonal", fn=tsne_kl, args=make_tsne_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0, None),
         constructs="np.fill_diagonal on a fresh array (in place), np.add/np.square, (..).T, np.maximum"),
    dict(name="matrix_factorization_mask", fn=mf_loss, args=make_mf_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(None, None, 0),
         constructs="~np.isnan mask, boolean-mask indexing of an expression (R - pred)[mask], V.T"),
]
