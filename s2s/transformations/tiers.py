"""jit's two tiers: the generated Python answers at once, Numba's machine code takes over when ready.

The first call of `jit(f)` for new argument types starts a job (in a forked process or on a thread,
below) and answers with the generated NumPy code (the very function the unjitted transform runs, so both tiers
give the same answers); the calls after the job has finished run the machine code.  The job does
everything the compiled tier needs that the Python tier does not: import Numba, generate the
Numba-flavoured source (fused, or unfused when the fused loops do not type), and compile it for
the call's argument types; when Numba's disk cache already holds that machine code, the job is
a load, and the second call is native.

Where the job runs (`job_mode`): in a forked process (`ChildJob`), which compiles with the
disk caches on and exits; this process then compiles the same code, which is a load from those
caches (a pause of a second or less in the call that finds the child done; Numba's import and
initialisation run on a thread meanwhile).  On a thread (`NativeJob`) where there is no fork (or
on macOS, where fork is unsafe once system frameworks run threads), the caches are off
(`jit(cache=False)`), S2S_JIT_TIER=thread, or another job is compiling on a thread (forking then
would copy its held locks).  Measured (docs/performance.md, "Tiered jit";
benchmarks/tiers.py): a caller busy in the Python tier holds the GIL, and a compile on a thread,
Python for Numba's typing and many short GIL-releasing calls into LLVM, waited on it at every
switch: native code came 9x later on 13 cores (237.7 s against 27.6 s for the process), the
caller's calls 25% slower; in a process the caller's calls kept their speed.

`jit(f, wait=True)`, or S2S_JIT_WAIT=1 in the environment, compiles before answering (benchmarks
and tests of the compiled code use it); `jitted.ready` and `jitted.wait()` report and await the
jobs; `jitted.compile(*example_args)` fills the caches ahead of a run.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import warnings

from .. import log

def wait_by_default() -> bool:
    """S2S_JIT_WAIT=1: every jit compiles before it answers (the calls wait for Numba)."""
    return log.env_flag("S2S_JIT_WAIT")


def job_mode(waits: bool, cache: bool) -> str:
    """"inline" (the call waits), "process" or "thread" (see the module docstring)."""
    if waits:
        return "inline"
    choice = os.environ.get("S2S_JIT_TIER", "").strip().lower()
    # (macOS: fork is unsafe once system frameworks have started threads; Python spawns there too)
    if choice == "thread" or not cache or not hasattr(os, "fork") or sys.platform == "darwin" or _THREAD_JOBS:
        return "thread"
    return "process"


_THREAD_JOBS: set = set()        # the NativeJobs compiling on a thread now


class NativeJob:
    """Numba compiling one jitted function for one call's argument types, on a daemon thread (or
    on the caller's, `background=False`).

    `compile_for(fuse)` is the jitted object's callback: it generates the Numba source (fused or
    not) and compiles it for the job's arguments, returning the generated function; a failure of
    the fused code is retried unfused, as a call that waits would.  What it leaves: `gen` (the
    generated function now compiled), `unfused` (the fused version did not compile), `error`
    (the exception that ended the job; the next call reports it as a waiting call would)."""

    def __init__(self, compile_for, fuse: bool, is_compile_error, describe, background: bool = True,
                 where: str | None = None):
        self.compile_for = compile_for
        self.where = where
        self.fuse = fuse
        self.is_compile_error = is_compile_error
        self.describe = describe          # () -> what is compiled, for which types (imports Numba)
        self.gen = None
        self.unfused = False
        self.error: BaseException | None = None
        self.seconds = 0.0
        self._done = threading.Event()
        if background:
            self._thread = threading.Thread(target=self.run, name="s2s-jit compile", daemon=True)
            _THREAD_JOBS.add(self)
            self._thread.start()
        else:
            self._thread = None
            self.run()

    def run(self) -> None:
        start = time.perf_counter()
        what = "?"
        where = self.where or ("in the background; calls run the generated Python until it is ready"
                               if self._thread else "before answering")
        try:
            what = self.describe()
            with log.compile_notice(f"s2s.jit: compiling {what} {where}"):
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
            log.logger.info("native code for %s: %s in %.3f s", what,
                            "failed" if self.error is not None else "ready", self.seconds)
            _THREAD_JOBS.discard(self)
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def join(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


class ChildJob:
    """A forked process running `compile_in_child()` (a NativeJob on its own thread: generate,
    compile, write the disk caches) and exiting 0 if it compiled.  This process meanwhile imports
    and initialises Numba on a thread (`prewarm`), so that its own compile, a load from the
    caches the child filled, is short."""

    def __init__(self, compile_in_child, prewarm, locks, notice: str):
        with contextlib.ExitStack() as held, warnings.catch_warnings():
            for lock in locks:               # (no thread of ours holds them at the fork)
                held.enter_context(lock)
            warnings.simplefilter("ignore", DeprecationWarning)    # (3.12: fork beside threads)
            pid = os.fork()
            if pid == 0:                     # the child: compile, fill the caches, leave
                code = 1
                try:
                    _let_go_of_the_callers_files()
                    code = 0 if compile_in_child() else 1
                finally:
                    os._exit(code)
        self.pid = pid
        self.status: int | None = None
        threading.Thread(target=prewarm, name="s2s-jit prewarm", daemon=True).start()
        log.notice_later(notice, finished=self.done)

    def done(self) -> bool:
        if self.status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:        # (reaped elsewhere)
                pid, status = self.pid, 1 << 8
            if pid == self.pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is not None

    @property
    def succeeded(self) -> bool:
        return self.status == 0

    def join(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(0.02)
        return True

    error = None        # (what failed is found again by this process's own compile)
    unfused = False


def _let_go_of_the_callers_files() -> None:
    """In the child: stdin, stdout and stderr on /dev/null and every other inherited descriptor
    closed, so that whoever reads the caller's output (a pipe, `subprocess.run`, CI's log) sees
    its end when the caller exits, not when this compile does."""
    os.environ["S2S_QUIET"] = "1"     # (prints nothing: a stream's lock may have been held at the fork)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, devnull)
    os.closerange(devnull + 1, 1 << 16)


def numba_locks() -> list:
    """Numba's compiler lock, if Numba is imported (a user's thread may be compiling)."""
    module = sys.modules.get("numba.core.compiler_lock")
    return [module.global_compiler_lock] if module is not None else []
