"""vmap: generated batched source against a Python loop over examples.

1. Op sweep: every op kind of s2s/rules/batch_rules.py (elementwise, where/clip,
   reductions, matmul/dot, indexing, indexed writes, shape queries, shape
   functions that may fall back to per-example loops), each compared with
   `np.stack([f(*example(b)) for b in range(B)], axis=out_axis)` for the batch
   on axis 0, on another axis (1 and -1), and with only one argument batched
   (the others `None`).
2. Control flow: `if` on a per-example condition (np.where when the branches
   are pure, a labelled per-example loop otherwise), masked `while`, `for`
   over an unbatched range, early return in a helper.
3. in_axes / out_axes / axis_size, nested vmap, and the argument errors.
4. Composition with grad / jacrev / jacfwd / jvp, against loops of s2s.grad
   and finite differences.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest


import s2s  # noqa: E402
from cases import vmap_cases as V
from cases.fd import assert_close, numeric_grad

B = 4


# ----- argument specs ----------------------------------------------------------------
class F:
    """A float argument, per-example shape `shape` (standard normal, or positive)."""

    def __init__(self, *shape, pos=False, lo=None, hi=None):
        self.shape, self.pos, self.lo, self.hi = shape, pos, lo, hi

    def draw(self, rng):
        if self.lo is not None:
            x = rng.uniform(self.lo, self.hi, self.shape)
        elif self.pos:
            x = rng.uniform(0.5, 2.0, self.shape)
        else:
            x = rng.standard_normal(self.shape)
        return float(x) if self.shape == () else x

    @property
    def ndim(self):
        return len(self.shape)


class I:
    """A per-example int (batchable) in [0, high)."""

    def __init__(self, high):
        self.high, self.shape = high, ()

    def draw(self, rng):
        return int(rng.integers(0, self.high))

    ndim = 0


class K:
    """A fixed argument: never batched (in_axes None)."""

    def __init__(self, value):
        self.value = value


class Case:
    def __init__(self, fn, *args, seed=0):
        self.fn, self.args, self.seed = fn, args, seed
        self.name = fn.__name__

    def __repr__(self):
        return self.name


def make_examples(case, rng):
    """Per argument: a list of B per-example values, or the fixed value (K)."""
    out = []
    for spec in case.args:
        if isinstance(spec, K):
            out.append(spec.value)
        else:
            out.append([spec.draw(rng) for _ in range(B)])
    return out


def stack_along(examples, axis):
    return np.stack([np.asarray(e) for e in examples], axis=axis)


def reference(fn, per_arg, in_axes, out_axes=0):
    """The loop: f on each example, stacked along out_axes (tuple outputs elementwise)."""
    outs = []
    for b in range(B):
        ex = [v[b] if ax is not None else v for v, ax in zip(per_arg, in_axes)]
        outs.append(fn(*ex))
    if isinstance(outs[0], tuple):
        axes = out_axes if isinstance(out_axes, tuple) else (out_axes,) * len(outs[0])
        return tuple(np.stack([np.asarray(o[i]) for o in outs], axis=ax) if ax is not None else outs[0][i]
                     for i, ax in enumerate(axes))
    return np.stack([np.asarray(o) for o in outs], axis=out_axes) if out_axes is not None else outs[0]


def assert_same(got, expected, what=""):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple), f"{what}: expected a tuple of {len(expected)} outputs, got {type(got)}"
        assert len(got) == len(expected), f"{what}: expected {len(expected)} outputs, got {len(got)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{what} output {k}")
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape, f"{what}: shape {g.shape}, expected {e.shape}"
    kind = {"u": "i"}
    assert kind.get(g.dtype.kind, g.dtype.kind) == kind.get(e.dtype.kind, e.dtype.kind), \
        f"{what}: dtype {g.dtype}, the loop gives {e.dtype}"
    if e.dtype.kind in "iub":
        np.testing.assert_array_equal(g, e, err_msg=what)
    else:
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=what)


def run_config(case, per_arg, in_axes, out_axes=0):
    """Build the batched arguments for `in_axes`, call vmap, compare with the loop."""
    batched = []
    for spec, v, ax in zip(case.args, per_arg, in_axes):
        if ax is None:
            batched.append(v[0] if not isinstance(spec, K) else v)
        else:
            batched.append(stack_along(v, ax))
    # the reference sees the same unbatched value the vmapped call gets (example 0's)
    ref_args = [v if ax is not None else (v[0] if not isinstance(spec, K) else v)
                for spec, v, ax in zip(case.args, per_arg, in_axes)]
    expected = reference(case.fn, ref_args, list(in_axes), out_axes)
    before = [np.array(a, copy=True) for a in batched]
    got = s2s.vmap(case.fn, in_axes=tuple(in_axes), out_axes=out_axes)(*batched)
    for k, (a, b0) in enumerate(zip(batched, before)):
        np.testing.assert_array_equal(a, b0, err_msg=f"vmap modified argument {k}")
    assert_same(got, expected, f"{case.name} in_axes={tuple(in_axes)} out_axes={out_axes}")
    return got


# ----- 1. the op sweep ---------------------------------------------------------------
X34 = F(3, 4)
X234 = F(2, 3, 4)
V4 = F(4)
V3 = F(3)
S = F()

SWEEP = [
    # elementwise unary
    Case(V.u_sin, X34), Case(V.u_exp, V3), Case(V.u_log, F(3, 4, pos=True)), Case(V.u_tanh, X34),
    Case(V.u_abs, X34), Case(V.u_builtin_abs, V4), Case(V.u_sqrt, F(3, pos=True)), Case(V.u_neg_chain, S),
    # elementwise binary with per-example broadcasting
    Case(V.b_add, X34, V4), Case(V.b_mul, F(3, 1), F(1, 4)), Case(V.b_const_scalar, V3),
    Case(V.b_scalar_vec, S, V3), Case(V.b_scalar_vec, V3, S, seed=1), Case(V.b_sub_div, X34, V4),
    Case(V.b_pow, F(3, 4, pos=True), V4), Case(V.b_maximum, X34, V4), Case(V.b_arctan2, F(3, 1), F(1, 4)),
    Case(V.b_compare, X34, V4), Case(V.b_less, X34, V4), Case(V.b_chain3, X34, V4, S),
    Case(V.e_where, X34, V4), Case(V.e_where_scalar, S, V3), Case(V.e_where_const, X34),
    Case(V.e_clip, X34), Case(V.e_clip_args, X34, F(4, lo=-1.0, hi=-0.1), F(lo=0.1, hi=1.0)),
    # reductions
    Case(V.r_sum_all, X34), Case(V.r_sum_0, X34), Case(V.r_sum_neg1, X34), Case(V.r_sum_pos_arg, X34),
    Case(V.r_sum_tuple, X234), Case(V.r_sum_tuple_neg, X234), Case(V.r_sum_keepdims, X34),
    Case(V.r_sum_keepdims_all, X34), Case(V.r_mean_all, X34), Case(V.r_mean_neg1, X234),
    Case(V.r_mean_keepdims, X34), Case(V.r_max_all, X34), Case(V.r_max_0, X34), Case(V.r_min_neg1, X34),
    Case(V.r_min_keepdims, X34), Case(V.r_prod_all, X34), Case(V.r_prod_0, X34), Case(V.r_std_all, X34),
    Case(V.r_std_neg1, X34), Case(V.r_std_ddof, X34), Case(V.r_var_all, X34), Case(V.r_var_0_keep, X34),
    Case(V.r_argmax_all, X34), Case(V.r_argmax_0, X34), Case(V.r_argmax_neg1, X34), Case(V.r_argmin_1, X34),
    Case(V.r_amax_amin, X34), Case(V.r_method_sum, X34), Case(V.r_method_max, X34),
    Case(V.r_axis_from_ndim, X34), Case(V.r_logsumexp, X34), Case(V.r_softmax, V4), Case(V.r_any_all, X34),
    Case(V.r_sum_all, V4, seed=1), Case(V.r_max_0, V4, seed=1), Case(V.r_argmax_all, V4, seed=1),
    Case(V.r_sum_all, S, seed=2), Case(V.r_std_all, S, seed=2),
    # matmul / dot: vv, mv, vm, mm for @, np.dot, np.matmul, .dot
    Case(V.m_matmul, V4, V4), Case(V.m_matmul, X34, V4, seed=1), Case(V.m_matmul, V3, X34, seed=2),
    Case(V.m_matmul, X34, F(4, 2), seed=3),
    Case(V.m_dot, V4, V4), Case(V.m_dot, X34, V4, seed=1), Case(V.m_dot, V3, X34, seed=2),
    Case(V.m_dot, X34, F(4, 2), seed=3),
    Case(V.m_npmatmul, V4, V4), Case(V.m_npmatmul, X34, V4, seed=1), Case(V.m_npmatmul, V3, X34, seed=2),
    Case(V.m_npmatmul, X34, F(4, 2), seed=3),
    Case(V.m_method_dot, X34, V4), Case(V.m_method_dot, V3, X34, seed=1),
    Case(V.m_dot_scalar, S, V3), Case(V.m_quadratic, F(3, 3), V3), Case(V.m_mlp_layer, X34, V3, V4),
    # indexing
    Case(V.i_int, X34), Case(V.i_neg, X34), Case(V.i_slice, V4), Case(V.i_step_slice, F(5)),
    Case(V.i_row_all, X34), Case(V.i_col, X34), Case(V.i_ellipsis, X234), Case(V.i_none, V3),
    Case(V.i_none_mid, V3), Case(V.i_two_ints, X34), Case(V.i_fancy_const, V3), Case(V.i_fancy_col, X34),
    Case(V.i_fancy_arg, V4, K(np.array([3, 1, 1]))), Case(V.i_fancy_int_slice, X234),
    Case(V.i_fancy_two, X34), Case(V.i_bool_mask, V4), Case(V.i_arg_int, X34, K(2)),
    Case(V.i_dyn_slice, V4, K(3)), Case(V.i_batched_int, V4, I(4)), Case(V.i_batched_int, X34, I(3), seed=1),
    # indexed writes into arrays made in the function
    Case(V.w_zeros_set, S, K(3)), Case(V.w_zeros_set_vec, V3), Case(V.w_copy_slice, V4),
    Case(V.w_copy_slice, X34, seed=1), Case(V.w_loop_fill, V4), Case(V.w_broadcast_scalar, S),
    Case(V.w_zeros_like, X34), Case(V.w_accumulate, V4), Case(V.w_fancy_write, V4), Case(V.w_col_write, X34),
    Case(V.w_batched_index, S, I(4)),
    # shape queries
    Case(V.s_shape0, X34), Case(V.s_zeros_shape, X34), Case(V.s_len, V4), Case(V.s_len_rows, X34),
    Case(V.s_ndim, X34), Case(V.s_size, X34), Case(V.s_ones_len, X34), Case(V.s_eye, V4),
    Case(V.s_shape_tuple, X34),
    # shape functions (per-example fallback allowed)
    Case(V.sh_reshape, X34), Case(V.sh_reshape_method, X34), Case(V.sh_reshape_shape, X34),
    Case(V.sh_transpose, X34), Case(V.sh_T, X34), Case(V.sh_transpose_axes, X234),
    Case(V.sh_swapaxes, X234), Case(V.sh_expand_dims, V3), Case(V.sh_concat, X34, F(2, 4)),
    Case(V.sh_concat_axis1, X34, F(3, 2)), Case(V.sh_stack, V4, V4), Case(V.sh_stack_axis1, V4, V4),
    Case(V.sh_ravel, X34), Case(V.sh_flip, X34), Case(V.sh_outer, V3, V4), Case(V.sh_cumsum, X34),
    Case(V.sh_squeeze, F(3, 1)),
]


def _ids(cases):
    seen, ids = {}, []
    for c in cases:
        n = seen.get(c.name, 0)
        seen[c.name] = n + 1
        ids.append(c.name if n == 0 else f"{c.name}#{n}")
    return ids


def _batchable(case):
    return [i for i, s in enumerate(case.args) if not isinstance(s, K)]


def _configs(case):
    """(label, in_axes) pairs: axis 0, axis 1 / -1 for every batchable argument, one-at-a-time."""
    idx = _batchable(case)
    n = len(case.args)
    out = [("axis0", tuple(0 if i in idx else None for i in range(n)))]
    # batch on the last axis, written as a positive and as a negative index
    out.append(("axis_last_pos", tuple(case.args[i].ndim if i in idx else None for i in range(n))))
    out.append(("axis_neg1", tuple(-1 if i in idx else None for i in range(n))))
    if any(case.args[i].ndim >= 2 for i in idx):
        out.append(("axis1", tuple((1 if case.args[i].ndim >= 1 else 0) if i in idx else None
                                   for i in range(n))))
    if len(idx) > 1:
        for j in idx:
            out.append((f"only_arg{j}", tuple(0 if i == j else None for i in range(n))))
    return out


SWEEP_PARAMS = []
for _c, _id in zip(SWEEP, _ids(SWEEP)):
    for _label, _axes in _configs(_c):
        SWEEP_PARAMS.append(pytest.param(_c, _axes, id=f"{_id}-{_label}"))


@pytest.mark.parametrize("case,in_axes", SWEEP_PARAMS)
def test_op_sweep(case, in_axes):
    rng = np.random.default_rng(1000 + case.seed + 7 * len(case.name))
    per_arg = make_examples(case, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # both branches of np.where are evaluated
        run_config(case, per_arg, in_axes)


@pytest.mark.parametrize("case", [c for c in SWEEP if c.name in
                                  ("b_add", "r_sum_0", "m_matmul", "i_row_all", "sh_reshape", "w_copy_slice")],
                         ids=lambda c: c.name)
def test_op_sweep_out_axes(case):
    """The same ops with the batch placed last in the result (out_axes=-1) and at 1."""
    rng = np.random.default_rng(7)
    per_arg = make_examples(case, rng)
    axes = tuple(0 if not isinstance(s, K) else None for s in case.args)
    ref = reference(case.fn, per_arg, axes, 0)
    run_config(case, per_arg, axes, out_axes=-1)
    if np.ndim(ref) >= 2:
        run_config(case, per_arg, axes, out_axes=1)


# ----- generated-source helpers ------------------------------------------------------
def body_of(source: str) -> str:
    """The generated function's body, comments stripped."""
    lines = source.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
    code = []
    for ln in lines[start + 1:]:
        stripped = ln.split("#", 1)[0].rstrip() if "#" in ln else ln.rstrip()
        if stripped.strip():
            code.append(stripped)
    return "\n".join(code)


