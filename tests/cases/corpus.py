"""Differentiable test corpus for s2s: plain NumPy functions and their inputs.

Every function is defined at module level (or returned by a module-level
factory, for closures) so that ``inspect.getsource`` finds it. Nothing here
imports s2s: each function must run, and be checked, under plain NumPy.

Registries (each ``args_factory(rng)`` returns a fresh tuple of float64 inputs,
kept away from points where the function is not differentiable, so that central
finite differences with steps of ~1e-6 are valid):

* ``CASES``         ``(fn, args_factory, argnums)``, ``fn`` returns a scalar.
* ``AUX_CASES``     ``(fn, args_factory, argnums)``, ``fn`` returns ``(scalar, aux)``.
* ``VJP_CASES``     ``(fn, args_factory)``, ``fn`` returns an array; checked with ``s2s.vjp``.
* ``SCALAR_CASES``  ``(fn, args_factory, argnum)``, ``args[argnum]`` is a float and
  ``fn`` is smooth in it near the inputs, for second derivatives
  (``grad(grad(f))``); each function also appears in ``CASES``.

The ``@s2s.grad`` decorator case lives in ``corpus_decorated.py``: it needs s2s at
import time, and this module must import without the compiler.

The programs themselves are in corpus_arrays.py and corpus_flow.py (imported here, so
``corpus.<name>`` reaches each of them); the has_aux and vjp programs are below, beside their
registries.
"""
from __future__ import annotations

import numpy as np

from cases.corpus_arrays import *  # noqa: F401,F403  (the registries below name every program)
from cases.corpus_flow import *  # noqa: F401,F403


# ---------------------------------------------------------------------------
# Input helpers (not under test)
# ---------------------------------------------------------------------------

def _u(rng, lo, hi, shape=None):
    if shape is None:
        return float(rng.uniform(lo, hi))
    return rng.uniform(lo, hi, size=shape)


def _away(rng, lo, hi, shape=None, points=(0.0,), margin=0.1):
    """Uniform samples in [lo, hi] at least ``margin`` away from every point."""
    out = np.asarray(rng.uniform(lo, hi, size=shape), dtype=np.float64)
    for _ in range(1000):
        bad = np.zeros(out.shape, dtype=bool)
        for p in points:
            bad |= np.abs(out - p) < margin
        if not bad.any():
            break
        out = np.where(bad, rng.uniform(lo, hi, size=out.shape), out)
    else:  # pragma: no cover - sampling ranges are chosen so this never happens
        raise RuntimeError("could not sample away from kinks")
    return float(out) if shape is None else out


def _nonzero(rng, shape, lo=0.2, hi=1.5):
    """Entries with random sign and magnitude in [lo, hi] (away from 0)."""
    signs = np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0)
    return signs * rng.uniform(lo, hi, size=shape)


def _distinct(rng, shape, gap=0.05):
    """Random values whose pairwise gaps are all >= ``gap`` (no ties for max/min)."""
    n = int(np.prod(shape))
    steps = rng.uniform(gap, 3 * gap, size=n)
    vals = np.cumsum(steps) - np.sum(steps) / 2.0
    return rng.permutation(vals).reshape(shape)


def _pm1(rng, n):
    return np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)


# ---------------------------------------------------------------------------
# Special-purpose input factories
# ---------------------------------------------------------------------------

def _softmax_inputs(rng):
    return (rng.standard_normal((4, 3)), rng.standard_normal((6, 4)),
            np.eye(3)[rng.integers(0, 3, size=6)])


def _two_apart(rng, n, gap=0.1):
    x = rng.standard_normal(n)
    d = _nonzero(rng, n, gap, 1.0)
    return x, x + d


def _shifted(rng, n, sign):
    """Normal samples with the sum clearly of the given sign."""
    x = rng.standard_normal(n)
    return x - np.mean(x) + sign * rng.uniform(0.3, 1.0)


def _first_sign(rng, n, sign):
    x = rng.standard_normal(n)
    x[0] = sign * rng.uniform(0.3, 1.5)
    return x


def _while_input(rng):
    # iterate s <- 1.5 s + x from s = 1 until s >= 10; keep the final s away from 10
    for _ in range(1000):
        x = float(rng.uniform(0.1, 2.0))
        s = 1.0
        prev = s
        while s < 10.0:
            prev = s
            s = s * 1.5 + x
        if s > 10.05 and prev < 9.95:
            return x
    raise RuntimeError("no input for cf_while_data_dependent")


