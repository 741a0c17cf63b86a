"""The default target's parallel twins (backends/parallel_twins.py): a fused loop over at least
PARALLEL_MIN elements runs as a prange loop when Numba has more than one thread, else serially.
jit compiles that version (a second one, whose parfors cost seconds) once a call with the types of
an earlier one has arrays past PARALLEL_MIN elements: from the second such call.

Each program is run past the threshold, at 1 thread (the serial loop) and at every thread (the
twin), and both are compared with the uncompiled transform and with finite differences.
"""
from __future__ import annotations

import numba
import numpy as np
import pytest

import s2s
from s2s.backends.numba_lower import loops
from cases.fd import numeric_grad

N = loops.PARALLEL_MIN + 4321        # past the switch, and not a multiple of any chunk
many_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one core: no twin runs")


@pytest.fixture
def threads():
    """Set Numba's thread count for the test (restored after)."""
    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


# ----- programs, as users write them -------------------------------------------------------
def softplus_loss(w, x, y):
    z = x * w
    return np.mean(np.log1p(np.exp(-y * z)))


def energy(q, p, k):
    kinetic = 0.5 * np.sum(p * p)
    potential = np.sum(k * (1.0 - np.cos(q)))
    return kinetic + potential


def scaled_tanh(x, s, b):
    # b has shape (1,): a broadcast operand, read through elem() as a scalar is
    h = np.tanh(s * x + b)
    return np.sum(h * h) + np.sum(np.sin(x))


def matrix_rows(a, b):
    # (m, n) * (n,): a two-deep loop over rows and columns; b's cotangent sums over the rows
    return np.sum(np.exp(-a * a) * b)


