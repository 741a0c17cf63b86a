"""Numba lowering of the runtime helpers and op helpers generated code calls.

Each `@overload(rt.helper)` is the "lower" entry of that helper: the implementation Numba compiles
in nopython mode, chosen at typing time from the argument types (scalar or array, ndim, None or
int axis).  Importing a module registers its overloads; generated code keeps calling the same
names, so the Python backend and the Numba backends run the very same source.

The runtime helpers' Numba versions sit beside them, in s2s/runtime/*_numba.py, and the op
families' in s2s/ops/<family>/numba*.py (with reduce_sum & co., the kernels numba_cpu.lower
rewrites np.sum & co. with axis / keepdims to, in s2s/ops/reductions/numba_kernels.py). Here:
- op_helpers.py: the few op helpers whose plain bodies use dynamic tuples (fft's cotangent_kind,
  shape's array_vjp and linspace_weights, reductions' prod_except);
- loops.py: reversed_range, and the per-example loops of bmap and per_example.
What they all share (`overload`, the type predicates, the helper compiler hook) is in common.py.

This package file imports none of them (each imports common.py: importing them here would close
an import circle); numba_cpu imports every one.
"""
