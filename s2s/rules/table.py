"""The rule table: importing this module registers every rule family.

It also hands lookups down to normalization (frontend/hooks.py), which must not import upward.
"""
from .registry import OpRule, attribute_op, composite_of, lookup, method_op, operator_ops, record_of, register, RULES  # noqa: F401,E501
# each family's rules.py registers its ops when imported (s2s/ops/<family>/)
from ..ops.composite import rules as _composite  # noqa: F401
from ..ops.composite import library_forms as _library_forms  # noqa: F401
from ..ops.elementwise import rules as _elementwise  # noqa: F401
from ..ops.reductions import rules as _reductions  # noqa: F401
from ..ops.linalg import rules as _linalg  # noqa: F401
from ..ops.shape import rules as _shape  # noqa: F401
from ..ops.fft import rules as _fft  # noqa: F401
from ..ops.runtime import rules as _runtime  # noqa: F401
from ..ops.collectives import rules as _collectives  # noqa: F401
from .registry import defer_family, tables_loaded as _tables_loaded


def _load_scipy_families() -> None:
    from ..ops.special import rules as _special  # noqa: F401
    from ..ops.stats import rules as _stats  # noqa: F401


def _load_scipy_optimize() -> None:
    from ..ops.composite import scipy_forms as _scipy_forms  # noqa: F401


def _load_sklearn() -> None:
    from ..ops.composite import sklearn_forms as _sklearn_forms  # noqa: F401


# scipy.special's and scipy.stats's ops register once the user's code imported scipy.special,
# scipy.optimize's and scikit-learn's once it imported those (registry.defer_family: `import s2s` does not import SciPy)
defer_family("scipy.special", _load_scipy_families)
defer_family("scipy.optimize", _load_scipy_optimize)
defer_family("sklearn.metrics", _load_sklearn)

from ..frontend.hooks import install_rulebook

_tables_loaded()     # registrations from here on are users' and third parties' (disk-cache keys name them)
install_rulebook(lookup, composite_of, method_op, attribute_op)
