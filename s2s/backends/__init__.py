"""Backends: where generated source runs.

- Python: the generated module is compiled and exec'd from its file (codegen/emit.py).
- Numba CPU / parallel (numba_cpu.py, numba_lower/, numba_numpy/): nopython machine code.
- Numba CUDA (numba_cuda.py): kernels for elementwise and batched work.
Backends never see the user's AST, only generated source.
"""
