"""examples/pmap_sgd.py on 2, 4 and 8 cpu devices: after 50 steps of data-parallel SGD the
parameters equal single-device SGD on the whole batch (the example exits 1 past 1e-10), and
`s2s show --transform pmap` prints its per-device source."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from cases.paths import ROOT

# the example is a script, not an installed module: load it from its file
_spec = importlib.util.spec_from_file_location("pmap_sgd", os.path.join(ROOT, "examples", "pmap_sgd.py"))
pmap_sgd = sys.modules["pmap_sgd"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pmap_sgd)


@pytest.mark.parametrize("devices", [2, 4, 8])
def test_sgd_on_cpu_devices_equals_one_device(devices, monkeypatch, capsys):
    monkeypatch.setenv("S2S_CPU_DEVICES", str(devices))
    assert pmap_sgd.main(["--devices", str(devices)]) == 0
    out = capsys.readouterr().out
    assert f"{devices} devices, 50 steps" in out
    err = float(out.rsplit("=", 1)[1])
    assert err <= 1e-10


def test_replicas_agree_and_the_loss_falls(monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", "4")
    import s2s
    params, x, y = pmap_sgd.problem()
    step = s2s.pmap(pmap_sgd.train, axis_name="batch", in_axes=(None, 0, 0, None), static_broadcasted_argnums=(3,))
    replicas = step(params, x.reshape(4, -1, x.shape[1]), y.reshape(4, -1), 10)
    for r in replicas:
        np.testing.assert_array_equal(np.asarray(r), np.broadcast_to(np.asarray(r)[0], np.shape(r)))
    assert pmap_sgd.loss(tuple(r[0] for r in replicas), x, y) < pmap_sgd.loss(params, x, y)


def test_show_prints_the_per_device_source():
    proc = subprocess.run([sys.executable, "-m", "s2s", "show", "examples/pmap_sgd.py:train", "--transform", "pmap"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# s2s show: pmap of train")
    assert "pmean(" in proc.stdout and "def train_primal(params, x, y, steps):" in proc.stdout
