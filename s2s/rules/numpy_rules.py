"""The NumPy rule table now lives in one module per op family:

- numpy_elementwise: unary and binary ufuncs, where, clip, builtins/math twins;
- numpy_reductions: sum mean prod max min var std cumsum cumprod average norm;
- numpy_linalg: products, contractions, traces, np.linalg;
- numpy_shape: reshaping, joining, reordering, copies, casts, constructors;
- scipy_special: scipy.special functions.

Importing this module registers them all (kept for code that imports it by name).
"""
from . import numpy_elementwise, numpy_linalg, numpy_reductions, numpy_shape, scipy_special  # noqa: F401
