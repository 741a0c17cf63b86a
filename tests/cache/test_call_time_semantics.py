"""What a transformed function reads, and when: compiled code must never answer for
data it was not given.

Numba compiles global values (arrays, numbers) into the machine code as constants, and keeps
machine code per generated file; two closures over different data, or one module global set
differently in two runs, must not share compiled code (each was a silent wrong answer).
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


def make_loss(X, y):
    def loss(w):
        return np.mean((X @ w - y) ** 2)
    return loss


def make_scaled(scale):
    def loss(w):
        return scale * np.sum(w ** 2)
    return loss


def _closed_form(X, y, w):
    return 2.0 * X.T @ (X @ w - y) / len(y)


def test_jit_of_closures_over_different_arrays_answers_for_each():
    rng = np.random.default_rng(0)
    X1, y1, X2, y2 = rng.standard_normal((5, 3)), rng.standard_normal(5), rng.standard_normal((5, 3)), \
        rng.standard_normal(5)
    w = np.array([0.5, -1.0, 2.0])
    g1 = s2s.jit(s2s.grad(make_loss(X1, y1)))(w)
    g2 = s2s.jit(s2s.grad(make_loss(X2, y2)))(w)
    np.testing.assert_allclose(g1, _closed_form(X1, y1, w), rtol=1e-12)
    np.testing.assert_allclose(g2, _closed_form(X2, y2, w), rtol=1e-12)
    # and the primal
    np.testing.assert_allclose(s2s.jit(make_loss(X2, y2))(w), make_loss(X2, y2)(w), rtol=1e-12)


def test_jit_of_closures_over_different_numbers_answers_for_each():
    w = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2s.jit(s2s.grad(make_scaled(1.0)))(w), 2.0 * w)
    np.testing.assert_allclose(s2s.jit(s2s.grad(make_scaled(3.0)))(w), 6.0 * w)
    np.testing.assert_allclose(s2s.jit(s2s.value_and_grad(make_scaled(5.0)))(w)[1], 10.0 * w)


SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import s2s
    SCALE = float(os.environ["S2S_TEST_SCALE"])
    W = np.load(os.environ["S2S_TEST_W"])
    N = int(os.environ["S2S_TEST_N"])

    def loss(w):
        s = 0.0
        for i in range(N):
            s = s + SCALE * np.sum(W * w ** 2)
        return s

    g = s2s.jit(s2s.grad(loss))(np.array([1.0, 2.0]))
    v = s2s.jit(loss)(np.array([1.0, 2.0]))
    print(json.dumps([g.tolist(), float(v)]))
""")


