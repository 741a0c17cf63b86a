"""The `s2s` command line: `s2s show FILE.py:FUNC ...` and `s2s --version`.

Most tests call `s2s.cli.main([...])` in-process and read stdout/stderr with
capsys; one runs `python -m s2s` in a subprocess to check the real entry point.
"""
import glob
import os
import subprocess
import sys
import textwrap

import pytest

import s2s
from s2s.cli import main

from cases.paths import ROOT
QUICKSTART = os.path.join(ROOT, "examples", "quickstart.py")
TARGET = QUICKSTART + ":loss"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def loss_line():
    with open(QUICKSTART) as f:
        for i, line in enumerate(f, 1):
            if line.startswith("def loss("):
                return i
    raise AssertionError("no `def loss(` in examples/quickstart.py")


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "vjp"])
def test_show_each_transform(capsys, transform):
    code, out, err = run(capsys, "show", TARGET, "--transform", transform)
    assert code == 0, err
    assert err == ""
    header = out.splitlines()[0]
    assert header.startswith(f"# s2s show: {transform} of loss (")
    assert f"quickstart.py:{loss_line()})" in header
    assert f"def loss_{transform}(" in out
    assert "# --- forward sweep ---" in out
    compile(out, "<s2s show>", "exec")      # the printed text is a valid module


def test_show_default_transform_is_grad(capsys):
    code, out, _ = run(capsys, "show", TARGET)
    assert code == 0
    assert out.startswith("# s2s show: grad of loss (")
    assert "def loss_grad(w, X, y):" in out


def test_show_relative_path_in_header(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, "show", "examples/quickstart.py:loss")
    assert code == 0
    assert out.splitlines()[0] == f"# s2s show: grad of loss (examples/quickstart.py:{loss_line()})"


def test_show_argnums_tuple(capsys):
    code, out, err = run(capsys, "show", TARGET, "--argnums", "0,1")
    assert code == 0, err
    assert "argnums=(0, 1)" in out.splitlines()[0]
    assert "grad(argnums=(0, 1))" in out
    assert "return (dw, dX)" in out


def test_show_argnums_int(capsys):
    code, out, err = run(capsys, "show", TARGET, "--argnums", "1")
    assert code == 0, err
    assert "grad(argnums=1)" in out
    assert "return dX" in out


def test_show_matches_api(capsys):
    code, out, _ = run(capsys, "show", TARGET, "--transform", "value_and_grad")
    assert code == 0
    from s2s.cli import load_function
    fn = load_function(QUICKSTART, "loss")
    expected = s2s.show(fn, transform="value_and_grad")
    assert out.split("\n", 1)[1] == expected


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"s2s {s2s.__version__}"


def test_no_command_prints_usage(capsys):
    code, _, err = run(capsys)
    assert code == 2
    assert "usage:" in err


def _assert_usage_error(code, out, err, *fragments):
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for frag in fragments:
        assert frag in err


def test_missing_file(capsys, tmp_path):
    missing = str(tmp_path / "nope.py")
    code, out, err = run(capsys, "show", missing + ":f")
    _assert_usage_error(code, out, err, "no such file", "nope.py")


def test_missing_function(capsys):
    code, out, err = run(capsys, "show", QUICKSTART + ":no_such_fn")
    _assert_usage_error(code, out, err, "no_such_fn")


def test_not_a_function(capsys):
    code, out, err = run(capsys, "show", QUICKSTART + ":DEPTH")
    _assert_usage_error(code, out, err, "DEPTH", "not a function")


def test_target_without_function(capsys):
    code, out, err = run(capsys, "show", QUICKSTART)
    _assert_usage_error(code, out, err, "FILE.py:FUNC")


def test_bad_transform(capsys):
    code, out, err = run(capsys, "show", TARGET, "--transform", "hessian_of_nothing")
    _assert_usage_error(code, out, err, "hessian_of_nothing")


def test_show_vmap_with_in_axes(capsys):
    code, out, err = run(capsys, "show", "benchmarks/cases.py:logistic_loss", "--transform", "vmap",
                         "--in-axes", "None,0,0")
    assert code == 0, err
    assert "in_axes=(None, 0, 0)" in out
    assert "def logistic_loss_vmap(w, x, y):" in out
    assert "bmatmul(x, w, True, False)" in out


@pytest.mark.parametrize("argnums", ["x", "0,a", ""])
def test_bad_argnums(capsys, argnums):
    code, out, err = run(capsys, "show", TARGET, "--argnums", argnums)
    _assert_usage_error(code, out, err, "argnums")


def test_argnums_out_of_range(capsys):
    code, out, err = run(capsys, "show", TARGET, "--argnums", "5")
    _assert_usage_error(code, out, err, "out of range")


