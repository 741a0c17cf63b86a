"""A branchy recurrence: a ball falling with air drag and bouncing on the floor.

The simulation is an ordinary Python `for` loop with an `if` inside; s2s
differentiates straight through it.  The forward sweep records on a tape
which branch each step took (and the values the backward sweep needs); the
backward sweep replays the steps in reverse.

We ask: how does the ball's height after 3 seconds depend on its initial
velocity, on how bouncy it is (restitution) and on the drag coefficient?
The gradient from `s2s.grad(..., argnums=(0, 1, 2))` is checked against
central finite differences.

Run it with `python examples/bouncing_ball.py`.
"""
import numpy as np

import s2s

G = 9.81        # gravity (m/s^2)
DT = 0.01       # time step (s)
STEPS = 300     # 3 seconds


def final_height(v0, restitution, drag):
    """Height of the ball after STEPS explicit Euler steps, starting at 1 m."""
    x = 1.0
    v = v0
    for step in range(STEPS):
        v = v - DT * (G + drag * v * np.abs(v))
        x = x + DT * v
        if x < 0.0:            # hit the floor: reflect and lose energy
            x = -x
            v = -restitution * v
    return x


def central_differences(f, args, eps=1e-6):
    grads = []
    for i in range(len(args)):
        hi = list(args)
        lo = list(args)
        hi[i] += eps
        lo[i] -= eps
        grads.append((f(*hi) - f(*lo)) / (2.0 * eps))
    return grads


def main():
    args = (2.0, 0.8, 0.05)     # v0 (m/s, upwards), restitution, drag
    grad = s2s.grad(final_height, argnums=(0, 1, 2))
    g = grad(*args)
    g_fd = central_differences(final_height, args)

    print(f"final height            = {final_height(*args):.6f} m")
    for name, a, b in zip(("v0", "restitution", "drag"), g, g_fd):
        print(f"d height / d {name:<11} = {float(a): .8f}   (finite differences {b: .8f})")
    err = max(abs(float(a) - b) for a, b in zip(g, g_fd))
    print(f"max |s2s - FD|          = {err:.2e}")
    assert err < 1e-5, "gradient does not match finite differences"


if __name__ == "__main__":
    main()