def vsource(fn, nargs, **kw):
    return s2s.vmap(fn, **kw).generated_for(nargs).source


def test_elementwise_source_is_array_code():
    """Elementwise / reduction / matmul ops batch without any loop."""
    for fn, n in [(V.b_add, 2), (V.r_mean_keepdims, 1), (V.m_mlp_layer, 3), (V.i_ellipsis, 1),
                  (V.w_copy_slice, 1), (V.s_ones_len, 1), (V.e_where, 2)]:
        body = body_of(vsource(fn, n))
        for bad in ("for ", "while ", "per_example(", "bmap("):
            assert bad not in body, f"{fn.__name__}: `{bad}` in the batched body:\n{body}"


def test_show_matches_generated_for():
    text = s2s.show(V.b_add, "vmap", in_axes=(0, None))
    assert text == s2s.vmap(V.b_add, in_axes=(0, None)).generated_for(2).source
    assert "def b_add_vmap(" in text


# ----- 2. control flow ------------------------------------------------------------
def _check(fn, args, in_axes, out_axes=0, per_arg=None):
    """vmap(fn)(*args) against the loop over examples (args already batched)."""
    got = s2s.vmap(fn, in_axes=in_axes, out_axes=out_axes)(*args)
    n = None
    for a, ax in zip(args, in_axes):
        if ax is not None:
            n = np.shape(a)[ax]
    outs = []
    for b in range(n):
        ex = [np.take(a, b, axis=ax) if ax is not None else a for a, ax in zip(args, in_axes)]
        ex = [float(e) if isinstance(e, np.ndarray) and e.ndim == 0 and e.dtype.kind == "f" else
              (int(e) if isinstance(e, np.ndarray) and e.ndim == 0 else e) for e in ex]
        outs.append(fn(*ex))
    if isinstance(outs[0], tuple):
        axes = out_axes if isinstance(out_axes, tuple) else (out_axes,) * len(outs[0])
        expected = tuple(np.stack([np.asarray(o[i]) for o in outs], axis=ax) if ax is not None else outs[0][i]
                         for i, ax in enumerate(axes))
    else:
        expected = np.stack([np.asarray(o) for o in outs], axis=out_axes) if out_axes is not None else outs[0]
    assert_same(got, expected, f"{fn.__name__} in_axes={in_axes} out_axes={out_axes}")
    return got


