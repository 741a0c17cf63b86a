"""Multi-layer perceptrons as people write them: parameters in a list of (W, b) tuples
(autograd's examples/neural_net.py), layers built with .append, activation functions in a
dict of lambdas, **kwargs passed through, functools.reduce over layers, a small VAE."""
import functools

import numpy as np
from scipy.special import logsumexp


def init_random_params(scale, layer_sizes, rs=None):
    """Build a list of (weights, biases) tuples, one for each layer in the net."""
    rs = rs if rs is not None else np.random.default_rng(0)
    return [(scale * rs.standard_normal((m, n)),   # weight matrix
             scale * rs.standard_normal(n))        # bias vector
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def neural_net_predict(params, inputs):
    """Implements a deep neural network for classification.
       params is a list of (weights, bias) tuples.
       inputs is an (N x D) matrix.
       returns normalized class log-probabilities."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    """Computes l2 norm of params by flattening them into a vector."""
    return sum(np.sum(W ** 2) + np.sum(b ** 2) for W, b in params)


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def make_classifier_args(seed=0):
    params = init_random_params(0.5, [3, 4, 3], rs=np.random.default_rng(1))
    rng = np.random.default_rng(500 + seed)
    inputs = rng.standard_normal((5, 3))
    targets = np.eye(3)[rng.integers(0, 3, size=5)]
    return params, inputs, targets, 0.1


# --- a list of layers and a list of activations, grown with .append ------------------------

def mlp_forward(weights, biases, x):
    layers = []
    for W, b in zip(weights, biases):
        layers.append((W, b))
    activations = [x]
    for i, (W, b) in enumerate(layers):
        z = activations[-1] @ W + b
        if i < len(layers) - 1:
            activations.append(np.tanh(z))
        else:
            activations.append(z)
    return activations


def mlp_list_loss(weights, biases, x, y):
    acts = mlp_forward(weights, biases, x)
    out = acts[-1]
    hidden_penalty = 1e-2 * sum(np.sum(a ** 2) for a in acts[1:-1])
    return np.mean((out - y) ** 2) + hidden_penalty


def make_list_args(seed=0, sizes=(2, 4, 3, 1)):
    rng = np.random.default_rng(2)
    weights = [rng.standard_normal((m, n)) for m, n in zip(sizes[:-1], sizes[1:])]
    biases = [0.1 * rng.standard_normal(n) for n in sizes[1:]]
    data = np.random.default_rng(600 + seed)
    return weights, biases, data.standard_normal((6, 2)), data.standard_normal((6, 1))


# --- activations chosen by name from a dict of lambdas, options passed as **kwargs --------

def forward(params, x, activation="tanh", **kwargs):
    acts = {
        "tanh": np.tanh,
        "softplus": lambda z: np.logaddexp(0.0, z),
        "swish": lambda z: z / (1.0 + np.exp(-z)),
    }
    f = acts[activation]
    h = x
    for W in params[:-1]:
        h = f(h @ W)
    return h @ params[-1]


def mse(pred, y, reduction="mean"):
    sq = (pred - y) ** 2
    return sq.mean() if reduction == "mean" else sq.sum()


def regression_loss(params, x, y, **kwargs):
    return mse(forward(params, x, **kwargs), y)


def make_regression_args(seed=0):
    rng = np.random.default_rng(3)
    params = [rng.standard_normal((2, 5)), rng.standard_normal((5, 4)), rng.standard_normal((4, 1))]
    data = np.random.default_rng(700 + seed)
    return params, data.standard_normal((6, 2)), data.standard_normal((6, 1))


# --- a residual stack folded with functools.reduce and a lambda ------------------------------

def resnet_loss(layers, x, y):
    h = functools.reduce(lambda h, W: h + np.tanh(h @ W), layers, x)
    return np.mean((h - y) ** 2)


def make_resnet_args(seed=0):
    rng = np.random.default_rng(4)
    layers = [0.5 * rng.standard_normal((3, 3)) for _ in range(3)]
    data = np.random.default_rng(800 + seed)
    return layers, data.standard_normal((4, 3)), data.standard_normal((4, 3))


# --- a tiny VAE: a nested helper with star-unpacking of the layer list ----------------------

def vae_loss(params, x, eps):
    enc, dec = params["enc"], params["dec"]

    def mlp(layers, h):
        *hidden, last = layers
        for W, b in hidden:
            h = np.tanh(h @ W + b)
        W, b = last
        return h @ W + b

    stats = mlp(enc, x)
    mu, log_std = np.split(stats, 2, axis=-1)
    z = mu + np.exp(log_std) * eps
    logits = mlp(dec, z)
    log_lik = np.sum(x * logits - np.logaddexp(0.0, logits), axis=-1)
    kl = 0.5 * np.sum(np.exp(2 * log_std) + mu ** 2 - 1.0 - 2 * log_std, axis=-1)
    return -np.mean(log_lik - kl)


def make_vae_args(seed=0, D=4, Z=2, H=3):
    rng = np.random.default_rng(6)

    def layer(m, n):
        return (0.5 * rng.standard_normal((m, n)), 0.1 * rng.standard_normal(n))

    params = {"enc": [layer(D, H), layer(H, 2 * Z)], "dec": [layer(Z, H), layer(H, D)]}
    data = np.random.default_rng(900 + seed)
    x = (data.uniform(size=(3, D)) < 0.5).astype(float)
    return params, x, data.standard_normal((3, Z))


CASES = [
    dict(name="log_posterior", fn=log_posterior, args=make_classifier_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0, None),
         constructs="list of (W, b) tuples, `for W, b in params`, generator expression in sum(), "
                    "scipy.special.logsumexp(axis, keepdims), variable defined in a loop read after it"),
    dict(name="mlp_list_loss", fn=mlp_list_loss, args=make_list_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(None, None, 0, 0),
         constructs="empty list grown with .append in a loop, zip over two lists, enumerate with "
                    "tuple target, acts[-1], len(list), slice of a list acts[1:-1], returning a list"),
    dict(name="regression_loss_kwargs", fn=regression_loss, args=make_regression_args, argnums=0,
         kwargs={"activation": "swish"},
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="lambdas stored in a dict and called by key, **kwargs in def and call, keyword "
                    "argument at call time, params[:-1] / params[-1] on a list, x.mean()/x.sum()"),
    dict(name="regression_loss_default", fn=regression_loss, args=make_regression_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="the same with the default (np.tanh looked up in a dict)"),
    dict(name="resnet_loss", fn=resnet_loss, args=make_resnet_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="functools.reduce with a lambda over a list of arrays"),
    dict(name="vae_loss", fn=vae_loss, args=make_vae_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="nested def called twice, star-unpacking `*hidden, last = layers`, np.split "
                    "unpacked into two names, dict of lists of tuples as params"),
]
