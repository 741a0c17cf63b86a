"""pmap's mpi backend: `mpiexec -n 2` (and 4) on loopback, launched from here with a timeout; each
rank checks its results against the same maths computed without MPI (mpi_programs.py, beside this file)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from cases import paths
from cases.paths import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))


def _mpiexec() -> str | None:
    # (pip install 's2s[mpi]' puts MPICH's mpiexec beside this Python)
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
try:
    import mpi4py  # noqa: F401
    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False
needs_mpi = pytest.mark.skipif(MPIEXEC is None or not HAVE_MPI4PY,
                               reason="needs mpi4py and mpiexec: pip install 's2s[mpi]'")


def launch(n: int, *args: str, timeout: float = 240, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=paths.pythonpath(ROOT),     # (mpi_programs imports cases.fd)
               S2S_COLLECTIVE_TIMEOUT="60", OMP_NUM_THREADS="1")
    env.update(env_extra or {})
    env.pop("S2S_CPU_DEVICES", None)
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def _ok(proc, n: int, cases: list[str]) -> None:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for case in cases:
        # (the ranks' lines can interleave: find them anywhere)
        ranks = sorted(int(r) for r in re.findall(rf"{case} OK (\d+)", proc.stdout))
        assert ranks == list(range(n)), proc.stdout + proc.stderr


CASES = ["collectives", "all_to_all", "grad", "grad_of_pmap", "wrong_axis"]


@needs_mpi
def test_collectives_and_gradients_on_two_ranks():
    proc = launch(2, os.path.join(HERE, "mpi_programs.py"), *CASES)
    _ok(proc, 2, CASES)


@needs_mpi
@pytest.mark.slow     # (4 ranks on 2 cores, ~30 s; the 2-rank test runs the same collectives in CI)
def test_collectives_on_four_ranks():
    proc = launch(4, os.path.join(HERE, "mpi_programs.py"), "collectives", "all_to_all")
    _ok(proc, 4, ["collectives", "all_to_all"])


@needs_mpi
def test_a_failing_rank_makes_every_rank_raise_without_waiting_for_the_timeout():
    proc = launch(2, os.path.join(HERE, "mpi_programs.py"), "failure", timeout=60,
                  env_extra={"S2S_COLLECTIVE_TIMEOUT": "600"})
    _ok(proc, 2, ["failure"])
    assert "failure ValueError 1" in proc.stdout and "failure CollectiveError 0" in proc.stdout


@needs_mpi
def test_sgd_example_on_two_ranks_equals_one_device():
    proc = launch(2, os.path.join(ROOT, "examples", "pmap_sgd.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = re.findall(r"process (\d)/2: 2 devices, 50 steps, .*? = ([0-9.e+-]+)", proc.stdout)
    assert sorted(r for r, _ in found) == ["0", "1"] and all(float(e) <= 1e-10 for _, e in found), proc.stdout


def test_mpi_backend_without_mpi4py_says_how_to_install_it(monkeypatch):
    # (a None entry in sys.modules makes `from mpi4py import MPI` raise ImportError)
    import s2s
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(s2s.ArgumentError, match=r"pip install 's2s\[mpi\]'"):
        s2s.pmap(lambda x: x, axis_name="r", backend="mpi")

