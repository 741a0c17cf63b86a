"""Data-parallel SGD with s2s.pmap: a small MLP trained on N devices, each on its shard of the batch,
gradients averaged with s2s.pmean inside the training loop; after 50 steps the parameters equal
single-device SGD on the whole batch.

    python examples/pmap_sgd.py --devices 4            # 4 cpu devices (threads)
    mpiexec -n 2 python examples/pmap_sgd.py           # 2 MPI ranks, one device each

The per-device code is plain NumPy; s2s generates its gradient, compiles it with Numba and runs
one copy per device (`s2s show examples/pmap_sgd.py:train --transform pmap` prints it).
"""
import argparse
import os
import sys

import numpy as np

import s2s

STEPS = 50
LEARNING_RATE = 0.1


def predict(params, x):
    w1, b1, w2, b2 = params
    hidden = np.tanh(x @ w1 + b1)
    return hidden @ w2 + b2


def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


def train(params, x, y, steps):
    """SGD on this device's shard; the gradient is the mean over every device's shard."""
    w1, b1, w2, b2 = params
    for _ in range(steps):
        g1, gb1, g2, gb2 = s2s.grad(loss)((w1, b1, w2, b2), x, y)
        w1 = w1 - LEARNING_RATE * s2s.pmean(g1, "batch")
        b1 = b1 - LEARNING_RATE * s2s.pmean(gb1, "batch")
        w2 = w2 - LEARNING_RATE * s2s.pmean(g2, "batch")
        b2 = b2 - LEARNING_RATE * s2s.pmean(gb2, "batch")
    return w1, b1, w2, b2


def train_one_device(params, x, y, steps):
    """The same SGD on the whole batch, without pmap."""
    for _ in range(steps):
        grads = s2s.grad(loss)(params, x, y)
        params = tuple(p - LEARNING_RATE * g for p, g in zip(params, grads))
    return params


def problem(batch=64, features=8, hidden=16, seed=0):
    rng = np.random.default_rng(seed)
    params = (rng.standard_normal((features, hidden)) / np.sqrt(features), np.zeros(hidden),
              rng.standard_normal(hidden) / np.sqrt(hidden), 0.0)
    x = rng.standard_normal((batch, features))
    y = np.sin(x @ rng.standard_normal(features))
    return params, x, y


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=None, help="cpu devices (sets S2S_CPU_DEVICES)")
    ap.add_argument("--steps", type=int, default=STEPS)
    args = ap.parse_args(argv)
    if args.devices:
        os.environ["S2S_CPU_DEVICES"] = str(args.devices)
    params, x, y = problem()
    n_total = s2s.device_count()          # under mpiexec: the MPI ranks
    n_local = s2s.local_device_count()
    first = s2s.process_index() * n_local
    # each process passes its local shards: a leading axis of one per local device
    xs = x.reshape(n_total, -1, x.shape[1])[first:first + n_local]
    ys = y.reshape(n_total, -1)[first:first + n_local]
    step_all = s2s.pmap(train, axis_name="batch", in_axes=(None, 0, 0, None), static_broadcasted_argnums=(3,))
    replicas = step_all(params, xs, ys, args.steps)
    reference = train_one_device(params, x, y, args.steps)
    # every device holds the same parameters, equal to single-device SGD on the whole batch
    err = max(float(np.max(np.abs(np.asarray(r) - np.asarray(ref)[None]))) for r, ref in zip(replicas, reference))
    first_loss, last_loss = loss(params, x, y), loss(tuple(r[0] for r in replicas), x, y)
    print(f"process {s2s.process_index()}/{s2s.process_count()}: {n_total} devices, {args.steps} steps, "
          f"loss {first_loss:.4f} -> {last_loss:.4f}, max |pmap - one device| = {err:.2e}")
    return 0 if err <= 1e-10 else 1


if __name__ == "__main__":
    sys.exit(main())
