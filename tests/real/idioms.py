"""Everyday Python around NumPy maths: sorted(key=lambda), walrus, for/else, f-strings,
try/except around configuration parsing, writes into argument arrays, array methods, dict
params with .get/.items, dict comprehensions, map/filter/functools.partial, and logging,
print and warnings on the side."""
import logging
import warnings
from functools import partial

import numpy as np

log = logging.getLogger("real.idioms")


def poly_loss(coeffs, x, y):
    """coeffs: {"c0": ..., "c1": ..., ...}, the coefficient of x**k under "c<k>"."""
    terms = sorted(coeffs.items(), key=lambda kv: int(kv[0][1:]))
    pred = np.zeros_like(x)
    for name, c in terms:
        power = int(name[1:])
        pred = pred + c * x ** power
    return np.mean((pred - y) ** 2)


def make_poly_args(seed=0):
    coeffs = {"c2": 0.5, "c0": -0.3, "c1": 1.2, "c3": -0.1}
    rng = np.random.default_rng(2800 + seed)
    x = rng.uniform(-1, 1, size=7)
    return coeffs, x, np.sin(2 * x) + 0.1 * rng.standard_normal(7)


def newton_sqrt_loss(a, targets, tol=1e-13, max_iter=60):
    x = np.ones_like(a)
    for it in range(max_iter):
        x_new = 0.5 * (x + a / x)
        if (err := np.max(np.abs(x_new - x))) < tol:
            x = x_new
            break
        x = x_new
    else:
        warnings.warn(f"newton did not converge after {max_iter} iterations: err={err:.2e}")
    return np.sum((x - targets) ** 2)


def make_newton_args(seed=0):
    rng = np.random.default_rng(2900 + seed)
    return rng.uniform(0.5, 3.0, size=4), rng.uniform(0.5, 2.0, size=4)


def robust_loss(w, X, y, config):
    try:
        delta = float(config["delta"])
    except (KeyError, TypeError, ValueError):
        delta = 1.0
    try:
        scale = config["scale"]
    except KeyError:
        scale = 1.0
    r = (X @ w - y) / scale
    quadratic = 0.5 * r ** 2
    linear = delta * (np.abs(r) - 0.5 * delta)
    return np.sum(np.where(np.abs(r) < delta, quadratic, linear))


def make_robust_args(seed=0):
    w = np.random.default_rng(81).standard_normal(3)
    rng = np.random.default_rng(3000 + seed)
    return w, rng.standard_normal((8, 3)), 2.0 * rng.standard_normal(8), {"delta": "0.7"}


def pinned_chain_energy(x, a, b, k=1.0):
    x[0] = a * b          # the end beads are pinned where the caller says
    x[-1] = a + b
    springs = np.diff(x)
    return 0.5 * k * np.sum(springs ** 2) + np.sum(np.cos(x))


def make_chain_args(seed=0):
    rng = np.random.default_rng(3100 + seed)
    return rng.standard_normal(6), 0.7 + 0.1 * seed, -0.4 + 0.05 * seed


def standardize_and_score(X, w):
    mu = X.mean(axis=0)
    sd = X.std(axis=0) + 1e-3
    Z = (X - mu) / sd
    scores = Z.dot(w).clip(-5.0, 5.0)
    G = Z.T @ Z / X.shape[0]
    flat = G.reshape(-1)
    top = X.max(axis=1)
    return scores.astype(float).sum() ** 2 + 0.1 * flat.dot(flat) + top.sum() + X.ravel().prod() ** 2


def make_standardize_args(seed=0):
    rng = np.random.default_rng(3200 + seed)
    return rng.standard_normal((5, 3)), rng.standard_normal(3)


def dict_mlp_loss(params, x, y, l2=1e-2):
    h = np.tanh(x @ params["W1"] + params.get("b1", 0.0))
    out = h @ params["W2"] + params.get("b2", 0.0)
    reg = sum(np.sum(v ** 2) for k, v in params.items() if k.startswith("W"))
    return np.mean((out - y) ** 2) + l2 * reg


def make_dict_mlp_args(seed=0):
    rng = np.random.default_rng(82)
    params = {"W1": rng.standard_normal((2, 4)), "b1": 0.1 * rng.standard_normal(4),
              "W2": rng.standard_normal((4, 1))}            # no "b2": .get gives 0.0
    data = np.random.default_rng(3300 + seed)
    return params, data.standard_normal((5, 2)), data.standard_normal((5, 1))


def scaled_params_loss(params, x, scales):
    scaled = {name: value * scales.get(name, 1.0) for name, value in params.items()}
    z = x @ scaled["W"] + scaled["b"]
    return np.sum(np.logaddexp(0.0, z)) + sum(np.sum(v ** 2) for v in scaled.values())


