"""Array-likes from outside NumPy's plain arrays that the code reads from globals or closures.

An `np.ndarray` subclass whose operators mean something else (`np.matrix`: `*` is a matrix
product and results stay 2-d; masked arrays skip masked entries) would be computed with by
generated code, s2s's rules and Numba each in their own way: a global or closure value holding one
(or a tuple/list/dict holding one) is refused at the line that reads it, as an argument of that
kind is (precision.py).  `np.memmap` only changes where the data lives and is used as it is.

A scipy.sparse matrix or array is a constant of the code (never differentiated) that s2s multiplies
dense arrays by: `A @ x`, `x @ A` and `A.dot(x)` become the ops of s2s/ops/linalg/sparse_helpers.py, whose
derivatives are `A.T @ g` and `g @ A.T`.  Any other use of it (`A * x`: a matrix product for
scipy's sparse matrices, elementwise for its sparse arrays; `np.sum(A)`, `np.dot(A, x)`: NumPy's
functions do not know sparse matrices) is refused at its line (`check_sparse_uses`), and so is
compiling such a product with Numba (pipeline.py).

Invariant left for the next pass: a name of generated code that holds a sparse matrix appears only
as the sparse operand of those ops (or as the value a helper's parameter is bound to).
"""
from __future__ import annotations

import itertools
import numbers
import sys
import types
from typing import Any

import gast
import numpy as np

from ..errors import TransformError, UnsupportedSyntaxError
from ..ops.linalg.sparse_helpers import sparse_matmul, sparse_matmul_t, sparse_rmatmul, sparse_rmatmul_t
from .nodes import iter_nodes

# op -> the position of its sparse operand
SPARSE_OPS = {sparse_matmul: 0, sparse_matmul_t: 0, sparse_rmatmul: 1, sparse_rmatmul_t: 1}


def is_sparse(obj: Any) -> bool:
    """A scipy.sparse matrix or array (scipy is not imported for the question)."""
    if obj is None or isinstance(obj, (np.ndarray, np.generic, numbers.Number, str, bytes, type, types.ModuleType,
                                       types.FunctionType)):
        return False
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(obj))


def foreign_array(obj: Any) -> str | None:
    """What an ndarray subclass s2s refuses is (np.matrix, a masked array), found in obj or in the
    tuples/lists/dicts it holds (the first 256 values, three levels deep); None for anything else."""
    todo, budget = [(obj, 0)], 256          # (values looked at, at most)
    while todo:
        value, depth = todo.pop()
        if isinstance(value, np.ndarray):
            if type(value) is not np.ndarray and not isinstance(value, np.memmap):
                return f"{type(value).__module__}.{type(value).__qualname__}"
        elif depth < 3 and budget > 0 and isinstance(value, (tuple, list, dict)):
            items = list(itertools.islice(value.values() if isinstance(value, dict) else value, budget))
            budget -= len(items)
            todo.extend((item, depth + 1) for item in items)
    return None


def _sparse_kind(obj: Any) -> str:
    return f"scipy.sparse {type(obj).__name__}"


