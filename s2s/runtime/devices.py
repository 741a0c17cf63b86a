"""Device groups and axis bindings: what a collective exchanges through (collectives.py).

`s2s.pmap(f, axis_name="batch")` binds, on each device it runs f on, that name to the device's
group and index (`bind_axis`: a thread-local stack, so pmaps nest).  A group's `exchange` hands
in each device's value and gives every device all of them, in device order.

- ThreadGroup: devices are threads of this process (the cpu backend; cuda, one host thread per
  GPU); values meet in a shared list between two barriers.
- MpiGroup: each MPI rank is one device (mpi4py); arrays travel by MPI_Allgather, sums by
  MPI_Allreduce, through non-blocking requests polled against the timeout.

Nothing waits for ever: a barrier or request that the other devices do not reach within
S2S_COLLECTIVE_TIMEOUT seconds (default 120) raises CollectiveError, and a device that fails
aborts its group so that the others raise at once instead of waiting.
"""
from __future__ import annotations

import dataclasses
import linecache
import os
import sys
import threading
import time
from typing import Any

import numpy as np

from ..errors import CollectiveError


def collective_timeout() -> float:
    return float(os.environ.get("S2S_COLLECTIVE_TIMEOUT", "120"))


@dataclasses.dataclass
class Binding:
    axis_name: Any
    group: Any
    index: int


_LOCAL = threading.local()


def bindings() -> list:
    """This thread's bound axes, innermost last."""
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


class bind_axis:
    """`with bind_axis(name, group, index):` runs code as device `index` of `group` on axis `name`."""

    def __init__(self, axis_name, group, index: int, outer: list | None = None):
        self.binding = Binding(axis_name, group, index)
        self.outer = outer

    def __enter__(self):
        stack = bindings()
        self.saved = list(stack)
        if self.outer is not None:        # (a new thread: the bindings of the pmap it runs in)
            stack[:] = list(self.outer)
        stack.append(self.binding)
        return self.binding

    def __exit__(self, *exc):
        bindings()[:] = self.saved
        return False


def _user_site() -> str:
    """`File "...", line N` of the first frame outside s2s (the user's call, or a generated file:
    the transformation objects add the user's line for those)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep     # s2s/
    frame = sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
    if frame is None or frame.f_code.co_filename == threading.__file__:
        return None          # (compiled per-device code has no frames: pmap finds the line in its source)
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f'File "{frame.f_code.co_filename}", line {frame.f_lineno}' + (f"\n    {text}" if text else "")


def bound(axis_name, op: str) -> Binding:
    for b in reversed(bindings()):
        if b.axis_name == axis_name:
            return b
    names = [b.axis_name for b in bindings()]
    where = _user_site()
    exc = CollectiveError(
        (f"{where}\n" if where else "") + f"{op}: axis name {axis_name!r} is not bound here"
        + (f" (the enclosing pmaps bind {', '.join(repr(n) for n in names)})" if names else
           " (no pmap is running this code)")
        + f"\nhint: call it inside s2s.pmap(f, axis_name={axis_name!r}), or use the axis name the pmap binds")
    exc.unbound_axis = (axis_name, op, where is not None)
    raise exc


# ----- groups -----------------------------------------------------------------------------------
class ThreadGroup:
    """Devices that are threads of this process.  An exchange writes each device's value into a
    slot, waits at one barrier and reads every slot.  Slots alternate between two lists: the next
    exchange writes the other list, and the one after it cannot start before every device has
    passed the next barrier, so after reading this one."""

    kind = "threads"

    def __init__(self, size: int, timeout: float | None = None):
        self.size = size
        self.timeout = collective_timeout() if timeout is None else timeout
        self.barrier = threading.Barrier(size)
        self.slots: tuple = ([None] * size, [None] * size)
        self.rounds = [0] * size          # each device's number of exchanges so far
        self.failure: str | None = None
        self.nested = [0] * size          # each device's number of inner pmaps so far
        self._subgroups: dict = {}
        self._lock = threading.Lock()

    def inner_binding(self, binding: "Binding", inner_index: int, call: int) -> "Binding":
        """This axis as seen from device `inner_index` of an inner pmap (the `call`-th the outer
        device started): the outer devices' inner devices of that index form a group of their own,
        so a collective over the outer axis inside the inner pmap runs once per inner index, as
        JAX's nested pmap does."""
        with self._lock:
            sub = self._subgroups.get((call, inner_index))
            if sub is None:
                sub = self._subgroups[(call, inner_index)] = ThreadGroup(self.size, self.timeout)
        return Binding(binding.axis_name, sub, binding.index)

    def start_inner(self, index: int) -> int:
        """The number of the inner pmap device `index` starts now (the same on every outer device:
        they run the same code)."""
        self.nested[index] += 1
        return self.nested[index]

    def abort(self, why: str) -> None:
        if self.failure is None:
            self.failure = why
        self.barrier.abort()
        for sub in list(self._subgroups.values()):
            sub.abort(why)

    def _wait(self, op: str) -> None:
        try:
            self.barrier.wait(self.timeout)
        except threading.BrokenBarrierError:
            if self.failure is None:
                self.failure = (f"{op} timed out after {self.timeout:g} s waiting for the other devices "
                                f"(S2S_COLLECTIVE_TIMEOUT sets the limit)")
                self.barrier.abort()
                raise CollectiveError(self.failure) from None
            raise CollectiveError(f"{op} could not complete: {self.failure}") from None

    def exchange(self, index: int, value, op: str) -> list:
        slots = self.slots[self.rounds[index] % 2]
        self.rounds[index] += 1
        slots[index] = value
        self._wait(op)
        return list(slots)


