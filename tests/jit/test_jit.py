"""s2s.jit: the generated source handed to numba.njit (nopython mode).

* parity: on a subset of the corpus spanning every category, `jit(f)` equals `f` and
  `jit(grad(f))` equals `grad(f)` (rtol 1e-12), and the compiled object is a Numba CPU
  dispatcher holding nopython signatures;
* KNOWN_UNSUPPORTED: corpus cases whose generated gradient Numba does not compile today;
  `fallback=False` must raise a TransformError naming the corpus file, `fallback=True` must warn
  once and give the right answer.  Remove an entry when the engineer fixes it (the test then
  fails, on purpose, so the entry moves to the parity list);
* every transform under jit, the parallel target, decorator use, a second signature;
* errors for code s2s transforms but Numba cannot compile.

Compiles take ~0.5-1 s each; `cache=True` (the default) keeps the machine code next to
the generated files, so a second run is fast.
"""
from __future__ import annotations

import inspect
import os
import re
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")
from numba.core.registry import CPUDispatcher  # noqa: E402


from cases import corpus
from cases import jit_cases as J
import s2s  # noqa: E402
from cases.corpus import CASES, case_ids, case_rng
from cases.fd import assert_close, numeric_grad

RTOL = 1e-12
ATOL = 1e-12

_BY_ID = dict(zip(case_ids(CASES), CASES))

# Corpus cases checked for parity (jit(f) == f, jit(grad(f)) == grad(f)), one line per category.
PARITY_IDS = [
    # arithmetic (scalars, 0-d array input, tuple swap)
    "arith_scalar_two_args", "arith_rational-2", "arith_tuple_unpack_swap",
    # elementwise and broadcasting
    "ew_sin_cos", "ew_exp_log", "ew_maximum", "ew_where", "bc_matrix_row", "bc_scalar",
    # reductions with axis / keepdims, max
    "red_sum_axis0", "red_sum_axis1_keepdims", "red_mean_axis", "closed_max",
    # matmul / @ / transpose
    "la_matmul_mv", "la_at_mm", "la_np_transpose",
    # indexing reads
    "idx_int", "idx_column",
    # indexing writes
    "iw_zeros_set", "iw_zeros_add", "iw_copy_overwrite", "iw_accumulate_repeated_index",
    # control flow: if, for (negative step), while, while True + break, break, continue,
    # early returns
    "cf_if_on_sum_negative", "cf_range_negative_step", "cf_while_data_dependent",
    "cf_while_true_break", "cf_break", "cf_continue", "cf_early_return_branch",
    "cf_early_return_in_loop",
    # helpers (nested, early return, tuple return) and closures
    "helper_nested", "helper_early_return", "helper_tuple_return", "closure_scaled_sum",
    # RNN loop, Horner, Euler, a realistic loss
    "cf_rnn", "horner_polynomial", "euler_ode", "logistic_regression_loss",
]

# Corpus cases whose jit(grad(f)) Numba does not compile today: case id -> the reason, as it
# appears in the TransformError message (the first line of Numba's error).
KNOWN_UNSUPPORTED: dict[str, str] = {
    # Every corpus case in the parity subset compiles today. Add a case here (with the exact
    # reason Numba gives) if a new one cannot, and the tests below check the error and fallback.
}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _case(cid):
    fn, factory, argnums = _BY_ID[cid]
    return fn, factory(case_rng(cid)), argnums


