"""Simulations with plotting on a branch not taken: autograd's examples/fluidsim/fluidsim.py
(`if ax: plot_matrix(ax, smoke, t)`, matplotlib imported lazily inside the plotting helper,
`vx -= ...` on arguments, np.roll, np.floor(...).astype(int) indexing) and a 1-D wave
equation with a callback and a progress print."""
import numpy as np


def project(vx, vy):
    """Project the velocity field to be approximately mass-conserving,
       using a few iterations of Gauss-Seidel."""
    p = np.zeros(vx.shape)
    h = 1.0 / vx.shape[0]
    div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0)
                      + np.roll(vy, -1, axis=1) - np.roll(vy, 1, axis=1))

    for k in range(10):
        p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0)
                 + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0

    vx -= 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
    vy -= 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
    return vx, vy


def advect(f, vx, vy):
    """Move field f according to x and y velocities (u and v)
       using an implicit Euler integrator."""
    rows, cols = f.shape
    cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols))
    center_xs = (cell_xs - vx).ravel()
    center_ys = (cell_ys - vy).ravel()

    # Compute indices of source cells.
    left_ix = np.floor(center_xs).astype(int)
    top_ix  = np.floor(center_ys).astype(int)
    rw = center_xs - left_ix              # Relative weight of right-hand cells.
    bw = center_ys - top_ix               # Relative weight of bottom cells.
    left_ix  = np.mod(left_ix,     rows)  # Wrap around edges of simulation.
    right_ix = np.mod(left_ix + 1, rows)
    top_ix   = np.mod(top_ix,      cols)
    bot_ix   = np.mod(top_ix  + 1, cols)

    # A linearly-weighted sum of the 4 surrounding cells.
    flat_f = (1 - rw) * ((1 - bw) * f[left_ix,  top_ix] + bw * f[left_ix,  bot_ix]) \
                 + rw * ((1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
    return np.reshape(flat_f, (rows, cols))


def plot_matrix(ax, mat, t, render=False):
    import matplotlib.pyplot as plt   # only needed when someone asks for pictures
    plt.cla()
    ax.matshow(mat)
    ax.set_xticks([])
    ax.set_yticks([])
    plt.draw()
    if render:
        plt.savefig('step{0:03d}.png'.format(t), bbox_inches='tight')
    plt.pause(0.001)


def simulate(vx, vy, smoke, num_time_steps, ax=None, render=False):
    print("Running simulation...")
    for t in range(num_time_steps):
        if ax: plot_matrix(ax, smoke, t, render)
        vx_updated = advect(vx, vx, vy)
        vy_updated = advect(vy, vx, vy)
        vx, vy = project(vx_updated, vy_updated)
        smoke = advect(smoke, vx, vy)
    if ax: plot_matrix(ax, smoke, num_time_steps, render)
    return smoke


ROWS = COLS = 6
SIMULATION_TIMESTEPS = 3
_rng = np.random.default_rng(31)
INIT_SMOKE = _rng.uniform(size=(ROWS, COLS))
TARGET = _rng.uniform(size=(ROWS, COLS))


def distance_from_target_image(smoke):
    return np.mean((TARGET - smoke) ** 2)


def fluid_objective(params):
    init_vx = np.reshape(params[:ROWS * COLS], (ROWS, COLS))
    init_vy = np.reshape(params[ROWS * COLS:], (ROWS, COLS))
    final_smoke = simulate(init_vx, init_vy, INIT_SMOKE, SIMULATION_TIMESTEPS)
    return distance_from_target_image(final_smoke)


def make_fluid_args(seed=0):
    return (np.random.default_rng(1700 + seed).uniform(-0.7, 0.7, size=2 * ROWS * COLS),)


# --- wave equation with a callback hook and progress printing ---------------------------------

def simulate_wave(c, u0, steps=12, dt=0.1, callback=None, log_every=0):
    u_prev = u0.copy()
    u = u0.copy()
    for n in range(steps):
        lap = np.roll(u, 1) - 2 * u + np.roll(u, -1)
        u_next = 2 * u - u_prev + (c * dt) ** 2 * lap
        u_prev, u = u, u_next
        if callback is not None:
            callback(n, u)
        if log_every and n % log_every == 0:
            print(f"step {n:3d}: energy={np.sum(u ** 2):.4f}")
    return u


def wave_loss(c, u0, target):
    u = simulate_wave(c, u0)
    return np.sum((u - target) ** 2)


def make_wave_args(seed=0):
    rng = np.random.default_rng(1800 + seed)
    return 1.3 + 0.1 * seed, rng.standard_normal(8), rng.standard_normal(8)


CASES = [
    dict(name="fluid_objective", fn=fluid_objective, args=make_fluid_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0,),
         constructs="`if ax: plot_matrix(...)` with ax=None (helper imports matplotlib lazily), print, "
                    "`vx -= ...` on a parameter, np.roll, np.meshgrid, np.floor(..).astype(int), "
                    "fancy indexing f[ix, iy], backslash continuation, module-level arrays"),
    dict(name="wave_loss", fn=wave_loss, args=make_wave_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, 0),
         constructs="callback=None default with `if callback is not None: callback(...)`, print of an "
                    "f-string with format spec on a branch not taken, u0.copy(), tuple swap, float arg"),
]