def test_if_pure_branches_use_where():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3))
    x[0] = np.abs(x[0])
    x[1] = -np.abs(x[1])
    _check(V.cf_if_pure, (x,), (0,))
    _check(V.cf_if_pure, (x.T,), (1,))
    body = body_of(vsource(V.cf_if_pure, 1))
    assert "np.where" in body, body
    assert "per_example(" not in body and "bmap(" not in body, body


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_if_pure_scalar_condition(in_axes):
    s = np.array([-1.0, 0.5, 2.0, -0.2, 0.0])
    v = np.arange(15.0).reshape(5, 3) - 4.0
    args = (s if in_axes[0] == 0 else 0.7, v if in_axes[1] == 0 else v[1])
    _check(V.cf_if_scalar, args, in_axes)
    if in_axes[0] == 0:
        body = body_of(vsource(V.cf_if_scalar, 2, in_axes=in_axes))
        assert "np.where" in body and "per_example(" not in body, body


def test_if_nested_pure():
    x = np.array([-2.0, -0.5, 0.3, 0.9, 1.5, 3.0])
    _check(V.cf_if_nested_pure, (x,), (0,))
    body = body_of(vsource(V.cf_if_nested_pure, 1))
    assert "np.where" in body and "per_example(" not in body, body


def test_if_impure_branch_falls_back_per_example():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3))
    x[0] = np.abs(x[0]) + 0.1
    x[1] = -np.abs(x[1]) - 0.1
    _check(V.cf_if_impure, (x,), (0,))
    _check(V.cf_if_impure, (x.T.copy(),), (-1,))
    src = vsource(V.cf_if_impure, 1)
    assert "per-example loop" in src, src
    assert "per_example(" in body_of(src), src


