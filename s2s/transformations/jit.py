"""jit: `Jitted`, a function's generated source compiled by Numba in nopython mode.

Per call signature (argument ranks and dtype kinds) it asks the pipeline for code specialized on
them, fused where the fused loops type, unfused otherwise, and remembers what compiled; a call
with the types of an earlier one goes straight to its machine code. Numba's failures become
errors at the user's line (backends/numba_errors.py), or, with fallback=True, a warning and the
generated Python. The CUDA target builds a kernel per example (backends/numba_cuda.py).
"""
from __future__ import annotations

import inspect
import threading
from typing import Callable

import numpy as np

from .. import precision, pytree
from ..backends.numba_errors import compile_error, is_compile_error, numba_reason
from ..codegen.emit import Generated
from ..codegen.user_lines import at_user_line, note_user_line, user_origin
from ..errors import ArgumentError, NonDifferentiableError, S2SError, TransformError
from ..frontend.reads import changed
from ..optimize.specialize import arg_facts
from ..pipeline import GENERATING, build
from ..pipeline_options import GenerateOptions
from .calls import bind_keywords, binds_by_position, caller_stacklevel, check_argnums, \
    user_function
from .grad import Transformed
from .jacobians import Hessian, Jacobian
from . import tiers
from .jit_nested import (chain_key, derivative_chain, hessian_columns, nested_derivative, per_example_grad_of_tree,
                         per_example_grads_of_tree)
from .sources import TransformObject, source_function
from .static_args import normalize_static, rebuild, split_call, static_wrapper
from .vmap import Batched


