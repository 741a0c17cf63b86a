"""Recurrent networks written the way autograd's examples/rnn.py writes them.

The step functions are defined inside the model function and close over ``params``;
``concat_and_multiply`` takes ``*args``; the outputs are collected in a list with ``.append``.
"""
import numpy as np


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)   # output ranges from 0 to 1


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def logsumexp(X, axis=1):
    max_X = np.max(X, axis=axis, keepdims=True)
    return max_X + np.log(np.sum(np.exp(X - max_X), axis=axis, keepdims=True))


def create_rnn_params(input_size, state_size, output_size, param_scale=0.5, rs=None):
    rs = rs if rs is not None else np.random.default_rng(0)
    return {'init hiddens': rs.standard_normal((1, state_size)) * param_scale,
            'change': rs.standard_normal((input_size + state_size + 1, state_size)) * param_scale,
            'predict': rs.standard_normal((state_size + 1, output_size)) * param_scale}


def rnn_predict(params, inputs):
    def update_rnn(input, hiddens):
        return np.tanh(concat_and_multiply(params['change'], input, hiddens))

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params['predict'], hiddens)
        return output - logsumexp(output)     # Normalize log-probs.

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params['init hiddens'], num_sequences, axis=0)
    output = [hiddens_to_output_probs(hiddens)]

    for input in inputs:  # Iterate over time steps.
        hiddens = update_rnn(input, hiddens)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def one_hot(idx, depth):
    return (np.arange(depth) == idx[..., None]).astype(float)


def make_char_data(seed, T=4, N=2, V=3):
    rng = np.random.default_rng(100 + seed)
    chars = rng.integers(0, V, size=(T + 1, N))
    return one_hot(chars[:-1], V), one_hot(chars[1:], V)


def make_rnn_args(seed=0):
    params = create_rnn_params(3, 4, 3, rs=np.random.default_rng(7))
    inputs, targets = make_char_data(seed)
    return params, inputs, targets


# --- a generic scan helper that takes the step function as a value ---------------------

def scan(step, carry, xs):
    ys = []
    for x in xs:
        carry, y = step(carry, x)
        ys.append(y)
    return carry, np.stack(ys)


def rnn_regression_loss(params, xs, ys):
    W, U, b, V = params["W"], params["U"], params["b"], params["V"]

    def step(h, x):
        h = np.tanh(W @ h + U @ x + b)
        return h, V @ h

    h0 = np.zeros(W.shape[0])
    _, preds = scan(step, h0, xs)
    return 0.5 * np.mean((preds - ys) ** 2)


def make_scan_args(seed=0):
    rng = np.random.default_rng(11)
    params = {"W": 0.5 * rng.standard_normal((4, 4)), "U": rng.standard_normal((4, 2)),
              "b": 0.1 * rng.standard_normal(4), "V": rng.standard_normal((1, 4))}
    data = np.random.default_rng(200 + seed)
    return params, data.standard_normal((5, 2)), data.standard_normal((5, 1))


CASES = [
    dict(name="rnn_log_likelihood", fn=rnn_log_likelihood, args=make_rnn_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="nested def closing over params, *args, list .append, for over array rows, "
                    "dict params with a space in a key, += on a float, tuple unpacking of .shape"),
    dict(name="rnn_regression_loss", fn=rnn_regression_loss, args=make_scan_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="function passed as an argument (scan), nested def returning a tuple, "
                    "list .append + np.stack, `_` unpacking, dict params"),
]