def test_while_per_example_trip_counts():
    x = np.array([0.3, 1.0, 9.5, 12.0, 2.5])
    got = _check(V.cf_while, (x,), (0,))
    # trip counts differ: 6, 4, 1, 0, 2
    assert len(set(np.round(got - np.array([V.cf_while(float(v)) for v in x]), 12))) == 1
    body = body_of(vsource(V.cf_while, 1))
    assert "per_example(" not in body, body


def test_while_tuple_output_with_unbatched_target():
    x = np.array([[0.1, 0.2], [1.0, 2.0], [3.0, 4.0], [0.5, 0.5]])
    _check(V.cf_while_tuple, (x, 5.0), (0, None))
    _check(V.cf_while_tuple, (x, np.array([1.0, 5.0, 50.0, 0.5])), (0, 0))
    _check(V.cf_while_tuple, (x.T.copy(), 5.0), (1, None), out_axes=(1, 0))


def test_for_over_unbatched_range():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (4, 3))
    _check(V.cf_for_range, (x, 3), (0, None))
    _check(V.cf_for_range, (x.T.copy(), 4), (1, None))
    body = body_of(vsource(V.cf_for_range, 2, in_axes=(0, None)))
    assert "per_example(" not in body, body


def test_for_with_batched_if_inside():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4))
    _check(V.cf_for_range_if, (x, 4), (0, None))
    _check(V.cf_for_range_if, (x, 2), (0, None))


def test_early_return_in_helper():
    x = np.array([-2.0, -0.5, 0.3, 1.5, 3.0])
    _check(V.cf_early_return, (x,), (0,))
    v = np.array([[0.5, 1.0, 1.5], [1.0, 3.0, 0.5], [4.0, 0.1, 0.2], [0.1, 0.2, 0.3]])
    _check(V.cf_early_return_arr, (v,), (0,))
    _check(V.cf_early_return_arr, (v.T.copy(),), (1,))


