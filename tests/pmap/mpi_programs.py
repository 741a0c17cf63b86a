"""Programs tests/pmap/test_pmap_mpi.py runs under `mpiexec -n N` (each rank one pmap device).

Each case computes on every rank with the mpi backend (each rank passing its local shard, a leading
axis of 1) and compares with the same maths computed in this process without MPI (the whole
stacked input, plain NumPy or s2s.grad without pmap); a rank prints "<case> OK <rank>" or raises.
"""
import sys

import numpy as np

import s2s
from cases.fd import numeric_grad          # (test_pmap_mpi.py puts tests/ on the ranks' PYTHONPATH)

RANK, SIZE = s2s.process_index("mpi"), s2s.process_count("mpi")
RNG = np.random.default_rng(7)
X = RNG.standard_normal((SIZE, 3, 4))      # every rank draws the same numbers: its shard is X[RANK]
MINE = X[RANK][None]


def close(got, want, what, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol):
        raise AssertionError(f"rank {RANK}: {what}: got {got!r}, expected {want!r}")


def collectives(x):
    return (s2s.psum(x, "r"), s2s.pmean(x, "r"), s2s.pmax(x, "r"), s2s.pmin(x, "r"),
            s2s.all_gather(x, "r"), s2s.all_gather(x, "r", axis=1, tiled=True),
            s2s.ppermute(x, "r", RING),
            s2s.axis_index("r") + 0.0 * x[0, 0])


RING = [(i, (i + 1) % SIZE) for i in range(SIZE)]


def case_collectives():
    outs = s2s.pmap(collectives, axis_name="r", backend="mpi")(MINE)
    s, m, mx, mn, ag, agt, pp, idx = (o[0] for o in outs)
    close(s, X.sum(0), "psum")
    close(m, X.mean(0), "pmean")
    close(mx, X.max(0), "pmax")
    close(mn, X.min(0), "pmin")
    close(ag, X, "all_gather")
    close(agt, np.concatenate(list(X), axis=1), "all_gather tiled")
    close(pp, X[(RANK - 1) % SIZE], "ppermute")
    close(idx, float(RANK), "axis_index")


def swap(x):
    return s2s.all_to_all(x, "r", 0, 1)


def case_all_to_all():
    y = RNG.standard_normal((SIZE, SIZE, 5))
    out = s2s.pmap(swap, axis_name="r", backend="mpi")(y[RANK][None])[0]
    close(out, np.stack([y[j, RANK] for j in range(SIZE)], axis=1), "all_to_all")


def device_loss(x):
    total = s2s.psum(np.sin(x), "r")
    gathered = s2s.all_gather(x * x, "r")
    shifted = s2s.ppermute(x, "r", RING)
    low = s2s.pmin(np.sum(x * x), "r")
    mean = s2s.pmean(np.cos(x), "r")
    return (np.sum(total * x) + np.sum(gathered[0]) * s2s.pmax(np.sum(x), "r") + np.sum(shifted * x)
            + low * np.sum(mean))


def whole_loss(xs):
    # the sum over devices of each device's loss, written without pmap
    n = xs.shape[0]
    total = np.sum(np.sin(xs), axis=0)
    low = np.min(np.sum(xs * xs, axis=(1, 2)))
    mean = np.mean(np.cos(xs), axis=0)
    out = 0.0
    for k in range(n):
        out = out + np.sum(total * xs[k]) + np.sum(xs[0] * xs[0]) * np.max(np.sum(xs, axis=(1, 2)))
        out = out + np.sum(xs[(k - 1) % n] * xs[k]) + low * np.sum(mean)
    return out


def swap_loss(x):
    y = s2s.all_to_all(x, "r", 0, 1)
    return np.sum(np.sin(y) * y)


def whole_swap_loss(ys):
    n = ys.shape[0]
    out = 0.0
    for k in range(n):
        mine = np.stack([ys[j, k] for j in range(n)], axis=1)
        out = out + np.sum(np.sin(mine) * mine)
    return out


def case_grad():
    g = s2s.pmap(s2s.grad(device_loss), axis_name="r", backend="mpi")(MINE)[0]
    close(g, numeric_grad(whole_loss, (X,), 0)[RANK], "pmap(grad)", tol=1e-6)
    # (pmap compiles the per-device gradient anyway: pmap(jit(grad)) == pmap(grad) is checked on
    # the cpu backend, tests/pmap/test_pmap*.py, without a second uncacheable numba-mpi compile here)
    y = RNG.standard_normal((SIZE, SIZE, 2))
    gs = s2s.pmap(s2s.grad(swap_loss), axis_name="r", backend="mpi")(y[RANK][None])[0]
    close(gs, numeric_grad(whole_swap_loss, (y,), 0)[RANK], "pmap(grad) through all_to_all", tol=1e-6)


PM = s2s.pmap(lambda v: s2s.psum(np.tanh(v), "r") * v, axis_name="r", backend="mpi")


def outer(v):
    return np.sum(PM(v) ** 2)


def case_grad_of_pmap():
    g = s2s.grad(outer)(MINE)[0]

    def plain(xs):
        return np.sum((np.sum(np.tanh(xs), axis=0)[None] * xs) ** 2)
    close(g, s2s.grad(plain)(X)[RANK], "grad of a function calling pmap")


def failing(x):
    if s2s.axis_index("r") == 1:
        raise ValueError("rank one fails on purpose")
    return s2s.psum(x, "r")


def case_failure():
    try:
        s2s.pmap(failing, axis_name="r", backend="mpi")(MINE)
    except ValueError as exc:
        assert RANK == 1 and "on purpose" in str(exc), exc
        print(f"failure ValueError {RANK}", flush=True)
    except s2s.CollectiveError as exc:
        assert RANK != 1 and "another MPI rank failed" in str(exc), exc
        print(f"failure CollectiveError {RANK}", flush=True)
    else:
        raise AssertionError("no error")


def wrong_name(x):
    return s2s.psum(x, "rows")


def case_wrong_axis():
    try:
        s2s.pmap(wrong_name, axis_name="r", backend="mpi")(MINE)
    except s2s.CollectiveError as exc:
        assert "'rows'" in str(exc) and "mpi_programs.py" in str(exc), exc
    else:
        raise AssertionError("no error")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        globals()[f"case_{name}"]()
        print(f"{name} OK {RANK}", flush=True)
