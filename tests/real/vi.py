"""Variational inference: autograd's examples/black_box_svi.py (a factory returning the
objective as a closure over a log-density function, samples drawn inside with a seeded
RandomState), and a reparameterized ELBO with dict params and logging."""
import logging

import numpy as np
from scipy.stats import norm

logger = logging.getLogger(__name__)


def black_box_variational_inference(logprob, D, num_samples):
    """Implements http://arxiv.org/abs/1401.0118, and uses the
    local reparameterization trick from http://arxiv.org/abs/1506.02557"""

    def unpack_params(params):
        # Variational dist is a diagonal Gaussian.
        mean, log_std = params[:D], params[D:]
        return mean, log_std

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    def variational_objective(params, t):
        """Provides a stochastic estimate of the variational lower bound."""
        mean, log_std = unpack_params(params)
        rs = np.random.RandomState(t)      # same samples for the same iteration
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples, t))
        return -lower_bound

    return variational_objective, unpack_params


# Specify an inference problem by its unnormalized log-density.
def log_density(x, t):
    mu, log_sigma = x[:, 0], x[:, 1]
    sigma_density = norm.logpdf(log_sigma, 0, 1.35)
    mu_density = norm.logpdf(mu, 0, np.exp(log_sigma))
    return sigma_density + mu_density


variational_objective, unpack_params = black_box_variational_inference(log_density, D=2, num_samples=5)


def make_bbvi_args(seed=0):
    params = np.array([-1.0, -1.0, -5.0, -5.0]) + 0.3 * np.random.default_rng(2200 + seed).standard_normal(4)
    return params, 3


# --- reparameterized ELBO for Bayesian linear regression, dict params, logging -----------------

def elbo(q, X, y, eps, prior_scale=1.0, noise=0.5):
    logger.debug("elbo: %d samples, %d data points", len(eps), len(y))
    mu, log_sigma = q["mu"], q["log_sigma"]
    total = 0.0
    for e in eps:
        w = mu + np.exp(log_sigma) * e
        total += norm.logpdf(y, X @ w, noise).sum() + norm.logpdf(w, 0.0, prior_scale).sum()
    entropy = np.sum(log_sigma) + 0.5 * len(mu) * (1 + np.log(2 * np.pi))
    return -(total / len(eps) + entropy)


def make_elbo_args(seed=0):
    rng = np.random.default_rng(61)
    q = {"mu": rng.standard_normal(3), "log_sigma": -1.0 + 0.1 * rng.standard_normal(3)}
    data = np.random.default_rng(2300 + seed)
    X = data.standard_normal((6, 3))
    return q, X, X @ np.array([1.0, -2.0, 0.5]) + 0.3 * data.standard_normal(6), rng.standard_normal((4, 3))


CASES = [
    dict(name="bbvi_objective", fn=variational_objective, args=make_bbvi_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0, None),
         constructs="closure returned by a factory (closes over a module function, ints and sibling "
                    "closures), np.random.RandomState(t).randn inside, scipy.stats.norm.logpdf with "
                    "array scale, x[:, 0] column reads"),
    dict(name="elbo_dict", fn=elbo, args=make_elbo_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0, None),
         constructs="logger.debug with %-args, dict params, for over rows of an array, += of a scalar, "
                    "norm.logpdf(y, mean_array, scale).sum() method on a call result"),
]