def test_if_one_sided():
    x = np.array([[1.0, 2.0], [-1.0, -3.0], [0.5, -0.2], [-0.5, 0.2]])
    _check(V.cf_if_one_sided, (x,), (0,))
    body = body_of(vsource(V.cf_if_one_sided, 1))
    assert "np.where" in body and "per_example(" not in body, body


def test_while_vector_state():
    x = np.array([[0.5, 0.2, 0.1], [3.0, -5.0, 0.2], [40.0, 1.0, 1.0], [1.5, 0.0, 0.0]])
    _check(V.cf_while_vec, (x,), (0,))
    _check(V.cf_while_vec, (x.T.copy(),), (1,), out_axes=(1, 0))
    body = body_of(vsource(V.cf_while_vec, 1))
    assert "per_example(" not in body, body


def test_for_over_len_of_batched():
    x = np.arange(20.0).reshape(4, 5) - 7.0
    _check(V.cf_for_len, (x,), (0,))
    body = body_of(vsource(V.cf_for_len, 1))
    assert "per_example(" not in body, body


def test_for_over_batched_trip_count():
    x = np.arange(20.0).reshape(4, 5) - 7.0
    n = np.array([0, 5, 2, 3])
    _check(V.cf_for_batched_n, (x, n), (0, 0))
    _check(V.cf_for_batched_n, (x, 3), (0, None))


def test_for_with_break_on_batched_condition():
    x = np.array([[1.0, 2.0, -1.0, 4.0, 5.0], [-1.0, 2.0, 3.0, 4.0, 5.0],
                  [1.0, 2.0, 3.0, 4.0, 5.0], [0.5, 0.5, 0.5, 0.5, -0.5]])
    _check(V.cf_for_break, (x,), (0,))


def test_if_on_unbatched_condition():
    x = np.linspace(-1, 1, 12).reshape(4, 3)
    _check(V.cf_if_unbatched, (x, 1), (0, None))
    _check(V.cf_if_unbatched, (x, -1), (0, None))


# ----- 3. in_axes / out_axes / axis_size ------------------------------------------------
def test_in_axes_int_none_tuple_negative():
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((4, 3))
    ws = rng.standard_normal((3, 4))
    _check(V.scaled, (xs, ws[:, 0]), (0, None))
    _check(V.scaled, (xs[0], ws), (None, 1))
    _check(V.scaled, (xs, ws), (0, -1))
    _check(V.scaled, (xs.T.copy(), ws), (-1, 1))
    got = s2s.vmap(V.scaled, in_axes=0)(xs, ws.T.copy())
    _check(V.scaled, (xs, ws.T.copy()), (0, 0))
    assert got.shape == (4, 3)
    # in_axes given as a list
    got2 = s2s.vmap(V.scaled, in_axes=[0, -1])(xs, ws)
    np.testing.assert_allclose(got2, s2s.vmap(V.scaled, in_axes=(0, 0))(xs, ws.T.copy()))


def test_out_axes():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3, 2))
    got = s2s.vmap(V.u_sin, out_axes=1)(x)
    np.testing.assert_allclose(got, np.moveaxis(np.sin(x), 0, 1))
    got = s2s.vmap(V.u_sin, out_axes=-1)(x)
    np.testing.assert_allclose(got, np.moveaxis(np.sin(x), 0, -1))
    got = s2s.vmap(V.u_sin, in_axes=2, out_axes=2)(x)
    np.testing.assert_allclose(got, np.sin(x))


def test_out_axes_none_for_unbatched_output():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3))
    out, c2 = s2s.vmap(V.const_output, in_axes=(0, None), out_axes=(0, None))(x, 1.5)
    np.testing.assert_allclose(out, np.sum(x, axis=1) + 1.5)
    assert np.shape(c2) == () and float(c2) == 3.0
    # out_axes=None for a batched output is an error
    with pytest.raises(s2s.S2SError, match="out_axes=None"):
        s2s.vmap(V.const_output, in_axes=(0, None), out_axes=None)(x, 1.5)


def test_tuple_outputs_with_tuple_out_axes():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 3))
    y = rng.standard_normal((4, 3))
    _check(V.two_outputs, (x, y), (0, 0), out_axes=(1, 0))
    _check(V.two_outputs, (x, y[0]), (0, None), out_axes=(-1, 0))
    _check(V.two_outputs, (x, y), (0, 0), out_axes=0)
    a, b = s2s.vmap(V.two_outputs, out_axes=(1, 0))(x, y)
    assert a.shape == (3, 4) and b.shape == (4,)


def test_axis_size_broadcasts_unbatched():
    x = np.array([0.1, 0.2, 0.3])
    got = s2s.vmap(V.no_batch_fn, in_axes=None, axis_size=5)(x)
    assert got.shape == (5, 3)
    np.testing.assert_allclose(got, np.broadcast_to(np.sin(x) + 1.0, (5, 3)))
    got = s2s.vmap(V.no_batch_fn, in_axes=(None,), out_axes=1, axis_size=2)(x)
    np.testing.assert_allclose(got, np.broadcast_to((np.sin(x) + 1.0)[:, None], (3, 2)))
    # with a batched argument, axis_size must agree
    got = s2s.vmap(V.no_batch_fn, axis_size=3)(np.ones((3, 2)))
    assert got.shape == (3, 2)


