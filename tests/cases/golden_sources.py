"""Small functions whose generated source is pinned by tests/golden/test_golden.py.

Editing a function here changes its expected output: regenerate with
`python -m pytest tests/golden/test_golden.py --update-golden` and review the diff.
"""
import numpy as np


def elementwise_sum(x, y):
    """An elementwise expression with broadcasting and a reduction."""
    z = np.sin(x) * y + np.exp(-x)
    return np.sum(z * z)


def loop_with_branch(x, n):
    """A loop with an `if`: the tape records the branch taken in each iteration."""
    acc = 0.0
    for i in range(n):
        if acc < 1.0:
            acc = acc + np.tanh(x * i)
        else:
            acc = acc * 0.5
    return acc


def indexed_write(x):
    """An in-place fill `y[i] = ...` that reads the previous element."""
    y = np.zeros(x.shape[0])
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * np.cos(x[i])
    return np.sum(y)


def closure_step(w, xs):
    """A nested `def` closing over `w`, called in a loop: inlined where it is called."""
    def step(h, x):
        return np.tanh(w * h + x)
    h = 0.0
    for x in xs:
        h = step(h, x)
    return h


def list_building_loop(x, n):
    """A list grown with `.append` in a loop whose length is known when it runs: the rows of one array."""
    hs = [x]
    for i in range(n):
        hs.append(np.sin(hs[-1]) * x)
    return np.sum(np.stack(hs))


def comprehension_sum(x):
    """Comprehensions over a tuple and a constant range: unrolled, one variable per element."""
    scales = (0.5, 1.0, 2.0)
    terms = [np.sum(np.tanh(s * x)) for s in scales]
    return sum(terms) + sum(np.sum(x ** k) for k in range(1, 3))