def both_programs():
    rng = np.random.default_rng(3)
    x = rng.normal(size=N)
    return [
        (softplus_loss, (0.7, x, np.sign(rng.normal(size=N)))),
        (energy, (x, rng.normal(size=N), 1.3)),
        (scaled_tanh, (x, 0.4, np.array([0.2]))),
        (matrix_rows, (rng.normal(size=(N // 64, 64)), rng.normal(size=64))),
    ]


@many_threads
@pytest.mark.parametrize("fun,args", both_programs(), ids=lambda v: getattr(v, "__name__", ""))
def test_twin_and_serial_agree_with_the_transform(fun, args, threads):
    argnums = tuple(k for k, a in enumerate(args) if isinstance(a, np.ndarray) or isinstance(a, float))
    want = s2s.grad(fun, argnums=argnums)(*args)
    compiled = s2s.jit(s2s.grad(fun, argnums=argnums), wait=True)
    compiled(*args)                         # (the serial version; the next call compiles the twins')
    # (every thread first: a wrong twin must not find the serial loop's answer in reused memory)
    for count in (numba.config.NUMBA_NUM_THREADS, 1):
        threads(count)
        got = compiled(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    if fun is not matrix_rows:      # (its loop over rows sums into b's cotangent: no twin)
        assert "ready" in compiled._twin_state.values()
    # the primal too: its sums are the twin's reductions
    value = s2s.jit(fun, wait=True)
    threads(numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_allclose(value(*args), fun(*args), rtol=1e-10)


@many_threads
def test_twin_gradient_matches_finite_differences(threads):
    rng = np.random.default_rng(5)
    q, p = rng.normal(size=N + 777), rng.normal(size=N + 777)
    threads(numba.config.NUMBA_NUM_THREADS)
    compiled = s2s.jit(s2s.grad(energy), wait=True)
    compiled(q[::-1].copy(), p, 1.3)
    dq = compiled(q, p, 1.3)
    assert "ready" in compiled._twin_state.values()
    np.testing.assert_allclose(dq, 1.3 * np.sin(q), rtol=1e-12)     # closed form
    picks = list(rng.choice(N, 5, replace=False)) + [N + 776]
    for i in picks:
        e = np.zeros(N + 777)
        e[i] = 1e-6
        fd = (energy(q + e, p, 1.3) - energy(q - e, p, 1.3)) / 2e-6
        assert abs(fd - dq[i]) < 1e-5


@many_threads
def test_a_parallel_sum_is_the_same_every_call(threads):
    # (the twin's partial sums are per thread: fixed for a thread count, so calls agree exactly)
    threads(numba.config.NUMBA_NUM_THREADS)
    x = np.random.default_rng(0).normal(size=4 * N)
    f = s2s.jit(energy, wait=True)
    f(x, x, 2.0)
    first = f(x, x, 2.0)
    assert "ready" in f._twin_state.values()
    assert all(f(x, x, 2.0) == first for _ in range(5))
    np.testing.assert_allclose(first, energy(x, x, 2.0), rtol=1e-12)


def test_generated_code_has_the_twin_and_the_serial_loop():
    x = np.ones(N)
    j = s2s.jit(s2s.grad(softplus_loss))
    assert "prange(" not in j.generated_for_args(0.5, x, x).source      # the version compiled first
    twin = s2s.jit(s2s.grad(softplus_loss))
    twin.twins = True
    src = twin.generated_for_args(0.5, x, x).source
    assert "prange(" in src and "parallel_worth(" in src
    assert "for i in range(" in src          # the serial loop stays
    # target="parallel" keeps its prange loops without a switch
    par = s2s.show(s2s.jit(s2s.grad(softplus_loss), target="parallel"), example_args=(0.5, x, x))
    assert "parallel_worth(" not in par and "prange(" in par


def test_parallel_worth_switches_on_size_and_threads(threads):
    worth = numba.njit(lambda n: loops.parallel_worth(n))
    assert not worth(loops.PARALLEL_MIN - 1)
    threads(1)
    assert not worth(10 * loops.PARALLEL_MIN)
    if numba.config.NUMBA_NUM_THREADS > 1:
        threads(2)
        assert worth(loops.PARALLEL_MIN)
    assert loops.parallel_worth(10) is False     # (the Python form, for the interpreter)


def test_short_arrays_and_vmap_past_the_switch(threads):
    # under the switch: the serial loop; vmap of a per-example loss over a batch past it
    rng = np.random.default_rng(1)
    x = rng.normal(size=100)
    np.testing.assert_allclose(s2s.jit(s2s.grad(energy), wait=True)(x, x, 0.5), 0.5 * np.sin(x), rtol=1e-12)
    xs = rng.normal(size=(N // 8, 8))
    per_example = s2s.jit(s2s.vmap(s2s.grad(scaled_tanh), in_axes=(0, None, None)), wait=True)
    threads(numba.config.NUMBA_NUM_THREADS)
    per_example(xs[::-1].copy(), 0.4, np.array([0.2]))
    got = per_example(xs, 0.4, np.array([0.2]))
    rows = list(range(20)) + list(range(len(xs) - 20, len(xs)))
    want = np.stack([s2s.grad(scaled_tanh)(xs[r], 0.4, np.array([0.2])) for r in rows])
    np.testing.assert_allclose(got[rows], want, rtol=1e-10, atol=1e-12)


def test_pmap_devices_share_numba_threads():
    # each device thread gets its part of Numba's threads (one each under the workqueue layer,
    # which aborts on concurrent parallel launches)
    seen = []

    def device(x):
        seen.append(numba.get_num_threads())
        return x

    from s2s.backends.devices import run_on_threads
    before = numba.get_num_threads()
    run_on_threads([(device, (1,)), (device, (2,))], "i")
    share = numba.config.NUMBA_NUM_THREADS // 2 if numba.threading_layer() in ("omp", "tbb") else 1
    assert seen == [max(1, share)] * 2
    assert numba.get_num_threads() == before      # (the caller's own count: per thread, untouched)
    # and a jitted gradient under pmap past the switch is right
    xs = np.random.default_rng(2).normal(size=(2, N))
    got = s2s.pmap(s2s.jit(s2s.grad(energy), wait=True), in_axes=(0, 0, None))(xs, xs, 1.5)
    np.testing.assert_allclose(got, 1.5 * np.sin(xs), rtol=1e-12)


def _child_energy(queue):
    x = np.linspace(-1.0, 2.0, N)
    queue.put(float(np.sum(s2s.jit(s2s.grad(energy), wait=True)(x, x, 0.5))))


@many_threads
def test_a_forked_child_runs_the_loops_serially(threads):
    # OpenMP's pool does not survive fork(): after the parent ran a twin, a forked child
    # calling jitted code past the switch must answer, not abort
    import multiprocessing
    threads(numba.config.NUMBA_NUM_THREADS)
    x = np.linspace(-1.0, 2.0, N)
    want = float(np.sum(s2s.jit(s2s.grad(energy), wait=True)(x, x, 0.5)))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_energy, args=(queue,))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert abs(queue.get(timeout=5) - want) < 1e-9 * abs(want)


def test_one_setting_limits_numba_and_blas(tmp_path):
    import subprocess
    import sys
    probe = ("import numpy, s2s, numba, scipy.linalg\n"
             "from threadpoolctl import threadpool_info\n"
             "print(numba.config.NUMBA_NUM_THREADS, sorted({d['num_threads'] for d in threadpool_info()"
             " if d['user_api'] == 'blas'}))\n")
    out = subprocess.run([sys.executable, "-c", probe], env=dict(__import__("os").environ, S2S_NUM_THREADS="1"),
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["1", "[1]"], out.stderr
    # at run time, for the calling thread (and BLAS's, process-wide)
    from threadpoolctl import threadpool_info
    before = numba.get_num_threads()
    try:
        s2s.set_num_threads(1)
        assert s2s.get_num_threads() == 1
        assert {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"} == {1}
    finally:
        s2s.set_num_threads(before)
    with pytest.raises(s2s.ArgumentError, match="positive int"):
        s2s.set_num_threads(0)


def two_layer(w1, w2, x):
    h = np.tanh(x @ w1)
    return np.sum(np.exp(-h * h) @ w2)


def test_code_that_calls_blas_has_no_twin():
    # BLAS's threads and Numba's would take turns on the same cores (the MLP: 21.6 ms against
    # 2.8 ms on 13 cores): loops beside a matmul stay serial
    rng = np.random.default_rng(4)
    w1, w2, x = rng.normal(size=(64, 600)), rng.normal(size=(600, 3)), rng.normal(size=(100, 64))
    j = s2s.jit(s2s.grad(two_layer, argnums=(0, 1)), wait=True)
    j.twins = True
    assert "parallel_worth(" not in j.generated_for_args(w1, w2, x).source
    j = s2s.jit(s2s.grad(two_layer, argnums=(0, 1)), wait=True)
    j(w1, w2, x)
    if numba.get_num_threads() > 1:
        j(w1, w2, x)
        assert set(j._twin_state.values()) == {"none"}     # (found out from the source, not compiled)
    for g, w in zip(j(w1, w2, x), s2s.grad(two_layer, argnums=(0, 1))(w1, w2, x)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