def test_file_that_fails_to_import(capsys, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import numpy as np\nraise RuntimeError('boom')\n\ndef f(x):\n    return x\n")
    code, out, err = run(capsys, "show", f"{path}:f")
    _assert_usage_error(code, out, err, "RuntimeError: boom", "line 2")


def test_file_with_syntax_error(capsys, tmp_path):
    path = tmp_path / "bad_syntax.py"
    path.write_text("def f(x):\n    return x +\n")
    code, out, err = run(capsys, "show", f"{path}:f")
    _assert_usage_error(code, out, err, "syntax error", "bad_syntax.py:2")


UNSUPPORTED = textwrap.dedent('''\
    import numpy as np


    def f(x):
        try:
            y = np.sin(x)
        except ValueError:
            y = x
        return y
    ''')


def test_transform_error_exits_1_with_user_location(capsys, tmp_path):
    path = tmp_path / "uses_try.py"
    path.write_text(UNSUPPORTED)
    code, out, err = run(capsys, "show", f"{path}:f")
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    assert f'File "{path}", line 7' in err        # (the `except` clause that can end without raising)
    assert "except ValueError:" in err
    assert "`except` clause" in err
    assert "hint:" in err


def test_sibling_import(capsys, tmp_path):
    (tmp_path / "helpers_for_cli.py").write_text(
        "import numpy as np\n\ndef sq(x):\n    return x * x\n")
    (tmp_path / "model_for_cli.py").write_text(
        "import numpy as np\nfrom helpers_for_cli import sq\n\n"
        "def f(x):\n    return np.sum(sq(np.sin(x)))\n")
    code, out, err = run(capsys, "show", f"{tmp_path / 'model_for_cli.py'}:f")
    assert code == 0, err
    assert "def f_grad(x):" in out


def _subprocess(args, cwd, tmp_path):
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "s2s", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_python_dash_m_s2s(tmp_path):
    proc = _subprocess(["show", "examples/quickstart.py:loss", "--transform", "grad"],
                       ROOT, tmp_path)
    assert proc.returncode == 0, proc.stderr
    header = f"# s2s show: grad of loss (examples/quickstart.py:{loss_line()})\n"
    assert proc.stdout.startswith(header)
    assert "def loss_grad(w, X, y):" in proc.stdout
    # The generated module was written to the cache directory.
    written = [os.path.basename(p) for p in glob.glob(str(tmp_path / "cache" / "**" / "*.py"), recursive=True)]
    assert any(name.startswith("loss_grad_") and name.endswith(".py") for name in written), written


def test_python_dash_m_s2s_transform_error(tmp_path):
    path = tmp_path / "uses_try.py"
    path.write_text(UNSUPPORTED)
    proc = _subprocess(["show", f"{path}:f"], ROOT, tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert f'File "{path}", line 7' in proc.stderr


# The example scripts the README points to: each checks its own result and
# exits non-zero on failure.
EXAMPLES = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))


@pytest.mark.parametrize("script", EXAMPLES)
def test_example_script_runs(script, tmp_path):
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join("examples", script)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr


BRANCHY = textwrap.dedent("""
    import numpy as np

    def branchy(x):
        n = x.shape[0]
        s = 0.0
        for i in range(n):
            if x[i] > 0:
                s = s * 0.999 + np.sin(x[i]) * x[i]
            else:
                s = s * 0.998 - x[i] ** 2
        return s
""")


def test_show_jit_specialized_on_arg_types(capsys, tmp_path):
    path = tmp_path / "branchy.py"
    path.write_text(BRANCHY)
    code, generic, _ = run(capsys, "show", f"{path}:branchy", "--transform", "jit", "--of", "grad")
    assert code == 0 and "List()" in generic and "unbroadcast" in generic
    code, special, _ = run(capsys, "show", f"{path}:branchy", "--transform", "jit", "--of", "grad",
                           "--arg-types", "f8[:]")
    assert code == 0
    # a 1-D float64 x: every temporary is a scalar, so no tapes, no unbroadcast, the seed is 1.0,
    # and only the backward loop is left
    assert "List()" not in special and "unbroadcast" not in special and "ds = 1.0" in special
    loops = [ln for ln in special.splitlines() if ln.strip().startswith("for ")]
    assert loops == ["    for i in reversed_range(n):"], loops


def test_show_arg_types_rejects_unknown_types(capsys, tmp_path):
    path = tmp_path / "branchy.py"
    path.write_text(BRANCHY)
    code, _, err = run(capsys, "show", f"{path}:branchy", "--transform", "jit", "--of", "grad",
                       "--arg-types", "q8[:]")
    assert code == 2
    assert "unknown type 'q8'" in err
