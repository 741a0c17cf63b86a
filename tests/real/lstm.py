"""LSTM (autograd's examples/lstm.py) and a GRU encoder with keyword-only options."""
import numpy as np


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def logsumexp(X, axis=1):
    max_X = np.max(X, axis=axis, keepdims=True)
    return max_X + np.log(np.sum(np.exp(X - max_X), axis=axis, keepdims=True))


def init_lstm_params(input_size, state_size, output_size, param_scale=0.5, rs=None):
    rs = rs if rs is not None else np.random.default_rng(0)

    def rp(*shape):
        return rs.standard_normal(shape) * param_scale

    return {'init cells':   rp(1, state_size),
            'init hiddens': rp(1, state_size),
            'change':       rp(input_size + state_size + 1, state_size),
            'forget':       rp(input_size + state_size + 1, state_size),
            'ingate':       rp(input_size + state_size + 1, state_size),
            'outgate':      rp(input_size + state_size + 1, state_size),
            'predict':      rp(state_size + 1, output_size)}


def lstm_predict(params, inputs):
    def update_lstm(input, hiddens, cells):
        change  = np.tanh(concat_and_multiply(params['change'], input, hiddens))
        forget  = sigmoid(concat_and_multiply(params['forget'], input, hiddens))
        ingate  = sigmoid(concat_and_multiply(params['ingate'], input, hiddens))
        outgate = sigmoid(concat_and_multiply(params['outgate'], input, hiddens))
        cells   = cells * forget + ingate * change
        hiddens = outgate * np.tanh(cells)
        return hiddens, cells

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params['predict'], hiddens)
        return output - logsumexp(output)     # Normalize log-probs.

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params['init hiddens'], num_sequences, axis=0)
    cells   = np.repeat(params['init cells'],   num_sequences, axis=0)

    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:  # Iterate over time steps.
        hiddens, cells = update_lstm(input, hiddens, cells)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def lstm_log_likelihood(params, inputs, targets):
    logprobs = lstm_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def make_lstm_args(seed=0, T=4, N=2, V=3):
    params = init_lstm_params(V, 3, V, rs=np.random.default_rng(5))
    rng = np.random.default_rng(300 + seed)
    chars = rng.integers(0, V, size=(T + 1, N))
    eye = np.eye(V)
    return params, eye[chars[:-1]], eye[chars[1:]]


# --- GRU encoder: dict params with an optional bias read by .get, keyword-only flag ----------

def gru_encode(params, xs, *, reverse=False):
    Wz, Wr, Wh = params["Wz"], params["Wr"], params["Wh"]
    bz = params.get("bz", 0.0)
    h = np.zeros(Wz.shape[0])
    seq = reversed(xs) if reverse else xs
    for x in seq:
        hx = np.concatenate([h, x])
        z = sigmoid(Wz @ hx + bz)
        r = sigmoid(Wr @ hx)
        h_tilde = np.tanh(Wh @ np.concatenate([r * h, x]))
        h = (1 - z) * h + z * h_tilde
    return h


def gru_loss(params, xs, target, *, reverse=True):
    h = gru_encode(params, xs, reverse=reverse)
    return np.sum((h - target) ** 2)


def make_gru_args(seed=0, H=3, D=2, T=4):
    rng = np.random.default_rng(13)
    params = {"Wz": rng.standard_normal((H, H + D)), "Wr": rng.standard_normal((H, H + D)),
              "Wh": rng.standard_normal((H, H + D))}      # no "bz": .get gives 0.0
    data = np.random.default_rng(400 + seed)
    return params, data.standard_normal((T, D)), data.standard_normal(H)


CASES = [
    dict(name="lstm_log_likelihood", fn=lstm_log_likelihood, args=make_lstm_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="nested def returning (hiddens, cells), closures over params, *args, "
                    "list .append, indexing a list by a loop index"),
    dict(name="gru_loss", fn=gru_loss, args=make_gru_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="keyword-only parameter with default, dict.get with a default, reversed(array), "
                    "conditional expression choosing an iterable, np.concatenate of a list"),
    dict(name="gru_loss_forward_kw", fn=gru_loss, args=make_gru_args, argnums=0,
         kwargs={"reverse": False},
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="keyword argument at call time on the transformed function (reverse=False)"),
]
