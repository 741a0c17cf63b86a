"""Views of rows that see later writes: NumPy's basic integer indexing (`grid[0]`) and
unpacking the rows of an array (`lower, upper = box`) give views, and a write into the array
afterwards (`grid[0] = x`, `A[i, i] = ...`) changes what the view reads. People name rows
for readability before filling them. The primal value s2s computes is right (the forward sweep
runs NumPy), but the gradient must follow the write into the view too."""
import numpy as np


def boundary_rows(top_values, k):
    grid = np.zeros((4, len(top_values)))
    top = grid[0]                      # the top boundary row (a view)
    grid[0] = top_values               # ... filled here: `top` sees it
    for i in range(1, 4):
        grid[i] = k * grid[i - 1] + 0.1 * i
    return np.sum(top * grid[-1]) + np.sum(grid ** 2)


def make_boundary_args(seed=0):
    rng = np.random.default_rng(6200 + seed)
    return rng.standard_normal(3), 0.7 + 0.1 * seed


def row_energies(x):
    A = np.outer(x, x)
    total = 0.0
    for i in range(len(x)):
        row = A[i]
        A[i, i] = 1.0 + 0.5 * x[i] ** 2   # shrink the diagonal: `row` sees it
        total = total + row @ x
    return total


def make_row_args(seed=0):
    return (np.random.default_rng(6300 + seed).standard_normal(4),)


def box_bounds(x, width):
    box = np.stack([x - width, x + width])
    lower, upper = box                 # rows of box (views)
    box[0, 0] = 0.5 * x[0]             # tighten the first lower bound: `lower` sees it
    return np.sum(upper - lower) + np.sum(lower ** 2)


def make_box_args(seed=0):
    rng = np.random.default_rng(6400 + seed)
    return rng.standard_normal(3), 0.5 + 0.1 * rng.uniform()


CASES = [
    dict(name="boundary_rows", fn=boundary_rows, args=make_boundary_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0),
         constructs="`top = grid[0]` (an integer-indexed row view) read after `grid[0] = ...`"),
    dict(name="row_energies", fn=row_energies, args=make_row_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0,),
         constructs="`row = A[i]` in a loop, then `A[i, i] = ...`, then `row @ x`; np.outer"),
    dict(name="box_bounds", fn=box_bounds, args=make_box_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0),
         constructs="`lower, upper = box` unpacking the rows of an array, then `box[0, 0] = ...`"),
]
