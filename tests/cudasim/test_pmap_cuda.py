"""s2s.pmap on the cuda backend, under Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, own process).

The simulator has one GPU, so the mapped axis has size 1: each test checks what one device
computes against NumPy, that collectives take and give back numba.cuda device arrays, and that
the host code (a Python function per GPU) can launch `s2s.jit(g, target="cuda")` kernels.
"""
import os

import numpy as np
import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 in its own process", allow_module_level=True)

from numba import cuda  # noqa: E402

from cases import cuda_cases as C
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad

X = np.linspace(-2.0, 2.0, 257).reshape(1, 257)       # one shard per (simulated) GPU
KERNEL = s2s.jit(C.elementwise, target="cuda")


def is_device_array(a):
    return hasattr(a, "copy_to_host") and not isinstance(a, np.ndarray)


# ----- host code per GPU -----------------------------------------------------------------------
def host_kernel_psum(x):
    y = KERNEL(x)
    return s2s.psum(y, "g") * 2.0 + s2s.axis_index("g") + s2s.axis_size("g")


def host_kernel_gather(x):
    return s2s.all_gather(KERNEL(x), "g")


def host_device_arrays(x):
    d = cuda.to_device(np.ascontiguousarray(x))
    s = s2s.psum(d, "g")
    m = s2s.pmean(d, "g")
    hi = s2s.pmax(d, "g")
    g = s2s.all_gather(d, "g")
    gt = s2s.all_gather(d, "g", tiled=True)
    p = s2s.ppermute(d, "g", [(0, 0)])
    kinds = (is_device_array(s), is_device_array(m), is_device_array(hi), is_device_array(g),
             is_device_array(gt), is_device_array(p))
    return (s.copy_to_host(), m.copy_to_host(), hi.copy_to_host(), g.copy_to_host(), gt.copy_to_host(),
            p.copy_to_host(), np.array(kinds))


def host_kernel_on_device_array(x):
    d = cuda.to_device(np.ascontiguousarray(x))
    y = KERNEL(d)
    out = s2s.psum(y, "g")
    return out.copy_to_host() if is_device_array(out) else np.asarray(out)


def host_returns_device_array(x):
    return s2s.psum(cuda.to_device(np.ascontiguousarray(x)), "g")


def cuda_loss(x):
    return np.sum(np.sin(s2s.psum(x, "g")) * x)


def test_cuda_devices():
    devs = s2s.devices("cuda")
    assert len(devs) == len(cuda.gpus) == 1
    assert devs[0].platform == "cuda" and devs[0].id == 0
    assert s2s.device_count("cuda") == 1 and s2s.local_device_count("cuda") == 1
    assert s2s.process_index("cuda") == 0 and s2s.process_count("cuda") == 1


def test_host_function_launching_a_cuda_kernel_with_psum():
    got = s2s.pmap(host_kernel_psum, axis_name="g", backend="cuda")(X)
    assert isinstance(got, np.ndarray) and got.shape == X.shape
    np.testing.assert_allclose(got, C.elementwise(X) * 2.0 + 0 + 1, rtol=1e-12)


def test_host_function_launching_a_cuda_kernel_with_all_gather():
    got = s2s.pmap(host_kernel_gather, axis_name="g", backend="cuda")(X)
    assert got.shape == (1, 1, X.shape[1])
    np.testing.assert_allclose(got[0, 0], C.elementwise(X[0]), rtol=1e-12)


def test_collectives_on_device_arrays_return_device_arrays():
    Y = np.arange(12.0).reshape(1, 3, 4) - 5.0
    s, m, hi, g, gt, p, kinds = s2s.pmap(host_device_arrays, axis_name="g", backend="cuda")(Y)
    assert kinds.all(), kinds
    np.testing.assert_array_equal(s, Y)                 # one device: the sum is its own value
    np.testing.assert_array_equal(m, Y)
    np.testing.assert_array_equal(hi, Y)
    np.testing.assert_array_equal(g, Y[:, None])        # (devices, stacked 1, 3, 4)
    np.testing.assert_array_equal(gt, Y)
    np.testing.assert_array_equal(p, Y)


def test_kernel_on_a_device_array_then_psum():
    got = s2s.pmap(host_kernel_on_device_array, axis_name="g", backend="cuda")(X)
    np.testing.assert_allclose(got, C.elementwise(X), rtol=1e-12)


def test_device_array_output_is_stacked():
    got = s2s.pmap(host_returns_device_array, axis_name="g", backend="cuda")(X)
    np.testing.assert_array_equal(np.asarray(got), X)


def test_host_function_with_numpy_collectives():
    def via_numpy(Z):
        return s2s.pmap(host_kernel_psum, axis_name="g", backend="cuda", out_axes=None)(Z)
    got = via_numpy(X)
    assert got.shape == X.shape[1:]
    np.testing.assert_allclose(got, C.elementwise(X[0]) * 2.0 + 1, rtol=1e-12)