def make_scaled_args(seed=0):
    rng = np.random.default_rng(83)
    params = {"W": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    return params, np.random.default_rng(3400 + seed).standard_normal((4, 3)), {"W": 0.5}


def weight_decay_loss(params, x, y, lam=1e-2):
    W1, b1, W2 = params
    pred = (np.tanh(x @ W1 + b1) @ W2).ravel()
    matrices = filter(lambda p: p.ndim == 2, params)
    penalty = sum(map(lambda M: np.sum(M ** 2), matrices))
    softplus = partial(np.logaddexp, 0.0)
    return np.mean(softplus(-y * pred)) + lam * penalty


def make_decay_args(seed=0):
    rng = np.random.default_rng(84)
    params = [rng.standard_normal((3, 4)), 0.1 * rng.standard_normal(4), rng.standard_normal((4, 1))]
    data = np.random.default_rng(3500 + seed)
    return params, data.standard_normal((6, 3)), np.sign(data.standard_normal(6))


def verbose_loss(w, X, y, verbose=False, step=0):
    log.info("step %d: loss on %d examples", step, len(y))
    pred = X @ w
    if verbose:
        print(f"step {step}: predictions in [{pred.min():.3f}, {pred.max():.3f}]")
    loss = np.mean((pred - y) ** 2)
    if not np.isfinite(loss):
        warnings.warn("loss is not finite", RuntimeWarning)
    print(f"loss = {loss:.6f}")
    return loss


def make_verbose_args(seed=0):
    w = np.random.default_rng(85).standard_normal(3)
    rng = np.random.default_rng(3600 + seed)
    return w, rng.standard_normal((5, 3)), rng.standard_normal(5)


def reinforce_loss(logits, actions, rewards, gamma=0.9):
    """REINFORCE surrogate: discounted returns built backwards, normalized, times log pi(a|s)."""
    returns = []
    G = 0.0
    for r in reversed(rewards):
        G = r + gamma * G
        returns.insert(0, G)
    returns = np.array(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    log_probs = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    chosen = log_probs[np.arange(len(actions)), actions]
    return -np.sum(chosen * returns)


def make_reinforce_args(seed=0):
    rng = np.random.default_rng(6700 + seed)
    return rng.standard_normal((5, 3)), np.random.default_rng(6701).integers(0, 3, size=5), rng.standard_normal(5)


CASES = [
    dict(name="poly_loss_sorted", fn=poly_loss, args=make_poly_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="dict of floats as params, sorted(d.items(), key=lambda), int(name[1:]) on a "
                    "string key, for with a tuple target over a list, np.zeros_like"),
    dict(name="newton_sqrt_walrus", fn=newton_sqrt_loss, args=make_newton_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0, 0),
         constructs="walrus `:=` in an if, break, for/else with warnings.warn(f-string with format "
                    "spec) on the else, np.ones_like"),
    dict(name="robust_loss_try", fn=robust_loss, args=make_robust_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0, None),
         constructs="try/except (tuple of exceptions, KeyError) around config parsing, float(str), "
                    "dict argument not differentiated, np.where"),
    dict(name="pinned_chain_write_arg", fn=pinned_chain_energy, args=make_chain_args, argnums=(0, 1, 2),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, 0),
         constructs="writes into an argument array (x[0] = a * b, x[-1] = a + b), np.diff"),
    dict(name="standardize_array_methods", fn=standardize_and_score, args=make_standardize_args,
         argnums=(0, 1), checks=("grad", "jit", "vmap"), in_axes=(0, 0),
         constructs="x.mean(axis=0), x.std(axis=0), x.dot(w).clip(..), Z.T, G.reshape(-1), x.max(axis=1), "
                    "x.astype(float), x.ravel().prod(), flat.dot(flat)"),
    dict(name="dict_mlp_loss", fn=dict_mlp_loss, args=make_dict_mlp_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="params[\"W1\"], params.get(\"b2\", 0.0) for a missing key, generator over "
                    ".items() with an if on k.startswith"),
    dict(name="scaled_params_dictcomp", fn=scaled_params_loss, args=make_scaled_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, None),
         constructs="dict comprehension over .items(), scales.get(name, 1.0) on a non-diff dict, "
                    "sum(... for v in d.values())"),
    dict(name="weight_decay_map_filter", fn=weight_decay_loss, args=make_decay_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="filter(lambda p: p.ndim == 2, params), sum(map(lambda, ...)), functools.partial "
                    "of a ufunc, list params unpacked into three names"),
    dict(name="verbose_loss_logging", fn=verbose_loss, args=make_verbose_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="logger.info with %-args, print(f-string) of an active value with a format spec, "
                    "print on a branch not taken, warnings.warn on a branch not taken, np.isfinite"),
    dict(name="reinforce_returns", fn=reinforce_loss, args=make_reinforce_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0, None, 0),
         constructs="`for r in reversed(rewards)` with `returns.insert(0, G)`, np.array of a list, "
                    "returns.mean()/.std(), fancy indexing log_probs[np.arange(n), actions]"),
]
