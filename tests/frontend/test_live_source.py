"""s2s transforms the code Python runs, never other text.

The source s2s reads from a function's file must compile to the live function's code: a module
edited on disk after it was imported, or a function compiled from a string under an existing
file's name, is refused with an error that names the function and says to reload the module,
instead of differentiating whatever stands at the function's old line.  Functions in notebook
cells (linecache entries), closures, methods, lambdas and decorated functions keep working, and
the check compiles a file once per process.

A monkeypatched NumPy function (`np.sin = np.cos`) is differentiated as what it now is.
"""
import importlib
import linecache
import sys
import textwrap

import numpy as np
import pytest

import s2s
import s2s.pipeline
from s2s.codegen import emit
from s2s.errors import TransformError
from s2s.frontend import live_source

from cases.fd import numeric_grad

X = np.array([0.3, -0.7, 1.1])

ORIGINAL = """\
import numpy as np

def q(x):
    return np.sum(np.sin(x))
"""


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """A cache of this test's own, as a new process would see it."""
    monkeypatch.setattr(emit, "_USABLE", {})
    monkeypatch.setattr(s2s.pipeline, "_CACHE", type(s2s.pipeline._CACHE)())
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def module_file(tmp_path, monkeypatch):
    """Write a module into tmp_path and import it under a name of its own."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def make(name, text):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        made.append(name)
        return importlib.import_module(name), path
    yield make
    for name in made:
        sys.modules.pop(name, None)


def _refused(call, name):
    with pytest.raises(TransformError) as info:
        call()
    text = str(info.value)
    assert f"`{name}`" in text and "reload" in text, text
    return info.value


def test_a_function_inserted_above_is_refused_until_the_module_is_reloaded(fresh_cache, module_file):
    m, path = module_file("live_src_inserted", ORIGINAL)
    path.write_text(ORIGINAL.replace("def q", "def p(x):\n    return np.sum(x ** 3)\n\n\ndef q"))
    _refused(lambda: s2s.grad(m.q)(X), "q")
    _refused(lambda: s2s.jvp(m.q, (X,), (np.ones(3),)), "q")
    err = _refused(lambda: s2s.jit(m.q)(X), "q")
    assert err.filename == str(path) and err.lineno == 3
    m = importlib.reload(m)
    np.testing.assert_allclose(s2s.grad(m.q)(X), np.cos(X), rtol=1e-12)


def test_a_body_changed_on_disk_is_refused(fresh_cache, module_file):
    m, path = module_file("live_src_body", ORIGINAL)
    path.write_text(ORIGINAL.replace("np.sin(x)", "np.sin(x) * x * x"))
    _refused(lambda: s2s.grad(m.q)(X), "q")
    # a helper the function calls is read the same way
    m2, path2 = module_file("live_src_helper", ORIGINAL + "\n\ndef r(x):\n    return 2.0 * q(x)\n")
    path2.write_text(ORIGINAL.replace("np.sin(x)", "np.cos(x)") + "\n\ndef r(x):\n    return 2.0 * q(x)\n")
    _refused(lambda: s2s.grad(m2.r)(X), "q")


def test_code_compiled_from_another_text_under_an_existing_file_name_is_refused(fresh_cache, tmp_path):
    path = tmp_path / "existing.py"
    path.write_text(ORIGINAL)
    ns = {}
    exec(compile(ORIGINAL.replace("np.sin(x)", "np.exp(x)"), str(path), "exec"), ns)
    _refused(lambda: s2s.grad(ns["q"])(X), "q")
    exec(compile(ORIGINAL, str(path), "exec"), ns)        # the file's own text: accepted
    np.testing.assert_allclose(s2s.grad(ns["q"])(X), np.cos(X), rtol=1e-12)


def test_a_notebook_cell_in_linecache_is_read(fresh_cache):
    cell = "import numpy as np\nscale = 3.0\n\ndef cell_fn(x):\n    return np.sum(scale * np.sin(x) ** 2)\n"
    filename = "<ipython-input-4-live-source-test>"
    linecache.cache[filename] = (len(cell), None, cell.splitlines(True), filename)
    try:
        ns = {}
        exec(compile(cell, filename, "exec"), ns)
        np.testing.assert_allclose(s2s.grad(ns["cell_fn"])(X), 6.0 * np.sin(X) * np.cos(X), rtol=1e-12)
        # the cell run again with another body: the new function is read, the old one refused
        cell2 = cell.replace("np.sin(x) ** 2", "np.cos(x)")
        linecache.cache[filename] = (len(cell2), None, cell2.splitlines(True), filename)
        old = ns["cell_fn"]
        exec(compile(cell2, filename, "exec"), ns)
        np.testing.assert_allclose(s2s.grad(ns["cell_fn"])(X), -3.0 * np.sin(X), rtol=1e-12)
        _refused(lambda: s2s.grad(old)(X), "cell_fn")
    finally:
        linecache.cache.pop(filename, None)


FORMS = '''\
import functools
import numpy as np


def make(k):
    def inner(x):
        return np.sum(k * np.sin(x))
    return inner


class Model:
    scale = 2.0

    def loss(self, x):
        return np.sum(self.scale * x * x)


@functools.lru_cache(maxsize=None)
def decorated(x):
    return np.sum(x * x * x)


square = lambda x: np.sum(x * x)  # noqa: E731
'''


def test_closures_methods_lambdas_and_decorated_functions_are_read_once(fresh_cache, module_file, monkeypatch):
    m, _ = module_file("live_src_forms", FORMS)
    compiled = []
    real = live_source._compile
    monkeypatch.setattr(live_source, "_compile", lambda *a: compiled.append(a[1:]) or real(*a))
    inner = m.make(3.0)
    np.testing.assert_allclose(s2s.grad(inner)(X), numeric_grad(inner, (X,), 0), rtol=1e-7)
    model = m.Model()
    np.testing.assert_allclose(s2s.grad(model.loss)(X), 4.0 * X, rtol=1e-12)
    np.testing.assert_allclose(s2s.grad(m.decorated)(X), 3 * X * X, rtol=1e-12)
    np.testing.assert_allclose(s2s.grad(m.square)(X), 2 * X, rtol=1e-12)
    lam = lambda x: np.sum(np.tanh(x))  # noqa: E731   (this test file, rewritten by pytest)
    np.testing.assert_allclose(s2s.grad(lam)(X), 1 - np.tanh(X) ** 2, rtol=1e-12)
    assert len(compiled) == len(set(compiled)), compiled        # each file compiled once
    before = len(compiled)
    s2s.jvp(inner, (X,), (np.ones(3),))          # another transform of a function already checked
    s2s.grad(m.make(5.0))(X)                     # another closure of the same code
    assert len(compiled) == before, compiled


def _patched_loss(x):
    return np.sum(np.sin(x) * x)


def test_a_replaced_numpy_function_is_never_differentiated_as_another(fresh_cache):
    """np.sin = np.cos before the first transform: each transform gives the derivative of what the
    function computes now (finite differences of the patched function), or refuses naming np.sin."""
    original = np.sin
    xs = np.stack([X, 2 * X])
    np.sin = np.cos
    try:
        fd = numeric_grad(_patched_loss, (X,), 0)
        calls = {
            "grad": (lambda: s2s.grad(_patched_loss)(X), fd),
            "jvp": (lambda: s2s.jvp(_patched_loss, (X,), (np.ones(3),))[1], np.sum(fd)),
            "jit(grad)": (lambda: s2s.jit(s2s.grad(_patched_loss))(X), fd),
            "vmap": (lambda: s2s.vmap(_patched_loss)(xs), np.array([_patched_loss(x) for x in xs])),
            "vmap(grad)": (lambda: s2s.vmap(s2s.grad(_patched_loss))(xs),
                           np.stack([fd, numeric_grad(_patched_loss, (2 * X,), 0)])),
        }
        for what, (call, want) in calls.items():
            try:
                got = call()
            except TransformError as exc:
                assert "np.sin" in str(exc) and "restore" in str(exc), (what, str(exc))
                continue
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=what)
    finally:
        np.sin = original
    assert np.sin is original
    # NumPy restored: the same function is differentiated as written
    np.testing.assert_allclose(s2s.grad(_patched_loss)(X), np.sin(X) + X * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(s2s.vmap(s2s.grad(_patched_loss))(xs),
                               np.sin(xs) + xs * np.cos(xs), rtol=1e-12)