def _assert_same(got, expected, what, rtol=RTOL, atol=ATOL):
    """Same structure (tuples), same shapes, values within rtol."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple), f"{what}: expected a tuple, got {type(got).__name__}"
        assert len(got) == len(expected), f"{what}: {len(got)} results, expected {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            _assert_same(g, e, f"{what}[{i}]", rtol, atol)
        return
    assert not isinstance(got, tuple), f"{what}: got a tuple, expected {type(expected).__name__}"
    assert_close(got, expected, rtol=rtol, atol=atol, what=what)


def _assert_nopython(j, nargs, n_signatures=None):
    """j's compiled objects (the fused code and, for signatures it does not fit, the unfused
    code) are Numba CPU dispatchers in nopython mode, with compiled signatures."""
    fns = [gen.fn for key, gen in j._gens.items() if key[0] == nargs]
    assert fns, "nothing was compiled"
    sigs = []
    for fn in fns:
        assert isinstance(fn, CPUDispatcher), f"jit compiled to {type(fn)!r}, not a numba CPUDispatcher"
        assert fn.targetoptions.get("nopython") is True, fn.targetoptions
        assert not fn.targetoptions.get("forceobj", False), fn.targetoptions
        sigs += list(fn.nopython_signatures)
    assert len(sigs) > 0, "no nopython signature compiled"
    if n_signatures is not None:
        assert len(sigs) == n_signatures, sigs
    return fns[0]


def _same_file(a, b):
    return a is not None and os.path.exists(a) and os.path.samefile(a, b)


def _one_s2s_warning(record):
    msgs = [str(w.message) for w in record]
    assert len(record) == 1, f"expected exactly one warning, got {len(record)}: {msgs}"
    assert msgs[0].startswith("s2s.jit: Numba could not compile"), msgs[0]
    return record[0]


# ---------------------------------------------------------------------------
# 1. parity on the corpus
# ---------------------------------------------------------------------------

def test_selected_ids_exist_and_are_disjoint():
    missing = [c for c in list(PARITY_IDS) + list(KNOWN_UNSUPPORTED) if c not in _BY_ID]
    assert not missing, f"not corpus case ids: {missing}"
    assert not set(PARITY_IDS) & set(KNOWN_UNSUPPORTED)
    assert len(PARITY_IDS) == len(set(PARITY_IDS))


@pytest.mark.parametrize("cid", PARITY_IDS)
def test_jit_primal_matches_python(cid):
    fn, args, _ = _case(cid)
    j = s2s.jit(fn)
    got = j(*args)
    _assert_same(got, fn(*args), f"jit({cid})")
    _assert_nopython(j, len(args))


# jit(grad(f)) == grad(f) of every corpus case (arguments unchanged, nopython machine code): in
# tests/cache/test_warm_cache.py, whose child processes compile each case once for that check and the
# warm-cache one
# The whole corpus's jit(grad) == grad is checked in tests/cache/test_warm_cache.py, in child
# processes that compile each case once and then load it from the disk cache in a second process.


@pytest.mark.parametrize("cid", sorted(KNOWN_UNSUPPORTED))
def test_known_unsupported_raises_then_falls_back(cid):
    fn, args, argnums = _case(cid)
    reason = KNOWN_UNSUPPORTED[cid]
    with pytest.raises(s2s.TransformError) as info:
        s2s.jit(s2s.grad(fn, argnums=argnums), fallback=False)(*args)
    exc = info.value
    msg = str(exc)
    source_file = inspect.getsourcefile(fn)       # the corpus module that defines the program
    assert _same_file(exc.filename, source_file), exc.filename
    assert os.path.basename(source_file) in msg
    assert "Numba" in msg and "nopython" in msg, msg
    assert reason in msg, f"reason changed for {cid}:\n{msg}"

    j = s2s.jit(s2s.grad(fn, argnums=argnums), fallback=True)
    with pytest.warns(UserWarning) as record:
        got = j(*args)
    _one_s2s_warning(record)
    _assert_same(got, s2s.grad(fn, argnums=argnums)(*args), f"jit(grad({cid}), fallback=True)")


# ---------------------------------------------------------------------------
# 2. every transform
# ---------------------------------------------------------------------------

def _xw(seed=0, shape=(6,)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def test_jit_value_and_grad():
    x, w = _xw(1)
    j = s2s.jit(s2s.value_and_grad(J.two_arg_loss))
    got = j(x, w)
    _assert_same(got, s2s.value_and_grad(J.two_arg_loss)(x, w), "jit(value_and_grad)")
    assert_close(got[0], J.two_arg_loss(x, w), rtol=RTOL, atol=ATOL, what="value")
    _assert_nopython(j, 2)


def test_jit_grad_tuple_argnums():
    x, w = _xw(2)
    j = s2s.jit(s2s.grad(J.two_arg_loss, argnums=(0, 1)))
    got = j(x, w)
    assert isinstance(got, tuple) and len(got) == 2
    _assert_same(got, s2s.grad(J.two_arg_loss, argnums=(0, 1))(x, w), "jit(grad(argnums=(0, 1)))")
    _assert_nopython(j, 2)


def _vmap_elementwise_input():
    return np.random.default_rng(3).standard_normal((5, 4))


def _vmap_grad_inputs():
    rng = np.random.default_rng(4)
    w = rng.standard_normal(3)
    X = rng.standard_normal((7, 3))
    y = np.where(rng.uniform(size=7) < 0.5, -1.0, 1.0)
    return w, X, y


def test_jit_vmap_elementwise():
    X = _vmap_elementwise_input()
    j = s2s.jit(s2s.vmap(J.elementwise))
    got = j(X)
    _assert_same(got, s2s.vmap(J.elementwise)(X), "jit(vmap(elementwise))")
    _assert_same(got, J.elementwise(X), "jit(vmap(elementwise)) vs f on the batch")
    _assert_nopython(j, 1)


def test_jit_vmap_grad_logistic():
    w, X, y = _vmap_grad_inputs()
    j = s2s.jit(s2s.vmap(s2s.grad(J.logistic_loss), in_axes=(None, 0, 0)))
    got = j(w, X, y)
    expected = s2s.vmap(s2s.grad(J.logistic_loss), in_axes=(None, 0, 0))(w, X, y)
    _assert_same(got, expected, "jit(vmap(grad(logistic_loss)))")
    closed = (-y / (1.0 + np.exp(y * (X @ w))))[:, None] * X
    _assert_same(got, closed, "per-example logistic gradients (np.dot), closed form")
    _assert_nopython(j, 3)


def test_jit_vmap_grad_logistic_with_matmul():
    # the same loss written with `@`: the batched gradient is array code Numba compiles
    w, X, y = _vmap_grad_inputs()
    j = s2s.jit(s2s.vmap(s2s.grad(J.logistic_loss_matmul), in_axes=(None, 0, 0)))
    got = j(w, X, y)
    expected = s2s.vmap(s2s.grad(J.logistic_loss_matmul), in_axes=(None, 0, 0))(w, X, y)
    _assert_same(got, expected, "jit(vmap(grad(logistic_loss_matmul)))")
    closed = (-y / (1.0 + np.exp(y * (X @ w))))[:, None] * X
    _assert_same(got, closed, "per-example logistic gradients, closed form")
    _assert_nopython(j, 3)


def test_jit_vmap_grad_wrt_the_batched_argument():
    # per-example gradients w.r.t. x (the batched side of x @ w): g_i * w for each example
    w, X, y = _vmap_grad_inputs()
    j = s2s.jit(s2s.vmap(s2s.grad(J.logistic_loss_matmul, argnums=1), in_axes=(None, 0, 0)))
    got = j(w, X, y)
    loop = np.stack([s2s.grad(J.logistic_loss_matmul, argnums=1)(w, X[i], y[i]) for i in range(X.shape[0])])
    _assert_same(got, loop, "jit(vmap(grad(logistic_loss_matmul, argnums=1)))")
    closed = (-y / (1.0 + np.exp(y * (X @ w))))[:, None] * w[None, :]
    _assert_same(got, closed, "per-example input gradients, closed form")
    _assert_nopython(j, 3)


@pytest.mark.parametrize("fn, shapes", [(J.dot_mv, ((3, 4), (4,))), (J.dot_mm, ((3, 4), (4, 2))),
                                        (J.dot_vv, ((4,), (4,))), (J.dot_vm, ((4,), (4, 2)))])
@pytest.mark.parametrize("argnum", [0, 1])
def test_jit_grad_of_np_dot(fn, shapes, argnum):
    # the compiled gradient, specialized on vector/matrix ranks, writes np.dot's cotangents
    # as products; it must equal the generic generated gradient and finite differences
    rng = np.random.default_rng(11)
    args = [rng.standard_normal(s) for s in shapes]
    got = s2s.jit(s2s.grad(fn, argnums=argnum))(*args)
    _assert_same(got, s2s.grad(fn, argnums=argnum)(*args), f"jit(grad({fn.__name__}, {argnum}))")
    from cases.fd import numeric_grad
    assert_close(got, numeric_grad(fn, tuple(args), argnum), rtol=1e-6, atol=1e-8)


def test_jit_parallel_target():
    x, w = _xw(5, (40,))
    j = s2s.jit(J.mixed_loss, target="parallel")
    _assert_same(j(x, w), J.mixed_loss(x, w), "jit(f, target='parallel')")
    fn = _assert_nopython(j, 2)
    assert _parallel_loops(fn), fn.py_func.__globals__
    jg = s2s.jit(s2s.grad(J.mixed_loss, argnums=(0, 1)), target="parallel")
    _assert_same(jg(x, w), s2s.grad(J.mixed_loss, argnums=(0, 1))(x, w),
                 "jit(grad, target='parallel')")
    assert _parallel_loops(_assert_nopython(jg, 2))


def _parallel_loops(fn) -> list:
    """The fused loops of a compiled function that run on threads: under target="parallel" each
    is a function of its own (backends/outline.py), compiled with parallel=True, over prange."""
    return [v for k, v in fn.py_func.__globals__.items() if k.startswith("fused_loop")
            and v.targetoptions.get("parallel") is True and "prange" in v.py_func.__code__.co_names]


def test_jit_decorator():
    x, y = _xw(6)
    assert isinstance(J.decorated_plain, s2s.api.Jitted)
    _assert_same(J.decorated_plain(x), np.sum(np.sin(x) ** 2) + np.sum(x), "@s2s.jit")
    _assert_nopython(J.decorated_plain, 1)
    assert isinstance(J.decorated_with_options, s2s.api.Jitted)
    _assert_same(J.decorated_with_options(x, y), np.sum(x * y) - np.max(x), "@s2s.jit(...)")
    _assert_nopython(J.decorated_with_options, 2)
    # a decorated function is still differentiable, and its grad compiles too
    g = s2s.jit(s2s.grad(J.decorated_plain.fun))(x)
    _assert_same(g, 2 * np.sin(x) * np.cos(x) + 1.0, "jit(grad(decorated))", rtol=1e-12, atol=1e-14)


def test_jit_second_signature_compiles_again():
    x, w = _xw(7)
    j = s2s.jit(s2s.grad(J.two_arg_loss, argnums=(0, 1)))
    ref = s2s.grad(J.two_arg_loss, argnums=(0, 1))
    _assert_same(j(x, w), ref(x, w), "float64 1-d")
    _assert_nopython(j, 2, n_signatures=1)

    # float32 inputs run the float64 code (s2s/precision.py): no new signature, and the result is
    # the float64 gradient at the same (representable) point, rounded to float32 (as JAX, float32 out)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    got32 = j(x32, w32)
    assert all(g.dtype == np.float32 for g in got32), [g.dtype for g in got32]
    exact = ref(x32.astype(np.float64), w32.astype(np.float64))
    for g, e in zip(got32, exact):
        np.testing.assert_array_equal(g, e.astype(np.float32))
    _assert_same(tuple(g.astype(np.float64) for g in ref(x32, w32)), tuple(g.astype(np.float64) for g in got32),
                 "float32 1-d vs grad on float32", rtol=0, atol=0)
    _assert_nopython(j, 2, n_signatures=1)

    X, W = _xw(8, (3, 4))
    _assert_same(j(X, W), ref(X, W), "float64 2-d")
    _assert_nopython(j, 2, n_signatures=2)

    # and the primal
    jp = s2s.jit(J.two_arg_loss)
    _assert_same(jp(X, W), J.two_arg_loss(X, W), "primal 2-d")
    assert_close(jp(x32, w32), J.two_arg_loss(x32, w32), rtol=1e-5, atol=1e-6,
                 what="primal float32")
    assert np.asarray(jp(x32, w32)).dtype == np.float32
    _assert_nopython(jp, 2, n_signatures=2)        # 2-d and 1-d float64


# ---------------------------------------------------------------------------
# 3. errors: s2s transforms it, Numba cannot compile it
# ---------------------------------------------------------------------------

def _def_line(fn):
    return fn.__code__.co_firstlineno


@pytest.mark.parametrize(("fn", "make_args", "needle"), [
    (J.uses_pad_reflect, lambda: (np.linspace(-1.0, 1.0, 5),), "pad"),
    (J.uses_pad_edge, lambda: (np.arange(12.0).reshape(3, 4) / 7.0 - 0.5,), "pad"),
], ids=["pad_reflect", "pad_edge"])
@pytest.mark.parametrize("transform", ["primal", "grad"])
def test_numba_cannot_compile(fn, make_args, needle, transform):
    args = make_args()
    target = fn if transform == "primal" else s2s.grad(fn)
    expected = fn(*args) if transform == "primal" else s2s.grad(fn)(*args)

    with pytest.raises(s2s.TransformError) as info:
        s2s.jit(target, fallback=False)(*args)
    exc = info.value
    msg = str(exc)
    assert _same_file(exc.filename, J.__file__), exc.filename
    # the line of the op Numba refused (through the generated file's comments), not the def line
    with open(exc.filename) as src:
        assert needle in src.read().splitlines()[exc.lineno - 1], exc.lineno
    assert exc.lineno > _def_line(fn)
    assert "jit_cases.py" in msg
    assert "Numba" in msg and "nopython" in msg, msg
    assert needle in msg, msg
    assert exc.hint and "fallback=True" in exc.hint

    j = s2s.jit(target, fallback=True)
    with pytest.warns(UserWarning) as record:
        got = j(*args)
    w = _one_s2s_warning(record)
    assert _same_file(w.filename, __file__), w.filename     # points at the caller
    _assert_same(got, expected, f"jit({transform} of {fn.__name__}, fallback=True)")
    with warnings.catch_warnings():                      # warns once per jitted function
        warnings.simplefilter("error")
        _assert_same(j(*args), expected, "second fallback call")


def test_numba_error_points_at_the_user_line():
    with pytest.raises(s2s.TransformError) as info:
        s2s.jit(J.uses_pad_reflect)(np.linspace(-1.0, 1.0, 5))
    assert info.value.source_line and "pad" in info.value.source_line
    assert "generated line" in str(info.value)


def test_squeeze_without_axis_is_refused_at_the_user_line_and_falls_back_right():
    # KNOWN_JIT's expand_squeeze entry: the rank of np.squeeze(a) depends on a's shape, which Numba
    # does not type; the refusal names the op and the user's line, fallback=True gives grad's answer
    x = np.array([0.5, -1.5, 2.0])
    for target in (J.squeezes_without_axis, s2s.grad(J.squeezes_without_axis)):
        with pytest.raises(s2s.TransformError) as info:
            s2s.jit(target, fallback=False)(x)
        assert info.value.source_line and "np.squeeze(column)" in info.value.source_line
        assert "squeeze" in str(info.value) and "jit_cases.py" in str(info.value)
    with pytest.warns(UserWarning):
        got = s2s.jit(s2s.grad(J.squeezes_without_axis), fallback=True)(x)
    _assert_same(got, 2.0 * x, "jit(grad(squeezes_without_axis), fallback=True)")


def test_fallback_warning_names_the_function():
    j = s2s.jit(J.uses_pad_reflect, fallback=True)
    with pytest.warns(UserWarning) as record:
        j(np.linspace(-1.0, 1.0, 5))
    w = _one_s2s_warning(record)
    assert "uses_pad_reflect" in str(w.message)


def test_fallback_warning_gives_numba_reason():
    j = s2s.jit(J.uses_pad_reflect, fallback=True)
    with pytest.warns(UserWarning) as record:
        j(np.linspace(-1.0, 1.0, 5))
    w = _one_s2s_warning(record)
    assert "pad" in str(w.message).split("Reason:", 1)[1]


# ---------------------------------------------------------------------------
# 4. hessian, pytrees, fused loops, show
# ---------------------------------------------------------------------------

def test_jit_grad_of_a_full_einsum_contraction():
    x, y = np.array([-0.9, -0.3, 0.4, 1.2]), np.array([0.7, -1.1, 0.2, 0.5])
    g = s2s.grad(J.einsum_full_contraction, argnums=(0, 1))
    expected = g(x, y)
    for k in (0, 1):
        assert_close(expected[k], numeric_grad(J.einsum_full_contraction, (x, y), k), rtol=1e-6, atol=1e-8,
                     what=f"grad(einsum_full_contraction)[{k}] vs finite differences")
    _assert_same(s2s.jit(g, fallback=False)(x, y), expected, "jit(grad(einsum_full_contraction))")
    vg = s2s.jit(s2s.value_and_grad(J.einsum_full_contraction, argnums=(0, 1)), fallback=False)(x, y)
    _assert_same(vg, (J.einsum_full_contraction(x, y), expected), "jit(value_and_grad(einsum_full_contraction))")


def test_jit_hessian_matches_hessian():
    x = np.array([-0.9, -0.4, 0.3, 0.6, 1.1])
    got = s2s.jit(s2s.hessian(J.hess_loop))(x)
    expected = s2s.hessian(J.hess_loop)(x)
    _assert_same(got, expected, "jit(hessian(f)) with a loop and a branch")
    assert got.shape == (5, 5)


def test_jit_grad_with_pytree_params():
    rng = np.random.default_rng(7)
    params = [(rng.standard_normal((3, 4)), rng.standard_normal(4)), (rng.standard_normal((4, 2)),
                                                                      rng.standard_normal(2))]
    x = rng.standard_normal((5, 3))
    got = s2s.jit(s2s.grad(J.mlp_params))(params, x)
    expected = s2s.grad(J.mlp_params)(params, x)
    for (gw, gb), (ew, eb) in zip(got, expected):
        _assert_same(gw, ew, "dW")
        _assert_same(gb, eb, "db")


def test_fused_loop_in_compiled_source():
    x = np.linspace(0.1, 1.0, 50)
    j = s2s.jit(s2s.grad(J.fusable))
    _assert_same(j(x), s2s.grad(J.fusable)(x), "fused jit(grad)")
    source = j.generated_for(1).source
    assert "fused: one loop over the elements" in source and "for i in range(n)" in source
    # broadcasting inputs take the unfused path and stay right
    j2 = s2s.jit(J.fusable_two)
    a, b = np.linspace(0.1, 1.0, 12).reshape(3, 4), np.linspace(1.0, 2.0, 4)
    _assert_same(j2(a, b), J.fusable_two(a, b), "fused function on broadcasting inputs")


def test_show_jit_prints_the_compiled_source():
    text = s2s.show(s2s.grad(J.fusable), transform="jit")
    assert "[numba cpu, error_model=numpy]" in text and "def fusable_grad(" in text


def test_fused_code_with_a_zero_dim_array_input_takes_the_unfused_path():
    x = np.linspace(0.1, 1.0, 7)
    a = np.array(0.7)                      # 0-d: must not be read as a 7-element array
    j = s2s.jit(J.fusable_two)
    _assert_same(j(x, a), J.fusable_two(x, a), "fused function with a 0-d array input")


def astype_mix(x):
    return np.sum(x.astype(int) * x) + np.sum(x.astype(np.float32) * x) + np.sum(x.astype(bool) * x) + \
        np.sum(x.astype("float64") * x) + np.sum(x.astype(np.int32) * x) + np.sum(x.astype(float) * x)


def test_astype_to_an_integer_dtype_stops_the_gradient_in_compiled_code():
    """float_dtype_flag's Numba version was 1.0 for every dtype: jit(grad) passed x's cotangent
    through x.astype(int) (found by tests/ops/test_op_sweep_jit.py on copy_astype)."""
    x = np.array([[-1.7, 0.4, 2.6], [3.2, -0.2, 1.1]])
    ref = s2s.grad(astype_mix)(x)
    closed = x.astype(int) + (x.astype(np.float32).astype(float) + x) + x.astype(bool) + 2 * x + \
        x.astype(np.int32) + 2 * x
    assert_close(ref, closed, rtol=1e-6, atol=1e-6, what="grad(astype_mix) vs closed form")
    assert_close(s2s.jit(s2s.grad(astype_mix))(x), ref, rtol=1e-12, atol=1e-12, what="jit(grad(astype_mix))")
    t = s2s.jvp(astype_mix)
    v = np.full_like(x, 0.5)
    assert_close(s2s.jit(t)(x, v)[1], t(x, v)[1], rtol=1e-12, atol=1e-12, what="jit(jvp(astype_mix))")


def _square_or_ones(x, c):
    if c > 0.0:
        return x * x
    return np.ones_like(x)


def early_return_helper(x, c):
    return np.sum(_square_or_ones(x, c) * np.sin(x))


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_jit_jvp_of_a_helper_whose_early_return_has_no_tangent(c):
    """The tangent of a helper's result was 0.0 on the path before its early return (where the
    result is not defined yet) and an array on the others: Numba could not type it as one, and
    jit(jvp) refused.  No tangent is made where the primal is not defined (transforms/forward.py)."""
    x, v = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, -0.5])
    want = s2s.jvp(early_return_helper, (x, c), (v, 0.0))
    got = s2s.jit(s2s.jvp(early_return_helper), fallback=False)(x, c, v)
    assert_close(got[1], want[1], rtol=1e-12, atol=1e-12, what="jit(jvp)")
    assert_close(want[1], s2s.grad(early_return_helper)(x, c) @ v, rtol=1e-12, atol=1e-12, what="jvp vs grad")


def _products(a, b, c):
    return a @ b, np.matmul(a, c), b @ b


def _weighted_products(w, A, B):
    return np.sum((A @ w) * (B @ w)) + w @ w


@pytest.mark.parametrize("dtypes", [("int64", "int64", "int64"), ("float32", "float64", "float32"),
                                    ("float64", "float64", "float64"), ("int64", "float64", "int32")])
def test_matmul_in_compiled_code_matches_numpy_for_every_dtype(dtypes):
    """`a @ b` in compiled code is np.matmul(a, b) (its implementation cached per signature): Numba's
    own `@` for operands of one float dtype, s2s's loops otherwise, so integers and mixed dtypes
    compile too, with NumPy's values (and result dtype, float32 aside)."""
    rng = np.random.default_rng(3)
    a = (rng.normal(size=(4, 3)) * 5).astype(dtypes[0])
    b = (rng.normal(size=3) * 5).astype(dtypes[1])
    c = (rng.normal(size=(3, 2)) * 5).astype(dtypes[2])
    got = s2s.jit(_products)(a, b, c)
    for g, w in zip(got, _products(a, b, c)):
        if "float32" not in dtypes:     # (jit computes float32 inputs in float64: s2s/precision.py)
            assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-6 if "float32" in dtypes else 1e-13)


def test_matmul_gradient_through_the_cached_product_equals_grad_and_finite_differences():
    rng = np.random.default_rng(4)
    w, A, B = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    want = s2s.grad(_weighted_products)(w, A, B)
    np.testing.assert_allclose(s2s.jit(s2s.grad(_weighted_products))(w, A, B), want, rtol=1e-13, atol=1e-13)
    eps = 1e-6
    fd = np.array([(_weighted_products(w + eps * e, A, B) - _weighted_products(w - eps * e, A, B)) / (2 * eps)
                   for e in np.eye(3)])
    np.testing.assert_allclose(want, fd, rtol=1e-6, atol=1e-8)
