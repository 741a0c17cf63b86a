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

The stand-ins live with their op families (s2s/ops/<family>/numba*.py), each module
registering its stand-ins when imported: ops/reductions/numba.py (sum & co. with axes, var, std,
cumsum/cumprod, average), numba_norm.py (norm); ops/linalg/numba_trace.py (trace, diagonal); ops/elementwise/numba.py
(heaviside, clip, math.cbrt); ops/linalg/numba_products.py (matmul, dot, inner, vdot, tensordot,
einsum, cross), numba_product_vjps.py (the products' adjoint helpers), numba.py (det/solve/inv of
stacks, cholesky, eigvalsh, svd, ... and their adjoint helpers); ops/shape/numba.py (reshape,
squeeze, atleast_nd, tile, repeat), numba_joins.py (concatenate/stack of lists, np.array of
arrays, split), numba_reorder.py (flip, roll, sort, take, order statistics), numba_pad_diff.py
(pad, diff), numba_source.py (how the shape stand-ins build their implementations);
ops/special/numba.py (scipy.special functions).  Here: common.py holds the registry they share
(`standin`, STANDINS); namespace.py imports every family and makes the module copies compiled
code sees (`compiled_globals`).  This package file imports none of them (they import common.py:
importing them here would close an import circle).
"""
