"""Function values and lists in models, the way JAX/autograd users write them: a recurrent step
closure with hidden states in a list grown at run time, MLPs with layer lists, activations in
dicts, `functools.partial`/`reduce` and `map`, attention with comprehensions, ODE integrators
taking a function.

Every program is checked against central finite differences under `s2s.grad`; a good share also
under `s2s.jvp`, `s2s.vmap(s2s.grad(f))` and `s2s.jit(s2s.grad(f))` (cases/closure_checks.py).
Where s2s refuses a program, the test asserts a TransformError naming this file and the offending
line: never a wrong value.
"""
import functools
from functools import partial, reduce

import numpy as np

import s2s
from s2s.errors import TransformError
from cases.closure_checks import (check_grad, check_jit_grad, check_jvp, check_refused,
                                  check_right_or_refused, check_value, check_vmap_grad, n_params, rand,
                                  seed_per_test)  # noqa: F401  (seed_per_test: the autouse fixture)
from cases.fd import assert_close, numeric_grad


# ----------------------------------------------------------------------------------------------
# 1. Recurrent networks: a step closure, hidden states kept in a list grown at run time
# ----------------------------------------------------------------------------------------------
def rnn_closure_loss(Wh, Wx, xs):
    def step(h, x):
        return np.tanh(Wh @ h + Wx @ x)        # Wh, Wx read from the enclosing frame
    h = np.zeros(Wh.shape[0])
    for x in xs:                               # rows of an array: trip count known at run time
        h = step(h, x)
    return np.sum(h ** 2)


def test_rnn_step_closure_all_transforms():
    Wh, Wx, xs = 0.5 * rand(3, 3), 0.5 * rand(3, 2), rand(5, 2)
    check_grad(rnn_closure_loss, (Wh, Wx, xs), 0)
    check_grad(rnn_closure_loss, (Wh, Wx, xs), 1)
    check_grad(rnn_closure_loss, (Wh, Wx, xs), 2)
    check_jvp(rnn_closure_loss, (Wh, Wx, xs))
    check_vmap_grad(rnn_closure_loss, 0.5 * rand(3, 3, 2), others=(Wh, xs), argnum=1)
    check_jit_grad(rnn_closure_loss, (Wh, Wx, xs))


def rnn_states_loss(Wh, xs):
    hs = []
    h = np.zeros(Wh.shape[0])
    for x in xs:
        h = np.tanh(Wh @ h + x)
        hs.append(h)
    H = np.stack(hs)                           # (T, n)
    last = hs[-1]
    first = hs[0]
    return np.sum(H * H) + np.sum(last * first) + len(hs) * np.sum(hs[1])


def test_rnn_hidden_states_appended_at_run_time():
    Wh, xs = 0.4 * rand(3, 3), rand(6, 3)
    check_value(rnn_states_loss, (Wh, xs))
    check_grad(rnn_states_loss, (Wh, xs), 0)
    check_grad(rnn_states_loss, (Wh, xs), 1)
    check_jvp(rnn_states_loss, (Wh, xs))
    check_vmap_grad(rnn_states_loss, rand(3, 6, 3), others=(Wh,), argnum=1)
    check_jit_grad(rnn_states_loss, (Wh, xs))


def rnn_last_read_in_loop(W, h0, T_like):
    hs = [h0]
    for t in range(T_like.shape[0]):           # T from a shape
        hs.append(np.tanh(W @ hs[-1] + T_like[t]))   # L[-1] read inside the loop that appends
    return np.sum(np.array(hs) ** 2) + np.sum(hs[-1])


def test_list_last_element_read_inside_the_appending_loop():
    W, h0, xs = 0.6 * rand(3, 3), rand(3), rand(4, 3)
    check_value(rnn_last_read_in_loop, (W, h0, xs))
    for k in range(3):
        check_grad(rnn_last_read_in_loop, (W, h0, xs), k)
    check_jvp(rnn_last_read_in_loop, (W, h0, xs))
    check_vmap_grad(rnn_last_read_in_loop, rand(3, 3), others=(W, xs), argnum=1)
    check_jit_grad(rnn_last_read_in_loop, (W, h0, xs))


def rnn_two_back(W, xs):
    hs = [np.zeros(3), np.ones(3)]
    for x in xs:
        hs.append(np.tanh(W @ hs[-1] + 0.5 * hs[-2] + x))   # L[-2] too
    return np.sum(hs[-1] * hs[-2]) + np.sum(np.stack(hs)[2:])


