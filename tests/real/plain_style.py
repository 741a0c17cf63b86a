"""The same kinds of models written in the plainer style many people also use (module-level
helpers, explicit loops, tuples of parameters, no closures): these reach the transforms today,
so they check the answers s2s gives, not only what it accepts."""
import numpy as np
from scipy.special import logsumexp


# --- an MLP over a list of (W, b) tuples, L2 by an explicit loop ------------------------------

def log_softmax(z):
    return z - logsumexp(z, axis=1, keepdims=True)


def mlp_nll(params, X, Y, l2=1e-2):
    h = X
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W_out, b_out = params[-1]
    logp = log_softmax(h @ W_out + b_out)
    reg = 0.0
    for W, b in params:
        reg = reg + np.sum(W ** 2)
    return -np.sum(logp * Y) / X.shape[0] + l2 * reg


def make_mlp_args(seed=0):
    rng = np.random.default_rng(5000)
    params = [(rng.standard_normal((3, 4)), 0.1 * rng.standard_normal(4)),
              (rng.standard_normal((4, 4)), 0.1 * rng.standard_normal(4)),
              (rng.standard_normal((4, 3)), 0.1 * rng.standard_normal(3))]
    data = np.random.default_rng(5100 + seed)
    return params, data.standard_normal((5, 3)), np.eye(3)[data.integers(0, 3, size=5)]


# --- an RNN with a module-level step function, loss accumulated in the loop ----------------------

def rnn_step(params, x, h):
    h = np.tanh(x @ params["Wx"] + h @ params["Wh"] + params["b"])
    return h, h @ params["Wy"]


def rnn_sequence_loss(params, xs, ys):
    h = np.zeros((xs.shape[1], params["Wh"].shape[0]))
    loss = 0.0
    for t in range(xs.shape[0]):
        h, y_hat = rnn_step(params, xs[t], h)
        loss = loss + np.mean((y_hat - ys[t]) ** 2)
    return loss / xs.shape[0]


def make_rnn_args(seed=0):
    rng = np.random.default_rng(5200)
    params = {"Wx": rng.standard_normal((2, 3)), "Wh": 0.5 * rng.standard_normal((3, 3)),
              "b": 0.1 * rng.standard_normal(3), "Wy": rng.standard_normal((3, 1))}
    data = np.random.default_rng(5300 + seed)
    return params, data.standard_normal((5, 2, 2)), data.standard_normal((5, 2, 1))


# --- HMM forward algorithm for one sequence -----------------------------------------------------

def hmm_loglik(log_pi, log_A, log_B, obs):
    log_alpha = log_pi + log_B[:, obs[0]]
    for t in range(1, len(obs)):
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, obs[t]]
    return logsumexp(log_alpha)


def make_hmm_args(seed=0):
    rng = np.random.default_rng(5400 + seed)
    return (rng.standard_normal(3), rng.standard_normal((3, 3)), rng.standard_normal((3, 4)),
            np.random.default_rng(5401).integers(0, 4, size=6))


# --- a Gaussian mixture filled row by row into a preallocated array ----------------------------

def gmm_nll(log_w, means, log_sds, x):
    K = means.shape[0]
    log_w = log_w - logsumexp(log_w)
    lls = np.zeros((K, x.shape[0]))
    for k in range(K):
        sd = np.exp(log_sds[k])
        lls[k] = log_w[k] - 0.5 * np.log(2 * np.pi) - log_sds[k] - 0.5 * ((x - means[k]) / sd) ** 2
    return -np.sum(logsumexp(lls, axis=0))


def make_gmm_args(seed=0):
    rng = np.random.default_rng(5500)
    return (rng.standard_normal(3), rng.standard_normal(3), 0.2 * rng.standard_normal(3),
            np.random.default_rng(5600 + seed).standard_normal(7))


# --- Kalman filter log-likelihood -----------------------------------------------------------------

def kalman_loglik(log_q, log_r, A, ys):
    n = A.shape[0]
    H = np.eye(1, n)
    Q = np.exp(log_q) * np.eye(n)
    R = np.exp(log_r) * np.eye(1)
    m = np.zeros(n)
    P = np.eye(n)
    ll = 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + Q
        S = H @ P @ H.T + R
        v = ys[t] - H @ m
        K = P @ H.T @ np.linalg.inv(S)
        m = m + K @ v
        P = P - K @ S @ K.T
        ll = ll - 0.5 * (np.log(2 * np.pi * S[0, 0]) + v[0] ** 2 / S[0, 0])
    return ll


def make_kalman_args(seed=0):
    A = np.array([[0.9, 0.1], [-0.2, 0.8]])
    ys = np.random.default_rng(5700 + seed).standard_normal((6, 1))
    return -1.0, -0.5, A, ys


# --- the fluid simulation without the plotting branch ------------------------------------------

def roll_project(vx, vy):
    p = np.zeros(vx.shape)
    h = 1.0 / vx.shape[0]
    div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0)
                      + np.roll(vy, -1, axis=1) - np.roll(vy, 1, axis=1))
    for k in range(5):
        p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0)
             + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0
    vx = vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
    vy = vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
    return vx, vy


def smoke_loss(vx, vy, smoke, target):
    for t in range(3):
        vx, vy = roll_project(vx, vy)
        smoke = smoke + 0.1 * (np.roll(smoke, 1, axis=0) * vx + np.roll(smoke, 1, axis=1) * vy)
    return np.mean((smoke - target) ** 2)


