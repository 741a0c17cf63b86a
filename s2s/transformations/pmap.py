"""pmap: `f` run on every device at once, one slice of the mapped arguments each (SPMD), with the
collectives of s2s/runtime/collectives.py exchanging between them.

The per-device code is f's generated source: on the cpu backend compiled by Numba (`nogil`, so the
device threads compute in parallel; collectives take the GIL only to exchange), on cuda run as
the host code of each GPU (its jitted kernels run on that GPU), on mpi run by each rank on its
own shard.  Devices and how code runs on them: backends/devices.py.

Inside another transform (`grad` of a function that calls `pmap(g)`), a Pmapped is an op with its
own rules: its adjoint is the pmap of g's vjp (each device's cotangent through g, collectives
through their adjoints), its tangent the pmap of g's jvp, so derivatives run on the devices too.
"""
from __future__ import annotations

import ast
import inspect
import re
from typing import Any, Callable, Sequence

import numpy as np

from .. import pytree
from ..backends import devices as dev
from ..codegen import emit
from ..codegen.user_lines import user_site
from ..errors import ArgumentError, CollectiveError
from ..frontend.namespace import base_namespace
from ..pipeline import build
from ..rules.registry import lookup, register
from ..rules.template import Template
from .calls import axes_per_argument
from .grad import Transformed
from .jit import Jitted
from .sources import TransformObject, flat_wrapper, source_function


def _axes_tuple(in_axes, nargs: int, static: tuple) -> tuple:
    axes = axes_per_argument(in_axes, nargs, "pmap")
    return tuple(None if i in static else a for i, a in enumerate(axes))