def _contiguous(value) -> np.ndarray:
    """value as a C-order array of its own shape (np.ascontiguousarray makes a 0-d array 1-d)."""
    x = np.asarray(value)
    return x if x.flags.c_contiguous else x.copy(order="C")


class MpiGroup:
    """Each MPI rank of `comm` is one device (index = rank).  Every collective starts with a small
    non-blocking allreduce of (failed, ndim, dtype, shape), polled against the timeout (`agree`):
    ranks handing in arrays of different shapes raise, and a rank that failed posts it with its
    failure flag set (abort), so the others raise at once instead of waiting for a collective it
    will never call.  The data then moves by MPI's blocking collective (or numba-mpi's, from
    compiled code): every rank has agreed to call it."""

    kind = "mpi"
    _META = 12        # failed, ndim, dtype number, up to 9 dimensions

    def __init__(self, comm, timeout: float | None = None):
        self.comm = comm
        self.size = comm.Get_size()
        self.timeout = collective_timeout() if timeout is None else timeout
        self.failure: str | None = None

    def _complete(self, requests: list, op: str, timeout: float | None = None) -> bool:
        from mpi4py import MPI
        limit = self.timeout if timeout is None else timeout
        start = time.monotonic()
        deadline = start + limit
        while not MPI.Request.Testall(requests):
            now = time.monotonic()
            if now - start > 0.002:
                time.sleep(0)       # (spin on the requests first: MPI progresses inside Test)
            if now > deadline:
                if timeout is not None:
                    return False
                self.failure = (f"{op} timed out after {limit:g} s waiting for the other MPI ranks "
                                f"(a rank failed or stopped calling it; S2S_COLLECTIVE_TIMEOUT sets the limit)")
                raise CollectiveError(self.failure)
            time.sleep(0)
        return True

    def _meta(self, x: np.ndarray | None, failed: bool) -> np.ndarray:
        meta = np.full(self._META, -1, dtype=np.int64)
        meta[0] = int(failed)
        if x is not None:
            meta[1], meta[2] = x.ndim, x.dtype.num
            dims = x.shape if x.ndim <= self._META - 3 else (hash(x.shape),)
            meta[3:3 + len(dims)] = dims
        return meta

    def _meta_extremes(self, meta: np.ndarray, op: str, timeout: float | None = None) -> tuple:
        """The elementwise min and max of every rank's meta, in one allreduce (max of meta, -meta)."""
        from mpi4py import MPI
        both = np.concatenate([meta, -meta])
        out = np.empty_like(both)
        if not self._complete([self.comm.Iallreduce(both, out, op=MPI.MAX)], op, timeout):
            raise CollectiveError(f"{op}: no answer from the other MPI ranks")
        return -out[self._META:], out[:self._META]

    def agree(self, x: np.ndarray, op: str) -> None:
        """Every rank is in this collective, alive, with an array of x's shape and dtype (or raise).
        Once they agree, the data moves by a blocking collective: every rank will call it."""
        from mpi4py import MPI
        low, high = self._meta_extremes(self._meta(x, False), op)
        if high[0]:
            raise CollectiveError(f"{op} could not complete: another MPI rank failed")
        if not np.array_equal(low, high):
            raise CollectiveError(f"{op}: the MPI ranks hand in arrays of different shapes or dtypes "
                                  f"(this rank: {x.shape}, {x.dtype})")

    def abort(self, why: str) -> None:
        """Tell the ranks waiting in their next collective that this one failed (bounded wait: a
        rank that has finished never answers)."""
        from mpi4py import MPI
        if self.failure is not None:
            return
        self.failure = why
        try:
            self._meta_extremes(self._meta(None, True), "abort", timeout=min(self.timeout, 10.0))
        except CollectiveError:
            pass

    def exchange(self, index: int, value, op: str) -> list:
        x = _contiguous(value)
        self.agree(x, op)
        out = np.empty((self.size,) + x.shape, dtype=x.dtype)
        self.comm.Allgather(x, out)
        return [out[k] if np.ndim(value) else out[k][()] for k in range(self.size)]

    def allreduce(self, value, how: str, op: str):
        from mpi4py import MPI
        x = _contiguous(value)
        self.agree(x, op)
        out = np.empty_like(x)
        self.comm.Allreduce(x, out, op={"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[how])
        return out if np.ndim(value) else out[()]