def make_smoke_args(seed=0):
    rng = np.random.default_rng(5800 + seed)
    return (0.3 * rng.standard_normal((5, 5)), 0.3 * rng.standard_normal((5, 5)),
            rng.uniform(size=(5, 5)), rng.uniform(size=(5, 5)))


# --- a bouncing projectile: a branch on the state inside a loop -----------------------------------

def projectile_miss(v0, angle, target_x, steps=40, dt=0.05):
    x = 0.0
    y = 0.0
    vx = v0 * np.cos(angle)
    vy = v0 * np.sin(angle)
    for i in range(steps):
        x = x + vx * dt
        y = y + vy * dt
        vy = vy - 9.81 * dt
        if y < 0.0:
            y = -y
            vy = -0.8 * vy
    return (x - target_x) ** 2 + y ** 2


def make_projectile_args(seed=0):
    return 6.0 + 0.3 * seed, 0.7 + 0.02 * seed, 5.0


# --- power iteration for the spectral norm, in a while loop ---------------------------------------

def spectral_penalty(W, x, tol=1e-12):
    v = np.ones(W.shape[1]) / np.sqrt(W.shape[1])
    sigma = 0.0
    delta = 1.0
    it = 0
    while delta > tol and it < 200:
        u = W @ v
        u = u / np.linalg.norm(u)
        v = W.T @ u
        new_sigma = np.linalg.norm(v)
        v = v / new_sigma
        delta = abs(new_sigma - sigma)
        sigma = new_sigma
        it += 1
    return sigma + np.sum(np.tanh(W @ x) ** 2)


def make_spectral_args(seed=0):
    rng = np.random.default_rng(5900 + seed)
    return rng.standard_normal((3, 3)), rng.standard_normal(3)


# --- logistic regression with assert and a reduction over a boolean mask ------------------------

def balanced_logistic(w, X, y):
    assert X.shape[0] == y.shape[0]
    z = X @ w
    losses = np.logaddexp(0.0, z) - y * z
    pos = y > 0.5
    return np.mean(losses[pos]) + np.mean(losses[~pos]) + 0.01 * np.dot(w, w)


def make_balanced_args(seed=0):
    w = np.random.default_rng(6000).standard_normal(3)
    rng = np.random.default_rng(6100 + seed)
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    return w, rng.standard_normal((7, 3)), y


# --- a bidirectional RNN: the backward direction iterates reversed(xs) -------------------------

def bidirectional_rnn_loss(params, xs, target):
    W, U = params["W"], params["U"]
    h_fwd = np.zeros(W.shape[0])
    for x in xs:
        h_fwd = np.tanh(W @ h_fwd + U @ x)
    h_bwd = np.zeros(W.shape[0])
    for x in reversed(xs):
        h_bwd = np.tanh(W @ h_bwd + U @ x)
    return np.sum((h_fwd + h_bwd - target) ** 2)


def make_birnn_args(seed=0):
    rng = np.random.default_rng(6500)
    params = {"W": 0.5 * rng.standard_normal((3, 3)), "U": rng.standard_normal((3, 2))}
    data = np.random.default_rng(6600 + seed)
    return params, data.standard_normal((4, 2)), data.standard_normal(3)


CASES = [
    dict(name="mlp_nll", fn=mlp_nll, args=make_mlp_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="for W, b over params[:-1] (list of tuples), `W_out, b_out = params[-1]`, "
                    "scipy logsumexp with keepdims, accumulation loop"),
    dict(name="rnn_sequence_loss", fn=rnn_sequence_loss, args=make_rnn_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="module-level step helper returning a tuple, dict params, xs[t] in a range loop"),
    dict(name="hmm_loglik", fn=hmm_loglik, args=make_hmm_args, argnums=(0, 1, 2),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, 0, None),
         constructs="forward algorithm, log_B[:, obs[t]] with an int array, logsumexp(axis=0)"),
    dict(name="gmm_nll", fn=gmm_nll, args=make_gmm_args, argnums=(0, 1, 2),
         checks=("grad", "jit", "vmap"), in_axes=(None, None, None, 0),
         constructs="row writes lls[k] = ... into np.zeros, parameter reassigned (log_w = log_w - ...)"),
    dict(name="kalman_loglik", fn=kalman_loglik, args=make_kalman_args, argnums=(0, 1, 2),
         checks=("grad", "jit", "vmap"), in_axes=(None, None, None, 0),
         constructs="np.eye(1, n), np.linalg.inv, chains of @ with .T, S[0, 0], v[0] ** 2, float args"),
    dict(name="smoke_loss", fn=smoke_loss, args=make_smoke_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, 0, 0),
         constructs="np.roll with axis, a helper returning two arrays, tuple reassignment in a loop"),
    dict(name="projectile_miss", fn=projectile_miss, args=make_projectile_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, None),
         constructs="if on the state inside a loop (bounce), scalar float arguments"),
    dict(name="spectral_penalty", fn=spectral_penalty, args=make_spectral_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0),
         constructs="while with `and` on a convergence test, np.linalg.norm, abs(), += on an int"),
    dict(name="balanced_logistic", fn=balanced_logistic, args=make_balanced_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, None),
         constructs="assert on shapes, boolean mask indexing losses[pos] / losses[~pos]"),
    dict(name="bidirectional_rnn", fn=bidirectional_rnn_loss, args=make_birnn_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="`for x in reversed(xs)` over the rows of an array argument that is differentiated "
                    "too (input gradients), the loop variable reused by two loops, dict params"),
]
