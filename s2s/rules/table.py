"""The rule table: importing this module registers every rule family.

It also hands lookups down to normalization (frontend/hooks.py), which must not import upward.
"""
from .registry import OpRule, composite_of, lookup, method_op, register, RULES  # noqa: F401
from . import numpy_composite, numpy_elementwise, numpy_reductions, numpy_linalg, numpy_shape, numpy_fft, scipy_special, scipy_stats, runtime_rules, collectives  # noqa: F401,E501  (registration side effects)
from .registry import tables_loaded as _tables_loaded

from ..frontend.hooks import install_rulebook

_tables_loaded()     # registrations from here on are users' and third parties' (disk-cache keys name them)
install_rulebook(lookup, composite_of, method_op)