class Jitted(TransformObject):
    """`jit(f)`: f's generated source compiled by Numba in nopython mode."""

    wrapper_kind = "jit"

    def __init__(self, fun: Callable, target: str = "cpu", cache: bool = True, fallback: bool = False,
                 wait: bool | None = None, static_argnums=None, static_argnames=None):
        if target not in ("cpu", "parallel", "cuda"):
            raise ArgumentError(f"jit: unknown target {target!r}; choose 'cpu', 'parallel' or 'cuda'")
        self.fun = fun
        self.target = target
        self.cache = cache
        self.fallback = fallback
        self._warned = False
        self.static_argnums, self.static_argnames = normalize_static(static_argnums, static_argnames)
        self.__name__ = f"{getattr(fun, '__name__', 'f')}_jit"
        self.__qualname__ = self.__name__
        self._gens: dict[tuple, Generated] = {}
        self._unfused: set = set()    # argument signatures that compile only without fusion
        self._inner_jits: dict = {}
        self._last_static: Jitted | None = None     # (a jit with static arguments: the version last called)
        self._fast: dict = {}         # argument types -> the compiled code a call with them ran
        self._as_scalars: set = set()  # signatures whose 0-d array arguments run as numbers
        self.locate_errors = True      # re-run the generated Python to say where compiled code raised
        # tiers (tiers.py): unless told to wait, a new signature's first calls run the generated
        # Python while a NativeJob compiles
        self.waits = tiers.wait_by_default() if wait is None else bool(wait)
        self._jobs: dict = {}          # argument types -> the NativeJob compiling for them
        self._failed: dict = {}        # argument types -> (generated function, exception, versions tried) of a failed job
        self._jobs_failed: set = set()
        self._tier_lock = threading.RLock()
        # target="cpu": a second version whose fused loops have parallel twins, compiled (in the
        # background unless told to wait) once a call's arrays are past PARALLEL_MIN elements and
        # Numba has threads; its parfors cost seconds of compile the serial version does not
        self.twins = False
        self._twin_jit: Jitted | None = None
        self._twin_state: dict = {}    # argument types -> "compiling", "ready", "none" or "failed"

    def _forget(self) -> None:
        self._gens.clear()
        self._unfused.clear()
        self._inner_jits.clear()
        self._fast.clear()
        self._as_scalars.clear()
        self._jobs.clear()
        self._failed.clear()
        self._jobs_failed.clear()
        self._twin_jit = None
        self._twin_state.clear()

    def _options(self, fuse: bool = True, **more) -> GenerateOptions:
        from ..backends.numba_lower.common import ERROR_MODEL     # (keys the caches: code compiled with
        return GenerateOptions(backend="numba", target=self.target, cache=self.cache, tapes="per_variable",
                               fuse=fuse, error_model=ERROR_MODEL, twins=self.twins,
                               **more)   # (another error model is not reused)

    def generated_for(self, nargs: int, fuse: bool = True, facts: tuple | None = None) -> Generated:
        """The generated function for `nargs` arguments; with `facts` (ranks and dtype kinds of the
        actual arguments), specialized on them where the transform allows."""
        fun = self.fun
        # facts specialize grad's code; under vmap they also let fuse_rows see each argument's rank
        if facts is not None and not (self.target != "cuda" and (
                isinstance(fun, Batched) or _specializable(fun))):
            facts = None
        gen = self._gens.get((nargs, fuse, facts))
        if gen is not None:
            return gen
        if self.target == "cuda":
            gen = self._cuda_generated(nargs)
        elif isinstance(fun, Batched):
            axes = fun._axes_for(nargs)
            inner = fun.fun
            if isinstance(inner, Transformed):
                if isinstance(inner.fun, (Transformed, Batched)):
                    raise TransformError("jit of vmap of a nested transform is not supported yet")
                inner_opts = GenerateOptions(tapes="per_variable")
                if facts is not None and _specializable(inner):     # it sees one example of each batched argument
                    inner_opts = GenerateOptions(tapes="per_variable", arg_facts=tuple(
                        f if a is None or f[0] in (None, 0) else (f[0] - 1, f[1]) for f, a in zip(facts, axes)))
                src = build(source_function(inner.fun), inner.transform, inner.argnums, inner.tuple_out,
                             inner.has_aux, inner_opts).fn
            elif isinstance(inner, Batched):
                raise TransformError("jit of nested vmap is not supported yet; jit the inner function")
            else:
                src = source_function(inner)
            gen = build(src, "vmap", (), False, False, self._options(
                fuse, in_axes=axes, out_axes=fun.out_axes, axis_size=fun.axis_size, param_facts=facts))
        elif isinstance(fun, Transformed):
            if isinstance(fun.fun, (Transformed, Batched)):
                raise TransformError(
                    "jit of a derivative of a derivative is not supported yet (the inner tapes are Python lists)",
                    hint="jit the first derivative, or run the nested transform without jit")
            gen = build(source_function(fun.fun), fun.transform, fun.argnums, fun.tuple_out, fun.has_aux,
                        self._options(fuse, arg_facts=facts))
        else:
            gen = build(source_function(fun), "primal", (), False, False, self._options(fuse))
        self._gens[(nargs, fuse, facts)] = gen
        return gen

    def _cuda_generated(self, nargs: int) -> Generated:
        """The CUDA kernel for calls with `nargs` arguments: one thread per example (vmap) or element."""
        from ..backends import numba_cuda
        fun = self.fun
        if isinstance(fun, Batched):
            in_axes = fun._axes_for(nargs)
            if any(ax not in (0, None) for ax in in_axes):
                raise TransformError("the CUDA target maps batch axis 0 to the grid; move the batch axis first")
            example = fun.fun
            reduce_sum = False
        else:
            if isinstance(fun, Transformed):
                raise TransformError(
                    f"jit({fun!r}, target='cuda'): a derivative on the GPU runs one example per thread; "
                    f"say which axis is the batch",
                    hint="use s2s.jit(s2s.vmap(s2s.grad(f)), target='cuda')")
            in_axes = (0,) * nargs    # an elementwise function: one element per thread
            example = fun
            reduce_sum = None          # decided from the source
        grad_via_jvp = None
        if isinstance(example, Transformed):
            if isinstance(example.fun, (Transformed, Batched)):
                raise TransformError("the CUDA target supports one level of transform")
            if example.transform == "grad" and not example.has_aux:
                # Per thread every argument is a scalar: the gradient is forward mode with unit
                # tangents, which needs no tape (loops and branches just run forward).
                gen = build(source_function(example.fun), "jvp", example.argnums, True, False)
                grad_via_jvp = example
            else:
                gen = build(source_function(example.fun), example.transform, example.argnums,
                            example.tuple_out, example.has_aux, GenerateOptions(tapes="per_variable"))
        else:
            gen = build(source_function(example), "primal", (), False, False)
        return numba_cuda.build(gen, in_axes, reduce_sum, grad_via_jvp)

    def generated_for_args(self, *args) -> Generated:
        """The generated (specialized) function a call with these arguments runs."""
        sig = _signature_key(args)
        return self.generated_for(len(args), sig not in self._unfused, self._facts(args))

    def _facts(self, args) -> tuple:
        """The arguments' facts (rank, dtype kind), and those of the default values of parameters
        the call leaves out: for calls with this many arguments they are constants, so the code
        specializes on them too (a loop's `steps=1000` default: array tapes, not typed lists)."""
        facts = arg_facts(args)
        if _specializable(self.fun):
            try:
                params = list(inspect.signature(source_function(self.fun.fun)).parameters.values())
            except (TypeError, ValueError, S2SError):
                return facts
            left_out = params[len(args):]
            if left_out and all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty for p in left_out):
                facts = facts + arg_facts([p.default for p in left_out])
        return facts

    def python_version(self, nargs: int) -> Callable:
        fun = self.fun
        if isinstance(fun, Batched):
            return fun
        if isinstance(fun, Transformed):
            return fun
        return build(source_function(fun), "primal", (), False, False).fn

    def _second_order(self, key: tuple, run: Callable, args):
        """run(args) (a forward-over-reverse route, compiling self._gens[key]); a compile failure
        reported at the user's line, or with fallback=True the unjitted transform's answer."""
        try:
            return run(args)
        except Exception as exc:
            if not is_compile_error(exc):
                raise
            if not self.fallback:
                raise compile_error(self, exc, len(args), self._gens.get(key)) from None
            return self.fun(*args)

    def _hessian(self, args):
        """jit(hessian(f)): the jvp of the (typed-tape) gradient, compiled; one call per column."""
        fun = self.fun
        if fun.is_tuple:
            raise TransformError("jit(hessian(f, argnums=tuple)) is not supported yet; use an int argnums")
        return hessian_columns(self, source_function(fun.fun), fun.nums[0] % len(args), args)

    def __call__(self, *args, **kwargs):
        if self.static_argnums or self.static_argnames:
            return self._call_static(args, kwargs)
        keyword_form = getattr(self.fun, "keyword_form", None)
        if keyword_form is not None and (self.fun._has_varargs() or kwargs and not binds_by_position(self, args, kwargs)):
            # keyword-only / **kwargs keywords, *args: the jit of the transform of their wrapper
            inner, args = keyword_form(args, kwargs)
            jitted = self._inner_jits.get(("keywords", inner))
            if jitted is None:
                jitted = self._inner_jits[("keywords", inner)] = self._like_me(inner)
            return jitted(*args)
        if kwargs:
            args = bind_keywords(self, args, kwargs)
        args, low = precision.widen(args)      # one float64 compiled path for float32 inputs too
        try:
            return precision.narrow(self._call(args), low)
        except S2SError:
            raise
        except Exception as exc:
            if note_user_line(exc) or self.target == "cuda" or not self.locate_errors:
                raise
            # raised by the compiled code (an index out of bounds, a singular matrix, ...): it has
            # no Python frames to say where, so the generated Python runs to locate it
            located = self._located_in_python(exc, args)
            if located is None:
                raise
            raise located from None

    def _call_static(self, args, kwargs):
        """A call of a jit with static arguments: the jit of the same transform of a wrapper with
        their values written in (static_args.py), one per distinct set of values."""
        dynamic_args, positions, values, key, nargs = split_call(self, args, kwargs)
        key = ("static", nargs, key)
        inner = self._inner_jits.get(key)
        if inner is None:
            wrapper = static_wrapper(source_function(user_function(self)), nargs, values)
            inner = self._inner_jits[key] = self._like_me(rebuild(self.fun, wrapper, positions, nargs))
        self._last_static = inner
        return inner(*dynamic_args)

    def _located_in_python(self, exc: Exception, args) -> Exception | None:
        try:
            self.python_version(len(args))(*args)
        except Exception as again:       # noqa: BLE001 - the same failure, raised where it happens
            if not isinstance(again, type(exc)) and not isinstance(exc, type(again)):
                return None
            if note_user_line(again):
                again.add_note("(raised by the compiled code; located by running the generated Python on the "
                               "same arguments)")
                return again
        return None

    def _call(self, args):
        for g in list(self._gens.values()):      # (a NativeJob's thread may add one meanwhile)
            if g.reads and changed(g.reads):
                self._forget()      # a global, closure value or helper it was compiled from was rebound
                break
        # Fast path: a call with the argument types of an earlier successful call runs its code.
        key = _fast_key(args)
        gen = self._fast.get(key) if key is not None else None
        if gen is not None:
            if not self.twins and self.target == "cpu" and _parallel_pays(args):
                twin = self._twin(key, args)
                if twin is not None:
                    return twin._call(args)
            try:
                return _run_compiled(gen, args)
            except Exception as exc:   # Numba compiling a new specialization (another array layout)
                if not is_compile_error(exc):
                    raise
                del self._fast[key]    # the full dispatch below reports it (or falls back)
        job = self._jobs.get(key) if key is not None else None
        if job is not None and not job.done():      # (still compiling: the Python tier, at once)
            return _python_containers(self.python_version(len(args))(*args))
        if self._as_scalars and _signature_key(args) in self._as_scalars:
            return self._call(_zero_d_as_numbers(args))
        fun = self.fun
        levels = derivative_chain(fun, args)
        if levels is not None:
            return self._second_order(chain_key(len(args), levels), lambda a: nested_derivative(self, a, levels), args)
        if isinstance(fun, Hessian):
            return self._second_order(chain_key(len(args), (fun.nums[0] % len(args),) * 2), self._hessian, args)
        if isinstance(fun, Transformed) and not isinstance(fun.fun, (Transformed, Batched)) and any(
                0 <= a < len(args) and not pytree.is_leaf(pytree.tree_flatten(args[a])[1]) for a in fun.argnums):
            return fun._call_tree(args, wrap=self._wrap_inner)
        if isinstance(fun, Jacobian) and fun.takes_tree(args):
            return fun.call_tree(args, wrap=self._wrap_inner)
        if isinstance(fun, Transformed) and not isinstance(fun.fun, (Transformed, Batched)):
            check_argnums(args, fun.argnums, source_function(fun.fun))   # (as the unjitted transform)
        if isinstance(fun, Batched) and per_example_grad_of_tree(fun, args):
            return per_example_grads_of_tree(self, args)
        if isinstance(fun, Batched):
            fun.check_examples(args)     # (vmap(grad(f)) refuses what grad refuses, jitted or not)
        sig = _signature_key(args)
        fuse = sig not in self._unfused
        facts = self._facts(args)
        if key is not None and self.target != "cuda":
            with self._tier_lock:       # (pmap calls one jitted function from a thread per device)
                job = self._jobs.get(key)
                if job is None and key not in self._jobs_failed:
                    # (a call that waits runs the same job, on this thread)
                    job = self._start_job(args, key, fuse, facts, tiers.job_mode(self.waits, self.cache))
                if job is not None and job.done() and isinstance(job, tiers.ChildJob):
                    job = job.then()
                if job is not None and job.done():
                    self._finish_job(job, args, key, sig)
                    fuse = sig not in self._unfused
            if job is not None and not job.done():
                return _python_containers(self.python_version(len(args))(*args))      # the Python tier, meanwhile
        failed = self._failed.pop(key, None)
        fused_path = unfused_path = None
        if failed is not None:        # (the versions its job tried, as if tried below)
            fused_path, unfused_path = (failed[2][f].path if f in failed[2] else None for f in (True, False))
        try:
            gen = self.generated_for(len(args), fuse, facts)
            if failed is not None and failed[0] is gen:
                raise failed[1]       # (its background compile failed: reported as a waiting call would)
            if fuse and self.target != "cuda":
                fused_path = gen.path
                if numba_cache().known_to_fail(gen.path, args):   # an earlier process tried it
                    raise TransformError("the fused version did not compile for these argument types")
            return self._run_and_remember(gen, args, key)
        except Exception as exc:   # Numba's typing/lowering errors, or a transform refusing
            if not is_compile_error(exc):
                raise
            if fuse and self.target != "cuda":
                # Fused loops assume array inputs of one dtype; for this signature (scalars,
                # other dtypes) compile the unfused code instead.
                self._unfused.add(sig)
                try:
                    gen = self.generated_for(len(args), False, facts)
                    unfused_path = gen.path
                    if numba_cache().known_to_fail(gen.path, args):
                        raise TransformError("the unfused version did not compile for these argument types")
                    out = self._run_and_remember(gen, args, key)
                except Exception as exc2:
                    if not is_compile_error(exc2):
                        raise
                    exc = exc2
                else:
                    # (the same file for both when only code it calls is fused: no marker then)
                    if fused_path is not None and fused_path != unfused_path and self.cache:
                        numba_cache().remember_failure(fused_path, args)
                    return out
            if self.target != "cuda" and any(type(a) is np.ndarray and a.ndim == 0 for a in args):
                # a 0-d array argument reassigned to a number (`x = np.sin(x) * x`) has two types for
                # Numba; the generated Python computes with it as a number (np.float64 results):
                # compile for the numbers instead, and remember that for this signature
                try:
                    out = self._call(_zero_d_as_numbers(args))
                except S2SError:
                    pass
                else:
                    self._as_scalars.add(sig)
                    if self.cache:
                        for path in (fused_path, unfused_path):
                            if path is not None:
                                numba_cache().remember_failure(path, args)
                    return out
            if not self.fallback:
                # a Numba failure: the unjitted transform's own refusal (a non-scalar output of
                # grad, ...) says more than the typing error it caused; s2s's refusals stand
                refusal = None if isinstance(exc, TransformError) else self._python_refusal(args)
                raise (refusal or compile_error(self, exc, len(args))) from None
            if not self._warned:
                import warnings
                warnings.warn(f"s2s.jit: Numba could not compile {self.fun!r}; running the generated Python "
                              f"instead. Reason: {numba_reason(exc)}",
                              stacklevel=caller_stacklevel())
                self._warned = True
            return _python_containers(self.python_version(len(args))(*args))

    # ----- the parallel twins' version (backends/parallel_twins.py) ------------------------------
    def _twin(self, key, args) -> "Jitted | None":
        """The jitted version with parallel twins, when it is compiled for these argument types;
        else None (the serial version answers), its compile started or found not to pay."""
        state = self._twin_state.get(key)
        if state == "ready":
            return self._twin_jit
        if state is not None:
            return None
        with self._tier_lock:
            if key in self._twin_state:
                return None
            if self._twin_jit is None:
                twin = Jitted(self.fun, self.target, self.cache, fallback=False, wait=True)
                twin.twins = True
                twin.locate_errors = self.locate_errors
                self._twin_jit = twin
            twin = self._twin_jit
            try:
                sig = _signature_key(args)
                if "parallel_worth(" not in twin.generated_for(len(args), sig not in self._unfused,
                                                               self._facts(args)).source:
                    self._twin_state[key] = "none"       # (no loop to run in parallel: BLAS, no fusion)
                    return None
            except Exception:   # noqa: BLE001 - the serial version stands
                self._twin_state[key] = "none"
                return None
            self._twin_state[key] = "compiling"

        def compile_twin() -> None:
            try:
                twin.compile(*args)
                ok = key in twin._fast
            except Exception:   # noqa: BLE001 - the serial version stands
                ok = False
            self._twin_state[key] = "ready" if ok else "failed"

        if self.waits:
            compile_twin()
            return twin if self._twin_state[key] == "ready" else None
        threading.Thread(target=compile_twin, name="s2s-twin-compile", daemon=True).start()
        return None

    def _python_refusal(self, args) -> Exception | None:
        """The s2s error the generated Python raises for these arguments, if it raises one."""
        try:
            self.python_version(len(args))(*args)
        except TransformError as exc:
            return at_user_line(exc, self)
        except S2SError as exc:
            return exc
        except Exception:   # noqa: BLE001 - the compile error is the one to report
            return None
        return None

    # ----- tiers (tiers.py) ----------------------------------------------------------------------
    def _start_job(self, args, key, fuse: bool, facts, mode: str):
        """A NativeJob for these arguments ("inline": now, on this thread; "thread"), or a
        ChildJob ("process") whose child runs one."""
        nargs = len(args)
        paths: dict = {}

        def compile_for(fuse_now: bool) -> Generated:
            from ..backends import numba_cpu
            gen = self.generated_for(nargs, fuse_now, facts)
            paths[fuse_now] = gen
            if numba_cache().known_to_fail(gen.path, args):   # an earlier process tried it
                raise TransformError("this version did not compile for these argument types")
            numba_cpu.compile_for_args(gen.fn, args)
            return gen

        def describe() -> str:
            from ..backends.numba_cpu import describe_types
            return f"{self.fun!r} for {describe_types(args)}"

        def native_job(background: bool, where: str | None = None) -> tiers.NativeJob:
            job = tiers.NativeJob(compile_for, fuse, is_compile_error, describe, background, where)
            job.paths = paths
            return job

        def in_child() -> bool:
            job = native_job(False, "in a background process; calls run the generated Python until it is ready")
            if job.error is None and job.unfused:
                self._remember_fused_failure(paths, args)        # (the parent need not try it)
            return job.error is None

        if mode == "process":
            job = tiers.ChildJob(in_child, _prewarm_numba, [GENERATING, *tiers.numba_locks()],
                                 f"s2s.jit: compiling {self.fun!r} for {_describe_args(args)} in a background "
                                 "process; calls run the generated Python until it is ready")
            # the child filled the disk caches: this process compiles the same code, now a load
            # (where it failed, a thread finds the failure again for the next call to report)
            job.then = lambda: self._start_job(args, key, fuse, facts, "inline" if job.succeeded else "thread")
        else:
            job = native_job(mode == "thread")
        self._jobs[key] = job
        return job

    def _finish_job(self, job: tiers.NativeJob, args, key, sig) -> None:
        """What a finished job leaves for the call: its signature unfused, a failure to report."""
        if self._jobs.get(key) is not job:
            return          # (another thread's call finished it)
        del self._jobs[key]
        if job.unfused:
            self._unfused.add(sig)
            if job.error is None:
                self._remember_fused_failure(job.paths, args)
        if job.error is not None:
            gen = job.paths.get(not job.unfused and job.fuse)
            self._failed[key] = (gen, job.error, job.paths)
            self._jobs_failed.add(key)       # (its calls take the path below from now on, as before tiers)

    def _remember_fused_failure(self, paths: dict, args) -> None:
        """The fused version did not compile and the unfused one did: a marker in the disk cache,
        so that a later process goes straight to the unfused one (as the waiting path does)."""
        fused, unfused = paths.get(True), paths.get(False)
        if self.cache and fused is not None and unfused is not None and fused.path != unfused.path:
            numba_cache().remember_failure(fused.path, args)

    @property
    def ready(self) -> bool:
        """No compile is running: the calls with the argument types seen so far run machine code
        (or reported their failure)."""
        return all(j.done() and not isinstance(j, tiers.ChildJob) for j in self._jobs.values()) and all(
            j.ready for j in self._inner_jits.values())

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the running compiles end (at most `timeout` seconds); True when all have."""
        import time
        end = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if end is None else max(end - time.monotonic(), 0.0)
        for job in list(self._jobs.values()):
            if not job.join(left()):
                return False
            if isinstance(job, tiers.ChildJob):      # (then this process's load, or a thread's retry)
                with self._tier_lock:
                    after = job.then() if any(j is job for j in self._jobs.values()) else None
                if after is not None and not after.join(left()):
                    return False
        return all(inner.wait(left()) for inner in list(self._inner_jits.values()))

    def compile(self, *args, **kwargs) -> "Jitted":
        """Compile machine code for calls with these arguments' types, ahead of a run (a container
        build, a cluster job's first step, a benchmark), filling the disk caches; returns when it
        is ready.  Arrays and numbers are compiled for without running the function; other
        arguments (pytrees) by one call of it, as the first call would."""
        if kwargs:
            args = bind_keywords(self, args, kwargs)
        args, _ = precision.widen(args)
        key = _fast_key(args)
        if key is not None and self.target != "cuda" and not isinstance(self.fun, Hessian) \
                and self._jobs.get(key) is None and key not in self._fast:
            sig = _signature_key(args)
            with self._tier_lock:
                job = self._start_job(args, key, sig not in self._unfused, self._facts(args), "inline")
                self._finish_job(job, args, key, sig)
            if job.error is None:
                self._fast[key] = job.gen
                return self
        self(*args)                    # (a failure is reported as a call that waits would)
        self.wait()
        if self._job_failed():
            self(*args)
        return self

    def _job_failed(self) -> bool:
        return any(j.error is not None for j in self._jobs.values()) or any(
            j._job_failed() for j in self._inner_jits.values())

    def _run_and_remember(self, gen: Generated, args, key):
        out = _run_compiled(gen, args)
        if key is not None:
            self._fast[key] = gen
        return out

    def _like_me(self, inner) -> "Jitted":
        return Jitted(inner, self.target, self.cache, self.fallback, wait=self.waits)

    def _wrap_inner(self, inner) -> "Jitted":
        """The jitted transform (or Jacobian) of a pytree wrapper (one per wrapper)."""
        key = (inner.fun, inner.transform, inner.argnums, inner.has_aux) if isinstance(inner, Transformed) \
            else (inner.fun, inner.mode, inner.nums)
        jitted = self._inner_jits.get(key)
        if jitted is None:
            jitted = self._inner_jits[key] = self._like_me(inner)
        return jitted

    @property
    def source(self) -> str:
        if self._last_static is not None:
            return self._last_static.source
        gens = list(self._gens.values())
        return gens[0].source if gens else ""


_FAST_SCALARS = (float, int, bool, np.float64, np.float32, np.int64, np.int32, np.bool_)


def _fast_key(args) -> tuple | None:
    """The argument types a compiled call depends on, or None where a call needs the full
    dispatch (pytrees, other objects)."""
    key = []
    for a in args:
        if type(a) is np.ndarray:
            key.append((a.dtype, a.ndim))
        elif type(a) in _FAST_SCALARS:
            key.append(type(a))
        else:
            return None
    return tuple(key)


def _zero_d_as_numbers(args) -> tuple:
    """The arguments with each 0-d array replaced by its element (a NumPy number)."""
    return tuple(a[()] if type(a) is np.ndarray and a.ndim == 0 else a for a in args)


def numba_cache():
    from ..backends import numba_cache as module
    return module


def _describe_args(args) -> str:
    """`(float64 2-d array, float)`: a compile notice's argument types, without importing Numba."""
    return "(" + ", ".join(f"{a.dtype} {a.ndim}-d array" if type(a) is np.ndarray else type(a).__name__
                           for a in args) + ")"


