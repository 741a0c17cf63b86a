"""Independent component analysis: autograd's examples/ica.py (a factory returning closures,
scipy.stats.t.logpdf with positional loc/scale) and a classical maximum-likelihood ICA with
np.linalg.slogdet."""
import numpy as np
from scipy.stats import t


def make_ica_funs(observed_dimension, latent_dimension):
    """These functions implement maximum-likelihood ICA using a Student-t likelihood."""

    def sample(weights, n_samples, noise_std, rs):
        latents = rs.standard_normal((latent_dimension, n_samples))
        latents = np.array(sorted(latents.T, key=lambda a_entry: a_entry[0])).T
        noise = rs.standard_normal((n_samples, observed_dimension)) * noise_std
        observed = predict(weights, latents) + noise
        return latents, observed

    def predict(weights, latents):
        return np.dot(weights, latents).T

    def logprob(weights, latents, noise_std, observed):
        preds = predict(weights, latents)
        log_lik = np.sum(t.logpdf(preds, 2.4, observed, noise_std))
        return log_lik

    num_weights = observed_dimension * latent_dimension

    def unpack_weights(weights):
        return np.reshape(weights, (observed_dimension, latent_dimension))

    return num_weights, sample, logprob, unpack_weights


D, L, N = 3, 2, 6
NOISE = 0.5
num_weights, sample, logprob, unpack_weights = make_ica_funs(D, L)
_true_weights = np.random.default_rng(21).standard_normal((D, L))
_latents, DATA = sample(_true_weights, N, NOISE, np.random.default_rng(22))


def ica_objective(params):
    weight_matrix = unpack_weights(params[:num_weights])
    latents = np.reshape(params[num_weights:], (L, N))
    return -logprob(weight_matrix, latents, NOISE, DATA) / (D * N)


def make_objective_args(seed=0):
    return (0.5 * np.random.default_rng(1500 + seed).standard_normal(num_weights + L * N),)


# --- classical ICA with a log-determinant --------------------------------------------------------

def ica_loglik(W, X, df=3.0):
    n = X.shape[0]
    S = X @ W.T
    _, logabsdet = np.linalg.slogdet(W)
    return -(np.sum(t.logpdf(S, df)) / n + logabsdet)


def make_loglik_args(seed=0):
    W = np.eye(3) + 0.3 * np.random.default_rng(23).standard_normal((3, 3))
    X = np.random.default_rng(1600 + seed).standard_normal((8, 3))
    return W, X


CASES = [
    dict(name="ica_objective", fn=ica_objective, args=make_objective_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0,),
         constructs="closures returned by a factory and bound at module level, a nested helper "
                    "calling a sibling closure, scipy.stats.t.logpdf(x, df, loc, scale) positional, "
                    "np.reshape of slices"),
    dict(name="ica_loglik", fn=ica_loglik, args=make_loglik_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0),
         constructs="np.linalg.slogdet unpacked with `_`, scipy.stats.t.logpdf(x, df), W.T"),
]