def test_nested_vmap_matrix_of_examples():
    rng = np.random.default_rng(9)
    A = rng.standard_normal((3, 4, 5))      # a 3x4 matrix of 5-vectors
    Bm = rng.standard_normal((3, 4, 5))
    got = s2s.vmap(s2s.vmap(V.pair_dot))(A, Bm)
    exp = np.array([[V.pair_dot(A[i, j], Bm[i, j]) for j in range(4)] for i in range(3)])
    assert_same(got, exp, "vmap(vmap(pair_dot))")


def test_nested_vmap_inner_none_outer_batched():
    rng = np.random.default_rng(10)
    xs = rng.standard_normal((4, 5))        # inner batch over x
    ws = rng.standard_normal((3, 5))        # outer batch over w
    # inner: f(w, x) over x (w fixed); outer: over w (x batch fixed)
    inner = s2s.vmap(V.scaled_swap, in_axes=(None, 0))
    got = s2s.vmap(inner, in_axes=(0, None))(ws, xs)
    exp = np.array([[V.scaled_swap(ws[i], xs[j]) for j in range(4)] for i in range(3)])
    assert_same(got, exp, "vmap(vmap(f, (None, 0)), (0, None))")
    # the other way: inner over w with x fixed; outer over x
    inner2 = s2s.vmap(V.scaled_swap, in_axes=(0, None))
    got2 = s2s.vmap(inner2, in_axes=(None, 0))(ws, xs)
    exp2 = np.array([[V.scaled_swap(ws[j], xs[i]) for j in range(3)] for i in range(4)])
    assert_same(got2, exp2, "vmap(vmap(f, (0, None)), (None, 0))")


def test_nested_vmap_axes_and_out_axes():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 3, 4))       # outer batch on axis 1, inner on axis 1 of the rest
    got = s2s.vmap(s2s.vmap(V.r_softmax, in_axes=0, out_axes=1), in_axes=1, out_axes=0)(x)
    # outer picks x[:, i, :] (5, 4); inner picks rows -> softmax over the last axis (4? no: inner in_axes=0
    # selects x[:, i, :][j] of shape (4,)); inner out_axes=1 -> (4, 5); outer out_axes=0 -> (3, 4, 5)
    exp = np.stack([np.stack([V.r_softmax(x[j, i, :]) for j in range(5)], axis=1) for i in range(3)], axis=0)
    assert_same(got, exp, "nested with axes")


def test_nested_vmap_tuple_output():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 4))
    y = rng.standard_normal((2, 3, 4))
    a, b = s2s.vmap(s2s.vmap(V.two_outputs))(x, y)
    exp_a = np.array([[V.two_outputs(x[i, j], y[i, j])[0] for j in range(3)] for i in range(2)])
    exp_b = np.array([[V.two_outputs(x[i, j], y[i, j])[1] for j in range(3)] for i in range(2)])
    assert_same((a, b), (exp_a, exp_b), "vmap(vmap(two_outputs))")


def test_nested_vmap_with_per_example_fallback_inside():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 3))
    got = s2s.vmap(s2s.vmap(V.cf_if_impure))(x)
    exp = np.array([[V.cf_if_impure(x[i, j]) for j in range(3)] for i in range(2)])
    assert_same(got, exp, "vmap(vmap(cf_if_impure))")


# errors
def test_error_nested_mismatched_batch_sizes_names_argument():
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(s2s.vmap(V.b_add))(np.ones((2, 3, 4)), np.ones((5, 3, 4)))
    msg = str(ei.value)
    assert "`y`" in msg and "5" in msg and "2" in msg, msg


def test_error_nested_in_axes_out_of_range_names_argument():
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(s2s.vmap(V.b_add), in_axes=(0, 3))(np.ones((2, 3, 4)), np.ones((2, 3, 4)))
    msg = str(ei.value)
    assert "`y`" in msg and "rank 3" in msg, msg


def test_error_mismatched_batch_sizes_names_argument():
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(V.b_add)(np.ones((4, 3, 4)), np.ones((5, 4)))
    msg = str(ei.value)
    assert "`y`" in msg and "5" in msg and "4" in msg, msg
    assert "`x`" in msg, msg


def test_error_mismatch_with_axis_size():
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(V.u_sin, axis_size=3)(np.ones((4, 2)))
    msg = str(ei.value)
    assert "`x`" in msg and "axis_size=3" in msg, msg


def test_error_in_axes_out_of_range():
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(V.b_add, in_axes=(0, 2))(np.ones((4, 3, 4)), np.ones((4, 4)))
    msg = str(ei.value)
    assert "in_axes=2" in msg and "`y`" in msg and "rank 2" in msg, msg
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(V.u_sin, in_axes=-3)(np.ones((4, 3)))
    msg = str(ei.value)
    assert "`x`" in msg and "rank 2" in msg, msg
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(V.u_sin)(2.0)     # a scalar has no batch axis
    msg = str(ei.value)
    assert "`x`" in msg and "rank 0" in msg, msg