def test_list_two_steps_back_inside_the_appending_loop():
    W, xs = 0.5 * rand(3, 3), rand(5, 3)
    check_value(rnn_two_back, (W, xs))
    check_grad(rnn_two_back, (W, xs), 0)
    check_grad(rnn_two_back, (W, xs), 1)


def collect_states(W, xs):
    out = []
    h = np.zeros(W.shape[0])
    for x in xs:
        h = np.tanh(W @ h + x)
        out.append(h)
    return out                                  # a run-time list returned from a helper


def rnn_helper_returns_list(W, xs):
    hs = collect_states(W, xs)
    total = 0.0
    for v in hs:                                # iterate the run-time list
        total = total + np.sum(np.sin(v))
    return total / len(hs) + np.sum(hs[len(hs) - 1])


def test_run_time_list_returned_from_helper_iterated_and_len():
    W, xs = 0.5 * rand(3, 3), rand(5, 3)
    check_value(rnn_helper_returns_list, (W, xs))
    check_grad(rnn_helper_returns_list, (W, xs), 0)
    check_grad(rnn_helper_returns_list, (W, xs), 1)
    check_jvp(rnn_helper_returns_list, (W, xs))


def per_step_outputs(W, V, xs):
    ys = []
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        ys.append(V @ h)                         # different shape from h
    Y = np.array(ys)
    return np.sum(Y ** 2) - np.sum(ys[0] * ys[-1])


def test_outputs_of_another_shape_stacked_with_np_array():
    W, V, xs = 0.5 * rand(3, 3), rand(2, 3), rand(4, 3)
    check_value(per_step_outputs, (W, V, xs))
    for k in range(3):
        check_grad(per_step_outputs, (W, V, xs), k)
    check_vmap_grad(per_step_outputs, rand(2, 4, 3), others=(W, V), argnum=2)


def conditional_append_runtime(W, xs):
    kept = []
    for x in xs:
        h = np.tanh(W @ x)
        if np.sum(h) > 0.0:                     # <- refused (data decides whether the list grows)
            kept.append(h)                      # <- refused
    return np.sum(np.stack(kept))


def test_conditional_append_in_run_time_loop_is_right_or_refused():
    W, xs = rand(3, 3), rand(8, 3)
    assert 0 < sum(np.sum(np.tanh(W @ x)) > 0 for x in xs) < 8
    try:
        g = s2s.grad(conditional_append_runtime)(W, xs)
    except TransformError:
        check_refused(conditional_append_runtime, (W, xs))
        return
    assert_close(g, numeric_grad(conditional_append_runtime, (W, xs), 0), rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------------------------------------
# 2. MLPs: layer lists, activations in dicts, partial, reduce
# ----------------------------------------------------------------------------------------------
def unpack_layers(theta):
    sizes = [(4, 5), (5, 3), (3, 1)]
    layers = []
    off = 0
    for m, n in sizes:                          # a list of tuples: unrolled
        W = theta[off:off + m * n].reshape(m, n)
        off += m * n
        b = theta[off:off + n]
        off += n
        layers.append((W, b))
    return layers


ACTS = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "id": lambda z: z}   # a module-level registry


def mlp_loss(theta, X, y):
    layers = unpack_layers(theta)
    acts = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "id": lambda z: z}
    names = ["tanh", "relu", "id"]
    h = X
    for (W, b), name in zip(layers, names):
        h = acts[name](h @ W + b)               # function from a dict, constant key
    return np.mean((h[:, 0] - y) ** 2)


def test_mlp_layer_list_and_activation_dict():
    theta, X, y = 0.5 * rand(n_params()), rand(6, 4), rand(6)
    check_value(mlp_loss, (theta, X, y))
    check_grad(mlp_loss, (theta, X, y), 0)
    check_grad(mlp_loss, (theta, X, y), 1)
    check_jvp(mlp_loss, (theta, X, y))
    check_vmap_grad(mlp_loss, 0.5 * rand(3, n_params()), others=(X, y), argnum=0)


def mlp_global_registry(theta, X):
    layers = unpack_layers(theta)
    h = X
    for (W, b), name in zip(layers, ["tanh", "relu", "id"]):
        h = ACTS[name](h @ W + b)               # <- refused (a module-level dict of functions)
    return np.sum(h ** 2)


