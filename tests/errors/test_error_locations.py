"""Errors point at the user's code: the file, line and source text of the user's line, never a
line number of another file (an inlined library function, a generated module) reported against
the user's file name; the inlined code's own file:line comes as a second location. And the
command line refuses, as a usage error (exit 2), options that do not fit the function or the
transform instead of ignoring them."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2s
from s2s.cli import main
from s2s.errors import ArgumentError, S2SError, SharedArrayError, TransformError


def _write(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _load(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"errloc_{path.stem}_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line_of(path, text):
    """The number of the (first) line of `path` that contains `text`."""
    for k, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return k
    raise AssertionError(f"{text!r} not in {path}")


def _message(exc):
    return str(exc) + "\n" + "\n".join(getattr(exc, "__notes__", ()))


def _assert_points_at(exc, path, text):
    """exc names `path` at the line holding `text`, quotes that line, and names no line of `path`
    past its end."""
    line = _line_of(path, text)
    message = _message(exc)
    assert f'File "{path}", line {line}' in message, message
    assert text in message, message
    nlines = len(path.read_text().splitlines())
    import re
    for m in re.finditer(rf'File "{re.escape(str(path))}", line (\d+)', message):
        assert int(m.group(1)) <= nlines, message
    if isinstance(exc, TransformError):
        assert exc.filename == str(path) and exc.lineno == line and text in exc.source_line


# ----- the command line -------------------------------------------------------------------------

ONE_ARG = """
import numpy as np


def f(x):
    return np.sum(np.sin(x))


class Model:
    def __call__(self, x):
        return x


model = Model()
"""


def test_cli_arg_types_that_do_not_match_the_function_are_a_usage_error(tmp_path):
    """`s2s show f.py:f --transform jit --arg-types 'f8[:],f8[:],f8'` for a one-argument f: exit 2,
    saying f takes 1 argument and 3 types were given (run as `python -m s2s`)."""
    path = _write(tmp_path, "one_arg", ONE_ARG)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "s2s", "show", f"{path}:f", "--transform", "jit",
                           "--arg-types", "f8[:],f8[:],f8"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert "f takes 1 argument and 3 types were given" in proc.stderr, proc.stderr


@pytest.mark.parametrize("argv,fragments", [
    (["--transform", "jit", "--of", "grad", "--arg-types", "f8[:],f8"], ["f takes 1 argument", "2 types"]),
    (["--arg-types", "f8[:]"], ["--arg-types", "--transform jit"]),
    (["--transform", "grad", "--of", "grad"], ["--of", "--transform jit"]),
    (["--transform", "grad", "--in-axes", "0,None"], ["--in-axes", "vmap"]),
    (["--transform", "jit", "--out-axes", "1"], ["--out-axes", "vmap"]),
    (["--transform", "jvp", "--argnums", "3"], ["--argnums", "jvp"]),
    (["--transform", "vmap", "--argnums", "0"], ["--argnums", "vmap"]),
    (["--transform", "vmap", "--has-aux"], ["--has-aux", "vmap"]),
    (["--transform", "hessian"], ["hessian"]),
    (["--argnums", "2"], ["argnums=2", "out of range"]),
    (["--argnums", "0,x"], ["argnums"]),
], ids=lambda v: "_".join(v).strip("-") if isinstance(v, list) else None)
def test_cli_options_that_do_not_fit_are_usage_errors(capsys, tmp_path, argv, fragments):
    """Options the chosen transform would ignore, or that do not fit the function: exit 2, one
    line on stderr naming the option, nothing on stdout."""
    path = _write(tmp_path, "one_arg", ONE_ARG)
    code = main(["show", f"{path}:f", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    assert len(err.strip().splitlines()) == 1, err
    for frag in fragments:
        assert frag in err, err


@pytest.mark.parametrize("target,fragment", [("Model", "is a class"), ("model", "not a function"),
                                             ("np", "not a function")])
def test_cli_target_that_is_not_a_function_is_a_usage_error(capsys, tmp_path, target, fragment):
    """A class, a callable object or a module named as the target: exit 2, not a transform error."""
    path = _write(tmp_path, "one_arg", ONE_ARG)
    code = main(["show", f"{path}:{target}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert fragment in err and target in err, err


def test_cli_matching_arg_types_and_options_still_work(capsys, tmp_path):
    """The checks refuse only what does not fit: jit with one type for f(x), and vmap with in_axes."""
    path = _write(tmp_path, "one_arg", ONE_ARG)
    code = main(["show", f"{path}:f", "--transform", "vmap", "--in-axes", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and "in_axes=1" in out.splitlines()[0], err
    code = main(["show", f"{path}:f", "--transform", "jit", "--of", "grad", "--arg-types", "f8[:]"])
    out, err = capsys.readouterr()
    assert code == 0 and "def f_grad(" in out, err


# ----- refusals inside inlined code ------------------------------------------------------------

ASMATRIX = """
import numpy as np
def f(x):
    m = np.asmatrix(x)
    return np.sum(m * 2.0)