def test_error_in_axes_length_mismatch():
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(V.b_add, in_axes=(0, None, 0))(np.ones((4, 3, 4)), np.ones(4))
    msg = str(ei.value)
    assert "3 entries" in msg and "2 arguments" in msg, msg


def test_error_in_axes_bad_entry():
    with pytest.raises(s2s.ArgumentError, match="in_axes entry 1 must be an int or None"):
        s2s.vmap(V.b_add, in_axes=(0, 1.5))(np.ones((4, 3, 4)), np.ones((4, 4)))


def test_error_no_batched_argument():
    with pytest.raises((s2s.ArgumentError, ValueError)) as ei:
        s2s.vmap(V.no_batch_fn, in_axes=None)(np.ones(3))
    msg = str(ei.value)
    assert "no argument is batched" in msg and "axis_size" in msg, msg


def test_error_out_axes_tuple_length():
    with pytest.raises(s2s.S2SError, match="out_axes has 3 entries but the function returns 2 values"):
        s2s.vmap(V.two_outputs, out_axes=(0, 0, 0))(np.ones((4, 3)), np.ones((4, 3)))


# ----- 4. composition -----------------------------------------------------------------
def _logistic_data(rng, n=5, d=3):
    w = rng.standard_normal(d)
    xs = rng.standard_normal((n, d))
    ys = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    return w, xs, ys


def test_per_example_grads_logistic():
    rng = np.random.default_rng(20)
    w, xs, ys = _logistic_data(rng)
    g = s2s.vmap(s2s.grad(V.logistic_loss), in_axes=(None, 0, 0))(w, xs, ys)
    assert g.shape == (5, 3)
    for b in range(5):
        loop = s2s.grad(V.logistic_loss)(w, xs[b], float(ys[b]))
        np.testing.assert_allclose(g[b], loop, rtol=1e-12, atol=1e-14)
        assert_close(g[b], numeric_grad(V.logistic_loss, (w, xs[b], float(ys[b])), 0))


def test_per_example_grads_logistic_source_has_no_loop():
    src = s2s.vmap(s2s.grad(V.logistic_loss), in_axes=(None, 0, 0)).generated_for(3).source
    body = body_of(src)
    for bad in ("for ", "while ", "per_example(", "bmap("):
        assert bad not in body, f"`{bad}` in vmap(grad(logistic_loss)):\n{src}"


def test_per_example_grads_mlp():
    rng = np.random.default_rng(21)
    W1 = rng.standard_normal((4, 3))
    b1 = rng.standard_normal(4)
    w2 = rng.standard_normal(4)
    xs = rng.standard_normal((5, 3))
    ys = rng.standard_normal(5)
    gfn = s2s.grad(V.mlp_loss, argnums=(0, 1, 2))
    gs = s2s.vmap(gfn, in_axes=(None, None, None, 0, 0))(W1, b1, w2, xs, ys)
    assert isinstance(gs, tuple) and len(gs) == 3
    assert [g.shape for g in gs] == [(5, 4, 3), (5, 4), (5, 4)]
    for b in range(5):
        args = (W1, b1, w2, xs[b], float(ys[b]))
        loop = gfn(*args)
        for k in range(3):
            np.testing.assert_allclose(gs[k][b], loop[k], rtol=1e-12, atol=1e-14)
            assert_close(gs[k][b], numeric_grad(V.mlp_loss, args, k))


def test_per_example_grads_loop_loss():
    rng = np.random.default_rng(22)
    w = rng.standard_normal(3)
    xs = rng.standard_normal((4, 3))
    ys = rng.standard_normal((4, 3))
    g = s2s.vmap(s2s.grad(V.loop_loss), in_axes=(None, 0, 0))(w, xs, ys)
    assert g.shape == (4, 3)
    for b in range(4):
        np.testing.assert_allclose(g[b], s2s.grad(V.loop_loss)(w, xs[b], ys[b]), rtol=1e-12, atol=1e-14)
        assert_close(g[b], numeric_grad(V.loop_loss, (w, xs[b], ys[b]), 0))
    # per-example gradients w.r.t. the batched argument, batch on axis 1
    gx = s2s.vmap(s2s.grad(V.loop_loss, argnums=1), in_axes=(None, 1, 1))(w, xs.T.copy(), ys.T.copy())
    for b in range(4):
        assert_close(gx[b], numeric_grad(V.loop_loss, (w, xs[b], ys[b]), 1))


def test_grad_of_function_calling_vmap():
    rng = np.random.default_rng(23)
    w = rng.standard_normal(3)
    xs = rng.standard_normal((5, 3))
    val = V.batch_loss(w, xs)
    np.testing.assert_allclose(val, sum(V.per_example_loss(w, xs[b]) for b in range(5)))
    g = s2s.grad(V.batch_loss)(w, xs)
    assert_close(g, numeric_grad(V.batch_loss, (w, xs), 0))
    gx = s2s.grad(V.batch_loss, argnums=1)(w, xs)
    assert_close(gx, numeric_grad(V.batch_loss, (w, xs), 1))


