"""Adversarial tests for two optimizations of generated gradients.

* Rematerialization (s2s/analysis/remat.py): reverse mode recomputes cheap loop
  temporaries (reads of never-written arrays, arithmetic, comparisons, ufuncs of
  invariants / loop indices / earlier such temporaries) in the backward sweep
  instead of taping them.  Every case below is checked three ways: `grad` against
  central finite differences, `jit(grad)` against `grad` (rtol 1e-12), and the
  generated Python source for which user temporaries are (not) pushed on the tape,
  so a boundary that moves in either direction is noticed.
* Specialization (s2s/optimize/specialize.py): `jit(grad(f))` and
  `jit(value_and_grad(f))` answer `unbroadcast` / `seed_cotangent` from the ranks
  and dtype kinds of the actual arguments, and dead code goes.  Tested through
  `Jitted.generated_for_args` (the code a call runs) and by results.

Known bugs are `xfail(strict=True)` with the reason; each one starts passing (and so
fails here, on purpose) when it is fixed.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

numba = pytest.importorskip("numba")


import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad

RTOL_FD, ATOL_FD = 1e-5, 1e-6
RTOL_JIT = 1e-12


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

_JITTED: dict = {}


def jitted(fn, transform="grad", **kw):
    """One Jitted object per (function, transform, options), shared by every test in the
    module (Numba compiles once per signature)."""
    if kw.get("argnums") == 0:
        del kw["argnums"]
    key = (fn, transform, tuple(sorted(kw.items())))
    if key not in _JITTED:
        _JITTED[key] = s2s.jit(getattr(s2s, transform)(fn, **kw))
    return _JITTED[key]


def _nums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def assert_same(got, expected, what, rtol=RTOL_JIT, atol=1e-12):
    """Same structure and shapes, values within rtol (jit vs Python)."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), f"{what}: {got!r} vs {expected!r}"
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{what}[{k}]", rtol, atol)
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.shape == e.shape, f"{what}: shape {g.shape} != {e.shape}"
    np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=what)


def check_grad_fd_and_jit(f, args, argnums=0):
    """grad(f) against finite differences, jit(grad(f)) against grad(f). Returns grad(f)(*args)."""
    got = s2s.grad(f, argnums=argnums)(*args)
    grads = got if isinstance(argnums, tuple) else (got,)
    for n, g in zip(_nums(argnums), grads):
        assert_close(g, numeric_grad(f, args, n), rtol=RTOL_FD, atol=ATOL_FD,
                     what=f"grad of {f.__name__} w.r.t. argument {n}")
    assert_same(jitted(f, argnums=argnums)(*args), got, f"jit(grad({f.__name__}))")
    return got


def pushed_names(f, **kw) -> set[str]:
    """Variables the (Python, single-tape) generated gradient pushes on its tape."""
    return set(re.findall(r"push\(tape, (\w+)\)", s2s.show(f, **kw)))