def test_mlp_activations_from_a_module_level_dict():
    theta, X = 0.5 * rand(n_params()), rand(3, 4)
    check_grad(mlp_global_registry, (theta, X), 0)


def dense(x, W, b, act=np.tanh, *, scale=1.0):
    return act(scale * (x @ W) + b)


def mlp_partial_reduce(theta, x):
    layers = unpack_layers(theta)
    (W0, b0), (W1, b1), (W2, b2) = layers
    fs = [partial(dense, W=W0, b=b0, scale=0.5),           # partial with keywords
          partial(dense, W=W1, b=b1, act=np.sin),
          partial(dense, W=W2, b=b2, act=lambda z: z, scale=2.0)]
    out = reduce(lambda acc, f: f(acc), fs, x)  # reduce with an initial value
    return np.sum(out ** 2)


def test_partial_with_keywords_and_reduce_with_init():
    theta, x = 0.5 * rand(n_params()), rand(3, 4)
    check_value(mlp_partial_reduce, (theta, x))
    check_grad(mlp_partial_reduce, (theta, x), 0)
    check_grad(mlp_partial_reduce, (theta, x), 1)
    check_jvp(mlp_partial_reduce, (theta, x))
    check_vmap_grad(mlp_partial_reduce, rand(2, 3, 4), others=(theta,), argnum=1)
    check_jit_grad(mlp_partial_reduce, (theta, x))


def partial_in_comprehension(theta, x):
    layers = unpack_layers(theta)
    fs = [partial(dense, W=W, b=b) for W, b in layers]      # partial binds W, b NOW (not late)
    return np.sum(reduce(lambda acc, f: f(acc), fs, x))


def test_partial_built_in_a_comprehension_binds_each_layer():
    theta, x = 0.5 * rand(n_params()), rand(3, 4)
    check_right_or_refused(partial_in_comprehension, (theta, x), 0)


def scale_shift(x, w, b=0.0):
    return x * w + b


def partial_then_rebind(x):
    w = np.sin(x)
    f = partial(scale_shift, w=w)               # w's value now: sin(x)
    w = 3.0 * x                                 # rebinding the name does not change the partial
    g = partial(scale_shift, x, np.cos(x))
    return np.sum(f(x) * w) + np.sum(g(b=w))


def test_partial_holds_the_value_at_creation():
    x = rand(3)
    check_right_or_refused(partial_then_rebind, (x,))


def reduce_no_init(xs_scale, x):
    terms = [np.sin(xs_scale * x), np.cos(x), x ** 2]
    return np.sum(functools.reduce(lambda a, b: a * b + a, terms))


def test_reduce_without_init_and_functools_attribute():
    check_grad(reduce_no_init, (0.7, rand(4)), 0)
    check_grad(reduce_no_init, (0.7, rand(4)), 1)


def make_layer(W, b, act):
    def layer(x):
        return act(x @ W + b)
    return layer                                # a function returned from a helper


def mlp_returned_closures(W1, W2, x):
    l1 = make_layer(W1, np.zeros(W1.shape[1]), np.tanh)
    l2 = make_layer(W2, 0.1, np.sin)
    return np.sum(l2(l1(x)))


def test_closures_returned_from_helpers_keep_their_own_cells():
    W1, W2, x = rand(3, 4), rand(4, 2), rand(5, 3)
    check_value(mlp_returned_closures, (W1, W2, x))
    for k in range(3):
        check_grad(mlp_returned_closures, (W1, W2, x), k)
    check_jvp(mlp_returned_closures, (W1, W2, x))
    check_jit_grad(mlp_returned_closures, (W1, W2, x))


def mlp_map(W, xs_flat):
    rows = [xs_flat[0:3], xs_flat[3:6], xs_flat[6:9]]
    hs = list(map(lambda r: np.tanh(W @ r), rows))
    sq = map(np.square, hs)
    return sum(map(lambda s: np.sum(s), sq)) + sum(np.sum(a * b) for a, b in zip(hs, hs[1:]))


def test_map_lambda_and_numpy_functions_over_a_list():
    W, xf = rand(2, 3), rand(9)
    check_value(mlp_map, (W, xf))
    check_grad(mlp_map, (W, xf), 0)
    check_grad(mlp_map, (W, xf), 1)
    check_jvp(mlp_map, (W, xf))
    check_vmap_grad(mlp_map, rand(3, 9), others=(W,), argnum=1)


