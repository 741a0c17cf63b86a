"""jacfwd, jacrev and hessian: Jacobians written as Python source, so s2s transforms them again.

A Jacobian is one batched sweep: jacrev vmaps the generated vjp over a basis of cotangents,
jacfwd the generated jvp over a basis of tangents; hessian is jacfwd of grad (forward over
reverse). Each writes a small generated function per argument count (`source_for`), which
normalization inlines where transformed code calls it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import precision, pytree
from .. import runtime as rt
from ..codegen import emit
from ..codegen.user_lines import note_user_line
from ..errors import ArgumentError, TransformError
from .calls import (bind_keywords, check_argnums, defaults_after, normalize_argnums, positional_count,
                    positional_names, user_function)
from .grad import Transformed
from .results import owned
from .sources import TransformObject, flat_wrapper, source_function
from .vmap import Batched


class Jacobian(TransformObject):
    """`jacfwd(f)` / `jacrev(f)`: shape out.shape + in.shape (JAX's convention).

    Each is one batched sweep written as Python source: jacrev vmaps the generated vjp over a basis
    of cotangents, jacfwd the generated jvp over a basis of tangents.  Because it is source, s2s
    transforms it again like any other function: jacrev(jacrev(f)), jacfwd(jacrev(f)), grad of an
    entry of a Jacobian, jit of a Jacobian.
    """

    wrapper_kind = "jacobian"

    def __init__(self, fun: Callable, mode: str, argnums=0):
        self.fun = fun
        self.mode = mode                     # "fwd" or "rev"
        self.nums, self.is_tuple = normalize_argnums(argnums)
        self.__name__ = f"jac{mode}_{getattr(fun, '__name__', 'f')}"
        self.__qualname__ = self.__name__
        self._sources: dict[int, Callable] = {}

    def __repr__(self):
        return f"<s2s jac{self.mode} of {getattr(self.fun, '__qualname__', self.fun)!r}>"

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = bind_keywords(self, args, kwargs)
        if self.takes_tree(args):
            return self.call_tree(args)
        check_argnums(args, self.nums, user_function(self.fun))
        args, low = precision.widen(args)      # float32 in, float32 out (as grad)
        try:
            return precision.narrow(owned(self.source_for(len(args))(*args), args), low)
        except Exception as exc:
            note_user_line(exc)
            raise

    def _s2s_inline_source(self, nargs: int) -> Callable:
        return self.source_for(nargs)

    def _s2s_source(self) -> Callable:
        return self.source_for(positional_count(self))

    def takes_tree(self, args) -> bool:
        """A differentiated argument is a tuple, list or dict of arrays (or a dict is passed)."""
        n = len(args)
        return any(-n <= a < n and not pytree.is_leaf(pytree.tree_flatten(args[a])[1]) for a in self.nums) \
            or any(isinstance(a, dict) for a in args)

    def call_tree(self, args, wrap=None):
        """Pytree arguments (as JAX): the Jacobian of a generated wrapper taking their leaves, one block
        per leaf, shape out.shape + leaf.shape, put back in the argument's structure. `wrap` (jit)
        is applied to the Jacobian of the wrapper before calling it."""
        n = len(args)
        for a in self.nums:
            if not -n <= a < n:
                raise ArgumentError(f"argnums={a} is out of range for a call with {n} arguments")
        nums = [a % n for a in self.nums]
        treedefs, flat, groups = [], [], {}
        for i, a in enumerate(args):
            leaves, td = pytree.tree_flatten(a)
            if i in nums or isinstance(a, dict):
                treedefs.append(td)
                groups[i] = (td, list(range(len(flat), len(flat) + len(leaves))))
                flat += leaves
            else:
                treedefs.append(None)
                flat.append(a)
        leaf_nums = tuple(k for a in nums for k in groups[a][1])
        if not leaf_nums:
            raise ArgumentError("the differentiated arguments hold no arrays")
        key = (tuple(treedefs), leaf_nums)
        inner = self.__dict__.setdefault("_tree_forms", {}).get(key)
        if inner is None:
            wrapper = flat_wrapper(source_function(self.fun), tuple(treedefs))
            inner = self._tree_forms[key] = Jacobian(wrapper, self.mode, leaf_nums)
        blocks = list((wrap(inner) if wrap is not None else inner)(*flat))
        out, k = [], 0
        for a in nums:
            td, ks = groups[a]
            out.append(pytree.tree_unflatten(td, blocks[k:k + len(ks)]))
            k += len(ks)
        return tuple(out) if self.is_tuple else out[0]

    def source_for(self, nargs: int) -> Callable:
        """The Jacobian as a generated Python function of `nargs` arguments (cached)."""
        fn = self._sources.get(nargs)
        if fn is None:
            fn = self._sources[nargs] = self._write(nargs)
        return fn

    def _write(self, nargs: int) -> Callable:
        for a in self.nums:
            if not -nargs <= a < nargs:
                raise ArgumentError(f"argnums={a} is out of range for a call with {nargs} arguments")
        nums = [a % nargs for a in self.nums]
        params = positional_names(self.fun, nargs)
        args = ", ".join(params)
        fname = self.__name__ if self.__name__.isidentifier() else f"jac{self.mode}_fn"
        ns: dict[str, Any] = {"np": np, "fun": self.fun, "check_array_output": rt.check_array_output}
        lines = [f"def {fname}({args}):"]
        results = []
        if self.mode == "rev":
            # one vjp per cotangent basis vector, batched: row k of the result is e_k^T J
            ns["vjp_rows"] = Batched(Transformed(self.fun, "vjp", tuple(nums)).generated().fn,
                                     (0,) + (None,) * nargs, 0)
            lines += [f"    out = fun({args})",
                      '    check_array_output(out, "jacrev")',
                      "    size = np.size(out)",
                      "    basis = np.reshape(np.eye(size), (size,) + np.shape(out))",
                      f"    rows = vjp_rows(basis, {args})"]
            for k, a in enumerate(nums):
                lines.append(f"    jac_{params[a]} = np.reshape(rows[{k}], np.shape(out) + np.shape({params[a]}))")
                results.append(f"jac_{params[a]}")
        else:
            # the parameters the call leaves to their defaults: the jvp takes them before its tangents
            defaults = defaults_after(source_function(self.fun), nargs)
            for k, value in enumerate(defaults):
                ns[f"default_{k}"] = value
            full = ", ".join(params + [f"default_{k}" for k in range(len(defaults))])
            for a in nums:
                x = params[a]
                # one jvp per tangent basis vector, batched: column k of the result is J e_k
                ns[f"jvp_cols_{x}"] = Batched(Transformed(self.fun, "jvp", (a,)).generated().fn,
                                              (None,) * (nargs + len(defaults)) + (0,), (None, -1))
                lines += [f"    size_{x} = np.size({x})",
                          f"    basis_{x} = np.reshape(np.eye(size_{x}), (size_{x},) + np.shape({x}))",
                          f"    out, cols_{x} = jvp_cols_{x}({full}, basis_{x})",
                          '    check_array_output(out, "jacfwd")',
                          f"    jac_{x} = np.reshape(cols_{x}, np.shape(out) + np.shape({x}))"]
                results.append(f"jac_{x}")
        lines.append("    return " + ("(" + ", ".join(results) + ",)" if self.is_tuple else results[0]))
        source = "\n".join(lines) + "\n"
        path = emit.write_module(source, fname)
        fn = emit.load_function(source, path, fname, ns, register=False)
        fn.__s2s_wraps__ = self.fun      # its text is the same for every function it wraps (disk cache key)
        return fn


class Hessian(TransformObject):
    """`hessian(f)`: forward over reverse, `jacfwd(grad(f, argnums), argnums)`."""

    wrapper_kind = "hessian"

    def __init__(self, fun: Callable, argnums=0):
        self.fun = fun
        self.nums, self.is_tuple = normalize_argnums(argnums)
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_hessian"
        if self.is_tuple:
            self._blocks = [[Jacobian(Transformed(fun, "grad", i), "fwd", j) for j in self.nums] for i in self.nums]
        else:
            self._jac = Jacobian(Transformed(fun, "grad", self.nums[0]), "fwd", self.nums[0])

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = bind_keywords(self, args, kwargs)
        check_argnums(args, self.nums, user_function(self.fun))
        args, low = precision.widen(args)
        if self.is_tuple:
            return precision.narrow(tuple(tuple(b(*args) for b in row) for row in self._blocks), low)
        return precision.narrow(self._jac(*args), low)

    def source_for(self, nargs: int) -> Callable:
        """The Hessian as generated source (one argnum), so s2s can transform it again."""
        if self.is_tuple:
            raise TransformError("transforming a hessian with a tuple of argnums is not supported; take "
                                 "s2s.jacfwd(s2s.grad(f, argnums=i), argnums=j) block by block")
        return self._jac.source_for(nargs)

    def _s2s_inline_source(self, nargs: int) -> Callable:
        return self.source_for(nargs)

    def _s2s_source(self) -> Callable:
        return self.source_for(positional_count(self))