class Pmapped(TransformObject):
    """`pmap(f)`: f on every device, in parallel, over the leading (in_axes) axis of its arguments."""

    wrapper_kind = "pmap"

    def __init__(self, fun: Callable, axis_name: Any = None, in_axes=0, out_axes=0,
                 static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence | None = None,
                 backend: str | None = None):
        self.fun = fun
        self.axis_name = axis_name
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
            else tuple(static_broadcasted_argnums)
        self.backend = dev.check_backend(backend if backend is not None else
                                         (devices[0].platform if devices else None))
        if self.backend == "mpi":
            dev.mpi_comm()          # (mpi4py missing: say so now)
        self.devices = list(devices) if devices is not None else None
        if self.devices is not None and any(d.platform != self.backend for d in self.devices):
            raise ArgumentError(f"pmap: devices {self.devices} are not all {self.backend} devices")
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_pmap"
        self.__qualname__ = self.__name__
        self.per_device = self._per_device_function(fun)
        self._vjps: dict = {}
        self._jvp = None
        self._flat_fns: dict = {}

    def _s2s_source(self):
        self._s2s_as_op()        # (grad(pmap(f)): the op's rules; source_function finds them)
        return None

    def __repr__(self) -> str:
        return f"pmap({self.fun!r}, axis_name={self.axis_name!r}, backend={self.backend!r})"

    # ----- the per-device code ------------------------------------------------------------------
    def _per_device_function(self, fun: Callable) -> Callable:
        if self.backend == "cuda":
            return fun          # host code per GPU: its jitted kernels run on the GPU made current
        if isinstance(fun, Jitted):
            if fun.target == "cuda":
                raise ArgumentError("pmap(jit(f, target='cuda')) runs on the cuda backend: pass backend='cuda'")
            jitted = Jitted(fun.fun, fun.target, fun.cache, fun.fallback, wait=True)
        else:
            jitted = Jitted(fun, "cpu", True, fallback=True, wait=True)
        jitted.locate_errors = False     # (re-running a device's code alone would wait in its collectives)
        return jitted

    def per_device_source(self, nargs: int) -> str:
        """The generated per-device source (what `s2s show --transform pmap` prints)."""
        fun = self.fun.fun if isinstance(self.fun, Jitted) else self.fun
        if isinstance(fun, TransformObject) and hasattr(fun, "source"):
            return fun.source
        return build(source_function(fun), "primal", (), False, False).source

    # ----- a call ---------------------------------------------------------------------------------
    def _device_list(self) -> list:
        if self.devices is not None:
            return self.devices
        return dev.local_devices(self.backend)

    def _shards(self, args: tuple) -> tuple[int, list[tuple]]:
        """The number of shards and each device's arguments (mapped arguments sliced, the others as given)."""
        axes = _axes_tuple(self.in_axes, len(args), self.static)
        sizes: dict[int, int] = {}
        for i, (a, ax) in enumerate(zip(args, axes)):
            if ax is None:
                continue
            for leaf in pytree.tree_leaves(a):
                shape = np.shape(leaf)
                if not -len(shape) <= ax < len(shape):
                    raise ArgumentError(f"pmap: argument {i} has shape {shape}, which has no axis {ax} to map over "
                                        f"(in_axes={self.in_axes!r})")
                size = shape[ax]
                if sizes.setdefault(i, size) != size:
                    raise ArgumentError(f"pmap: the arrays of argument {i} have different sizes along axis {ax}")
        if not sizes:
            raise ArgumentError("pmap needs at least one mapped argument (in_axes not None)")
        if len(set(sizes.values())) > 1:
            listed = ", ".join(f"argument {i}: {s}" for i, s in sizes.items())
            raise ArgumentError(f"pmap: the mapped arguments have different sizes along their mapped axes ({listed})")
        n = next(iter(sizes.values()))
        avail = self._device_list()
        if n > len(avail):
            where = "this MPI rank drives" if self.backend == "mpi" else "there are"
            first = next(iter(sizes))
            raise ArgumentError(
                f"pmap: argument {first} has {n} shards along axis {axes[first]} (the mapped axis), but {where} "
                f"{len(avail)} {self.backend} device"
                f"{'s' if len(avail) != 1 else ''}"
                + (" (each rank passes its local shard: a leading axis of 1)" if self.backend == "mpi" else
                   " (S2S_CPU_DEVICES sets the number of cpu devices)" if self.backend == "cpu" else ""))
        if n == 0:
            raise ArgumentError("pmap: the mapped axis has size 0")
        shards = []
        for j in range(n):
            shards.append(tuple(a if ax is None else pytree.tree_map(lambda leaf, ax=ax: np.take(leaf, j, axis=ax)
                                                                      if ax else leaf[j], a)
                                for a, ax in zip(args, axes)))
        return n, shards

    def _flat(self, shards: list) -> tuple[Callable, list]:
        """The per-device function and arguments for shards with tuple/list/dict arguments: compiled
        code takes arrays and numbers, so such an argument is passed as its leaves, to a wrapper
        (sources.flat_wrapper) that rebuilds it and calls f."""
        flats = [[pytree.tree_flatten(a) for a in shard] for shard in shards]
        treedefs = tuple(None if pytree.is_leaf(td) else td for _, td in flats[0])
        if all(td is None for td in treedefs) or not isinstance(self.per_device, Jitted):
            return self.per_device, shards
        fn = self._flat_fns.get(treedefs)
        if fn is None:
            inner = self.per_device.fun
            fn = Jitted(flat_wrapper(inner, treedefs),
                        self.per_device.target, self.per_device.cache, self.per_device.fallback, wait=True)
            fn.locate_errors = False
            self._flat_fns[treedefs] = fn
        return fn, [tuple(leaf for leaves, _ in flat for leaf in leaves) for flat in flats]

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise ArgumentError("pmap: pass the arguments by position (keywords are not mapped yet)")
        n, shards = self._shards(args)
        per_device, shards = self._flat(shards)
        self._warm(per_device, shards[0])
        try:
            if self.backend == "mpi":
                outs = [dev.run_on_mpi(per_device, shards[0], self.axis_name)]
            elif self.backend == "cuda":
                from numba import cuda
                gpus = [cuda.gpus[d.id] for d in self._device_list()[:n]]
                outs = dev.run_on_threads([(per_device, s) for s in shards], self.axis_name, "cuda", gpus)
            else:
                outs = dev.run_on_threads([(per_device, s) for s in shards], self.axis_name, "cpu")
        except CollectiveError as exc:
            located = self._locate_unbound(exc, per_device, shards[0])
            if located is None:
                raise
            raise located from None
        return self._stack(outs)

    def _locate_unbound(self, exc: CollectiveError, per_device, example: tuple) -> CollectiveError | None:
        """An unbound axis name raised from compiled code (no Python frame says where): the lines of
        the per-device source that name it, at the user's file and line."""
        axis_name, op, located = getattr(exc, "unbound_axis", (None, None, True))
        if located or not isinstance(per_device, Jitted):
            return None
        try:
            gen = per_device.generated_for_args(*example)
        except Exception:              # noqa: BLE001 - then the message stays as it is
            return None
        sites = []
        for node in ast.walk(ast.parse(gen.source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == op and any(
                    isinstance(a, ast.Constant) and a.value == axis_name for a in (*node.args, *(
                        k.value for k in node.keywords))):
                filename, lineno, text, _ = user_site(gen, node.lineno)
                if filename is not None:
                    sites.append(f'File "{filename}", line {lineno}' + (f"\n    {text.strip()}" if text else ""))
        if not sites:
            return None
        new = CollectiveError("\n".join(dict.fromkeys(sites)) + "\n" + str(exc))
        new.unbound_axis = (axis_name, op, True)
        return new

    def _warm(self, per_device, example: tuple) -> None:
        """Generate the per-device code in this thread before the devices start (they then only
        compile it, under Numba's own lock, and never build it twice at once)."""
        if isinstance(per_device, Jitted):
            try:
                per_device.generated_for_args(*example)
            except Exception:          # noqa: BLE001 - the devices' own calls report it
                pass

    def _stack(self, outs: list):
        out_axes = self.out_axes
        flat = [pytree.tree_flatten(o) for o in outs]
        treedef = flat[0][1]
        if out_axes is None:
            return outs[0]
        leaves = [np.stack([np.asarray(f[0][k]) for f in flat], axis=out_axes) for k in range(len(flat[0][0]))]
        return pytree.tree_unflatten(treedef, leaves)

    # ----- inside other transforms ----------------------------------------------------------------
    def _s2s_as_op(self) -> None:
        """Make calls of this object from transformed code ops whose derivatives are pmaps of the
        per-device derivatives: `grad` of a function that calls pmap runs the devices both ways.
        Registered when first called so (the rule table keys the disk cache on users' rules)."""
        if lookup(self) is not None:
            return
        fun = self.fun.fun if isinstance(self.fun, Jitted) else self.fun
        params = list(inspect.signature(source_function(fun)).parameters)
        # (named after the function, so generated code reads `pmapped_loss(w, x)`; a number only
        # where two pmaps of one name meet in this process)
        base = "pmapped_" + (re.sub(r"\W", "", getattr(fun, "__name__", "")) or "fn")
        _OP_NAMES[base] = _OP_NAMES.get(base, 0) + 1
        rule = base if _OP_NAMES[base] == 1 else f"{base}_{_OP_NAMES[base]}"
        xs = [f"x{i}" for i in range(len(params))]
        diff = [i for i in range(len(xs)) if i not in self.static]
        args = ", ".join(xs)
        adjoint = "".join(f"    d[{xs[i]}] = custom_vjp_cotangent({rule}, {i}, d[out_], {args})\n" for i in diff)
        tangent = (f"    t[out_] = custom_jvp_tangent({rule}, ({args},), "
                   f"({', '.join(f't[{xs[i]}]' if i in diff else '0.0' for i in range(len(xs)))},))\n")
        ns = base_namespace()
        ns[rule] = self
        templates = {kind: Template.from_source(f"def {rule}_{kind}(out_, {args}):\n{body}", f"{rule}_{kind}",
                                                "d" if kind == "adjoint" else "t", ns, stem=f"rule_{rule}_{kind}")
                     for kind, body in (("adjoint", adjoint), ("tangent", tangent))}
        register(self, rule, bindings={rule: self}, **templates)

    def _derivative(self, transform: str) -> Callable:
        fun = self.fun.fun if isinstance(self.fun, Jitted) else self.fun
        nargs = len(inspect.signature(source_function(fun)).parameters)
        gen = build(source_function(fun), transform, tuple(i for i in range(nargs) if i not in self.static),
                    False, False)
        return gen.fn

    def _vjp_function(self, treedef, nargs: int) -> Callable:
        """Every device's vjp of f, for outputs of structure `treedef`: the gradient of the inner
        product of f's outputs with their cotangents (passed as leaves after f's arguments), so a
        tuple or dict output needs nothing more than an array does."""
        got = self._vjps.get(treedef)
        if got is not None:
            return got
        fun = self.fun.fun if isinstance(self.fun, Jitted) else self.fun
        paths: list[str] = []

        def walk(td, path):
            if pytree.is_leaf(td):
                paths.append(path)
            elif td[0] in ("tuple", "list"):
                for k, child in enumerate(td[2]):
                    walk(child, f"{path}[{k}]")
            elif td[0] == "dict":
                for key, child in zip(td[1], td[2]):
                    walk(child, f"{path}[{key!r}]")
            else:
                raise ArgumentError(f"grad through pmap: outputs of kind {td[0]!r} are not supported; return "
                                    f"arrays, tuples or dicts of them")
        walk(treedef, "out")
        xs = [f"x{i}" for i in range(nargs)]
        cts = [f"ct{k}" for k in range(len(paths))]
        body = " + ".join(f"np.sum({p} * {c})" for p, c in zip(paths, cts)) or "0.0"
        fname = f"{getattr(fun, '__name__', 'f')}_pmap_vjp" if getattr(fun, "__name__", "").isidentifier() \
            else "pmap_vjp"
        source = (f"def {fname}({', '.join(xs + cts)}):\n    out = {fname}_fun({', '.join(xs)})\n"
                  f"    return {body}\n")
        path = emit.write_module(source, fname)
        wrapper = emit.load_function(source, path, fname, {f"{fname}_fun": fun, "np": np}, register=False)
        wrapper.__s2s_wraps__ = fun
        diff = tuple(i for i in range(nargs) if i not in self.static)
        axes = _axes_tuple(self.in_axes, nargs, self.static)
        out_axis = 0 if self.out_axes is None else self.out_axes
        got = Pmapped(Transformed(wrapper, "grad", diff), self.axis_name, axes + (out_axis,) * len(cts), 0,
                      self.static, self.devices, self.backend)
        self._vjps[treedef] = got
        return got

    def cotangents(self, g, *args):
        """Each argument's cotangent, from every device's vjp of f (run as a pmap) at its slice."""
        axes = _axes_tuple(self.in_axes, len(args), self.static)
        if self.out_axes is None:
            # (the output is device 0's: its cotangent goes to device 0, the others' outputs were not used)
            n, _ = self._shards(args)
            g = pytree.tree_map(lambda c: np.stack([np.asarray(c)] + [np.zeros_like(np.asarray(c))] * (n - 1)), g)
        leaves, treedef = pytree.tree_flatten(g)
        cts = self._vjp_function(treedef, len(args))(*args, *leaves)
        out, k = [], 0
        for i, (a, ax) in enumerate(zip(args, axes)):
            if i in self.static:
                out.append(None)
                continue
            ct = cts[k]
            k += 1
            # (the devices' cotangents of an argument every device shares add up)
            out.append(pytree.tree_map(lambda c: np.sum(c, axis=0), ct) if ax is None else
                       pytree.tree_map(lambda c, ax=ax: np.moveaxis(c, 0, ax), ct))
        return tuple(out)

    def jvp_rule(self, primals: tuple, tangents: tuple):
        """(f's outputs, their tangents), from every device's jvp of f (run as a pmap)."""
        axes = _axes_tuple(self.in_axes, len(primals), self.static)
        diff = [i for i in range(len(primals)) if i not in self.static]
        if self._jvp is None:
            self._jvp = Pmapped(self._derivative("jvp"), self.axis_name, axes + tuple(axes[i] for i in diff),
                                self.out_axes, self.static, self.devices, self.backend)
        return self._jvp(*primals, *(tangents[i] for i in diff))


_OP_NAMES: dict[str, int] = {}


def pmap(fun: Callable | None = None, axis_name: Any = None, in_axes=0, out_axes=0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence | None = None,
         backend: str | None = None):
    """Map `fun` over the leading axis of its arguments, one slice per device, in parallel (SPMD).

    Args:
        axis_name: the name collectives inside `fun` use (`s2s.psum(x, axis_name)`).
        in_axes: the mapped axis of each argument (int, or None: the same value on every device).
        out_axes: where the device axis goes in the outputs (None: device 0's output).
        static_broadcasted_argnums: arguments passed to every device as they are.
        devices: the devices to use (`s2s.devices()`), by default the first n of the backend.
        backend: "cpu" (threads, `S2S_CPU_DEVICES` sets their number), "cuda" or "mpi".
    """
    if fun is None:
        return lambda f: Pmapped(f, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, backend)
    return Pmapped(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices, backend)

