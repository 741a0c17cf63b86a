"""Reductions and scans: sum mean prod max min var std cumsum cumprod average norm, and their Numba kernels."""