def _rng(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------
# Rematerialization: user functions at its boundaries
# ---------------------------------------------------------------------------

def branchy(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        if x[i] > 0:
            s = s * 0.999 + np.sin(x[i]) * x[i]
        else:
            s = s * 0.998 - x[i]**2
    return s


def carried(x):
    # `t` is read (from the previous iteration) before its definition: loop-carried, must be taped
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        if i > 0:
            s = s + t * x[i]  # noqa: F821 (defined in the previous iteration)
        t = np.sin(x[i])
    return s


def written_same_loop(x):
    # `y` is read and then written in the same iteration: the read cannot be recomputed
    n = x.shape[0]
    y = x * 1.0
    s = 0.0
    for i in range(n):
        t = y[n - 1 - i]
        y[i] = np.sin(t) * 2.0
        s = s + t * t
    return s


def written_later_loop(x):
    # `y` is only written in a LATER loop, after every read: still not "never written"
    n = x.shape[0]
    y = x * 2.0
    s = 0.0
    for i in range(n):
        t = y[i]
        s = s + t * t * x[i]
    for j in range(n):
        y[j] = 0.0
    return s + np.sum(y) * s


def write_then_read(x):
    n = x.shape[0]
    y = np.zeros(n)
    s = 0.0
    for i in range(n):
        y[i] = np.sin(x[i])
        t = y[i]
        s = s + t * t
    return s


def view_of_written(x):
    # `v` is a view of `y`, which was written (before the view was taken)
    n = x.shape[0]
    y = x * 1.0
    y[0] = 3.0
    v = y[1:]
    s = 0.0
    for i in range(n - 1):
        t = v[i]
        s = s + np.sin(t) * x[i] * t
    return s


def enumerate_written(x):
    # the loop variable `v` reads `y`, which the loop body writes ahead of it
    n = x.shape[0]
    y = x * 1.0
    s = 0.0
    for k, v in enumerate(y):
        s = s + v * v * x[k]
        if k + 1 < n:
            y[k + 1] = y[k + 1] + np.sin(v)
    return s


def nested(x, w):
    # an outer-loop temporary (`a`) feeds inner-loop temporaries (`b`, `c`)
    n = x.shape[0]
    m = w.shape[0]
    s = 0.0
    for i in range(n):
        a = x[i] * 1.5
        for j in range(m):
            b = a * w[j]
            c = np.tanh(b)
            s = s * 0.9 + c * x[i]
    return s


def triangular(x):
    # the inner loop's bound is a recomputed temporary of the outer index
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        m = i + 1
        xi = x[i]
        for j in range(m):
            p = xi * x[j]
            s = s + np.sin(p) * s
    return s


def reuse_loop_var(x):
    # the same loop variable name in two sequential loops with different ranges
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        t = x[i]
        s = s + np.sin(t) * s + t
    for i in range(n - 1):
        u = x[i + 1] * x[i]
        s = s * 0.5 + np.cos(u) * s
    return s


def branch_temp(x):
    # temporaries defined in one branch of an if only
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        c = x[i] > 0
        if c:
            t = np.exp(x[i])
            s = s + t * s + t
        else:
            s = s * 0.5 - x[i]
    return s


def read_after_loop(x):
    # a recomputed temporary is also read after its loop (its last value)
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        t = np.sin(x[i]) * x[0]
        s = s + t * t
    return s + t * 3.0 + s * t


def read_after_loop_branch(x):
    # ... defined in a branch: after the loop it holds the last iteration that took the branch
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        if x[i] > 0:
            t = x[i] * x[i]
            s = s + t
    return s * t


def loop_index_after(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s = s + np.sin(x[i])
    return s * i


def while_loop(x):
    # `t` reads the while counter (not invariant): taped; `u` only invariants: recomputed
    n = x.shape[0]
    s = 0.0
    k = 0
    while k < n:
        t = x[k] * 2.0
        u = np.cos(x[0])
        s = s * u + t * t
        k = k + 1
    return s


def while_in_for(x):
    # a temporary inside a while loop that reads the enclosing for loop's index
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        j = 0
        while j < 2:
            t = x[i] * 0.5
            s = s * 0.9 + np.sin(t) * s + t
            j = j + 1
    return s


def negative_step(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n - 1, -1, -2):
        t = x[i]
        c = np.sin(t)
        s = s * c + t
    return s


def reversed_range(x):
    n = x.shape[0]
    s = 0.0
    for i in reversed(range(1, n)):
        t = x[i] - x[i - 1]
        s = s * 0.7 + t * t * s + t
    return s


def enumerate_loop(x):
    s = 0.0
    for i, xi in enumerate(x):
        s = s * 0.8 + np.sin(xi) * i + xi * s
    return s


def zip_loop(x, w):
    s = 0.0
    for a, b in zip(x, w):
        p = a * b
        s = s * np.cos(a) + p
    return s


def iterate_array(x):
    s = 0.0
    for r in x:
        s = s * 0.9 + np.exp(r) * s + r
    return s


def slice_temp(x):
    # an array-valued temporary: a slice whose bounds are loop-index arithmetic
    n = x.shape[0]
    s = 0.0
    for i in range(n - 1):
        t = x[i:i + 2]
        u = np.sin(t) * t
        s = s * 0.9 + np.sum(u) * s + u[0]
    return s


def tuple_index(x):
    n = x.shape[0]
    m = x.shape[1]
    s = 0.0
    for i in range(n):
        for j in range(m):
            t = x[i, j]
            c = t > 0.1
            if c:
                s = s * 0.9 + np.exp(t) * x[i, 0]
            else:
                s = s - t * x[n - 1 - i, m - 1 - j]
    return s


def row_view_alias(x):
    # `r = y[0]` is a view of row 0 of `y` (integer indexing of a 2-D array), and the loop
    # writes y[0, i] right after reading r[i]: `r` is not "never written"
    n = x.shape[1]
    y = x * 1.0
    r = y[0]
    s = 0.0
    for i in range(n):
        t = r[i]
        s = s + t * t
        y[0, i] = 0.5 * t
    return s + np.sum(y)


def flip_view_alias(x):
    # np.flip returns a view: writing v[n-1-i] writes y[i] right after it was read
    n = x.shape[0]
    y = x * 1.0
    v = np.flip(y)
    s = 0.0
    for i in range(n):
        t = y[i]
        s = s + t * t
        v[n - 1 - i] = 0.5 * t
    return s + np.sum(v)


def _x(seed, shape=(6,)):
    def make():
        x = _rng(seed).standard_normal(shape)
        return (x,)
    return make


def _x_pos_neg(seed):
    def make():
        x = _rng(seed).standard_normal(7)
        x[1], x[-1] = 0.7, -0.3     # both branches taken, the last iteration takes `else`
        return (x,)
    return make


def _x_w(seed, n=6, m=4):
    def make():
        r = _rng(seed)
        return r.standard_normal(n), r.standard_normal(m)
    return make


# (function, args factory, argnums, names that must be recomputed, names that must stay taped)
REMAT_CASES = [
    # (s was taped for unbroadcast's shape only: `s * 0.999` has s's shape, so nothing reads it now)
    pytest.param(branchy, _x(1), 0, {"t2", "t3", "t5", "t6", "t7", "t10", "t11"}, set(), id="branchy"),
    pytest.param(carried, _x(2), 0, set(), {"t"}, id="loop_carried"),
    pytest.param(written_same_loop, _x(3), 0, set(), {"t"}, id="written_same_loop"),
    pytest.param(written_later_loop, _x(4), 0, set(), {"t"}, id="written_later_loop"),
    pytest.param(write_then_read, _x(5), 0, set(), {"t"}, id="write_then_read"),
    pytest.param(view_of_written, _x(6), 0, set(), {"t"}, id="view_of_written"),
    pytest.param(enumerate_written, _x(7), 0, set(), {"v"}, id="enumerate_written"),
    pytest.param(nested, _x_w(8), (0, 1), {"a", "b", "c"}, set(), id="nested_outer_feeds_inner"),
    pytest.param(triangular, _x(9), 0, {"m", "xi", "p"}, set(), id="triangular"),
    pytest.param(reuse_loop_var, _x(10), 0, {"t", "u"}, set(), id="reuse_loop_var"),
    pytest.param(branch_temp, _x(11), 0, {"c", "t"}, set(), id="branch_temp"),
    pytest.param(read_after_loop, _x(12), 0, {"t"}, set(), id="read_after_loop"),
    pytest.param(read_after_loop_branch, _x_pos_neg(13), 0, {"t"}, set(), id="read_after_loop_branch"),
    pytest.param(loop_index_after, _x(14), 0, set(), set(), id="loop_index_after"),
    pytest.param(while_loop, _x(15), 0, {"u"}, {"t"}, id="while_loop"),
    pytest.param(while_in_for, _x(16), 0, {"t"}, set(), id="while_in_for"),
    pytest.param(negative_step, _x(17), 0, {"t", "c"}, set(), id="negative_step"),
    pytest.param(enumerate_loop, _x(18), 0, {"xi"}, set(), id="enumerate"),
    pytest.param(zip_loop, _x_w(19, 6, 6), (0, 1), {"a", "b", "p"}, set(), id="zip"),
    pytest.param(iterate_array, _x(20), 0, {"r"}, set(), id="iterate_array"),
    pytest.param(slice_temp, _x(21), 0, {"t", "u"}, set(), id="slice_temp"),
    pytest.param(tuple_index, _x(22, (4, 3)), 0, {"t", "c"}, set(), id="tuple_index"),
    pytest.param(row_view_alias, _x(23, (2, 5)), 0, set(), {"t"}, id="row_view_alias"),
]


def test_write_through_a_flip_view_is_refused():
    # np.flip returns a view of y: writing into it changes y, which s2s refuses rather than
    # differentiating wrongly (it was accepted as a fresh array, and remat then read the new value)
    (x,) = _x(24)()
    with pytest.raises(s2s.UnsupportedSyntaxError) as info:
        s2s.grad(flip_view_alias)(x)
    assert "v[n - 1 - i] = 0.5 * t" in (info.value.source_line or "")


@pytest.mark.parametrize(("f", "make", "argnums", "recomputed", "taped"), REMAT_CASES)
def test_remat_grad_fd_and_jit(f, make, argnums, recomputed, taped):
    args = make()
    src_pushed = pushed_names(f, argnums=argnums)
    # the values first (an aliasing bug shows here), then where the boundary lies
    check_grad_fd_and_jit(f, args, argnums)
    assert not (recomputed & src_pushed), f"expected recomputed, but taped: {sorted(recomputed & src_pushed)}"
    assert taped <= src_pushed, f"expected taped, but not pushed: {sorted(taped - src_pushed)}"


def loop_var_reassigned(x):
    # the loop variable is reassigned in the body: `u = x[i]` reads the NEW i, so neither `t`
    # nor `u` may be recomputed from the loop's own index in the backward sweep
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        t = x[i]
        i = n - 1 - i
        u = x[i]
        s = s * 0.9 + t * u * s + np.sin(u)
    return s


def test_loop_var_reassigned_grad_is_refused():
    # the backward sweep replays the loop by its index: assigning to it would give a wrong
    # gradient, so it is refused at the user's line
    (x,) = _x(28)()
    with pytest.raises(s2s.UnsupportedSyntaxError) as info:
        s2s.grad(loop_var_reassigned)(x)
    assert "loop variable" in str(info.value) and info.value.lineno is not None


def test_reversed_range_grad():
    (x,) = _x(25)()
    g = s2s.grad(reversed_range)(x)
    assert_close(g, numeric_grad(reversed_range, (x,), 0), rtol=RTOL_FD, atol=ATOL_FD)
    assert "t" not in pushed_names(reversed_range)


def test_reversed_range_jit():
    (x,) = _x(25)()
    assert_same(jitted(reversed_range)(x), s2s.grad(reversed_range)(x), "jit(grad(reversed_range))")


def test_remat_happens_in_branchy_source():
    """The Python gradient of the branchy recurrence tapes `s` and the `s * c` products only:
    every x[i] read, the comparison and the sin are recomputed in the backward sweep."""
    src = s2s.show(branchy)
    fwd, bwd = src.split("# --- backward sweep ---")
    reads = set(re.findall(r"^\s*(\w+) = x\[i\]$", fwd, re.M))
    assert len(reads) == 4, reads          # the four x[i] reads of the forward sweep
    pushed = set(re.findall(r"push\(tape, (\w+)\)", src))
    assert not reads & pushed, f"x[i] temporaries taped: {reads & pushed}"
    # ... and each is recomputed in the backward sweep, not popped
    for v in reads:
        assert re.search(rf"^\s*{v} = x\[i\]$", bwd, re.M), v
        assert not re.search(rf"^\s*{v} = pop\(", bwd, re.M), v
    cond = re.search(r"^\s*(\w+) = (\w+) > 0$", fwd, re.M).group(1)
    assert cond not in pushed and re.search(rf"^\s*if {cond}:", bwd, re.M)
    assert "cond" not in src                # the branch taken is recomputed, not saved
    assert pushed <= {"s"} | set(re.findall(r"^\s*(\w+) = s \* 0\.99[89]$", fwd, re.M))


def test_remat_value_and_grad_has_aux_temp():
    """A recomputed temporary returned as aux / as the value is its forward (last-iteration)
    value, not what the backward sweep recomputed last (the first iteration's)."""
    def f(x):
        n = x.shape[0]
        s = 0.0
        for i in range(n):
            t = np.sin(x[i]) * 2.0
            s = s + t * s + t
        return s, t

    def g(x):
        n = x.shape[0]
        s = 0.0
        for i in range(n):
            t = np.sin(x[i]) * 2.0
            s = s + t
        return t * s

    (x,) = _x(26)()
    value, aux = f(x)
    dx = numeric_grad(lambda x: f(x)[0], (x,), 0)
    (v1, a1), g1 = s2s.value_and_grad(f, has_aux=True)(x)
    g2, a2 = s2s.grad(f, has_aux=True)(x)
    assert_close(g1, dx)
    assert_close(g2, dx)
    assert v1 == pytest.approx(value, rel=1e-14) and a1 == pytest.approx(aux, rel=1e-14)
    assert a2 == pytest.approx(aux, rel=1e-14)
    assert_same(jitted(f, "value_and_grad", has_aux=True)(x), ((v1, a1), g1), "jit(value_and_grad(has_aux))")
    assert_same(jitted(f, has_aux=True)(x), (g2, a2), "jit(grad(has_aux))")
    v3, g3 = s2s.value_and_grad(g)(x)
    assert v3 == pytest.approx(g(x), rel=1e-14)
    assert_close(g3, numeric_grad(g, (x,), 0))
    assert_same(jitted(g, "value_and_grad")(x), (v3, g3), "jit(value_and_grad(g))")


def aux_loop_index(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        t = np.sin(x[i])
        s = s + t * s + t
    return s, i


def test_aux_is_the_loop_index():
    (x,) = _x(27)()
    _, aux = s2s.grad(aux_loop_index, has_aux=True)(x)
    assert aux == x.shape[0] - 1


# ---------------------------------------------------------------------------
# Specialization on argument ranks and dtypes (jit of grad / value_and_grad)
# ---------------------------------------------------------------------------

def _loops(src):
    return re.findall(r"^\s*for .* in .*:$", src, re.M)


def test_specialized_branchy_1d_has_no_tapes_and_no_forward_loop():
    (x,) = _x(30, (12,))()
    j = jitted(branchy)
    got = j(x)
    ref = s2s.grad(branchy)(x)
    assert_same(got, ref, "jit(grad(branchy))")
    assert_close(got, numeric_grad(branchy, (x,), 0))
    src = j.generated_for_args(x).source
    body = src.split("def branchy_grad", 1)[1]
    assert "unbroadcast" not in body and "seed_cotangent" not in body
    assert "List(" not in body and ".append(" not in body and "tape" not in body, body
    assert "ds = 1.0" in body
    # only the backward loop is left
    assert len(_loops(body)) == 1 and "reversed" in _loops(body)[0], _loops(body)
    # the unspecialized Python gradient has both loops, a tape and the helpers
    py = s2s.show(branchy)
    assert len(_loops(py)) == 2 and "unbroadcast(" in py and "push(tape" in py


def mixed_rank(x):
    # x[i] is a number for 1-D x and a row for 2-D x; s stays a scalar either way
    n = x.shape[0]
    s = 1.0
    for i in range(n):
        v = np.sin(x[i]) * s
        s = 0.5 * s + np.sum(v * x[i]) * 0.1
    return s


def test_same_jitted_on_1d_then_2d_then_1d():
    j = jitted(mixed_rank)
    r = _rng(31)
    x1, x2 = r.standard_normal(7), r.standard_normal((5, 3))
    for x in (x1, x2, x1):
        ref = s2s.grad(mixed_rank)(x)
        assert_close(ref, numeric_grad(mixed_rank, (x,), 0))
        assert_same(j(x), ref, f"jit(grad(mixed_rank)) on ndim={x.ndim}")
    src2 = j.generated_for_args(x2).source
    assert j.generated_for_args(x1) is not j.generated_for_args(x2)
    # the scalar s receives the row v * sin(x[i]): it must still be summed down in the 2-D code
    assert re.search(r"\bds = ds \+ (unbroadcast|np\.sum)\(dv \* ", src2), src2


def test_mixed_rank_float32():
    j = jitted(mixed_rank)
    r = _rng(32)
    for x in (r.standard_normal(6).astype(np.float32), r.standard_normal((4, 3)).astype(np.float32)):
        ref = s2s.grad(mixed_rank)(x)
        got = j(x)
        assert np.shape(got) == x.shape
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=1e-5,
                                   atol=1e-6)


def rows_times_scalar(x, c):
    # d c collects a row per iteration for 2-D x: `unbroadcast(.., c)` must sum it
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        q = x[i] * c
        s = s + np.sum(np.sin(q))
    return s


def test_scalar_parameter_collects_rows():
    j = jitted(rows_times_scalar, argnums=(0, 1))
    r = _rng(33)
    for x in (r.standard_normal(6), r.standard_normal((4, 3))):
        args = (x, 0.8)
        ref = check_grad_fd_and_jit(rows_times_scalar, args, (0, 1))
        got = j(*args)
        assert np.ndim(got[1]) == 0, f"gradient of the scalar c has shape {np.shape(got[1])}"
        assert got[1] == pytest.approx(float(ref[1]), rel=1e-12)


def scal_loop(x):
    s = 0.0
    for i in range(3):
        s = s * 0.5 + np.sin(x) * x
    return s


def scal_plain(x):
    return np.sin(x) * x + x * x


@pytest.mark.parametrize("make", [lambda: 0.7, lambda: np.float64(-0.4), lambda: np.array(1.3)],
                         ids=["python_float", "np_float64", "0d_array"])
@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_scalar_and_0d_arguments(make, transform):
    x = make()
    ref = getattr(s2s, transform)(scal_plain)(x)
    g = ref[1] if transform == "value_and_grad" else ref
    assert_close(g, numeric_grad(scal_plain, (x,), 0))
    assert_same(jitted(scal_plain, transform)(x), ref, f"jit({transform}(scal_plain))")
    if transform == "value_and_grad":
        assert ref[0] == pytest.approx(scal_plain(x), rel=1e-14)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_scalar_argument_in_a_loop(transform):
    x = 0.7
    ref = getattr(s2s, transform)(scal_loop)(x)
    g = ref[1] if transform == "value_and_grad" else ref
    assert_close(g, numeric_grad(scal_loop, (x,), 0))
    j = jitted(scal_loop, transform)
    assert_same(j(x), ref, f"jit({transform}(scal_loop))")
    src = j.generated_for_args(x).source
    assert "unbroadcast" not in src and "seed_cotangent" not in src


def test_0d_array_argument_in_a_loop():
    x = np.array(0.7)
    assert_same(jitted(scal_loop)(x), s2s.grad(scal_loop)(x), "jit(grad(scal_loop)) on a 0-d array")


def fancy_index(x, w, idx):
    r = x[idx]
    q = r * w
    z = q * q
    return z[0] + z[1] * 2.0


def test_array_index_is_not_a_scalar():
    """x[idx] with an integer ARRAY idx is an array: the gradient of the scalar w must still
    be summed (a rank-0 guess for x[idx] would return an array for dw)."""
    (x,) = _x(34)()
    idx = np.array([1, 3, 3, 0])
    args = (x, 0.7, idx)
    ref = check_grad_fd_and_jit(fancy_index, args, (0, 1))
    got = jitted(fancy_index, argnums=(0, 1))(*args)
    assert np.ndim(got[1]) == 0 and got[1] == pytest.approx(float(ref[1]), rel=1e-12)
    src = jitted(fancy_index, argnums=(0, 1)).generated_for_args(*args).source
    assert re.search(r"\bdw = (unbroadcast|np\.sum)\(dq \* r", src), src


def bool_scalar_index(x, W, w):
    c = w > 0
    r = x[c]            # x[True] is x[None]: shape (1, n), not a number
    q = r * W
    return q[1, 2]


def bool_mask_index(x, m, w):
    r = x[m]
    q = r * w
    z = q * q
    return z[0] + z[1] * 2.0


def test_bool_index_is_not_a_scalar():
    r = _rng(35)
    x, W = r.standard_normal(6), r.standard_normal((3, 6))
    ref = s2s.grad(bool_scalar_index)(x, W, 0.5)
    assert_close(ref, numeric_grad(bool_scalar_index, (x, W, 0.5), 0))
    j = s2s.jit(s2s.grad(bool_scalar_index), fallback=True)
    src = j.generated_for_args(x, W, 0.5).source
    assert re.search(r"\bdr = unbroadcast\(dq \* W, r\)", src), src
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(j(x, W, 0.5), ref, "jit(grad(bool_scalar_index), fallback=True)")
    m = np.array([True, False, True, True, False, False])
    src = jitted(bool_mask_index, argnums=(0, 2)).generated_for_args(x, m, 0.7).source
    assert re.search(r"\bdw = (unbroadcast|np\.sum)\(dq \* r", src), src
    ref = s2s.grad(bool_mask_index, argnums=(0, 2))(x, m, 0.7)
    assert_close(ref[1], numeric_grad(bool_mask_index, (x, m, 0.7), 2))


def test_value_and_grad_keeps_the_forward_loop():
    (x,) = _x(36, (9,))()
    j = jitted(branchy, "value_and_grad")
    value, g = j(x)
    assert value == pytest.approx(branchy(x), rel=1e-13)
    assert_same((value, g), s2s.value_and_grad(branchy)(x), "jit(value_and_grad(branchy))")
    src = j.generated_for_args(x).source
    assert len(_loops(src)) == 2, _loops(src)
    assert "seed_cotangent" not in src and "unbroadcast" not in src


def test_value_and_grad_has_aux_under_jit():
    def f(x):
        n = x.shape[0]
        s = 0.0
        m = 0.0
        for i in range(n):
            if x[i] > 0:
                s = s * 0.999 + np.sin(x[i]) * x[i]
            else:
                s = s * 0.998 - x[i]**2
            m = np.maximum(m, x[i])
        return s, m

    (x,) = _x(37, (8,))()
    value, aux = f(x)
    (v, a), g = jitted(f, "value_and_grad", has_aux=True)(x)
    assert v == pytest.approx(value, rel=1e-13) and a == pytest.approx(aux, rel=1e-14)
    assert_close(g, numeric_grad(lambda x: f(x)[0], (x,), 0))
    g2, a2 = jitted(f, has_aux=True)(x)
    assert a2 == pytest.approx(aux, rel=1e-14)
    assert_same(g2, g, "jit(grad(has_aux))")


def nonscalar_out(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s = s + x[i] * x
    return s


def complex_out(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s = s + np.exp(1j * x[i])
    return s


@pytest.mark.parametrize("f", [nonscalar_out, complex_out], ids=["nonscalar", "complex"])
def test_bad_outputs_still_refused(f):
    (x,) = _x(38, (5,))()
    with pytest.raises(s2s.NonDifferentiableError):
        s2s.grad(f)(x)
    j = s2s.jit(s2s.grad(f))
    # the specialized code cannot answer the seed statically: the run-time check stays
    assert "seed_cotangent(" in j.generated_for_args(x).source
    with pytest.raises(s2s.S2SError):
        j(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(s2s.NonDifferentiableError):
            s2s.jit(s2s.grad(f), fallback=True)(x)


def identity_out(x):
    return x


def slices_out(x):
    return x[0:2] + x[1:3]


def complex_scalar_out(x):
    return x[0] * 0.5 + 1j


@pytest.mark.parametrize("f", [
    pytest.param(identity_out, id="identity"),
    pytest.param(slices_out, id="slices"),
    pytest.param(complex_scalar_out, id="complex_scalar"),
])
def test_bad_outputs_under_jit_raise_s2s_errors(f):
    (x,) = _x(39, (5,))()
    with pytest.raises(s2s.NonDifferentiableError):
        s2s.grad(f)(x)
    try:
        s2s.jit(s2s.grad(f))(x)
    except s2s.S2SError:
        return
    except Exception as exc:   # noqa: BLE001
        raise AssertionError(f"jit(grad({f.__name__})) raised {type(exc).__name__}: {exc}") from None
    raise AssertionError(f"jit(grad({f.__name__})) returned a value")


def test_integer_argument_refused_under_jit():
    x = np.arange(5)
    with pytest.raises(s2s.NonDifferentiableError):
        s2s.grad(mixed_rank)(x)
    try:
        jitted(mixed_rank)(x)
    except s2s.NonDifferentiableError:
        return
    raise AssertionError("jit(grad(mixed_rank)) accepted an integer array")