def test_module_globals_set_at_run_time_are_not_replayed_from_the_disk_cache(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"

    def run(scale, w, n):
        wfile = tmp_path / f"w_{scale}_{n}.npy"
        np.save(wfile, np.array(w))
        env = dict(os.environ, S2S_CACHE_DIR=str(cache), S2S_TEST_SCALE=str(scale), S2S_TEST_W=str(wfile),
                   S2S_TEST_N=str(n))
        res = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        return json.loads(res.stdout.strip().splitlines()[-1])

    x = np.array([1.0, 2.0])
    for scale, w, n in [(1.0, [1.0, 1.0], 1), (100.0, [1.0, 1.0], 1), (1.0, [3.0, -1.0], 4)]:
        g, v = run(scale, w, n)
        np.testing.assert_allclose(g, n * scale * 2.0 * np.array(w) * x, rtol=1e-12, err_msg=str((scale, w, n)))
        np.testing.assert_allclose(v, n * scale * np.sum(np.array(w) * x ** 2), rtol=1e-12)


# ----- decorators: code that runs around the function is never skipped ------------------------

def _scaled(f):
    import functools

    @functools.wraps(f)
    def wrapper(*args):
        return 10.0 * f(*args)
    return wrapper


@_scaled
def decorated_loss(x):
    return np.sum(x ** 2)


_X = np.array([1.0, 2.0])


@pytest.mark.parametrize("make, args", [
    (lambda f: s2s.grad(f), (_X,)), (lambda f: s2s.value_and_grad(f), (_X,)),
    (lambda f: s2s.jvp(f), (_X, np.ones(2))), (lambda f: s2s.vmap(f), (np.stack([_X, _X]),)),
    (lambda f: s2s.jit(f), (_X,)), (lambda f: s2s.jit(s2s.grad(f)), (_X,))],
    ids=["grad", "value_and_grad", "jvp", "vmap", "jit", "jit_grad"])
def test_a_functools_wraps_decorator_is_refused_not_skipped(make, args):
    with pytest.raises(s2s.S2SError, match=r"decorated: the wrapper `_scaled.<locals>.wrapper`"):
        make(decorated_loss)(*args)


def test_an_lru_cache_decorator_only_remembers_results_so_the_function_is_transformed():
    import functools

    @functools.lru_cache(maxsize=None)
    def cube(x):
        return x * x * x
    assert s2s.grad(cube)(2.0) == pytest.approx(12.0)
    assert s2s.jit(s2s.grad(cube))(2.0) == pytest.approx(12.0)


# ----- out=: a write into an existing array is refused, not differentiated as a no-op ----------

Y_OUT = np.zeros(2)


def sin_into_out(x):
    np.sin(x, out=Y_OUT)
    return np.sum(Y_OUT)


def add_into_out(x):
    y = np.zeros_like(x)
    np.add(x, x, out=y)
    return np.sum(y)


def cumsum_into_out(x):
    y = np.zeros_like(x)
    np.cumsum(x, out=y)
    return np.sum(y)


@pytest.mark.parametrize("f", [sin_into_out, add_into_out, cumsum_into_out], ids=lambda f: f.__name__)
def test_out_argument_is_refused_at_the_users_line(f):
    with pytest.raises(s2s.UnsupportedSyntaxError, match=r"out=.*writes its result into an existing array") as info:
        s2s.grad(f)(np.array([0.3, 0.7]))
    assert info.value.filename == __file__
    assert "out=" in info.value.source_line


# ----- rebinding in a process: every transform sees the current globals and helpers ------------

MODULE = textwrap.dedent("""
    import numpy as np
    SCALE = 2.0

    def helper(x):
        return x * 2.0

    def loss(x):
        return SCALE * np.sum(helper(x) ** 2)
""")


@pytest.fixture
def user_module(tmp_path):
    import importlib.util
    path = tmp_path / "user_mod_rebind.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("user_mod_rebind", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def helper_times_three(x):
    return x * 3.0


def _expected(scale, k, x):
    return scale * 2.0 * k * k * x          # d/dx scale * sum((k x)^2)


@pytest.mark.parametrize("make", [
    lambda f: s2s.grad(f), lambda f: (lambda x: s2s.value_and_grad(f)(x)[1]),
    lambda f: s2s.jit(s2s.grad(f)), lambda f: (lambda x: s2s.vmap(s2s.grad(f))(np.stack([x, x]))[0])],
    ids=["grad", "value_and_grad", "jit_grad", "vmap_grad"])
def test_rebound_global_and_helper_are_seen_by_a_transform_built_before(user_module, make):
    x = np.array([0.5, -1.0])
    g = make(user_module.loss)
    np.testing.assert_allclose(g(x), _expected(2.0, 2.0, x), rtol=1e-12)
    user_module.SCALE = 5.0
    np.testing.assert_allclose(g(x), _expected(5.0, 2.0, x), rtol=1e-12)
    user_module.helper = helper_times_three      # (a notebook cell redefining it)
    np.testing.assert_allclose(g(x), _expected(5.0, 3.0, x), rtol=1e-12)


def test_rebound_global_is_seen_by_jit_of_the_primal(user_module):
    x = np.array([0.5, -1.0])
    f = s2s.jit(user_module.loss)
    assert f(x) == pytest.approx(2.0 * np.sum((2.0 * x) ** 2))
    user_module.SCALE = 7.0
    assert f(x) == pytest.approx(7.0 * np.sum((2.0 * x) ** 2))


# ----- names are data, never code, in generated files -------------------------------------------

def test_a_qualname_with_a_line_break_is_not_run_as_code(monkeypatch):
    def f(x):
        return np.sum(x * x)
    f.__qualname__ = "f\nimport os; os.environ['S2S_TEST_INJECTED'] = '1'\n#"
    monkeypatch.delenv("S2S_TEST_INJECTED", raising=False)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2s.grad(f)(x), 2.0 * x)
    np.testing.assert_allclose(s2s.jit(s2s.grad(f))(x), 2.0 * x)
    assert "S2S_TEST_INJECTED" not in os.environ
    assert "import os; os.environ" not in [line.strip() for line in s2s.grad(f).source.splitlines()]


