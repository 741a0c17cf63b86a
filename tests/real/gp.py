"""Gaussian process regression: autograd's examples/gaussian_process.py (a factory of closures,
a covariance function passed as a value, `objective = lambda params: -log_marginal_likelihood(...)`,
scipy.stats.multivariate_normal.logpdf) and a Cholesky version with tuple unpacking of an array."""
import numpy as np
from scipy.stats import multivariate_normal as mvn


def make_gp_funs(cov_func, num_cov_params):
    """Functions that perform Gaussian process regression.
       cov_func has signature (cov_params, x, x')"""

    def unpack_kernel_params(params):
        mean        = params[0]
        cov_params  = params[2:]
        noise_scale = np.exp(params[1]) + 0.0001
        return mean, cov_params, noise_scale

    def predict(params, x, y, xstar):
        """Returns the predictive mean and covariance at locations xstar,
           of the latent function value f (without observation noise)."""
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_f_f = cov_func(cov_params, xstar, xstar)
        cov_y_f = cov_func(cov_params, x, xstar)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        pred_mean = mean + np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, y - mean)
        pred_cov = cov_f_f - np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, cov_y_f)
        return pred_mean, pred_cov

    def log_marginal_likelihood(params, x, y):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        prior_mean = mean * np.ones(len(y))
        return mvn.logpdf(y, prior_mean, cov_y_y)

    return num_cov_params + 2, predict, log_marginal_likelihood


# Define an example covariance function.
def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1)\
          - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs**2, axis=2))


def build_toy_dataset(D=1, n_data=8, noise_std=0.1, rs=None):
    rs = rs if rs is not None else np.random.default_rng(0)
    inputs = np.concatenate([np.linspace(0, 3, num=n_data // 2),
                             np.linspace(6, 8, num=n_data // 2)])
    targets = (np.cos(inputs) + rs.standard_normal(n_data) * noise_std) / 2.0
    inputs = (inputs - 4.0) / 2.0
    inputs = inputs.reshape((len(inputs), D))
    return inputs, targets


D = 1
num_params, predict, log_marginal_likelihood = make_gp_funs(rbf_covariance, num_cov_params=D + 1)
X, y = build_toy_dataset(D=D, rs=np.random.default_rng(51))
objective = lambda params: -log_marginal_likelihood(params, X, y)


def make_objective_args(seed=0):
    return (0.3 * np.random.default_rng(2000 + seed).standard_normal(num_params),)


# --- Cholesky form ---------------------------------------------------------------------------------

def gp_nll_chol(log_params, X, y):
    ell, sf, sn = np.exp(log_params)
    sqd = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = sf ** 2 * np.exp(-0.5 * sqd / ell ** 2) + (sn ** 2 + 1e-6) * np.eye(len(X))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.log(np.diag(L)).sum() + 0.5 * len(X) * np.log(2 * np.pi)


def make_chol_args(seed=0):
    log_params = np.array([0.1, 0.2, -1.0])
    rng = np.random.default_rng(2100 + seed)
    Xd = rng.uniform(-2, 2, size=(6, 2))
    return log_params, Xd, np.sin(Xd[:, 0]) + 0.1 * rng.standard_normal(6)


CASES = [
    dict(name="gp_objective_lambda", fn=objective, args=make_objective_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0,),
         constructs="module-level lambda calling a closure from a factory, covariance function "
                    "passed as a value, tuple-returning nested helper, scipy.stats.multivariate_normal"
                    ".logpdf, np.expand_dims, backslash continuation"),
    dict(name="gp_nll_chol", fn=gp_nll_chol, args=make_chol_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="`ell, sf, sn = np.exp(log_params)` unpacking an array, X[:, None, :] broadcasting, "
                    "np.linalg.cholesky/solve, L.T, (...).sum(-1), np.log(np.diag(L)).sum()"),
]
