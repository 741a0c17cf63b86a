"""Issue 19: realistic NumPy programs, written the way people write them, under s2s.

Each module in this directory holds a few programs and a list ``CASES`` of dicts:

    name       id of the case (``<module>.<name>`` in test ids)
    fn         the function differentiated (a plain function, closure, lambda or bound method)
    args       ``args(seed) -> tuple`` of inputs (float64 arrays from np.random.default_rng)
    argnums    what ``s2s.grad`` differentiates (an int or a tuple; arguments may be pytrees)
    kwargs     (optional) keyword arguments passed at call time, to f and to the transformed f
    checks     which properties apply: "grad", "jit" (jit(grad(f))), "vmap" (vmap(grad(f)))
    in_axes    for "vmap": 0 (batched: a stack of the arguments of seeds 0, 1, 2) or None
    constructs the Python/NumPy constructs the program exercises (documentation only)

The checks (none can pass vacuously: the finite-difference gradient must be nonzero, and every
s2s answer is compared with finite differences computed independently of s2s, see harness.py):

    test_program_runs     f runs under plain NumPy, gives a finite scalar, and its FD gradient is
                          nonzero (no s2s involved: the corpus itself is sound)
    test_grad             s2s.grad(f, argnums)(*args, **kwargs) == FD (rtol 1e-6 per leaf), same
                          pytree structure, and the caller's arguments are unchanged afterwards
    test_jit_grad         s2s.jit(s2s.grad(f)) == s2s.grad(f) (rtol 1e-10) and == FD, arguments unchanged
    test_vmap_grad        s2s.vmap(s2s.grad(f), in_axes) over a batch of 3 == the per-example FD
                          gradients (a Python loop), arguments unchanged

A check that fails today is listed in ``KNOWN_FAILURES`` with the exception class s2s raises and
the first line of its message (for an s2s error, the line after the file/source lines; paths
relative to the repository root); it is marked ``xfail(strict=True, raises=<that class>)``, so the
file passes now. When s2s changes:
- a check that starts passing fails as XPASS(strict): remove its entry;
- a check that fails with another exception class, or with the same class but another first
  line (the construct it stopped at is supported now, and the next one is not), fails with
  ``KnownFailureChanged``, which names the new error: update its entry (this table is the work
  plan of issue 19, so it must say what blocks each program now).
Wrong answers (a gradient that disagrees with finite differences without an error) are listed
with ``AssertionError`` and a reason starting "WRONG ANSWER"; their message is not compared.
"""
from __future__ import annotations

import contextlib
import importlib
import os

import numpy as np
import pytest

import s2s
from s2s.errors import (ArgumentError, NoRuleError, RecursionNotSupportedError, SharedArrayError, TransformError,
                        UnsupportedSyntaxError)

from .harness import (assert_unchanged, batch_args, compare_trees, example_of, fd_grad, max_abs,
                      snapshot)

MODULES = ["rnn", "lstm", "neural_net", "mixtures", "hmm", "ica", "fluidsim", "logreg", "gp", "vi",
           "models", "idioms", "comprehensions", "numerics", "plain_style", "views"]

BATCH = 3
RTOL_FD = 1e-6
RTOL_JIT = 1e-10


def _load_cases():
    cases = []
    for mod_name in MODULES:
        mod = importlib.import_module(f"{__package__}.{mod_name}")
        for case in mod.CASES:
            case = dict(case)
            case["id"] = f"{mod_name}.{case['name']}"
            case.setdefault("kwargs", {})
            cases.append(case)
    return cases


CASES = _load_cases()


