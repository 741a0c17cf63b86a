"""What `jit` needs is installed with s2s, and a missing package is named in the error.

README command 1 (`pip install -e .`, then the quickstart) once died at the jit step on a fresh
virtual environment: Numba compiles `@` and np.linalg only with SciPy, which was only a test
dependency, and the hint said "use operations Numba supports".  (.ci/run runs that command in
a fresh venv; these tests pin the two halves of the fix.)
"""
import os
import subprocess
import sys
import textwrap
import tomllib

import pytest

from cases import paths
from cases.paths import ROOT


def _base_dependencies() -> set[str]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    return {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in project["dependencies"]}


def test_jit_needs_only_base_dependencies():
    assert {"numpy", "numba", "gast", "scipy"} <= _base_dependencies()


CHILD = textwrap.dedent("""
    import sys
    sys.modules["scipy"] = None          # as on a machine without SciPy: `import scipy` fails
    import numpy as np
    import s2s
    import usermod
    try:
        s2s.jit(s2s.grad(usermod.loss))(np.ones(3), np.ones((4, 3)))
    except s2s.S2SError as exc:
        print("HINT:", exc.hint)
        print("LINE:", exc.filename, exc.lineno)
    else:
        print("compiled")
""")


def test_missing_scipy_names_the_package_to_install(tmp_path):
    pytest.importorskip("numba")
    (tmp_path / "usermod.py").write_text("import numpy as np\n\n\ndef loss(w, X):\n    return np.sum(np.tanh(X @ w))\n")
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=paths.pythonpath(str(tmp_path)))
    res = subprocess.run([sys.executable, "-c", CHILD], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    if "compiled" in out.splitlines():
        pytest.skip("this Numba compiles @ without SciPy")
    assert "HINT: install scipy" in out, out
    assert "pip install scipy" in out, out
    assert f"LINE: {tmp_path / 'usermod.py'}" in out, out
