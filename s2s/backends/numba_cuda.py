"""The CUDA backend: generated per-example code as `numba.cuda` device functions.

One thread computes one element (for an elementwise function) or one example
(for `vmap`, whose batch axis becomes the grid).  The per-example source is the
ordinary generated code for the scalar function (its value, or its gradient),
lowered to scalar `math` calls; a small generated kernel calls it per thread.
A function whose last step sums an elementwise expression becomes a map
kernel that accumulates with `cuda.atomic.add`.

Host/device transfers are explicit: inputs are copied with `cuda.to_device`,
results copied back, and each call's bytes in each direction are recorded in
`CudaFunction.transfers` (and printed with `verbose=True`).

Test it without a GPU under Numba's simulator: set NUMBA_ENABLE_CUDASIM=1
before numba.cuda is imported (tests/cuda runs in its own pytest process).
"""
from __future__ import annotations

import math

import gast
import numpy as np

from .. import runtime as rt
from ..analysis.resolve import resolve_call
from ..codegen import emit
from ..errors import TransformError
from ..frontend.ast_build import name
from ..frontend.nodes import clone, iter_nodes
from ..rules.table import record_of
from .numba_numpy import namespace as _families  # noqa: F401  (the families' numba*.py fill OpRule.cuda_scalar)

# runtime helpers and what they are on scalars
_SCALAR_IDENTITY = {id(rt.unbroadcast), id(rt.expand_reduced), id(rt.stop_gradient), id(rt.copy_value),
                    id(rt.to_float), id(rt.broadcast_like)}


class _ScalarLower(gast.NodeTransformer):
    """Per-example generated code -> scalar code a CUDA device function compiles."""

    def __init__(self, namespace):
        self.namespace = namespace

    def resolve(self, node):
        return resolve_call(node, self.namespace)

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = self.resolve(node)
        rule = record_of(fn)
        if rule.cuda_math:      # np.sin -> math.sin on a number (OpRule.cuda_math)
            return gast.Call(func=gast.Attribute(name("math"), rule.cuda_math, gast.Load()),
                             args=node.args, keywords=[])
        if id(fn) in _SCALAR_IDENTITY:
            return node.args[0]
        if fn is rt.seed_cotangent:
            return gast.Constant(1.0, None)
        if fn is rt.zeros_like:
            return gast.Constant(0.0, None)
        if fn is rt.tie_weight:
            a, b = node.args
            return gast.IfExp(gast.Compare(a, [gast.Gt()], [b]), gast.Constant(1.0, None),
                              gast.IfExp(gast.Compare(clone(a), [gast.Eq()], [clone(b)]),
                                         gast.Constant(0.5, None), gast.Constant(0.0, None)))
        if rule.cuda_scalar is not None:     # (np.maximum -> max(a, b): the family's numba*.py)
            return rule.cuda_scalar(node)
        if rule.operator == "USub":
            return gast.UnaryOp(gast.USub(), node.args[0])
        if rule.operator in ("Add", "Sub", "Mult", "Div", "Pow"):   # (np.add: `a + b`)
            return gast.BinOp(node.args[0], getattr(gast, rule.operator)(), node.args[1])
        if fn in (float, abs, max, min, range, len, int) or getattr(fn, "__module__", None) == "math":
            return node
        raise TransformError(f"the CUDA target has no per-element form for `{getattr(fn, '__name__', fn)}`",
                             hint="use elementwise math, or jit(..., target='cpu')")

    def visit_Subscript(self, node):
        raise TransformError("the CUDA target runs scalar code per thread; this function indexes arrays",
                             hint="vmap over the array axis instead, or use target='cpu'")


