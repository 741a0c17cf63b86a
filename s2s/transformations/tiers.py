"""jit's two tiers: the generated Python answers at once, Numba's machine code takes over when ready.

The first call of `jit(f)` for new argument types starts a `NativeJob` on a background thread and
answers with the generated NumPy code (the very function the unjitted transform runs, so both tiers
give the same answers); the calls after the job has finished run the machine code.  The job does
everything the compiled tier needs that the Python tier does not: import Numba, generate the
Numba-flavoured source (fused, or unfused when the fused loops do not type), and compile it for
the call's argument types; when Numba's disk cache already holds that machine code, the job is
a load, and the second call is native.

Why a thread and not a process: a forked process could compile without taking the caller's GIL,
but the parent must then load the machine code from the disk cache itself (importing Numba and
initialising its target: 1 s of the same GIL) and fork is unsafe beside threads the user's program
may run (BLAS pools, a data loader); benchmarks/tiers.py measures what the thread costs the
caller (docs/performance.md, "Tiered jit").

`jit(f, wait=True)`, or S2S_JIT_WAIT=1 in the environment, compiles before answering (benchmarks
and tests of the compiled code use it); `jitted.ready` and `jitted.wait()` report and await the
jobs; `jitted.compile(*example_args)` fills the caches ahead of a run.
"""
from __future__ import annotations

import os
import threading
import time

from .. import log

_TRUE = ("1", "true", "yes", "on")


def wait_by_default() -> bool:
    """S2S_JIT_WAIT=1: every jit compiles before it answers (the calls wait for Numba)."""
    return os.environ.get("S2S_JIT_WAIT", "").strip().lower() in _TRUE


class NativeJob:
    """Numba compiling one jitted function for one call's argument types, on a daemon thread.

    `compile_for(fuse)` is the jitted object's callback: it generates the Numba source (fused or
    not) and compiles it for the job's arguments, returning the generated function; a failure of
    the fused code is retried unfused, as a call that waits would.  What it leaves: `gen` (the
    generated function now compiled), `unfused` (the fused version did not compile), `error`
    (the exception that ended the job; the next call reports it as a waiting call would)."""

    def __init__(self, compile_for, fuse: bool, is_compile_error, describe: str, background: bool = True):
        self.compile_for = compile_for
        self.fuse = fuse
        self.is_compile_error = is_compile_error
        self.describe = describe
        self.gen = None
        self.unfused = False
        self.error: BaseException | None = None
        self.seconds = 0.0
        self._done = threading.Event()
        if background:
            self._thread = threading.Thread(target=self.run, name=f"s2s-jit {describe}", daemon=True)
            self._thread.start()
        else:
            self._thread = None
            self.run()

    def run(self) -> None:
        start = time.perf_counter()
        where = "in the background; calls run the generated Python until it is ready" if self._thread \
            else "before answering"
        try:
            with log.compile_notice(f"s2s.jit: compiling {self.describe} {where}"):
                try:
                    self.gen = self.compile_for(self.fuse)
                except Exception as exc:   # noqa: BLE001 - reported by the next call
                    if not (self.fuse and self.is_compile_error(exc)):
                        raise
                    self.unfused = True
                    self.gen = self.compile_for(False)
        except BaseException as exc:   # noqa: BLE001 - reported by the next call
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - start
            log.logger.info("native code for %s: %s in %.3f s", self.describe,
                            "failed" if self.error is not None else "ready", self.seconds)
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def join(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)