def _prewarm_numba() -> None:
    """Import the Numba backend and initialise Numba's CPU target (what a first compile or cache
    load would do), while a child process compiles."""
    try:
        from ..backends import numba_cpu  # noqa: F401
        from numba.core.registry import cpu_target
        cpu_target.target_context.refresh()
    except Exception:       # noqa: BLE001 - the compile in this process will meet it again
        pass


def _python_containers(out):
    """Numba's typed dicts and lists in a compiled result as Python's (a dict output), and its
    float64 numbers as NumPy's (np.float64, a float too), which is what the generated Python (the
    first tier, the unjitted transform) returns for them."""
    if type(out) is float:
        return np.float64(out)
    kind = type(out).__name__
    if kind == "Dict" and type(out).__module__.startswith("numba"):
        return {k: _python_containers(v) for k, v in out.items()}
    if kind == "List" and type(out).__module__.startswith("numba"):
        return [_python_containers(v) for v in out]
    if type(out) is tuple:
        return tuple(_python_containers(v) for v in out)
    return out


def _run_compiled(gen: Generated, args):
    try:
        return _python_containers(gen.fn(*args))
    except ValueError as exc:   # the compiled seed_cotangent's refusal, as the Python one words it
        if "scalar output" not in str(exc):
            raise
        filename, lineno, origin = user_origin(gen)
        raise NonDifferentiableError(
            f"grad requires a function with a scalar output (in {origin})", filename=filename, lineno=lineno,
            hint="reduce the output (e.g. np.sum) or use s2s.vjp / s2s.jacrev for non-scalar outputs") from None