class CudaFunction:
    """A compiled CUDA kernel around a generated device function; call it like the function."""

    def __init__(self, device_src: str, kernel_src: str, path: str, kernel, nout: int, reduce: bool,
                 in_axes: tuple, origin: str, verbose: bool = False):
        self.source = device_src + "\n\n" + kernel_src
        self.path = path
        self.kernel = kernel
        self.nout = nout
        self.reduce = reduce
        self.in_axes = in_axes
        self.origin = origin
        self.verbose = verbose
        self.transfers = {"to_device_bytes": 0, "to_host_bytes": 0, "calls": 0}

    def __call__(self, *args):
        from numba import cuda
        batched = [a for a, ax in zip(args, self.in_axes) if ax is not None]
        shape = np.shape(batched[0])
        for a in batched:
            if np.shape(a) != shape:
                raise ValueError(f"CUDA target: batched inputs must share one shape, got {np.shape(a)} and {shape}")
        n = int(np.prod(shape)) if shape else 1
        dev_args = []
        for a, ax in zip(args, self.in_axes):
            if ax is None:
                dev_args.append(float(a))
            else:
                host = np.ascontiguousarray(np.asarray(a, dtype=np.float64)).reshape(-1)
                self.transfers["to_device_bytes"] += host.nbytes
                dev_args.append(cuda.to_device(host))
        outs = [cuda.to_device(np.zeros(1 if self.reduce else n)) for _ in range(self.nout)]
        threads = 128
        blocks = max(1, (n + threads - 1) // threads)
        self.kernel[blocks, threads](n, *dev_args, *outs)
        results = []
        for o in outs:
            host = o.copy_to_host()
            self.transfers["to_host_bytes"] += host.nbytes
            results.append(float(host[0]) if self.reduce else host.reshape(shape))
        self.transfers["calls"] += 1
        if self.verbose:
            print(f"s2s cuda: {self.origin}: {n} threads, host->device {self.transfers['to_device_bytes']} B, "
                  f"device->host {self.transfers['to_host_bytes']} B (cumulative)")
        return results[0] if self.nout == 1 else tuple(results)


def build(gen, in_axes: tuple, reduce_sum: bool | None, grad_via_jvp=None) -> emit.Generated:
    """Compile `gen` (the per-example generated code: a primal, a transform, or for a gradient the
    jvp, with `grad_via_jvp` the grad object it stands for) as a CUDA kernel mapping `in_axes`;
    reduce_sum None: decided from the source (an elementwise function summed at the end)."""
    from ..frontend.parse import parse_function
    parsed = parse_function(gen.fn)
    fdef = parsed.node
    namespace = dict(gen.fn.__globals__)
    if any(isinstance(n, gast.Call) and getattr(n.func, "id", None) == "stack" for n in iter_nodes(fdef)):
        raise TransformError("the CUDA target cannot keep a tape per thread yet (loops that overwrite values)",
                             hint="use target='cpu' or 'parallel' for this function")
    # elementwise-then-sum: the device function returns the summed element; the kernel accumulates
    body = fdef.body
    ret = body[-1]
    if reduce_sum is None:
        reduce_sum = False
        if isinstance(ret, gast.Return) and isinstance(ret.value, gast.Name):
            for st in reversed(body[:-1]):
                if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) \
                        and st.targets[0].id == ret.value.id:
                    call = st.value
                    fn = resolve_call(call, namespace) if isinstance(call, gast.Call) else None
                    if record_of(fn).reduction == "sum" and len(call.args) == 1 and not call.keywords:
                        st.value = call.args[0]
                        reduce_sum = True
                    break
    lowered = _ScalarLower(namespace).visit(clone(fdef))
    dev_name = f"{fdef.name}_device"
    lowered.name = dev_name
    lowered.decorator_list = []
    nout = len(ret.value.elts) if isinstance(ret.value, gast.Tuple) else 1
    device_src = emit.to_source(lowered, comments=True)
    params = [a.id for a in fdef.args.args]
    extra_devices: list[str] = []
    if grad_via_jvp is not None:
        nprim = len(params) - len(grad_via_jvp.argnums)
        primals = params[:nprim]
        lines = [f"def {fdef.name}_grad_device({', '.join(primals)}):"]
        outs = []
        for k in range(len(grad_via_jvp.argnums)):
            tangents = ", ".join("1.0" if j == k else "0.0" for j in range(len(grad_via_jvp.argnums)))
            lines.append(f"    value, d{k} = {dev_name}({', '.join(primals)}, {tangents})")
            outs.append(f"d{k}")
        lines.append(f"    return {', '.join(outs)}")
        extra_devices.append("\n".join(lines) + "\n")
        device_src = device_src + "\n\n" + extra_devices[0]
        params = primals
        nout = len(grad_via_jvp.argnums) if grad_via_jvp.tuple_out else 1
        entry_device = f"{fdef.name}_grad_device"
    else:
        entry_device = dev_name
    call_args = ", ".join(f"{p}[i]" if ax is not None else p for p, ax in zip(params, in_axes))
    outs = [f"out{k}" for k in range(nout)]
    lines = [f"def {fdef.name}_kernel(n, {', '.join(params)}, {', '.join(outs)}):",
             "    i = cuda.grid(1)",
             "    if i < n:"]
    if nout == 1:
        lines.append(f"        r = {entry_device}({call_args})")
        lines.append("        cuda.atomic.add(out0, 0, r)" if reduce_sum else "        out0[i] = r")
    else:
        lines.append(f"        {', '.join(f'r{k}' for k in range(nout))} = {entry_device}({call_args})")
        for k in range(nout):
            lines.append(f"        out{k}[i] = r{k}")
    kernel_src = "\n".join(lines) + "\n"
    header = f"# Generated by s2s: CUDA kernel for {gen.origin}\nimport math\nfrom numba import cuda\n\n\n"
    text = header + device_src + "\n\n" + kernel_src
    path = emit.write_module(text, fdef.name + "_cuda")
    from numba import cuda
    ns = {"math": math, "cuda": cuda}
    glb = dict(ns)
    code = compile(text, path, "exec")
    exec(code, glb)
    glb[dev_name] = cuda.jit(device=True)(glb[dev_name])
    if grad_via_jvp is not None:
        glb[entry_device] = cuda.jit(device=True)(glb[entry_device])
    kernel = cuda.jit(glb[f"{fdef.name}_kernel"])
    fn = CudaFunction(device_src, kernel_src, path, kernel, nout, reduce_sum, tuple(in_axes), gen.origin)
    return emit.Generated(fn, text, path, gen.origin)