# (case id, check) -> (exception class, first line of the message). Filled from a run of this
# file against the current s2s; see the module docstring.
KNOWN_FAILURES: dict[tuple[str, str], tuple[type, str]] = {
    ('comprehensions.attention_genexp', 'grad'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('comprehensions.attention_genexp', 'jit'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('comprehensions.attention_genexp', 'vmap'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('comprehensions.conv1d_listcomp', 'grad'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.conv1d_listcomp', 'jit'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.conv1d_listcomp', 'vmap'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.coulomb_energy', 'grad'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.coulomb_energy', 'jit'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.coulomb_energy', 'vmap'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.nested_dict_comprehensions', 'grad'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('comprehensions.nested_dict_comprehensions', 'jit'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('comprehensions.nested_dict_comprehensions', 'vmap'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('comprehensions.poly_features_comp', 'grad'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.poly_features_comp', 'jit'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('comprehensions.poly_features_comp', 'vmap'): (UnsupportedSyntaxError, 's2s does not support list comprehensions'),
    ('fluidsim.fluid_objective', 'grad'): (UnsupportedSyntaxError, 's2s does not support imports inside the function'),
    ('fluidsim.fluid_objective', 'jit'): (UnsupportedSyntaxError, 's2s does not support imports inside the function'),
    ('fluidsim.fluid_objective', 'vmap'): (UnsupportedSyntaxError, 's2s does not support imports inside the function'),
    ('fluidsim.wave_loss', 'grad'): (UnsupportedSyntaxError, 's2s cannot call `callback`, a function held in a local variable'),
    ('fluidsim.wave_loss', 'jit'): (UnsupportedSyntaxError, 's2s cannot call `callback`, a function held in a local variable'),
    ('fluidsim.wave_loss', 'vmap'): (UnsupportedSyntaxError, 's2s cannot call `callback`, a function held in a local variable'),
    ('gp.gp_objective_lambda', 'grad'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('gp.gp_objective_lambda', 'jit'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('gp.gp_objective_lambda', 'vmap'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('hmm.hmm_scaled_forward', 'grad'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('hmm.hmm_scaled_forward', 'jit'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('hmm.hmm_scaled_forward', 'vmap'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('hmm.log_partition_function', 'grad'): (UnsupportedSyntaxError, 's2s cannot use the function `log_partition_function` as a value'),
    ('hmm.log_partition_function', 'jit'): (ValueError, 'setting an array element with a sequence. The requested array has an inhomogeneous shape after 1 dimensions. The detected shape was (3,) + inhomogeneous part.'),
    ('hmm.log_partition_function', 'vmap'): (UnsupportedSyntaxError, 's2s cannot use the function `log_partition_function` as a value'),
    ('ica.ica_loglik', 'grad'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('ica.ica_loglik', 'jit'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('ica.ica_loglik', 'vmap'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('ica.ica_objective', 'grad'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('ica.ica_objective', 'jit'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('ica.ica_objective', 'vmap'): (UnsupportedSyntaxError, 's2s cannot use the function `logpdf_self` as a value'),
    ('idioms.dict_mlp_loss', 'grad'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('idioms.dict_mlp_loss', 'jit'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('idioms.dict_mlp_loss', 'vmap'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('idioms.newton_sqrt_walrus', 'grad'): (UnsupportedSyntaxError, 's2s does not support `else` on loops'),
    ('idioms.newton_sqrt_walrus', 'jit'): (UnsupportedSyntaxError, 's2s does not support `else` on loops'),
    ('idioms.newton_sqrt_walrus', 'vmap'): (UnsupportedSyntaxError, 's2s does not support `else` on loops'),
    ('idioms.pinned_chain_write_arg', 'grad'): (UnsupportedSyntaxError, 's2s can differentiate indexed writes only into arrays created in the function; `x` may alias another array'),
    ('idioms.pinned_chain_write_arg', 'jit'): (UnsupportedSyntaxError, 's2s can differentiate indexed writes only into arrays created in the function; `x` may alias another array'),
    ('idioms.pinned_chain_write_arg', 'vmap'): (UnsupportedSyntaxError, 's2s can differentiate indexed writes only into arrays created in the function; `x` may alias another array'),
    ('idioms.poly_loss_sorted', 'grad'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('idioms.poly_loss_sorted', 'jit'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('idioms.poly_loss_sorted', 'vmap'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('idioms.reinforce_returns', 'grad'): (NoRuleError, 's2s has no rule for the method `.insert()`'),
    ('idioms.reinforce_returns', 'jit'): (NoRuleError, 's2s has no rule for the method `.insert()`'),
    ('idioms.reinforce_returns', 'vmap'): (NoRuleError, 's2s has no rule for the method `.insert()`'),
    ('idioms.robust_loss_try', 'grad'): (UnsupportedSyntaxError, 's2s does not support `try` statements'),
    ('idioms.robust_loss_try', 'jit'): (UnsupportedSyntaxError, 's2s does not support `try` statements'),
    ('idioms.robust_loss_try', 'vmap'): (UnsupportedSyntaxError, 's2s does not support `try` statements'),
    ('idioms.scaled_params_dictcomp', 'grad'): (UnsupportedSyntaxError, 's2s does not support dict comprehensions'),
    ('idioms.scaled_params_dictcomp', 'jit'): (UnsupportedSyntaxError, 's2s does not support dict comprehensions'),
    ('idioms.scaled_params_dictcomp', 'vmap'): (UnsupportedSyntaxError, 's2s does not support dict comprehensions'),
    ('idioms.verbose_loss_logging', 'grad'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('idioms.verbose_loss_logging', 'jit'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('idioms.verbose_loss_logging', 'vmap'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('idioms.weight_decay_map_filter', 'grad'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('idioms.weight_decay_map_filter', 'jit'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('idioms.weight_decay_map_filter', 'vmap'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('logreg.cross_entropy_errstate', 'grad'): (UnsupportedSyntaxError, 's2s does not support `with` statements'),
    ('logreg.cross_entropy_errstate', 'jit'): (UnsupportedSyntaxError, 's2s does not support `with` statements'),
    ('logreg.cross_entropy_errstate', 'vmap'): (UnsupportedSyntaxError, 's2s does not support `with` statements'),
    ('logreg.logistic_nll', 'grad'): (UnsupportedSyntaxError, 's2s does not support `raise` statements'),
    ('logreg.logistic_nll', 'jit'): (UnsupportedSyntaxError, 's2s does not support `raise` statements'),
    ('logreg.logistic_nll', 'vmap'): (UnsupportedSyntaxError, 's2s does not support `raise` statements'),
    ('logreg.probit_nll', 'grad'): (UnsupportedSyntaxError, 's2s cannot use the function `logcdf_self` as a value'),
    ('logreg.probit_nll', 'jit'): (UnsupportedSyntaxError, 's2s cannot use the function `logcdf_self` as a value'),
    ('logreg.probit_nll', 'vmap'): (UnsupportedSyntaxError, 's2s cannot use the function `logcdf_self` as a value'),
    ('lstm.gru_loss', 'grad'): (UnsupportedSyntaxError, 'keyword-only parameters are not supported in helpers'),
    ('lstm.gru_loss', 'jit'): (UnsupportedSyntaxError, 'keyword-only parameters are not supported in helpers'),
    ('lstm.gru_loss', 'vmap'): (UnsupportedSyntaxError, 'keyword-only parameters are not supported in helpers'),
    ('lstm.gru_loss_forward_kw', 'grad'): (ArgumentError, 'gru_loss_grad: s2s passes arguments by position, and `reverse` cannot be one'),
    ('lstm.gru_loss_forward_kw', 'jit'): (ArgumentError, 'gru_loss_grad_jit: s2s passes arguments by position, and `reverse` cannot be one'),
    ('lstm.gru_loss_forward_kw', 'vmap'): (TypeError, "Batched.__call__() got an unexpected keyword argument 'reverse'"),
    ('lstm.lstm_log_likelihood', 'grad'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('lstm.lstm_log_likelihood', 'jit'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('lstm.lstm_log_likelihood', 'vmap'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('mixtures.gmm_log_likelihood', 'grad'): (UnsupportedSyntaxError, 's2s does not support *args in calls'),
    ('mixtures.gmm_log_likelihood', 'jit'): (UnsupportedSyntaxError, 's2s does not support *args in calls'),
    ('mixtures.gmm_log_likelihood', 'vmap'): (UnsupportedSyntaxError, 's2s does not support *args in calls'),
    ('mixtures.mog1d_nll', 'grad'): (UnsupportedSyntaxError, 's2s does not support *args in calls'),
    ('mixtures.mog1d_nll', 'jit'): (UnsupportedSyntaxError, 's2s does not support *args in calls'),
    ('mixtures.mog1d_nll', 'vmap'): (UnsupportedSyntaxError, 's2s does not support *args in calls'),
    ('mixtures.t_mixture_nll', 'grad'): (UnsupportedSyntaxError, 's2s does not support dict comprehensions'),
    ('mixtures.t_mixture_nll', 'jit'): (UnsupportedSyntaxError, 's2s does not support dict comprehensions'),
    ('mixtures.t_mixture_nll', 'vmap'): (UnsupportedSyntaxError, 's2s does not support dict comprehensions'),
    ('models.LinearRegression.loss', 'jit'): (TransformError, 'jit cannot compile loss: it reads attributes or calls methods of a Python object (LinearRegression) when it runs, and Numba has no type for such objects'),
    ('models.TwoLayerNet.loss', 'grad'): (UnsupportedSyntaxError, 's2s cannot use the function `loss_self` as a value'),
    ('models.TwoLayerNet.loss', 'jit'): (UnsupportedSyntaxError, 's2s cannot use the function `loss_self` as a value'),
    ('models.TwoLayerNet.loss', 'vmap'): (UnsupportedSyntaxError, 's2s cannot use the function `loss_self` as a value'),
    ('models.affine_loss', 'grad'): (UnsupportedSyntaxError, 's2s cannot call `layer`, a function held in a local variable'),
    ('models.affine_loss', 'jit'): (UnsupportedSyntaxError, 's2s cannot call `layer`, a function held in a local variable'),
    ('models.affine_loss', 'vmap'): (UnsupportedSyntaxError, 's2s cannot call `layer`, a function held in a local variable'),
    ('models.huber_regression_loss', 'grad'): (UnsupportedSyntaxError, 's2s does not support the attribute `.huber_delta`'),
    ('models.huber_regression_loss', 'jit'): (UnsupportedSyntaxError, 's2s does not support the attribute `.huber_delta`'),
    ('neural_net.log_posterior', 'grad'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('neural_net.log_posterior', 'jit'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('neural_net.log_posterior', 'vmap'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('neural_net.mlp_list_loss', 'grad'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('neural_net.mlp_list_loss', 'jit'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('neural_net.mlp_list_loss', 'vmap'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('neural_net.regression_loss_default', 'grad'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('neural_net.regression_loss_default', 'jit'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('neural_net.regression_loss_default', 'vmap'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('neural_net.regression_loss_kwargs', 'grad'): (ArgumentError, 'regression_loss_grad: s2s passes arguments by position, and `kwargs` cannot be one'),
    ('neural_net.regression_loss_kwargs', 'jit'): (ArgumentError, 'regression_loss_grad_jit: s2s passes arguments by position, and `kwargs` cannot be one'),
    ('neural_net.regression_loss_kwargs', 'vmap'): (TypeError, "Batched.__call__() got an unexpected keyword argument 'activation'"),
    ('neural_net.resnet_loss', 'grad'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('neural_net.resnet_loss', 'jit'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('neural_net.resnet_loss', 'vmap'): (UnsupportedSyntaxError, 's2s does not support lambdas inside a differentiated function'),
    ('neural_net.vae_loss', 'grad'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('neural_net.vae_loss', 'jit'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('neural_net.vae_loss', 'vmap'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('numerics.chebyshev_recursion', 'grad'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('numerics.chebyshev_recursion', 'jit'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('numerics.chebyshev_recursion', 'vmap'): (UnsupportedSyntaxError, 's2s does not support generator expressions'),
    ('numerics.lotka_volterra_rk4', 'grad'): (UnsupportedSyntaxError, 's2s cannot use the function `lotka_volterra` as a value'),
    ('numerics.lotka_volterra_rk4', 'jit'): (UnsupportedSyntaxError, 's2s cannot use the function `lotka_volterra` as a value'),
    ('numerics.lotka_volterra_rk4', 'vmap'): (UnsupportedSyntaxError, 's2s cannot use the function `lotka_volterra` as a value'),
    ('numerics.matrix_factorization_mask', 'jit'): (TransformError, 'Numba cannot compile the generated code for tests/real/numerics.py:142 (mf_loss) in nopython mode: AssertionError (generated line: `err = t3[mask]`)'),
    ('numerics.pendulum_while_else', 'grad'): (UnsupportedSyntaxError, 's2s does not support imports inside the function'),
    ('numerics.pendulum_while_else', 'jit'): (UnsupportedSyntaxError, 's2s does not support imports inside the function'),
    ('numerics.pendulum_while_else', 'vmap'): (UnsupportedSyntaxError, 's2s does not support imports inside the function'),
    ('numerics.tree_recursion', 'grad'): (RecursionNotSupportedError, 'recursive call (tree_loss -> tree_reduce -> tree_reduce): s2s inlines helper functions and cannot inline recursion'),
    ('numerics.tree_recursion', 'jit'): (RecursionNotSupportedError, 'recursive call (tree_loss -> tree_reduce -> tree_reduce): s2s inlines helper functions and cannot inline recursion'),
    ('numerics.tree_recursion', 'vmap'): (RecursionNotSupportedError, 'recursive call (tree_loss -> tree_reduce -> tree_reduce): s2s inlines helper functions and cannot inline recursion'),
    ('numerics.tsne_fill_diagonal', 'grad'): (NoRuleError, 's2s has no derivative rule for `np.fill_diagonal` (numpy.fill_diagonal) and cannot read its source'),
    ('numerics.tsne_fill_diagonal', 'jit'): (NoRuleError, 's2s has no derivative rule for `np.fill_diagonal` (numpy.fill_diagonal) and cannot read its source'),
    ('numerics.tsne_fill_diagonal', 'vmap'): (NoRuleError, 's2s has no derivative rule for `np.fill_diagonal` (numpy.fill_diagonal) and cannot read its source'),
    ('numerics.unrolled_sgd', 'grad'): (NoRuleError, 's2s has no rule for the method `.append()`'),
    ('numerics.unrolled_sgd', 'jit'): (NoRuleError, 's2s has no rule for the method `.append()`'),
    ('numerics.unrolled_sgd', 'vmap'): (NoRuleError, 's2s has no rule for the method `.append()`'),
    ('rnn.rnn_log_likelihood', 'grad'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('rnn.rnn_log_likelihood', 'jit'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('rnn.rnn_log_likelihood', 'vmap'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('rnn.rnn_regression_loss', 'grad'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('rnn.rnn_regression_loss', 'jit'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('rnn.rnn_regression_loss', 'vmap'): (UnsupportedSyntaxError, 's2s does not support nested function definitions'),
    ('vi.bbvi_objective', 'grad'): (NoRuleError, 's2s has no derivative rule for `np.random.RandomState` (numpy.random.mtrand.RandomState) and cannot read its source'),
    ('vi.bbvi_objective', 'jit'): (NoRuleError, 's2s has no derivative rule for `np.random.RandomState` (numpy.random.mtrand.RandomState) and cannot read its source'),
    ('vi.bbvi_objective', 'vmap'): (NoRuleError, 's2s has no derivative rule for `np.random.RandomState` (numpy.random.mtrand.RandomState) and cannot read its source'),
    ('vi.elbo_dict', 'grad'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('vi.elbo_dict', 'jit'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('vi.elbo_dict', 'vmap'): (UnsupportedSyntaxError, 's2s does not support *args / **kwargs parameters'),
    ('plain_style.bidirectional_rnn', 'jit'): (TransformError, 'Numba cannot compile the generated code for tests/real/plain_style.py:212 (bidirectional_rnn_loss) in nopython mode: AssertionError (generated line: `tape_v_x_bidirectional_rnn_loss.append(x_bidirectional_rnn_loss)`)'),
    ('views.boundary_rows', 'grad'): (SharedArrayError, "`top = grid[0]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`grid[0].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.boundary_rows', 'jit'): (SharedArrayError, "`top = grid[0]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`grid[0].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.boundary_rows', 'vmap'): (SharedArrayError, "`top = grid[0]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`grid[0].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.box_bounds', 'grad'): (SharedArrayError, "`lower, upper = box` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`box.copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.box_bounds', 'jit'): (SharedArrayError, "`lower, upper = box` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`box.copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.box_bounds', 'vmap'): (SharedArrayError, "`lower, upper = box` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`box.copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.row_energies', 'grad'): (SharedArrayError, "`row = A[i]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`A[i].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.row_energies', 'jit'): (SharedArrayError, "`row = A[i]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`A[i].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.row_energies', 'vmap'): (SharedArrayError, "`row = A[i]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`A[i].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
}


def _params(check):
    out = []
    for case in CASES:
        if check != "runs" and check not in case["checks"]:
            continue
        marks = []
        known = KNOWN_FAILURES.get((case["id"], check))
        if known is not None:
            cls, message = known
            marks.append(pytest.mark.xfail(strict=True, raises=cls, reason=f"{cls.__name__}: {message}"))
        out.append(pytest.param(case, id=case["id"], marks=marks))
    return out


class KnownFailureChanged(Exception):
    """A check listed in KNOWN_FAILURES failed, but not as recorded: update its entry."""


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _first_line(exc):
    text = getattr(exc, "message", None) or str(exc)
    lines = text.strip().splitlines()
    return (lines[0] if lines else "").replace(_ROOT, "")


@contextlib.contextmanager
def _as_recorded(case, check):
    """Let a known failure through only if it is the recorded one (class and first line)."""
    known = KNOWN_FAILURES.get((case["id"], check))
    try:
        yield
    except Exception as exc:
        if known is None:
            raise
        cls, message = known
        if type(exc) is not cls or (cls is not AssertionError and _first_line(exc) != message):
            raise KnownFailureChanged(
                f"{case['id']} [{check}] was recorded as failing with {cls.__name__}: {message}\n"
                f"now it fails with {type(exc).__name__}: {_first_line(exc)}\n"
                f"update KNOWN_FAILURES in {__file__}") from exc
        raise


_FD_CACHE: dict = {}


def _fd(case, args, key):
    """FD gradient of the case at ``args`` (cached per process by ``key``)."""
    k = (case["id"], key)
    if k not in _FD_CACHE:
        _FD_CACHE[k] = fd_grad(case["fn"], args, case["argnums"], case["kwargs"], step=case.get("fd_step", 1e-4))
    return _FD_CACHE[k]


def _nonvacuous(expected, what):
    assert max_abs(expected) > 1e-6, f"{what}: the finite-difference gradient is zero; the check would be vacuous"


# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _params("runs"))
def test_program_runs(case):
    args = case["args"](0)
    value = np.asarray(case["fn"](*snapshot(args)[0], **case["kwargs"]), dtype=np.float64)
    assert value.shape == () and np.isfinite(value)
    _nonvacuous(_fd(case, args, 0), case["id"])


@pytest.mark.parametrize("case", _params("grad"))
def test_grad(case):
    args = case["args"](0)
    before = snapshot(args, case["kwargs"])
    expected = _fd(case, args, 0)
    _nonvacuous(expected, case["id"])
    with _as_recorded(case, "grad"):
        got = s2s.grad(case["fn"], argnums=case["argnums"])(*args, **case["kwargs"])
        assert_unchanged(before, args, case["kwargs"])
        compare_trees(got, expected, RTOL_FD, f"grad of {case['id']} vs finite differences")


@pytest.mark.parametrize("case", _params("jit"))
def test_jit_grad(case):
    args = case["args"](0)
    before = snapshot(args, case["kwargs"])
    expected = _fd(case, args, 0)
    _nonvacuous(expected, case["id"])
    with _as_recorded(case, "jit"):
        got = s2s.jit(s2s.grad(case["fn"], argnums=case["argnums"]))(*args, **case["kwargs"])
        assert_unchanged(before, args, case["kwargs"])
        compare_trees(got, expected, RTOL_FD, f"jit(grad) of {case['id']} vs finite differences")
        reference = s2s.grad(case["fn"], argnums=case["argnums"])(*args, **case["kwargs"])
        compare_trees(got, reference, RTOL_JIT, f"jit(grad) of {case['id']} vs grad")


@pytest.mark.parametrize("case", _params("vmap"))
def test_vmap_grad(case):
    in_axes = case["in_axes"]
    batched, examples = batch_args(case["args"], in_axes, BATCH)
    before = snapshot(batched, case["kwargs"])
    expected = []
    for b in range(BATCH):
        ex_args = tuple(examples[b][i] if axis == 0 else examples[0][i] for i, axis in enumerate(in_axes))
        expected.append(_fd(case, ex_args, ("vmap", b)))
        _nonvacuous(expected[b], f"{case['id']} example {b}")
    with _as_recorded(case, "vmap"):
        got = s2s.vmap(s2s.grad(case["fn"], argnums=case["argnums"]), in_axes=in_axes)(*batched, **case["kwargs"])
        assert_unchanged(before, batched, case["kwargs"])
        for b in range(BATCH):
            compare_trees(example_of(got, b), expected[b], RTOL_FD,
                          f"vmap(grad) of {case['id']}, example {b}, vs finite differences")


def test_known_failures_table_is_consistent():
    """Every entry names an existing case and one of its checks, once (a repeated key in the dict
    literal would silently replace the first), with an exception class and a message."""
    import ast
    ids = {case["id"]: case for case in CASES}
    for (case_id, check), (cls, message) in KNOWN_FAILURES.items():
        assert case_id in ids, f"KNOWN_FAILURES names a case that does not exist: {case_id}"
        assert check in ids[case_id]["checks"], f"{case_id}: {check} is not one of its checks"
        assert isinstance(cls, type) and issubclass(cls, Exception) and message
    with open(__file__) as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "KNOWN_FAILURES":
            keys = [ast.literal_eval(k) for k in node.value.keys]
            repeated = {k for k in keys if keys.count(k) > 1}
            assert not repeated, f"KNOWN_FAILURES lists these keys more than once: {sorted(repeated)}"
            break
    else:
        raise AssertionError("KNOWN_FAILURES not found")