def _break_input(rng):
    # partial sums of squares must stay away from the threshold 2.0
    for _ in range(1000):
        x = rng.uniform(-1.2, 1.2, size=8)
        c = np.cumsum(x ** 2)
        if np.all(np.abs(c - 2.0) > 0.05) and c[-1] > 2.5:
            return x
    raise RuntimeError("no input for cf_break")


def _early_loop_input(rng):
    for _ in range(1000):
        x = rng.uniform(-0.5, 1.0, size=6)
        c = np.cumsum(x)
        if np.all(np.abs(c - 1.5) > 0.05) and np.any(c > 1.5):
            return x
    raise RuntimeError("no input for cf_early_return_in_loop")


def _loop_bound_input(rng):
    x = _nonzero(rng, 6)
    x[:4] = np.abs(x[:4])  # at least 4 positives, at most 6 -> i + 1 may reach 6
    x[-1] = -abs(x[-1])   # so at most 5 positives and x[i + 1] stays in range
    return x


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

CASES = [
    # arithmetic
    (arith_scalar_two_args, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), (0, 1)),
    (arith_rational, lambda r: (_u(r, -2, 2),), 0),
    (arith_unary_minus, lambda r: (r.standard_normal(5),), 0),
    (arith_int_constants, lambda r: (_u(r, -2, 2),), 0),
    (arith_reflected_ops, lambda r: (_u(r, 0.5, 2.0, 5),), 0),
    (arith_fractional_power, lambda r: (_u(r, 0.5, 2.0, 5),), 0),
    (arith_array_exponent, lambda r: (_u(r, 0.5, 2.0, 4), _u(r, -1.5, 2.5, 4)), (0, 1)),
    (arith_matmul_operator, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (arith_if_sign, lambda r: (_away(r, -2, 2),), 0),
    (arith_augassign_scalar, lambda r: (_u(r, -2, 2),), 0),
    (arith_augassign_array, lambda r: (r.standard_normal(6),), 0),
    (arith_tuple_unpack_swap, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), (0, 1)),
    (arith_chained_comparison,
     lambda r: (_away(r, -2.0, 2.0, 12, points=(-1.0, 0.0, 1.0)),), 0),
    (arith_comparison_mask, lambda r: (_away(r, -1.5, 1.5, 8, points=(-0.3, 0.3)),), 0),
    (arith_bool_ops, lambda r: (_away(r, -2, 2), _away(r, -2, 2)), (0, 1)),
    (arith_is_none_default, lambda r: (r.standard_normal(4),), 0),
    # elementwise
    (ew_sin_cos, lambda r: (r.standard_normal(6),), 0),
    (ew_tan, lambda r: (_u(r, -1.0, 1.0, 6),), 0),
    (ew_exp_log, lambda r: (_u(r, 0.3, 3.0, 6),), 0),
    (ew_sqrt, lambda r: (_u(r, 0.3, 3.0, 6),), 0),
    (ew_tanh, lambda r: (r.standard_normal((2, 3)),), 0),
    (ew_abs, lambda r: (_away(r, -3, 3, 7, points=(0.0, 2.5)),), 0),
    (ew_maximum, lambda r: _two_apart(r, 6), (0, 1)),
    (ew_relu, lambda r: (_nonzero(r, 7),), 0),
    (ew_minimum, lambda r: _two_apart(r, 6), (0, 1)),
    (ew_where, lambda r: (_nonzero(r, 7),), 0),
    (ew_power, lambda r: (_u(r, 0.3, 2.0, 5),), 0),
    (ew_power_both, lambda r: (_u(r, 0.5, 2.0, 5), _u(r, -1.0, 2.0, 5)), (0, 1)),
    (ew_arctan, lambda r: (r.standard_normal(5),), 0),
    (ew_log1p_expm1, lambda r: (r.standard_normal(5),), 0),
    (ew_square, lambda r: (r.standard_normal((2, 2)),), 0),
    (ew_softplus, lambda r: (r.standard_normal(5),), 0),
    (ew_sigmoid_helper, lambda r: (r.standard_normal(5),), 0),
    (ew_composite, lambda r: (r.standard_normal(5),), 0),
    (bc_matrix_row, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (bc_matrix_column, lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))), (0, 1)),
    (bc_scalar, lambda r: (r.standard_normal((3, 4)), _u(r, 0.5, 1.5)), (0, 1)),
    (bc_row_minus_column, lambda r: (r.standard_normal((1, 4)), r.standard_normal((3, 1))),
     (0, 1)),
    (bc_outer_vectors, lambda r: (r.standard_normal(3), r.standard_normal(4)), (0, 1)),
    # reductions and methods
    (red_sum_axis0, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_sum_axis1_keepdims, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_mean_axis, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_mean_keepdims_variance, lambda r: (r.standard_normal((3, 4)),), 0),
    (red_max, lambda r: (_distinct(r, (3, 4)),), 0),
    (red_min, lambda r: (_distinct(r, (3, 4)),), 0),
    (red_prod, lambda r: (_nonzero(r, 5, 0.5, 1.5),), 0),
    (red_prod_axis, lambda r: (_nonzero(r, (3, 4), 0.5, 1.5),), 0),
    (red_sum_axis_none, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_sum, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_mean_max, lambda r: (_distinct(r, (3, 4)),), 0),
    (meth_reshape_transpose, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_reshape_flat, lambda r: (r.standard_normal((3, 4)),), 0),
    (meth_prod, lambda r: (_nonzero(r, 5, 0.5, 1.5),), 0),
    # linear algebra
    (la_dot_vv, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (la_dot_mv, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (la_dot_mm, lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2))), (0, 1)),
    (la_matmul_mm, lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2))), (0, 1)),
    (la_matmul_mv, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (la_at_vv, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (la_at_vm, lambda r: (r.standard_normal(3), r.standard_normal((3, 4))), (0, 1)),
    (la_at_mm, lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2))), (0, 1)),
    (la_quadratic_form, lambda r: (r.standard_normal((4, 4)), r.standard_normal(4)), (0, 1)),
    (la_np_reshape, lambda r: (r.standard_normal(12),), 0),
    (la_np_transpose, lambda r: (r.standard_normal((3, 4)),), 0),
    (la_transpose_axes, lambda r: (r.standard_normal((2, 3, 4)),), 0),
    # indexing reads
    (idx_int, lambda r: (r.standard_normal(5),), 0),
    (idx_slices, lambda r: (r.standard_normal(8),), 0),
    (idx_reverse, lambda r: (r.standard_normal(6),), 0),
    (idx_row_loop, lambda r: (r.standard_normal((3, 4)),), 0),
    (idx_column, lambda r: (r.standard_normal((3, 4)),), 0),
    (idx_ellipsis, lambda r: (r.standard_normal((2, 3, 4)),), 0),
    (idx_newaxis, lambda r: (r.standard_normal(4),), 0),
    (idx_2d_slices, lambda r: (r.standard_normal((3, 4)),), 0),
    # indexing writes
    (iw_zeros_set, lambda r: (r.standard_normal(3),), 0),
    (iw_zeros_add, lambda r: (r.standard_normal(4),), 0),
    (iw_slice_set, lambda r: (r.standard_normal(5),), 0),
    (iw_zeros_like, lambda r: (r.standard_normal(5),), 0),
    (iw_copy_overwrite, lambda r: (r.standard_normal(4),), 0),
    (iw_copy_method, lambda r: (r.standard_normal(5),), 0),
    (iw_empty_filled, lambda r: (r.standard_normal(5),), 0),
    (iw_overwrite_used_value, lambda r: (r.standard_normal(2),), 0),
    (iw_overwrite_in_loop, lambda r: (_u(r, -1.0, 1.0, 6),), 0),
    (iw_rows_of_matrix, lambda r: (r.standard_normal(4),), 0),
    (iw_cumsum_loop, lambda r: (r.standard_normal(6),), 0),
    (iw_derived_array, lambda r: (r.standard_normal(5),), 0),
    (iw_matrix_nested_loops, lambda r: (r.standard_normal(4),), 0),
    (iw_scaled_row_update, lambda r: (_u(r, 0.5, 1.5, (3, 4)),), 0),
    (iw_accumulate_repeated_index, lambda r: (r.standard_normal(6),), 0),
    # control flow
    (cf_if_on_sum, lambda r: (_shifted(r, 5, +1.0),), 0),
    (cf_if_on_sum_negative, lambda r: (_shifted(r, 5, -1.0),), 0),
    (cf_if_elif_else, lambda r: (_away(r, -2.5, 2.5, 10, points=(-1.0, 1.0)),), 0),
    (cf_if_no_else, lambda r: (_away(r, -1.0, 1.5, 5, points=(0.5,)),), 0),
    (cf_for_range, lambda r: (r.standard_normal(6),), 0),
    (cf_range_start_stop_step, lambda r: (r.standard_normal(7),), 0),
    (cf_range_negative_step, lambda r: (r.standard_normal(6),), 0),
    (cf_for_rows, lambda r: (r.standard_normal((4, 3)),), 0),
    (cf_for_elements, lambda r: (_u(r, -1.5, 1.5, 5),), 0),
    (cf_nested_loops, lambda r: (r.standard_normal((4, 4)),), 0),
    (cf_while_data_dependent, lambda r: (_while_input(r),), 0),
    (cf_while_counter, lambda r: (r.standard_normal(5),), 0),
    (cf_while_true_break, lambda r: (_u(r, -2, 2),), 0),
    (cf_break, lambda r: (_break_input(r),), 0),
    (cf_continue, lambda r: (_nonzero(r, 8),), 0),
    (cf_early_return_branch, lambda r: (_first_sign(r, 5, +1.0),), 0),
    (cf_early_return_branch, lambda r: (_first_sign(r, 5, -1.0),), 0),
    (cf_early_return_in_loop, lambda r: (_early_loop_input(r),), 0),
    (cf_rnn, lambda r: (0.5 * r.standard_normal((4, 4)), r.standard_normal((4, 3)),
                        r.standard_normal((6, 3))), (0, 1, 2)),
    (cf_branchy_recurrence, lambda r: (_nonzero(r, 20, 0.05, 2.0),), 0),
    (cf_overwrite_in_loop, lambda r: (r.standard_normal(4),), 0),
    (cf_loop_scalar_branch, lambda r: (_away(r, 0.0, 1.5, points=(0.5,)),), 0),
    (cf_loop_powers, lambda r: (_u(r, -1.5, 1.5),), 0),
    (cf_loop_bound_from_data, lambda r: (_loop_bound_input(r),), 0),
    # helpers and closures
    (helper_simple, lambda r: (r.standard_normal(5),), 0),
    (helper_nested, lambda r: (r.standard_normal(5),), 0),
    (helper_early_return, lambda r: (_nonzero(r, 6),), 0),
    (helper_tuple_return, lambda r: (r.standard_normal(5),), 0),
    (helper_multiple_args, lambda r: (r.standard_normal(4), r.standard_normal(4)), (0, 1)),
    (helper_keyword_args, lambda r: (r.standard_normal(4), r.standard_normal(4)), (0, 1)),
    (helper_called_twice, lambda r: (r.standard_normal(4),), 0),
    (helper_scalar_early, lambda r: (_away(r, -1.0, 2.5, points=(0.0, 1.0)),), 0),
    (closure_scaled_sum, lambda r: (r.standard_normal(5),), 0),
    (closure_weighted, lambda r: (r.standard_normal(5),), 0),
    # lists and tuples
    (list_parts, lambda r: (r.standard_normal(5),), 0),
    (tuple_build_unpack, lambda r: (r.standard_normal(4), r.standard_normal(4)), (0, 1)),
    (list_index_loop, lambda r: (r.standard_normal(4),), 0),
    (tuple_index, lambda r: (_nonzero(r, 4, 0.5, 1.5),), 0),
    # argnums variants
    (multi_weighted_norm, lambda r: (r.standard_normal(4), r.standard_normal(4)), 1),
    (multi_weighted_norm, lambda r: (r.standard_normal(4), r.standard_normal(4)), 0),
    (multi_three_args, lambda r: (r.standard_normal(3), r.standard_normal(3), _u(r, -1, 1)),
     (0, 2)),
    (multi_three_args, lambda r: (r.standard_normal(3), r.standard_normal(3), _u(r, -1, 1)),
     (1, 2)),
    (multi_reversed_order, lambda r: (r.standard_normal(4), r.standard_normal(4)), (1, 0)),
    (multi_unused_argument, lambda r: (r.standard_normal(3), r.standard_normal((2, 2))), (0, 1)),
    # closed forms
    (closed_sum_squares, lambda r: (r.standard_normal(5),), 0),
    (closed_sum_sin, lambda r: (r.standard_normal(5),), 0),
    (closed_max, lambda r: (_distinct(r, (6,)),), 0),
    (closed_abs, lambda r: (_nonzero(r, 6),), 0),
    (poly_quartic, lambda r: (_u(r, -2, 2),), 0),
    # scalar inputs given as a 0-d array and as a NumPy float
    (arith_rational, lambda r: (np.array(_u(r, -2, 2)),), 0),
    (smooth_scalar_mix, lambda r: (np.float64(_u(r, -2, 2)),), 0),
    # realistic
    (logistic_regression_loss, lambda r: (r.standard_normal(3), r.standard_normal((10, 3)),
                                          _pm1(r, 10)), (0, 1)),
    (logistic_regression_bias, lambda r: (r.standard_normal(3), _u(r, -0.5, 0.5),
                                          r.standard_normal((10, 3)),
                                          (r.uniform(size=10) < 0.5) * 1.0), (0, 1, 2)),
    (softmax_cross_entropy, _softmax_inputs, (0, 1)),
    (softmax_cross_entropy_helper, _softmax_inputs, (0, 1)),
    (mlp_tanh_loss, lambda r: (0.5 * r.standard_normal((3, 5)), 0.1 * r.standard_normal(5),
                               0.5 * r.standard_normal(5), _u(r, -0.2, 0.2),
                               r.standard_normal((8, 3)), r.standard_normal(8)),
     (0, 1, 2, 3)),
    (least_squares, lambda r: (r.standard_normal((6, 3)), r.standard_normal(3),
                               r.standard_normal(6)), (0, 1, 2)),
    (ridge_regression, lambda r: (r.standard_normal(3), _u(r, 0.1, 1.0),
                                  r.standard_normal((6, 3)), r.standard_normal(6)), (0, 1)),
    (logsumexp_stable, lambda r: (_distinct(r, (6,), 0.1) * 5.0,), 0),
    (rosenbrock, lambda r: (_u(r, -1.5, 1.5, 5),), 0),
    (rosenbrock_loop, lambda r: (_u(r, -1.5, 1.5, 5),), 0),
    (gaussian_log_likelihood, lambda r: (_u(r, -1, 1), _u(r, -0.5, 0.5),
                                         r.standard_normal(10)), (0, 1, 2)),
    (horner_polynomial, lambda r: (r.standard_normal(5), _u(r, -1.5, 1.5)), (0, 1)),
    (cumulative_product_loop, lambda r: (_u(r, -1.5, 1.5, 6),), 0),
    (euler_ode, lambda r: (_u(r, 0.5, 2.0), _u(r, -1.0, 1.0)), (0, 1)),
    (euler_ode_linear_system, lambda r: (0.5 * r.standard_normal((3, 3)),
                                         r.standard_normal(3)), (0, 1)),
    (huber_loss, lambda r: (_away(r, -3, 3, 8, points=(-1.0, 1.0, 0.0)),), 0),
    (layer_norm, lambda r: (r.standard_normal(6), r.standard_normal(6)), (0, 1)),
    (cosine_similarity, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (attention_scores, lambda r: (r.standard_normal((3, 4)), r.standard_normal((5, 4)),
                                  r.standard_normal((5, 2))), (0, 1, 2)),
    (kl_divergence_softmax, lambda r: (r.standard_normal(5), r.standard_normal(5)), (0, 1)),
    (gradient_descent_unrolled, lambda r: (r.standard_normal(3), 0.5 * r.standard_normal((6, 3)),
                                           r.standard_normal(6)), (0, 1, 2)),
    (smooth_scalar_mix, lambda r: (_u(r, -2, 2),), 0),
]