"""


def _assert_stack_is_real(exc):
    """Every (function, file, line, text) of the stack quotes that file's line."""
    import linecache
    assert exc.stack, _message(exc)
    for function, filename, line, text in exc.stack:
        assert text.strip() == linecache.getline(filename, line).strip(), (function, filename, line, text)


@pytest.mark.parametrize("transform", ["grad", "jit_grad"])
def test_refusal_inside_an_inlined_numpy_function_names_the_users_line(tmp_path, transform):
    """np.asmatrix is inlined from NumPy's source; the refusal raised on its line names the user's
    calling line (file, line, text), and NumPy's file:line as the second location."""
    path = _write(tmp_path, "libloc", ASMATRIX)
    f = _load(path).f
    run = s2s.grad(f) if transform == "grad" else s2s.jit(s2s.grad(f))
    with pytest.raises(TransformError) as info:
        run(np.array([1.0, 2.0, 3.0]))
    exc = info.value
    _assert_points_at(exc, path, "m = np.asmatrix(x)")
    _assert_stack_is_real(exc)
    assert exc.stack[0][1:3] == (str(path), _line_of(path, "np.asmatrix"))
    function, filename, line, _ = exc.stack[-1]
    assert function == "np.asmatrix" and filename == np.matrixlib.defmatrix.__file__
    assert f"in np.asmatrix at {filename}:{line}" in str(exc)


NESTED = """
import numpy as np
def helper(v):
    w = v + 1.0
    return np.asmatrix(w)
def f(x):
    return np.sum(helper(x) * 2.0)
"""


def test_refusal_two_inlined_levels_down_lists_the_calls(tmp_path):
    """user f -> user helper -> np.asmatrix: located at the helper's line that calls into NumPy
    (the innermost line of the user's code), with f's call, the helper's and NumPy's lines listed,
    outermost first."""
    path = _write(tmp_path, "nested", NESTED)
    with pytest.raises(TransformError) as info:
        s2s.grad(_load(path).f)(np.array([1.0, 2.0]))
    exc = info.value
    _assert_points_at(exc, path, "return np.asmatrix(w)")
    _assert_stack_is_real(exc)
    where = [(function, filename, line) for function, filename, line, _ in exc.stack]
    assert where[:2] == [("f", str(path), _line_of(path, "helper(x)")),
                         ("helper", str(path), _line_of(path, "np.asmatrix(w)"))], where
    assert where[2][0] == "np.asmatrix" and where[2][1] == np.matrixlib.defmatrix.__file__, where


SCIPY = """
import numpy as np
import scipy.spatial.distance as dist
def f(x):
    return dist.euclidean(x, 2.0 * x)
"""


def test_scipy_function_read_from_source_is_right_or_refused_at_the_users_line(tmp_path):
    """A SciPy function s2s reads from source (euclidean -> minkowski -> scipy.linalg.norm -> ...):
    its gradient matches finite differences, or the refusal names the user's line, every library
    line of the stack being the line of that file it quotes."""
    path = _write(tmp_path, "sci", SCIPY)
    f = _load(path).f
    x = np.array([1.0, -2.0, 0.5])
    try:
        got = s2s.grad(f)(x)
    except TransformError as exc:
        _assert_points_at(exc, path, "dist.euclidean(x, 2.0 * x)")
        _assert_stack_is_real(exc)
        assert any("scipy" in filename for _, filename, _, _ in exc.stack)
        return
    from cases.fd import numeric_grad
    np.testing.assert_allclose(got, numeric_grad(f, (x,), 0), rtol=1e-6)


USER_HELPER = """
import numpy as np
def helper(v):
    return np.sum(v.nonexistent_method())
def f(x):
    return helper(x * 2.0)
"""


def test_refusal_in_a_users_helper_stays_at_the_helpers_line(tmp_path):
    """A refusal in the user's own helper is located at the helper's line, the caller's listed."""
    path = _write(tmp_path, "helper", USER_HELPER)
    with pytest.raises(TransformError) as info:
        s2s.grad(_load(path).f)(np.array([1.0, 2.0]))
    _assert_points_at(info.value, path, "v.nonexistent_method()")
    assert [s[2] for s in info.value.stack] == [_line_of(path, "helper(x * 2.0)"),
                                                _line_of(path, "v.nonexistent_method()")]


