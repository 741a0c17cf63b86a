"""s2s: source-to-source automatic differentiation for NumPy code.

    import s2s
    dloss = s2s.grad(loss)          # generated Python source, in a real file
    print(s2s.show(loss))           # read it
"""
from .rules import table as _rule_table  # noqa: F401  (registers the rule tables)
from .api import grad, hessian, jacfwd, jacrev, jit, jvp, show, value_and_grad, vjp, vmap
from .custom import adjoint, custom_jvp, custom_vjp, stop_gradient, tangent
from .pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .errors import (ArgumentError, NoRuleError, NonDifferentiableError, RecursionNotSupportedError,
                     S2SError, TransformError, UnsupportedSyntaxError)

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "vmap", "jit", "show",
           "custom_vjp", "custom_jvp", "adjoint", "tangent", "stop_gradient",
           "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "S2SError", "TransformError",
           "UnsupportedSyntaxError", "NoRuleError", "RecursionNotSupportedError",
           "NonDifferentiableError", "ArgumentError"]
__version__ = "0.1.0"