# ---------------------------------------------------------------------------
# has_aux functions: return (scalar loss, aux)
# ---------------------------------------------------------------------------

def aux_loss_and_predictions(w, X, y):
    pred = X @ w
    loss = np.mean((pred - y) ** 2)
    return loss, pred


def aux_loss_and_tuple(x):
    loss = np.sum(np.sin(x) ** 2)
    return loss, (np.max(x), x * 2.0)


def aux_loss_with_loop(x):
    s = 0.0
    count = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + x[i] ** 2
            count += 1
    return s, count


def aux_loss_and_float(a, b):
    loss = a * b ** 2 + np.sin(a)
    return loss, a + b


AUX_CASES = [
    (aux_loss_and_predictions, lambda r: (r.standard_normal(3), r.standard_normal((6, 3)),
                                          r.standard_normal(6)), 0),
    (aux_loss_and_tuple, lambda r: (r.standard_normal(5),), 0),
    (aux_loss_with_loop, lambda r: (_nonzero(r, 6),), 0),
    (aux_loss_and_float, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), (0, 1)),
]


# ---------------------------------------------------------------------------
# Non-scalar outputs, checked with vjp
# ---------------------------------------------------------------------------

def vjp_sin_times_x(x):
    return np.sin(x) * x


def vjp_matvec(A, x):
    return A @ x