def test_grad_of_function_calling_vmap_mean_matrix():
    rng = np.random.default_rng(24)
    W = rng.standard_normal((2, 3))
    xs = rng.standard_normal((4, 3))
    g = s2s.grad(V.batch_loss_mean)(W, xs)
    assert_close(g, numeric_grad(V.batch_loss_mean, (W, xs), 0))


def test_grad_of_vmap_of_grad_inside():
    rng = np.random.default_rng(25)
    w, xs, ys = _logistic_data(rng, n=4)
    g = s2s.grad(V.inner_grad_batch)(w, xs, ys)
    assert_close(g, numeric_grad(V.inner_grad_batch, (w, xs, ys), 0), rtol=1e-4, atol=1e-5)


def test_vmap_of_vmap_against_double_loop():
    rng = np.random.default_rng(26)
    x = rng.standard_normal((3, 4, 2, 5))
    y = rng.standard_normal((5,))
    got = s2s.vmap(s2s.vmap(V.b_add, in_axes=(0, None)), in_axes=(0, None))(x, y)
    exp = np.array([[V.b_add(x[i, j], y) for j in range(4)] for i in range(3)])
    assert_same(got, exp, "vmap(vmap(b_add))")
    got = s2s.vmap(s2s.vmap(V.r_std_neg1))(x)
    exp = np.array([[V.r_std_neg1(x[i, j]) for j in range(4)] for i in range(3)])
    assert_same(got, exp, "vmap(vmap(r_std_neg1))")


JAC_CASES = [
    (V.jac_sin_mul, (np.array([0.3, -0.7, 1.2]),)),
    (V.jac_matvec, (np.array([0.2, -0.4, 0.9]), np.array([[1.0, 0.5, -0.3], [0.2, -1.1, 0.7]]))),
    (V.jac_softmax, (np.array([0.1, 0.5, -0.3, 0.8]),)),
    (V.jac_cumprod_like, (np.array([0.5, -1.5, 2.0]),)),
    (V.jac_norm_scale, (np.array([1.0, -2.0, 0.5]),)),
    (V.jac_matrix_in, (np.array([[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]]),)),
]


def fd_jacobian(f, args, argnum=0, eps=1e-6):
    args = list(args)
    x0 = np.array(args[argnum], dtype=float)
    out0 = np.asarray(f(*args), dtype=float)
    cols = []
    flat = x0.reshape(-1)
    for i in range(flat.size):
        h = eps * max(1.0, abs(flat[i]))
        p, m = flat.copy(), flat.copy()
        p[i] += h
        m[i] -= h
        ap, am = list(args), list(args)
        ap[argnum], am[argnum] = p.reshape(x0.shape), m.reshape(x0.shape)
        cols.append((np.asarray(f(*ap)) - np.asarray(f(*am))) / (p[i] - m[i]))
    return np.stack(cols, axis=-1).reshape(out0.shape + x0.shape)


@pytest.mark.parametrize("fn,args", JAC_CASES, ids=[c[0].__name__ for c in JAC_CASES])
@pytest.mark.parametrize("mode", ["jacrev", "jacfwd"])
def test_jacobians(fn, args, mode):
    jac = getattr(s2s, mode)(fn)(*args)
    expected = fd_jacobian(fn, args, 0)
    assert_close(jac, expected, rtol=1e-5, atol=1e-6, what=f"{mode}({fn.__name__})")


def test_jacobians_two_arguments():
    x, A = JAC_CASES[1][1]
    for mode in ("jacrev", "jacfwd"):
        jx, jA = getattr(s2s, mode)(V.jac_matvec, argnums=(0, 1))(x, A)
        assert_close(jx, fd_jacobian(V.jac_matvec, (x, A), 0), what=f"{mode} d/dx")
        assert_close(jA, fd_jacobian(V.jac_matvec, (x, A), 1), what=f"{mode} d/dA")


def test_vmap_of_generated_jvp():
    """vmap over tangents of the generated forward-mode function (what jacfwd does), out_axes=(None, 0)."""
    rng = np.random.default_rng(27)
    x = np.array([0.3, -0.7, 1.2])
    vs = rng.standard_normal((4, 3))
    jvp_fn = s2s.api.Transformed(V.jac_sin_mul, "jvp", 0)
    out, tans = s2s.vmap(jvp_fn, in_axes=(None, 0), out_axes=(None, 0))(x, vs)
    np.testing.assert_allclose(out, V.jac_sin_mul(x))
    J = fd_jacobian(V.jac_sin_mul, (x,))
    assert tans.shape == (4, 3)
    for b in range(4):
        assert_close(tans[b], J @ vs[b], what="vmap(jvp) tangent")
        _, t = s2s.jvp(V.jac_sin_mul, (x,), (vs[b],))
        np.testing.assert_allclose(tans[b], t, rtol=1e-12, atol=1e-14)
    # batched primals and tangents together
    xs = rng.standard_normal((4, 3))
    outs, tans = s2s.vmap(jvp_fn)(xs, vs)
    for b in range(4):
        o, t = s2s.jvp(V.jac_sin_mul, (xs[b],), (vs[b],))
        np.testing.assert_allclose(outs[b], o, rtol=1e-12)
        np.testing.assert_allclose(tans[b], t, rtol=1e-12, atol=1e-14)