class ForeignValues:
    """np.matrix refusals and scipy.sparse products: part of `Normalizer` (normalize.py). Fields
    of `self.state` (normalize_state.py) it uses: `ns`, `objects`, `frame`; methods of the other
    parts: `call_rule`, `error`."""

    def refuse_foreign_array(self, preferred: str, obj: Any, node) -> None:
        kind = foreign_array(obj)
        if kind is None:
            return
        verb = "is" if isinstance(obj, np.ndarray) else "holds"
        raise self.error(
            TransformError,
            f"`{preferred}` {verb} a {kind}, a subclass of np.ndarray whose "
            "operators do not mean what they mean on arrays (np.matrix: `*` is a matrix product and results "
            "stay 2-d; masked arrays skip masked entries), read from the function's globals or closure; s2s "
            "differentiates plain arrays", node,
            f"convert it where it is defined (`{preferred.split('.')[-1]} = np.asarray(...)`, for a masked array "
            ".filled(value)) and write matrix products with `@`")

    def sparse_value(self, atom) -> Any:
        """The scipy.sparse matrix a normalized atom surely holds (a global, a closure value, a
        helper's parameter bound to one), or None."""
        if not isinstance(atom, gast.Name):
            return None
        value = self.state.objects.get(atom.id)
        if value is None and atom.id in self.state.ns:
            value = self.state.ns[atom.id]
        return value if is_sparse(value) else None

    def sparse_product(self, left, right, node) -> Any:
        """`left @ right` when one of them is a sparse matrix: the op of ops/linalg/sparse_helpers.py; else None."""
        a, b = self.sparse_value(left), self.sparse_value(right)
        if a is not None and b is not None:
            raise self.error(UnsupportedSyntaxError, "s2s multiplies a scipy.sparse matrix by dense arrays only, "
                             "not by another sparse matrix", node,
                             "compute the sparse product where the matrices are defined, outside the function")
        if a is not None:
            return self.call_rule(sparse_matmul, [left, right], node)
        if b is not None:
            return self.call_rule(sparse_rmatmul, [left, right], node)
        return None

    def sparse_method(self, obj, func, args: list, kws: dict, node) -> Any:
        """`A.dot(x)` / `A @ x` spelled as a method of a sparse matrix: the product; else None."""
        if not (isinstance(obj, types.MethodType) and obj.__name__ in ("dot", "__matmul__", "__rmatmul__")
                and is_sparse(obj.__self__)):
            return None
        if len(args) != 1 or kws:
            raise self.error(UnsupportedSyntaxError, f"`.{obj.__name__}` of a scipy.sparse matrix takes one array "
                             "here", node)
        base = func.value if isinstance(func, gast.Attribute) else None
        if isinstance(base, gast.Name) and base.id in self.state.frame.locals:
            receiver = gast.Name(self.state.frame.rename[base.id], gast.Load(), None, None)
        else:
            receiver = self.global_ref("sparse_matrix", obj.__self__, node)
        pair = [args[0], receiver] if obj.__name__ == "__rmatmul__" else [receiver, args[0]]
        return self.sparse_product(*pair, node)


# ----- the pass after normalization -----------------------------------------------------------
def check_sparse_uses(body: list, globals_: dict[str, Any], objects: dict[str, Any], source) -> None:
    """The pass after normalization that refuses, at its line, every use of a sparse matrix other
    than as an operand of the ops. `globals_`: the generated module's globals, `objects`: the
    locals bound to Python objects (NormalizeState.ns, .objects); `source`: the top function's
    (for a statement that carries none)."""
    held = {k for k, v in globals_.items() if is_sparse(v)} | {k for k, v in objects.items() if is_sparse(v)}
    if not held:
        return

    def visit(stmts):
        for s in stmts:
            # (a compound statement: its header here, its body statement by statement)
            parts = [s.test] if isinstance(s, (gast.If, gast.While)) else [s.iter] if isinstance(s, gast.For) \
                else [s]
            allowed: set = set()
            for n in (n for p in parts for n in iter_nodes(p)):
                if isinstance(n, gast.Call) and getattr(n, "s2s_fn", None) in SPARSE_OPS:
                    k = SPARSE_OPS[n.s2s_fn]
                    if k < len(n.args):
                        allowed.add(id(n.args[k]))
            if isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) and s.value.id in held and \
                    all(isinstance(t, gast.Name) and t.id in held for t in s.targets):
                allowed.add(id(s.value))       # (a helper's parameter bound to the matrix)
            for n in (n for p in parts for n in iter_nodes(p)):
                if isinstance(n, gast.Name) and n.id in held and isinstance(n.ctx, gast.Load) \
                        and id(n) not in allowed:
                    src = getattr(s, "s2s_src", None) or source
                    value = globals_.get(n.id, objects.get(n.id))
                    raise src.error(
                        UnsupportedSyntaxError,
                        f"this uses a {_sparse_kind(value)} other than in a product with a dense array; s2s "
                        "computes with a sparse matrix only as `A @ x`, `x @ A` or `A.dot(x)` (its `*` is a "
                        "matrix product for scipy's sparse matrices and elementwise for its sparse arrays, and "
                        "NumPy's functions, np.dot and np.matmul included, do not know sparse matrices)", s,
                        "write the product with `@`, or make a dense copy where the matrix is defined "
                        "(`A.toarray()`)")
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list):
                    visit(inner)

    visit(body)