def _specializable(fun) -> bool:
    """Transforms whose generated code is specialized on the argument facts under jit."""
    return isinstance(fun, Transformed) and fun.transform in ("grad", "value_and_grad") \
        and not isinstance(fun.fun, (Transformed, Batched))


def _parallel_pays(args) -> bool:
    """Arrays past PARALLEL_MIN elements in all, and more than one of Numba's threads here."""
    from ..backends.numba_lower.loops import PARALLEL_MIN
    size = 0
    for a in args:
        for leaf in (pytree.tree_flatten(a)[0] if isinstance(a, (tuple, list, dict)) else (a,)):
            if type(leaf) is np.ndarray:
                size += leaf.size
    if size < PARALLEL_MIN:
        return False
    import numba
    return numba.get_num_threads() > 1


def _signature_key(args) -> tuple:
    return tuple(_value_key(a) for a in args)


def _value_key(a) -> tuple:
    """Type, dtype and rank of a value; of each leaf for a tuple, list or dict (a pytree argument:
    np.ndim of a tuple of arrays of two shapes raised ValueError)."""
    if isinstance(a, (tuple, list)):
        return (type(a).__name__, tuple(_value_key(v) for v in a))
    if isinstance(a, dict):
        return (type(a).__name__, tuple((repr(k), _value_key(v)) for k, v in a.items()))
    return (type(a).__name__, getattr(a, "dtype", None) and str(a.dtype), np.ndim(a))