# ----- keyword arguments at call time, bound as Python binds them ------------------------------

def scaled_square(x, a=2.0, b=1.0):
    return a * np.sum(x ** 2) + b


def keyword_only(x, *, a=2.0):
    return a * np.sum(x ** 2)


@pytest.mark.parametrize("make", [lambda f: s2s.grad(f), lambda f: s2s.jit(s2s.grad(f)),
                                  lambda f: (lambda *a, **k: s2s.value_and_grad(f)(*a, **k)[1])],
                         ids=["grad", "jit_grad", "value_and_grad"])
def test_keyword_arguments_at_call_time(make):
    x = np.array([0.5, -1.0])
    g = make(scaled_square)
    np.testing.assert_allclose(g(x), 4.0 * x)
    np.testing.assert_allclose(g(x, a=3.0), 6.0 * x)
    np.testing.assert_allclose(g(x=x, a=3.0), 6.0 * x)
    np.testing.assert_allclose(g(x, b=5.0), 4.0 * x)           # a keeps its default
    with pytest.raises(s2s.ArgumentError, match="unexpected keyword argument 'c'"):
        g(x, c=1.0)


def weighted_square(x, a):
    return a * np.sum(x ** 2)


def test_keyword_arguments_of_hessian_and_argnums_by_position():
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(s2s.hessian(weighted_square)(x, a=3.0), 6.0 * np.eye(2))
    np.testing.assert_allclose(s2s.jit(s2s.hessian(weighted_square))(a=3.0, x=x), 6.0 * np.eye(2))
    np.testing.assert_allclose(s2s.grad(scaled_square, argnums=1)(x, a=3.0), np.sum(x ** 2))


def test_a_keyword_only_parameter_passed_at_the_call():
    # (it was refused; a keyword-only argument is passed through a generated wrapper now,
    # transformations/sources.keyword_wrapper)
    x = np.array([0.5, -1.5])
    got = s2s.grad(keyword_only)(x, a=3.0)
    eps = 1e-6
    fd = np.array([(keyword_only(x + eps * e, a=3.0) - keyword_only(x - eps * e, a=3.0)) / (2 * eps)
                   for e in np.eye(2)])
    np.testing.assert_allclose(got, fd, rtol=1e-6)
    np.testing.assert_allclose(s2s.grad(keyword_only)(x), 4.0 * x)      # its default


def test_vmap_of_a_function_called_with_keywords_maps_them_over_axis_0():
    # as JAX: vmap(f)(x, key=value) maps the keyword over axis 0 (a positional parameter here)
    xs, scales = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([2.0, 0.5])
    got = s2s.vmap(scaled_square)(xs, a=scales)
    np.testing.assert_allclose(got, [scaled_square(x, a=s) for x, s in zip(xs, scales)])
    # keyword-only through grad's keyword wrapper: a string/None keyword is a constant, not mapped
    got = s2s.vmap(s2s.grad(keyword_only))(xs, a=scales)
    np.testing.assert_allclose(got, [s2s.grad(keyword_only)(x, a=s) for x, s in zip(xs, scales)])
