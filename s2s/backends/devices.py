"""The devices pmap runs on, by backend, and how a pmap call runs per-device code on them.

- cpu: one device per core of this machine (`S2S_CPU_DEVICES=N` sets the count, as XLA's
  `--xla_force_host_platform_device_count` does, so tests can use 8 devices on 2 cores); each
  device is a thread running the compiled (`nogil`) per-device code.
- cuda: one device per GPU numba.cuda sees; each is a host thread with that GPU's context current
  (`with cuda.gpus[i]`), launching the per-device code's kernels; collectives are staged through
  the host.
- mpi: each MPI rank of COMM_WORLD is one device (mpi4py; `pip install 's2s[mpi]'` brings it and
  an MPI library); a process runs its own shard, collectives span every rank.  Launched under
  `mpiexec` with more than one rank, mpi is the default backend.
"""
from __future__ import annotations

import dataclasses
import os
import queue
import sys
import threading
import warnings
from typing import Any, Callable

from ..errors import ArgumentError, CollectiveError
from ..runtime.devices import MpiGroup, ThreadGroup, bind_axis, bindings

BACKENDS = ("cpu", "cuda", "mpi")
_MPI_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS")


@dataclasses.dataclass(frozen=True)
class Device:
    id: int                 # index among all devices of the backend (every process's)
    platform: str
    process_index: int = 0

    def __repr__(self) -> str:
        return f"{self.platform.upper() if self.platform != 'cpu' else 'Cpu'}Device(id={self.id})"


def _under_mpiexec() -> bool:
    return any(int(os.environ.get(v, "1") or 1) > 1 for v in _MPI_SIZE_VARIABLES)


def default_backend() -> str:
    chosen = os.environ.get("S2S_PMAP_BACKEND")
    if chosen:
        return check_backend(chosen)
    return "mpi" if _under_mpiexec() else "cpu"


def check_backend(backend: str | None) -> str:
    if backend is None:
        return default_backend()
    if backend not in BACKENDS:
        raise ArgumentError(f"unknown pmap backend {backend!r}; choose one of {', '.join(map(repr, BACKENDS))}")
    return backend


def cpu_device_count() -> int:
    given = os.environ.get("S2S_CPU_DEVICES")
    if given:
        try:
            n = int(given)
        except ValueError:
            n = 0
        if n < 1:
            raise ArgumentError(f"S2S_CPU_DEVICES={given!r}: give a positive number of devices")
        return n
    return os.cpu_count() or 1


