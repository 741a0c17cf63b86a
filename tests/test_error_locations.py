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
