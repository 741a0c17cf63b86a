"""Runtime support for the fused loops of the compiled backends (transforms/fuse.py, fuse_rows.py).

A fused loop runs one pass over the elements of same-shape arrays (or over the rows of per-example
dot products) in place of a chain of whole-array NumPy calls; these helpers size it, make room for
its outputs, give it flat views to read and write, and read or write one element or row. The
sizes are -1 where the loop cannot run (shapes that differ, nothing to loop over), and the
generated code then runs the unfused statements; fused_numba.py gives each its Numba version.
"""
from __future__ import annotations


import numpy as np



# ----- fused loops (compiled backends) -------------------------------------------------
def fused_size(arrays, summed=()):
    """Element count of a fused loop over `arrays` (numbers and 0-d arrays broadcast); -1
    unless every other array has one shape (then the unfused code runs), and each group in
    `summed` (what a fused sum reads) holds such an array."""
    if not all(any(isinstance(a, np.ndarray) and a.ndim > 0 for a in group) for group in summed):
        return -1
    shapes = {np.shape(a) for a in arrays if isinstance(a, np.ndarray) and a.ndim > 0}
    if len(shapes) != 1:
        return -1
    return int(np.prod(shapes.pop()))


def _highest_rank_shape(arrays):
    return max((a for a in arrays if isinstance(a, np.ndarray) and a.ndim > 0), key=lambda a: a.ndim).shape


def fused_empty(arrays):
    """Room for a fused loop's output: the shape of the highest-rank input (the loop runs only
    when every array input has that shape); a number when no input is an array (the unfused
    branch computes a number then, and the loop does not run)."""
    if not any(isinstance(a, np.ndarray) and a.ndim > 0 for a in arrays):
        return 0.0
    return np.empty(_highest_rank_shape(arrays))


def fused_grid(full, trail):
    """(rows, cols) of a two-deep fused loop: every array in `full` has one shape, every array in
    `trail` has that shape's trailing part (cols elements, broadcast along rows), and there is at
    least one element; (-1, 0) otherwise (then the unfused code runs)."""
    arrays = [a for a in full + trail if isinstance(a, np.ndarray)]
    if not full or any(a.ndim == 0 for a in arrays):
        return -1, 0
    shape = np.shape(full[0])
    if any(np.shape(a) != shape for a in full) or not all(isinstance(a, np.ndarray) for a in full):
        return -1, 0
    tail = {np.shape(a) for a in trail if isinstance(a, np.ndarray)}
    if len(tail) != 1:
        return -1, 0
    t = tail.pop()
    if len(t) >= len(shape) or shape[len(shape) - len(t):] != t:
        return -1, 0
    if int(np.prod(shape)) == 0:      # nothing to loop over: the unfused code gives the empty results
        return -1, 0
    cols = int(np.prod(t))
    return int(np.prod(shape)) // cols, cols


def fused_zeros(arrays):
    """A fused loop's accumulator, zeros of the highest-rank input's shape."""
    return np.zeros(_highest_rank_shape(arrays))


def flat_view(x):
    """The elements a fused loop reads: a flat view of an array; a 0-d array's value is a number."""
    if isinstance(x, np.ndarray):
        return np.ravel(x) if x.ndim else x[()]
    return x


def fused_out_view(x):
    """The flat view a fused loop writes an output through.  An output that is a number (every
    input a number: fused_size is -1 and the loop never runs) gets a stand-in, so that the fused
    branch types as the unfused one does under Numba instead of failing to compile."""
    return np.ravel(x) if isinstance(x, np.ndarray) else np.empty(1)


def elem(xf, i):
    return xf[i] if isinstance(xf, np.ndarray) else xf


# ----- fused rows (compiled backends): a per-example dot product, the elementwise chain that
# consumes it and the cotangents it feeds, in one pass over the rows (transforms/fuse_rows.py) ---
def rows_size(a, b, ab, bb, others):
    """Rows of the per-example dot products bmatmul(a, b, ab, bb) (vectors a, b per example) when
    every array in `others` has one element per row, else -1 (the unfused code runs)."""
    batched = [x for x, f in ((a, ab), (b, bb)) if f]
    if not batched or any(np.ndim(x) != 2 for x in batched) or any(np.ndim(x) != 1 for x, f in ((a, ab), (b, bb)) if not f):
        return -1
    n = batched[0].shape[0]
    if any(x.shape[0] != n for x in batched) or np.shape(a)[-1] != np.shape(b)[-1]:
        return -1
    for x in others:
        if isinstance(x, np.ndarray) and np.shape(x) != (n,):
            return -1
    return n


def rows_empty(a, b, ab, bb):
    """Room for the rows' dot products (dtype of a @ b)."""
    n = (a if ab else b).shape[0]
    return np.empty(n, dtype=np.result_type(a, b))


def rows_outer_empty(a, b, ab, bb):
    """Room for one vector per row (a per-example cotangent of a or b): float64, as bmatmul_vjp_*."""
    n = (a if ab else b).shape[0]
    return np.empty((n, np.shape(a)[-1]))


def row_dot(a, b, i, ab, bb):
    """Row i's dot product: (a[i] if ab else a) . (b[i] if bb else b)."""
    return np.dot(a[i] if ab else a, b[i] if bb else b)


def row_times(out, i, c, v, vb):
    """out[i] = c * (v[i] if vb else v): row i of a dot product's cotangent."""
    out[i] = c * (v[i] if vb else v)
