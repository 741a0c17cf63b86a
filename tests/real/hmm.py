"""Hidden Markov models: autograd's examples/hmm_em.py forward pass (the log-partition
function, recursing through sum(map(partial(...), data)) over a list of sequences), and a
scaled forward pass folded with functools.reduce."""
import functools
from functools import partial

import numpy as np
from scipy.special import logsumexp


def log_partition_function(natural_params, data):
    if isinstance(data, list):
        return sum(map(partial(log_partition_function, natural_params), data))

    log_pi, log_A, log_B = natural_params

    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]

    return logsumexp(log_alpha)


def make_hmm_args(seed=0, N=3, K=4):
    rng = np.random.default_rng(1300 + seed)
    natural_params = (np.log(rng.dirichlet(np.ones(N))),
                      np.log(rng.dirichlet(np.ones(N), size=N)),
                      np.log(rng.dirichlet(np.ones(K), size=N)))
    data = [np.random.default_rng(17).integers(0, K, size=L) for L in (5, 3, 4)]
    return natural_params, data


# --- scaled forward algorithm with functools.reduce --------------------------------------------

def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def hmm_scaled_forward(params, obs):
    pi = softmax(params["pi"])
    A = softmax(params["A"], axis=1)
    B = softmax(params["B"], axis=1)

    def step(carry, y):
        alpha, loglik = carry
        alpha = (alpha @ A) * B[:, y]
        c = alpha.sum()
        return alpha / c, loglik + np.log(c)

    alpha0 = pi * B[:, obs[0]]
    c0 = alpha0.sum()
    _, loglik = functools.reduce(step, obs[1:], (alpha0 / c0, np.log(c0)))
    return loglik


def make_scaled_args(seed=0, N=3, K=4):
    rng = np.random.default_rng(1400 + seed)
    params = {"pi": rng.standard_normal(N), "A": rng.standard_normal((N, N)),
              "B": rng.standard_normal((N, K))}
    obs = np.random.default_rng(19).integers(0, K, size=6)
    return params, obs


CASES = [
    dict(name="log_partition_function", fn=log_partition_function, args=make_hmm_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0, None),
         constructs="isinstance dispatch, recursion through sum(map(partial(f, params), data)) over "
                    "a list of int arrays (terminates at transform time), tuple params unpacked, "
                    "for over an int array, logsumexp, log_B[:, y] with a loop value"),
    dict(name="hmm_scaled_forward", fn=hmm_scaled_forward, args=make_scaled_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0, None),
         constructs="functools.reduce with a nested def over an int array slice, tuple carry, "
                    "x.max/x.sum(axis, keepdims) methods, helper with keyword argument"),
]
