"""s2s: source-to-source automatic differentiation for NumPy code.

    import s2s
    dloss = s2s.grad(loss)          # generated Python source, in a real file
    print(s2s.show(loss))           # read it
"""
from .backends import threads as _threads
_threads.apply_environment()     # (S2S_NUM_THREADS: before NumPy's BLAS and Numba start their pools)
from .rules import table as _rule_table  # noqa: F401,E402  (registers the rule tables)
from .backends.threads import get_num_threads, set_num_threads  # noqa: E402
from .api import grad, hessian, jacfwd, jacrev, jit, jvp, show, value_and_grad, vjp, vmap
from .api import (device_count, devices, local_device_count, local_devices, pmap, process_count,
                  process_index)
from .runtime.collectives import (all_gather, all_to_all, axis_index, axis_size, pmax, pmean, pmin, ppermute,
                                  psum, pswapaxes)
from .custom import adjoint, custom_jvp, custom_vjp, stop_gradient, tangent
from .pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .frontend.library_code import library_code
from .errors import (ArgumentError, CollectiveError, NoRuleError, NonDifferentiableError, RecursionNotSupportedError,
                     S2SError, TransformError, UnsupportedSyntaxError)

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "vmap", "jit", "show",
           "set_num_threads", "get_num_threads", "pmap", "device_count", "devices", "local_devices", "local_device_count", "process_index",
           "process_count", "psum", "pmean", "pmax", "pmin", "all_gather", "ppermute", "all_to_all",
           "pswapaxes", "axis_index", "axis_size", "CollectiveError",
           "custom_vjp", "custom_jvp", "adjoint", "tangent", "stop_gradient",
           "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "S2SError", "TransformError",
           "UnsupportedSyntaxError", "NoRuleError", "RecursionNotSupportedError",
           "NonDifferentiableError", "ArgumentError", "library_code"]
__version__ = "0.1.0"
