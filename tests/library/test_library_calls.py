"""Library calls as users write them (issue 40): tests/cases/library_cases.py's NumPy, SciPy,
scikit-learn and statsmodels calls through grad (against finite differences), vmap(grad)
(against a loop of grad) and jit(grad) (against grad).

A call s2s refuses today is listed in KNOWN_REFUSALS with the gist of its error: it must still be
refused that way (an s2s error or NotImplementedError naming what is missing, never a wrong
number), and an entry that starts passing fails the test until it is removed.

jit compiles one function per case (seconds each): CI compiles every JIT_EVERY-th case
(S2S_FULL_SWEEP=1 compiles them all).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("statsmodels")

import s2s  # noqa: E402
from cases import library_cases as L  # noqa: E402
from cases.fd import assert_close, numeric_grad  # noqa: E402

JIT_EVERY = 1 if os.environ.get("S2S_FULL_SWEEP") else 3

# (case, mode) -> a phrase of the refusal's message
KNOWN_REFUSALS: dict[tuple[str, str], str] = {
    ('cov_trace', 'jit'): 'Numba cannot compile the generated code for',
    ('cov_weighted_sum', 'jit'): 'Numba cannot compile the generated code for',
    ('corrcoef_sum', 'jit'): 'Numba cannot compile the generated code for',
    ('block_matrix', 'grad'): 's2s evaluates a generator expression where it stands, so a generator k',
    ('block_matrix', 'vmap'): 's2s evaluates a generator expression where it stands, so a generator k',
    ('block_matrix', 'jit'): 's2s evaluates a generator expression where it stands, so a generator k',
    ('average_axis', 'jit'): 's2s has no compiled version of its helper `average_vjp_a` for these ar',
    ('i0_sum', 'grad'): 's2s does not support the attribute `.kind`',
    ('i0_sum', 'vmap'): 's2s does not support the attribute `.kind`',
    ('i0_sum', 'jit'): 's2s does not support the attribute `.kind`',
    ('polyfit_coeffs', 'grad'): 's2s does not support the attribute `.eps`',
    ('polyfit_coeffs', 'vmap'): 's2s does not support the attribute `.eps`',
    ('polyfit_coeffs', 'jit'): 's2s does not support the attribute `.eps`',
    ('mvn_logpdf', 'jit'): 'Numba cannot compile the generated code for',
    ('mvn_logpdf_mean', 'jit'): 'Numba cannot compile the generated code for',
    ('stats_entropy', 'grad'): '`entropy` is decorated: the wrapper `_axis_nan_policy_factory.<locals>',
    ('stats_entropy', 'vmap'): '`entropy` is decorated: the wrapper `_axis_nan_policy_factory.<locals>',
    ('stats_entropy', 'jit'): '`entropy` is decorated: the wrapper `_axis_nan_policy_factory.<locals>',
    ('stats_kl', 'grad'): '`entropy` is decorated: the wrapper `_axis_nan_policy_factory.<locals>',
    ('stats_kl', 'vmap'): '`entropy` is decorated: the wrapper `_axis_nan_policy_factory.<locals>',
    ('stats_kl', 'jit'): '`entropy` is decorated: the wrapper `_axis_nan_policy_factory.<locals>',
    ('signal_convolve_same', 'grad'): 'a tuple/list/dict has no attribute `.dtype` here',
    ('signal_convolve_same', 'vmap'): 'a tuple/list/dict has no attribute `.dtype` here',
    ('signal_convolve_same', 'jit'): 'a tuple/list/dict has no attribute `.dtype` here',
    ('solve_triangular_sum', 'grad'): '`solve_triangular` is decorated: the wrapper `_apply_over_batch.<local',
    ('solve_triangular_sum', 'vmap'): '`solve_triangular` is decorated: the wrapper `_apply_over_batch.<local',
    ('solve_triangular_sum', 'jit'): '`solve_triangular` is decorated: the wrapper `_apply_over_batch.<local',
    ('solve_triangular_matrix', 'grad'): '`solve_triangular` is decorated: the wrapper `_apply_over_batch.<local',
    ('solve_triangular_matrix', 'vmap'): '`solve_triangular` is decorated: the wrapper `_apply_over_batch.<local',
    ('solve_triangular_matrix', 'jit'): '`solve_triangular` is decorated: the wrapper `_apply_over_batch.<local',
    ('cho_solve_sum', 'grad'): '`cho_factor` is decorated: the wrapper `_apply_over_batch.<locals>.dec',
    ('cho_solve_sum', 'vmap'): '`cho_factor` is decorated: the wrapper `_apply_over_batch.<locals>.dec',
    ('cho_solve_sum', 'jit'): '`cho_factor` is decorated: the wrapper `_apply_over_batch.<locals>.dec',
    ('cho_solve_rhs', 'grad'): '`cho_factor` is decorated: the wrapper `_apply_over_batch.<locals>.dec',
    ('cho_solve_rhs', 'vmap'): '`cho_factor` is decorated: the wrapper `_apply_over_batch.<locals>.dec',
    ('cho_solve_rhs', 'jit'): '`cho_factor` is decorated: the wrapper `_apply_over_batch.<locals>.dec',
    ('expm_sum', 'grad'): 's2s spreads `*` only over tuples and lists built in the function or pa',
    ('expm_sum', 'vmap'): 's2s spreads `*` only over tuples and lists built in the function or pa',
    ('expm_sum', 'jit'): 's2s spreads `*` only over tuples and lists built in the function or pa',
    ('scipy_linalg_det_inv', 'grad'): 's2s does not support the attribute `.char`',
    ('scipy_linalg_det_inv', 'vmap'): 's2s does not support the attribute `.char`',
    ('scipy_linalg_det_inv', 'jit'): 's2s does not support the attribute `.char`',
    ('lu_solve_sum', 'grad'): '`lu_factor` is decorated: the wrapper `_apply_over_batch.<locals>.deco',
    ('lu_solve_sum', 'vmap'): '`lu_factor` is decorated: the wrapper `_apply_over_batch.<locals>.deco',
    ('lu_solve_sum', 'jit'): '`lu_factor` is decorated: the wrapper `_apply_over_batch.<locals>.deco',
    ('cubic_spline', 'grad'): 's2s cannot call `spline`, a function held in a local variable',
    ('cubic_spline', 'vmap'): 's2s cannot call `spline`, a function held in a local variable',
    ('cubic_spline', 'jit'): 's2s cannot call `spline`, a function held in a local variable',
    ('gp_rbf_kernel', 'grad'): 's2s cannot call `k`, a function held in a local variable',
    ('gp_rbf_kernel', 'vmap'): 's2s cannot call `k`, a function held in a local variable',
    ('gp_rbf_kernel', 'jit'): 's2s cannot call `k`, a function held in a local variable',
    ('add_constant_ls', 'vmap'): 's2s calls functions defined in the code it reads, but cannot hand one ',
    ('add_constant_ls', 'jit'): 'jit cannot compile add_constant_ls: Numba has no type for `add_constant`',
    ('cov2corr_sum', 'grad'): 's2s has no derivative rule for `Cov2CorrResult` and cannot read its so',
    ('cov2corr_sum', 'vmap'): 's2s has no derivative rule for `Cov2CorrResult` and cannot read its so',
    ('cov2corr_sum', 'jit'): 's2s has no derivative rule for `Cov2CorrResult` and cannot read its so',
    ('gradient_scalar_spacing', 'grad'): "bad call to gradient: got an unexpected keyword argument 'edge_order'",
    ('gradient_scalar_spacing', 'vmap'): "bad call to gradient: got an unexpected keyword argument 'edge_order'",
    ('gradient_scalar_spacing', 'jit'): "bad call to gradient: got an unexpected keyword argument 'edge_order'",
    ('average_returned', 'grad'): 'unexpected arguments to `np.average`: got an unexpected keyword argume',
    ('average_returned', 'vmap'): 'unexpected arguments to `np.average`: got an unexpected keyword argume',
    ('average_returned', 'jit'): 'unexpected arguments to `np.average`: got an unexpected keyword argume',
    ('interp_period', 'grad'): 's2s: np.interp with period= is not supported',
    ('interp_period', 'vmap'): 's2s: np.interp with period= is not supported',
    ('interp_period', 'jit'): 's2s: np.interp with period= is not supported',
    ('quantile_methods', 'grad'): 's2s differentiates np.quantile / np.percentile / np.median with the de',
    ('quantile_methods', 'vmap'): 's2s differentiates np.quantile / np.percentile / np.median with the de',
    ('quantile_methods', 'jit'): 's2s differentiates np.quantile / np.percentile / np.median with the de',
    ('mean_where', 'grad'): "unexpected arguments to `np.sum`: got an unexpected keyword argument '",
    ('mean_where', 'vmap'): "unexpected arguments to `np.sum`: got an unexpected keyword argument '",
    ('mean_where', 'jit'): "unexpected arguments to `np.sum`: got an unexpected keyword argument '",
    ('std_where', 'grad'): "unexpected arguments to `np.std`: got an unexpected keyword argument '",
    ('std_where', 'vmap'): "unexpected arguments to `np.std`: got an unexpected keyword argument '",
    ('std_where', 'jit'): "unexpected arguments to `np.std`: got an unexpected keyword argument '",
    ('einsum_optimize', 'jit'): 'Numba cannot compile the generated code for',
    ('max_initial', 'grad'): "unexpected arguments to `np.max`: got an unexpected keyword argument '",
    ('max_initial', 'vmap'): "unexpected arguments to `np.max`: got an unexpected keyword argument '",
    ('max_initial', 'jit'): "unexpected arguments to `np.max`: got an unexpected keyword argument '",
    ('logsumexp_return_sign', 'grad'): 'unexpected arguments to `logsumexp`: got an unexpected keyword argumen',
    ('logsumexp_return_sign', 'vmap'): 'unexpected arguments to `logsumexp`: got an unexpected keyword argumen',
    ('logsumexp_return_sign', 'jit'): 'unexpected arguments to `logsumexp`: got an unexpected keyword argumen',
}

IDS = [name for name, _, _ in L.CASES]


def _refused_as_recorded(name, mode, run):
    phrase = KNOWN_REFUSALS.get((name, mode))
    if phrase is None:
        return run()
    try:
        run()
    except AssertionError:
        raise
    except Exception as exc:      # noqa: BLE001 - the recorded refusal, checked below
        assert phrase in str(exc), f"{name} [{mode}] was refused with {phrase!r}; now: {exc}"
        return None
    pytest.fail(f"{name} [{mode}] passes now: remove it from KNOWN_REFUSALS")


def _grad(fn, name):
    return s2s.grad(fn, argnums=L.argnum(name))


@pytest.mark.parametrize("name, fn, make_args", L.CASES, ids=IDS)
def test_grad_matches_finite_differences(name, fn, make_args):
    args = make_args()

    def run():
        value, got = s2s.value_and_grad(fn, argnums=L.argnum(name))(*args)
        assert_close(value, fn(*args), rtol=1e-10, atol=1e-12, what=f"{name}'s value")   # (the library's own)
        want = numeric_grad(fn, args, L.argnum(name))
        assert_close(got, want, rtol=1e-5, atol=1e-6, what=name)
    _refused_as_recorded(name, "grad", run)


@pytest.mark.parametrize("name, fn, make_args", L.CASES, ids=IDS)
def test_vmap_of_grad_matches_a_loop(name, fn, make_args):
    args = make_args()
    k = L.argnum(name)
    x = np.asarray(args[k], dtype=float)
    batch = np.stack([x, x * 1.01 + 0.003, x * 0.99 - 0.002])
    in_axes = tuple(0 if i == k else None for i in range(len(args)))

    def run():
        got = s2s.vmap(_grad(fn, name), in_axes=in_axes)(*[batch if i == k else a for i, a in enumerate(args)])
        want = np.stack([_grad(fn, name)(*[b if i == k else a for i, a in enumerate(args)]) for b in batch])
        assert_close(got, want, rtol=1e-10, atol=1e-10, what=name)
    _refused_as_recorded(name, "vmap", run)


JIT_CASES = L.CASES[::JIT_EVERY]


@pytest.mark.parametrize("name, fn, make_args", JIT_CASES, ids=[c[0] for c in JIT_CASES])
def test_jit_grad_equals_grad(name, fn, make_args):
    args = make_args()

    def run():
        got = s2s.jit(_grad(fn, name))(*args)
        want = _grad(fn, name)(*args)
        assert_close(got, want, rtol=1e-10, atol=1e-10, what=name)
    _refused_as_recorded(name, "jit", run)


FIRST_CALL_CHILD = """
import numpy as np, s2s
from cases import library_cases as L
for name, fn, make_args in L.CASES:
    if name in ("mae_of", "log_loss_of"):
        args = make_args()
        got = s2s.jit(s2s.grad(fn))(*args)          # the first thing this process does
        assert np.allclose(got, s2s.grad(fn)(*args), rtol=1e-10, atol=1e-12), name
print("ok")
"""


def test_regression_jit_of_a_library_call_first_in_a_fresh_process(tmp_path):
    """jit(grad(f)) of a scikit-learn metric as a process's first call raised RuntimeError
    ('dictionary changed size during iteration'): the cache key's walk of f's globals read a
    scikit-learn attribute that imported a module lazily, into the dict being read."""
    import subprocess
    import sys

    from cases import paths
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=paths.pythonpath())
    res = subprocess.run([sys.executable, "-c", FIRST_CALL_CHILD], env=env, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stdout[-2000:] + res.stderr[-3000:]
