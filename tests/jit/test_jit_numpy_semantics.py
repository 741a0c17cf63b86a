"""jit computes what NumPy computes, and what s2s hands back is the caller's to change.

- Division by zero under jit gives NumPy's inf/nan (Numba's error_model='numpy'), not Python's
  ZeroDivisionError: in fused loops, on scalars, for integer `//` and `%` (0, as NumPy), and in
  the derivatives of sqrt/log/cbrt/arcsin/arccos/power at the edge of their domain; a second
  process on the same cache, and a cache written by code compiled with Python's error model,
  give the same answers.
- target="parallel" broadcasts as NumPy does ((1,) with (5,), (3, 1) with (1, 3), () with (4,)):
  the same values and gradients as target="cpu" and plain NumPy.
- Every transform's results are writeable arrays of their own: `g *= 2` works and changes
  nothing the caller passed in (grad of np.sum used to return a read-only zero-stride view).
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s

pytest.importorskip("numba")


def _same(got, want):
    """Equal values, NaN and inf at the same places, in any nesting of tuples."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=1e-12, atol=0, equal_nan=True)
    assert np.shape(got) == np.shape(want)


# ----- division by zero: NumPy's inf/nan -------------------------------------------------------

def quotients(x, k):
    """Float and integer quotients and remainders by zero (x float, k integer)."""
    return 1.0 / x, x // 0.0, x % 0.0, k // 0, k % 0, np.sum(1.0 / x)


def edges(x, y, z):
    """Functions whose derivative is infinite at an edge of their domain: x at 0, y and z at 1."""
    return np.sum(np.sqrt(x) + np.log(x) + np.cbrt(x) + np.power(x, 0.5) + np.arcsin(y)) \
        + np.sum(np.arccos(z))


def test_division_by_zero_gives_numpys_inf_and_nan():
    """jit(f) == f where f divides by zero, on arrays and on NumPy scalars (float and int)."""
    fast = s2s.jit(quotients)
    with np.errstate(all="ignore"):
        for x, k in [(np.array([0.0, -2.0, 3.0]), np.array([0, 5, -7])), (np.float64(0.0), np.int64(3))]:
            _same(fast(x, k), quotients(x, k))


def test_derivatives_at_the_edge_of_the_domain_are_numpys():
    """jit(grad(f)) == grad(f) (inf, -inf at the same places) for sqrt/log/cbrt/power at 0 and
    arcsin/arccos at 1, on arrays and on scalars."""
    g = s2s.grad(edges, argnums=(0, 1, 2))
    fast = s2s.jit(g)
    with np.errstate(all="ignore"):
        for args in [(np.array([0.0, 0.5]), np.array([1.0, 0.5]), np.array([1.0, -0.5])),
                     (np.float64(0.0), np.float64(1.0), np.float64(1.0))]:
            want = g(*args)
            assert np.isinf(want[0]).any() and np.isinf(want[2]).any()      # (the edges are hit)
            _same(fast(*args), want)


CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import s2s                              # (division, beside this script, is on its sys.path)
    import s2s.codegen.version
    s2s.codegen.version._PKG_VERSION = "0123456789abcdef"     # (one s2s for all three processes)
    if sys.argv[1] == "python":             # code compiled as before: Python's error model
        from s2s.backends.numba_lower import common
        common.ERROR_MODEL = "python"
    from division import inverse
    warnings.simplefilter("ignore")
    out = {{}}
    try:
        out["primal"] = np.asarray(s2s.jit(inverse)(np.array([0.0, 2.0]))).tolist()
    except ZeroDivisionError as exc:
        out["primal"] = "ZeroDivisionError"
    print(json.dumps(out))
""")


def test_cached_code_keeps_numpys_division(tmp_path):
    """Code a process compiled with Python's error model (as older versions did) into the same
    cache is not what a later process loads: it gets NumPy's inf."""
    (tmp_path / "division.py").write_text("import numpy as np\n\n\ndef inverse(x):\n"
                                          "    return np.sum(1.0 / x)\n")
    (tmp_path / "child.py").write_text(CHILD.format())
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))

    def run(mode):
        done = subprocess.run([sys.executable, str(tmp_path / "child.py"), mode], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])
    with np.errstate(all="ignore"):
        want = {"primal": inverse_np(np.array([0.0, 2.0])).tolist()}
    old = run("python")
    assert old == {"primal": "ZeroDivisionError"}     # (what it was)
    assert run("numpy") == want