def mpi_comm():
    """COMM_WORLD (mpi4py initializes MPI on first import)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ArgumentError(
            f"the mpi backend needs mpi4py and an MPI library ({exc}); install them with "
            f"pip install 's2s[mpi]' (which brings MPICH from the package index)") from None
    return MPI.COMM_WORLD


def _cuda_gpus() -> list:
    try:
        from numba import cuda
    except ImportError as exc:      # pragma: no cover - numba-cuda is a dependency
        raise ArgumentError(f"the cuda backend needs numba-cuda ({exc})") from None
    if not cuda.is_available():
        raise ArgumentError("the cuda backend found no CUDA GPU (set NUMBA_ENABLE_CUDASIM=1 to use Numba's "
                            "simulator)")
    return list(cuda.gpus)


def devices(backend: str | None = None) -> list[Device]:
    """Every device of the backend (for mpi: every rank's)."""
    backend = check_backend(backend)
    if backend == "cpu":
        return [Device(i, "cpu") for i in range(cpu_device_count())]
    if backend == "cuda":
        return [Device(i, "cuda") for i in range(len(_cuda_gpus()))]
    comm = mpi_comm()
    return [Device(i, "mpi", i) for i in range(comm.Get_size())]


def local_devices(backend: str | None = None) -> list[Device]:
    """The devices this process drives (for mpi: its rank's one device)."""
    backend = check_backend(backend)
    if backend == "mpi":
        rank = mpi_comm().Get_rank()
        return [Device(rank, "mpi", rank)]
    return devices(backend)


def process_index(backend: str | None = None) -> int:
    return mpi_comm().Get_rank() if check_backend(backend) == "mpi" else 0


def process_count(backend: str | None = None) -> int:
    return mpi_comm().Get_size() if check_backend(backend) == "mpi" else 1


# ----- running per-device code ------------------------------------------------------------------
def _first_failure(errors: list) -> tuple[int, BaseException] | None:
    """The device error to report: one that is not another device's failure seen from a collective."""
    found = [(i, e) for i, e in enumerate(errors) if e is not None]
    if not found:
        return None
    primary = [(i, e) for i, e in found if not (isinstance(e, CollectiveError) and "could not complete" in str(e))]
    return (primary or found)[0]


_IN_POOL = threading.local()
_POOLS: dict[int, "_Pool"] = {}
_POOLS_LOCK = threading.Lock()


class _Pool:
    """n threads that stay for the next pmap call (starting threads costs more than a small step)."""

    def __init__(self, n: int):
        self.n = n
        self.lock = threading.Lock()          # one pmap call at a time on this pool
        self.queues = [queue.SimpleQueue() for _ in range(n)]
        for i in range(n):
            threading.Thread(target=self._serve, args=(i,), name=f"s2s-device-{i}-of-{n}", daemon=True).start()

    def _serve(self, i: int) -> None:
        _IN_POOL.busy = True
        while True:
            task, done = self.queues[i].get()
            try:
                task(i)
            finally:
                done.release()

    def run(self, task: Callable[[int], None]) -> None:
        with self.lock:
            done = threading.Semaphore(0)
            for q in self.queues:
                q.put((task, done))
            for _ in range(self.n):
                done.acquire()


def _pool(n: int) -> _Pool:
    with _POOLS_LOCK:
        pool = _POOLS.get(n)
        if pool is None:
            pool = _POOLS[n] = _Pool(n)
        return pool


def _numba_threads_per_device(n: int) -> None:
    """Share Numba's threads between n device threads (jit's parallel twins switch on Numba's
    thread count, which is per thread): each device gets its part of the cores.  Under Numba's
    workqueue threading layer one each, since it aborts the process when two threads launch
    parallel loops at once; OpenMP's and TBB's take concurrent launches."""
    numba = sys.modules.get("numba")
    if numba is None:
        return
    from numba.np.ufunc import parallel
    parallel._launch_threads()
    share = numba.config.NUMBA_NUM_THREADS // n if numba.threading_layer() in ("omp", "tbb") else 1
    numba.set_num_threads(max(1, share))


def run_on_threads(calls: list[tuple[Callable, tuple]], axis_name: Any, platform: str = "cpu",
                   gpus: list | None = None) -> list:
    """Run calls[i] as device i of a ThreadGroup bound to `axis_name`, each on its own thread; the
    results in device order.  A device that raises aborts the group (the others' collectives
    raise at once), and the first device's own error is raised here, naming the device."""
    n = len(calls)
    group = ThreadGroup(n)
    results: list = [None] * n
    errors: list = [None] * n
    outer = list(bindings())
    # (inside another pmap's device: the outer axes, as each inner device sees them)
    calls_started = [b.group.start_inner(b.index) if hasattr(b.group, "start_inner") else 0 for b in outer]

    def seen_from(i: int) -> list:
        return [b.group.inner_binding(b, i, k) if hasattr(b.group, "inner_binding") else b
                for b, k in zip(outer, calls_started)]

    def device(i: int) -> None:
        fn, args = calls[i]
        if n > 1:
            _numba_threads_per_device(n)
        try:
            with bind_axis(axis_name, group, i, seen_from(i)):
                if gpus is not None:
                    with gpus[i]:
                        results[i] = fn(*args)
                else:
                    results[i] = fn(*args)
        except BaseException as exc:      # noqa: BLE001 - handed to the caller below
            errors[i] = exc
            group.abort(f"device {i} raised {type(exc).__name__}: {exc}")

    if n == 1:
        device(0)
    elif getattr(_IN_POOL, "busy", False):
        # (a pmap inside a device's code: the pool's threads are all taken by the outer one)
        threads = [threading.Thread(target=device, args=(i,), name=f"s2s-{platform}-device-{i}", daemon=True)
                   for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        _pool(n).run(device)
    failure = _first_failure(errors)
    if failure is not None:
        i, exc = failure
        if n > 1 and not any(note.startswith("on pmap device") for note in getattr(exc, "__notes__", ())):
            exc.add_note(f"on pmap device {i} of {n} (axis {axis_name!r})")
        raise exc
    return results


def run_on_mpi(fn: Callable, args: tuple, axis_name: Any) -> Any:
    """Run fn as this rank's device of an MpiGroup over COMM_WORLD bound to `axis_name`."""
    group = MpiGroup(mpi_comm())
    try:
        with bind_axis(axis_name, group, group.comm.Get_rank()), warnings.catch_warnings():
            # (compiled code calling numba-mpi holds MPI's C pointers: Numba says it cannot cache it)
            warnings.filterwarnings("ignore", message=".*Cannot cache compiled function")
            return fn(*args)
    except BaseException as exc:
        group.abort(f"rank {group.comm.Get_rank()} raised {type(exc).__name__}: {exc}")
        if not any(note.startswith("on MPI rank") for note in getattr(exc, "__notes__", ())):
            exc.add_note(f"on MPI rank {group.comm.Get_rank()} of {group.size} (axis {axis_name!r})")
        raise
