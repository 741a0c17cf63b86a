"""One small function per op (or op variant) for the op sweep (tests/ops/test_op_sweep.py).

Every case function is defined at module level so s2s can read its source, and
returns a scalar: the op's output weighted by a fixed random array `W...`
(so gradients are not all ones), summed.  Each `Case` says how to make inputs
(float64, broadcast shapes where the op broadcasts, away from kinks and
singularities) and what to expect of second derivatives.

Nothing here imports s2s: the functions run under plain NumPy.

The cases live in one module per family of ops (op_cases_elementwise.py, op_cases_arrays.py,
op_cases_special.py; the weights, input helpers and the `Case` record in op_cases_base.py);
importing this module registers them all, always in the same order.
"""
from cases import op_cases_elementwise, op_cases_arrays, op_cases_special  # noqa: F401  (registers the cases)
from cases.op_cases_base import CASES, Case, _sym_distinct, _wellcond  # noqa: F401
