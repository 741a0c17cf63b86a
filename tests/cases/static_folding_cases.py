"""Programs whose branches s2s decides when it reads them (constants it knows), for
tests/frontend/test_static_folding.py. Kept in a file of their own: s2s reads their source."""
import numpy as np


def early_return_on_constant(x, y):
    # test_random_programs found it: vmap(grad) of this crashed (NameError) when the
    # re-normalized derivative folded `if alive:` but not the popped branch flag mirroring it
    if 0.5 > -0.35:
        return np.exp(np.tanh(np.tanh(x)))
    return -0.3 * np.sum(y) + 0.5 * np.sum(x)


def simulate(c, u, steps=3, callback=None, mode="sum"):
    for _ in range(steps):
        u = np.tanh(c * u)
        if callback is not None:
            callback(u)                 # a function value never given: this branch is not code
    return np.sum(u) if mode == "sum" else np.mean(u)


def uses_simulate(c, u):
    return simulate(c, u) + simulate(c, u, mode="mean")


def flag_reassigned(x):
    # a flag bound twice: its test is kept (s2s does not fold a variable the code rebinds)
    scale = True
    y = np.sin(x)
    if np.sum(x) > 0.0:
        scale = False
    if scale:
        y = 2.0 * y
    return np.sum(y)


def keys_by_name(params, x):
    total = 0.0
    for name, w in params.items():
        if name.startswith("W"):
            total = total + np.sum(np.tanh(x @ w))
        else:
            total = total + 0.1 * np.sum(w ** 2)
    return total


def tree(x, depth):
    # recursion whose depth is a constant: inlined until the folded branch ends it
    if depth == 0:
        return np.sin(x)
    return np.tanh(tree(x, depth - 1) + tree(0.5 * x, depth - 1))


def tree_loss(x):
    return np.sum(tree(x, 3))


def runaway(x, n):
    if n <= 0:
        return x
    return runaway(np.sin(x), n - 1)


def runaway_loss(x, n):
    return np.sum(runaway(x, n))


def nested_folded_return(x, flag=True):
    # a folded `if` that returns, as the last statement of a branch on data: the statements after
    # the outer `if` still run when the data branch is not taken
    if np.sum(x) > 0.0:
        if flag:
            return np.sum(np.sin(x))
    return np.sum(x ** 3)
