"""NumPy (and scipy.special) for Numba: stand-ins for the functions and argument forms that
Numba's nopython mode lacks.

Compiled code - the generated functions and the plain-NumPy helpers they call - runs with `np`
bound to a copy of the numpy module in which such functions are replaced by stand-ins (and
`np.linalg`, `scipy.special` likewise; namespace.py's `for_numba` makes the copies).  A stand-in
calls the original in Python; its Numba implementation (an `@overload`, in this package's family
modules) covers the forms s2s generates and users write: keyword arguments, `axis=None`/int/tuple,
`keepdims`, `ddof`, stacked (batched) linear algebra, lists and tuples of arrays, Python floats,
0-d arrays.  Where Numba's own implementation covers a form, the overload returns it.

Generated Python keeps calling NumPy itself, so the Python path never runs a stand-in: a
stand-in's overload must give NumPy's answer (to rounding) for every form it accepts, and reject
(return None, or raise a TypingError naming the form) anything else - never guess.

Families, one module each, each registering its stand-ins when imported: reductions (sum & co.
with axes, var, std, cumsum/cumprod, average), norm_trace (norm, trace, diagonal), elementwise
(heaviside, clip, math.cbrt), products (matmul, dot, inner, vdot, tensordot, einsum, cross),
product_vjps (the products' adjoint helpers), linalg (det/solve/inv of stacks, cholesky,
eigvalsh, svd, ... and their adjoint helpers), shape (reshape, squeeze, atleast_nd, tile,
repeat), joins (concatenate/stack of lists, np.array of arrays, split), reorder (flip, roll,
sort, take, order statistics), pad_diff (pad, diff), special (scipy.special functions);
shape_source builds the shape families' generated implementations.  common.py holds the
registry they share (`standin`, STANDINS); namespace.py imports every family and makes the
module copies compiled code sees (`compiled_globals`).  This package file imports none of them
(they import common.py: importing them here would close an import circle).
"""
