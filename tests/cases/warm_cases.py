"""User programs for tests/cache/test_warm_cache.py: what people jit, with `@`, a bias broadcast
along rows, loops with branches, pairwise interactions and a list literal turned into an array.

Each entry of CASES is (name, how to build the jitted callable from s2s, arguments).  The module
is plain NumPy: s2s reads the sources from this file in each child process.
"""
import numpy as np


def attention_loss(Wq, X):
    # one attention head with a shared key/value projection: scores, a stable softmax, a mix
    Q = X @ Wq
    S = Q @ X.T / np.sqrt(X.shape[1])
    S = S - np.max(S, axis=1, keepdims=True)
    P = np.exp(S)
    P = P / np.sum(P, axis=1, keepdims=True)
    out = P @ X
    return np.sum(out * out)


def nbody_energy(pos):
    # potential energy of point masses: a double loop over pairs, softened distances
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            e = e - 1.0 / np.sqrt(np.sum(d * d) + 0.01)
    return e


def mlp_loss(W1, b1, w2, X, y):
    # a hidden tanh layer with a bias broadcast along the rows, a linear read-out
    h = np.tanh(X @ W1 + b1)
    r = h @ w2 - y
    return np.mean(r * r)


def branchy_recurrence(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s = s * a + np.sin(x[i]) * x[i]
        else:
            s = s * a - x[i] ** 2
    return s


def rotated_norm(p):
    # a vector built from a list of its entries (np.array of a list literal)
    s = np.array([p[1], -p[0]])
    return np.sum(s * s)


def example_logistic(w, x, t):
    # one example's loss, for per-example gradients with vmap
    z = np.dot(x, w)
    return np.log1p(np.exp(-t * z))


def smooth(x):
    return np.sum(np.sin(x) * x + 0.5 * x ** 3)


def scaled_tanh(x):
    # elementwise: its fused version does not type for a 0-d array or a scalar argument, and
    # jit falls back to the unfused one (a fact the cache keeps, so no process tries it again)
    y = x * 2.0
    return np.tanh(y) * y + 1.0


def mix(x, a):
    return np.sin(x) * a + a * a * x


def nested_overwrite(x):
    # a 0-d array argument reassigned to a number: jit runs it as a number (remembered in the cache)
    for i in range(3):
        x = np.sin(x) * x + 0.5
    return x


def masked_pick(x):
    # vmap: a batched index has no array form (a per-example loop calling the compiled function);
    # that function's fused version does not type (`m` bool, fused as float): the fused and the
    # unfused loop are two files, each calling its own compiled function
    m = (x > 0.1) & (x <= 1.5) | np.isnan(x)
    i = np.argmax(x[0])
    return np.sum(np.where(m, x, 0.0)) + x[1, i] * 2.0


def _data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(6, 4))
    return {
        "Wq": 0.3 * rng.normal(size=(4, 4)), "X": X, "pos": rng.normal(size=(5, 3)),
        "W1": 0.4 * rng.normal(size=(4, 8)), "b1": 0.1 * rng.normal(size=8), "w2": rng.normal(size=8),
        "y": rng.normal(size=6), "x": rng.normal(size=9), "p": np.array([2.0, 0.3]),
        "w": rng.normal(size=4), "t": np.sign(rng.normal(size=6)),
    }


def cases(s2s):
    d = _data()
    return [
        ("jit(attention_loss)", s2s.jit(attention_loss), (d["Wq"], d["X"])),
        ("jit(grad(attention_loss))", s2s.jit(s2s.grad(attention_loss)), (d["Wq"], d["X"])),
        ("jit(grad(nbody_energy))", s2s.jit(s2s.grad(nbody_energy)), (d["pos"],)),
        ("jit(value_and_grad(mlp_loss, (0, 1, 2)))",
         s2s.jit(s2s.value_and_grad(mlp_loss, argnums=(0, 1, 2))), (d["W1"], d["b1"], d["w2"], d["X"], d["y"])),
        ("jit(grad(branchy_recurrence))", s2s.jit(s2s.grad(branchy_recurrence)), (d["x"], 0.9)),
        ("jit(grad(branchy_recurrence), argnums=1)", s2s.jit(s2s.grad(branchy_recurrence, argnums=1)),
         (d["x"], 0.9)),
        ("jit(grad(rotated_norm))", s2s.jit(s2s.grad(rotated_norm)), (d["p"],)),
        ("jit(vmap(grad(example_logistic)))",
         s2s.jit(s2s.vmap(s2s.grad(example_logistic), in_axes=(None, 0, 0))), (d["w"], d["X"], d["t"])),
        ("jit(vmap(smooth))", s2s.jit(s2s.vmap(smooth)), (d["X"],)),
        ("jit(hessian(smooth))", s2s.jit(s2s.hessian(smooth)), (d["x"][:4],)),
        ("jit(scaled_tanh) of a 0-d array", s2s.jit(scaled_tanh), (np.array(0.7),)),
        ("jit(vmap(mix, in_axes=(0, None))) with a float", s2s.jit(s2s.vmap(mix, in_axes=(0, None))), (d["x"], 2.0)),
        ("jit(grad(nested_overwrite)) of a 0-d array", s2s.jit(s2s.grad(nested_overwrite)), (np.array(0.7),)),
        ("jit(vmap(masked_pick)) per example", s2s.jit(s2s.vmap(masked_pick)), (d["X"].reshape(3, 2, 4),)),
        ("jit(grad(smooth), target='parallel')", s2s.jit(s2s.grad(smooth), target="parallel"), (d["x"],)),
    ]