def vjp_softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def vjp_outer(x, y):
    return x[:, None] * y[None, :]


def vjp_cumsum_loop(x):
    out = np.zeros_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        out[i] = s
    return out


def vjp_rnn_final_state(W, x):
    h = np.zeros(W.shape[0])
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t])
    return h


def vjp_row_normalize(X):
    return X / np.sum(X, axis=1, keepdims=True)


def vjp_branch(x):
    if np.sum(x) > 0:
        return x ** 2
    return np.exp(x)


VJP_CASES = [
    (vjp_sin_times_x, lambda r: (r.standard_normal(5),)),
    (vjp_matvec, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4))),
    (vjp_softmax, lambda r: (_distinct(r, (5,), 0.1),)),
    (vjp_outer, lambda r: (r.standard_normal(3), r.standard_normal(4))),
    (vjp_cumsum_loop, lambda r: (r.standard_normal(5),)),
    (vjp_rnn_final_state, lambda r: (0.5 * r.standard_normal((3, 3)), r.standard_normal((4, 3)))),
    (vjp_row_normalize, lambda r: (_u(r, 0.5, 1.5, (3, 4)),)),
    (vjp_branch, lambda r: (_shifted(r, 4, +1.0),)),
    (vjp_branch, lambda r: (_shifted(r, 4, -1.0),)),
]