# ----- refusals located in generated files -----------------------------------------------------

DICT_ARGS = """
import numpy as np


def f(a, b):
    d = dict(a=a, b=b)
    return np.sum(a * b) + len(d)


if __name__ == "__main__":
    import s2s
    x = np.arange(1.0, 4.0)
    for name, run in [("hessian", lambda: s2s.hessian(f)(x, x)),
                      ("jacfwd_grad", lambda: s2s.jacfwd(s2s.grad(f))(x, x))]:
        try:
            run()
            print(name, "no error")
        except s2s.S2SError as exc:
            print(f"--- {name} {type(exc).__name__}")
            print(exc)
"""


def test_refusal_in_generated_code_names_the_users_line_cold_and_warm_cache(tmp_path):
    """hessian(f) differentiates the file s2s generated for grad(f); a refusal raised there (a
    dict built from the arguments, `dict(a=a, b=b)`) names the user's line, not the generated
    file, in a first process and in a second one on the same (now warm) cache."""
    path = _write(tmp_path, "dict_args", DICT_ARGS)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    line = _line_of(path, "d = dict(a=a, b=b)")
    for run in ("cold", "warm"):
        proc = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        for name in ("hessian", "jacfwd_grad"):
            section = proc.stdout.split(f"--- {name} ")[1].split("---")[0]
            assert section.startswith("NoRuleError"), (run, proc.stdout)
            assert f'File "{path}", line {line}\n    d = dict(a=a, b=b)\n' in section, (run, section)
            assert "has no derivative rule for `dict`" in section, (run, section)
            assert str(tmp_path / "cache") not in section.split("(in the code s2s generated")[0], (run, section)


VMAP_INSIDE = """
import numpy as np
import s2s
from dict_helper import per_pair
def outer(a, b):
    return np.sum(s2s.vmap(per_pair)(a, b))
"""

DICT_HELPER = """
import numpy as np
def inner(d):
    return np.sum(d["a"] * d["b"])
def per_pair(a, b):
    d = dict(a=a, b=b)
    return inner(d)
"""


def test_refusal_in_inlined_generated_code_never_names_a_line_past_the_users_file(tmp_path, monkeypatch):
    """grad of a function calling vmap(g), whose generated code is inlined: the refusal raised
    on a line of that generated file names a line of the user's files (the call, and g's line
    behind the generated one), never the generated line number against the user's file name."""
    _write(tmp_path, "dict_helper", DICT_HELPER)
    path = _write(tmp_path, "vmap_inside", VMAP_INSIDE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "dict_helper", raising=False)
    outer = _load(path).outer
    with pytest.raises(TransformError) as info:
        s2s.grad(outer)(np.ones((2, 3)), np.ones((2, 3)))
    exc = info.value
    helper = tmp_path / "dict_helper.py"
    message = _message(exc)
    assert exc.filename in (str(path), str(helper)), message
    nlines = len(open(exc.filename).read().splitlines())
    assert 1 <= exc.lineno <= nlines and exc.source_line.strip() == \
        open(exc.filename).read().splitlines()[exc.lineno - 1].strip(), message
    assert exc.stack[0][1:3] == (str(path), _line_of(path, "s2s.vmap(per_pair)(a, b)")), message
    _assert_stack_is_real(exc)


# ----- run-time refusals: the user's line ------------------------------------------------------

def _alias_then_add(x):
    y = x
    y += 1.0
    return np.sum(y * x)


@pytest.mark.parametrize("transform", ["jvp", "vjp"])
def test_shared_array_error_names_the_users_line(transform):
    """SharedArrayError raised by jvp's and vjp's generated code says which line of the user's
    code made the update, as grad's does."""
    x = np.array([1.0, 2.0])
    with pytest.raises(SharedArrayError) as info:
        if transform == "jvp":
            s2s.jvp(_alias_then_add, (x.copy(),), (np.ones(2),))
        else:
            s2s.vjp(_alias_then_add, x.copy())[1](1.0)
    line = _alias_then_add.__code__.co_firstlineno + 2
    assert f'in your code: File "{__file__}", line {line}\n    y += 1.0' in _message(info.value)


def test_matrix_argument_error_names_the_users_call():
    """An np.matrix argument is refused (ArgumentError) with the user's line that passed it."""
    import inspect
    m = np.asmatrix(np.ones((2, 2)))
    for transform in (s2s.grad, s2s.jit, s2s.vmap):
        with pytest.raises(ArgumentError) as info:
            line = inspect.currentframe().f_lineno + 1
            transform(_alias_then_add)(m)
        assert f'in your code: File "{__file__}", line {line}\n    transform(_alias_then_add)(m)' in \
            _message(info.value), _message(info.value)
