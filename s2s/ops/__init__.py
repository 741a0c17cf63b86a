"""The operations s2s knows, one folder per family: everything about an op in one place.

Each family folder holds
- rules.py: the `OpRule` records (s2s/rules/registry.py): adjoint and tangent templates side by
  side, and what the other passes need besides (`declare`: batching kind, axis parameters, ndarray
  method names, Numba kernels); importing it registers them (s2s/rules/table.py imports every
  family);
- helpers.py (and *_helpers.py): the plain-NumPy op helpers generated code and templates call;
- numba.py (and numba_*.py): the Numba versions of the family's NumPy functions and helpers
  (stand-ins registered with backends/numba_numpy/common.py, `@overload`s of helpers);
- batching.py, where vmap's form of an op differs per op (OpRule.batch_rule).
These sit at different layers of the pipeline (tests/project/test_layering.py): helpers below
the frontend, rules above it, batching rules with the transforms, the Numba versions with the
backends.  Nothing is imported
here.  docs/adding-an-op.md walks through adding one.
"""