def inverse_np(x):
    return np.sum(1.0 / x)


# ----- target="parallel" broadcasts ------------------------------------------------------------

def mixed(x, y):
    return np.sum(x * y + x / (1.0 + y * y))


def _parallel_matches_numpy(x, y, primal=True):
    with np.errstate(all="ignore"):
        if primal:
            _same(s2s.jit(mixed, target="parallel")(x, y), mixed(x, y))
        vg = s2s.value_and_grad(mixed, argnums=(0, 1))
        _same(s2s.jit(vg, target="parallel")(x, y), vg(x, y))


def test_parallel_broadcasts_like_numpy():
    """jit(value_and_grad(f), target="parallel") == value_and_grad(f) when the arguments
    broadcast ((1,) with (5,), (5,) with (1,)) and when they do not (the fused prange loop)."""
    rng = np.random.default_rng(0)
    for shapes in [((1,), (5,)), ((5,), (1,)), ((5,), (5,))]:
        _parallel_matches_numpy(rng.normal(size=shapes[0]), rng.normal(size=shapes[1]), primal=False)


@pytest.mark.slow
@pytest.mark.parametrize("shapes", [((1,), (5,)), ((3, 1), (1, 3)), ((), (4,)), ((2, 3), (3,))])
def test_parallel_broadcasts_like_numpy_other_ranks(shapes):
    """jit(f, target="parallel") == f, and the same for value_and_grad, for 1-d against 1-d, 2-d
    against 2-d, a scalar against a vector, 2-d against 1-d (the target="cpu" gradient too)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=shapes[0]) if shapes[0] else np.float64(0.3)
    y = rng.normal(size=shapes[1])
    _parallel_matches_numpy(x, y)
    g = s2s.grad(mixed, argnums=(0, 1))
    _same(s2s.jit(g)(x, y), g(x, y))


# ----- results are the caller's own ------------------------------------------------------------

def total(x):
    return np.sum(x)


def same(x):
    return x


def square_sum(x, w):
    return np.sum(w * x * x)


def _own(out, inputs):
    """Every array in `out` can be changed in place and shares no memory with `inputs`."""
    arrays = [o for o in (out if isinstance(out, tuple) else (out,))]
    flat = []
    while arrays:
        a = arrays.pop()
        if isinstance(a, tuple):
            arrays += list(a)
        elif isinstance(a, np.ndarray):
            flat.append(a)
    assert flat
    for a in flat:
        before = [i.copy() for i in inputs]
        assert not any(np.shares_memory(a, i) for i in inputs)
        a *= 2.0
        for i, b in zip(inputs, before):
            np.testing.assert_array_equal(i, b)


def test_every_transform_returns_writeable_arrays_of_its_own():
    """grad, value_and_grad, vjp (value and cotangents), jvp (both forms), jacfwd, jacrev,
    hessian and vmap: `g *= 2` works on each result and leaves the arguments as they were."""
    x = np.arange(1.0, 5.0)
    w = np.full(4, 0.5)
    t = np.ones(4)
    xs = np.ones((3, 4))
    _own(s2s.grad(total)(x), [x])
    _own(s2s.grad(square_sum, argnums=(0, 1))(x, w), [x, w])
    _own(s2s.value_and_grad(total)(x)[1], [x])
    out, vjp_fn = s2s.vjp(same, x)
    _own(out, [x])
    _own(vjp_fn(t), [x, t])
    whole = np.arange(8.0)
    _own(vjp_fn(whole[2:6]), [whole])          # (a view of another array's memory)
    _own(s2s.vjp(total, x)[1](1.0), [x])
    _own(s2s.jvp(same, (x,), (t,)), [x, t])
    _own(s2s.jvp(same)(x, t), [x, t])
    _own(s2s.jacfwd(same)(x), [x])
    _own(s2s.jacrev(total)(x), [x])
    _own(s2s.hessian(total)(x), [x])
    _own(s2s.vmap(same)(xs), [xs])
    _own(s2s.vmap(s2s.grad(total))(xs), [xs])
    _own(s2s.vmap(same, in_axes=1, out_axes=1)(xs), [xs])
