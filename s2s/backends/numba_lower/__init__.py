"""Numba lowering of the runtime helpers and op helpers generated code calls.

Each `@overload(rt.helper)` is the "lower" entry of that helper: the implementation Numba compiles
in nopython mode, chosen at typing time from the argument types (scalar or array, ndim, None or
int axis).  Importing a module registers its overloads; generated code keeps calling the same
names, so the Python backend and the Numba backends run the very same source.

The runtime helpers' Numba versions sit beside them, in s2s/runtime/*_numba.py. Here:
- op_helpers.py: the op helpers beside the rule families (s2s/rules/*_helpers.py) whose plain
  bodies use dynamic tuples; the other op helpers' Numba versions sit beside the stand-ins of
  their ops (backends/numba_numpy/).
The functions numba_cpu.lower rewrites generated code to call, with their Numba implementations:
- reductions.py: reduce_sum & co. (np.sum & co. with axis / keepdims), and the flat index maps
  they share with the cotangents of reductions;
- loops.py: reversed_range, and the per-example loops of bmap and per_example.
What they all share (`overload`, the type predicates, the helper compiler hook) is in common.py.

This package file imports none of them (each imports common.py: importing them here would close
an import circle); numba_cpu imports every one.
"""
