"""How numba_cpu's lowering rewrites some calls NumPy code makes: list literals handed to NumPy
functions (as arrays), and random draws (NumPy's global RandomState in object mode, its Generator
handed to compiled code)."""
from __future__ import annotations

import gast
import numpy as np

from ...frontend.ast_build import name


OBJECT_MODE_GLOBALS = frozenset({"flat_float64", "flat_int64"})     # namespace_additions' names object-mode code calls


def legacy_draw(fn) -> bool:
    """A draw of NumPy's global RandomState (np.random.normal, np.random.rand, np.random.randint, ...)."""
    return getattr(fn, "__self__", None) is np.random.mtrand._rand and getattr(fn, "__name__", "") in (
        _LEGACY_DRAWS | LEGACY_INTEGER_DRAWS)


_LEGACY_DRAWS = frozenset({
    "rand", "randn", "random", "random_sample", "sample", "ranf", "standard_normal", "normal", "uniform",
    "exponential", "standard_exponential", "gamma", "standard_gamma", "beta", "chisquare", "lognormal", "laplace",
    "logistic", "gumbel", "standard_cauchy", "standard_t", "weibull", "pareto", "power", "rayleigh",
    "triangular", "vonmises", "wald", "f"})

# (the draws of integers, with their default dtype: randint's dtype= other than int is not one of them)
LEGACY_INTEGER_DRAWS = frozenset({
    "randint", "random_integers", "poisson", "binomial", "geometric", "negative_binomial", "hypergeometric",
    "logseries", "zipf"})

# the methods of NumPy's Generator that Numba compiles (and draws with NumPy's algorithms)
GENERATOR_DRAWS = frozenset({
    "random", "standard_normal", "normal", "uniform", "exponential", "standard_exponential", "gamma",
    "standard_gamma", "beta", "chisquare", "lognormal", "laplace", "logistic", "gumbel", "poisson", "binomial",
    "geometric", "integers", "choice", "shuffle", "permutation", "standard_cauchy", "standard_t", "weibull",
    "pareto", "power", "rayleigh", "triangular", "vonmises", "wald", "f", "noncentral_chisquare",
    "negative_binomial", "hypergeometric", "logseries", "zipf", "multinomial"})

# functions whose list arguments are not one array's data: sequences of arrays, shapes, axes
LIST_ARGUMENTS = frozenset({
    "array", "asarray", "asanyarray", "ascontiguousarray", "concatenate", "stack", "hstack", "vstack", "dstack",
    "column_stack", "row_stack", "block", "einsum", "meshgrid", "broadcast_arrays", "broadcast_to", "reshape",
    "transpose", "zeros", "ones", "empty", "full", "tile", "moveaxis", "expand_dims", "squeeze", "append",
    "bmap", "per_example", "List", "range", "len", "tuple", "list", "print", "objmode", "pad", "split",
    "pieces", "array_split"})
SHAPE_KEYWORDS = frozenset({"axis", "axes", "shape", "newshape", "reps", "dims", "source", "destination"})


def number_list(node) -> bool:
    """A list literal (maybe nested) of constants and names: numbers, as far as its form says."""
    if not isinstance(node, gast.List) or not node.elts:
        return False
    return all(number_list(e) if isinstance(e, gast.List) else isinstance(e, gast.Name) or _is_number(e)
               for e in node.elts)


def _is_number(node) -> bool:
    return isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def takes_lists(fname: str) -> bool:
    """A function whose list arguments are not an array's data: NumPy's (LIST_ARGUMENTS) and s2s's
    helpers for them (concatenate_vjp(g, [a, b], 0), array_vjp, pad_vjp, stack_vjp_rule, ...).
    Any other call gets its list of numbers as an array: a helper handed a list where it expects an
    array would compute list semantics (`[a, b] == y` is one bool), not fail."""
    base = fname.lstrip("_").rstrip("_")
    return base in LIST_ARGUMENTS or any(base.startswith(name + "_") for name in LIST_ARGUMENTS)


def as_array(node) -> gast.Call:
    """`np.array(node)`, spelled (the compiled namespace's np resolves it)."""
    new = gast.Call(func=gast.Attribute(name("np"), "array", gast.Load()), args=[node], keywords=[])
    return gast.copy_location(new, node)