def test_pmap_grad_on_cuda():
    Y = np.linspace(-1.0, 1.0, 7).reshape(1, 7)
    got = s2s.pmap(s2s.grad(cuda_loss), axis_name="g", backend="cuda")(Y)
    # one device: the total loss is the device's loss with psum the identity
    expected = numeric_grad(lambda Z: np.sum(np.sin(Z) * Z), (Y,), 0)
    assert_close(got, expected)
    cpu = s2s.pmap(s2s.grad(cuda_loss), axis_name="g", backend="cpu")(Y)
    np.testing.assert_allclose(got, cpu, rtol=1e-14)


def test_cuda_jit_needs_the_cuda_backend():
    with pytest.raises(s2s.ArgumentError, match="backend='cuda'"):
        s2s.pmap(KERNEL, axis_name="g")(X)
    got = s2s.pmap(KERNEL, axis_name="g", backend="cuda")(X)
    np.testing.assert_allclose(got, C.elementwise(X), rtol=1e-12)


def test_more_shards_than_gpus():
    with pytest.raises(s2s.ArgumentError, match="1 cuda device"):
        s2s.pmap(host_kernel_psum, axis_name="g", backend="cuda")(np.ones((2, 3)))


def test_devices_argument_picks_the_backend():
    pf = s2s.pmap(host_kernel_psum, axis_name="g", devices=s2s.devices("cuda"))
    np.testing.assert_allclose(pf(X), C.elementwise(X) * 2.0 + 1, rtol=1e-12)
    with pytest.raises(s2s.ArgumentError):
        s2s.pmap(host_kernel_psum, axis_name="g", backend="cpu", devices=s2s.devices("cuda"))


def failing_host(x):
    if s2s.axis_index("g") == 0:
        raise ValueError("gpu boom")
    return x


def test_failing_host_code_raises_its_error():
    with pytest.raises(ValueError, match="gpu boom"):
        s2s.pmap(failing_host, axis_name="g", backend="cuda")(X)


# Every collective on the cuda backend: its value against NumPy, its gradient (pmap(grad)) against
# finite differences of the same maths on one device, and both against the cpu backend.
def every_psum(x):
    return np.sum(np.sin(s2s.psum(x, "g")) * x)


def every_pmean(x):
    return np.sum(s2s.pmean(x * x, "g") * x)


def every_pmax(x):
    return np.sum(s2s.pmax(x, "g") * np.cos(x))


def every_pmin(x):
    return np.sum(s2s.pmin(x, "g") * np.cos(x))


def every_all_gather(x):
    return np.sum(s2s.all_gather(x, "g")[0] * x)


def every_all_gather_tiled(x):
    return np.sum(s2s.all_gather(x, "g", axis=0, tiled=True) * x)


def every_ppermute(x):
    return np.sum(s2s.ppermute(x, "g", [(0, 0)]) * np.sin(x))


def every_all_to_all(x):
    y = np.reshape(x, (1, -1))
    return np.sum(s2s.all_to_all(y, "g", 0, 0) * y)


def every_pswapaxes(x):
    y = np.reshape(x, (1, -1))
    return np.sum(s2s.pswapaxes(y, "g", 0) ** 2)


def every_axis_index(x):
    return np.sum(x * (s2s.axis_index("g") + s2s.axis_size("g")))


def one_device(Z, fn_name):
    """The same maths written without pmap, for one device (every collective is the identity there,
    all_gather adds an axis of one)."""
    x = Z[0]
    return {
        "every_psum": lambda: np.sum(np.sin(x) * x), "every_pmean": lambda: np.sum(x * x * x),
        "every_pmax": lambda: np.sum(x * np.cos(x)), "every_pmin": lambda: np.sum(x * np.cos(x)),
        "every_all_gather": lambda: np.sum(x * x), "every_all_gather_tiled": lambda: np.sum(x * x),
        "every_ppermute": lambda: np.sum(x * np.sin(x)), "every_all_to_all": lambda: np.sum(x * x),
        "every_pswapaxes": lambda: np.sum(x * x), "every_axis_index": lambda: np.sum(x),
    }[fn_name]()


EVERY = [every_psum, every_pmean, every_pmax, every_pmin, every_all_gather, every_all_gather_tiled,
         every_ppermute, every_all_to_all, every_pswapaxes, every_axis_index]


@pytest.mark.parametrize("fn", EVERY, ids=[f.__name__ for f in EVERY])
def test_every_collective_value_and_gradient_on_cuda(fn):
    Y = np.linspace(-1.0, 1.3, 6).reshape(1, 6)
    value = s2s.pmap(fn, axis_name="g", backend="cuda")(Y)
    np.testing.assert_allclose(value[0], one_device(Y, fn.__name__), rtol=1e-12)
    got = s2s.pmap(s2s.grad(fn), axis_name="g", backend="cuda")(Y)
    assert_close(got, numeric_grad(lambda Z: one_device(Z, fn.__name__), (Y,), 0))
    cpu = s2s.pmap(s2s.grad(fn), axis_name="g", backend="cpu")(Y)
    np.testing.assert_allclose(got, cpu, rtol=1e-12)
