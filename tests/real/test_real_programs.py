"""Realistic NumPy programs, written the way people write them, under s2s.

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
  plan for these programs, so it must say what blocks each program now).
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
from s2s.errors import (ArgumentError, RecursionNotSupportedError, SharedArrayError, TransformError,
                        UnsupportedSyntaxError)
from s2s.runtime.effects import EffectError

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
    ('neural_net.vae_loss', 'grad'): (UnsupportedSyntaxError, 'unsupported assignment target'),
    ('neural_net.vae_loss', 'jit'): (UnsupportedSyntaxError, 'unsupported assignment target'),
    ('neural_net.vae_loss', 'vmap'): (UnsupportedSyntaxError, 'unsupported assignment target'),
    ('hmm.log_partition_function', 'grad'): (RecursionNotSupportedError, 'recursive call (log_partition_function_flat -> log_partition_function -> log_partition_function -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('hmm.log_partition_function', 'jit'): (RecursionNotSupportedError, 'recursive call (log_partition_function_flat -> log_partition_function -> log_partition_function -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('hmm.log_partition_function', 'vmap'): (RecursionNotSupportedError, 'recursive call (log_partition_function_flat -> log_partition_function -> log_partition_function -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('vi.bbvi_objective', 'jit'): (TransformError, "jit cannot compile black_box_variational_inference.<locals>.variational_objective: Numba has no type for `RandomState` (a class), which the compiled code would read (generated line: `rs = call_opaque(RandomState, t)`)"),
    ('models.LinearRegression.loss', 'jit'): (TransformError, 'jit cannot compile loss: it reads attributes or calls methods of a Python object (LinearRegression) when it runs, and Numba has no type for such objects'),
    ('models.TwoLayerNet.loss', 'jit'): (TransformError, 'jit cannot compile loss_flat: it reads attributes or calls methods of a Python object (TwoLayerNet) when it runs, and Numba has no type for such objects'),
    ('models.huber_regression_loss', 'jit'): (TransformError, 'Numba cannot compile the generated code for tests/real/models.py:83 (huber_regression_loss) in nopython mode: non-precise type pyobject (generated line: `def huber_regression_loss_grad(w, X, y, cfg=default_0):`)'),
    ('idioms.robust_loss_try', 'grad'): (UnsupportedSyntaxError, 's2s does not support an `except` clause that can end without raising around statements that compute values: which statements ran would decide the derivative'),
    ('idioms.robust_loss_try', 'jit'): (UnsupportedSyntaxError, 's2s does not support an `except` clause that can end without raising around statements that compute values: which statements ran would decide the derivative'),
    ('idioms.robust_loss_try', 'vmap'): (UnsupportedSyntaxError, 's2s does not support an `except` clause that can end without raising around statements that compute values: which statements ran would decide the derivative'),
    ('idioms.weight_decay_map_filter', 'grad'): (UnsupportedSyntaxError, 's2s cannot tell which elements filter keeps or how it orders them before the code runs'),
    ('idioms.weight_decay_map_filter', 'jit'): (UnsupportedSyntaxError, 's2s cannot tell which elements filter keeps or how it orders them before the code runs'),
    ('idioms.weight_decay_map_filter', 'vmap'): (UnsupportedSyntaxError, 's2s cannot tell which elements filter keeps or how it orders them before the code runs'),
    ('idioms.reinforce_returns', 'grad'): (UnsupportedSyntaxError, 's2s cannot follow `.insert` / item assignment on a list in a loop whose number of steps is known only when the code runs'),
    ('idioms.reinforce_returns', 'jit'): (UnsupportedSyntaxError, 's2s cannot follow `.insert` / item assignment on a list in a loop whose number of steps is known only when the code runs'),
    ('idioms.reinforce_returns', 'vmap'): (UnsupportedSyntaxError, 's2s cannot follow `.insert` / item assignment on a list in a loop whose number of steps is known only when the code runs'),
    ('comprehensions.coulomb_energy', 'grad'): (UnsupportedSyntaxError, 'a list of tuples or functions grows in a loop whose number of steps is known only when the code runs'),
    ('comprehensions.coulomb_energy', 'jit'): (UnsupportedSyntaxError, 'a list of tuples or functions grows in a loop whose number of steps is known only when the code runs'),
    ('comprehensions.coulomb_energy', 'vmap'): (UnsupportedSyntaxError, 'a list of tuples or functions grows in a loop whose number of steps is known only when the code runs'),
    ('comprehensions.poly_features_comp', 'grad'): (UnsupportedSyntaxError, 'a list or dict has a different length (or keys) after the two paths of this `if`, which s2s must know when it reads the code'),
    ('comprehensions.poly_features_comp', 'jit'): (UnsupportedSyntaxError, 'a list or dict has a different length (or keys) after the two paths of this `if`, which s2s must know when it reads the code'),
    ('comprehensions.poly_features_comp', 'vmap'): (UnsupportedSyntaxError, 'a list or dict has a different length (or keys) after the two paths of this `if`, which s2s must know when it reads the code'),
    ('numerics.tree_recursion', 'grad'): (RecursionNotSupportedError, 'recursive call (tree_loss -> tree_reduce -> tree_reduce -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('numerics.tree_recursion', 'jit'): (RecursionNotSupportedError, 'recursive call (tree_loss -> tree_reduce -> tree_reduce -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('numerics.tree_recursion', 'vmap'): (RecursionNotSupportedError, 'recursive call (tree_loss -> tree_reduce -> tree_reduce -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('numerics.chebyshev_recursion', 'grad'): (RecursionNotSupportedError, 'recursive call (chebyshev_series -> chebyshev -> chebyshev -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('numerics.chebyshev_recursion', 'jit'): (RecursionNotSupportedError, 'recursive call (chebyshev_series -> chebyshev -> chebyshev -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('numerics.chebyshev_recursion', 'vmap'): (RecursionNotSupportedError, 'recursive call (chebyshev_series -> chebyshev -> chebyshev -> ...): s2s inlines helper functions, and this recursion does not end at a depth s2s knows when it reads the code'),
    ('numerics.tsne_fill_diagonal', 'grad'): (EffectError, 'this statement hands the array `num` to code s2s cannot read, which may change it in place, and the function may read `num` afterwards: the derivative would not see the change'),
    ('numerics.tsne_fill_diagonal', 'jit'): (EffectError, 'this statement hands the array `num` to code s2s cannot read, which may change it in place, and the function may read `num` afterwards: the derivative would not see the change'),
    ('numerics.tsne_fill_diagonal', 'vmap'): (EffectError, 'this statement hands the array `num` to code s2s cannot read, which may change it in place, and the function may read `num` afterwards: the derivative would not see the change'),
    ('numerics.matrix_factorization_mask', 'jit'): (TransformError, 'Numba cannot compile the generated code for tests/real/numerics.py:142 (mf_loss) in nopython mode: AssertionError (generated line: `err = t3[mask]`)'),
    ('plain_style.bidirectional_rnn', 'jit'): (TransformError, 'Numba cannot compile the generated code for tests/real/plain_style.py:212 (bidirectional_rnn_loss) in nopython mode: AssertionError (generated line: `tape_v_x_bidirectional_rnn_loss.append(x_bidirectional_rnn_loss)`)'),
    ('views.boundary_rows', 'grad'): (SharedArrayError, "`top = grid[0]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`grid[0].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('mixtures.gmm_log_likelihood', 'jit'): (TransformError, "Numba cannot compile the generated code for tests/real/mixtures.py:27 (gmm_log_likelihood) in nopython mode: No implementation of function Function(<function squeeze>) found for signature: squeeze(array(float64, 2d, C)) (generated line: `t31 = np.squeeze(t30)`)"),
    ('gp.gp_objective_lambda', 'jit'): (TransformError, "Numba cannot compile the generated code for tests/real/gp.py:60 (<lambda>) in nopython mode: No implementation of function Function(<function squeeze>) found for signature: squeeze(array(float64, 1d, C)) (generated line: `t42 = np.squeeze(t41)`)"),
    ('views.boundary_rows', 'jit'): (SharedArrayError, "`top = grid[0]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`grid[0].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.boundary_rows', 'vmap'): (SharedArrayError, "`top = grid[0]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`grid[0].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.row_energies', 'grad'): (SharedArrayError, "`row = A[i]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`A[i].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.row_energies', 'jit'): (SharedArrayError, "`row = A[i]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`A[i].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.row_energies', 'vmap'): (SharedArrayError, "`row = A[i]` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`A[i].copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.box_bounds', 'grad'): (SharedArrayError, "`lower, upper = box` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`box.copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.box_bounds', 'jit'): (SharedArrayError, "`lower, upper = box` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`box.copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
    ('views.box_bounds', 'vmap'): (SharedArrayError, "`lower, upper = box` reads a view of an array (a row, not a copy) that an indexed write later in the function changes: NumPy's view would see the write, s2s's derivative would not. Copy it (`box.copy()`, or np.array(...)) if it must keep its value, or read it after the write."),
}


# jit(grad) checks that compile for 10-30 s each (Numba, cold): marked slow and left out of CI's
# command (`-m "not slow"`), their constructs being compiled there by smaller programs:
# tests/frontend/test_closures_*.py (step closures, lists kept as rows, reduce, integrators taking a
# function, comprehensions, under jit) and tests/jit/test_jit_fusion_types.py (the HMM's forward pass).
SLOW_JIT = {"rnn.rnn_log_likelihood", "rnn.rnn_regression_loss", "lstm.lstm_log_likelihood", "gp.gp_objective_lambda",
            "numerics.lotka_volterra_rk4", "mixtures.gmm_log_likelihood", "hmm.hmm_scaled_forward"}


def _params(check):
    out = []
    for case in CASES:
        if check != "runs" and check not in case["checks"]:
            continue
        marks = [pytest.mark.slow] if check == "jit" and case["id"] in SLOW_JIT else []
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