# ---------------------------------------------------------------------------
# Scalar-in, scalar-out functions for grad(grad(f)) (argnum, all args scalar)
# ---------------------------------------------------------------------------

SCALAR_CASES = [
    (arith_rational, lambda r: (_u(r, -2, 2),), 0),
    (arith_int_constants, lambda r: (_u(r, -2, 2),), 0),
    (arith_if_sign, lambda r: (_away(r, -2, 2, points=(0.0,), margin=0.2),), 0),
    (arith_augassign_scalar, lambda r: (_u(r, -2, 2),), 0),
    (arith_tuple_unpack_swap, lambda r: (_u(r, -2, 2), _u(r, -2, 2)), 1),
    (cf_while_true_break, lambda r: (_u(r, -2, 2),), 0),
    (cf_loop_scalar_branch, lambda r: (_away(r, 0.0, 1.5, points=(0.5,), margin=0.2),), 0),
    (cf_loop_powers, lambda r: (_u(r, -1.5, 1.5),), 0),
    (helper_scalar_early, lambda r: (_away(r, -1.0, 2.5, points=(0.0, 1.0), margin=0.2),), 0),
    (euler_ode, lambda r: (_u(r, 0.5, 2.0), _u(r, -1.0, 1.0)), 0),
    (euler_ode, lambda r: (_u(r, 0.5, 2.0), _u(r, -1.0, 1.0)), 1),
    (smooth_scalar_mix, lambda r: (_u(r, -2, 2),), 0),
    (cf_while_data_dependent, lambda r: (_while_input(r),), 0),
    (poly_quartic, lambda r: (_u(r, -2, 2),), 0),
    (horner_polynomial, lambda r: (r.standard_normal(5), _u(r, -1.5, 1.5)), 1),
]


# ---------------------------------------------------------------------------
# Stable test ids and seeds
# ---------------------------------------------------------------------------

def case_ids(cases):
    """Function names, with ``-2``, ``-3``, ... appended to repeated names."""
    seen = {}
    ids = []
    for case in cases:
        name = case[0].__name__
        seen[name] = seen.get(name, 0) + 1
        ids.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return ids


def case_rng(case_id, salt=""):
    """A generator seeded from the case id, so inputs are the same on every run."""
    import zlib
    return np.random.default_rng(zlib.crc32(f"{salt}{case_id}".encode()))
