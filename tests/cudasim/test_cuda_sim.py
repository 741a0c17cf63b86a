"""The CUDA target, run under Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, own process)."""
import os

import numpy as np
import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 in its own process", allow_module_level=True)

from cases import cuda_cases as C
import s2s  # noqa: E402


X = np.linspace(-2.0, 2.0, 257)          # not a multiple of the block size


def test_elementwise_matches_numpy():
    assert np.allclose(s2s.jit(C.elementwise, target="cuda")(X), C.elementwise(X), rtol=1e-12)


def test_two_inputs_elementwise():
    Y = np.linspace(0.5, 1.5, 257)
    assert np.allclose(s2s.jit(C.two_inputs, target="cuda")(X, Y), C.two_inputs(X, Y), rtol=1e-12)


def test_reduction_accumulates_with_atomics():
    j = s2s.jit(C.summed, target="cuda")
    assert np.isclose(j(X), C.summed(X), rtol=1e-12)
    assert "cuda.atomic.add" in j.generated_for(1).source


def test_vmap_grad_runs_one_example_per_thread():
    xs = np.linspace(-1.0, 1.0, 64)
    ys = np.sign(np.sin(np.arange(64.0)))
    j = s2s.jit(s2s.vmap(s2s.grad(C.scalar_logistic), in_axes=(None, 0, 0)), target="cuda")
    got = j(0.3, xs, ys)
    ref = np.array([s2s.grad(C.scalar_logistic)(0.3, xs[i], ys[i]) for i in range(64)])
    assert np.allclose(got, ref, rtol=1e-12)
    closed = -ys * xs / (1.0 + np.exp(ys * xs * 0.3))
    assert np.allclose(got, closed, rtol=1e-12)


def test_branches_per_thread():
    j = s2s.jit(s2s.vmap(C.branchy), target="cuda")
    assert np.allclose(j(X), [C.branchy(v) for v in X])


def test_transfers_are_reported():
    j = s2s.jit(C.elementwise, target="cuda")
    j(X)
    t = j.generated_for(1).fn.transfers
    assert t["to_device_bytes"] == X.nbytes and t["to_host_bytes"] == X.nbytes and t["calls"] == 1


def test_grad_without_vmap_is_refused():
    with pytest.raises(s2s.TransformError, match="vmap"):
        s2s.jit(s2s.grad(C.elementwise), target="cuda")(X)


def test_indexing_is_refused_clearly():
    with pytest.raises(s2s.TransformError, match="CUDA"):
        s2s.jit(C.with_indexing, target="cuda")(X)


def test_loop_without_tape_is_fine_per_thread():
    j = s2s.jit(s2s.vmap(s2s.grad(C.looped)), target="cuda")
    assert np.allclose(j(X), 4 * X ** 3)