# ----------------------------------------------------------------------------------------------
# 3. Attention with comprehensions
# ----------------------------------------------------------------------------------------------
def softmax(z):
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def multi_head_attention(Wq, Wk, Wv, X):
    n_heads = 2
    d = Wq.shape[1] // n_heads
    Qs = [X @ Wq[:, h * d:(h + 1) * d] for h in range(n_heads)]
    Ks = [X @ Wk[:, h * d:(h + 1) * d] for h in range(n_heads)]
    Vs = [X @ Wv[:, h * d:(h + 1) * d] for h in range(n_heads)]
    heads = [softmax(q @ k.T / np.sqrt(d)) @ v for q, k, v in zip(Qs, Ks, Vs)]
    out = np.concatenate(heads, axis=-1)
    return np.sum(out ** 2) + sum(np.sum(h[0]) for h in heads)


def test_multi_head_attention_with_comprehensions():
    Wq, Wk, Wv, X = rand(4, 4), rand(4, 4), rand(4, 4), rand(3, 4)
    check_value(multi_head_attention, (Wq, Wk, Wv, X))
    for k in range(4):
        check_grad(multi_head_attention, (Wq, Wk, Wv, X), k)
    check_jvp(multi_head_attention, (Wq, Wk, Wv, X))
    check_vmap_grad(multi_head_attention, rand(2, 3, 4), others=(Wq, Wk, Wv), argnum=3)


def attention_dict_comp(params, X):
    proj = {name: X @ params[i] for i, name in enumerate(["q", "k", "v"])}
    scores = {k: softmax(proj["q"] @ proj[k].T) for k in proj if k != "q"}    # constant filter
    return np.sum(scores["k"] @ proj["v"]) + np.sum(scores["v"])


def test_dict_comprehension_with_constant_filter():
    params, X = rand(3, 4, 4), rand(3, 4)
    check_value(attention_dict_comp, (params, X))
    check_grad(attention_dict_comp, (params, X), 0)
    check_grad(attention_dict_comp, (params, X), 1)
    check_jvp(attention_dict_comp, (params, X))


# ----------------------------------------------------------------------------------------------
# 4. ODE integrators taking a function
# ----------------------------------------------------------------------------------------------
def rk4(fun, y, t0, dt, n):
    t = t0
    for _ in range(n):
        k1 = fun(y, t)
        k2 = fun(y + 0.5 * dt * k1, t + 0.5 * dt)
        k3 = fun(y + 0.5 * dt * k2, t + 0.5 * dt)
        k4 = fun(y + dt * k3, t + dt)
        y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + dt
    return y


def ode_loss(theta, y0):
    A = theta.reshape(2, 2)

    def dynamics(y, t):
        return np.tanh(A @ y) + 0.1 * np.sin(t)
    yT = rk4(dynamics, y0, 0.0, 0.1, 8)       # a nested def passed as an argument
    return np.sum(yT ** 2)


def test_rk4_integrator_taking_a_nested_function():
    theta, y0 = rand(4), rand(2)
    check_value(ode_loss, (theta, y0))
    check_grad(ode_loss, (theta, y0), 0)
    check_grad(ode_loss, (theta, y0), 1)
    check_jvp(ode_loss, (theta, y0))
    check_vmap_grad(ode_loss, rand(3, 4), others=(y0,), argnum=0)
    check_jit_grad(ode_loss, (theta, y0))


def euler_trajectory(fun, y, dt, ts):
    traj = [y]
    for t in ts:                                # rows of an array: run-time trip count
        y = y + dt * fun(y, t)
        traj.append(y)
    return np.stack(traj)


def ode_trajectory_loss(k, y0, ts):
    traj = euler_trajectory(lambda y, t: -k * y + np.cos(t), y0, 0.05, ts)
    return np.sum(traj[-1] ** 2) + np.mean(traj)


def test_euler_with_lambda_and_trajectory_list():
    k, y0, ts = 0.8, rand(3), np.linspace(0.0, 1.0, 7)
    check_value(ode_trajectory_loss, (k, y0, ts))
    check_grad(ode_trajectory_loss, (k, y0, ts), 0)
    check_grad(ode_trajectory_loss, (k, y0, ts), 1)
    check_jvp(ode_trajectory_loss, (k, y0, ts))
